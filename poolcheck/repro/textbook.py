"""The answer the text requires, by a short loop over each window's taps.

This file is copied verbatim into every reproducer script (it needs NumPy and the standard
library only, and imports nothing of poolcheck), so a maintainer reads the whole computation the
report rests on. It is poolcheck's reference rewritten as the plainest loop, not a call into it:
``tests/slow/test_repro.py`` checks it against poolcheck's engines on every registry entry.

An axis is ``(size, kernel, stride, dilation, pad_begin, pad_end, out)``: the pads actually
applied and the output length the shape rule gives. Window ``o`` reads input position
``o * stride - pad_begin + j * dilation`` for tap ``j``; a tap outside ``[0, size)`` but inside
``[-pad_begin, size + pad_end)`` is padding, a tap past that (ceil rounding) is nothing.
Open points (the text is silent) are settled as poolcheck's reference settles them: NaN wins a
max window (the first NaN), a window without input element is -inf (the type's lowest integer)
with index -1, the average of no element is 0.

NumPy has no bfloat16: a bfloat16 input is held in float32 (which holds every bfloat16 value
exactly), the loop works in float64 and :func:`to_bfloat16` rounds each result once to the
nearest bfloat16 value.
"""

import itertools
import math

import numpy as np


def window_taps(o, axes):
    """The input positions of window ``o`` and its number of padding taps."""
    inside, padding = [], 0
    for j in itertools.product(*(range(a[1]) for a in axes)):
        p = tuple(oi * a[2] - a[4] + ji * a[3] for oi, ji, a in zip(o, j, axes))
        if all(0 <= pi < a[0] for pi, a in zip(p, axes)):
            inside.append(p)
        elif all(-a[4] <= pi < a[0] + a[5] for pi, a in zip(p, axes)):
            padding += 1
    return inside, padding


def flat_index(b, ch, p, shape, order="C", modulus=None):
    """Index of element ``(b, ch, *p)`` of a tensor of ``shape`` flattened to 1D: the spatial
    position row-major ("C") or column-major ("F") within its (n, c) plane, then the plane's
    offset; ``modulus`` keeps the index within the trailing dimensions it counts."""
    plane = math.prod(shape[2:])
    spatial = int(np.ravel_multi_index(p, shape[2:], order=order)) if p else 0
    flat = (b * shape[1] + ch) * plane + spatial
    return flat % modulus if modulus else flat


def to_bfloat16(a):
    """``a`` rounded once to the nearest bfloat16 value (ties to even), held in float32: 8
    significant bits, steps of 2**-133 below the smallest normal 2**-126, infinity past the
    largest finite value; NaN and infinities stay."""
    a = np.asarray(a, dtype=np.float64)
    _, exponent = np.frexp(a)  # a = m * 2**exponent, 0.5 <= |m| < 1
    step = np.ldexp(1.0, np.maximum(exponent - 8, -133))
    with np.errstate(all="ignore"):
        rounded = np.where(np.isfinite(a), np.rint(a / step) * step, a)  # rint: ties to even
        return rounded.astype(np.float32)  # exact, or inf past float32's (and bfloat16's) range


def bfloat16_spacing(v):
    """The distance from bfloat16 value ``v`` to the next one away from zero: float32's, times 2**16
    (bfloat16 keeps float32's exponent and the top 7 of its 23 fraction bits)."""
    return float(np.spacing(np.float32(abs(v)))) * 65536.0


def pool(x, op, axes, exclude_pad=False, order="C", modulus=None, bfloat16=False):
    """(values, indices, tolerance): max or average pooling of ``x`` by the loop. ``indices`` is
    None for averages; ``tolerance`` the deviation a correct average may show (a runtime
    accumulating in the input type): (taps + 1) * eps * mean|x| + one ulp of the result.
    ``bfloat16``: ``x`` (float32) holds bfloat16 values and the results are rounded to bfloat16."""
    n, c = x.shape[:2]
    out_shape = (n, c) + tuple(a[6] for a in axes)
    values = np.zeros(out_shape, dtype=np.float64 if bfloat16 else x.dtype)
    indices = np.full(out_shape, -1, dtype=np.int64)
    tolerance = np.zeros(out_shape, dtype=np.float64)
    floating = x.dtype.kind == "f"
    lowest = -np.inf if floating else np.iinfo(x.dtype).min
    taps_per_window = math.prod(a[1] for a in axes)
    eps = 2.0 ** -7 if bfloat16 else float(np.finfo(x.dtype).eps) if floating else 0.0
    for b, ch in itertools.product(range(n), range(c)):
        for o in itertools.product(*(range(a[6]) for a in axes)):
            inside, padding = window_taps(o, axes)
            at = (b, ch) + o
            if op == "max":
                best = None
                for p in inside:
                    v = x[(b, ch) + p]
                    if best is None:
                        best = p
                        continue
                    w = x[(b, ch) + best]
                    if floating and math.isnan(w):
                        continue  # the first NaN wins
                    if (floating and math.isnan(v)) or v > w:
                        best = p
                values[at] = lowest if best is None else x[(b, ch) + best]
                if best is not None:
                    indices[at] = flat_index(b, ch, best, x.shape, order, modulus)
            else:
                count = len(inside) + (0 if exclude_pad else padding)
                total = sum(float(x[(b, ch) + p]) for p in inside)
                size = sum(abs(float(x[(b, ch) + p])) for p in inside)
                with np.errstate(all="ignore"):
                    values[at] = total / count if count else 0.0
                    mean_abs = size / count if count else 0.0
                    e = abs(float(to_bfloat16(values[at]) if bfloat16 else values[at]))
                    e = e if math.isfinite(e) else 0.0
                    ulp = bfloat16_spacing(e) if bfloat16 else float(np.spacing(x.dtype.type(e)))
                    tol = (taps_per_window + 1) * eps * mean_abs + ulp
                tolerance[at] = tol if math.isfinite(tol) else 0.0
    if bfloat16:
        values = to_bfloat16(values)
    return values, (indices if op == "max" else None), tolerance


def differences(expected, actual, tolerance=None):
    """Positions where ``actual`` departs from ``expected`` (NaN equals NaN; within ``tolerance``
    where given and both are finite)."""
    e = np.asarray(expected, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    with np.errstate(all="ignore"):
        same = (e == a) | (np.isnan(e) & np.isnan(a))
        if tolerance is not None:
            same |= (np.abs(e - a) <= tolerance) & np.isfinite(e) & np.isfinite(a)
    return [tuple(int(v) for v in p) for p in np.argwhere(~same)]
