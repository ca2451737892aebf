"""Single-node (or packed multi-node) ONNX models for MaxPool-22 / AveragePool-22.

Shared by the ONNX Runtime and onnx.reference peers: :func:`to_onnx` translates a canonical
:class:`PoolSpec` into ONNX attributes (or declines), :func:`build_model` packs one or more
translated nodes into one model, each with its own input and outputs.
"""

from __future__ import annotations

import functools
import numbers
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


#: The ONNX operator of each op.
OP_TYPES: dict[str, str] = {"max": "MaxPool", "avg": "AveragePool"}


def onnx_element_types(op: str) -> tuple[str, ...]:
    """The element types of the ONNX operator (opset :data:`OPSET`) that ``op`` is translated to:
    what an ONNX peer can ever take (:func:`to_onnx` declines every other type)."""
    return operator(f"{OP_TYPES[op]}-{OPSET}").dtypes


def to_onnx(spec: PoolSpec, shape: Sequence[int], dtype: np.dtype, peer: str) -> OnnxNode:
    """Translate ``spec`` for an input of ``shape``/``dtype`` into an ONNX node, or raise
    :class:`PeerDeclined` when ONNX cannot express it."""
    dt = np.dtype(dtype)
    shape = tuple(int(v) for v in shape)
    check_expressible(spec, shape, peer, "ONNX")
    op_type = OP_TYPES[spec.op]
    allowed = onnx_element_types(spec.op)
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
    some ONNX backends run requires a shape on every output); otherwise outputs have no shape.

    Built field by field: the model ``onnx.helper``'s ``make_node``, ``make_tensor_value_info``,
    ``make_graph`` and ``make_model`` build, byte for byte (``tests/peers/test_onnx_model.py``),
    without their checks and copies, which cost about 70 us a node -- a third of what ONNX
    Runtime's worker spent per fuzzed configuration."""
    from onnx import AttributeProto, ModelProto, TensorProto, helper

    model = ModelProto()
    model.ir_version = IR_VERSION
    opset = model.opset_import.add()
    opset.domain = ""
    opset.version = OPSET
    model.producer_name = "poolcheck"
    graph = model.graph
    for i, node in enumerate(nodes):
        proto = graph.node.add()
        proto.input.append(f"x{i}")
        proto.output.append(f"y{i}")
        if node.with_indices:
            proto.output.append(f"i{i}")
        proto.name = f"pool{i}"
        proto.op_type = node.op_type
        for key, value in node.attributes:  # sorted by name, as make_node sorts them
            if isinstance(value, numbers.Integral):
                attr = proto.attribute.add(name=key, type=AttributeProto.INT)
                attr.i = int(value)
            elif isinstance(value, str):
                proto.attribute.add(name=key, type=AttributeProto.STRING).s = value.encode("utf-8")
            elif isinstance(value, tuple) and value and all(isinstance(v, numbers.Integral) for v in value):
                proto.attribute.add(name=key, type=AttributeProto.INTS).ints.extend(int(v) for v in value)
            else:  # nothing a pooling node holds today
                proto.attribute.append(helper.make_attribute(key, value))
    graph.name = "poolcheck"
    for i, node in enumerate(nodes):
        _value_info(graph.input.add(), f"x{i}", _elem_type(node.dtype), list(node.shape))
    for i, node in enumerate(nodes):
        rank = range(len(node.shape))
        _value_info(graph.output.add(), f"y{i}", _elem_type(node.dtype),
                    [f"y{i}_d{k}" for k in rank] if output_ranks else None)
        if node.with_indices:
            _value_info(graph.output.add(), f"i{i}", TensorProto.INT64,
                        [f"i{i}_d{k}" for k in rank] if output_ranks else None)
    return model


@functools.lru_cache(maxsize=32)
def _elem_type(dtype: str) -> int:
    from onnx import helper

    return int(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))  # by name: "bfloat16" too


def _value_info(info: Any, name: str, elem_type: int, shape: list[int] | list[str] | None) -> None:
    """``info`` filled as ``onnx.helper.make_tensor_value_info(name, elem_type, shape)`` fills one."""
    info.name = name
    tensor = info.type.tensor_type
    tensor.elem_type = elem_type
    if shape is None:
        return
    tensor.shape.dim.extend([])
    for d in shape:
        dim = tensor.shape.dim.add()
        if isinstance(d, int):
            dim.dim_value = d
        else:
            dim.dim_param = d


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
