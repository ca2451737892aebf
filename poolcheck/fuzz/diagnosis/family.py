"""Diagnosis of the rest of the family (LpPool, global pooling, MaxUnpool, adaptive pooling).

Each named variant is the reference computed with one misreading of the text: the p-th root
left out, ``x ** p`` without ``|x|`` (torch's ``lp_pool``), LpPool's pads ignored, global
pooling over the wrong axes, MaxUnpool's colliding writes resolved the other way or its
``output_shape`` ignored, adaptive bins rounded the other way. A peer's output is named after
the first variant that reproduces it exactly (max, MaxUnpool, indices) or within the family's
tolerance (sums: :func:`close`); nothing else is a name. Severities: spec/severity.py.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from poolcheck.api_family import lp_root, nearest_power, run_family
from poolcheck.engines import get_engine, get_family_engine
from poolcheck.engines.numpy_engine import divisor as numpy_divisor
from poolcheck.errors import PoolcheckError
from poolcheck.fuzz.diagnosis.family_lp import SignedSums, exponent_rounded, root
from poolcheck.fuzz.diagnosis.rerun import _narrow
from poolcheck.fuzz.diagnosis.variants import GEOMETRY_VARIANTS, GeometryVariant, computed_mask
from poolcheck.judgement import close_values, family_tolerance
from poolcheck.spec import dtypes
from poolcheck.spec.family import FamilySpec, adaptive_bins, global_window
from poolcheck.spec.severity import RANK, severity_of
from poolcheck.spec.shape import Geometry, resolve

#: Outputs of a family configuration: values and (AdaptiveMaxPool) per-plane indices.
FamilyOutputs = tuple[np.ndarray, "np.ndarray | None"]


# --------------------------------------------------------------------------- judging


def close(spec: FamilySpec, x: np.ndarray, expected: np.ndarray, actual: np.ndarray, *,
          exact: bool = False) -> np.ndarray:
    """Per element, whether ``actual`` may stand for ``expected``: the one judgement
    (:func:`poolcheck.judgement.family_tolerance` under :func:`~poolcheck.judgement.close_values`:
    exact for the max pools and MaxUnpool, the average and Lp rules for sums), or bit for bit
    (``exact``: the engines). An average over a plane whose finite magnitudes overflow even a
    float64 sum is left open: its value (inf, -inf, NaN or finite) depends on the order of the
    additions, which the text leaves open."""
    e = np.asarray(expected)
    a = np.asarray(actual)
    tol = None if exact else family_tolerance(spec, x, e, get_engine("numpy"), get_family_engine("numpy"))
    near = close_values(e, a, tol)
    if not exact and spec.op in ("global_avg", "adaptive_avg") and e.shape[:2] == x.shape[:2]:
        with np.errstate(all="ignore"):
            magnitude = np.sum(np.abs(np.where(np.isfinite(x), x, 0).astype(np.float64)),
                               axis=tuple(range(2, x.ndim)))
        near = near | np.isinf(magnitude).reshape(*x.shape[:2], *([1] * (e.ndim - 2)))
    return near


def agrees(spec: FamilySpec, x: np.ndarray, expected: FamilyOutputs, actual: FamilyOutputs, *,
           exact: bool = False, open_values: np.ndarray | None = None) -> bool:
    """Whether a whole output (values and indices) may stand for the expected one (``open_values``:
    value elements any value reproduces)."""
    ev, ei = expected
    av, ai = actual
    if tuple(np.shape(ev)) != tuple(np.shape(av)):
        return False
    near = close(spec, x, ev, av, exact=exact)
    if open_values is not None:
        near = near | open_values
    if not bool(np.all(near)):
        return False
    if ei is None or ai is None:
        return True
    if tuple(np.shape(ei)) != tuple(np.shape(ai)):
        return False
    same = np.asarray(ei, np.int64) == np.asarray(ai, np.int64)
    return bool(np.all(same if open_values is None else same | open_values))


# --------------------------------------------------------------------------- variant computations


def _root_exponent_in_type(spec: FamilySpec, x: np.ndarray) -> FamilyOutputs:
    """The norm with the root's exponent 1/p held in the input type, float16 or bfloat16 (the
    sum in float32 or wider): OpenVINO's GlobalLpPool builds pow(S, 1/p) with a constant of the
    input's element type, 0.33325195 for p = 3 in float16 (60000 comes out 59840)."""
    if np.dtype(x.dtype).itemsize >= 4 or spec.p in (1, 2):
        raise ValueError("1/p is rounded in float16 and bfloat16 only (p = 1, 2: no pow)")
    window = spec.window if spec.op == "lp" else global_window(spec, x.shape)
    assert window is not None
    sums = get_family_engine("numpy").lp_sums(x, resolve(window, x.shape), spec.p)
    exponent = float(dtypes.cast(np.array(1.0 / spec.p), x.dtype).astype(np.float64))
    return dtypes.cast(nearest_power(sums, exponent), x.dtype), None


def _in_type(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float64 ``values`` rounded to ``dtype`` and back (inf past its largest value)."""
    with np.errstate(all="ignore"):
        return dtypes.cast(values, dtype).astype(np.float64)


def _lp(spec: FamilySpec, x: np.ndarray, *, p: int | None = None, rooted: bool = True, signed: bool = False,
        overflow: bool = False, exponent32: bool = False, mean: bool = False) -> FamilyOutputs:
    """The reference's Lp norm of each window, or of each plane (GlobalLpPool), under the named
    misreadings (see :data:`FAMILY_VARIANTS`); ``mean``: the sum divided by the window's taps
    and held in the input type before the root (lp:mean)."""
    window = spec.window if spec.op == "lp" else global_window(spec, x.shape)
    assert window is not None
    geom = resolve(window, x.shape)
    p = spec.p if p is None else p
    kernels = get_family_engine("numpy")
    taps = float(math.prod(window.kernel)) if mean else 1.0
    if signed:  # the sum of x ** p (an odd p keeps the sign), then its 1/p-th power: NaN for a
        # negative sum unless p = 1 (torch's lp_pool: avg_pool(x.pow(p)) * kernel, .pow(1 / p))
        pos, neg = kernels.lp_sums(np.maximum(x, 0), geom, p), kernels.lp_sums(np.maximum(-x, 0), geom, p)
        if overflow:  # each part past the input type's largest value is inf
            big = _overflow_bound(x.dtype, geom)
            pos, neg = np.where(pos > big, np.inf, pos), np.where(neg > big, np.inf, neg)
        with np.errstate(all="ignore"):
            sums = _in_type((pos - neg) / taps, x.dtype) if mean else pos - neg
            # C's pow: a finite negative base gives NaN, -inf gives +inf
            powered = sums if p == 1 else np.where(np.isfinite(sums) & (sums < 0), np.nan,
                                                   root(np.abs(sums), p, exponent32=exponent32))
            return powered.astype(x.dtype), None
    total = kernels.lp_sums(x, geom, p)
    sums = _in_type(total / taps, x.dtype) if mean else total
    if not rooted:
        with np.errstate(all="ignore"):
            return sums.astype(x.dtype), None
    out = dtypes.cast(root(sums, p, exponent32=True), x.dtype) if exponent32 else lp_root(sums, p, x.dtype)
    if overflow:  # |x|^p summed in the input type: past its largest value the norm is inf
        out = np.where(total > _overflow_bound(x.dtype, geom), np.array(np.inf, x.dtype), out)
    return out, None


def _placed(spec: FamilySpec, x: np.ndarray,
            gv: GeometryVariant | None) -> tuple[np.ndarray, Geometry, int, np.ndarray | None]:
    """The input (cropped where a negative pad starts the windows inside it), the windows the
    geometry variant ``gv`` places (None: the spec's), the kernel's taps, and the outputs the
    placement computes (None: all; the others are 0, :attr:`Placement.computed`)."""
    window = spec.window if spec.op == "lp" else global_window(spec, x.shape)
    assert window is not None
    if gv is None:
        return x, resolve(window, x.shape), math.prod(window.kernel), None
    placement = gv.build(window, tuple(x.shape))
    if placement.crop is not None:
        x = x[(slice(None), slice(None), *(slice(a, b) for a, b in placement.crop))]
    return x, placement.geom, math.prod(window.kernel), computed_mask(placement.computed, placement.output_shape)


def _lp_on(spec: FamilySpec, x: np.ndarray, gv: GeometryVariant | None, *, rescale: bool = False,
           signed: bool = False, overflow: bool = False, exponent32: bool = False,
           nan_skip: bool = False, average_in_type: bool = False, mean: bool = False) -> FamilyOutputs:
    """LpPool (GlobalLpPool) on the windows geometry variant ``gv`` places (None: the spec's);
    ``rescale``: each window's sum scaled by kernel taps / taps inside the padded input (an
    average of |x|^p over the window clipped to the padded input, padding counted, times the
    kernel size: torch's lp_pool under ceil_mode, onnx.reference's LpPool, :func:`_padded_taps`);
    ``signed``: x^p, not |x|^p, and C's pow for the root (lp:no-abs); ``overflow``: powers and
    sums past the input type's largest value are inf (lp:input-type-overflow); ``exponent32``: the
    root's exponent 1/p rounded to float32 (lp:root-exponent-float32); ``nan_skip``: NaN taps
    left out and the sum of the others scaled by the taps counted / those others, NaN when none
    is left (lp:nan-skipped-rescaled: onnx.reference 1.23's LpPool averages |x|^p with
    ``np.average(window_vals[~isnan])``, then multiplies by the kernel size); ``average_in_type``:
    each |x|^p and the window's average of them rounded to the input type (inf past its largest
    value), the sum between them in float32 or wider, the average times the taps in float64
    (lp:input-type-average, onnx.reference's LpPool: ``np.power`` in the input type,
    ``np.average``'s float32 sum for float16, ``np.int64`` kernel size times the average); with
    ``overflow`` as well that product is rounded to the input type, inf exactly past its range
    (torch's ``lp_pool``: ``avg_pool`` of x^p times the kernel size, in float16: 30 squares of
    61..90 average 5,700 and make inf, those of 31..60 make 64,355, finite); ``mean``: the root of
    the average held in the input type, not of the sum (lp:mean; with ``average_in_type``, the
    average not multiplied back)."""
    if (nan_skip or average_in_type) and signed:
        raise ValueError("lp:nan-skipped-rescaled and lp:input-type-average are modelled on |x|^p only")
    x, geom, kernel, kept = _placed(spec, x, gv)
    big = _overflow_bound(x.dtype, geom)
    with np.errstate(all="ignore"):
        powers = get_family_engine("numpy").power(x, spec.p)
        if signed and spec.p % 2:
            powers = np.where(x < 0, -powers, powers)
        if overflow:
            powers = np.where(np.abs(powers) > big, np.sign(powers) * np.inf, powers)
        nan = np.isnan(x) if nan_skip and dtypes.is_float(x.dtype) else None
        if average_in_type:  # each term rounded to the input type
            powers = _in_type(powers, x.dtype)
        if nan is not None:
            powers = np.where(nan, 0.0, powers)
        sums = _placed_sums(powers, geom)
        if rescale or nan is not None or average_in_type:
            taps = _padded_taps(geom)
            left = taps if nan is None else taps - _placed_sums(nan.astype(np.float64), geom)
            if average_in_type:  # the sum in float32 or wider, the average rounded to the input type
                acc = np.dtype(np.float32) if np.dtype(x.dtype).itemsize < 4 else np.dtype(x.dtype)
                sums = np.where(np.abs(sums) > _overflow_bound(acc, geom), np.inf, sums)
                average = _in_type(sums / left, x.dtype)
                product = average if mean else average * (kernel if rescale else taps)
                if overflow:  # the product in the input type too, one rounding: inf exactly past its range
                    product = _in_type(product, x.dtype)
                sums = np.where(left > 0, product, np.nan)
            else:
                sums = np.where(left > 0, sums * ((kernel if rescale else taps) / left), np.nan)
        if overflow and not average_in_type:
            sums = np.where(np.abs(sums) > big, np.sign(sums) * np.inf, sums)
        if mean and not average_in_type:
            sums = _in_type(sums / kernel, x.dtype)
        if kept is not None:  # a zero tail: the root of an uncomputed output's 0
            sums = np.where(kept, sums, 0.0)
        if not signed:
            return dtypes.cast(root(sums, spec.p, exponent32=exponent32), x.dtype), None
        rooted = sums if spec.p == 1 else np.where(np.isfinite(sums) & (sums < 0), np.nan,
                                                   root(np.abs(sums), spec.p, exponent32=exponent32))
        return rooted.astype(x.dtype), None


def _signed_sums(spec: FamilySpec, x: np.ndarray, gv: GeometryVariant | None, *, rescale: bool = False,
                 exponent32: bool = False, mean: bool = False) -> SignedSums:
    """What the signed variant's own bound needs (:class:`~poolcheck.fuzz.diagnosis.family_lp.SignedSums`)
    on the windows ``gv`` places (None: the spec's, summed by the reference engine); ``mean``: of
    the average over the kernel's taps (lp:mean)."""
    kernels = get_family_engine("numpy")
    big = float(dtypes.finfo(x.dtype).max)
    x, geom, kernel, kept = _placed(spec, x, gv)
    with np.errstate(all="ignore"):
        powers = kernels.power(x, spec.p)
        finite = np.isfinite(x)
        negative = (x < 0) if spec.p % 2 else np.zeros(x.shape, dtype=bool)
        counted = {"overflowing": powers > big, "nonfinite": ~finite, "nans": np.isnan(x),
                   "pos_inf": np.isinf(x) & ~negative, "neg_inf": np.isinf(x) & negative}
        if gv is None and not rescale:
            pos, neg = kernels.lp_sums(np.maximum(x, 0), geom, spec.p), kernels.lp_sums(np.maximum(-x, 0), geom, spec.p)
            sums = pos - neg if spec.p % 2 else pos + neg
            magnitude = pos + neg
            finite_magnitude = kernels.lp_sums(np.where(finite, x, 0.0), geom, spec.p)
            counts = {k: kernels.lp_sums(v.astype(np.float64), geom, 1) for k, v in counted.items()}
        else:
            scale = kernel / _padded_taps(geom) if rescale else 1.0
            signed = np.where(negative, -powers, powers)
            sums, magnitude = _placed_sums(signed, geom) * scale, _placed_sums(powers, geom) * scale
            finite_magnitude = _placed_sums(np.where(finite, powers, 0.0), geom) * scale
            counts = {k: _placed_sums(v.astype(np.float64), geom) for k, v in counted.items()}
        if kept is not None:  # a zero tail: nothing summed where the placement computes no output
            sums, magnitude, finite_magnitude = (np.where(kept, a, 0.0) for a in (sums, magnitude, finite_magnitude))
            counts = {k: np.where(kept, v, 0.0) for k, v in counts.items()}
        if mean:
            sums, magnitude, finite_magnitude = (a / kernel for a in (sums, magnitude, finite_magnitude))
    return SignedSums(sums=sums, magnitude=magnitude, finite_magnitude=finite_magnitude, taps=kernel, p=spec.p,
                      dtype=np.dtype(x.dtype), exponent32=exponent32, **counts)


#: What may combine on one LpPool example (each a behaviour of its own): one window placement,
#: then these, in this order in a joined key.
_LP_MODIFIERS: tuple[str, ...] = ("lp:ceil-window-rescaled", "lp:nan-skipped-rescaled", "lp:no-abs",
                                  "lp:input-type-overflow", "lp:input-type-average", "lp:mean",
                                  "lp:root-exponent-float32")


def _lp_plan(spec: FamilySpec, keys: Sequence[str]) -> tuple[GeometryVariant | None, set[str]] | None:
    """``keys`` (joined keys split) as one window placement (None: the spec's) and a set of
    :data:`_LP_MODIFIERS`, or None when they are not such a combination on ``spec``."""
    atoms = [a for k in keys for a in k.split("+")]
    window_keys = [k for k in atoms if k not in _LP_MODIFIERS]
    if len(window_keys) > 1 or spec.op not in ("lp", "global_lp"):
        return None
    gv = next((g for g in GEOMETRY_VARIANTS if window_keys and g.key == window_keys[0]), None)
    if window_keys and (gv is None or spec.window is None or not gv.applies(spec.window)):
        return None
    return gv, set(atoms) - set(window_keys)


def _signs_matter(spec: FamilySpec, x: np.ndarray) -> bool:
    """Whether ``lp:no-abs`` can change an output here: only a negative number raised to an odd
    p differs from its absolute value's power. On any other input the signed sum is the norm's
    own, and naming it would rest on nothing but the wider bound it is judged with."""
    with np.errstate(invalid="ignore"):  # NaN is not negative
        return spec.p % 2 == 1 and bool(np.any(x < 0))


def _lp_combination(spec: FamilySpec, x: np.ndarray, keys: Sequence[str]) -> FamilyOutputs | None:
    """LpPool under several behaviours at once (a window variant and/or :data:`_LP_MODIFIERS`),
    or None when ``keys`` are not such a combination (or one holding ``lp:no-abs`` where the
    signs cannot matter)."""
    plan = _lp_plan(spec, keys)
    if plan is None:
        return None
    gv, mods = plan
    if "lp:no-abs" in mods and not _signs_matter(spec, x):
        return None
    try:
        return _lp_on(spec, x, gv, rescale="lp:ceil-window-rescaled" in mods, signed="lp:no-abs" in mods,
                      overflow="lp:input-type-overflow" in mods, exponent32="lp:root-exponent-float32" in mods,
                      nan_skip="lp:nan-skipped-rescaled" in mods, average_in_type="lp:input-type-average" in mods,
                      mean="lp:mean" in mods)
    except (PoolcheckError, ValueError, ZeroDivisionError):
        return None


def _matches(spec: FamilySpec, x: np.ndarray, keys: Sequence[str], out: FamilyOutputs, actual: FamilyOutputs,
             open_values: np.ndarray | None = None) -> bool:
    """Whether variant ``keys``' output ``out`` reproduces ``actual``: within the family's
    tolerance (:func:`agrees`), or, for a signed Lp sum (``lp:no-abs``), within the signed sum's
    own bound (:class:`~poolcheck.fuzz.diagnosis.family_lp.SignedSums`). A float64 input computed
    as float32 is judged by float32's rule, alone as in a pair (:func:`replay_family`): by
    float64's, the runtime's float32 roundings step out of it, and a second variant that changes
    nothing on the example (dilations ignored on a kernel of 1) was named beside it."""
    if x.dtype == np.float64 and len(keys) == 1 and keys[0] in NARROWINGS.get(spec.op, ()):
        x = _narrow_widen(keys[0])[0](x)
    plan = _lp_plan(spec, keys) if any("lp:no-abs" in k for k in keys) else None
    if plan is None or "lp:no-abs" not in plan[1]:
        return agrees(spec, x, out, actual, open_values=open_values)
    gv, mods = plan
    if tuple(np.shape(out[0])) != tuple(np.shape(actual[0])):
        return False
    try:
        signed = _signed_sums(spec, x, gv, rescale="lp:ceil-window-rescaled" in mods,
                              exponent32="lp:root-exponent-float32" in mods, mean="lp:mean" in mods)
    except (PoolcheckError, ValueError, ZeroDivisionError):
        return False
    ok = signed.admits(out[0], actual[0], overflow="lp:input-type-overflow" in mods)
    if open_values is not None:
        ok = ok | open_values
    return bool(np.all(ok))


def _lp_combinations(spec: FamilySpec, x: np.ndarray) -> list[tuple[str, ...]]:
    """The combinations of two or three LpPool behaviours worth trying on ``spec`` and ``x``, smallest first."""
    windows = [(g.key,) for g in GEOMETRY_VARIANTS if spec.window is not None and g.applies(spec.window)]
    has_nan = dtypes.is_float(x.dtype) and bool(np.isnan(x).any())
    modifiers = [m for m in _LP_MODIFIERS if (m != "lp:ceil-window-rescaled" or
                 (spec.window is not None and spec.window.rounding_type != "floor")) and
                 (m != "lp:root-exponent-float32" or exponent_rounded(spec.p)) and
                 (m != "lp:nan-skipped-rescaled" or has_nan) and
                 (m != "lp:input-type-average" or (dtypes.is_float(x.dtype) and np.dtype(x.dtype).itemsize < 8)) and
                 (m != "lp:mean" or spec.op == "global_lp")]
    subsets = [tuple(c) for n in (1, 2, 3) for c in itertools.combinations(modifiers, n)]
    out = [(*w, *m) for w in [(), *windows] for m in [(), *subsets]]
    return sorted((c for c in out if len(c) >= 2), key=len)


def _overflow_bound(dtype: np.dtype, geom: Geometry) -> float:
    """Past what a sum of a window's taps, each addition rounded to ``dtype``, may round to inf:
    the type's largest value over the growth of as many roundings as taps (and one step more),
    ``max / (1 + (taps + 2) eps)``. (``max * (1 - (taps + 2) eps)``, its first-order form, falls
    to 0 and below once ``(taps + 2) eps`` reaches 1 -- 1,022 taps in float16 -- and then had a
    GlobalLpPool of 43 x 23 float16 values summing to 3,031 overflow.)"""
    taps = math.prod(a.kernel for a in geom.axes)
    info = dtypes.finfo(dtype)
    return float(info.max) / (1.0 + (taps + 2) * float(info.eps))


def _padded_taps(geom: Geometry) -> np.ndarray:
    """Per window of ``geom``, its taps inside the padded input (padding counted, the taps a ceil
    window has past the padded input's end not): the divisor of an average with padding counted,
    which ``lp:ceil-window-rescaled`` scales up to the kernel size. torch's lp_pool has no
    padding; onnx.reference 1.23's LpPool (``op_lp_pool.py``: the AVG path on |x|^p with zeros
    for padding, times the kernel size) counts its explicit pads as taps."""
    return numpy_divisor(geom, False).astype(np.float64)


def _placed_sums(values: np.ndarray, geom: Geometry) -> np.ndarray:
    """Per window of ``geom`` (any placement a variant makes, windows past the padded input
    included), the sum of ``values`` over its taps inside the input, in row-major tap order."""
    n, c = values.shape[:2]
    out = np.zeros((n, c, *(a.out for a in geom.axes)))
    with np.errstate(all="ignore"):
        for offsets in itertools.product(*(range(a.kernel) for a in geom.axes)):
            where, inside = [], []
            for a, j in zip(geom.axes, offsets):
                t = np.arange(a.out) * a.stride - a.pad_begin + j * a.dilation
                where.append(np.clip(t, 0, a.size - 1))
                inside.append((t >= 0) & (t < a.size))
            at: tuple[Any, ...] = (slice(None), slice(None), *np.ix_(*where))
            taken = values[at]
            mask = np.ones((), dtype=bool)
            for m in inside:
                mask = np.multiply.outer(mask, m)
            out = out + np.where(mask, taken, 0.0)
    return out


def _reduce(spec: FamilySpec, x: np.ndarray, axes: tuple[int, ...]) -> FamilyOutputs:
    """Global pooling over ``axes`` (kept as size 1) instead of every spatial axis."""
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64)
        if spec.op == "global_max":
            return np.max(wide, axis=axes, keepdims=True).astype(x.dtype), None
        if spec.op == "global_avg":
            return np.mean(wide, axis=axes, keepdims=True).astype(x.dtype), None
        return lp_root(np.sum(np.abs(wide) ** spec.p, axis=axes, keepdims=True), spec.p, x.dtype), None


def _global_nan_skipped(spec: FamilySpec, x: np.ndarray, *, seed_lowest: bool = False) -> FamilyOutputs:
    """NaN loses every comparison: the maximum of the other elements (a plane of NaN only: see
    :func:`_all_nan_planes`). ``seed_lowest``: the running maximum starts at the lowest finite
    value, so a plane of -inf gives that value."""
    axes = tuple(range(2, x.ndim))
    lowest = float(dtypes.finfo(x.dtype).min)
    with np.errstate(all="ignore"):
        wide = np.where(np.isnan(x), -np.inf, x.astype(np.float64))
        top = np.max(wide, axis=axes, keepdims=True)
        if seed_lowest:
            top = np.maximum(top, lowest)
        return top.astype(x.dtype), None


def _all_nan_planes(spec: FamilySpec, x: np.ndarray) -> np.ndarray:
    """The planes with nothing but NaN: what NaN-skipping gives there is its seed, left open."""
    return np.all(np.isnan(x), axis=tuple(range(2, x.ndim)), keepdims=True)


def _narrowed(x: np.ndarray) -> np.ndarray:
    """float64 as the CPU plugin hands it to a float32 graph (:func:`~poolcheck.fuzz.diagnosis.rerun._narrow`:
    past float32's range, inf included, saturated to its largest magnitude; NaN kept)."""
    return _narrow(x, np.dtype(np.float32))


def _widened(values: np.ndarray) -> np.ndarray:
    """A float32 graph's output as the CPU plugin hands it back for float64: an infinity saturated
    to float32's largest magnitude (``inf * inf`` in an f64 Multiply comes out 3.4028235e38)."""
    big = float(np.finfo(np.float32).max)
    wide = np.asarray(values).astype(np.float64)
    return np.where(np.isinf(wide), np.sign(wide) * big, wide)


def _float32_saturated(spec: FamilySpec, x: np.ndarray) -> FamilyOutputs:
    """float64 computed as float32, values past the float32 range (inf included) saturated to
    its largest magnitude going in and coming out (OpenVINO's CPU plugin runs f64 models in f32:
    an LpPool window [inf, inf] gives 3.4028235e38, as does an AdaptiveAvgPool bin [3e38, 3e38])."""
    if x.dtype != np.float64:
        raise ValueError("only a float64 input is computed as float32")
    values, where = run_family(spec, _narrowed(x))
    return _widened(values), where


def _float32_cast(spec: FamilySpec, x: np.ndarray) -> FamilyOutputs:
    """float64 cast to float32, computed in float32 and cast back, without saturation (tract runs
    a float64 GlobalLpPool so: an inf stays inf)."""
    if x.dtype != np.float64:
        raise ValueError("only a float64 input is computed as float32")
    values, where = run_family(spec, _cast32(x))
    return _cast64(values), where


def _cast32(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # past float32's range: inf, as a cast gives it
        return x.astype(np.float32)


def _cast64(values: np.ndarray) -> np.ndarray:
    return np.asarray(values).astype(np.float64)


def _nan_planes(spec: FamilySpec, x: np.ndarray) -> np.ndarray:
    """GlobalMaxPool's planes / AdaptiveMaxPool's bins that hold a NaN."""
    nan = np.isnan(x).astype(np.float64)
    if spec.op == "global_max":
        return np.max(nan, axis=tuple(range(2, x.ndim)), keepdims=True) > 0
    assert spec.output_shape is not None
    return get_family_engine("numpy").adaptive_max(nan, spec.output_shape)[0] > 0


def _input_type_overflow(spec: FamilySpec, x: np.ndarray) -> np.ndarray:
    """The average's elements whose window (plane or bin) holds finite magnitudes summing past
    the input type's largest value: summed in the input type, any result (inf, NaN, a wrong
    finite value) depends on the order of the additions."""
    limit = float(dtypes.finfo(x.dtype).max)
    magnitude = np.abs(np.where(np.isfinite(x), x, 0).astype(np.float64))
    with np.errstate(all="ignore"):
        if spec.op == "global_avg":
            return np.sum(magnitude, axis=tuple(range(2, x.ndim)), keepdims=True) > limit
        assert spec.output_shape is not None
        counts = np.ones(spec.output_shape)
        for axis, (size, out) in enumerate(zip(x.shape[2:], spec.output_shape)):
            start, end = adaptive_bins(int(size), out)
            shape = [1] * len(spec.output_shape)
            shape[axis] = out
            counts = counts * (end - start).reshape(shape)
        return get_family_engine("numpy").adaptive_avg(magnitude, spec.output_shape) * counts > limit


Bins = Callable[[int, int], tuple[np.ndarray, np.ndarray]]


def _bins_end_floor(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    j = np.arange(out, dtype=np.int64)
    return (j * size) // out, ((j + 1) * size) // out


def _bins_start_ceil(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    j = np.arange(out, dtype=np.int64)
    return -((-j * size) // out), -((-(j + 1) * size) // out)


def _bins_swapped(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    j = np.arange(out, dtype=np.int64)
    return -((-j * size) // out), ((j + 1) * size) // out


def _bins_uniform(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """One kernel and stride for every bin: stride floor(H/O), kernel H - (O - 1) * stride."""
    stride = max(size // out, 1)
    kernel = size - (out - 1) * stride
    j = np.arange(out, dtype=np.int64)
    return j * stride, np.minimum(j * stride + max(kernel, 1), size)


def _adaptive(spec: FamilySpec, x: np.ndarray, bins: Bins = adaptive_bins, *, last: bool = False,
              nan_skip: bool = False, whole_tensor: bool = False) -> FamilyOutputs:
    """Adaptive pooling with the given bin edges, by a loop over output positions (fuzz sizes
    are small). An empty bin gives NaN (avg) or -inf (max) and index -1."""
    assert spec.output_shape is not None
    spatial = tuple(int(v) for v in x.shape[2:])
    edges = [bins(size, out) for size, out in zip(spatial, spec.output_shape)]
    n, c = x.shape[:2]
    values = np.zeros((n, c, *spec.output_shape), dtype=np.float64)
    where = np.full(values.shape, -1, dtype=np.int64)
    plane = math.prod(spatial)
    flat = np.arange(plane, dtype=np.int64).reshape(spatial)
    wide = x.astype(np.float64)
    with np.errstate(all="ignore"):
        for pos in itertools.product(*(range(o) for o in spec.output_shape)):
            sl: tuple[slice, ...] = tuple(slice(int(s[i]), int(e[i])) for (s, e), i in zip(edges, pos))
            region = wide[(slice(None), slice(None), *sl)].reshape(n, c, -1)
            ids = flat[sl].reshape(-1)
            at: tuple[slice | int, ...] = (slice(None), slice(None), *pos)
            if region.shape[2] == 0:
                values[at] = np.nan if spec.op == "adaptive_avg" else -np.inf
                continue
            if spec.op == "adaptive_avg":
                values[at] = region.sum(axis=2) / region.shape[2]
                continue
            r = region[:, :, ::-1] if last else region
            nan = np.isnan(r)
            k = np.where(nan.all(axis=2), 0, np.nanargmax(np.where(nan, -np.inf, r), axis=2)) if nan_skip else \
                np.where(nan.any(axis=2), nan.argmax(axis=2), r.argmax(axis=2))
            if last:
                k = r.shape[2] - 1 - k
            values[at] = np.take_along_axis(region, k[..., None], axis=2)[..., 0]
            where[at] = ids[k]
    if whole_tensor:
        where = where + (np.arange(n * c, dtype=np.int64).reshape(n, c, *([1] * len(spatial))) * plane)
    out = values.astype(x.dtype)
    return out, (where if spec.op == "adaptive_max" else None)


def _inferred_unpool_shape(spec: FamilySpec, shape: Sequence[int]) -> tuple[int, ...]:
    """MaxUnpool's shape from kernel, strides and pads, unchecked (a size may be 0 or less)."""
    w = spec.window
    assert w is not None
    return (*(int(v) for v in shape[:2]), *((int(shape[2 + i]) - 1) * w.strides[i] + w.kernel[i] - w.pads_begin[i]
                                            - w.pads_end[i] for i in range(w.spatial_rank)))


def _unpool_padded_refuses(spec: FamilySpec, shape: Sequence[int]) -> bool:
    """Whether the shape inferred from kernel, strides and pads outgrows ``output_shape`` on an
    axis (``unpool:inferred-then-padded`` has no room to place it: a runtime refuses)."""
    return spec.output_shape is not None and any(
        a > b for a, b in zip(_inferred_unpool_shape(spec, shape)[2:], spec.output_shape[2:]))


def _unpool(spec: FamilySpec, x: np.ndarray, indices: np.ndarray | None, *, first: bool = False,
            summed: bool = False, ignore_output_shape: bool = False, pads_ignored: bool = False,
            padded: bool = False) -> FamilyOutputs:
    assert spec.window is not None and indices is not None
    if ignore_output_shape or padded:  # the inferred shape; a write past its end is dropped (or refused)
        shape = _inferred_unpool_shape(spec, x.shape)
        if min(shape[2:]) < 0:  # no output of that shape: a runtime refuses (see rejection_explained)
            raise ValueError("no inferred MaxUnpool output")
        flat = np.zeros(math.prod(shape), dtype=x.dtype)
        keep = indices.reshape(-1) < flat.size
        flat[indices.reshape(-1)[keep]] = x.reshape(-1)[keep]
        if not padded:
            return flat.reshape(shape), None
        if spec.output_shape is None or _unpool_padded_refuses(spec, x.shape):
            raise ValueError("the inferred MaxUnpool output does not fit output_shape")
        out = np.zeros(spec.output_shape, dtype=x.dtype)
        out[tuple(slice(0, v) for v in shape)] = flat.reshape(shape)
        return out, None
    if pads_ignored:
        n = spec.window.spatial_rank
        spec = spec.replace(output_shape=None, window=spec.window.replace(pads_begin=(0,) * n, pads_end=(0,) * n))
    if not (first or summed):
        return run_family(spec, x, indices=indices)
    base = run_family(spec, np.zeros_like(x), indices=indices)[0]
    out = np.zeros(base.size, dtype=np.float64 if summed else x.dtype)
    flat_x, flat_i = x.reshape(-1), np.asarray(indices, np.int64).reshape(-1)
    if summed:
        with np.errstate(all="ignore"):  # sums past the input type's range are inf in it
            np.add.at(out, flat_i, flat_x.astype(np.float64))
            return out.astype(x.dtype).reshape(base.shape), None
    out[flat_i[::-1]] = flat_x[::-1]  # the first write wins
    return out.reshape(base.shape), None


# --------------------------------------------------------------------------- the variants


@dataclass(frozen=True)
class FamilyVariant:
    """One named misreading of a family operator's text."""

    key: str
    ops: tuple[str, ...]
    text: str
    compute: Callable[[FamilySpec, np.ndarray, np.ndarray | None], FamilyOutputs]
    applies: Callable[[FamilySpec], bool] = lambda _s: True
    #: The output elements the variant leaves open (any value reproduces them), or None.
    open: Callable[[FamilySpec, np.ndarray], np.ndarray] | None = None
    #: A rounding variant: its effect may lie within the tolerance around the reference (a runtime
    #: rounding once more then steps out of it), so it says nothing only where it equals the
    #: reference exactly.
    rounding: bool = False


def _window_variant(gv: GeometryVariant) -> FamilyVariant:
    """LpPool's windows placed as MaxPool/AveragePool geometry variant ``gv`` places them."""

    def compute(s: FamilySpec, x: np.ndarray, _i: np.ndarray | None) -> FamilyOutputs:
        return _lp_on(s, x, gv)

    def applies(s: FamilySpec) -> bool:
        return s.window is not None and gv.applies(s.window)

    return FamilyVariant(gv.key, ("lp",), gv.text, compute, applies)


def _expected(spec: FamilySpec, x: np.ndarray) -> FamilyOutputs:
    values, where = run_family(spec, x)
    return values, where


def _explicit_pads(s: FamilySpec) -> bool:
    w = s.window
    return w is not None and w.auto_pad == "explicit" and any(w.pads_begin + w.pads_end)


def _odd_p(s: FamilySpec) -> bool:
    return s.p % 2 == 1


FAMILY_VARIANTS: tuple[FamilyVariant, ...] = (
    FamilyVariant("lp:no-root", ("lp", "global_lp"), "the sum of |x|^p without the 1/p-th root",
                  lambda s, x, i: _lp(s, x, rooted=False), lambda s: s.p > 1),
    FamilyVariant("lp:no-abs", ("lp", "global_lp"), "x^p summed without |x| (the root of the signed sum: torch's "
                  "lp_pool)", lambda s, x, i: _lp(s, x, signed=True), _odd_p),
    FamilyVariant("lp:ceil-window-rescaled", ("lp",), "a window past the padded input's end summed over its taps "
                  "inside the padded input (padding counted as 0) and scaled by kernel size / those taps "
                  "(avg_pool(x^p) * kernel size)",
                  lambda s, x, i: _lp_on(s, x, None, rescale=True),
                  lambda s: s.window is not None and s.window.rounding_type != "floor"),
    FamilyVariant("lp:nan-skipped-rescaled", ("lp",), "NaN left out of the window and the sum of the other "
                  "|x|^p scaled by the window's taps / those others (an average over the taps not NaN, times the "
                  "taps: onnx.reference's LpPool); a window of NaN only gives NaN",
                  lambda s, x, i: _lp_on(s, x, None, nan_skip=True), lambda s: s.window is not None),
    FamilyVariant("lp:input-type-average", ("lp",), "each |x|^p and the window's average of them rounded to the "
                  "input type (inf past its largest value), the sum between them in float32 or wider, the average "
                  "times the taps in float64 (onnx.reference's LpPool)",
                  lambda s, x, i: _lp_on(s, x, None, average_in_type=True), lambda s: s.window is not None),
    # LpPool's pads or dilations ignored are the window variants pads:ignored, dilations:ignored
    *(_window_variant(gv) for gv in GEOMETRY_VARIANTS),
    FamilyVariant("lp:input-type-overflow", ("lp", "global_lp"), "|x|^p summed in the input type: inf past its "
                  "largest value", lambda s, x, i: _lp(s, x, overflow=True)),
    FamilyVariant("lp:input-type-overflow+lp:no-abs", ("lp", "global_lp"), "x^p summed without |x| in the input "
                  "type (inf past its largest value; torch's lp_pool)", lambda s, x, i: _lp(s, x, signed=True,
                                                                                             overflow=True), _odd_p),
    FamilyVariant("lp:root-exponent-float32", ("lp", "global_lp"), "the 1/p-th root taken as pow(S, 1.0f / p): "
                  "the exponent rounded to float32 (0.33333334 for p = 3), a relative error of |fl(1/p) - 1/p| ln S",
                  lambda s, x, i: _lp(s, x, exponent32=True), lambda s: exponent_rounded(s.p), rounding=True),
    FamilyVariant("lp:root-exponent-input-type", ("lp", "global_lp"), "the 1/p-th root taken with the exponent "
                  "held in the input type, float16 or bfloat16 (0.33325195 for p = 3 in float16: 60000 comes out "
                  "59840)", lambda s, x, i: _root_exponent_in_type(s, x), lambda s: s.p > 2, rounding=True),
    FamilyVariant("lp:mean", ("global_lp",), "the 1/p-th root of the mean of |x|^p: the sum divided by the "
                  "plane's element count, held in the input type (inf past its largest value; tract's "
                  "GlobalLpPool)", lambda s, x, i: _lp(s, x, mean=True)),
    FamilyVariant("lp:mean+lp:no-abs", ("global_lp",), "the 1/p-th root of the mean of x^p, without |x| (tract's "
                  "GlobalLpPool)", lambda s, x, i: _lp(s, x, signed=True, mean=True), _odd_p),
    FamilyVariant("lp:p-ignored", ("lp", "global_lp"), "p read as 2 whatever its value",
                  lambda s, x, i: _lp(s, x, p=2), lambda s: s.p != 2),
    FamilyVariant("global:last-axis-only", ("global_avg", "global_max", "global_lp"),
                  "pooled over the last axis only", lambda s, x, i: _reduce(s, x, (x.ndim - 1,)),
                  lambda s: True),
    FamilyVariant("global:first-spatial-axis-only", ("global_avg", "global_max", "global_lp"),
                  "pooled over the first spatial axis only", lambda s, x, i: _reduce(s, x, (2,))),
    FamilyVariant("global:channels-too", ("global_avg", "global_max", "global_lp"),
                  "pooled over the channels as well as the spatial axes",
                  lambda s, x, i: _reduce(s, x, tuple(range(1, x.ndim)))),
    FamilyVariant("global:nan-skipped", ("global_max",), "NaN skipped (the maximum of the other elements)",
                  lambda s, x, i: _global_nan_skipped(s, x), lambda s: True, _all_nan_planes),
    FamilyVariant("global:seed-lowest", ("global_max",), "the maximum seeded with the lowest finite value (a plane "
                  "of -inf gives it; NaN loses every comparison, and a plane of NaN only is left open: OpenVINO's "
                  "gives NaN there)",
                  lambda s, x, i: _global_nan_skipped(s, x, seed_lowest=True), lambda s: True, _all_nan_planes),
    *(FamilyVariant(key, ops, "float64 computed as float32, values past its range (inf included) saturated to its "
                    "largest magnitude going in and coming out", lambda s, x, i: _float32_saturated(s, x),
                    lambda s: True)
      for ops, key in ((("adaptive_avg", "adaptive_max"), "adaptive:float64-as-float32"),
                       (("global_avg", "global_max"), "global:float64-as-float32"),
                       (("lp", "global_lp"), "lp:float64-as-float32"))),
    FamilyVariant("lp:float64-cast-to-float32", ("lp", "global_lp"), "float64 cast to float32, computed and cast "
                  "back: past float32's range a value is inf, as is an inf (no saturation; tract's GlobalLpPool)",
                  lambda s, x, i: _float32_cast(s, x), lambda s: True),
    FamilyVariant("avg:input-type-overflow", ("global_avg", "adaptive_avg"), "the sum accumulated in the input "
                  "type, overflowing past its largest value (inf, NaN or a wrong value by the order of the additions)",
                  lambda s, x, i: _expected(s, x), lambda s: True, _input_type_overflow),
    FamilyVariant("global:nan-any", ("global_max",), "a plane holding NaN gives neither NaN nor the maximum of the "
                  "other elements", lambda s, x, i: _expected(s, x), lambda s: True, _nan_planes),
    FamilyVariant("adaptive_max:nan-any", ("adaptive_max",), "a bin holding NaN gives neither NaN nor the maximum of "
                  "the other elements", lambda s, x, i: _expected(s, x), lambda s: True, _nan_planes),
    FamilyVariant("unpool:first-write-wins", ("unpool",), "where two elements of X go to one position, the first "
                  "is kept (the reference keeps the last)", lambda s, x, i: _unpool(s, x, i, first=True)),
    FamilyVariant("unpool:collisions-summed", ("unpool",), "elements of X sent to one position are added",
                  lambda s, x, i: _unpool(s, x, i, summed=True)),
    FamilyVariant("unpool:output-shape-ignored", ("unpool",), "the output_shape input ignored (the shape inferred "
                  "from kernel, strides and pads)", lambda s, x, i: _unpool(s, x, i, ignore_output_shape=True),
                  lambda s: s.output_shape is not None),
    FamilyVariant("unpool:inferred-then-padded", ("unpool",), "X scattered into the shape inferred from kernel, "
                  "strides and pads (each index read in that shape), which then fills the start of each axis of the "
                  "output_shape output, the rest 0 (onnx.reference's MaxUnpool)",
                  lambda s, x, i: _unpool(s, x, i, padded=True), lambda s: s.output_shape is not None),
    FamilyVariant("unpool:pads-ignored", ("unpool",), "the pads left out of the inferred output shape",
                  lambda s, x, i: _unpool(s, x, i, pads_ignored=True), _explicit_pads),
    FamilyVariant("adaptive:end-floor", ("adaptive_avg", "adaptive_max"), "bin end floor((j+1)H/O) instead of ceil",
                  lambda s, x, i: _adaptive(s, x, _bins_end_floor)),
    FamilyVariant("adaptive:start-ceil", ("adaptive_avg", "adaptive_max"), "bin start ceil(jH/O) instead of floor",
                  lambda s, x, i: _adaptive(s, x, _bins_start_ceil)),
    FamilyVariant("adaptive:rounding-swapped", ("adaptive_avg", "adaptive_max"),
                  "bin start rounded up and end rounded down", lambda s, x, i: _adaptive(s, x, _bins_swapped)),
    FamilyVariant("adaptive:uniform-bins", ("adaptive_avg", "adaptive_max"),
                  "one kernel and stride for every bin (stride floor(H/O))", lambda s, x, i: _adaptive(s, x, _bins_uniform)),
    FamilyVariant("adaptive_max:index-whole-tensor", ("adaptive_max",), "indices flat over the whole tensor, not "
                  "per (n, c) plane", lambda s, x, i: _adaptive(s, x, whole_tensor=True)),
    FamilyVariant("adaptive_max:last-max", ("adaptive_max",), "a tie gives the last maximum's index",
                  lambda s, x, i: _adaptive(s, x, last=True)),
    FamilyVariant("adaptive_max:nan-skipped", ("adaptive_max",), "NaN skipped in a bin",
                  lambda s, x, i: _adaptive(s, x, nan_skip=True)),
)
FAMILY_VARIANT_KEYS: tuple[str, ...] = tuple(v.key for v in FAMILY_VARIANTS)
#: The input transforms another variant may be paired with (``<transform>+<key>``), by op, each
#: a float64 input run in float32: OpenVINO's CPU plugin runs float64 models in float32 with inf
#: saturated (its ONNX frontend's LpPool and GlobalLpPool included) and misreads some of them
#: besides; tract casts a float64 GlobalLpPool to float32 and back.
NARROWINGS: dict[str, tuple[str, ...]] = {
    "adaptive_avg": ("adaptive:float64-as-float32",), "adaptive_max": ("adaptive:float64-as-float32",),
    "global_avg": ("global:float64-as-float32",), "global_max": ("global:float64-as-float32",),
    "lp": ("lp:float64-as-float32", "lp:float64-cast-to-float32"),
    "global_lp": ("lp:float64-as-float32", "lp:float64-cast-to-float32"),
}
Transform = Callable[[np.ndarray], np.ndarray]
#: How each transform narrows the input and widens the output.
_NARROW_WIDEN: dict[str, tuple[Transform, Transform]] = {
    **{key: (_narrowed, _widened) for key in ("adaptive:float64-as-float32", "global:float64-as-float32",
                                              "lp:float64-as-float32")},
    "lp:float64-cast-to-float32": (_cast32, _cast64),
}


def _narrow_widen(key: str) -> tuple[Transform, Transform]:
    """The narrowing and widening of transform ``key`` (the saturating ones for "": unused)."""
    return _NARROW_WIDEN.get(key, (_narrowed, _widened))


_BY_KEY = {v.key: v for v in FAMILY_VARIANTS}


def family_variant_text(key: str) -> str:
    v = _BY_KEY.get(key)
    if v is None and "+" in key:
        return "; ".join(family_variant_text(k) for k in key.split("+"))
    return v.text if v is not None else key


def rejection_explained(cause: Sequence[str], spec: FamilySpec, shape: Sequence[int],
                        indices: np.ndarray | None = None) -> bool:
    """Whether ``cause`` accounts for a refusal of ``spec`` on ``shape`` (MaxUnpool: with
    ``indices``): read its way, the configuration has no output (an inferred MaxUnpool size below
    1, an LpPool window placement with no window), or MaxUnpool's output has no element for an
    index (one past the end of the inferred output, where ``output_shape`` makes room for it: a
    runtime sizing its output without ``output_shape`` refuses the index, or drops the value as
    the variant's replay does), or (``unpool:inferred-then-padded``) the inferred output outgrows
    ``output_shape`` on an axis."""
    for key in cause:
        if key in ("unpool:output-shape-ignored", "unpool:inferred-then-padded") and spec.output_shape is not None:
            inferred = _inferred_unpool_shape(spec, shape)
            if min(inferred[2:]) < 1:
                return True
            if indices is not None and indices.size and int(np.max(indices)) >= math.prod(inferred):
                return True
            if key == "unpool:inferred-then-padded" and _unpool_padded_refuses(spec, shape):
                return True
        gv = next((g for g in GEOMETRY_VARIANTS if g.key == key), None)
        if gv is not None and spec.window is not None and gv.applies(spec.window):
            try:
                geom = gv.build(spec.window, tuple(int(v) for v in shape)).geom
            except (PoolcheckError, ValueError, ZeroDivisionError):
                return True
            if any(o < 1 for o in geom.output_shape[2:]):
                return True
    return False


def variant_outputs(key: str, spec: FamilySpec, x: np.ndarray, indices: np.ndarray | None) -> FamilyOutputs | None:
    """The reference under variant ``key`` (None where it does not apply or cannot be computed)."""
    v = _BY_KEY.get(key)
    if v is None or spec.op not in v.ops or not v.applies(spec):
        return None
    if "lp:no-abs" in key.split("+") and not _signs_matter(spec, x):  # alone or joined
        return None
    try:
        return v.compute(spec, x, indices)
    except (PoolcheckError, ValueError, IndexError, ZeroDivisionError):
        return None


def diagnose_family(spec: FamilySpec, x: np.ndarray, indices: np.ndarray | None, expected: FamilyOutputs,
                    actual: FamilyOutputs, prefer: Mapping[str, int] | None = None) -> list[str]:
    """Every variant that reproduces ``actual`` where the reference does not (empty: unexplained).
    A variant whose output equals the reference's here says nothing. Where several reproduce it,
    the name is the one made of the fewest behaviours this subject has not shown (``prefer``: its
    history, classes or variants, seeded from the registry), as :func:`diagnose_output` names a
    core op's; then the mildest (an open behaviour accounts for the output as well as a
    contradicted sentence does, so the output is no evidence of the contradiction: an inf that
    lp:input-type-overflow gives was named lp:no-root, a violation, by table order); then the one
    whose behaviours it showed most often (of two geometry twins, the one on record); then table
    order."""
    found = []
    for v in FAMILY_VARIANTS:
        out = variant_outputs(v.key, spec, x, indices)
        if out is None:
            continue
        left_open = _open(v, spec, x)
        same = agrees(spec, x, expected, out, exact=v.rounding)
        if same and (left_open is None or not left_open.any()):
            continue
        if _matches(spec, x, (v.key,), out, actual, left_open):
            found.append(v.key)
    # a joined variant whose part (an atom or a shorter joined variant) reproduces the output as
    # well adds nothing here (the simpler name)
    found = [k for k in found if not any(set(o.split("+")) < set(k.split("+")) for o in found)]
    if not found and spec.op in ("lp", "global_lp"):
        for keys in _lp_combinations(spec, x):
            if found and len(keys) > len(found[0].split("+")):
                break
            out = _lp_combination(spec, x, keys)
            if out is not None and not agrees(spec, x, expected, out) and _matches(spec, x, keys, out, actual):
                found.append("+".join(keys))
    if not found and spec.op in NARROWINGS and x.dtype == np.float64:
        # computed as float32 and misread besides: the pair, each a behaviour of its own
        # (a NaN rule paired on an input without NaN would name a rounding it happens to share)
        nan_free = not np.isnan(x).any()
        for narrowed in NARROWINGS[spec.op]:
            seconds = [v.key for v in FAMILY_VARIANTS
                       if v.key not in NARROWINGS[spec.op] and spec.op in v.ops and not (nan_free and "nan" in v.key)
                       and replay_family(spec, x, indices, (narrowed, v.key), actual)]
            # as above: a joined variant whose part pairs alone adds nothing
            found += [f"{narrowed}+{k}" for k in seconds
                      if "+" not in k or not any(a in seconds for a in k.split("+"))]
        if not found and spec.op in ("lp", "global_lp"):  # computed as float32 and misread twice over
            for narrowed in NARROWINGS[spec.op]:
                for keys in _lp_combinations(spec, _narrow_widen(narrowed)[0](x)):
                    if found and len(keys) > len(found[0].split("+")) - 1:
                        break
                    if replay_family(spec, x, indices, (narrowed, *keys), actual):
                        found.append("+".join((narrowed, *keys)))
    shown: Counter[str] = Counter()
    for k, n in (prefer or {}).items():
        for a in k.split("+"):
            shown[a] += n
    return sorted(found, key=lambda k: (sum(a not in shown for a in k.split("+")),
                                        -RANK.index(severity_of(k.split("+"), spec)),
                                        -sum(shown[a] for a in k.split("+"))))


def _open(v: FamilyVariant, spec: FamilySpec, x: np.ndarray) -> np.ndarray | None:
    return None if v.open is None else np.asarray(v.open(spec, x), dtype=bool)


def replay_family(spec: FamilySpec, x: np.ndarray, indices: np.ndarray | None, keys: Sequence[str],
                  actual: FamilyOutputs) -> bool:
    """Whether the one variant ``keys`` names reproduces ``actual`` (grouping's test)."""
    narrowed = next((k for k in keys if k in NARROWINGS.get(spec.op, ())), "")
    if len(keys) >= 2 and narrowed:
        keys = [narrowed, *(k for k in keys if k != narrowed)]
    narrow_of, widen = _narrow_widen(narrowed)
    if len(keys) == 2 and narrowed and x.dtype == np.float64:  # a variant on the float32 input
        narrow = narrow_of(x)
        v = _BY_KEY.get(keys[1])
        out = variant_outputs(keys[1], spec, narrow, indices)
        if out is None or v is None:
            return False
        widened = (widen(out[0]), out[1])
        return agrees(spec, narrow, widened, actual, open_values=_open(v, spec, narrow))
    if len(keys) > 2 and narrowed and x.dtype == np.float64 and spec.op in ("lp", "global_lp"):
        narrow = narrow_of(x)  # an LpPool combination on the float32 input
        rest = sorted(keys[1:], key=lambda k: _LP_MODIFIERS.index(k) if k in _LP_MODIFIERS else -1)
        combined = _lp_combination(spec, narrow, rest)
        return combined is not None and _matches(spec, narrow, rest, (widen(combined[0]), combined[1]), actual)
    if len(keys) > 1 and spec.op in ("lp", "global_lp"):
        ordered = sorted(keys, key=lambda k: _LP_MODIFIERS.index(k) if k in _LP_MODIFIERS else -1)
        combined = _lp_combination(spec, x, ordered)
        if combined is not None:
            return _matches(spec, x, ordered, combined, actual)
    if len(keys) == 2 and "+".join(keys[::-1]) in _BY_KEY:
        keys = ["+".join(keys[::-1])]
    elif len(keys) == 2 and "+".join(keys) in _BY_KEY:
        keys = ["+".join(keys)]
    if len(keys) != 1:
        return False
    out = variant_outputs(keys[0], spec, x, indices)
    v = _BY_KEY.get(keys[0])
    return out is not None and v is not None and _matches(spec, x, (keys[0],), out, actual, _open(v, spec, x))


__all__ = ["FAMILY_VARIANTS", "FAMILY_VARIANT_KEYS", "FamilyVariant", "agrees", "close",
           "diagnose_family", "family_variant_text", "rejection_explained", "replay_family",
           "variant_outputs"]
