"""The reference re-run under a variant: a policy (including the diagnosis-only NaN and
accumulation settings), a narrower computation type, a cropped input."""

from __future__ import annotations

import itertools
import math
from types import ModuleType
from typing import get_args

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.engines import numpy_engine as _NUMPY
from poolcheck.engines.numpy_engine import empty_max_value
from poolcheck.fuzz.diagnosis.indices import _plane_start
from poolcheck.fuzz.diagnosis.variants import computed_mask
from poolcheck.fuzz.reference import Outputs, canonical_layout, compute_expected
from poolcheck.judgement import avg_tolerance
from poolcheck.spec import dtypes
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.dtypes import BFLOAT16, finfo, is_float, lowest
from poolcheck.spec.policy import NanMode, Policy
from poolcheck.spec.shape import Geometry


def _padding_only(spec: PoolSpec, x: np.ndarray, geom: Geometry, policy: Policy, dtype: np.dtype) -> Outputs:
    """The outputs where an axis holds no element: a placement's crop can leave it none
    (onnx.reference's ceil padding split shifts a one-element axis's windows past it), a
    geometry both engines refuse, while every window is plain: padding only. An average is 0 over
    the padding it counts, the empty-window value where it counts none; a max is the empty window's
    value and index."""
    if spec.op == "avg":
        counted = np.broadcast_to(_NUMPY.divisor(geom, spec.exclude_pad, policy), geom.output_shape)
        empty_avg = 0.0 if policy.empty_avg == "zero" else np.nan
        return Outputs(np.where(counted > 0, 0.0, empty_avg).astype(dtype))
    empty_max = np.asarray(empty_max_value(x.dtype, policy), dtype=x.dtype)
    return Outputs(np.full(geom.output_shape, empty_max, dtype=dtype),
                   np.full(geom.output_shape, int(policy.empty_index), dtype=np.int64))


def _tolerance(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, geom: Geometry, policy: Policy,
               expected: np.ndarray) -> np.ndarray | None:
    """The average rule for a re-run under ``policy``, or None (exact) for max pooling. Under
    ``avg=nan-skipped`` (``policy.avg_nan == "skip"``) the bound is the one of an average over a
    window's other elements: its mean |x| is taken without the NaN elements, as the average is
    (the engine's average of |x| is NaN in such a window, which left no tolerance at all: a
    peer summing the same numbers in another order, onnx.reference's ``np.average``, was then
    unexplained by one ulp)."""
    if spec.op != "avg" or 0 in geom.output_shape:
        return None
    mean_abs = None
    if 0 in x.shape[2:]:  # no element (see _padding_only): nothing to average, no rounding
        mean_abs = np.zeros(geom.output_shape)
    elif policy.avg_nan == "skip" and is_float(x.dtype):
        with np.errstate(all="ignore"):
            mean_abs = _run(engine_module, spec, np.abs(x.astype(np.float64)), geom, policy).values
    return avg_tolerance(x, geom, spec.exclude_pad, policy, expected, engine_module, mean_abs=mean_abs)


def _run(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, geom: Geometry, policy: Policy,
         out_dtype: np.dtype | None = None, computed: tuple[int, ...] | None = None) -> Outputs:
    """The reference under ``policy`` on ``geom``; values cast to ``out_dtype`` (the peer's type
    when ``x`` is a float32 stand-in); with ``computed`` (:attr:`Placement.computed`) the values
    past the computed outputs are 0, their windows never evaluated (the indices stay: a zero tail
    is an average's)."""
    out = _run_windows(engine_module, spec, x, geom, policy, out_dtype)
    mask = computed_mask(computed, geom.output_shape)
    if mask is None:
        return out
    return Outputs(np.where(mask, out.values, np.zeros((), dtype=out.values.dtype)), out.indices)


def _run_windows(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, geom: Geometry, policy: Policy,
                 out_dtype: np.dtype | None = None) -> Outputs:
    """:func:`_run` over every window. Two diagnosis-only NaN settings: ``policy.nan == "-inf"``
    reads NaN as -inf; ``"skip"`` makes NaN elements no candidates at all, so a window of NaN
    and padding is an empty window."""
    layout = canonical_layout(x.shape) if spec.op == "max" else None
    dtype = np.dtype(out_dtype or x.dtype)
    if 0 in geom.output_shape:  # an empty output: nothing to compute
        empty = np.zeros(geom.output_shape, dtype=dtype)
        return Outputs(empty, np.zeros(geom.output_shape, dtype=np.int64) if spec.op == "max" else None)
    if policy.empty_max == "nan":  # diagnosis-only: an empty max window is NaN (padding read as NaN)
        out = _run(engine_module, spec, x, geom, policy.replace(empty_max="-inf"), out_dtype)
        empty = w.empty_windows(geom)
        if empty is None or spec.op != "max" or not is_float(out.values.dtype):
            return out
        return Outputs(np.where(np.broadcast_to(empty, out.values.shape), np.nan, out.values).astype(
            out.values.dtype), out.indices)
    if policy.empty_max == "int32-lowest-wrapped":  # diagnosis-only: int32's lowest, high bits dropped
        out = _run(engine_module, spec, x, geom, policy.replace(empty_max="lowest"), out_dtype)
        empty = w.empty_windows(geom)
        if empty is None or spec.op != "max" or out.values.dtype.kind != "i":
            return out
        wrapped = np.asarray(np.iinfo(np.int32).min, dtype=np.int64).astype(out.values.dtype)
        return Outputs(np.where(np.broadcast_to(empty, out.values.shape), wrapped, out.values), out.indices)
    if policy.empty_avg == "signed-divisor":  # diagnosis-only: see _signed_divisor_empty
        out = _run(engine_module, spec, x, geom, policy.replace(empty_avg="zero"), out_dtype)
        if spec.op != "avg" or not is_float(out.values.dtype):
            return out
        rule = policy.divisor if policy.divisor != "attribute" else ("valid" if spec.exclude_pad else "padded")
        return Outputs(np.where(_signed_divisor_empty(geom, out.values.shape, rule), np.nan, out.values).astype(
            out.values.dtype))
    if 0 in x.shape[2:]:  # a placement's crop left an axis no element (see _padding_only)
        return _padding_only(spec, x, geom, policy, dtype)
    if policy.avg_nan == "skip" and spec.op == "avg":  # diagnosis-only: NaN neither summed nor counted
        nan = np.isnan(x) if is_float(x.dtype) else np.zeros(x.shape, dtype=bool)
        full = Policy(divisor="full")
        taps = math.prod(a.kernel for a in geom.axes)
        share = compute_expected(engine_module, (~nan).astype(np.float64), geom, "avg", policy=full).values
        count = np.rint(share * taps)  # the window's elements other than NaN
        rest = np.where(nan, 0, x).astype(x.dtype)
        if policy.nan in _INPUT_TYPE_SUMS:  # the other elements summed in the input type, as that variant sums
            mean = _avg_in_input_type(rest, geom, spec.exclude_pad, policy.replace(avg_nan="propagate"),
                                      by_axis=policy.nan == "sum-in-input-type-by-axis",
                                      rounded=policy.nan == "sum-rounded-to-input-type", count=count)
            mean = np.where(count > 0, mean, np.nan)  # no element left: NaN, as without the input-type sum
        else:
            total = compute_expected(engine_module, rest.astype(np.float64), geom, "avg", policy=full).values
            with np.errstate(all="ignore"):
                mean = np.where(count > 0, total / np.where(count > 0, share, 1), np.nan)
        out = Outputs(mean.astype(x.dtype))
    elif policy.nan == "sum-in-input-type" and spec.op == "avg":
        out = Outputs(_avg_in_input_type(x, geom, spec.exclude_pad, policy.replace(nan="propagate")))
    elif policy.nan == "sum-rounded-to-input-type" and spec.op == "avg":
        out = Outputs(_avg_in_input_type(x, geom, spec.exclude_pad, policy.replace(nan="propagate"), rounded=True))
    elif policy.nan == "sum-in-input-type-by-axis" and spec.op == "avg":
        out = Outputs(_avg_in_input_type(x, geom, spec.exclude_pad, policy.replace(nan="propagate"), by_axis=True))
    elif policy.nan in ("seeded", "seed-zero", "seed-lowest+1") and spec.op == "max":
        # bfloat16 is scanned in float32, from float32's lowest value, and rounded back: the
        # kernels that take bfloat16 without a bfloat16 max compute it so (OpenVINO's CPU plugin
        # without avx512_core), and -3.4028235e38 rounds to -inf in bfloat16
        wide = x.astype(np.float32) if x.dtype == BFLOAT16 else x
        seed = {"seeded": _lowest(wide.dtype), "seed-zero": 0, "seed-lowest+1": _lowest(wide.dtype) + 1}[str(policy.nan)]
        low = np.asarray(seed, dtype=wide.dtype)
        xs = np.where(np.isnan(wide), low, wide).astype(wide.dtype) if is_float(wide.dtype) else wide
        out = compute_expected(engine_module, xs, geom, "max", layout=layout,
                            policy=policy.replace(nan="propagate", empty_max="lowest"))
        assert out.indices is not None
        lost = out.values <= low  # nothing beat the seed: its value, index 0 of the (n, c) plane
        out = Outputs(dtypes.cast(np.where(lost, low, out.values), x.dtype),
                      np.where(lost, _plane_start(out.values.shape, x.shape), out.indices))
    elif policy.nan == "pad-zero" and spec.op == "max":
        out = compute_expected(engine_module, x, geom, "max", layout=layout, policy=policy.replace(nan="propagate"))
        touching = np.broadcast_to(_touches_padding(geom), out.values.shape)
        zero = np.zeros((), dtype=out.values.dtype)
        out = Outputs(np.where(touching & ~(out.values > zero), zero, out.values), out.indices)
    elif policy.nan == "-inf" and spec.op == "max" and is_float(x.dtype):
        out = compute_expected(engine_module, np.where(np.isnan(x), -np.inf, x).astype(x.dtype), geom, "max", layout=layout,
                            policy=policy.replace(nan="propagate"))
    elif policy.nan == "last-index" and spec.op == "max" and is_float(x.dtype):
        out = compute_expected(engine_module, x, geom, "max", layout=layout, policy=policy.replace(nan="propagate"))
        nan = np.isnan(x)
        # the largest whole-tensor position among a window's NaNs is the last one scanned
        pos = np.where(nan, np.arange(x.size, dtype=np.float64).reshape(x.shape), -1.0)
        last = compute_expected(engine_module, pos, geom, "max", policy=Policy(empty_max="lowest")).values
        assert out.indices is not None
        with np.errstate(all="ignore"):
            last_i = np.where(last >= 0, last, 0).astype(np.int64)
        out = Outputs(out.values, np.where(last >= 0, last_i, out.indices))
    elif policy.nan == "skip" and spec.op == "max" and is_float(x.dtype):
        nan = np.isnan(x)
        base = policy.replace(nan="propagate")
        out = compute_expected(engine_module, np.where(nan, -np.inf, x).astype(x.dtype), geom, "max", layout=layout,
                            policy=base)
        count = compute_expected(engine_module, (~nan).astype(np.float64), geom, "avg", policy=Policy(divisor="full")).values
        present = count > 0
        values = np.where(present, out.values, np.asarray(empty_max_value(x.dtype, base), dtype=x.dtype))
        assert out.indices is not None
        out = Outputs(values, np.where(present, out.indices, base.empty_index))
    else:
        if policy.nan not in get_args(NanMode):  # a diagnosis-only NaN setting that does not apply here
            raise ValueError(f"nan={policy.nan} does not apply to {spec.op} pooling of {x.dtype.name}")
        out = compute_expected(engine_module, x, geom, spec.op, exclude_pad=spec.exclude_pad, layout=layout, policy=policy)
    if out.values.dtype != dtype:
        with np.errstate(all="ignore"):
            values = out.values.astype(dtype)
        if x.dtype == np.float32 and dtype == np.float64:  # a float32 stand-in: the result converted back
            values = _saturate(values)
        out = Outputs(values, out.indices)
    return out


def _touches_padding(geom: Geometry) -> np.ndarray:
    """Windows with a tap in the padding (``[-pad_begin, 0)`` or ``[size, size + pad_end)`` on
    some axis; taps past the padded input under ceil rounding are not padding)."""
    n = len(geom.axes)
    touching = np.zeros((1, 1) + (1,) * n, dtype=bool)
    for i, a in enumerate(geom.axes):
        taps = (np.arange(a.out, dtype=np.int64)[:, None] * a.stride - a.pad_begin
                + np.arange(a.kernel, dtype=np.int64)[None, :] * a.dilation)
        pad = ((taps < 0) & (taps >= -a.pad_begin)) | ((taps >= a.size) & (taps < a.size + a.pad_end))
        touching = touching | w.broadcast_axis(np.asarray(pad.any(axis=1)), i, n)
    return touching


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


def _narrow(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """``x`` as a runtime computing in ``to`` sees it: float64 saturated to +-FLT_MAX (as
    OpenVINO's conversion does), float16 widened exactly, integers wrapped to 32 bits."""
    if x.dtype == np.float64 and to == np.float32:
        fmax = float(np.finfo(np.float32).max)
        return np.where(np.isnan(x), x, np.clip(x, -fmax, fmax)).astype(np.float32)
    with np.errstate(all="ignore"):
        return x.astype(to)


#: The diagnosis-only ``nan`` settings of an average summed in (or rounded to) the input type.
_INPUT_TYPE_SUMS = ("sum-in-input-type", "sum-in-input-type-by-axis", "sum-rounded-to-input-type")


def order_open(spec: PoolSpec, x: np.ndarray, geom: Geometry, policy: Policy, actual: np.ndarray) -> np.ndarray | None:
    """Under an input-type sum (:data:`_INPUT_TYPE_SUMS`), the outputs whose non-finite answer
    the order of the additions decides: the window's finite magnitudes add up past the type's
    largest value, so some order of partial sums overflows (``-M + x + M + -M`` is -M in row-major
    order and -inf where the two -M meet first, as XLA's reduce_window may add them), and ``actual``
    there is inf, -inf or NaN. None where no such output exists (or the policy sums wider)."""
    if spec.op != "avg" or policy.nan not in _INPUT_TYPE_SUMS or not is_float(x.dtype):
        return None
    acting = np.asarray(actual)
    if acting.shape != geom.output_shape:
        return None
    infinite = ~np.isfinite(acting.astype(np.float64))
    if not infinite.any():  # (the common case: nothing to leave open, no window summed)
        return None
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64)
        magnitude = np.where(np.isfinite(wide), np.abs(wide), 0.0)
        means = _avg_in_input_type(magnitude, geom, spec.exclude_pad, Policy(divisor="full"))
        taps = math.prod(a.kernel for a in geom.axes)
        reach = means * taps > float(finfo(x.dtype).max) / (1 + (taps + 2) * float(finfo(x.dtype).eps))
        open_ = reach & infinite
    return open_ if open_.any() else None


def _avg_in_input_type(x: np.ndarray, geom: Geometry, exclude_pad: bool, policy: Policy,
                       by_axis: bool = False, rounded: bool = False, count: np.ndarray | None = None) -> np.ndarray:
    """Average pooling whose sum runs in ``x.dtype`` (taps in row-major window order, padding
    adding nothing), divided once: how a runtime without a wider accumulator computes it. With
    ``by_axis`` the sum nests by axis, innermost first (XLA's reduce_window on the CPU: each row
    along the last axis from 0, then those row sums, and so on outwards). With ``rounded`` the sum
    runs wider (float32 for float16, float64 for float32) and is rounded to ``x.dtype`` before the
    division (tract). ``count``: the divisor of each window, when it is not the policy's (the
    window's elements other than NaN, under ``avg=nan-skipped``; a count of 0 is an empty window)."""
    # x sits at offset max(0, pad_begin): a negative pad_begin (ONNX SAME with a stride past the
    # dilated kernel) starts the windows inside the input rather than before it
    lows = [max(0, a.pad_begin) for a in geom.axes]
    ends = [lo + max(a.size, (a.out - 1) * a.stride - a.pad_begin + a.dilated_kernel) for a, lo in zip(geom.axes, lows)]
    acc_dtype = (np.dtype(np.float32) if x.dtype == np.float16 else np.dtype(np.float64)) if rounded else x.dtype
    padded = np.zeros(tuple(x.shape[:2]) + tuple(ends), dtype=acc_dtype)
    padded[(slice(None), slice(None), *(slice(lo, lo + a.size) for a, lo in zip(geom.axes, lows)))] = x
    # tap j of every window along each axis, as a slice of ``padded`` (made once, not per tap)
    taps = [[slice(lo - a.pad_begin + j * a.dilation, lo - a.pad_begin + j * a.dilation + (a.out - 1) * a.stride + 1,
                   a.stride) for j in range(a.kernel)] for a, lo in zip(geom.axes, lows)]
    every = (slice(None), slice(None))

    def nested(prefix: tuple[slice, ...]) -> np.ndarray:
        part = np.zeros(geom.output_shape, dtype=acc_dtype)
        for sl in taps[len(prefix)]:
            part += padded[(*every, *prefix, sl)] if len(prefix) + 1 == len(geom.axes) else nested((*prefix, sl))
        return part

    acc = np.zeros(geom.output_shape, dtype=acc_dtype)
    with np.errstate(all="ignore"):
        if by_axis:
            acc = nested(())
        else:
            for sls in itertools.product(*taps):
                acc += padded[(*every, *sls)]
        acc = acc.astype(x.dtype)  # a wider sum is rounded to the input type here
        div = (_NUMPY.divisor(geom, exclude_pad, policy) if count is None else count).astype(np.float64)
        mean = acc.astype(np.float64) / div
        empty = np.broadcast_to(div == 0, mean.shape)
        mean[empty] = 0.0 if policy.empty_avg == "zero" else np.nan
    return mean.astype(x.dtype)


def _lowest(dtype: np.dtype) -> float | int:
    return lowest(dtype)


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
