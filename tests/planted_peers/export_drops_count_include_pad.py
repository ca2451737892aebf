"""Planted converter bug: an exporter step that drops ``count_include_pad`` from AveragePool
(so ONNX's default 0, padding not counted, is what the runtime sees).

A chain peer: the ``torch-onnx`` chain whose export step is followed by the faulty rewrite.
Handed to the fuzzer as an object.
"""

from __future__ import annotations

from typing import Any

from poolcheck.peers.torch_onnx_peer import TorchOnnxNode, TorchOnnxPeer


class ExportDropsCountIncludePad(TorchOnnxPeer):
    """torch-onnx, except that the exported AveragePool nodes lose ``count_include_pad``."""

    name = "planted-export-drops-count-include-pad"
    ref = "planted-export-drops-count-include-pad"
    step = "planted exporter"

    def export(self, nodes: tuple[TorchOnnxNode, ...]) -> Any:
        model = super().export(nodes)
        for node in model.graph.node:
            if node.op_type == "AveragePool":
                keep = [a for a in node.attribute if a.name != "count_include_pad"]  # the bug
                del node.attribute[:]
                node.attribute.extend(keep)
        return model
