"""Per-axis window arithmetic shared by the NumPy engine (the C engine does the same in C).

Everything here is separable: a pooling window is the Cartesian product of one tap list per
spatial axis, so validity, emptiness and divisors are products of per-axis quantities.
"""

from __future__ import annotations

import functools

import numpy as np

from poolcheck.spec.shape import AxisGeometry, Geometry


def tap_positions(a: AxisGeometry, j: int) -> np.ndarray:
    """Input positions touched by tap ``j`` of every window along axis ``a`` (shape ``(out,)``)."""
    return np.arange(a.out, dtype=np.int64) * a.stride - a.pad_begin + j * a.dilation


def window_span(a: AxisGeometry) -> int:
    """Elements one window spans along axis ``a``: ``(kernel - 1) * dilation + 1``."""
    return (a.kernel - 1) * a.dilation + 1


def packed(a: AxisGeometry) -> bool:
    """Whether :func:`padded_input` stores axis ``a`` packed: window ``o``'s span at
    ``o * span`` instead of ``o * stride``, leaving out the positions no window reads. Only where
    the windows lie further apart than they are long and the padded axis would be more than
    twice as long as the input and the packed windows together (a stride or a ceil overhang of
    2^31 would otherwise allocate gigabytes of padding)."""
    span = window_span(a)
    extent = a.pad_begin + a.size + a.pad_end + a.overhang
    return a.stride > span and extent > 2 * (a.size + a.out * span)


def tap_slice(a: AxisGeometry, j: int) -> slice:
    """Slice of the padded array (offset by ``pad_begin``) holding tap ``j`` of every window."""
    start = j * a.dilation
    step = window_span(a) if packed(a) else a.stride
    return slice(start, start + (a.out - 1) * step + 1, step)


def valid_counts(a: AxisGeometry) -> np.ndarray:
    """Number of taps of each window that land inside the input."""
    counts = np.zeros(a.out, dtype=np.int64)
    for j in range(a.kernel):
        p = tap_positions(a, j)
        counts += (p >= 0) & (p < a.size)
    return counts


def padded_counts(a: AxisGeometry) -> np.ndarray:
    """Number of taps of each window that land inside the padded input ``[-pb, size + pe)``."""
    counts = np.zeros(a.out, dtype=np.int64)
    for j in range(a.kernel):
        p = tap_positions(a, j)
        counts += (p >= -a.pad_begin) & (p < a.size + a.pad_end)
    return counts


def broadcast_axis(values: np.ndarray, axis: int, spatial_rank: int) -> np.ndarray:
    """Reshape a per-axis vector so it broadcasts against ``(N, C, *out)``."""
    shape = [1] * (2 + spatial_rank)
    shape[2 + axis] = values.shape[0]
    return values.reshape(shape)


@functools.lru_cache(maxsize=256)
def empty_windows(geom: Geometry) -> np.ndarray | None:
    """Boolean mask (broadcastable to the output) of windows with no input element, or None."""
    n = len(geom.axes)
    mask = None
    for i, a in enumerate(geom.axes):
        empty = valid_counts(a) == 0
        if empty.any():
            e = broadcast_axis(empty, i, n)
            mask = e if mask is None else (mask | e)
    if mask is not None:
        mask.flags.writeable = False  # cached: shared between calls
    return mask


def padded_input(x: np.ndarray, geom: Geometry, fill: float | int, dtype: np.dtype | None = None) -> np.ndarray:
    """``x`` padded by ``pad_begin`` and ``pad_end + overhang`` per spatial axis with ``fill``.

    Index ``q`` of an axis of the result is input position ``q - pad_begin``. A negative pad
    (ONNX SAME with a stride larger than the dilated kernel) crops the input instead."""
    dtype = np.dtype(dtype or x.dtype)
    if any(packed(a) for a in geom.axes):
        return _padded_gather(x, geom, fill, dtype)
    shape = (geom.batch, geom.channels) + tuple(a.pad_begin + a.size + a.pad_end + a.overhang for a in geom.axes)
    if shape == x.shape and dtype == x.dtype and all(a.pad_begin == 0 for a in geom.axes):
        return x
    out = np.full(shape, fill, dtype=dtype)
    src: list[slice] = [slice(None), slice(None)]
    dst: list[slice] = [slice(None), slice(None)]
    for a, extent in zip(geom.axes, shape[2:]):
        lo, hi = max(0, -a.pad_begin), min(a.size, extent - a.pad_begin)
        src.append(slice(lo, hi))
        dst.append(slice(lo + a.pad_begin, hi + a.pad_begin))
    out[tuple(dst)] = x[tuple(src)]
    return out


def _padded_gather(x: np.ndarray, geom: Geometry, fill: float | int, dtype: np.dtype) -> np.ndarray:
    """:func:`padded_input` axis by axis with a gather, packing the axes :func:`packed` picks."""
    out = x.astype(dtype, copy=False)
    for i, a in enumerate(geom.axes):
        if packed(a):
            span = window_span(a)
            q = (np.arange(a.out, dtype=np.int64)[:, None] * a.stride + np.arange(span, dtype=np.int64)).reshape(-1)
        else:
            q = np.arange(a.pad_begin + a.size + a.pad_end + a.overhang, dtype=np.int64)
        pos = q - a.pad_begin  # input positions
        inside = (pos >= 0) & (pos < a.size)
        out = np.take(out, np.clip(pos, 0, max(a.size - 1, 0)), axis=2 + i)
        if not inside.all():
            out[(slice(None),) * (2 + i) + (~inside,)] = fill
    return out
