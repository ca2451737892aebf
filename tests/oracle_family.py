"""A slow loop oracle for the rest of the pooling family, written from the operator texts.

It imports nothing from ``poolcheck``; the window geometry of LpPool comes from tests/oracle.py
(the ONNX shape rules, written from the texts too). Every output element is computed by plain
Python loops over its window or bin:

- LpPool-18/22: "Lp pooling consisting of computing the Lp norm on all values of a subset of the
  input tensor" -- ``(sum |x|^p) ** (1/p)`` over the window's taps inside the input (pads add
  zeros, which change no sum). The sum of powers is computed exactly (``Fraction``), then rooted
  in float64: the result is within a few float64 ulps of the real norm.
- GlobalAveragePool / GlobalMaxPool / GlobalLpPool: "equivalent to AveragePool [MaxPool, LpPool]
  with kernel size equal to the spatial dimension of input tensor": one value per (n, c) plane.
- AdaptiveAvgPool-8 / AdaptiveMaxPool-8: bins ``[floor(i * In / Out), ceil((i + 1) * In / Out))``
  per axis; the exact mean (``Fraction``) rounded once; the max with the first element on ties
  and the first NaN winning, its index flattened over the spatial axes of its plane.
- MaxUnpool-22: zeros, then each X element written to its flat index, in row-major order.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import oracle


def to_dtype(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float64 ``values`` rounded once to ``dtype``: NumPy's cast, or for bfloat16 (whose ml_dtypes
    cast from float64 rounds twice, through float32) :func:`oracle.bfloat16_round` per element."""
    if dtype.name == "bfloat16":
        exact = [oracle.bfloat16_round(float(v)) for v in values.reshape(-1)]
        return np.array(exact, dtype=np.float32).astype(dtype).reshape(values.shape)  # exact values
    return values.astype(dtype)


def _exact_sum_of_powers(values: list[float], p: int) -> float:
    """``sum |v|^p`` exactly, then to float64 (inf when it overflows, NaN when a value is NaN)."""
    if any(math.isnan(v) for v in values):
        return math.nan
    if any(math.isinf(v) for v in values):
        return math.inf
    total = sum((Fraction(abs(v)) ** p for v in values), Fraction(0))
    try:
        return float(total)
    except OverflowError:
        return math.inf


def _root(s: float, p: int) -> float:
    if math.isnan(s) or math.isinf(s):
        return s
    return s if p == 1 else s ** (1.0 / p)


def lp_pool(x: np.ndarray, kernel_shape: Sequence[int], p: int = 2, strides: Sequence[int] | None = None,
            pads: Sequence[int] | None = None, dilations: Sequence[int] | None = None, ceil_mode: int = 0,
            auto_pad: str = "NOTSET") -> np.ndarray:
    n = len(kernel_shape)
    axes = oracle.onnx_axes(x.shape[2:], kernel_shape, strides or [1] * n, pads or [0] * (2 * n),
                            dilations or [1] * n, ceil_mode, auto_pad)
    out = np.zeros((*x.shape[:2], *(a.out for a in axes)), dtype=np.float64)
    for nc in itertools.product(range(x.shape[0]), range(x.shape[1])):
        plane = x[nc]
        for o in itertools.product(*(range(a.out) for a in axes)):
            taps = []
            for pos in itertools.product(*(a.window(oi) for a, oi in zip(axes, o))):
                if all(0 <= q < a.size for q, a in zip(pos, axes)):
                    taps.append(float(plane[pos]))
            out[nc + o] = _root(_exact_sum_of_powers(taps, p), p)
    return to_dtype(out, x.dtype)


def global_pool(x: np.ndarray, kind: str, p: int = 2) -> np.ndarray:
    """kind: "avg" (exact mean rounded once), "max" (NaN wins), "lp"."""
    out = np.zeros((*x.shape[:2], *([1] * (x.ndim - 2))), dtype=np.float64)
    for nc in itertools.product(range(x.shape[0]), range(x.shape[1])):
        values = [float(v) for v in x[nc].reshape(-1)]
        where = nc + (0,) * (x.ndim - 2)
        if kind == "max":
            out[where] = math.nan if any(math.isnan(v) for v in values) else max(values)
        elif kind == "lp":
            out[where] = _root(_exact_sum_of_powers(values, p), p)
        else:
            out[where] = _exact_mean(values)
    return to_dtype(out, x.dtype)


def _exact_mean(values: list[float]) -> float:
    if any(math.isnan(v) for v in values):
        return math.nan
    infs = {v for v in values if math.isinf(v)}
    if infs:
        return math.nan if len(infs) == 2 else infs.pop()
    mean = sum((Fraction(v) for v in values), Fraction(0)) / len(values)
    return float(mean)


def bins(size: int, out: int) -> list[tuple[int, int]]:
    """AdaptiveAvgPool-8: "d_start = floor(i * D_in / D_out)", "d_end = ceil((i+1) * D_in / D_out)"."""
    return [(math.floor(Fraction(i * size, out)), math.ceil(Fraction((i + 1) * size, out))) for i in range(out)]


def adaptive(x: np.ndarray, output_shape: Sequence[int], kind: str) -> tuple[np.ndarray, np.ndarray | None]:
    spatial = x.shape[2:]
    per_axis = [bins(s, o) for s, o in zip(spatial, output_shape)]
    values = np.zeros((*x.shape[:2], *output_shape), dtype=np.float64)
    index = np.zeros(values.shape, dtype=np.int64)
    for nc in itertools.product(range(x.shape[0]), range(x.shape[1])):
        plane = x[nc]
        for o in itertools.product(*(range(k) for k in output_shape)):
            cells = list(itertools.product(*(range(*per_axis[i][oi]) for i, oi in enumerate(o))))
            if kind == "avg":
                values[nc + o] = _exact_mean([float(plane[c]) for c in cells])
                continue
            best, at = None, None
            for c in cells:  # row-major: the first of equals stays; the first NaN wins
                v = float(plane[c])
                if best is None or (not math.isnan(best) and (math.isnan(v) or v > best)):
                    best, at = v, c
            assert at is not None and best is not None
            values[nc + o] = best
            index[nc + o] = int(np.ravel_multi_index(at, spatial))
    return to_dtype(values, x.dtype), (index if kind == "max" else None)


def unpool_shape(x_shape: Sequence[int], kernel_shape: Sequence[int], strides: Sequence[int] | None,
                 pads: Sequence[int] | None) -> tuple[int, ...]:
    """The inverse of the MaxPool shape rule: ``(in - 1) * stride + kernel - pads``."""
    n = len(kernel_shape)
    strides = strides or [1] * n
    pads = pads or [0] * (2 * n)
    return (*x_shape[:2], *((x_shape[2 + i] - 1) * strides[i] + kernel_shape[i] - pads[i] - pads[n + i]
                            for i in range(n)))


def max_unpool(x: np.ndarray, indices: np.ndarray, kernel_shape: Sequence[int], strides: Sequence[int] | None = None,
               pads: Sequence[int] | None = None, output_shape: Sequence[int] | None = None) -> np.ndarray:
    shape = tuple(output_shape) if output_shape is not None else unpool_shape(x.shape, kernel_shape, strides, pads)
    flat: list[Any] = [0.0] * math.prod(shape)
    for v, i in zip(x.reshape(-1).tolist(), indices.reshape(-1).tolist()):
        flat[i] = v
    return np.array(flat, dtype=x.dtype).reshape(shape)
