"""The NumPy engine for the rest of the family: Lp pooling sums, adaptive pooling, MaxUnpool.

The same contract as :mod:`poolcheck.engines.family_c`, bit for bit (its C source,
``_cpool_src/family.c``, states the arithmetic). No Python loop runs over output elements: the
loops run over kernel taps (Lp pooling) or bin offsets (adaptive pooling), each one vectorised
over every window at once.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.spec.family import adaptive_bins
from poolcheck.spec.shape import Geometry

NAME = "numpy"


def power(v: np.ndarray, p: int) -> np.ndarray:
    """``|v| ** p`` in float64 by square-and-multiply over the bits of ``p``, lowest first: the
    fixed sequence of multiplications the C engine performs (a libm or SIMD ``pow`` may round
    differently from one build to the next). Past the float64 range the power is inf, and so is
    the norm (its sum is not rescaled: float32 runtimes overflow far earlier)."""
    base = np.abs(v.astype(np.float64, copy=False))
    result: np.ndarray | None = None
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        while p > 0:
            if p & 1:
                result = base.copy() if result is None else result * base
            p >>= 1
            if p > 0:
                base = base * base
    assert result is not None  # p >= 1
    return result


def lp_sums(x: np.ndarray, geom: Geometry, p: int) -> np.ndarray:
    """Per window, the float64 sum of ``|x|^p`` over its taps in row-major order from +0.0. Taps
    in padding read +0.0, which leaves a sum >= +0.0 unchanged (the C engine skips them)."""
    padded = w.padded_input(power(x, p), geom, 0.0)
    acc = np.zeros(geom.output_shape, dtype=np.float64)
    lead = (slice(None), slice(None))
    for offsets in itertools.product(*(range(a.kernel) for a in geom.axes)):
        acc += padded[lead + tuple(w.tap_slice(a, j) for a, j in zip(geom.axes, offsets))]
    return acc


def _bin_taps(sizes: Sequence[int], outs: Sequence[int]) -> Iterator[tuple[list[np.ndarray], list[np.ndarray]]]:
    """For each offset into the bins (row-major), per axis the positions it reads (clamped) and
    whether the offset lies inside each bin."""
    bins = [adaptive_bins(n, o) for n, o in zip(sizes, outs)]
    longest = [int((end - start).max()) for start, end in bins]
    for offsets in itertools.product(*(range(k) for k in longest)):
        positions = [np.minimum(start + j, n - 1) for (start, _), j, n in zip(bins, offsets, sizes)]
        inside = [start + j < end for (start, end), j in zip(bins, offsets)]
        yield positions, inside


def _outer(masks: list[np.ndarray]) -> np.ndarray:
    """The outer AND of per-axis masks, broadcastable to ``(N, C, *out)``."""
    n = len(masks)
    full = np.ones((1, 1) + (1,) * n, dtype=bool)
    for i, m in enumerate(masks):
        full = full & w.broadcast_axis(m, i, n)
    return full


def adaptive_avg(x: np.ndarray, outs: Sequence[int]) -> np.ndarray:
    """AdaptiveAvgPool-8: each bin's float64 sum from -0.0 (the identity of IEEE addition) in
    row-major order, divided once by its element count, rounded once to the input type."""
    sizes = x.shape[2:]
    xf = x.astype(np.float64, copy=False)
    shape = (*x.shape[:2], *outs)
    acc = np.full(shape, -0.0)
    counts = np.ones((1, 1) + (1,) * len(outs), dtype=np.float64)
    for i, (n, o) in enumerate(zip(sizes, outs)):
        start, end = adaptive_bins(n, o)
        counts = counts * w.broadcast_axis((end - start).astype(np.float64), i, len(outs))
    with np.errstate(invalid="ignore", over="ignore"):
        for positions, inside in _bin_taps(sizes, outs):
            v = xf[(slice(None), slice(None)) + np.ix_(*positions)]
            acc = np.where(_outer(inside), acc + v, acc)
        return (acc / counts).astype(x.dtype)


def adaptive_max(x: np.ndarray, outs: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """AdaptiveMaxPool-8: the row-major scan of each bin keeping the first element no later one
    beats (strict ``>``; a NaN beats any number, the first NaN wins); the index is the element's
    position in its (n, c) plane flattened row-major ("as if input spatial dimensions were
    flatten, so the values are in the range [0, H * W * D)"). Returns int64 indices."""
    sizes = x.shape[2:]
    shape = (*x.shape[:2], *outs)
    best = np.zeros(shape, dtype=x.dtype)
    where = np.full(shape, -1, dtype=np.int64)
    found = np.zeros(shape, dtype=bool)
    weights = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
    is_float = x.dtype.kind == "f"
    for positions, inside in _bin_taps(sizes, outs):
        v = x[(slice(None), slice(None)) + np.ix_(*positions)]
        better = v > best
        if is_float:
            better |= np.isnan(v) & ~np.isnan(best)
        update = _outer(inside) & (~found | better)
        found |= update
        np.copyto(best, v, where=update)
        flat = sum(w.broadcast_axis(pos * wt, i, len(sizes)) for i, (pos, wt) in enumerate(zip(positions, weights)))
        np.copyto(where, np.broadcast_to(flat, shape), where=update)
    return best, where


def max_unpool(x: np.ndarray, indices: np.ndarray, out_shape: Sequence[int]) -> np.ndarray:
    """MaxUnpool: zeros, then ``out.flat[indices[i]] = x.flat[i]`` in row-major order of X; where
    several elements share an index the last one stays (the C engine's sequential writes)."""
    out = np.zeros(math.prod(out_shape), dtype=x.dtype)
    flat_i = indices.reshape(-1)[::-1]
    targets, last = np.unique(flat_i, return_index=True)  # first in reverse = last in order
    out[targets] = x.reshape(-1)[::-1][last]
    return out.reshape(tuple(out_shape))
