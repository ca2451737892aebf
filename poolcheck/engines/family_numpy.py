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
    result: np.ndarray | None = None
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # widening a signalling NaN: invalid
        base = np.abs(v.astype(np.float64, copy=False))
        while p > 0:
            if p & 1:
                result = base.copy() if result is None else result * base
            p >>= 1
            if p > 0:
                base = base * base
    assert result is not None  # p >= 1
    return result


def _sequential_sums(regions: np.ndarray) -> np.ndarray:
    """Row sums of a ``(rows, taps)`` array added strictly left to right (``np.add.accumulate``;
    ``np.sum`` adds pairwise), from the first element: ``-0.0 + a = a`` for every ``a``, so this
    equals a sum started from -0.0 (and, for sums of non-negative terms, from +0.0)."""
    if regions.shape[1] == 0:
        return np.full(regions.shape[0], -0.0)
    with np.errstate(over="ignore", invalid="ignore"):  # inf past the range, NaN from inf + -inf
        return np.add.accumulate(regions, axis=1)[:, -1]


def lp_sums(x: np.ndarray, geom: Geometry, p: int) -> np.ndarray:
    """Per window, the float64 sum of ``|x|^p`` over its taps in row-major order from +0.0. Taps
    in padding read +0.0, which leaves a sum >= +0.0 unchanged (the C engine skips them).

    A loop runs over kernel taps, each pass covering every window, or, where the windows hold
    more taps than there are windows (global Lp pooling), over windows, each summing its taps in
    order; either way the sums are the C engine's, bit for bit."""
    powers = power(x, p)
    if math.prod(a.kernel for a in geom.axes) > math.prod(a.out for a in geom.axes):
        return _lp_sums_by_window(powers, geom)
    return _lp_sums_by_tap(powers, geom)


def _lp_sums_by_tap(powers: np.ndarray, geom: Geometry) -> np.ndarray:
    padded = w.padded_input(powers, geom, 0.0)
    acc = np.zeros(geom.output_shape, dtype=np.float64)
    lead = (slice(None), slice(None))
    with np.errstate(over="ignore", invalid="ignore"):  # inf past the range, NaN from inf + -inf
        for offsets in itertools.product(*(range(a.kernel) for a in geom.axes)):
            acc += padded[lead + tuple(w.tap_slice(a, j) for a, j in zip(geom.axes, offsets))]
    return acc


def _lp_sums_by_window(powers: np.ndarray, geom: Geometry) -> np.ndarray:
    acc = np.zeros(geom.output_shape, dtype=np.float64)
    planes = geom.batch * geom.channels
    for o in itertools.product(*(range(a.out) for a in geom.axes)):
        index: list[slice] = [slice(None), slice(None)]
        for a, oi in zip(geom.axes, o):
            first = oi * a.stride - a.pad_begin  # tap j reads first + j * dilation
            lo = max(0, -(first // a.dilation))  # ceil(-first / dilation): the first tap inside
            hi = min(a.kernel, (a.size - 1 - first) // a.dilation + 1)  # past the last tap inside
            start = first + lo * a.dilation
            index.append(slice(start, start + (hi - lo - 1) * a.dilation + 1, a.dilation) if hi > lo else slice(0, 0))
        region = powers[tuple(index)].reshape(planes, -1)
        sums = np.abs(_sequential_sums(region))  # an empty window: +0.0, as the C engine's
        acc[_at(o)] = sums.reshape(geom.batch, geom.channels)
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


def _at(position: Sequence[int]) -> tuple[slice | int, ...]:
    """The index of one output position in every (n, c) plane."""
    return (slice(None), slice(None), *(int(v) for v in position))


def _by_bin(sizes: Sequence[int], outs: Sequence[int]) -> bool:
    """Whether to loop over bins (each reduced in order) rather than over offsets into them:
    whichever loop is shorter (long bins: few outputs of a large input)."""
    longest = [int((end - start).max()) for start, end in (adaptive_bins(n, o) for n, o in zip(sizes, outs))]
    return math.prod(outs) < math.prod(longest)


def _bins(x: np.ndarray, outs: Sequence[int]) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...], np.ndarray]]:
    """Every output position, its bin as slices, and the bin's elements as ``(planes, taps)`` in
    row-major order."""
    bins = [adaptive_bins(n, o) for n, o in zip(x.shape[2:], outs)]
    planes = x.shape[0] * x.shape[1]
    for o in itertools.product(*(range(k) for k in outs)):
        region = tuple(slice(int(start[oi]), int(end[oi])) for (start, end), oi in zip(bins, o))
        yield o, region, x[(slice(None), slice(None), *region)].reshape(planes, -1)


def adaptive_avg(x: np.ndarray, outs: Sequence[int]) -> np.ndarray:
    """AdaptiveAvgPool-8: each bin's float64 sum from -0.0 (the identity of IEEE addition) in
    row-major order, divided once by its element count, rounded once to the input type."""
    sizes = x.shape[2:]
    if _by_bin(sizes, outs):
        out = np.empty((*x.shape[:2], *outs), dtype=x.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            for pos, _, region in _bins(x.astype(np.float64, copy=False), outs):
                sums = _sequential_sums(region) / region.shape[1]
                out[_at(pos)] = sums.reshape(x.shape[:2]).astype(x.dtype)
        return out
    with np.errstate(invalid="ignore"):  # widening a signalling NaN quiets it, and says so
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
    if _by_bin(sizes, outs):
        values = np.empty(shape, dtype=x.dtype)
        index = np.empty(shape, dtype=np.int64)
        rows = np.arange(x.shape[0] * x.shape[1])
        for pos, region, cells in _bins(x, outs):
            pick = np.argmax(cells, axis=1)  # the first maximum; the first NaN where there is one
            at = _at(pos)
            values[at] = cells[rows, pick].reshape(x.shape[:2])
            coords = np.unravel_index(pick, tuple(r.stop - r.start for r in region))
            flat = np.ravel_multi_index(tuple(c + r.start for c, r in zip(coords, region)), sizes)
            index[at] = flat.reshape(x.shape[:2])
        return values, index
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
