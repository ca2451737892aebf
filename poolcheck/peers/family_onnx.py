"""Single-node ONNX models for the rest of the family: LpPool, GlobalAveragePool,
GlobalMaxPool, GlobalLpPool and MaxUnpool (with or without its output_shape input), each at the
operator version the configuration was written for.

Shared by the peers that run ONNX models (ONNX Runtime, onnx.reference, OpenVINO's ONNX
frontend, tract) through :class:`OnnxFamily`: :func:`family_to_onnx` translates a
:class:`~poolcheck.spec.family.FamilySpec` into one node (or declines), :func:`family_model`
builds its model at an opset where that version is in force -- 22 for the newest, else the
newest opset before the next version (:func:`~poolcheck.spec.operators.onnx_opset`: a case of
``GlobalLpPool-2`` is a model of opset 21, a MaxUnpool-9 node one of opset 10), so a runtime that
lacks the kernel of that version refuses the model exactly as it does when called plainly -- and
:func:`family_feeds` names its inputs. The adaptive pools are OpenVINO operators
ONNX has not.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from poolcheck.peers.base import PeerDeclined, PeerOutput
from poolcheck.peers.onnx_model import IR_VERSION, OP_TYPES, onnx_element_types
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.operators import family_row, newest, onnx_opset, spell, version_number

#: The family ops an ONNX model can hold, and their ONNX operator.
ONNX_FAMILY: dict[str, str] = {"lp": "LpPool", "global_avg": "GlobalAveragePool", "global_max": "GlobalMaxPool",
                               "global_lp": "GlobalLpPool", "unpool": "MaxUnpool"}
ONNX_FAMILY_OPS: tuple[str, ...] = tuple(ONNX_FAMILY)


@dataclass(frozen=True)
class FamilyNode:
    """One translated family node: operator, attributes (sorted items), input shape and type,
    how many inputs it takes (MaxUnpool: 2, or 3 with output_shape), the operator's version and
    the opset its model imports (``GlobalLpPool-2``: opset 21, the newest where -2 is in force)."""

    op_type: str
    attributes: tuple[tuple[str, Any], ...]
    shape: tuple[int, ...]
    dtype: str
    inputs: int = 1
    version: int = 22
    opset: int = 22

    @property
    def operator(self) -> str:
        """The operator's versioned name, e.g. ``LpPool-11``."""
        return f"{self.op_type}-{self.version}"

    def attrs(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.attributes}


def family_to_onnx(spec: FamilySpec, shape: Sequence[int], dtype: np.dtype, peer: str) -> FamilyNode:
    """``spec`` as one ONNX node of the version it was written for (:func:`family_row`: the
    newest, or :attr:`FamilySpec.version`) for an input of ``shape``/``dtype``, or raise
    :class:`PeerDeclined` when ONNX has no such operator or that version no such type."""
    op_type = ONNX_FAMILY.get(spec.op)
    if op_type is None:
        raise PeerDeclined(peer, f"ONNX has no {spec.describe().split('(')[0]} (an OpenVINO operator)")
    if spec.convention != "onnx":
        raise PeerDeclined(peer, f"{op_type} is an ONNX operator; the configuration is written in OpenVINO's terms")
    row = family_row(spec)
    dt = np.dtype(dtype)
    if dt.name not in row.dtypes:
        raise PeerDeclined(peer, f"ONNX {row.title} has no {dt.name} type (allowed: {', '.join(row.dtypes)})")
    spelled = spell(spec, row.name)
    if spelled.get("auto_pad", "NOTSET") != "NOTSET":
        spelled.pop("pads", None)
    inputs = 1
    if spec.op == "unpool":
        spelled.pop("output_shape", None)  # an input of MaxUnpool, not an attribute
        inputs = 3 if spec.output_shape is not None else 2
    attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in spelled.items()}
    return FamilyNode(op_type, tuple(sorted(attrs.items())), tuple(int(v) for v in shape), dt.name, inputs,
                      version_number(row), onnx_opset(row))


def family_model(node: FamilyNode, *, output_rank: bool = False) -> Any:
    """The one-node model of ``node``: inputs ``x`` (and ``i``, ``s``), output ``y``
    (``output_rank``: declared with symbolic dimensions, for backends whose checker wants a
    shape on every output)."""
    from onnx import TensorProto, helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(node.dtype))
    names = ["x", "i", "s"][:node.inputs]
    inputs = [helper.make_tensor_value_info("x", elem, list(node.shape))]
    if node.inputs >= 2:
        inputs.append(helper.make_tensor_value_info("i", TensorProto.INT64, list(node.shape)))
    if node.inputs == 3:
        inputs.append(helper.make_tensor_value_info("s", TensorProto.INT64, [len(node.shape)]))
    output = helper.make_tensor_value_info("y", elem, [f"y_d{k}" for k in range(len(node.shape))] if output_rank else None)
    graph = helper.make_graph([helper.make_node(node.op_type, names, ["y"], name="pool", **node.attrs())],
                              "poolcheck", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", node.opset)], producer_name="poolcheck")
    model.ir_version = IR_VERSION
    return model


def family_feeds(node: FamilyNode, spec: FamilySpec, x: np.ndarray, indices: np.ndarray | None) -> dict[str, np.ndarray]:
    """The model's inputs: ``x``, MaxUnpool's ``i`` (int64) and ``s`` (its output_shape)."""
    feeds = {"x": np.ascontiguousarray(x)}
    if node.inputs >= 2:
        if indices is None:
            raise ValueError("MaxUnpool needs its second input I (indices=)")
        feeds["i"] = np.ascontiguousarray(indices, dtype=np.int64)
    if node.inputs == 3:
        assert spec.output_shape is not None
        feeds["s"] = np.asarray(spec.output_shape, dtype=np.int64)
    return feeds


class OnnxFamily:
    """The family half of a peer that runs ONNX models: it translates with
    :func:`family_to_onnx` and hands the model and feeds to :meth:`run_family_model`, which the
    peer defines (its runtime's plain load-and-run). Runnables are cached per node. It also
    declares such a peer's element types (:meth:`element_types`): those of its ONNX operators."""

    name: str
    family_ops: tuple[str, ...] = ONNX_FAMILY_OPS
    #: Operators the runtime has no converter or kernel for at all, and what it answers when
    #: given one plainly: declined (``supports`` says why) instead of loading a model that fails.
    family_missing: tuple[tuple[str, str], ...] = ()
    family_cache_size = 64

    def run_family_model(self, node: FamilyNode, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """Run the model of ``node`` (see :func:`family_model`) on ``feeds``; its output ``y``."""
        raise NotImplementedError

    def element_types(self, op: str) -> tuple[str, ...]:
        """The element types of the ONNX operator the peer builds for ``op`` (MaxPool-22,
        AveragePool-22, the family op's newest row); none for an op it has no operator for or
        declines outright (:attr:`family_missing`)."""
        if op in OP_TYPES:
            return onnx_element_types(op)
        if op not in ONNX_FAMILY or op in dict(self.family_missing):
            return ()
        return newest(op, "onnx").dtypes

    def translate_family(self, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> FamilyNode:
        missing = dict(self.family_missing).get(spec.op)
        if missing is not None:
            raise PeerDeclined(self.name, missing)
        return family_to_onnx(spec, shape, dtype, self.name)

    def execute_family(self, node: FamilyNode, spec: FamilySpec, x: np.ndarray,
                       indices: np.ndarray | None) -> PeerOutput:
        return PeerOutput(np.asarray(self.run_family_model(node, family_feeds(node, spec, x, indices))))

    def family_cached(self, node: FamilyNode, build: Any) -> Any:
        """``build(node)`` once per node (least recently used dropped past the cache size)."""
        cache: OrderedDict[FamilyNode, Any] | None = getattr(self, "_family_runnables", None)
        if cache is None:
            cache = OrderedDict()
            self._family_runnables = cache
        hit = cache.get(node)
        if hit is not None:
            cache.move_to_end(node)
            return hit
        made = build(node)
        cache[node] = made
        while len(cache) > self.family_cache_size:
            cache.popitem(last=False)
        return made
