"""Element types: which are floating point, their limits, and the one rounding from float64.

The one home of every question poolcheck asks about an input's element type. NumPy has no
bfloat16; ``ml_dtypes`` (the JAX project's NumPy dtypes) gives one, which NumPy knows by name
once this module is imported (``np.dtype("bfloat16")``). Its dtype's ``kind`` is ``'V'``, not
``'f'``, and ``np.finfo`` refuses it, so code on a path a bfloat16 input takes asks here:
:func:`is_float` rather than ``dtype.kind == "f"``, :func:`finfo` rather than ``np.finfo``.

bfloat16 holds a subset of float32's values (float32's upper 16 bits), so comparisons done in
float32 (:func:`compare_dtype`) are exact and their results narrow back without rounding.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import ml_dtypes
import numpy as np

#: The bfloat16 dtype (8 exponent bits, 8 significand bits), as ml_dtypes defines it.
BFLOAT16: np.dtype = np.dtype(ml_dtypes.bfloat16)


@functools.lru_cache(maxsize=64)
def name_of(dtype: np.dtype) -> str:
    """``dtype.name``, kept: NumPy builds the name anew on every access (about 3 us)."""
    return str(dtype.name)


def as_dtype(value: Any) -> np.dtype:
    """``np.dtype(value)``; ``"bfloat16"`` names :data:`BFLOAT16` (ml_dtypes is imported here)."""
    return np.dtype(value)


def is_float(dtype: Any) -> bool:
    """Whether ``dtype`` is a floating-point type (NumPy's own ones, or bfloat16)."""
    dt = np.dtype(dtype)
    return dt.kind == "f" or dt == BFLOAT16


def is_int(dtype: Any) -> bool:
    """Whether ``dtype`` is a signed or unsigned integer type."""
    return np.dtype(dtype).kind in "iu"


def is_numeric(dtype: Any) -> bool:
    """Whether poolcheck pools elements of ``dtype``: an integer or a floating-point type."""
    return is_float(dtype) or is_int(dtype)


def is_numpy_type(dtype: Any) -> bool:
    """Whether ``dtype`` is one of NumPy's own types (a script needing only NumPy can build it)."""
    dt = np.dtype(dtype)
    return dt.kind in "fiub"


def finfo(dtype: Any) -> Any:
    """The machine limits of a floating-point ``dtype`` (``ml_dtypes.finfo`` for bfloat16)."""
    dt = np.dtype(dtype)
    return ml_dtypes.finfo(dt) if dt == BFLOAT16 else np.finfo(dt)


def spacing(values: Any, dtype: Any) -> np.ndarray:
    """One unit in the last place of each ``|value|`` as ``dtype`` holds it, in float64: NumPy's
    spacing, except at the largest finite value (and past it), where the spacing above is inf and
    the one below is taken; 0 where the value is inf or NaN. (A tolerance built on an inf ulp is
    inf: an average of two FLT_MAX accepted any answer, and one dropped to 0 accepted none.)"""
    dt = np.dtype(dtype)
    e = np.abs(np.asarray(values, dtype=np.float64))
    with np.errstate(all="ignore"):
        # inf and NaN stay inf and NaN in the cast, and their spacing is NaN
        gap = np.asarray(np.spacing(cast(e, dt))).astype(np.float64, copy=False)
    ulp_finite = np.isfinite(gap)
    if ulp_finite.all():  # the common case: every value finite and below the largest
        return gap
    info = finfo(dt)
    top = math.ldexp(float(info.eps), int(info.maxexp) - 1)  # the gap below the largest value
    return np.where(ulp_finite, gap, np.where(np.isfinite(e), top, 0.0))


def lowest(dtype: Any) -> float | int:
    """The lowest finite value of ``dtype``, as a Python number."""
    return float(finfo(dtype).min) if is_float(dtype) else int(np.iinfo(dtype).min)


def compare_dtype(dtype: Any) -> np.dtype:
    """The NumPy-native type in which comparisons of ``dtype`` values are exact and cheap:
    float32 for bfloat16 (which holds every bfloat16 value exactly), else ``dtype`` itself."""
    dt = np.dtype(dtype)
    return np.dtype(np.float32) if dt == BFLOAT16 else dt


def _half_casts_keep_bits() -> bool:
    """Whether this NumPy's float16 -> float32 -> float16 casts give back every bit pattern.

    They do on x86-64. On AArch64 NumPy converts with the FCVT instruction, which returns a
    signalling NaN quiet (0x7C01 -> 0x7E01, as IEEE 754 has a conversion do), and raises its
    invalid-operation flag."""
    signalling = np.array([0x7C01, 0xFDFF], dtype=np.uint16)
    with np.errstate(invalid="ignore"):
        back = signalling.view(np.float16).astype(np.float32).astype(np.float16)
    return bool(np.array_equal(back.view(np.uint16), signalling))


#: Probed once, at import: :func:`widen_half` and :func:`narrow_half` fix the signalling NaNs
#: only where NumPy's own casts do not keep them.
HALF_CASTS_KEEP_BITS = _half_casts_keep_bits()


def widen_half(values: np.ndarray) -> np.ndarray:
    """float16 ``values`` as float32, every bit pattern kept, on every machine: a number exactly,
    a NaN with its sign and its 10 payload bits on top of float32's 23 (a signalling NaN stays
    signalling), as NumPy's cast gives on x86-64. :func:`narrow_half` gives the float16 back."""
    with np.errstate(invalid="ignore"):
        wide = values.astype(np.float32)
    if HALF_CASTS_KEEP_BITS:
        return wide
    half = values.view(np.uint16)
    signalling = ((half & 0x7E00) == 0x7C00) & ((half & 0x01FF) != 0)  # all-ones exponent, quiet bit clear
    if signalling.any():
        h = half[signalling].astype(np.uint32)
        wide.view(np.uint32)[signalling] = ((h & 0x8000) << 16) | 0x7F800000 | ((h & 0x03FF) << 13)
    return wide


def narrow_half(values: np.ndarray) -> np.ndarray:
    """float32 ``values`` that :func:`widen_half` made, or that hold float16 values and NaNs in
    its layout (the payload in the top 10 bits), as float16, every bit pattern given back: the
    inverse of :func:`widen_half`."""
    with np.errstate(invalid="ignore"):
        narrow = values.astype(np.float16)
    if HALF_CASTS_KEEP_BITS:
        return narrow
    bits = values.view(np.uint32)
    signalling = ((bits & 0x7FC00000) == 0x7F800000) & ((bits & 0x003FFFFF) != 0)
    if signalling.any():
        b = bits[signalling]
        narrow.view(np.uint16)[signalling] = (((b >> 16) & 0x8000) | 0x7C00 | ((b >> 13) & 0x03FF)).astype(np.uint16)
    return narrow


def narrow_bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 ``values`` that hold bfloat16 values (widened exactly: ml_dtypes shifts the bits)
    as bfloat16, every bit pattern given back. ml_dtypes' float32 -> bfloat16 cast makes every NaN
    its sign's canonical one (a signalling 0x7F81 and a payload 0xFFC5 come back 0x7FC0 and
    0xFFC0); here a NaN keeps its top 16 bits, as the widening left them."""
    with np.errstate(invalid="ignore"):
        narrow = values.astype(BFLOAT16)
    nan = np.isnan(values)
    if nan.any():
        narrow.view(np.uint16)[nan] = (np.ascontiguousarray(values[nan]).view(np.uint32) >> 16).astype(np.uint16)
    return narrow


def cast(values: Any, dtype: Any) -> np.ndarray:
    """``values`` as an array of ``dtype``, each rounded once (to nearest, ties to even).

    NumPy's own casts round once: they are used for every type but bfloat16, whose values are
    read as float64 first (exact for every float16/float32/float64 value and integer to 2^53).

    ml_dtypes' float64 -> bfloat16 cast goes through float32 and so rounds twice (``1 + 2^-8 + 2^-40`` comes out 1.0, not the nearer ``1 + 2^-7``); here it
    rounds to float32 *to odd* first (truncate, then set the last bit where anything was cut
    off), which float32's 16 extra bits make exact for the second, round-to-nearest step."""
    dt = np.dtype(dtype)
    if dt != BFLOAT16:
        with np.errstate(over="ignore", invalid="ignore"):  # past the type's range: inf, as rounding gives
            return np.asarray(values).astype(dt)
    src = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        near = src.astype(np.float32)
        back = near.astype(np.float64)
    bits = near.view(np.uint32).copy()
    cut = ~np.isnan(src) & (back != src)
    bits[cut & (np.abs(back) > np.abs(src))] -= np.uint32(1)  # sign-magnitude: one step towards zero
    bits[cut] |= np.uint32(1)
    return bits.view(np.float32).astype(dt)
