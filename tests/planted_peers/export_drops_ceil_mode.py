"""Planted converter bug: an exporter step that drops ``ceil_mode`` from every pooling node
(so ONNX's default 0, floor rounding, is what the runtime sees).

A chain peer: the ``torch-onnx`` chain (torch module -> ONNX export -> ONNX Runtime) whose export
step is followed by the faulty rewrite. Handed to the fuzzer as an object.
"""

from __future__ import annotations

from typing import Any

from poolcheck.peers.torch_onnx_peer import TorchOnnxNode, TorchOnnxPeer


class ExportDropsCeilMode(TorchOnnxPeer):
    """torch-onnx, except that the exported model loses its ``ceil_mode`` attributes."""

    name = "planted-export-drops-ceil-mode"
    ref = "planted-export-drops-ceil-mode"
    step = "planted exporter"

    def export(self, nodes: tuple[TorchOnnxNode, ...]) -> Any:
        model = super().export(nodes)
        for node in model.graph.node:
            keep = [a for a in node.attribute if a.name != "ceil_mode"]  # the bug
            del node.attribute[:]
            node.attribute.extend(keep)
        return model
