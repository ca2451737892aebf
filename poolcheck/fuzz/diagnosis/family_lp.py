"""LpPool's numerics in the diagnosis: two named behaviours whose rounding the family's Lp rule
(:func:`poolcheck.judgement.family_tolerance`) does not bound, each replayed within its own bound.

**A signed sum** (``lp:no-abs``: x^p summed, not |x|^p, as torch's ``lp_pool`` does). The Lp
rule bounds a sum of non-negative terms relative to the sum itself. A signed sum cancels, so a
runtime summing it in its input type ``A`` errs relative to the magnitudes instead, as the
average rule's ``mean|x|`` does:

    |s - S| <= (taps + 1) * eps_A * sum|x|^p + taps * tiny_A

(each term rounded once, the additions in any order, and the sum rounded twice more: torch
takes ``avg_pool(x^p)`` in ``A`` and multiplies it by the kernel size in ``A``). The output may
be the 1/p-th root of any ``s`` in that interval (C's ``pow``: NaN where ``s < 0`` and p > 1),
with one more ``eps`` for the root and one ulp for the result. Torch's float16 window
``{5, 7, -51, -24, 58, -65504}`` sums to -65509 (-65504 in float16); ``avg_pool`` gives
-10920 in float16 and ``* 6`` gives -65520, which is -inf: a sum within the bound, past float16's
range. Only under ``lp:input-type-overflow`` (the sum in the input type overflows) is inf a
value of the interval: there an interval reaching past ``A``'s largest value may give inf, a
window holding a term ``|x|^p`` past it gives inf or NaN, and a window whose finite ``sum|x|^p``
passes it is *order-open* (``M + M - M`` is inf or ``M`` by the order of the additions). A
``sum|x|^p`` past even float64's range makes the bound infinite: any finite value (torch sums
``-M, 8, 9, 10, M, 12`` in float64 to 12). A window holding an input inf or NaN must give the
variant's own value, or the signed sum's own (torch: ``inf, -DBL_MAX, 3, ...`` gives inf where
the input-type overflow of each part, ``inf - inf``, gives NaN); under ``lp:input-type-overflow``
it may give any infinity or NaN where both infinities are there or its finite terms pass ``A``'s
range (torch sums ``DBL_MAX, ..., -inf, ..., DBL_MAX`` in order to -inf).

**A float32 exponent** (``lp:root-exponent-float32``): the root taken as ``pow(S, 1.0f / p)``,
the exponent rounded to float32 (0.33333334 for p = 3), as ONNX Runtime's ``LpPool::Finalize``
does (``std::pow(y_data, 1.0f / cxt.p_)``, onnxruntime/core/providers/cpu/nn/pool_base.h). The
result is off by a relative ``|fl32(1/p) - 1/p| * ln S``: 4 float32 ulps at S = 1843^3, 12 at
S = 1e36. The variant computes exactly that root, and the Lp rule judges around it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from poolcheck.api_family import nearest_power
from poolcheck.judgement import same_values
from poolcheck.spec import dtypes


def float32_exponent(p: int) -> float:
    """1/p as C's ``1.0f / p`` holds it."""
    return float(np.float32(1.0) / np.float32(p))


def exponent_rounded(p: int) -> bool:
    """Whether float32 holds 1/p inexactly (p = 3: the variant differs from the root)."""
    return float32_exponent(p) != 1.0 / p


def root(sums: np.ndarray, p: int, *, exponent32: bool = False) -> np.ndarray:
    """The 1/p-th root in float64 (unrounded), with the exponent 1/p (as
    :func:`poolcheck.api_family.lp_root` takes it: p = 2 the square root) or its float32 value."""
    with np.errstate(all="ignore"):
        if p == 1:
            return np.asarray(sums, dtype=np.float64)
        if p == 2:
            return np.sqrt(sums)
        return nearest_power(np.asarray(sums, dtype=np.float64), float32_exponent(p) if exponent32 else 1.0 / p)


@dataclass(frozen=True)
class SignedSums:
    """A signed Lp variant's windows: what its own bound (module docstring) needs."""

    #: Per window, the float64 sum of x^p (sign kept; p even: |x|^p).
    sums: np.ndarray
    #: Per window, the float64 sum of |x|^p.
    magnitude: np.ndarray
    #: Per window, the float64 sum of |x|^p over its finite inputs.
    finite_magnitude: np.ndarray
    #: Per window, how many terms |x|^p pass the input type's largest value.
    overflowing: np.ndarray
    #: Per window, how many inputs are inf or NaN; NaN; terms +inf and -inf (x^p's sign).
    nonfinite: np.ndarray
    nans: np.ndarray
    pos_inf: np.ndarray
    neg_inf: np.ndarray
    taps: int
    p: int
    dtype: np.dtype
    exponent32: bool = False

    def admits(self, center: np.ndarray, actual: np.ndarray, *, overflow: bool) -> np.ndarray:
        """Per element, whether ``actual`` is an output of this signed sum in the input type
        (``center``: the variant's own output, from the exact sums; ``overflow``: combined with
        ``lp:input-type-overflow``)."""
        info = dtypes.finfo(self.dtype)
        eps, tiny, big = float(info.eps), float(info.tiny), float(info.max)
        a = np.asarray(actual).astype(np.float64)
        ok = same_values(np.asarray(center), np.asarray(actual)) | same_values(self.exact(), np.asarray(actual))
        with np.errstate(all="ignore"):
            finite_in = self.nonfinite == 0
            ds = (self.taps + 1) * eps * self.magnitude + self.taps * tiny
            lo_s, hi_s = self.sums - ds, self.sums + ds
            if self.p == 1:
                lo_y, hi_y = lo_s, hi_s
                nan_ok = np.zeros(a.shape, dtype=bool)
                some = np.ones(a.shape, dtype=bool)
            else:
                lo_y = root(np.maximum(lo_s, 0.0), self.p, exponent32=self.exponent32)
                hi_y = root(np.maximum(hi_s, 0.0), self.p, exponent32=self.exponent32)
                nan_ok, some = lo_s < 0, hi_s >= 0
            lo_y = lo_y - self._slack(lo_y, eps, tiny)
            hi_y = hi_y + self._slack(hi_y, eps, tiny)
            inside = np.isfinite(a) & some & (lo_y <= a) & (a <= hi_y)
            ok = ok | (finite_in & (inside | (np.isnan(a) & nan_ok)))
            if overflow:
                if self.p == 1:
                    past = ((a == np.inf) & (hi_s > big)) | ((a == -np.inf) & (lo_s < -big))
                else:  # pow(-inf, 1/p) is +inf
                    past = (a == np.inf) & ((hi_s > big) | (lo_s < -big))
                term_inf = (self.overflowing > 0) & ~np.isfinite(a)
                bound = big * (1.0 - (self.taps + 2) * eps)
                order_open = (self.overflowing == 0) & (self.magnitude > bound)
                ok = ok | (finite_in & (past | term_inf | order_open))
                # an input inf meets finite terms that overflow to the other infinity first, or both
                # infinities are there: which arrives first is the order's (inf, -inf or NaN)
                inf_race = (self.nans == 0) & (self.nonfinite > 0) & (
                    (self.finite_magnitude > bound) | ((self.pos_inf > 0) & (self.neg_inf > 0)))
                ok = ok | (inf_race & ~np.isfinite(a))
        return np.asarray(ok, dtype=bool)

    def exact(self) -> np.ndarray:
        """The signed sums' roots rounded once to the input type (C's pow: NaN for a finite
        negative sum and p > 1; -inf gives +inf)."""
        with np.errstate(all="ignore"):
            y = self.sums if self.p == 1 else np.where(np.isfinite(self.sums) & (self.sums < 0), np.nan,
                                                       root(np.abs(self.sums), self.p, exponent32=self.exponent32))
        return dtypes.cast(y, self.dtype)

    def _slack(self, y: np.ndarray, eps: float, tiny: float) -> np.ndarray:
        """The root's own rounding (one eps, and the float32 exponent's ``|delta| * ln y^p``)
        and one ulp of the result type."""
        ay = np.abs(y)
        rel = eps
        if self.exponent32:
            rel = rel + abs(float32_exponent(self.p) - 1.0 / self.p) * np.abs(np.log(np.maximum(ay, tiny) ** self.p))
        return rel * ay + dtypes.spacing(ay, self.dtype)


__all__ = ["SignedSums", "exponent_rounded", "float32_exponent", "root"]
