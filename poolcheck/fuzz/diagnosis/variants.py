"""The named variants of the reference: geometry (window placement and output shape), policy
(NaN, empty windows, divisor, accumulation), indices, computation type; their texts and the
placements a spec admits."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.errors import AttributeValueError
from poolcheck.fuzz.diagnosis.indices import (
    DEPTHLESS_TAIL,
    TAIL_VECTOR_BYTES,
    TRANSPOSED,
    _palindromic,
    _spec_order_modulus,
    window_offset_indices,
)
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.dtypes import BFLOAT16, is_float
from poolcheck.spec.shape import AxisGeometry, Geometry, resolve


@dataclass(frozen=True)
class Placement:
    """Where a variant puts the windows: a geometry over the input, or over a crop of it (a
    negative pad -- windows starting inside the input -- is a crop: ``crop`` holds the kept
    ``(start, stop)`` per spatial axis)."""

    geom: Geometry
    crop: tuple[tuple[int, int], ...] | None = None
    #: per spatial axis, how many outputs the runner computes: an output at or past that count on
    #: any axis is 0 (a zero tail: onnx.reference's AveragePool and LpPool under SAME or VALID with a
    #: dilation). None: every output.
    computed: tuple[int, ...] | None = None
    #: the runner's own index rule (``rule(spec, x, geom, canon)`` -> indices in the spec's
    #: layout, from the chosen elements' whole-tensor row-major indices): a code path that places
    #: the windows and numbers its indices its own way; no index variant combines with it
    index_rule: Callable[[PoolSpec, np.ndarray, Geometry, np.ndarray], np.ndarray] | None = None

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.geom.output_shape


def computed_mask(computed: tuple[int, ...] | None, output_shape: tuple[int, ...]) -> np.ndarray | None:
    """The outputs a placement's runner computes, as a mask broadcasting over ``output_shape``
    (``(1, 1, *spatial)``); None when it computes them all."""
    if computed is None:
        return None
    spatial = output_shape[2:]
    mask = np.ones((1, 1, *spatial), dtype=bool)
    for i, n in enumerate(computed):
        mask &= w.broadcast_axis(np.arange(spatial[i]) < n, i, len(spatial))
    return mask


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


def _legacy_same(dilated: bool, crop_tail: bool = False, floor_split: bool = False, *, zero_tail: bool = False,
                 lower_as_upper: bool = False) -> Callable[[PoolSpec, tuple[int, ...]], Placement]:
    """SAME pads as legacy implementations compute them: ``pad_needed = (ceil(size / stride) - 1)
    * stride + kernel - size`` with the undilated ``kernel`` (or the dilated one), NOT clamped at
    zero (a stride larger than the kernel gives a negative pad: windows start inside the input),
    split with C integer division, and the output size taken from the explicit-padding formula
    ``(size + pad_needed - dilation * (kernel - 1) - 1) / stride + 1`` (C integer division; with
    ceil_mode a float division rounded up). Measured against ONNX Runtime 1.31 for sizes 1-6 and
    1.32 for sizes 1-10 (MaxPool and AveragePool), kernels 1-4, strides 1-4, dilations 1-3, both
    SAME modes and both ceil_modes. With ``crop_tail`` a negative end pad also
    cuts the input short (ONNX Runtime's average: ``hend = min(hstart + kernel, size + pad_end)``).

    Two ways onnx.reference 1.23 computes SAME (``onnx/reference/ops/op_pool_common.py`` and
    ``op_max_pool.py``; measured on sizes 1-8 and 2-D inputs, kernels 1-3, strides 1-3, dilations
    1-3, both modes, both ceil_modes and count_include_pads): with ``zero_tail`` (its
    AveragePool/LpPool, ``CommonPool._run``) a negative ``pad_needed`` gives no output (numpy's pad
    refuses a negative width), the output keeps the SAME size ``ceil(size / stride)`` but only the
    explicit formula's ``floor((size + pad_needed - dilated kernel) / stride) + 1`` windows (none
    when negative) are computed, the rest left 0 (:attr:`Placement.computed`); with
    ``lower_as_upper`` (its MaxPool once a stride or dilation is not 1, ``_max_pool``) SAME_LOWER
    is split as SAME_UPPER (``pad_needed // 2`` at the beginning) and sized ``floor(size /
    stride)``."""

    def build(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
        ceil_mode = spec.convention == "onnx" and spec.ceil_mode == 1
        lower = spec.auto_pad == "same_lower"
        axes = []
        crops = []
        computed = []
        for i, size in enumerate(shape[2:]):
            k, s, d = spec.kernel[i], spec.strides[i], spec.dilations[i]
            k_eff = (k - 1) * d + 1 if dilated else k
            target = size // s if lower and lower_as_upper else (size + s - 1) // s
            need = (target - 1) * s + k_eff - size
            if zero_tail and need < 0:
                raise AttributeValueError("strides", f"axis {i}: negative SAME pad total {need}")
            div = (lambda a, b: a // b) if floor_split else _c_div  # Python floors, C truncates
            head = div(need + 1, 2) if lower and not lower_as_upper else div(need, 2)
            tail = need - head
            span = size + need - d * (k - 1) - 1
            # integer division (C) without ceil_mode; a float ceil with it (ONNX Runtime 1.31, 1.32)
            out = math.ceil(span / s + 1) if ceil_mode else _c_div(span, s) + 1
            if zero_tail:  # the SAME size, only the explicit formula's windows computed (floor)
                out, windows = target, max(0, span // s + 1)
                computed.append(min(windows, out))
            if out < 0:
                raise AttributeValueError("kernel", f"axis {i}: negative output size {out}")
            # a negative head pad moves the windows into the input; a negative tail only shortens
            # the output (the windows still read up to the end of the input)
            start, stop = max(0, -head), (size + min(tail, 0) if crop_tail else size)
            crops.append((start, stop))
            axes.append(AxisGeometry(stop - start, k, s, d, max(head, 0), max(tail, 0), out))
        crop = tuple(crops) if any(c != (0, n) for c, n in zip(crops, shape[2:])) else None
        tail_kept = tuple(computed) if computed and any(n < a.out for n, a in zip(computed, axes)) else None
        return Placement(Geometry(shape[0], shape[1], tuple(axes)), crop, tail_kept)

    return build


def _valid_zero_tail(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    """VALID as onnx.reference 1.23's AveragePool/LpPool computes it (``get_output_shape_auto_pad``
    then ``pool``; measured on 918 configurations, sizes 1-9 and 2-D, kernels 1-3, strides 1-3,
    dilations 1-3, both count_include_pads): the output sized from the UNdilated kernel,
    ``floor((size - kernel) / stride) + 1``, but only the dilated kernel's ``floor((size -
    dilated kernel) / stride) + 1`` windows computed (none when negative), the rest left 0."""
    axes, computed = [], []
    for i, size in enumerate(shape[2:]):
        k, s, d = spec.kernel[i], spec.strides[i], spec.dilations[i]
        out = (size - k) // s + 1
        if out < 0:  # numpy refuses a negative dimension
            raise AttributeValueError("kernel", f"axis {i}: negative output size {out}")
        axes.append(AxisGeometry(size, k, s, d, 0, 0, out))
        computed.append(min(out, max(0, (size - (k - 1) * d - 1) // s + 1)))
    kept = tuple(computed) if any(n < a.out for n, a in zip(computed, axes)) else None
    return Placement(Geometry(shape[0], shape[1], tuple(axes)), None, kept)


def _ceil_extra_split(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    """Explicit pads with ceil_mode as onnx.reference 1.23's AveragePool computes them
    (``op_pool_common.py``: ``get_output_shape_explicit_padding`` then ``pool``): the output size
    is the spec's (ceil, the last window dropped when it starts past ``size + pads_begin``), but
    the padding the last window needs past the padded input, ``extra = (out - 1) * stride +
    dilated kernel - (size + pads_begin + pads_end)``, is added half before the input (``extra //
    2``) and half after, while a window's taps still stop at the original padded end ``size +
    pads_begin + pads_end``: with ``extra >= 2`` every window starts ``extra // 2`` elements
    earlier, and an end pad smaller than that cuts the input's last elements off (a crop).
    Measured (ReferenceEvaluator, onnx 1.23.2; sizes 1-8, kernels 1-3, strides 1-3, dilations 1-2,
    pads 0-2 at each end, ceil_mode 0/1, count_include_pad 0/1, and 2-D inputs): 3901 outputs
    equal, 745 more with its empty windows' NaN (``empty_avg=nan``), none different. LpPool runs
    the same code on |x|^p, times the kernel size: this placement with ``lp:ceil-window-rescaled``
    (its windows' taps inside the padded input, padding counted, scaled up to the kernel size)."""
    g = resolve(spec, shape)
    axes, crops = [], []
    for a in g.axes:
        extra = (a.out - 1) * a.stride + (a.kernel - 1) * a.dilation + 1 - (a.size + a.pad_begin + a.pad_end)
        shift = extra // 2 if extra > 0 else 0
        stop = a.size + min(0, a.pad_end - shift)
        crops.append((0, stop))
        axes.append(AxisGeometry(stop, a.kernel, a.stride, a.dilation, a.pad_begin + shift,
                                 max(0, a.pad_end - shift), a.out))
    crop = tuple(crops) if any(c != (0, n) for c, n in zip(crops, shape[2:])) else None
    return Placement(Geometry(g.batch, g.channels, tuple(axes)), crop)


def _unit_step_path(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    """onnx.reference 1.23's MaxPool when every stride and dilation is 1
    (``_op_common_pool.CommonPool._run`` and ``_pool``; its other path, ``_max_pool``, follows the
    spec's explicit geometry). Only a 4-item ``pads`` is applied, as ``[top, bottom, left,
    right]``: a 2-D input is padded with ONNX's ``[b0, b1, e0, e1]`` read interleaved, and with
    ceil_mode ``_get_output_shape`` adds the pad total to the padded size again, the loop computing
    only the padded input's ``padded size - kernel + 1`` windows (the rest 0, index -1). A 1-D or
    3-D input is not padded, but its begin pads enter the sizes: with ceil_mode ``size + pads_begin
    - kernel + 1`` windows start at its first element (pads_begin counted at the end, pads_end
    ignored); without, a pads_begin makes the loop overrun the output it sized (an IndexError: no
    output). Under SAME a 2-D input is padded as the spec pads it (the total from
    ``_get_pad_shape``, split as the mode says) and sized ``ceil(size / stride)``, so only its
    indices differ, the attribute's (absent) pads offsetting them; a 1-D or 3-D one is not modelled.
    Its indices: :func:`window_offset_indices`."""
    if not _unit_step_applies(spec):
        raise ValueError("onnx.reference takes its _max_pool path here")
    n = spec.spatial_rank
    if spec.auto_pad in ("same_upper", "same_lower"):
        if n != 2:
            raise ValueError("onnx.reference's SAME path for a 1-D or 3-D input is not modelled")
        return Placement(resolve(spec, shape), None, None, window_offset_indices)
    begin, end = (spec.pads_begin, spec.pads_end) if spec.auto_pad == "explicit" else ((0,) * n, (0,) * n)
    ceil = spec.rounding_type != "floor"
    if n != 2 and not ceil and any(begin):
        raise ValueError("onnx.reference's loop overruns the output it sized")
    axes, computed = [], []
    for i, size in enumerate(shape[2:]):
        k = spec.kernel[i]
        if n == 2:
            flat = [*begin, *end]
            b, e = flat[2 * i], flat[2 * i + 1]
            out = size + b + e - k + 1 + (b + e if ceil else 0)
            computed.append(max(0, size + b + e - k + 1))  # none: a kernel past the padded input
        else:
            b, e = 0, begin[i]
            out = size + begin[i] - k + 1
            computed.append(out)
        if out < 1:  # "output shape cannot be null or negative"
            raise AttributeValueError("kernel", f"axis {i}: no output ({out})")
        axes.append(AxisGeometry(size, k, 1, 1, b, e, out))
    kept = tuple(computed) if any(c < a.out for c, a in zip(computed, axes)) else None
    return Placement(Geometry(shape[0], shape[1], tuple(axes)), None, kept, window_offset_indices)


def _same_rounded(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    """SAME pads as the spec computes them, then the explicit formula with ``rounding_type``."""
    g = resolve(spec, shape)
    return Placement(resolve(spec.replace(auto_pad="explicit", pads_begin=g.pads_begin, pads_end=g.pads_end), shape))


def _swap_same(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    other = "same_lower" if spec.auto_pad == "same_upper" else "same_upper"
    return Placement(resolve(spec.replace(auto_pad=other), shape))


def _same_clamped_ceil(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    """ONNX SAME pads clamped at 0 (OpenVINO's resolution), then the explicit formula with
    OpenVINO's ``ceil``: the ONNX frontend's SAME with ceil_mode=1."""
    g = resolve(spec.replace(convention="openvino"), shape)
    return Placement(resolve(spec.replace(convention="openvino", auto_pad="explicit", pads_begin=g.pads_begin,
                                          pads_end=g.pads_end, rounding_type="ceil"), shape))


def _valid_ceil(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    n = spec.spatial_rank
    return Placement(resolve(spec.replace(auto_pad="explicit", pads_begin=(0,) * n, pads_end=(0,) * n,
                                          rounding_type="ceil_torch"), shape))


def _is_same(spec: PoolSpec) -> bool:
    return spec.auto_pad in ("same_upper", "same_lower")


def _explicit_asym(spec: PoolSpec) -> bool:
    return spec.auto_pad == "explicit" and spec.pads_begin != spec.pads_end


def _unit_step_applies(spec: PoolSpec) -> bool:
    """Where :func:`_unit_step_path` models onnx.reference's common path: explicit or VALID
    padding, or SAME on a 2-D input (whatever the rounding: its SAME output size is ceil(size /
    stride) with or without ceil_mode, and with stride 1 its loop's ceil and floor agree)."""
    return _unit_steps(spec) and (spec.auto_pad in ("explicit", "valid") or (
        spec.auto_pad in ("same_upper", "same_lower") and spec.spatial_rank == 2))


def _unit_steps(spec: PoolSpec) -> bool:
    """onnx.reference's MaxPool takes its ``_op_common_pool`` path (no padding applied for a 1-D or
    3-D input) when every stride and dilation is 1."""
    return spec.op == "max" and all(v == 1 for v in (*spec.strides, *spec.dilations))


def _has_pads(spec: PoolSpec) -> bool:
    return any(spec.pads_begin) or any(spec.pads_end)


def _zero_pads(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    n = spec.spatial_rank
    return Placement(resolve(spec.replace(pads_begin=(0,) * n, pads_end=(0,) * n), shape))


def _last_window_against(where: str) -> Callable[[PoolSpec, tuple[int, ...]], Placement]:
    """ceil_torch with its last-window test made against the wrong bound: the last window is
    dropped when it starts at or past ``H`` (``where`` "H": pads_begin forgotten) or ``H +
    pads_end`` (``where`` "H+pads_end") instead of ``H + pads_begin``."""

    def build(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
        g = resolve(spec.replace(rounding_type="ceil", convention="openvino"), shape)
        axes = []
        for a in g.axes:
            bound = a.size + (a.pad_end if where == "H+pads_end" else 0)
            out = a.out - 1 if a.out > 1 and (a.out - 1) * a.stride >= bound else a.out
            axes.append(dataclasses.replace(a, out=out))
        return Placement(Geometry(g.batch, g.channels, tuple(axes)))

    return build


def _interleaved_pads(spec: PoolSpec, shape: tuple[int, ...],
                      read: bool) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The pads a converter hands on when it confuses ONNX ``pads`` [b0, b1, ..., e0, e1, ...]
    with pairs [b0, e0, b1, e1, ...]: written as pairs and read as ONNX says (``read`` False), or
    the other way round. A converter resolves SAME and VALID to explicit pads first, so the pads
    are the applied ones. None: nothing moves."""
    n = spec.spatial_rank
    if n < 2:
        return None
    try:
        g = resolve(spec, shape)
    except (AttributeValueError, ValueError):
        return None
    begin, end = g.pads_begin, g.pads_end
    if any(p < 0 for p in begin + end):
        return None
    if read:
        flat = [*begin, *end]
        moved = (tuple(flat[0::2]), tuple(flat[1::2]))
    else:
        flat = [v for pair in zip(begin, end) for v in pair]
        moved = (tuple(flat[:n]), tuple(flat[n:]))
    return None if moved == (begin, end) else moved


def _interleaving_moves(spec: PoolSpec, read: bool) -> bool:
    return spec.spatial_rank > 1 and (any(spec.pads_begin) or any(spec.pads_end) or spec.auto_pad != "explicit")


def _interleaved(read: bool) -> Callable[[PoolSpec, tuple[int, ...]], Placement]:
    def build(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
        moved = _interleaved_pads(spec, shape, read)
        if moved is None:
            raise ValueError("the pads read interleaved are the pads")
        explicit = spec.replace(auto_pad="explicit", pads_begin=moved[0], pads_end=moved[1])
        if spec.auto_pad in ("same_upper", "same_lower"):  # the SAME output size is the floor formula's
            explicit = explicit.replace(rounding_type="floor")
        try:
            return Placement(resolve(explicit, shape))
        except AttributeValueError:
            pass
        # pads read this way may leave an axis shorter than the kernel: a runtime that does not
        # refuse it (ONNX Runtime) sizes the output with C integer division, and the windows reach
        # past the padded input (those taps count as nothing)
        axes = []
        for i, size in enumerate(shape[2:]):
            k, st, d = explicit.kernel[i], explicit.strides[i], explicit.dilations[i]
            pb, pe = explicit.pads_begin[i], explicit.pads_end[i]
            span = size + pb + pe - ((k - 1) * d + 1)
            if explicit.applied_rounding == "floor" or span < 0:
                out = _c_div(span, st) + 1
            else:
                out = -(-span // st) + 1
            axes.append(AxisGeometry(size, k, st, d, pb, pe, max(out, 0)))
        return Placement(Geometry(shape[0], shape[1], tuple(axes)))

    return build


def _last_tap_dropped(spec: PoolSpec, shape: tuple[int, ...]) -> Placement:
    """Every window one tap short on the last spatial axis (a loop bound off by one), the
    windows and output where the spec puts them."""
    g = resolve(spec, shape)
    last = g.axes[-1]
    if last.kernel < 2:
        raise ValueError("a window of one tap has no tap to drop")
    return Placement(Geometry(g.batch, g.channels, (*g.axes[:-1], dataclasses.replace(last, kernel=last.kernel - 1))))


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
    GeometryVariant("rounding:ceil-extra-pad-split",
                    "the padding the last ceil window needs past the padded input split half before the input: "
                    "with extra = (out - 1) * stride + dilated kernel - padded size >= 2 every window starts "
                    "extra // 2 elements earlier, its taps still ending at the padded input's end "
                    "(onnx.reference's AveragePool with explicit pads and ceil_mode)",
                    lambda s: s.op == "avg" and s.applied_rounding != "floor" and s.auto_pad in ("explicit", "valid"),
                    _ceil_extra_split),
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
    GeometryVariant("same:clamped-ceil-mode-applied",
                    "ONNX SAME pads clamped at 0, then the output sized by the explicit formula with ceil_mode=1 "
                    "as OpenVINO's ceil (ONNX sizes SAME ceil(size / stride) whatever ceil_mode; a last window may "
                    "start past the input; MaxPool: the frontend's AveragePool keeps ONNX's SAME size)",
                    lambda s: s.op == "max" and _is_same(s) and s.convention == "onnx" and s.ceil_mode == 1,
                    _same_clamped_ceil),
    GeometryVariant("same:undilated-kernel-zero-tail",
                    "SAME pads computed from the undilated kernel (a negative total gives no output), the output "
                    "sized ceil(size / stride) but only the explicit formula's floor((size + pads - dilated kernel) "
                    "/ stride) + 1 windows computed: the outputs past them are 0 (onnx.reference's AveragePool)",
                    lambda s: _is_same(s) and s.op == "avg" and s.rounding_type == "floor"
                    and any(d > 1 for d in s.dilations), _legacy_same(dilated=False, zero_tail=True)),
    GeometryVariant("valid:undilated-kernel-zero-tail",
                    "VALID output sized from the undilated kernel, floor((size - kernel) / stride) + 1, but only the "
                    "dilated kernel's floor((size - dilated kernel) / stride) + 1 windows computed: the outputs past "
                    "them are 0 (onnx.reference's AveragePool)",
                    lambda s: s.op == "avg" and s.auto_pad == "valid" and s.rounding_type == "floor"
                    and any(d > 1 for d in s.dilations), _valid_zero_tail),
    GeometryVariant("same:lower-as-upper-floor-size",
                    "same_lower padded as same_upper (the odd pad at the end; pad_needed // 2 at the beginning, "
                    "from the dilated kernel, not clamped at 0) and sized floor(size / stride) instead of "
                    "ceil (onnx.reference's MaxPool with a stride or dilation > 1)",
                    lambda s: s.op == "max" and s.auto_pad == "same_lower"
                    and any(v > 1 for v in (*s.strides, *s.dilations)),
                    _legacy_same(dilated=True, floor_split=True, lower_as_upper=True)),
    # before the other pads variants: where it places the windows as one of them does, it is the
    # name of the one runtime known to take that path (the others stay verified alternatives)
    GeometryVariant("max:unit-step-common-path",
                    "onnx.reference's MaxPool path for strides and dilations 1: pads not applied to a 1-D or 3-D input "
                    "(pads_begin counted at the end, pads_end ignored) and read as [top, bottom, left, right] for a "
                    "2-D one (with ceil_mode the output sized with the pads twice, the outputs past the padded input's "
                    "windows 0 with index -1); each index is the chosen element's rank in its window (0 when the "
                    "window's numbers are all equal; +-inf counted as the type's largest finite magnitude, as np.nan_to_num "
                    "makes them) unraveled with the output's shape, plus the output position "
                    "minus pads_begin, within the (n, c) plane",
                    _unit_step_applies, _unit_step_path),
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
    GeometryVariant("rounding:ceil_torch-last-window-vs-H",
                    "ceil_torch's last-window test made against H instead of H + pads_begin (a last window "
                    "starting inside the begin padding's reach is dropped)",
                    lambda s: s.applied_rounding == "ceil_torch" and s.auto_pad == "explicit" and any(s.pads_begin),
                    _last_window_against("H")),
    GeometryVariant("rounding:ceil_torch-last-window-vs-H+pads_end",
                    "ceil_torch's last-window test made against H + pads_end instead of H + pads_begin",
                    lambda s: s.applied_rounding == "ceil_torch" and s.auto_pad == "explicit"
                    and s.pads_begin != s.pads_end, _last_window_against("H+pads_end")),
    GeometryVariant("pads:onnx-written-interleaved",
                    "ONNX pads written interleaved ([b0, e0, b1, e1, ...]) and read as ONNX orders them "
                    "([b0, b1, ..., e0, e1, ...])", lambda s: _interleaving_moves(s, read=False), _interleaved(False)),
    GeometryVariant("pads:onnx-read-interleaved",
                    "ONNX pads ([b0, b1, ..., e0, e1, ...]) read interleaved, as [b0, e0, b1, e1, ...]",
                    lambda s: _interleaving_moves(s, read=True), _interleaved(True)),
    GeometryVariant("window:last-tap-dropped",
                    "each window's last tap on the last spatial axis dropped (a loop bound off by one)",
                    lambda s: s.kernel[-1] > 1, _last_tap_dropped),
    GeometryVariant("dilations:ignored", "dilations ignored",
                    lambda s: any(d > 1 for d in s.dilations),
                    lambda s, shape: Placement(resolve(s.replace(dilations=(1,) * s.spatial_rank), shape))),
)


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
    PolicyVariant("empty_max=int32-lowest-wrapped", "empty_max",
                  "a window wholly in padding gives int32's lowest value (-2^31) converted to the narrower signed "
                  "integer type by dropping its high bits: 0 for int8 and int16 (OpenVINO's CPU plugin gives 0 for "
                  "int16, -2^31 for int32: int16 pooled in int32 and converted back)", {"empty_max": "int32-lowest-wrapped"}),
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
                  {"avg_nan": "skip"}),
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
    PolicyVariant("int_max:pad-zero", "int_max",
                  "integer max with the padding read as 0, not the type's lowest value (a window touching the "
                  "padding never gives less than 0)", {"nan": "pad-zero"}),
    PolicyVariant("int_max:seed-zero", "int_max",
                  "integer max scanned from 0 at index 0 with a strict '>' (a window whose elements are all <= 0 "
                  "gives 0 and index 0 of its plane)", {"nan": "seed-zero"}),
    PolicyVariant("int_max:seed-lowest+1", "int_max",
                  "integer max scanned from the type's lowest value + 1 at index 0 with a strict '>' (the lowest "
                  "value never wins)", {"nan": "seed-lowest+1"}),
    PolicyVariant("max=seeded-scan", "nan",
                  "max scanned from the lowest value at index 0 with a strict '>': NaN and an element equal to "
                  "the lowest value never win, a window wholly in padding gives the lowest value and index 0",
                  {"nan": "seeded"}),
)


def applicable_policies(spec: PoolSpec, x: np.ndarray, geom: Geometry) -> list[PolicyVariant]:
    """The policy variants that can change the reference of ``spec`` on ``x`` over ``geom``, in
    :data:`POLICY_VARIANTS` order (whether ``x`` holds a NaN and whether a window is empty are
    asked once, not once per variant)."""
    has_nan = is_float(x.dtype) and bool(np.isnan(x).any())
    has_empty = w.empty_windows(geom) is not None
    return [v for v in POLICY_VARIANTS if _policy_applies(v, spec, x.dtype, geom, has_nan, has_empty)]


def _policy_applies(v: PolicyVariant, spec: PoolSpec, dtype: np.dtype, geom: Geometry, has_nan: bool,
                    has_empty: bool) -> bool:
    if v.key == "max=seeded-scan":
        return spec.op == "max"
    if v.group == "nan":
        return spec.op == "max" and has_nan
    if v.group == "int_max":
        if spec.op != "max" or dtype.kind != "i":
            return False
        return v.key != "int_max:pad-zero" or any(geom.pads_begin) or any(geom.pads_end)
    if v.group == "empty_max":
        if spec.op != "max" or not has_empty:
            return False
        if v.key == "empty_max=int32-lowest-wrapped":  # only a signed type narrower than int32 wraps it
            return dtype.kind == "i" and dtype.itemsize < 4
        # -inf is "lowest" for integers, which have no NaN
        return is_float(dtype) or v.key not in ("empty_max=lowest", "empty_max=nan")
    if v.group == "divisor":
        own = "valid" if spec.exclude_pad else "padded"
        return spec.op == "avg" and v.change["divisor"] != own
    if v.group == "empty_avg":
        return spec.op == "avg" and has_empty
    if v.group == "avg_nan":
        return spec.op == "avg" and spec.exclude_pad and has_nan
    if v.group == "accumulate":
        return spec.op == "avg" and dtype in (np.float16, np.float32, BFLOAT16)
    return False


@dataclass(frozen=True)
class IndexVariant:
    key: str
    group: str
    text: str
    applies: Callable[[PoolSpec, tuple[int, ...], Geometry], bool]
    layout: Callable[[PoolSpec, tuple[int, ...], Geometry], tuple[str, int, tuple | None]]
    #: the (n, c) planes numbered c * N + n instead of n * C + c (see :func:`renumber_planes`)
    renumber: bool = False


def _off_by_one_axis(spec: PoolSpec, shape: tuple[int, ...]) -> int | None:
    """The index scope of a negative ``axis`` normalised one too low (``axis + rank - 1``), when
    that is a valid axis and scopes differently from the spec's."""
    if spec.axis >= 0 or spec.axis + len(shape) - 1 < 0:
        return None
    modulus = math.prod(shape[spec.axis + len(shape) - 1:])
    return modulus if modulus != _spec_order_modulus(spec, shape)[1] else None


INDEX_VARIANTS: tuple[IndexVariant, ...] = (
    IndexVariant("index:planes-c*N+n", "index_planes",
                 "the (n, c) planes numbered c * N + n instead of n * C + c (batch and channels swapped)",
                 lambda s, shape, g: shape[0] > 1 and shape[1] > 1,
                 lambda s, shape, g: (*_spec_order_modulus(s, shape), None), renumber=True),
    IndexVariant("index:negative-axis-off-by-one", "index_scope",
                 "a negative axis normalised one too low (axis + rank - 1): indices count from the dimension "
                 "before the one axis points at",
                 lambda s, shape, g: _off_by_one_axis(s, shape) is not None,
                 lambda s, shape, g: (_spec_order_modulus(s, shape)[0], _off_by_one_axis(s, shape) or 1, None)),
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
DEPTHLESS_TAIL_TEXT = ("a window whose elements all equal the type's lowest value (-inf for a float), or that holds "
                       "none, reports its first tap at or after coordinate 0 on every axis; in 3-D, the channels past "
                       f"the last whole {TAIL_VECTOR_BYTES}-byte vector (every channel when C is below that many "
                       "elements) drop the depth term d*H*W from it (PyTorch's channels_last max_pool3d)")
#: What a max window holding no element reports as its index, per rule (tried in this order).
EMPTY_INDEX_VARIANTS: tuple[tuple[str, str], ...] = (
    ("empty_index=0", EMPTY_INDEX_TEXT),
    ("empty_index=-1-per-axis", EMPTY_INDEX_MINUS_TEXT),
    ("empty_index=first-tap", EMPTY_INDEX_TAP_TEXT),
    (DEPTHLESS_TAIL, DEPTHLESS_TAIL_TEXT),
)


#: Computation types a runtime may silently use instead of the input's (OpenVINO's CPU plugin,
#: measured: float16/float64 in float32, 16-bit and unsigned 32-bit and 64-bit integers in int32).
NARROWER: dict[str, str] = {"float16": "float32", "float64": "float32", "int16": "int32", "uint16": "int32",
                            "uint32": "int32", "int64": "int32", "uint64": "int32"}
PRECISION_TEXT = {
    "float32": "computed in float32 (float64 saturated to the float32 range on the way in and out, float16 "
               "widened)",
    "int32": "computed in int32 (the integers converted to 32 bits with wrap-around, and back)",
}


def placements(spec: PoolSpec, shape: tuple[int, ...]) -> list[tuple[GeometryVariant | None, Placement | None]]:
    """The spec's own placement first, then every applicable geometry variant that places the
    windows differently (``None`` placement: the variant has no valid output, i.e. predicts a
    rejection). Computed once per spec and shape (a geometry is diagnosed on several inputs)."""
    return list(_placements(spec, tuple(int(v) for v in shape)))


@functools.lru_cache(maxsize=1024)
def _placements(spec: PoolSpec, shape: tuple[int, ...]) -> tuple[tuple[GeometryVariant | None, Placement | None], ...]:
    base = Placement(resolve(spec, shape))
    out: list[tuple[GeometryVariant | None, Placement | None]] = [(None, base)]
    for gv in GEOMETRY_VARIANTS:
        if not gv.applies(spec):
            continue
        p = built_placement(gv.key, spec, shape)
        if p is None:
            out.append((gv, None))
            continue
        if all(p != other for _, other in out):
            out.append((gv, p))
    return tuple(out)


_GEOMETRY_BY_KEY = {gv.key: gv for gv in GEOMETRY_VARIANTS}


@functools.lru_cache(maxsize=8192)
def built_placement(key: str, spec: PoolSpec, shape: tuple[int, ...]) -> Placement | None:
    """Where geometry variant ``key`` puts the windows on ``spec`` and ``shape``, built once (the
    placements, the twins of a name and every replay naming it ask for the same few); None: the
    variant gives no valid output here."""
    try:
        return _GEOMETRY_BY_KEY[key].build(spec, shape)
    except (AttributeValueError, ValueError, ZeroDivisionError):
        return None
_POLICY_BY_KEY = {v.key: v for v in POLICY_VARIANTS}
_INDEX_BY_KEY = {v.key: v for v in INDEX_VARIANTS}
_EMPTY_INDEX_KEYS = {k for k, _ in EMPTY_INDEX_VARIANTS}


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
