"""Single-node (or packed multi-node) ONNX models for MaxPool-22 / AveragePool-22.

Shared by the ONNX Runtime and onnx.reference peers: :func:`to_onnx` translates a canonical
:class:`PoolSpec` into ONNX attributes (or declines), :func:`build_model` packs one or more
translated nodes into one model, each with its own input and outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from poolcheck.peers._convert import ceil_as_ceil_torch, check_expressible, convert_flat_indices
from poolcheck.peers.base import PeerDeclined, PeerOutput
from poolcheck.spec.operators import operator, spell
from poolcheck.spec.poolspec import PoolSpec

#: MaxPool-22 and AveragePool-22 are the newest versions of both operators.
OPSET = 22
#: IR version 10 is the first that allows opset 22.
IR_VERSION = 10


@dataclass(frozen=True)
class OnnxNode:
    """One translated pooling node: operator, attributes (sorted items), input shape and type."""

    op_type: str
    attributes: tuple[tuple[str, Any], ...]
    shape: tuple[int, ...]
    dtype: str
    with_indices: bool

    def attrs(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.attributes}


def to_onnx(spec: PoolSpec, shape: Sequence[int], dtype: np.dtype, peer: str) -> OnnxNode:
    """Translate ``spec`` for an input of ``shape``/``dtype`` into an ONNX node, or raise
    :class:`PeerDeclined` when ONNX cannot express it."""
    dt = np.dtype(dtype)
    shape = tuple(int(v) for v in shape)
    check_expressible(spec, shape, peer, "ONNX")
    op_type = "MaxPool" if spec.op == "max" else "AveragePool"
    allowed = operator(f"{op_type}-{OPSET}").dtypes
    if dt.name not in allowed:
        raise PeerDeclined(peer, f"ONNX {op_type}-{OPSET} has no {dt.name} type (allowed: {', '.join(allowed)})")
    if spec.auto_pad not in ("same_upper", "same_lower"):
        why_not = ceil_as_ceil_torch(spec, shape)
        if why_not:
            raise PeerDeclined(peer, f"{why_not}; ONNX has no equivalent")
    # The catalogue spells it: an ONNX-convention spec exactly as written (ceil_mode under VALID
    # too: the ONNX formula makes it a no-op, but the runtime must see it); an OpenVINO one by
    # its meaning (a rounded "valid" becomes NOTSET, pads 0, ceil_mode 1).
    spelled = spell(spec, f"{op_type}-{OPSET}")
    if spelled["auto_pad"] != "NOTSET":
        spelled.pop("pads", None)
    attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in spelled.items()}
    return OnnxNode(op_type, tuple(sorted(attrs.items())), shape, dt.name, spec.op == "max")


def build_model(nodes: Sequence[OnnxNode], *, output_ranks: bool = False) -> Any:
    """One ONNX model holding every node: inputs ``x{i}``, outputs ``y{i}`` (and ``i{i}``).

    ``output_ranks`` declares each output's rank with symbolic dimensions (the strict checker
    some ONNX backends run requires a shape on every output); otherwise outputs have no shape."""
    from onnx import TensorProto, helper

    graph_nodes = []
    inputs = []
    outputs = []
    for i, node in enumerate(nodes):
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(node.dtype))  # by name: "bfloat16" too
        outs = [f"y{i}"]
        out_shape = [f"y{i}_d{k}" for k in range(len(node.shape))] if output_ranks else None
        outputs.append(helper.make_tensor_value_info(f"y{i}", elem, out_shape))
        if node.with_indices:
            outs.append(f"i{i}")
            idx_shape = [f"i{i}_d{k}" for k in range(len(node.shape))] if output_ranks else None
            outputs.append(helper.make_tensor_value_info(f"i{i}", TensorProto.INT64, idx_shape))
        graph_nodes.append(helper.make_node(node.op_type, [f"x{i}"], outs, name=f"pool{i}", **node.attrs()))
        inputs.append(helper.make_tensor_value_info(f"x{i}", elem, list(node.shape)))
    graph = helper.make_graph(graph_nodes, "poolcheck", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="poolcheck")
    model.ir_version = IR_VERSION
    return model


def onnx_outputs(group: Sequence[tuple[int, OnnxNode, np.ndarray]], items: Sequence[tuple[PoolSpec, np.ndarray]],
                 raw: Sequence[Any]) -> list[PeerOutput]:
    """Split the outputs of a model built by :func:`build_model` back per node (``y{i}`` then
    ``i{i}`` for max pooling), converting ONNX flat indices to poolcheck's for each spec."""
    outputs = []
    pos = 0
    for i, node, arr in group:
        values = np.asarray(raw[pos])
        pos += 1
        indices = None
        notes: list[str] = []
        if node.with_indices:
            order = "F" if dict(node.attributes).get("storage_order") else "C"
            indices, notes = convert_flat_indices(np.asarray(raw[pos]), items[i][0], arr.shape, source_order=order)
            pos += 1
        outputs.append(PeerOutput(values, indices, notes))
    return outputs
