"""Diagnosis, not just a diff: which named setting makes the reference reproduce a peer.

Where implementations part ways the specs are silent or misread; each such point is a named
*variant* of the reference:

- geometry (output shape and window placement): ceil vs ceil_torch vs floor, same_upper vs
  same_lower, SAME pads from the undilated kernel (as ONNX Runtime computes them), pads swapped
  or ignored, dilations ignored;
- policy (:class:`poolcheck.spec.policy.Policy`): NaN propagated / ignored / first-wins, value of
  a window wholly in padding (-inf / lowest finite / 0), the average's divisor (full kernel /
  window clipped to the padded input / valid elements only), the average of no element;
- indices: what a max index counts (whole tensor vs from ``axis``, row- vs column-major, padded
  coordinates, the index of an empty window).

For a differing output the reference is re-run under the variants and, per output element,
the variants that turn the reference's element into the peer's (without breaking an element
they agreed on) are collected; a greedy cover picks at most one variant per group. When that
leaves elements unexplained, combinations of up to :data:`MAX_DEPTH` policy variants are tried
on every placement and computation type (variants that change nothing the peer differs on are
pruned; :data:`DIAGNOSIS_SECONDS` bounds the search).

A name is given only if :func:`replay` -- the reference re-run under exactly the named variants
-- reproduces the peer (max exactly, averages within the comparison's tolerance); variants the
replay does not need are dropped, and each remaining one is credited with the elements that stop
agreeing without it ("values at 12 positions: divisor ...; values at 3 positions: ..."). What no
verified combination reproduces is ``unexplained values/indices (<kind of window>)``: a wrong
name is worse than none. Rejections are matched against named conditions (pads >= kernel,
exclude_pad with pads >= kernel, ...). Every class carries a :class:`Severity` from
:data:`SEVERITY_RULES`, which quotes the spec sentence each ``violation`` contradicts.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.engines import numpy_engine as _NUMPY
from poolcheck.engines.numpy_engine import empty_max_value
from poolcheck.errors import AttributeValueError, PoolcheckError
from poolcheck.fuzz.reference import Outputs, canonical_layout, run_reference
from poolcheck.judgement import avg_tolerance, close_values
from poolcheck.results import Severity
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.dtypes import BFLOAT16, is_float, lowest
from poolcheck.spec.indices import index_layout
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import AxisGeometry, Geometry, resolve


@dataclass(frozen=True)
class Diagnosis:
    """Why a subject differs: ``klass`` is stable (signatures), ``text`` is for people."""

    klass: str
    text: str
    explained: bool
    variants: tuple[str, ...] = ()
    ambiguous: bool = False  # another explanation fits this example equally well
    atoms: tuple[str, ...] = ()  # the separate behaviours: each variant, and what stays unexplained
    #: the weight of the divergence: the most severe of its atoms (see :data:`SEVERITY_RULES`)
    severity: Severity | None = None
    #: which elements each named variant accounts for: (variant, values, indices) counts
    attribution: tuple[tuple[str, int, int], ...] = ()


# --------------------------------------------------------------------------- geometry variants


@dataclass(frozen=True)
class Placement:
    """Where a variant puts the windows: a geometry over the input, or over a crop of it (a
    negative pad -- windows starting inside the input -- is a crop: ``crop`` holds the kept
    ``(start, stop)`` per spatial axis)."""

    geom: Geometry
    crop: tuple[tuple[int, int], ...] | None = None

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.geom.output_shape


@dataclass(frozen=True)
class GeometryVariant:
    key: str
    text: str
    applies: Callable[[PoolSpec], bool]
    build: Callable[[PoolSpec, tuple[int, ...]], Placement]


def _respec(**changes: object) -> Callable[[PoolSpec, tuple[int, ...]], Placement]:
    def build(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
        return Placement(resolve(spec.replace(**changes), shape))

    return build


def _c_div(a: int, b: int) -> int:
    """Integer division truncating towards zero, as C and C++ do."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _legacy_same(dilated: bool, crop_tail: bool = False,
                 floor_split: bool = False) -> Callable[[PoolSpec, tuple[int, ...]], Placement]:
    """SAME pads as legacy implementations compute them: ``pad_needed = (ceil(size / stride) - 1)
    * stride + kernel - size`` with the undilated ``kernel`` (or the dilated one), NOT clamped at
    zero (a stride larger than the kernel gives a negative pad: windows start inside the input),
    split with C integer division, and the output size taken from the explicit-padding formula
    ``(size + pad_needed - dilation * (kernel - 1) - 1) / stride + 1`` (C integer division; with
    ceil_mode a float division rounded up). Measured against ONNX Runtime 1.31 for sizes 1-6 and
    1.32 for sizes 1-10 (MaxPool and AveragePool), kernels 1-4, strides 1-4, dilations 1-3, both
    SAME modes and both ceil_modes. With ``crop_tail`` a negative end pad also
    cuts the input short (ONNX Runtime's average: ``hend = min(hstart + kernel, size + pad_end)``)."""

    def build(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
        ceil_mode = spec.convention == "onnx" and spec.ceil_mode == 1
        axes = []
        crops = []
        for i, size in enumerate(shape[2:]):
            k, s, d = spec.kernel[i], spec.strides[i], spec.dilations[i]
            k_eff = (k - 1) * d + 1 if dilated else k
            target = (size + s - 1) // s
            need = (target - 1) * s + k_eff - size
            div = (lambda a, b: a // b) if floor_split else _c_div  # Python floors, C truncates
            head = div(need + 1, 2) if spec.auto_pad == "same_lower" else div(need, 2)
            tail = need - head
            span = size + need - d * (k - 1) - 1
            # integer division (C) without ceil_mode; a float ceil with it (ONNX Runtime 1.31, 1.32)
            out = math.ceil(span / s + 1) if ceil_mode else _c_div(span, s) + 1
            if out < 0:
                raise AttributeValueError("kernel", f"axis {i}: negative output size {out}")
            # a negative head pad moves the windows into the input; a negative tail only shortens
            # the output (the windows still read up to the end of the input)
            start, stop = max(0, -head), (size + min(tail, 0) if crop_tail else size)
            crops.append((start, stop))
            axes.append(AxisGeometry(stop - start, k, s, d, max(head, 0), max(tail, 0), out))
        crop = tuple(crops) if any(c != (0, n) for c, n in zip(crops, shape[2:])) else None
        return Placement(Geometry(shape[0], shape[1], tuple(axes)), crop)

    return build


def _same_rounded(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    """SAME pads as the spec computes them, then the explicit formula with ``rounding_type``."""
    g = resolve(spec, shape)
    return Placement(resolve(spec.replace(auto_pad="explicit", pads_begin=g.pads_begin, pads_end=g.pads_end), shape))


def _swap_same(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    other = "same_lower" if spec.auto_pad == "same_upper" else "same_upper"
    return Placement(resolve(spec.replace(auto_pad=other), shape))


def _valid_ceil(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    n = spec.spatial_rank
    return Placement(resolve(spec.replace(auto_pad="explicit", pads_begin=(0,) * n, pads_end=(0,) * n,
                                          rounding_type="ceil_torch"), shape))


def _is_same(spec: PoolSpec) -> bool:
    return spec.auto_pad in ("same_upper", "same_lower")


def _explicit_asym(spec: PoolSpec) -> bool:
    return spec.auto_pad == "explicit" and spec.pads_begin != spec.pads_end


def _has_pads(spec: PoolSpec) -> bool:
    return any(spec.pads_begin) or any(spec.pads_end)


def _zero_pads(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    n = spec.spatial_rank
    return Placement(resolve(spec.replace(pads_begin=(0,) * n, pads_end=(0,) * n), shape))


# The rounding variants model a peer applying rounding_type the OpenVINO way (also under valid).
GEOMETRY_VARIANTS: tuple[GeometryVariant, ...] = (
    GeometryVariant("valid:ceil_mode-applied",
                    "ceil_mode applied under VALID (the ONNX VALID formula has no ceil_mode: floor)",
                    lambda s: s.convention == "onnx" and s.auto_pad == "valid" and s.ceil_mode == 1, _valid_ceil),
    GeometryVariant("rounding:ceil_torch->ceil",
                    "ceil_torch treated as ceil (a last window starting in the end padding is kept)",
                    lambda s: s.applied_rounding == "ceil_torch" and s.auto_pad in ("explicit", "valid"),
                    _respec(rounding_type="ceil", convention="openvino")),
    GeometryVariant("rounding:ceil->ceil_torch",
                    "ceil treated as ceil_torch (a last window starting in the end padding is dropped)",
                    lambda s: s.applied_rounding == "ceil" and s.auto_pad in ("explicit", "valid"),
                    _respec(rounding_type="ceil_torch", convention="openvino")),
    GeometryVariant("rounding:ceil->floor", "ceil rounding ignored (floor used)",
                    lambda s: s.applied_rounding != "floor" and s.auto_pad in ("explicit", "valid"),
                    _respec(rounding_type="floor", convention="openvino")),
    GeometryVariant("rounding:floor->ceil", "floor treated as ceil",
                    lambda s: s.applied_rounding == "floor" and s.auto_pad in ("explicit", "valid"),
                    _respec(rounding_type="ceil", convention="openvino")),
    GeometryVariant("same:rounding-applied",
                    "rounding_type applied to the SAME-padded size (ceil may add a window past the input)",
                    lambda s: _is_same(s) and s.rounding_type != "floor", _same_rounded),
    GeometryVariant("same:swapped", "same_upper and same_lower swapped (the odd pad goes to the other end)",
                    _is_same, _swap_same),
    GeometryVariant("same:undilated-kernel",
                    "SAME pads computed from the undilated kernel, not clamped at 0, output size from the "
                    "explicit formula",
                    lambda s: _is_same(s) and any(d > 1 for d in s.dilations), _legacy_same(dilated=False)),
    GeometryVariant("same:negative-pads",
                    "SAME pads as ONNX Runtime computes them: not clamped at 0 and split with C integer division "
                    "(pad_head = need / 2, or (need + 1) / 2 for SAME_LOWER, truncated toward zero)",
                    lambda s: _is_same(s) and any(st > (k - 1) * d + 1
                                                  for st, k, d in zip(s.strides, s.kernel, s.dilations)),
                    _legacy_same(dilated=True)),
    GeometryVariant("same:undilated-kernel-cropped",
                    "SAME pads computed from the undilated kernel, not clamped at 0, and a negative end pad cuts "
                    "the input short (the average's windows and divisor end there)",
                    lambda s: _is_same(s) and s.op == "avg" and any(d > 1 for d in s.dilations),
                    _legacy_same(dilated=False, crop_tail=True)),
    GeometryVariant("same:negative-pads-floor-split",
                    "SAME pads not clamped at 0, a negative odd total halved rounding down (Python '//'): the "
                    "windows start one element later than with C division",
                    lambda s: _is_same(s) and any(st > (k - 1) * d + 1
                                                  for st, k, d in zip(s.strides, s.kernel, s.dilations)),
                    _legacy_same(dilated=True, floor_split=True)),
    GeometryVariant("same:negative-pads-cropped",
                    "SAME pads not clamped at 0: the windows start inside the input and a negative end pad "
                    "cuts the input short",
                    lambda s: _is_same(s) and s.op == "avg" and any(
                        st > (k - 1) * d + 1 for st, k, d in zip(s.strides, s.kernel, s.dilations)),
                    _legacy_same(dilated=True, crop_tail=True)),
    GeometryVariant("same:clamped",
                    "ONNX SAME pad_shape clamped at 0: with a stride larger than the dilated kernel the formula "
                    "as written is negative and the windows should start inside the input",
                    lambda s: _is_same(s) and s.convention == "onnx" and any(
                        st > (k - 1) * d + 1 for st, k, d in zip(s.strides, s.kernel, s.dilations)),
                    lambda s, shape: Placement(resolve(s.replace(convention="openvino"), shape))),
    GeometryVariant("pads:swapped", "pads_begin and pads_end swapped", _explicit_asym,
                    lambda s, shape: Placement(resolve(s.replace(pads_begin=s.pads_end, pads_end=s.pads_begin),
                                                       shape))),
    GeometryVariant("pads:begin-both-ends", "pads_begin applied at both ends", _explicit_asym,
                    lambda s, shape: Placement(resolve(s.replace(pads_end=s.pads_begin), shape))),
    GeometryVariant("pads:end-both-ends", "pads_end applied at both ends", _explicit_asym,
                    lambda s, shape: Placement(resolve(s.replace(pads_begin=s.pads_end), shape))),
    GeometryVariant("pads:ignored", "explicit pads ignored",
                    lambda s: s.auto_pad == "explicit" and _has_pads(s), _zero_pads),
    GeometryVariant("auto_pad:ignored", "auto_pad ignored (the explicit pads applied instead)",
                    lambda s: s.auto_pad != "explicit" and _has_pads(s), _respec(auto_pad="explicit")),
    GeometryVariant("dilations:ignored", "dilations ignored",
                    lambda s: any(d > 1 for d in s.dilations),
                    lambda s, shape: Placement(resolve(s.replace(dilations=(1,) * s.spatial_rank), shape))),
)


# --------------------------------------------------------------------------- policy variants


@dataclass(frozen=True)
class PolicyVariant:
    key: str
    group: str
    text: str
    change: dict[str, object]


POLICY_VARIANTS: tuple[PolicyVariant, ...] = (
    PolicyVariant("nan=ignore", "nan", "NaN ignored (numbers win over NaN)", {"nan": "ignore"}),
    PolicyVariant("nan=first", "nan", "NaN kept only as a window's first element (strict > scan)", {"nan": "first"}),
    PolicyVariant("nan=-inf", "nan", "NaN read as -inf (a window of NaN alone gives -inf and the NaN's index)",
                  {"nan": "-inf"}),
    PolicyVariant("nan=last-index", "nan",
                  "NaN wins, with the index of the window's last NaN (scan with 'val > max || isnan(val)')",
                  {"nan": "last-index"}),
    PolicyVariant("nan=skip", "nan", "NaN skipped like padding (a window of NaN and padding counts as empty)",
                  {"nan": "skip"}),
    PolicyVariant("empty_max=lowest", "empty_max", "a window wholly in padding gives the lowest finite value",
                  {"empty_max": "lowest"}),
    PolicyVariant("empty_max=zero", "empty_max", "a window wholly in padding gives 0", {"empty_max": "zero"}),
    PolicyVariant("empty_max=nan", "empty_max", "a window wholly in padding gives NaN (padding read as NaN)",
                  {"empty_max": "nan"}),
    PolicyVariant("divisor=padded", "divisor", "divisor = the window clipped to the padded input (padding counted)",
                  {"divisor": "padded"}),
    PolicyVariant("divisor=full", "divisor", "divisor = the full kernel size", {"divisor": "full"}),
    PolicyVariant("divisor=valid", "divisor", "divisor = the input elements only (padding not counted)",
                  {"divisor": "valid"}),
    PolicyVariant("empty_avg=nan", "empty_avg", "an average over no element is NaN", {"empty_avg": "nan"}),
    PolicyVariant("empty_avg=signed-divisor", "empty_avg",
                  "a window past the padded input divides 0 by its unclipped size: NaN where an axis has no tap "
                  "left (0/0), -0 where the size is negative",
                  {"empty_avg": "signed-divisor"}),
    PolicyVariant("avg=nan-skipped", "avg_nan",
                  "NaN elements left out of the average like padding (neither summed nor counted)",
                  {"nan": "avg-skip"}),
    PolicyVariant("avg=input-type-sum", "accumulate",
                  "the average's sum accumulated in the input type (it overflows where float64 does not)",
                  {"nan": "sum-in-input-type"}),
    PolicyVariant("avg=input-type-sum-by-axis", "accumulate",
                  "the average's sum accumulated in the input type axis by axis (each row along the last axis "
                  "summed, then those sums): an overflow to inf in one row meets a -inf in another as NaN",
                  {"nan": "sum-in-input-type-by-axis"}),
    PolicyVariant("avg=wide-sum-rounded", "accumulate",
                  "the average's sum accumulated wider (float32 for float16) but rounded to the input type before "
                  "the division: a sum past the type's largest value is inf even where the average is not",
                  {"nan": "sum-rounded-to-input-type"}),
    PolicyVariant("max=seeded-scan", "nan",
                  "max scanned from the lowest value at index 0 with a strict '>': NaN and an element equal to "
                  "the lowest value never win, a window wholly in padding gives the lowest value and index 0",
                  {"nan": "seeded"}),
)


def _policy_applies(v: PolicyVariant, spec: PoolSpec, x: np.ndarray, geom: Geometry) -> bool:
    if v.key == "max=seeded-scan":
        return spec.op == "max"
    if v.group == "nan":
        return spec.op == "max" and is_float(x.dtype) and bool(np.isnan(x).any())
    if v.group == "empty_max":
        if spec.op != "max" or w.empty_windows(geom) is None:
            return False
        # -inf is "lowest" for integers, which have no NaN
        return is_float(x.dtype) or v.key not in ("empty_max=lowest", "empty_max=nan")
    if v.group == "divisor":
        own = "valid" if spec.exclude_pad else "padded"
        return spec.op == "avg" and v.change["divisor"] != own
    if v.group == "empty_avg":
        return spec.op == "avg" and w.empty_windows(geom) is not None
    if v.group == "avg_nan":
        return spec.op == "avg" and spec.exclude_pad and is_float(x.dtype) and bool(np.isnan(x).any())
    if v.group == "accumulate":
        return spec.op == "avg" and x.dtype in (np.float16, np.float32, BFLOAT16)
    return False


# --------------------------------------------------------------------------- index variants


def encode_indices(canon: np.ndarray, shape: tuple[int, ...], order: str, modulus: int,
                   pads: tuple[tuple[int, ...], tuple[int, ...]] | None = None) -> np.ndarray:
    """Re-encode whole-tensor row-major indices (``-1`` = no element) in another layout:
    spatial ``order``, ``modulus``, and optionally coordinates in the padded input."""
    if order == TRANSPOSED:
        return _transpose_spatial(encode_indices(canon, shape, "C", modulus, pads))
    spatial = shape[2:]
    plane = math.prod(spatial)
    valid = canon >= 0
    nc, sp = np.divmod(np.where(valid, canon, 0), plane)
    sizes = spatial
    if order != "C" or pads is not None:
        coords = list(np.unravel_index(sp, spatial))
        if pads is not None:
            coords = [c + b for c, b in zip(coords, pads[0])]
            sizes = tuple(s + b + e for s, b, e in zip(spatial, pads[0], pads[1]))
        sp = np.ravel_multi_index(tuple(coords), sizes, order=order)  # type: ignore[call-overload]
    full = nc * math.prod(sizes) + sp
    whole = math.prod(shape)
    if pads is not None:
        # the same scope (whole tensor, or from ``axis`` on) measured in the padded shape
        first = next((i for i in range(len(shape)) if math.prod(shape[i:]) == modulus), 0)
        modulus = math.prod((*shape[:2], *sizes)[first:])
        whole = math.prod((*shape[:2], *sizes))
    # a whole-tensor index is not wrapped (an empty window's index may lie past the input)
    return np.where(valid, full % modulus if modulus != whole else full, canon)


#: Index "order" of a peer that writes row-major indices into a tensor whose spatial axes are
#: reversed (OpenVINO's ONNX frontend maps storage_order=1 to a Transpose of the index output).
TRANSPOSED = "T"


def _palindromic(geom: Geometry) -> bool:
    """The output's spatial shape reads the same reversed (a transposed index tensor keeps it)."""
    out = tuple(a.out for a in geom.axes)
    return len(out) > 1 and out == out[::-1]


def _transpose_spatial(a: np.ndarray) -> np.ndarray:
    """``a`` with its spatial axes reversed; where that changes the shape, no index can match
    (the lowest int64, which no peer reports)."""
    t = np.transpose(a, (0, 1, *range(a.ndim - 1, 1, -1)))
    return t if t.shape == a.shape else np.full_like(a, np.iinfo(np.int64).min)


@dataclass(frozen=True)
class IndexVariant:
    key: str
    group: str
    text: str
    applies: Callable[[PoolSpec, tuple[int, ...], Geometry], bool]
    layout: Callable[[PoolSpec, tuple[int, ...], Geometry], tuple[str, int, tuple | None]]


def _spec_order_modulus(spec: PoolSpec, shape: tuple[int, ...]) -> tuple[str, int]:
    lay = index_layout(spec, shape)
    return lay.order, lay.modulus


INDEX_VARIANTS: tuple[IndexVariant, ...] = (
    IndexVariant("index:axis-ignored", "index_scope", "indices count the whole tensor (axis ignored)",
                 lambda s, shape, g: _spec_order_modulus(s, shape)[1] != math.prod(shape),
                 lambda s, shape, g: (_spec_order_modulus(s, shape)[0], math.prod(shape), None)),
    IndexVariant("index:per-plane", "index_scope", "indices count within each (n, c) plane",
                 lambda s, shape, g: _spec_order_modulus(s, shape)[1] != math.prod(shape[2:]),
                 lambda s, shape, g: (_spec_order_modulus(s, shape)[0], math.prod(shape[2:]), None)),
    IndexVariant("index:storage_order-ignored", "index_order", "storage_order ignored (row-major indices)",
                 lambda s, shape, g: _spec_order_modulus(s, shape)[0] == "F",
                 lambda s, shape, g: ("C", _spec_order_modulus(s, shape)[1], None)),
    IndexVariant("index:storage_order-transposed", "index_order",
                 "storage_order=1 applied by transposing the index tensor (row-major indices, the output's spatial "
                 "axes reversed) instead of counting column-major",
                 lambda s, shape, g: _spec_order_modulus(s, shape)[0] == "F" and _palindromic(g),
                 lambda s, shape, g: (TRANSPOSED, _spec_order_modulus(s, shape)[1], None)),
    IndexVariant("index:column-major", "index_order", "column-major indices where row-major is specified",
                 lambda s, shape, g: _spec_order_modulus(s, shape)[0] == "C" and s.spatial_rank > 1,
                 lambda s, shape, g: ("F", _spec_order_modulus(s, shape)[1], None)),
    IndexVariant("index:padded-coordinates", "index_coords", "indices count positions in the padded input",
                 lambda s, shape, g: any(g.pads_begin) or any(g.pads_end),
                 lambda s, shape, g: (*_spec_order_modulus(s, shape), (g.pads_begin, g.pads_end))),
)
EMPTY_INDEX_TEXT = "a window wholly in padding reports index 0 (of its (n, c) plane)"
EMPTY_INDEX_MINUS_TEXT = ("a window wholly in padding reports the index of coordinate -1 on every spatial axis "
                          "(negative for the first plane)")
EMPTY_INDEX_TAP_TEXT = ("a window wholly in padding reports the index of its first tap at or after coordinate 0 on "
                        "every spatial axis (the scan's start, which may lie past the input)")
#: What a max window holding no element reports as its index, per rule (tried in this order).
EMPTY_INDEX_VARIANTS: tuple[tuple[str, str], ...] = (
    ("empty_index=0", EMPTY_INDEX_TEXT),
    ("empty_index=-1-per-axis", EMPTY_INDEX_MINUS_TEXT),
    ("empty_index=first-tap", EMPTY_INDEX_TAP_TEXT),
)


def empty_index_fill(key: str, out_shape: tuple[int, ...], shape: tuple[int, ...], geom: Geometry,
                     crop: tuple[tuple[int, int], ...] | None = None, order: str = "C") -> np.ndarray:
    """Whole-tensor index an empty-window rule reports at every output position, flattened in
    ``order`` (used only where the reference has no element): per-axis coordinates, flattened
    without a bounds check. ``-1-per-axis`` is ONNX Runtime's (coordinate -1 on every axis);
    ``first-tap`` is PyTorch's scan start ``o * stride - pad_begin``, moved up by whole dilations
    while negative."""
    start = _plane_start(out_shape, shape)
    spatial = shape[2:]
    if key == "empty_index=0":
        return start
    n = len(spatial)
    strides = [math.prod(spatial[i + 1:]) if order == "C" else math.prod(spatial[:i]) for i in range(n)]
    if key == "empty_index=-1-per-axis":
        return start - sum(strides)
    total = np.zeros((1, 1) + (1,) * n, dtype=np.int64)
    for i, a in enumerate(geom.axes):
        first = np.arange(a.out, dtype=np.int64) * a.stride - a.pad_begin
        first = np.where(first < 0, first + (-first + a.dilation - 1) // a.dilation * a.dilation, first)
        if crop is not None:
            first = first + crop[i][0]
        total = total + w.broadcast_axis(first * strides[i], i, n)
    return start + total


def encode_with_fill(canon: np.ndarray, shape: tuple[int, ...], order: str, modulus: int,
                     pads: tuple[tuple[int, ...], tuple[int, ...]] | None, fill: str | None, geom: Geometry,
                     crop: tuple[tuple[int, int], ...] | None = None) -> np.ndarray:
    """:func:`encode_indices`, with the windows holding no element (``canon < 0``) reporting what
    the empty-window rule ``fill`` gives, in the same ``order`` and ``modulus`` (a negative index
    is not wrapped)."""
    if order == TRANSPOSED:
        return _transpose_spatial(encode_with_fill(canon, shape, "C", modulus, pads, fill, geom, crop))
    encoded = encode_indices(canon, shape, order, modulus, pads)
    if fill is None or not (canon < 0).any():
        return encoded
    if fill == "empty_index=first-tap":
        # PyTorch flattens row-major per plane; that number then goes through the same layout
        # conversion as any index (storage order, axis)
        f = np.broadcast_to(empty_index_fill(fill, canon.shape, shape, geom, crop, "C"), canon.shape)
        return np.where(canon < 0, encode_indices(f, shape, order, modulus, pads), encoded)
    # ONNX Runtime flattens the coordinates -1 in its own storage order
    f = np.broadcast_to(empty_index_fill(fill, canon.shape, shape, geom, crop, order), canon.shape)
    if modulus != math.prod(shape):
        f = np.where(f >= 0, f % modulus, f)
    return np.where(canon < 0, f, encoded)


# --------------------------------------------------------------------------- diagnosis of outputs


@dataclass
class _Explained:
    keys: list[str]
    texts: list[str]
    value_mask: np.ndarray  # output elements whose value no chosen variant reproduces
    index_mask: np.ndarray | None  # ... whose index
    ambiguous: bool = False
    x: np.ndarray | None = None  # the input and geometry the explanation ran on
    geom: Geometry | None = None

    @property
    def remaining_values(self) -> int:
        return int(self.value_mask.sum())

    @property
    def remaining_indices(self) -> int:
        return 0 if self.index_mask is None else int(self.index_mask.sum())

    @property
    def remaining(self) -> int:
        return self.remaining_values + self.remaining_indices


def _tolerance(engine: ModuleType, spec: PoolSpec, x: np.ndarray, geom: Geometry, policy: Policy,
               expected: np.ndarray) -> np.ndarray | None:
    if spec.op != "avg" or 0 in geom.output_shape:
        return None
    return avg_tolerance(x, geom, spec.exclude_pad, policy, expected, engine)


def _run(engine: ModuleType, spec: PoolSpec, x: np.ndarray, geom: Geometry, policy: Policy,
         out_dtype: np.dtype | None = None) -> Outputs:
    """The reference under ``policy`` on ``geom``; values cast to ``out_dtype`` (the peer's type
    when ``x`` is a float32 stand-in). Two diagnosis-only NaN settings: ``policy.nan == "-inf"``
    reads NaN as -inf; ``"skip"`` makes NaN elements no candidates at all, so a window of NaN
    and padding is an empty window."""
    layout = canonical_layout(x.shape) if spec.op == "max" else None
    dtype = np.dtype(out_dtype or x.dtype)
    if 0 in geom.output_shape:  # an empty output: nothing to compute
        empty = np.zeros(geom.output_shape, dtype=dtype)
        return Outputs(empty, np.zeros(geom.output_shape, dtype=np.int64) if spec.op == "max" else None)
    if policy.empty_max == "nan":  # diagnosis-only: an empty max window is NaN (padding read as NaN)
        out = _run(engine, spec, x, geom, policy.replace(empty_max="-inf"), out_dtype)
        empty = w.empty_windows(geom)
        if empty is None or spec.op != "max" or not is_float(out.values.dtype):
            return out
        return Outputs(np.where(np.broadcast_to(empty, out.values.shape), np.nan, out.values).astype(
            out.values.dtype), out.indices)
    if policy.empty_avg == "signed-divisor":  # diagnosis-only: see _signed_divisor_empty
        out = _run(engine, spec, x, geom, policy.replace(empty_avg="zero"), out_dtype)
        if spec.op != "avg" or not is_float(out.values.dtype):
            return out
        rule = policy.divisor if policy.divisor != "attribute" else ("valid" if spec.exclude_pad else "padded")
        return Outputs(np.where(_signed_divisor_empty(geom, out.values.shape, rule), np.nan, out.values).astype(
            out.values.dtype))
    if policy.nan == "avg-skip" and spec.op == "avg":  # diagnosis-only: NaN neither summed nor counted
        nan = np.isnan(x) if is_float(x.dtype) else np.zeros(x.shape, dtype=bool)
        full = Policy(divisor="full")
        total = run_reference(engine, np.where(nan, 0, x).astype(np.float64), geom, "avg", policy=full).values
        count = run_reference(engine, (~nan).astype(np.float64), geom, "avg", policy=full).values
        with np.errstate(all="ignore"):
            mean = np.where(count > 0, total / np.where(count > 0, count, 1), np.nan)
        out = Outputs(mean.astype(x.dtype))
    elif policy.nan == "sum-in-input-type" and spec.op == "avg":
        out = Outputs(_avg_in_input_type(x, geom, spec.exclude_pad, policy.replace(nan="propagate")))
    elif policy.nan == "sum-rounded-to-input-type" and spec.op == "avg":
        out = Outputs(_avg_in_input_type(x, geom, spec.exclude_pad, policy.replace(nan="propagate"), rounded=True))
    elif policy.nan == "sum-in-input-type-by-axis" and spec.op == "avg":
        out = Outputs(_avg_in_input_type(x, geom, spec.exclude_pad, policy.replace(nan="propagate"), by_axis=True))
    elif policy.nan == "seeded" and spec.op == "max":
        low = np.asarray(_lowest(x.dtype), dtype=x.dtype)
        xs = np.where(np.isnan(x), low, x).astype(x.dtype) if is_float(x.dtype) else x
        out = run_reference(engine, xs, geom, "max", layout=layout,
                            policy=policy.replace(nan="propagate", empty_max="lowest"))
        assert out.indices is not None
        lost = out.values <= low  # nothing beat the seed: its value, index 0 of the (n, c) plane
        out = Outputs(np.where(lost, low, out.values), np.where(lost, _plane_start(out.values.shape, x.shape),
                                                                   out.indices))
    elif policy.nan == "-inf" and spec.op == "max" and is_float(x.dtype):
        out = run_reference(engine, np.where(np.isnan(x), -np.inf, x).astype(x.dtype), geom, "max", layout=layout,
                            policy=policy.replace(nan="propagate"))
    elif policy.nan == "last-index" and spec.op == "max" and is_float(x.dtype):
        out = run_reference(engine, x, geom, "max", layout=layout, policy=policy.replace(nan="propagate"))
        nan = np.isnan(x)
        # the largest whole-tensor position among a window's NaNs is the last one scanned
        pos = np.where(nan, np.arange(x.size, dtype=np.float64).reshape(x.shape), -1.0)
        last = run_reference(engine, pos, geom, "max", policy=Policy(empty_max="lowest")).values
        assert out.indices is not None
        with np.errstate(all="ignore"):
            last_i = np.where(last >= 0, last, 0).astype(np.int64)
        out = Outputs(out.values, np.where(last >= 0, last_i, out.indices))
    elif policy.nan == "skip" and spec.op == "max" and is_float(x.dtype):
        nan = np.isnan(x)
        base = policy.replace(nan="propagate")
        out = run_reference(engine, np.where(nan, -np.inf, x).astype(x.dtype), geom, "max", layout=layout,
                            policy=base)
        count = run_reference(engine, (~nan).astype(np.float64), geom, "avg", policy=Policy(divisor="full")).values
        present = count > 0
        values = np.where(present, out.values, np.asarray(empty_max_value(x.dtype, base), dtype=x.dtype))
        assert out.indices is not None
        out = Outputs(values, np.where(present, out.indices, base.empty_index))
    else:
        out = run_reference(engine, x, geom, spec.op, exclude_pad=spec.exclude_pad, layout=layout, policy=policy)
    if out.values.dtype != dtype:
        with np.errstate(all="ignore"):
            values = out.values.astype(dtype)
        if x.dtype == np.float32 and dtype == np.float64:  # a float32 stand-in: the result converted back
            values = _saturate(values)
        out = Outputs(values, out.indices)
    return out


def _signed_divisor_empty(geom: Geometry, shape: tuple[int, ...], rule: str) -> np.ndarray:
    """Windows holding no input element whose per-axis size is 0 on some axis, the sizes taken
    unclipped at zero and multiplied (so 0 / 0 = NaN; a negative size gives -0): with padding
    counted (``rule`` "padded") ``min(start + span, size + pad_end) - start``, without it
    ("valid") ``min(start + span, size) - max(start, 0)``. OpenVINO's average with ceil rounding,
    measured both ways (exclude_pad false and true); the full kernel size ("full") is never 0."""
    n = len(geom.axes)
    zero = np.zeros((1, 1) + (1,) * n, dtype=bool)
    if rule == "full":
        return np.zeros(shape, dtype=bool)
    for i, a in enumerate(geom.axes):
        start = np.arange(a.out, dtype=np.int64) * a.stride - a.pad_begin
        end = start + (a.kernel - 1) * a.dilation + 1
        if rule == "valid":
            size = np.minimum(end, a.size) - np.maximum(start, 0)
        else:
            size = np.minimum(end, a.size + a.pad_end) - start
        zero = zero | w.broadcast_axis(size == 0, i, n)
    empty = w.empty_windows(geom)
    if empty is None:
        return np.zeros(shape, dtype=bool)
    return np.broadcast_to(empty & zero, shape)


def _saturate(values: np.ndarray) -> np.ndarray:
    """float64 values as a float32 computation hands them back through a saturating conversion
    (OpenVINO, measured: an average overflowing to inf in float32 comes back as FLT_MAX)."""
    fmax = float(np.finfo(np.float32).max)
    return np.where(np.isnan(values), values, np.clip(values, -fmax, fmax))


#: Computation types a runtime may silently use instead of the input's (OpenVINO's CPU plugin,
#: measured: float16/float64 in float32, 16-bit and unsigned 32-bit and 64-bit integers in int32).
NARROWER: dict[str, str] = {"float16": "float32", "float64": "float32", "int16": "int32", "uint16": "int32",
                            "uint32": "int32", "int64": "int32", "uint64": "int32"}
PRECISION_TEXT = {
    "float32": "computed in float32 (float64 saturated to the float32 range on the way in and out, float16 "
               "widened)",
    "int32": "computed in int32 (the integers converted to 32 bits with wrap-around, and back)",
}


def _narrow(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """``x`` as a runtime computing in ``to`` sees it: float64 saturated to +-FLT_MAX (as
    OpenVINO's conversion does), float16 widened exactly, integers wrapped to 32 bits."""
    if x.dtype == np.float64 and to == np.float32:
        fmax = float(np.finfo(np.float32).max)
        return np.where(np.isnan(x), x, np.clip(x, -fmax, fmax)).astype(np.float32)
    with np.errstate(all="ignore"):
        return x.astype(to)


def _avg_in_input_type(x: np.ndarray, geom: Geometry, exclude_pad: bool, policy: Policy,
                       by_axis: bool = False, rounded: bool = False) -> np.ndarray:
    """Average pooling whose sum runs in ``x.dtype`` (taps in row-major window order, padding
    adding nothing), divided once: how a runtime without a wider accumulator computes it. With
    ``by_axis`` the sum nests by axis, innermost first (XLA's reduce_window on the CPU: each row
    along the last axis from 0, then those row sums, and so on outwards). With ``rounded`` the sum
    runs wider (float32 for float16, float64 for float32) and is rounded to ``x.dtype`` before the
    division (tract)."""
    # x sits at offset max(0, pad_begin): a negative pad_begin (ONNX SAME with a stride past the
    # dilated kernel) starts the windows inside the input rather than before it
    lows = [max(0, a.pad_begin) for a in geom.axes]
    ends = [lo + max(a.size, (a.out - 1) * a.stride - a.pad_begin + a.dilated_kernel) for a, lo in zip(geom.axes, lows)]
    acc_dtype = (np.dtype(np.float32) if x.dtype == np.float16 else np.dtype(np.float64)) if rounded else x.dtype
    padded = np.zeros(tuple(x.shape[:2]) + tuple(ends), dtype=acc_dtype)
    padded[(slice(None), slice(None), *(slice(lo, lo + a.size) for a, lo in zip(geom.axes, lows)))] = x
    def tap(offsets: tuple[int, ...]) -> np.ndarray:
        sl = tuple(slice(lo - a.pad_begin + j * a.dilation,
                         lo - a.pad_begin + j * a.dilation + (a.out - 1) * a.stride + 1, a.stride)
                   for a, j, lo in zip(geom.axes, offsets, lows))
        return padded[(slice(None), slice(None), *sl)]

    def nested(prefix: tuple[int, ...]) -> np.ndarray:
        part = np.zeros(geom.output_shape, dtype=acc_dtype)
        for j in range(geom.axes[len(prefix)].kernel):
            part += tap(prefix + (j,)) if len(prefix) + 1 == len(geom.axes) else nested(prefix + (j,))
        return part

    acc = np.zeros(geom.output_shape, dtype=acc_dtype)
    with np.errstate(all="ignore"):
        if by_axis:
            acc = nested(())
        else:
            for offsets in itertools.product(*(range(a.kernel) for a in geom.axes)):
                acc += tap(offsets)
        acc = acc.astype(x.dtype)  # a wider sum is rounded to the input type here
        div = _NUMPY.divisor(geom, exclude_pad, policy).astype(np.float64)
        mean = acc.astype(np.float64) / div
        empty = np.broadcast_to(div == 0, mean.shape)
        mean[empty] = 0.0 if policy.empty_avg == "zero" else np.nan
    return mean.astype(x.dtype)


def _lowest(dtype: np.dtype) -> float | int:
    return lowest(dtype)


def _plane_start(out_shape: tuple[int, ...], in_shape: tuple[int, ...]) -> np.ndarray:
    """Whole-tensor index of element 0 of each output position's (n, c) plane."""
    grid = np.indices(out_shape[:2]).reshape(2, *out_shape[:2], *(1,) * (len(out_shape) - 2))
    return (grid[0] * in_shape[1] + grid[1]) * math.prod(in_shape[2:])


def _crop(x: np.ndarray, crop: tuple[tuple[int, int], ...] | None) -> np.ndarray:
    if crop is None:
        return x
    return x[(slice(None), slice(None), *(slice(a, b) for a, b in crop))]


def _uncrop_indices(canon: np.ndarray, cropped: tuple[int, ...], shape: tuple[int, ...],
                    crop: tuple[tuple[int, int], ...] | None) -> np.ndarray:
    """Whole-tensor indices over a crop -> the same elements' indices over the full input."""
    if crop is None:
        return canon
    valid = canon >= 0
    plane_c = math.prod(cropped[2:])
    nc, sp = np.divmod(np.where(valid, canon, 0), plane_c)
    coords = np.unravel_index(sp, cropped[2:])
    moved = np.ravel_multi_index(tuple(c + a for c, (a, _b) in zip(coords, crop)), shape[2:])
    return np.where(valid, nc * math.prod(shape[2:]) + moved, canon)


def _explain_values(engine: ModuleType, spec: PoolSpec, x: np.ndarray, geom: Geometry, values: np.ndarray,
                    prefer: Mapping[str, int], out_dtype: np.dtype | None = None,
                    index_score: Callable[[Outputs], int] | None = None,
                    ) -> tuple[list[PolicyVariant], Policy, Outputs, np.ndarray, bool]:
    """Greedy cover of the differing elements by policy variants (one per group). Returns the
    chosen variants, their policy, the reference under it, the elements still differing, and
    whether another variant of a chosen group would have fixed exactly the same elements.
    Variants fixing the same values are told apart by ``index_score`` (how many of the peer's
    indices the variant's reference reproduces), then by ``prefer``, then by their order."""
    base = _run(engine, spec, x, geom, SPEC, out_dtype)
    ok0 = close_values(base.values, values, _tolerance(engine, spec, x, geom, SPEC, base.values))
    base_score = index_score(base) if index_score is not None else 0
    if ok0.all() and (index_score is None or base_score == values.size):
        return [], SPEC, base, ~ok0, False
    bad0 = ~ok0
    candidates: list[tuple[PolicyVariant, np.ndarray, int]] = []
    for v in POLICY_VARIANTS:
        if not _policy_applies(v, spec, x, geom):
            continue
        pol = SPEC.replace(**v.change)
        ref = _run(engine, spec, x, geom, pol, out_dtype)
        ok = close_values(ref.values, values, _tolerance(engine, spec, x, geom, pol, ref.values))
        fixes = bad0 & ok
        breaks = ok0 & ~ok
        score = index_score(ref) if index_score is not None else 0
        if (fixes.any() or score > base_score) and not breaks.any():
            candidates.append((v, fixes, score))
    chosen: list[PolicyVariant] = []
    ambiguous = False
    remaining = bad0.copy()
    while True:
        open_ = [(v, f, sc) for v, f, sc in candidates if v.group not in {c.group for c in chosen}]
        scored = [(int((f & remaining).sum()), sc, prefer.get(v.key, 0), -i, v, f)
                  for i, (v, f, sc) in enumerate(open_)]
        if not scored:
            break
        gain, score, _p, _i, v, f = max(scored, key=lambda t: t[:4])
        if gain == 0:
            break
        ambiguous |= any(o is not v and o.group == v.group and np.array_equal(of, f) and osc == score
                         for o, of, osc in open_)
        chosen.append(v)
        remaining &= ~f
    if not chosen:  # the values agree already: a variant may still account for the indices
        # (the seeded scan only when it explains more than any other: where values agree, its index
        # effect on an empty window is empty_index=0's, an index rule; on an element equal to the
        # lowest value -- which keeps index 0 -- it is its own)
        # the seeded scan only where it reproduces more indices than index 0 for empty windows
        # alone would (an element equal to the lowest value keeps index 0: its own effect)
        seeded_floor = base_score
        if w.empty_windows(geom) is not None and index_score is not None:
            seeded_floor = index_score(_run(engine, spec, x, geom, SPEC.replace(empty_index=0), out_dtype))
        better = [(sc, -i, v) for i, (v, _f, sc) in enumerate(candidates)
                  if sc > base_score and (v.key != "max=seeded-scan" or sc > seeded_floor)]
        if better:
            chosen.append(max(better, key=lambda t: t[:2])[2])
    policy = SPEC
    for v in chosen:
        policy = policy.replace(**v.change)
    ref = _run(engine, spec, x, geom, policy, out_dtype) if chosen else base
    ok = close_values(ref.values, values, _tolerance(engine, spec, x, geom, policy, ref.values))
    return chosen, policy, ref, ~ok, ambiguous


def _explain_indices(spec: PoolSpec, x: np.ndarray, geom: Geometry, ref: Outputs, values: np.ndarray,
                     indices: np.ndarray, crop: tuple[tuple[int, int], ...] | None = None,
                     prefer: Mapping[str, int] | None = None) -> tuple[list[tuple[str, str]], np.ndarray]:
    """Index variants (at most one per group) that reproduce the peer's indices where the
    values agree."""
    shape = tuple(x.shape)
    assert ref.indices is not None
    canon = ref.indices.astype(np.int64)
    peer = np.asarray(indices).astype(np.int64)
    order, modulus = _spec_order_modulus(spec, shape)
    where = close_values(ref.values, values, None)

    fill: str | None = None

    def differs(canon_: np.ndarray, order_: str, modulus_: int, pads: tuple | None,
                fill_: str | None = None) -> np.ndarray:
        return (encode_with_fill(canon_, shape, order_, modulus_, pads, fill_, geom, crop) != peer) & where

    bad0 = differs(canon, order, modulus, None)
    if not bad0.any():
        return [], bad0
    chosen: list[tuple[str, str]] = []
    # A window wholly in padding: the spec's -1, or index 0 of the plane (OpenVINO), or the
    # coordinates -1 on every axis flattened (ONNX Runtime), or the first tap at or after
    # coordinate 0 on every axis flattened (PyTorch).
    if (canon < 0).any():
        fills = []
        for rank, (key, text) in enumerate(EMPTY_INDEX_VARIANTS):
            after = differs(canon, order, modulus, None, key)
            if not (after & ~bad0).any() and (bad0 & ~after).any():
                fills.append((int(after.sum()), -(prefer or {}).get(key, 0), rank, key, text, after))
        if fills:  # the rule that reproduces the most indices (two may agree on a few windows), then
            # the one this peer showed before
            _n, _p, _rank, fill, text, bad0 = min(fills, key=lambda t: t[:3])
            chosen.append((fill, text))
    if bad0.any():
        layout_order, layout_mod, layout_pads = order, modulus, None
        for group in ("index_scope", "index_order", "index_coords"):
            # the variant of the group that reproduces the most indices (the first of equals)
            pick: tuple[IndexVariant, tuple[str, int, tuple | None], np.ndarray] | None = None
            for v in INDEX_VARIANTS:
                if v.group != group or not v.applies(spec, shape, geom):
                    continue
                o, m, p = v.layout(spec, shape, geom)
                trial = (o if group == "index_order" else layout_order,
                         m if group == "index_scope" else layout_mod,
                         p if group == "index_coords" else layout_pads)
                bad = differs(canon, *trial, fill)
                if (int(bad.sum()) < int((bad0 if pick is None else pick[2]).sum())
                        and not (bad & ~bad0).any()):
                    pick = (v, trial, bad)
            if pick is not None:
                v, (layout_order, layout_mod, layout_pads), bad0 = pick
                chosen.append((v.key, v.text))
    return chosen, bad0


def _explain_on(engine: ModuleType, spec: PoolSpec, x: np.ndarray, placement: Placement, values: np.ndarray,
                indices: np.ndarray | None, prefer: Mapping[str, int], compute: np.dtype | None = None) -> _Explained:
    xc = _crop(_narrow(x, compute) if compute is not None else x, placement.crop)
    geom = placement.geom
    score = None
    if spec.op == "max" and indices is not None and tuple(np.shape(indices)) == tuple(values.shape):
        order, modulus = _spec_order_modulus(spec, tuple(x.shape))
        peer_idx = np.asarray(indices).astype(np.int64)

        def score(ref: Outputs) -> int:
            assert ref.indices is not None
            canon = _uncrop_indices(ref.indices.astype(np.int64), tuple(xc.shape), tuple(x.shape), placement.crop)
            return int((encode_indices(canon, tuple(x.shape), order, modulus) == peer_idx).sum())

    chosen, _policy, ref, value_mask, ambiguous = _explain_values(engine, spec, xc, geom, values, prefer,
                                                                  x.dtype, score)
    keys = [v.key for v in chosen]
    texts = [v.text for v in chosen]
    index_mask = None
    if spec.op == "max" and indices is not None and tuple(np.shape(indices)) == tuple(values.shape):
        assert ref.indices is not None
        ref = Outputs(ref.values, _uncrop_indices(ref.indices.astype(np.int64), tuple(xc.shape), tuple(x.shape),
                                                  placement.crop))
        idx_chosen, index_mask = _explain_indices(spec, x, geom, ref, values, indices, placement.crop, prefer)
        keys += [k for k, _ in idx_chosen]
        texts += [t for _, t in idx_chosen]
    return _Explained(keys, texts, value_mask, index_mask, ambiguous, xc, geom)


def placements(spec: PoolSpec, shape: tuple[int, ...]) -> list[tuple[GeometryVariant | None, Placement | None]]:
    """The spec's own placement first, then every applicable geometry variant that places the
    windows differently (``None`` placement: the variant has no valid output, i.e. predicts a
    rejection)."""
    base = Placement(resolve(spec, shape))
    out: list[tuple[GeometryVariant | None, Placement | None]] = [(None, base)]
    for gv in GEOMETRY_VARIANTS:
        if not gv.applies(spec):
            continue
        try:
            p = gv.build(spec, shape)
        except (AttributeValueError, ValueError, ZeroDivisionError):
            out.append((gv, None))
            continue
        if all(p != other for _, other in out):
            out.append((gv, p))
    return out


def diagnose_output(engine: ModuleType, spec: PoolSpec, x: np.ndarray, values: np.ndarray,
                    indices: np.ndarray | None, prefer: Mapping[str, int] | None = None, *,
                    transposed_retry: bool = True) -> Diagnosis:
    """Name the variant(s) of the reference that reproduce a subject's output.

    Several explanations can fit one small example (NaN ignored and NaN-first agree on a window
    whose first element is a number); ``prefer`` (variant -> how often it explained this subject
    before, seeded from the registry) decides between them, so one behaviour gets one class: the
    full explanation needing the fewest variants this subject has never shown wins, then the
    one with the fewest variants, then the one most often seen. A shorter explanation through a
    behaviour never seen does not beat a longer one made of behaviours on record: on a decreasing
    input ONNX Runtime's undilated-kernel SAME windows {0, 3}, {3} plus its NaN-first scan give
    the same outputs as 'dilations ignored' ({0, 1}, {3}) alone."""
    prefer = prefer or {}
    shape = tuple(int(v) for v in x.shape)
    values = np.asarray(values)
    if indices is not None and spec.op == "max" and tuple(np.shape(indices)) != tuple(values.shape):
        found = _transposed_retry(engine, spec, x, values, np.asarray(indices), prefer)
        if found is not None:
            return found
        indices = np.asarray(indices)
        if tuple(indices.shape[:2]) + tuple(indices.shape[2:])[::-1] != tuple(values.shape):
            return Diagnosis("shape: indices unexplained", f"indices shape {list(indices.shape)}, values shape "
                             f"{list(values.shape)}; no known variant gives it", False,
                             atoms=("shape: indices unexplained",), severity=UNEXPLAINED_SEVERITY)
        # transposed, and something else differs too: diagnose the rest on the indices turned back
        indices = np.transpose(indices, (0, 1, *range(indices.ndim - 1, 1, -1)))
    options = placements(spec, shape)
    base = options[0][1]
    assert base is not None
    candidates = [(gv, p) for gv, p in options if p is not None and p.output_shape == tuple(values.shape)]
    if not candidates:
        return Diagnosis(
            "shape: unexplained",
            f"output shape {list(values.shape)}, expected {list(base.output_shape)}; no known variant gives it",
            False, atoms=("shape: unexplained",), severity=UNEXPLAINED_SEVERITY,
        )
    full: list[tuple[tuple[int, int, int, int], _Explained]] = []
    best: _Explained | None = None
    narrower = NARROWER.get(x.dtype.name)
    reps: list[np.dtype | None] = [None, np.dtype(narrower)] if narrower else [None]
    trials = [(gv, p, rep) for rep in reps for gv, p in candidates]
    for order, (gv, p, rep) in enumerate(trials):
        assert p is not None
        try:
            ex = _explain_on(engine, spec, x, p, values, indices, prefer, rep)
        except (PoolcheckError, ValueError):  # an engine refusing a variant's geometry: not this one
            continue
        if gv is not None:
            ex.keys.insert(0, gv.key)
            ex.texts.insert(0, gv.text)
        if rep is not None:
            ex.keys.insert(0, f"precision:{rep.name}")
            ex.texts.insert(0, PRECISION_TEXT[rep.name])
        if ex.remaining == 0 and not ex.keys:
            return Diagnosis("same", "no difference", True)
        if rep is not None and ex.remaining and len(ex.keys) == 1:
            continue  # the narrower type alone explains nothing: no partial diagnosis rests on it
        if ex.remaining == 0:
            unseen = sum(1 for k in ex.keys if not prefer.get(k))
            full.append(((-unseen, -len(ex.keys), sum(prefer.get(k, 0) for k in ex.keys), -order), ex))
        if best is None or (ex.remaining_values, ex.remaining_indices) < (best.remaining_values,
                                                                          best.remaining_indices):
            best = ex
    full.sort(key=lambda t: t[0], reverse=True)
    deadline = time.monotonic() + DIAGNOSIS_SECONDS
    # every full explanation is verified by replaying the case under exactly the named variants
    for _key, ex in full[:MAX_VERIFIED]:
        found = _verified(engine, spec, x, ex.keys, values, indices, ambiguous=ex.ambiguous or len(full) > 1)
        if found is not None:
            return found
    # the greedy cover found no full explanation: search combinations (cheap ones first, bounded)
    found = _combinations(engine, spec, x, candidates, reps, values, indices, prefer, deadline)
    if found is not None:
        return found
    if best is None:
        return Diagnosis("unexplained", "no variant could be evaluated", False, severity=UNEXPLAINED_SEVERITY)
    if transposed_retry and indices is not None:
        found = _transposed_retry(engine, spec, x, values, np.asarray(indices), prefer)
        if found is not None:
            return found
    return _partial(engine, spec, x, best, values, indices)


def _transposed_retry(engine: ModuleType, spec: PoolSpec, x: np.ndarray, values: np.ndarray,
                      indices: np.ndarray, prefer: Mapping[str, int]) -> Diagnosis | None:
    """storage_order=1 honoured by transposing the index tensor (OpenVINO's ONNX frontend): the
    peer's indices with their spatial axes reversed back are diagnosed as usual; when that fully
    explains them as row-major (or as right), the transposition is named with the rest. None
    when it does not apply or explain."""
    flipped = tuple(indices.shape[:2]) + tuple(indices.shape[2:])[::-1]
    if spec.op != "max" or spec.storage_order != 1 or indices.ndim != values.ndim or indices.ndim < 4 \
            or flipped != tuple(values.shape):
        return None
    back = np.transpose(indices, (0, 1, *range(indices.ndim - 1, 1, -1)))
    if np.array_equal(back, indices):
        return None  # the transposition changes nothing here: nothing to tell apart
    inner = diagnose_output(engine, spec, x, values, back, prefer, transposed_retry=False)
    if not inner.explained:
        return None
    keys = tuple(k for k in inner.atoms if k != "index:storage_order-ignored") + ("index:storage_order-transposed",)
    text = "; ".join(variant_text(k) for k in keys)
    return Diagnosis("+".join(keys), text, True, keys, atoms=keys, severity=severity_of(keys, spec))


#: Bounds of the search: full explanations verified, variants combined, seconds per finding.
MAX_VERIFIED = 6
MAX_DEPTH = 3
DIAGNOSIS_SECONDS = 2.0


def _verified(engine: ModuleType, spec: PoolSpec, x: np.ndarray, keys: list[str], values: np.ndarray,
              indices: np.ndarray | None, ambiguous: bool = False) -> Diagnosis | None:
    """A diagnosis naming ``keys`` if replaying the case under them reproduces the peer exactly
    (averages within the tolerance), with the unneeded variants dropped; else None."""
    kept, rep, attribution = settle(engine, spec, x, list(keys), values, indices)
    if rep is None or not rep.exact:
        return None
    if not kept:
        return Diagnosis("same", "no difference", True)
    texts = {k: variant_text(k) for k in kept}
    text = attribution_text(attribution, texts) if len(kept) > 1 else texts[kept[0]]
    return Diagnosis("+".join(kept), text, True, tuple(kept), ambiguous=ambiguous, atoms=tuple(kept),
                     severity=severity_of(kept, spec), attribution=tuple(attribution))


def _combinations(engine: ModuleType, spec: PoolSpec, x: np.ndarray,
                  candidates: Sequence[tuple[GeometryVariant | None, Placement | None]], reps: list[np.dtype | None],
                  values: np.ndarray, indices: np.ndarray | None, prefer: Mapping[str, int],
                  deadline: float) -> Diagnosis | None:
    """Combinations of 0 to :data:`MAX_DEPTH` policy variants (one per group) on every placement
    and computation type, fewest variants first; each variant must change the reference
    somewhere the peer differs (pruning), and the indices are then explained greedily. The first
    combination whose replay reproduces the peer wins."""
    for rep in reps:
        for gv, p in candidates:
            assert p is not None
            xc = _crop(_narrow(x, rep) if rep is not None else x, p.crop)
            base = [*([f"precision:{rep.name}"] if rep is not None else []), *([gv.key] if gv is not None else [])]
            start = replay(engine, spec, x, base, values, indices)
            if start is None:
                continue
            useful, alone = [], {}
            rest = []
            for v in POLICY_VARIANTS:
                if not _policy_applies(v, spec, xc, p.geom):
                    continue
                r = replay(engine, spec, x, [*base, v.key], values, indices)
                # useful: it reproduces a value, or changes which indices agree (a scan rule whose
                # only trace is an index, seen once an index layout variant is applied)
                if r is not None and ((r.value_ok & ~start.value_ok).any() or (
                        r.index_ok is not None and start.index_ok is not None
                        and (r.value_ok == start.value_ok).all() and (r.index_ok != start.index_ok).any())):
                    useful.append(v)
                    alone[v.key] = r
                else:
                    rest.append(v)
            # a variant that matters only together with another (NaN for an empty average only once
            # the divisor ignores padding) is kept if it changes what that other one reproduces
            for v in rest:
                for u in list(useful):
                    if u.group == v.group or u.key not in alone:
                        continue
                    r = replay(engine, spec, x, [*base, u.key, v.key], values, indices)
                    if r is not None and (r.value_ok & ~alone[u.key].value_ok).any():
                        useful.append(v)
                        break
            useful.sort(key=lambda v: -prefer.get(v.key, 0))
            for depth in range(0, MAX_DEPTH + 1):
                for combo in itertools.combinations(useful, depth):
                    if time.monotonic() > deadline:
                        return None
                    if len({v.group for v in combo}) < depth:
                        continue
                    keys = [*base, *(v.key for v in combo)]
                    r = replay(engine, spec, x, keys, values, indices)
                    if r is None or not r.value_ok.all():
                        continue
                    if r.index_ok is not None and not r.index_ok.all():
                        ref = _run(engine, spec, r.x, r.geom, SPEC.replace(
                            **{k: val for v in combo for k, val in v.change.items()}), x.dtype)
                        assert ref.indices is not None and indices is not None
                        ref = Outputs(ref.values, _uncrop_indices(ref.indices.astype(np.int64), tuple(r.x.shape),
                                                                  tuple(x.shape), p.crop))
                        idx, _mask = _explain_indices(spec, x, p.geom, ref, values, indices, p.crop, prefer)
                        keys += [k for k, _t in idx]
                    found = _verified(engine, spec, x, keys, values, indices)
                    if found is not None:
                        return found
    return None


def _partial(engine: ModuleType, spec: PoolSpec, x: np.ndarray, best: _Explained, values: np.ndarray,
             indices: np.ndarray | None) -> Diagnosis:
    """No verified combination reproduces the peer: the class names no variant (a partial match
    may be a coincidence, and a wrong name is worse than none), only ``unexplained values/indices``
    kept apart by the kind of window the differing elements lie in. The closest partial match,
    verified element by element, is mentioned in the text as a lead."""
    _kept, rep, attribution = settle(engine, spec, x, list(best.keys), values, indices)
    attribution = [a for a in attribution if a[1] or a[2]] if rep is not None else []
    raw = replay(engine, spec, x, [], values, indices)
    # the elements the closest match leaves over (its per-element agreement is verified; only its
    # name is withheld), else every differing element of the spec's own windows
    where = rep if rep is not None and attribution else raw if raw is not None else rep
    if where is not None:
        value_mask = ~where.value_ok
        index_mask = None if where.index_ok is None else ~where.index_ok
        ex = _Explained([], [], value_mask, index_mask, x=where.x, geom=where.geom)
    else:
        ex = _Explained([], [], best.value_mask, best.index_mask, x=best.x, geom=best.geom)
    rest = []
    if ex.remaining_values:
        rest.append("values")
    if ex.remaining_indices:
        rest.append("indices")
    unexplained = f"unexplained {'+'.join(rest) or 'output'}"
    text = f"{unexplained} ({ex.remaining} element(s) that no verified combination of known variants reproduces)"
    if attribution:
        text += "; closest, not a full explanation: " + attribution_text(
            attribution, {k: variant_text(k) for k, _v, _i in attribution})
    # what stays unexplained is kept apart by the kind of window it happens in, so one class does
    # not hide the others
    atoms = []
    for what, mask in (("values", ex.value_mask), ("indices", ex.index_mask)):
        if mask is not None and mask.any():
            atoms.append(f"unexplained {what} ({_window_kind(spec, ex, mask)})")
    return Diagnosis(unexplained, text, False, (), ambiguous=True, atoms=tuple(atoms) or (unexplained,),
                     severity=UNEXPLAINED_SEVERITY, attribution=tuple(attribution))


def _window_kind(spec: PoolSpec, ex: _Explained, mask: np.ndarray) -> str:
    """The most specific kind of window among the unexplained elements: wholly in padding, holding
    a NaN, touching padding, or inside the input."""
    x, geom = ex.x, ex.geom
    if x is None or geom is None or geom.output_shape != mask.shape:
        return "window"
    empty = w.empty_windows(geom)
    if empty is not None and (np.broadcast_to(empty, mask.shape) & mask).any():
        return "window wholly in padding"
    if is_float(x.dtype) and np.isnan(x).any() and 0 not in geom.output_shape:
        nan = run_reference(_NUMPY, np.isnan(x).astype(np.float64), geom, "avg", policy=Policy(divisor="full")).values
        if ((nan > 0) & mask).any():
            return "window with NaN"
    n = len(geom.axes)
    padded = np.zeros((1, 1) + (1,) * n, dtype=bool)
    for i, a in enumerate(geom.axes):
        padded = padded | w.broadcast_axis(w.valid_counts(a) < a.kernel, i, n)
    if (np.broadcast_to(padded, mask.shape) & mask).any():
        return "window touching padding"
    return "window inside the input"


# --------------------------------------------------------------------------- diagnosis of rejections


@dataclass(frozen=True)
class RejectRule:
    key: str
    text: str
    holds: Callable[[PoolSpec, np.ndarray], bool]
    needs: str = ""  # a regular expression the peer's message must match (empty: any message)


def _pads_ge_kernel(spec: PoolSpec) -> bool:
    return spec.auto_pad == "explicit" and any(
        p >= k for p, k in zip(spec.pads_begin + spec.pads_end, spec.kernel + spec.kernel))


def _empty_windows(spec: PoolSpec, x: np.ndarray) -> bool:
    try:
        return w.empty_windows(resolve(spec, x.shape)) is not None
    except AttributeValueError:
        return False


def _starts_in_pad(spec: PoolSpec, x: np.ndarray) -> bool:
    if spec.applied_rounding == "floor" or spec.auto_pad not in ("explicit", "valid"):
        return False
    try:
        g = resolve(spec.replace(rounding_type="ceil"), x.shape)
    except AttributeValueError:
        return False
    return any((a.out - 1) * a.stride >= a.size + a.pad_begin for a in g.axes)


#: A rejection is named only when the peer's own message points at the condition (and the
#: condition holds); anything else is classed by its message with the numbers blanked.
REJECT_RULES: tuple[RejectRule, ...] = (
    RejectRule("exclude_pad with pads >= kernel", "rejects exclude_pad with a pad >= the kernel",
               lambda s, x: s.op == "avg" and s.exclude_pad and _pads_ge_kernel(s), r"(?i)exclude_pad"),
    RejectRule("pads >= kernel", "rejects a pad >= the kernel (the ONNX spec does not forbid it)",
               lambda s, x: _pads_ge_kernel(s), r"(?i)pad should be smaller than kernel|pads\[dim\] <"),
    RejectRule("input smaller than the kernel", "rejects an input smaller than the kernel (padding not counted)",
               lambda s, x: any(n < (k - 1) * d + 1 for n, k, d in zip(x.shape[2:], s.kernel, s.dilations)),
               r"(?i)smaller than (the )?kernel"),
    RejectRule("pads > kernel / 2", "rejects a pad larger than half the kernel",
               lambda s, x: s.auto_pad == "explicit" and any(
                   2 * p > k for p, k in zip(s.pads_begin + s.pads_end, s.kernel + s.kernel)), r"(?i)half of"),
    RejectRule("window wholly in padding", "rejects a configuration with a window wholly in padding",
               _empty_windows, r"(?i)wholly in padding|only padding"),
    RejectRule("ceil window starting in padding", "rejects a ceil window that starts in the padding",
               _starts_in_pad, r"(?i)ceil.*(start|begin).*pad"),
    RejectRule("dilations", "rejects dilations > 1", lambda s, x: any(d > 1 for d in s.dilations), r"(?i)dilation"),
    RejectRule("asymmetric pads", "rejects asymmetric pads",
               lambda s, x: s.auto_pad == "explicit" and s.pads_begin != s.pads_end, r"(?i)symmetric"),
)


#: Geometry variants that can leave a configuration without output (a peer following one rejects).
REJECTING_VARIANTS = frozenset({"same:undilated-kernel", "same:negative-pads"})


def normalise_message(message: str, limit: int = 80) -> str:
    """A message with numbers and paths blanked, so one cause gives one class."""
    text = re.sub(r"0x[0-9a-fA-F]+", "#", message)
    text = re.sub(r"\d+", "#", text)
    # a tuple or list of numbers (a shape) is one blank, however many axes or signs it has
    text = re.sub(r"[\(\[][-#,\s]*[\)\]]", "#", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text[:limit]


def diagnose_rejection(spec: PoolSpec, x: np.ndarray, message: str) -> Diagnosis:
    """A peer refused a configuration the engine accepts: name the condition it trips on."""
    if "NOT_IMPLEMENTED" in message or "Could not find an implementation" in message:
        key = f"no {spec.op} kernel for {x.dtype.name}"
        return Diagnosis(f"rejects: {key}", f"has no kernel for {x.dtype.name} ({message[:120]})", True, (key,),
                         severity=REJECTION_SEVERITY)
    if "supported only with one output" in message:  # OpenVINO CPU, e.g. bfloat16 MaxPool with its indices
        key = f"no {spec.op} kernel with indices for {x.dtype.name}"
        return Diagnosis(f"rejects: {key}", f"has no kernel with indices for {x.dtype.name} ({message[:120]})", True,
                         (key,), severity=REJECTION_SEVERITY)

    def holds(rule: RejectRule) -> bool:
        try:
            return rule.holds(spec, x)
        except (AttributeValueError, ValueError):
            return False

    # 1. a named condition the message itself points at
    for rule in REJECT_RULES:
        if rule.needs and re.search(rule.needs, message) and holds(rule):
            return Diagnosis(f"rejects: {rule.key}", f"{rule.text} ({message[:160]})", True, (rule.key,),
                             severity=REJECTION_SEVERITY)
    # 2. a SAME-padding variant under which the configuration has no output
    try:
        options = placements(spec, tuple(int(v) for v in x.shape))
    except AttributeValueError:
        options = []
    for gv, p in options:
        if gv is not None and p is None and gv.key in REJECTING_VARIANTS:
            key = f"{gv.key} gives no output"
            return Diagnosis(f"rejects: {key}", f"rejects it: {gv.text}, and then the output size is negative "
                             f"({message[:160]})", True, (gv.key,), severity=REJECTION_SEVERITY)
    norm = normalise_message(message)
    return Diagnosis(f"rejects: {norm}", f"rejects the configuration: {message[:200]}", False,
                     severity=REJECTION_SEVERITY)


# --------------------------------------------------------------------------- severity

_OV_MAXPOOL = "OpenVINO MaxPool-8"
_OV_SHAPES = "OpenVINO Shape Calculation Rules for Pooling Operators"
_ONNX_AVG = "ONNX AveragePool-19"
_ONNX_MAX = "ONNX MaxPool-22 (attribute storage_order)"
_Q_DIVISOR = ("The output of each pooling window is divided by the number of elements (exclude pad when "
              "attribute count_include_pad is zero).")
_Q_FLOOR = ("H_out = floor((H + pads_begin[0] + pads_end[0] - ((kernel[0] - 1) * dilations[0] + 1)) / strides[0] "
            "+ 1)")
_Q_CEIL = "H_out = ceil((H + pads_begin[0] + pads_end[0] - ((kernel[0] - 1) * dilations[0] + 1)) / strides[0] + 1)"
_Q_CEIL_TORCH = ("If rounding_type is set to ceil_torch, the last pooling operation within a dimension cannot start "
                 "in the padding area.")
_Q_SAME_PADS = ("pad_shape[i] = (output_spatial_shape[i] - 1) * strides_spatial_shape[i] + "
                "((kernel_spatial_shape[i] - 1) * dilations[i] + 1) - input_spatial_shape[i]")
_Q_SAME_SPLIT = ("same_upper (same_lower) the input is padded to match the output size. In case of odd padding value, "
                 "an extra padding is added at the end (at the beginning).")
_Q_SAME_ONNX = ("SAME_UPPER or SAME_LOWER: output_spatial_shape[i] = floor((input_spatial_shape[i] - 1) / "
                "strides_spatial_shape[i]) + 1")
_Q_PADS_BEGIN = ("pads_begin is a number of pixels to add to the beginning along each axis. For example, pads_begin "
                 "equal to \u201c1,2\u201d means adding 1 pixel to the top of the input and 2 to the left of the input.")
_Q_VALID = ("VALID: output_spatial_shape[i] = ceil((input_spatial_shape[i] - ((kernel_spatial_shape[i] - 1) * "
            "dilations[i] + 1) + 1) / strides_spatial_shape[i])")
_Q_DILATIONS = ("dilations specify the index of the next pixel to select when pooling. [...] A value of 2 indicates "
                "that one pixel is skipped and every other pixel is considered.")
_Q_INDEX = "Values are computed as indices in a tensor flattened to 1D, not considering padding."
_Q_AXIS = ("The upper bound is the product of dimensions starting from the one pointed by the \u2018axis\u2019 "
           "attribute until the end of the input shape.")
_Q_STORAGE = "The storage order of the tensor. 0 is row major, and 1 is column major."
_Q_MAX = ("The max pooling operation involves sliding a filter over each channel of a feature map and downsampling "
          "by choosing the largest value within the region covered by the filter.")


@dataclass(frozen=True)
class SeverityRule:
    """The weight of one named behaviour. A ``violation`` quotes the sentence it contradicts;
    ``when`` (optional) restricts the row to configurations where that sentence applies (the first
    matching row of a key wins)."""

    key: str
    severity: Severity
    why: str  # for ``unspecified``/``limitation``: what the spec leaves open; else the source document
    quote: str = ""
    when: Callable[[PoolSpec], bool] | None = None


_V, _U, _L = Severity.VIOLATION, Severity.UNSPECIFIED, Severity.LIMITATION
_onnx: Callable[[PoolSpec], bool] = lambda s: s.convention == "onnx"  # noqa: E731
_excl: Callable[[PoolSpec], bool] = lambda s: s.exclude_pad  # noqa: E731
_incl: Callable[[PoolSpec], bool] = lambda s: not s.exclude_pad  # noqa: E731
_maxop: Callable[[PoolSpec], bool] = lambda s: s.op == "max"  # noqa: E731

#: Severity of every class the diagnosis names (data: the quoted sentences are the reason).
SEVERITY_RULES: tuple[SeverityRule, ...] = (
    # geometry
    SeverityRule("valid:ceil_mode-applied", _V, _ONNX_AVG, _Q_VALID),
    SeverityRule("rounding:ceil_torch->ceil", _V, _OV_SHAPES, _Q_CEIL_TORCH),
    SeverityRule("rounding:ceil->ceil_torch", _V, _OV_SHAPES, _Q_CEIL),
    SeverityRule("rounding:ceil->floor", _V, _OV_SHAPES, _Q_CEIL),
    SeverityRule("rounding:floor->ceil", _V, _OV_SHAPES, _Q_FLOOR),
    SeverityRule("same:rounding-applied", _V, _ONNX_AVG, _Q_SAME_ONNX, _onnx),
    SeverityRule("same:rounding-applied", _U, "the OpenVINO page gives H_out = H for SAME (it ignores the stride) "
                 "and says only that an uneven division is rounded with rounding_type"),
    SeverityRule("same:swapped", _V, _OV_MAXPOOL, _Q_SAME_SPLIT),
    SeverityRule("same:undilated-kernel", _V, _ONNX_AVG, _Q_SAME_PADS),
    SeverityRule("same:undilated-kernel-cropped", _V, _ONNX_AVG, _Q_SAME_PADS),
    SeverityRule("same:clamped", _V, _ONNX_AVG, _Q_SAME_PADS),
    SeverityRule("same:negative-pads", _U, "whether a negative SAME pad total (stride larger than the dilated "
                 "kernel) is applied or clamped at 0 (the ONNX formula as written goes negative; OpenVINO's page "
                 "gives no pad formula)"),
    SeverityRule("same:negative-pads-floor-split", _U, "how a negative odd SAME pad total is split between the "
                 "two ends (the spec's rule for the odd element speaks of adding padding)"),
    SeverityRule("same:negative-pads-cropped", _U, "as same:negative-pads; a negative end pad also shortens the "
                 "windows (and the divisor)"),
    SeverityRule("pads:swapped", _V, _OV_MAXPOOL, _Q_PADS_BEGIN),
    SeverityRule("pads:begin-both-ends", _V, _OV_MAXPOOL, _Q_PADS_BEGIN),
    SeverityRule("pads:end-both-ends", _V, _OV_MAXPOOL, _Q_PADS_BEGIN),
    SeverityRule("pads:ignored", _V, _OV_MAXPOOL, _Q_PADS_BEGIN),
    SeverityRule("auto_pad:ignored", _V, _OV_MAXPOOL, _Q_SAME_SPLIT),
    SeverityRule("dilations:ignored", _V, _OV_MAXPOOL, _Q_DILATIONS),
    # policy
    SeverityRule("nan=ignore", _U, "NaN handling in max pooling"),
    SeverityRule("nan=first", _U, "NaN handling in max pooling"),
    SeverityRule("nan=-inf", _U, "NaN handling in max pooling"),
    SeverityRule("nan=skip", _U, "NaN handling in max pooling"),
    SeverityRule("nan=last-index", _U, "which index a window holding several NaNs reports"),
    SeverityRule("max=seeded-scan", _U, "NaN handling and the value/index of a window wholly in padding"),
    SeverityRule("empty_max=lowest", _U, "the value of a max window wholly in padding"),
    SeverityRule("empty_max=zero", _U, "the value of a max window wholly in padding"),
    SeverityRule("empty_max=nan", _U, "the value of a max window wholly in padding"),
    SeverityRule("divisor=padded", _V, _ONNX_AVG, _Q_DIVISOR, _excl),
    SeverityRule("divisor=full", _V, _ONNX_AVG, _Q_DIVISOR, _excl),
    SeverityRule("divisor=full", _U, "whether taps past the padded input (ceil rounding) count in the divisor "
                 "when padding is counted"),
    SeverityRule("divisor=valid", _V, _ONNX_AVG, _Q_DIVISOR, _incl),
    SeverityRule("empty_avg=nan", _U, "the average of a window holding no element"),
    SeverityRule("empty_avg=signed-divisor", _U, "the average of a window holding no element"),
    SeverityRule("avg=input-type-sum", _U, "the accumulation type of the average"),
    SeverityRule("avg=input-type-sum-by-axis", _U, "the accumulation type and order of the average"),
    SeverityRule("avg=wide-sum-rounded", _U, "the accumulation type of the average"),
    SeverityRule("avg=nan-skipped", _U, "NaN handling in average pooling"),
    # computation type: a max that is not one of the input's values contradicts "choosing the largest value"
    SeverityRule("precision:float32", _V, _OV_MAXPOOL, _Q_MAX, _maxop),
    SeverityRule("precision:int32", _V, _OV_MAXPOOL, _Q_MAX, _maxop),
    SeverityRule("precision:float32", _U, "the computation type of the average"),
    SeverityRule("precision:int32", _U, "the computation type of the average"),
    # indices
    SeverityRule("empty_index=0", _U, "the index of a max window wholly in padding"),
    SeverityRule("empty_index=-1-per-axis", _U, "the index of a max window wholly in padding"),
    SeverityRule("empty_index=first-tap", _U, "the index of a max window wholly in padding"),
    SeverityRule("index:axis-ignored", _V, _OV_MAXPOOL, _Q_AXIS),
    SeverityRule("index:per-plane", _V, _OV_MAXPOOL, _Q_AXIS),
    SeverityRule("index:storage_order-ignored", _V, _ONNX_MAX, _Q_STORAGE),
    SeverityRule("index:storage_order-transposed", _V, _ONNX_MAX, _Q_STORAGE),
    SeverityRule("index:column-major", _V, _OV_MAXPOOL, _Q_INDEX),
    SeverityRule("index:padded-coordinates", _V, _OV_MAXPOOL, _Q_INDEX),
)
#: Classes outside the table: a rejection of a valid configuration is a limitation; what no
#: variant reproduces is a violation until explained (the reference implements the spec text).
REJECTION_SEVERITY = Severity.LIMITATION
UNEXPLAINED_SEVERITY = Severity.VIOLATION
#: A peer that crashes or hangs on a valid configuration gives no output the spec defines.
STATUS_SEVERITY: dict[str, Severity] = {"crash": Severity.VIOLATION, "timeout": Severity.VIOLATION}
_RANK = (Severity.VIOLATION, Severity.LIMITATION, Severity.UNSPECIFIED, Severity.ERRATUM)


def severity_rule(key: str, spec: PoolSpec) -> SeverityRule | None:
    """The table row that weighs ``key`` for ``spec`` (None: not a named variant)."""
    for rule in SEVERITY_RULES:
        if rule.key == key and (rule.when is None or rule.when(spec)):
            return rule
    return None


def severity_of(atoms: tuple[str, ...] | list[str], spec: PoolSpec) -> Severity:
    """The most severe weight among a diagnosis's atoms."""
    found = []
    for atom in atoms:
        if atom.startswith("rejects: "):
            found.append(REJECTION_SEVERITY)
            continue
        rule = severity_rule(atom, spec)
        found.append(rule.severity if rule is not None else UNEXPLAINED_SEVERITY)
    return min(found, key=_RANK.index) if found else UNEXPLAINED_SEVERITY


# --------------------------------------------------------------------------- replay and verification

_GEOMETRY_BY_KEY = {gv.key: gv for gv in GEOMETRY_VARIANTS}
_POLICY_BY_KEY = {v.key: v for v in POLICY_VARIANTS}
_INDEX_BY_KEY = {v.key: v for v in INDEX_VARIANTS}
_EMPTY_INDEX_KEYS = {k for k, _ in EMPTY_INDEX_VARIANTS}


@dataclass
class Replay:
    """The reference re-run under a set of named variants, in the peer's own terms: values in the
    input type, indices in the spec's layout (the peer's), and the per-element agreement."""

    values: np.ndarray
    indices: np.ndarray | None
    value_ok: np.ndarray  # elements whose value the replay reproduces (within the average tolerance)
    index_ok: np.ndarray | None  # ... whose index (where the values agree)
    x: np.ndarray  # the input the windows ran on (narrowed, cropped)
    geom: Geometry

    @property
    def exact(self) -> bool:
        return bool(self.value_ok.all()) and (self.index_ok is None or bool(self.index_ok.all()))


def replay(engine: ModuleType, spec: PoolSpec, x: np.ndarray, keys: tuple[str, ...] | list[str],
           values: np.ndarray, indices: np.ndarray | None) -> Replay | None:
    """Re-run the reference under ``keys`` (any mix of precision, geometry, policy and index
    variants) and compare with the peer's ``values``/``indices``. None: the keys give no output of
    the peer's shape (or name something unknown)."""
    shape = tuple(int(v) for v in x.shape)
    compute: np.dtype | None = None
    placement = Placement(resolve(spec, shape))
    changes: dict[str, object] = {}
    index_keys: list[str] = []
    for key in keys:
        if key.startswith("precision:"):
            compute = np.dtype(key.split(":", 1)[1])
        elif key in _GEOMETRY_BY_KEY:
            try:
                placement = _GEOMETRY_BY_KEY[key].build(spec, shape)
            except (AttributeValueError, ValueError, ZeroDivisionError):
                return None
        elif key in _POLICY_BY_KEY:
            changes.update(_POLICY_BY_KEY[key].change)
        elif key in _INDEX_BY_KEY or key in _EMPTY_INDEX_KEYS:
            index_keys.append(key)
        else:
            return None
    values = np.asarray(values)
    if placement.output_shape != tuple(values.shape):
        return None
    policy = SPEC.replace(**changes)
    xc = _crop(_narrow(x, compute) if compute is not None else x, placement.crop)
    geom = placement.geom
    try:
        ref = _run(engine, spec, xc, geom, policy, x.dtype)
    except (PoolcheckError, ValueError):
        return None
    value_ok = close_values(ref.values, values, _tolerance(engine, spec, xc, geom, policy, ref.values))
    if spec.op != "max" or indices is None or ref.indices is None or np.shape(indices) != values.shape:
        return Replay(ref.values, None, value_ok, None, xc, geom)
    canon = _uncrop_indices(ref.indices.astype(np.int64), tuple(xc.shape), shape, placement.crop)
    order, modulus = _spec_order_modulus(spec, shape)
    pads = None
    fill = None
    for key in index_keys:
        if key in _EMPTY_INDEX_KEYS:
            fill = key
            continue
        v = _INDEX_BY_KEY[key]
        o, m, p = v.layout(spec, shape, geom)
        if v.group == "index_order":
            order = o
        elif v.group == "index_scope":
            modulus = m
        else:
            pads = p
    encoded = encode_with_fill(canon, shape, order, modulus, pads, fill, geom, placement.crop)
    where = close_values(ref.values, values, None)
    index_ok = (encoded == np.asarray(indices).astype(np.int64)) | ~where
    return Replay(ref.values, encoded, value_ok, index_ok, xc, geom)


def _covers(a: Replay | None, b: Replay) -> bool:
    """``a`` reproduces at least every element ``b`` does."""
    if a is None:
        return False
    if (b.value_ok & ~a.value_ok).any():
        return False
    if b.index_ok is not None and (a.index_ok is None or (b.index_ok & ~a.index_ok).any()):
        return False
    return True


def settle(engine: ModuleType, spec: PoolSpec, x: np.ndarray, keys: list[str], values: np.ndarray,
           indices: np.ndarray | None) -> tuple[list[str], Replay | None, list[tuple[str, int, int]]]:
    """Verify ``keys`` by replay, drop every variant the replay does not need (one that changes
    nothing relevant), and attribute to each remaining variant the elements that stop agreeing
    without it: ``(key, values, indices)``."""
    full = replay(engine, spec, x, keys, values, indices)
    if full is None:
        return keys, None, []
    kept = list(keys)
    for key in list(kept):
        trial = [k for k in kept if k != key]
        if _covers(replay(engine, spec, x, trial, values, indices), full):
            kept = trial
    # the elements each variant is needed for; an element several are needed for goes to the most
    # specific one (the variant needed for the fewest elements), so the counts add up
    lost: list[tuple[str, np.ndarray, np.ndarray]] = []
    for key in kept:
        without = replay(engine, spec, x, [k for k in kept if k != key], values, indices)
        if without is None or without.value_ok.shape != full.value_ok.shape:
            lost_v = full.value_ok.copy()
            lost_i = np.zeros_like(lost_v) if full.index_ok is None else full.index_ok & ~lost_v
        else:
            lost_v = full.value_ok & ~without.value_ok
            lost_i = np.zeros_like(lost_v)
            if full.index_ok is not None and without.index_ok is not None:
                lost_i = full.index_ok & ~without.index_ok & without.value_ok
        lost.append((key, lost_v, lost_i))
    sizes = {key: int(v.sum() + i.sum()) for key, v, i in lost}
    attribution = []
    for key, lost_v, lost_i in lost:
        mine_v, mine_i = lost_v.copy(), lost_i.copy()
        for other, ov, oi in lost:
            if other != key and (sizes[other], kept.index(other)) < (sizes[key], kept.index(key)):
                mine_v &= ~ov
                mine_i &= ~oi
        attribution.append((key, int(mine_v.sum()), int(mine_i.sum())))
    return kept, full, attribution


def attribution_text(attribution: list[tuple[str, int, int]] | tuple[tuple[str, int, int], ...],
                     texts: Mapping[str, str]) -> str:
    """``values at 12 positions: <variant>; indices at 3 positions: <variant>`` (output shape:
    a geometry variant moves every window)."""
    parts = []
    for key, nv, ni in attribution:
        what = []
        if nv:
            what.append(f"values at {nv} position{'s' if nv != 1 else ''}")
        if ni:
            what.append(f"indices at {ni} position{'s' if ni != 1 else ''}")
        where = " and ".join(what) or "the output shape"
        parts.append(f"{where}: {texts.get(key, key)}")
    return "; ".join(parts)


def variant_text(key: str) -> str:
    """The sentence for a variant key."""
    if key.startswith("precision:"):
        return PRECISION_TEXT.get(key.split(":", 1)[1], key)
    if key in _GEOMETRY_BY_KEY:
        return _GEOMETRY_BY_KEY[key].text
    if key in _POLICY_BY_KEY:
        return _POLICY_BY_KEY[key].text
    if key in _INDEX_BY_KEY:
        return _INDEX_BY_KEY[key].text
    return dict(EMPTY_INDEX_VARIANTS).get(key, key)

