"""The spec's regions: the rule branches and input conditions a fuzz campaign should reach.

One table, :data:`REGIONS`. Each region names a branch of the written rules (the ceil_torch
last-window drop, a window wholly in padding, an odd SAME split, ...) or a condition of the
input (NaN in a window, an integer extreme) where runtimes switch code paths or policies. A
region has:

- ``hit(probe)``: whether one configuration and its input fall in it (pure arithmetic over the
  resolved geometry, :mod:`poolcheck.spec.shape`; no engine is run);
- ``unreachable(op, convention)``: why the operator of that convention can never reach it
  (``None`` when it can), so a coverage report can tell "never drawn" from "cannot be drawn".

:func:`regions_of` classifies one configuration; the fuzzer counts the hits per region and per
peer (``poolcheck.fuzz.coverage``) and steers its draws towards regions hit least.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from poolcheck.spec import dtypes, operators
from poolcheck.spec.poolspec import PoolSpec
from poolcheck.spec.shape import AxisGeometry, Geometry, resolve

#: A kernel at least this long (per axis) counts as large: runtimes switch from unrolled small-kernel
#: loops to generic ones around here (ONNX Runtime's MLAS, OpenVINO's reference kernels).
LARGE_KERNEL = 5
#: An axis at least this long counts as long (tiled and vectorised paths).
LONG_AXIS = 32


@dataclass(frozen=True)
class AxisFacts:
    """What the windows of one resolved axis do (cached per axis: axes repeat across draws)."""

    read: np.ndarray  # bool per input position: read by at least one window
    empty: bool  # some window lies wholly in padding
    partial: bool  # some window has taps both inside the input and in padding
    every: bool = False  # every input position is read
    some: bool = True  # some input position is read


@functools.lru_cache(maxsize=4096)
def axis_facts(a: AxisGeometry) -> AxisFacts:
    starts = np.arange(a.out) * a.stride - a.pad_begin
    taps = starts[:, None] + np.arange(a.kernel) * a.dilation  # (out, kernel)
    inside = (taps >= 0) & (taps < a.size)
    read = np.zeros(a.size, dtype=bool)
    read[taps[inside]] = True
    read.flags.writeable = False
    any_in, all_in = inside.any(axis=1), inside.all(axis=1)
    return AxisFacts(read, bool((~any_in).any()), bool((any_in & ~all_in).any()), bool(read.all()), bool(read.any()))


@dataclass(frozen=True)
class ValueFacts:
    """What the values some window reads hold (one pass over them per configuration)."""

    nan: bool = False
    inf: bool = False
    neg_zero: bool = False
    int_extreme: bool = False  # an integer type's minimum or maximum


def value_facts(v: np.ndarray) -> ValueFacts:
    """:class:`ValueFacts` of ``v``: NaN, infinity and -0.0 for a floating-point type, the
    type's extremes for an integer type (nothing for an empty ``v``)."""
    if not v.size:
        return ValueFacts()
    if dtypes.is_float(v.dtype):
        nan = inf = False
        if not np.isfinite(v).all():  # most inputs are finite: one test instead of two
            nan, inf = bool(np.isnan(v).any()), bool(np.isinf(v).any())
        zero = v == 0
        return ValueFacts(nan, inf, bool(zero.any()) and bool(np.signbit(v[zero]).any()))
    if v.dtype.kind in "iu":
        info = np.iinfo(v.dtype)
        return ValueFacts(int_extreme=bool(v.min() == info.min) or bool(v.max() == info.max))
    return ValueFacts()


@dataclass(frozen=True)
class Probe:
    """One configuration as the region predicates see it: the spec, the resolved geometry and
    the input (``x`` may be ``None`` when only the attributes are known)."""

    spec: PoolSpec
    geom: Geometry
    x: np.ndarray | None

    @functools.cached_property
    def facts(self) -> tuple[AxisFacts, ...]:
        return tuple(axis_facts(a) for a in self.geom.axes)

    @functools.cached_property
    def read_index(self) -> tuple[Any, ...] | None:
        """The index of the input positions some window reads (None: every position)."""
        if all(f.every for f in self.facts):
            return None
        return (slice(None), slice(None), *np.ix_(*(f.read for f in self.facts)))

    @functools.cached_property
    def read_values(self) -> np.ndarray:
        """The input's values that some window reads (every batch and channel)."""
        if self.x is None:
            return np.empty(0)
        index = self.read_index
        return self.x if index is None else self.x[index]

    @functools.cached_property
    def values(self) -> ValueFacts:
        """What the values some window reads hold."""
        return value_facts(self.read_values)


# --------------------------------------------------------------------------- per-axis predicates


def _ceil_count(a: AxisGeometry) -> int:
    padded = a.size + a.pad_begin + a.pad_end
    return -((-(padded - a.dilated_kernel)) // a.stride) + 1


def _drop_applied(p: Probe) -> bool:
    # [OV-CEIL-TORCH]: the last window may not start in the end padding; the axis loses it
    if p.spec.applied_rounding != "ceil_torch" or p.spec.auto_pad in ("same_upper", "same_lower"):
        return False
    return any(a.out < _ceil_count(a) for a in p.geom.axes)


def _empty_window(p: Probe) -> bool:
    return any(f.empty for f in p.facts)


def _same_total(a: AxisGeometry) -> int:
    return a.pad_begin + a.pad_end


def _is_same(spec: PoolSpec) -> bool:
    return spec.auto_pad in ("same_upper", "same_lower")


def _same_odd(p: Probe) -> bool:
    return _is_same(p.spec) and any(_same_total(a) % 2 for a in p.geom.axes)


def _same_negative(p: Probe) -> bool:
    return _is_same(p.spec) and any(a.pad_begin < 0 or a.pad_end < 0 for a in p.geom.axes)


def _pads_ge_kernel(p: Probe) -> bool:
    return p.spec.auto_pad == "explicit" and any(
        max(a.pad_begin, a.pad_end) >= a.dilated_kernel for a in p.geom.axes)


def _some_window_reads(p: Probe) -> bool:
    """Some window has a tap inside the input: a window is one per-axis window per axis, so an
    axis whose every window lies in padding leaves every window empty (none is partial)."""
    return all(f.some for f in p.facts)


def _dilated_crosses_padding(p: Probe) -> bool:
    return _some_window_reads(p) and any(a.dilation > 1 and f.partial for a, f in zip(p.geom.axes, p.facts))


def _partial_window(p: Probe) -> bool:
    """An average window partly in padding: the divisor rule (include/exclude pad) decides."""
    return _some_window_reads(p) and any(f.partial for f in p.facts)


def _global_window(p: Probe) -> bool:
    return any(a.size > 1 and a.out == 1 and a.dilated_kernel >= a.size + a.pad_begin + a.pad_end
               for a in p.geom.axes)


def _nan(p: Probe) -> bool:
    return p.values.nan


def _inf(p: Probe) -> bool:
    return p.values.inf


def _neg_zero(p: Probe) -> bool:
    return p.values.neg_zero


def _int_extreme(p: Probe) -> bool:
    return p.values.int_extreme


def _index_axis(axis: int) -> Callable[[Probe], bool]:
    def hit(p: Probe) -> bool:
        return p.spec.op == "max" and p.spec.convention == "openvino" and p.spec.axis == axis
    return hit


# --------------------------------------------------------------------------- reachability


def _only(op: str | None = None, convention: str | None = None, why: str = "") -> Callable[[str, str], str | None]:
    def unreachable(o: str, c: str) -> str | None:
        if (op is None or o == op) and (convention is None or c == convention):
            return None
        return why
    return unreachable


def _everywhere(op: str, convention: str) -> str | None:
    return None


def _float_inputs(op: str, convention: str) -> str | None:
    if any(dtypes.is_float(d) for d in operators.allowed_dtypes(op, convention)):
        return None
    return "the operator allows no floating-point input"


def _int_inputs(op: str, convention: str) -> str | None:
    if any(np.dtype(d).kind in "iu" for d in operators.allowed_dtypes(op, convention)):
        return None
    return "the operator allows no integer input"


def _ceil_torch(op: str, convention: str) -> str | None:
    row = operators.newest(op, convention)
    if "ceil_torch" in row.rounding.values():
        return None
    return "the operator has no rounding that drops a last window starting in padding"


def _onnx_same(op: str, convention: str) -> str | None:
    if convention == "onnx":
        return None
    return ("OpenVINO's SAME pads are never negative: its text splits a padding, and a negative total is "
            "clamped to 0")


_MAX_OV = "only OpenVINO MaxPool has an index axis"


@dataclass(frozen=True)
class Region:
    """One region of the attribute and input space."""

    key: str
    text: str
    hit: Callable[[Probe], bool]
    unreachable: Callable[[str, str], str | None] = _everywhere
    #: Whether ``hit`` reads the input's values; the others depend on the spec, the input's
    #: shape and type alone (:func:`regions_of` keeps their answer per geometry).
    reads_values: bool = False


REGIONS: tuple[Region, ...] = (
    Region("ceil-drop", "ceil_torch drops a last window that would start in padding", _drop_applied, _ceil_torch),
    Region("ceil-overhang", "a ceil window overhangs the padded input",
           lambda p: any(a.overhang > 0 for a in p.geom.axes)),
    Region("window-in-padding", "a window lies wholly in padding", _empty_window),
    Region("avg-partial-window", "an average window lies partly in padding (the divisor rule decides)",
           lambda p: p.spec.op == "avg" and _partial_window(p), _only(op="avg", why="max pooling has no divisor")),
    Region("same-odd-split", "same_upper/same_lower with an odd padding total", _same_odd),
    Region("same-negative-total", "SAME padding total below zero (stride above the dilated kernel)",
           _same_negative, _onnx_same),
    Region("pads-ge-kernel", "an explicit pad at least as long as the dilated kernel", _pads_ge_kernel),
    Region("dilated-crosses-padding", "a dilated window with taps both in the input and in padding",
           _dilated_crosses_padding,
           lambda o, c: "OpenVINO AvgPool has no dilations" if (o, c) == ("avg", "openvino") else None),
    Region("large-kernel", f"a kernel of {LARGE_KERNEL} or more on an axis",
           lambda p: max(p.spec.kernel) >= LARGE_KERNEL),
    Region("global-window", "one window covers a whole padded axis longer than 1", _global_window),
    Region("long-axis", f"an input axis of {LONG_AXIS} or more", lambda p: max(p.geom.input_shape[2:]) >= LONG_AXIS),
    Region("stride-above-kernel", "a stride longer than the dilated kernel (input positions skipped)",
           lambda p: any(a.stride > a.dilated_kernel for a in p.geom.axes)),
    Region("dilation-4", "a dilation of 4 or more", lambda p: max(p.spec.dilations) >= 4,
           lambda o, c: "OpenVINO AvgPool has no dilations" if (o, c) == ("avg", "openvino") else None),
    Region("batch-and-channels", "batch and channels both above 1",
           lambda p: p.geom.batch > 1 and p.geom.channels > 1),
    Region("rank-5", "three spatial axes", lambda p: p.spec.rank == 5),
    Region("nan-in-window", "a NaN that a window reads", _nan, _float_inputs, reads_values=True),
    Region("inf-in-window", "an infinity that a window reads", _inf, _float_inputs, reads_values=True),
    Region("neg-zero-in-window", "a -0.0 that a window reads", _neg_zero, _float_inputs, reads_values=True),
    Region("int-extreme", "an integer type's minimum or maximum that a window reads", _int_extreme, _int_inputs, reads_values=True),
    Region("index-i32", "indices as i32", lambda p: p.spec.op == "max" and p.spec.convention == "openvino"
           and p.spec.index_element_type == "i32", _only("max", "openvino", "only OpenVINO MaxPool chooses i32")),
    Region("index-storage-order-1", "ONNX MaxPool indices in column-major order (storage_order=1)",
           lambda p: p.spec.op == "max" and p.spec.convention == "onnx" and p.spec.storage_order == 1,
           _only("max", "onnx", "only ONNX MaxPool has storage_order")),
    Region("index-axis-0", "OpenVINO MaxPool indices over the whole tensor (axis 0)", _index_axis(0),
           _only("max", "openvino", _MAX_OV)),
    Region("index-axis-1", "OpenVINO MaxPool indices per batch (axis 1)", _index_axis(1),
           _only("max", "openvino", _MAX_OV)),
    Region("index-axis-2", "OpenVINO MaxPool indices per plane (axis 2)", _index_axis(2),
           _only("max", "openvino", _MAX_OV)),
    Region("index-axis-negative", "OpenVINO MaxPool index axis written negative",
           lambda p: p.spec.op == "max" and p.spec.convention == "openvino" and p.spec.axis < 0,
           _only("max", "openvino", _MAX_OV)),
)

BY_KEY: dict[str, Region] = {r.key: r for r in REGIONS}


def dtype_region(dtype: str) -> str:
    """The region of an input element type: every type an operator allows is a region too."""
    return f"dtype-{dtype}"


def reachable(op: str, convention: str) -> list[str]:
    """The keys of every region the newest ``op`` of ``convention`` can reach, dtypes included."""
    keys = [r.key for r in REGIONS if r.unreachable(op, convention) is None]
    return keys + [dtype_region(d) for d in operators.allowed_dtypes(op, convention)]


def unreachable(op: str, convention: str) -> dict[str, str]:
    """Region key -> why the newest ``op`` of ``convention`` cannot reach it."""
    out = {}
    for r in REGIONS:
        why = r.unreachable(op, convention)
        if why is not None:
            out[r.key] = why
    return out


_READ_VALUES = tuple(r for r in REGIONS if r.reads_values)
#: Geometries whose value-free regions :func:`regions_of` keeps (a fuzzed configuration is new,
#: but its spec, shape and type recur).
GEOMETRY_REGIONS_CACHE = 4096
#: A kept geometry keeps its read index (one int64 per position read) up to this many positions
#: along its axes; a longer one is indexed again for each input.
KEPT_INDEX_POSITIONS = 4096


@functools.lru_cache(maxsize=GEOMETRY_REGIONS_CACHE)
def _geometry_regions(spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[frozenset[str], Probe]:
    """The regions that the spec, the input's shape and its type decide (the input's values
    aside), and the probe they were read from (its geometry, facts and read index computed)."""
    probe = Probe(spec, resolve(spec, shape), None)
    keys = {r.key for r in REGIONS if not r.reads_values and r.hit(probe)}
    keys.add(dtype_region(dtype.name))
    if sum(a.size for a in probe.geom.axes) <= KEPT_INDEX_POSITIONS:
        probe.read_index  # noqa: B018 -- computed once here, for every input of this geometry
    return frozenset(keys), probe


def regions_of(spec: PoolSpec, x: np.ndarray) -> frozenset[str]:
    """The regions one configuration and its input fall in (empty for an invalid configuration)."""
    try:
        fixed, shared = _geometry_regions(spec, x.shape, x.dtype)
    except ValueError:
        return frozenset()
    probe = Probe(spec, shared.geom, x)
    if "read_index" in shared.__dict__:  # the geometry's, not computed again
        probe.__dict__["read_index"] = shared.__dict__["read_index"]
    hits = [r.key for r in _READ_VALUES if r.hit(probe)]
    return fixed.union(hits) if hits else fixed


# --------------------------------------------------------------------------- the rest of the family

#: Regions of the family operators (LpPool, global pooling, MaxUnpool, adaptive pooling): the
#: branches their texts and runtimes part on. Each key is reachable by the ops it lists.
FAMILY_REGIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "family-lp-odd-p": ("an odd p (|x| decides the sign of x^p)", ("lp", "global_lp")),
    "family-lp-p-above-2": ("p above 2 (the root is neither the identity nor sqrt)", ("lp", "global_lp")),
    "family-lp-padded-window": ("an Lp window reaching into explicit or SAME padding", ("lp",)),
    "family-lp-dilated": ("an Lp window with dilations", ("lp",)),
    "family-lp-ceil": ("LpPool with ceil_mode", ("lp",)),
    "family-unpool-collision": ("two elements of X sent to one output position", ("unpool",)),
    "family-unpool-output-shape": ("MaxUnpool's output_shape input given", ("unpool",)),
    "family-adaptive-uneven": ("adaptive bins of unequal sizes (H not a multiple of the output size)",
                               ("adaptive_avg", "adaptive_max")),
    "family-adaptive-overlap": ("adaptive bins that overlap (more bins than input positions on an axis)",
                                ("adaptive_avg", "adaptive_max")),
    "family-rank-5": ("a rank-5 input", ("lp", "global_avg", "global_max", "global_lp", "unpool", "adaptive_avg",
                                         "adaptive_max")),
    "family-nan": ("NaN in the input", ("lp", "global_avg", "global_max", "global_lp", "adaptive_avg",
                                        "adaptive_max")),
}


def family_reachable(op: str) -> list[str]:
    """The family regions ``op`` can reach, and its element types' regions."""
    convention = "openvino" if op.startswith("adaptive") else "onnx"
    return [k for k, (_, ops) in FAMILY_REGIONS.items() if op in ops] + [
        dtype_region(d) for d in operators.allowed_dtypes(op, convention)]


def family_regions_of(spec: Any, x: np.ndarray, indices: np.ndarray | None = None) -> frozenset[str]:
    """The family regions one configuration (a ``FamilySpec``) and its inputs fall in."""
    keys = {dtype_region(x.dtype.name)}
    op = spec.op
    if x.ndim == 5:
        keys.add("family-rank-5")
    if op != "unpool" and dtypes.is_float(x.dtype) and bool(np.isnan(x).any()):
        keys.add("family-nan")
    if op in ("lp", "global_lp"):
        if spec.p % 2 == 1:
            keys.add("family-lp-odd-p")
        if spec.p > 2:
            keys.add("family-lp-p-above-2")
    w = spec.window
    if op == "lp" and w is not None:
        try:
            geom = resolve(w, x.shape)
        except ValueError:
            geom = None
        if geom is not None and any(a.pad_begin or a.pad_end for a in geom.axes):
            keys.add("family-lp-padded-window")
        if any(d > 1 for d in w.dilations):
            keys.add("family-lp-dilated")
        if w.rounding_type != "floor":
            keys.add("family-lp-ceil")
    if op == "unpool":
        if spec.output_shape is not None:
            keys.add("family-unpool-output-shape")
        if indices is not None and np.unique(indices).size < np.size(indices):
            keys.add("family-unpool-collision")
    if op in ("adaptive_avg", "adaptive_max") and spec.output_shape is not None:
        for size, out in zip(x.shape[2:], spec.output_shape):
            if size % out:
                keys.add("family-adaptive-uneven")
            if out > size:
                keys.add("family-adaptive-overlap")
    return frozenset(keys)
