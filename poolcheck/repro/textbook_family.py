"""The answer the text requires for the rest of the family, by short loops.

Copied verbatim, after :mod:`poolcheck.repro.textbook` (whose ``window_taps`` it uses), into
every reproducer script of a family case: LpPool and GlobalLpPool (the 1/p-th root of the sum
of ``|x|^p`` over each window, padding counting zero), GlobalAveragePool and GlobalMaxPool (each
(n, c) plane), MaxUnpool (each element of X written at its flat index of a zero output, the last
write kept where two collide) and AdaptiveAvgPool / AdaptiveMaxPool (bin j of an axis of size H
and O outputs is [floor(j H / O), ceil((j + 1) H / O)); AdaptiveMaxPool's indices count within
each (n, c) plane, row-major; the first maximum and the first NaN win). NumPy and the standard
library only; ``tests/slow/test_repro.py`` checks the loops against poolcheck's engines.
"""

import itertools
import math

import numpy as np

from poolcheck.repro.textbook import window_taps  # a script has textbook.py copied above this file


def lp_tolerance(value, taps, p, dtype):
    """The deviation a correct Lp norm may show, computed by a runtime in ``dtype``:
    ((taps + 1) / p + 1) * eps * |value| + one ulp + (taps * tiny) ** (1/p)."""
    info = np.finfo(dtype)
    e = abs(float(value))
    if not math.isfinite(e):
        return 0.0
    with np.errstate(over="ignore"):
        ulp = float(np.spacing(np.dtype(dtype).type(e)))
    if not math.isfinite(ulp):  # the largest finite value: the spacing below it, not inf
        ulp = math.ldexp(float(info.eps), int(info.maxexp) - 1)
    return ((taps + 1) / p + 1) * float(info.eps) * e + ulp + (taps * float(info.tiny)) ** (1.0 / p)


def abs_power(v, p):
    """|v| ** p, inf past the float64 range (Python's float power raises OverflowError there)."""
    try:
        return abs(v) ** p
    except OverflowError:
        return math.inf


def lp_pool(x, axes, p):
    """(values, tolerance): LpPool over the windows ``axes`` describe (see ``window_taps``)."""
    n, c = x.shape[:2]
    out_shape = (n, c) + tuple(a[6] for a in axes)
    values = np.zeros(out_shape, dtype=x.dtype)
    tolerance = np.zeros(out_shape, dtype=np.float64)
    taps = math.prod(a[1] for a in axes)
    for b, ch in itertools.product(range(n), range(c)):
        for o in itertools.product(*(range(a[6]) for a in axes)):
            inside, _ = window_taps(o, axes)
            total = sum(abs_power(float(x[(b, ch) + q]), p) for q in inside)
            with np.errstate(all="ignore"):
                values[(b, ch) + o] = total ** (1.0 / p)
            tolerance[(b, ch) + o] = lp_tolerance(values[(b, ch) + o], taps, p, x.dtype)
    return values, tolerance


def global_pool(x, kind, p=2):
    """(values, tolerance): GlobalAveragePool ("avg"), GlobalMaxPool ("max") or GlobalLpPool ("lp")."""
    n, c = x.shape[:2]
    out_shape = (n, c) + (1,) * (x.ndim - 2)
    values = np.zeros(out_shape, dtype=x.dtype)
    tolerance = np.zeros(out_shape, dtype=np.float64)
    taps = math.prod(x.shape[2:])
    eps = float(np.finfo(x.dtype).eps) if x.dtype.kind == "f" else 0.0
    for b, ch in itertools.product(range(n), range(c)):
        plane = [float(v) for v in np.asarray(x[b, ch]).ravel()]
        at = (b, ch) + (0,) * (x.ndim - 2)
        with np.errstate(all="ignore"):
            if kind == "max":
                nan = next((v for v in plane if math.isnan(v)), None)
                values[at] = nan if nan is not None else max(plane)
            elif kind == "avg":
                values[at] = sum(plane) / taps
                mean_abs = sum(abs(v) for v in plane) / taps
                tol = (taps + 1) * eps * mean_abs + float(np.spacing(x.dtype.type(abs(float(values[at])))))
                tolerance[at] = tol if math.isfinite(tol) else 0.0
            else:
                values[at] = sum(abs_power(v, p) for v in plane) ** (1.0 / p)
                tolerance[at] = lp_tolerance(values[at], taps, p, x.dtype)
    return values, tolerance


def max_unpool(x, indices, out_shape):
    """MaxUnpool: a zero tensor of ``out_shape`` with x's elements at their flat indices."""
    flat = np.zeros(math.prod(out_shape), dtype=x.dtype)
    for v, i in zip(np.asarray(x).ravel(), np.asarray(indices).ravel()):
        flat[int(i)] = v  # in row-major order of X: a later element overwrites an earlier one
    return flat.reshape(out_shape)


def adaptive_pool(x, kind, outs):
    """(values, indices, tolerance): AdaptiveAvgPool ("avg") or AdaptiveMaxPool ("max")."""
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    out_shape = (n, c) + tuple(outs)
    values = np.zeros(out_shape, dtype=x.dtype)
    indices = np.full(out_shape, -1, dtype=np.int64)
    tolerance = np.zeros(out_shape, dtype=np.float64)
    eps = float(np.finfo(x.dtype).eps) if x.dtype.kind == "f" else 0.0
    most = math.prod(max(-((-(j + 1) * h) // o) - (j * h) // o for j in range(o)) for h, o in zip(sizes, outs))
    for b, ch in itertools.product(range(n), range(c)):
        for o in itertools.product(*(range(v) for v in outs)):
            ranges = [range((j * h) // m, -((-(j + 1) * h) // m)) for j, h, m in zip(o, sizes, outs)]
            cells = list(itertools.product(*ranges))
            at = (b, ch) + o
            if kind == "max":
                best = cells[0]
                for q in cells[1:]:
                    v, w = float(x[(b, ch) + q]), float(x[(b, ch) + best])
                    if math.isnan(w):
                        continue
                    if math.isnan(v) or v > w:
                        best = q
                values[at] = x[(b, ch) + best]
                indices[at] = int(np.ravel_multi_index(best, sizes))
            else:
                with np.errstate(all="ignore"):
                    values[at] = sum(float(x[(b, ch) + q]) for q in cells) / len(cells)
                    mean_abs = sum(abs(float(x[(b, ch) + q])) for q in cells) / len(cells)
                    tol = (most + 1) * eps * mean_abs + float(np.spacing(x.dtype.type(abs(float(values[at])))))
                tolerance[at] = tol if math.isfinite(tol) else 0.0
    return values, (indices if kind == "max" else None), tolerance


def family_reference(op, x, indices=None, axes=None, p=2, out_shape=None, outs=None):
    """(values, indices or None, tolerance or None) the text requires for family operator ``op``."""
    if op == "lp":
        values, tol = lp_pool(x, axes, p)
        return values, None, tol
    if op in ("global_avg", "global_max", "global_lp"):
        values, tol = global_pool(x, op.split("_")[1], p)
        return values, None, (None if op == "global_max" else tol)
    if op == "unpool":
        return max_unpool(x, indices, out_shape), None, None
    values, where, tol = adaptive_pool(x, op.split("_")[1], outs)
    return values, where, (tol if op == "adaptive_avg" else None)
