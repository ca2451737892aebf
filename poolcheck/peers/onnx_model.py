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

from poolcheck.peers._convert import PeerDeclined, check_expressible, convert_flat_indices, rounding_to_ceil_mode
from poolcheck.peers.base import PeerOutput
from poolcheck.spec.attributes import AVG_DTYPES, ONNX_MAX_DTYPES, PoolSpec

#: MaxPool-22 and AveragePool-22 are the newest versions of both operators.
OPSET = 22
#: IR version 10 is the first that allows opset 22.
IR_VERSION = 10

_ONNX_AUTO_PAD = {"explicit": "NOTSET", "valid": "VALID", "same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER"}


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
    if spec.op == "max":
        op_type = "MaxPool"
        # MaxPool-22 "T: tensor(bfloat16), tensor(double), tensor(float), tensor(float16),
        # tensor(int8), tensor(uint8)"
        if dt.name not in ONNX_MAX_DTYPES:
            raise PeerDeclined(peer, f"ONNX MaxPool-22 has no {dt.name} type (allowed: {', '.join(ONNX_MAX_DTYPES)})")
    else:
        op_type = "AveragePool"
        if dt.name not in AVG_DTYPES:
            raise PeerDeclined(peer, f"ONNX AveragePool-22 has no {dt.name} type (allowed: {', '.join(AVG_DTYPES)})")
    n = spec.spatial_rank
    attrs: dict[str, Any] = {
        "kernel_shape": spec.kernel,
        "strides": spec.strides,
        "dilations": spec.dilations,
    }
    auto_pad = spec.auto_pad
    if auto_pad in ("same_upper", "same_lower"):
        # "SAME_UPPER or SAME_LOWER: output_spatial_shape[i] = ceil(input_spatial_shape[i] /
        # strides_spatial_shape[i])" -- rounding plays no part, as in OpenVINO.
        attrs["auto_pad"] = _ONNX_AUTO_PAD[auto_pad]
        ceil_mode = 0
    else:
        ceil_mode, why_not = rounding_to_ceil_mode(spec, shape)
        if why_not:
            raise PeerDeclined(peer, f"{why_not}; ONNX has no equivalent")
        if auto_pad == "valid" and ceil_mode == 0:
            attrs["auto_pad"] = "VALID"
        else:
            # Explicit pads; OpenVINO "valid" with ceil rounding is "no padding, rounded up",
            # which ONNX writes as NOTSET, pads 0, ceil_mode 1 (its VALID ignores ceil_mode).
            pb, pe = (spec.pads_begin, spec.pads_end) if auto_pad == "explicit" else ((0,) * n, (0,) * n)
            attrs["auto_pad"] = "NOTSET"
            # "pads ... format should be as follow [x1_begin, x2_begin...x1_end, x2_end,...]"
            attrs["pads"] = tuple(pb) + tuple(pe)
    attrs["ceil_mode"] = ceil_mode
    if spec.convention == "onnx":
        # An ONNX-convention spec goes out exactly as written: the canonical rounding absorbs
        # ceil_mode under VALID (the ONNX formula makes it a no-op), but the runtime must see it.
        attrs["ceil_mode"] = spec.ceil_mode
        if auto_pad == "valid":
            attrs["auto_pad"] = "VALID"
            attrs.pop("pads", None)
    if spec.op == "max":
        attrs["storage_order"] = spec.storage_order if spec.convention == "onnx" else 0
    else:
        # "count_include_pad: Whether include pad pixels when calculating values for the edges."
        attrs["count_include_pad"] = 0 if spec.exclude_pad else 1
    return OnnxNode(op_type, tuple(sorted(attrs.items())), shape, dt.str, spec.op == "max")


def build_model(nodes: Sequence[OnnxNode], *, output_ranks: bool = False) -> Any:
    """One ONNX model holding every node: inputs ``x{i}``, outputs ``y{i}`` (and ``i{i}``).

    ``output_ranks`` declares each output's rank with symbolic dimensions (the strict checker
    some ONNX backends run requires a shape on every output); otherwise outputs have no shape."""
    from onnx import TensorProto, helper

    graph_nodes = []
    inputs = []
    outputs = []
    for i, node in enumerate(nodes):
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(node.dtype))
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
