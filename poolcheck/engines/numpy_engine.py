"""The vectorised NumPy reference engine.

No Python loop runs over output elements: values-only max pooling and average pooling are
separable reductions (one strided slice per tap per axis); max pooling with indices loops over
kernel offsets in row-major order and updates the whole output at once.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.spec.indices import IndexLayout
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import AxisGeometry, Geometry

NAME = "numpy"


def _lowest(dtype: np.dtype) -> float | int:
    if dtype.kind == "f":
        return float(np.finfo(dtype).min)
    return int(np.iinfo(dtype).min)


def _pad_fill(dtype: np.dtype) -> float | int:
    """Padding for max pooling: "All added padding values are equal to negative infinity"."""
    return float("-inf") if dtype.kind == "f" else int(np.iinfo(dtype).min)


def empty_max_value(dtype: np.dtype, policy: Policy) -> float | int:
    if policy.empty_max == "zero":
        return 0
    if policy.empty_max == "lowest" or dtype.kind != "f":
        return _lowest(dtype)
    return float("-inf")


#: Bytes of accumulator per chunk of (n, c) planes: small enough to stay in cache.
CHUNK_BYTES = 1 << 19


def _tap_range(a: AxisGeometry, j: int) -> tuple[int, int, int]:
    """Outputs ``[lo, hi)`` whose tap ``j`` lands inside the input, and that tap's first position."""
    offset = j * a.dilation - a.pad_begin  # position of tap j of window 0
    lo = min(a.out, -(offset // a.stride)) if offset < 0 else 0  # ceil(-offset / stride)
    hi = min(a.out, max(lo, -((offset - a.size) // a.stride)))  # ceil((size - offset) / stride)
    return lo, hi, offset + lo * a.stride


def _reduce_axis(src: np.ndarray, a: AxisGeometry, axis: int, ufunc: np.ufunc, init: float | int,
                 dtype: np.dtype) -> np.ndarray:
    """Combine the taps of every window along one axis. Taps outside the input are skipped, which
    equals padding with ``init`` (the identity: -inf for max, 0 for sums); taps are combined in
    order. (So an average of a window of only -0.0 values may come out as +0.0.)"""
    index: list[slice] = [slice(None)] * src.ndim

    def tap(first: int, count: int) -> np.ndarray:
        index[axis] = slice(first, first + (count - 1) * a.stride + 1, a.stride)
        return src[tuple(index)]

    ranges = [r for r in (_tap_range(a, j) for j in range(a.kernel)) if r[1] > r[0]]
    if len(ranges) >= 2 and ranges[0][:2] == ranges[1][:2] == (0, a.out):
        # Common interior case: the first two taps cover every window; no fill pass needed.
        out = ufunc(tap(ranges[0][2], a.out), tap(ranges[1][2], a.out), dtype=dtype)
        ranges = ranges[2:]
    else:
        shape = list(src.shape)
        shape[axis] = a.out
        out = np.full(shape, init, dtype=dtype)
    index_out: list[slice] = [slice(None)] * src.ndim
    for lo, hi, first in ranges:
        index_out[axis] = slice(lo, hi)
        dst = out[tuple(index_out)]
        ufunc(dst, tap(first, hi - lo), out=dst)
    return out


def _separable(x: np.ndarray, geom: Geometry, ufunc: np.ufunc, init: float | int, dtype: np.dtype) -> np.ndarray:
    """Reduce every window, one spatial axis at a time (last axis first), in cache-sized chunks
    of (n, c) planes. A Python loop runs over chunks and taps, never over output elements."""
    planes = geom.batch * geom.channels
    if all(a.out == 1 and a.dilation == 1 and a.pad_begin >= 0 and a.kernel - a.pad_begin >= a.size
           for a in geom.axes):
        # Global pooling: one window covers each whole plane; a single reduction per plane.
        flat = x.reshape(planes, -1).astype(dtype, copy=False)
        return ufunc.reduce(flat, axis=1).reshape(geom.output_shape)
    src = x.reshape((planes, *x.shape[2:]))
    out = np.empty((planes, *geom.output_shape[2:]), dtype=dtype)
    plane_bytes = dtype.itemsize * int(np.prod([max(a.size, a.out) for a in geom.axes]))
    step = max(1, CHUNK_BYTES // max(1, plane_bytes))
    for lo in range(0, planes, step):
        # Widen once per chunk (a fast contiguous cast) rather than inside every tap's ufunc.
        acc = src[lo:lo + step].astype(dtype, copy=False)
        for i in reversed(range(len(geom.axes))):
            acc = _reduce_axis(acc, geom.axes[i], 1 + i, ufunc, init, dtype)
        out[lo:lo + step] = acc
    return out.reshape(geom.output_shape)


def max_values(x: np.ndarray, geom: Geometry, policy: Policy = SPEC) -> np.ndarray:
    """Max pooling values only (NaN propagates, as under the ``propagate`` policy)."""
    acc = _separable(x, geom, np.maximum, _pad_fill(x.dtype), x.dtype)
    empty = w.empty_windows(geom)
    if empty is not None:
        fill = empty_max_value(x.dtype, policy)
        if fill != _pad_fill(x.dtype):
            acc = np.where(np.broadcast_to(empty, acc.shape), np.asarray(fill, dtype=x.dtype), acc)
    return acc


def max_pool(
    x: np.ndarray,
    geom: Geometry,
    layout: IndexLayout | None,
    policy: Policy = SPEC,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Max pooling; ``layout=None`` skips the index output.

    Ties go to the first element in row-major window order (strict ``>`` scan), which is also
    the smallest input index. See :class:`~poolcheck.spec.policy.Policy` for NaN and empty
    windows.
    """
    if layout is None and policy.nan == "propagate":
        return max_values(x, geom, policy), None
    n = len(geom.axes)
    is_float = x.dtype.kind == "f"
    xp = w.padded_input(x, geom, 0)
    out_shape = geom.output_shape
    best = np.zeros(out_shape, dtype=x.dtype)
    found = np.zeros(out_shape, dtype=bool)
    where = np.full(out_shape, -1, dtype=np.int64)  # spatial flat index of the chosen element

    # Flattening weights of the spatial position within one (n, c) plane.
    sizes = [a.size for a in geom.axes]
    order = layout.order if layout is not None else "C"
    weights = [0] * n
    acc = 1
    for i in (reversed(range(n)) if order == "C" else range(n)):
        weights[i] = acc
        acc *= sizes[i]

    for offsets in itertools.product(*(range(a.kernel) for a in geom.axes)):
        sl = (slice(None), slice(None)) + tuple(w.tap_slice(a, j) for a, j in zip(geom.axes, offsets))
        v = xp[sl]
        valid = None
        flat = None
        for i, (a, j) in enumerate(zip(geom.axes, offsets)):
            pos = w.tap_positions(a, j)
            ok = (pos >= 0) & (pos < a.size)
            if not ok.all():
                b = w.broadcast_axis(ok, i, n)
                valid = b if valid is None else (valid & b)
            term = w.broadcast_axis(pos * weights[i], i, n)
            flat = term if flat is None else flat + term
        if is_float and policy.nan == "propagate":
            better = (v > best) | (np.isnan(v) & ~np.isnan(best))
        elif is_float and policy.nan == "ignore":
            better = (v > best) | (np.isnan(best) & ~np.isnan(v))
        else:  # "first", or integers: a plain strict '>' scan
            better = v > best
        update = ~found | better
        if valid is not None:
            update &= valid
            found |= valid
        else:
            found[...] = True
        np.copyto(best, v, where=update)
        np.copyto(where, np.broadcast_to(flat, out_shape), where=update)

    if not found.all():
        best[~found] = empty_max_value(x.dtype, policy)
    if layout is None:
        return best, None
    plane = int(np.prod(sizes))
    nc = np.arange(geom.batch * geom.channels, dtype=np.int64).reshape(
        (geom.batch, geom.channels) + (1,) * n
    )
    index = (nc * plane + where) % layout.modulus
    index[~found] = policy.empty_index
    return best, index.astype(layout.dtype)


@functools.lru_cache(maxsize=256)
def divisor(geom: Geometry, exclude_pad: bool, policy: Policy = SPEC) -> np.ndarray:
    """The per-window divisor of average pooling, broadcastable to the output.

    ONNX: "The output of each pooling window is divided by the number of elements (exclude pad
    when attribute count_include_pad is zero)". With padding counted, a window that overhangs
    the padded input (ceil rounding) counts only the part inside it, as ONNX Runtime, OpenVINO,
    PyTorch and the ONNX reference do.
    """
    rule = policy.divisor
    if rule == "attribute":
        rule = "valid" if exclude_pad else "padded"
    n = len(geom.axes)
    result = np.ones((1, 1) + (1,) * n, dtype=np.int64)
    for i, a in enumerate(geom.axes):
        if rule == "valid":
            counts = w.valid_counts(a)
        elif rule == "padded":
            counts = w.padded_counts(a)
        else:
            counts = np.full(a.out, a.kernel, dtype=np.int64)
        result = result * w.broadcast_axis(counts, i, n)
    result.flags.writeable = False  # cached: shared between calls
    return result


@functools.lru_cache(maxsize=256)
def _float_divisor(geom: Geometry, exclude_pad: bool, policy: Policy) -> np.ndarray:
    div = divisor(geom, exclude_pad, policy).astype(np.float64)
    div.flags.writeable = False
    return div


def avg_pool(x: np.ndarray, geom: Geometry, exclude_pad: bool, policy: Policy = SPEC) -> np.ndarray:
    """Average pooling. Sums accumulate in float64 from +0.0 (last spatial axis first, taps in
    order, taps outside the input skipped), are divided once, and rounded once to the input type."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf is NaN, as IEEE-754 says
        acc = _separable(x, geom, np.add, 0.0, np.dtype(np.float64))
    div = _float_divisor(geom, exclude_pad, policy)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(acc, div, out=acc)
    zero = div == 0
    if zero.any():
        acc[np.broadcast_to(zero, acc.shape)] = 0.0 if policy.empty_avg == "zero" else np.nan
    return acc.astype(x.dtype)
