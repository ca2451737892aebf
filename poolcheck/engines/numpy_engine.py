"""The vectorised NumPy reference engine.

No Python loop runs over output elements: values-only max pooling and average pooling are
separable reductions (one strided slice per tap per axis); max pooling with indices loops over
kernel offsets in row-major order and updates the whole output at once.
"""

from __future__ import annotations

import itertools

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.spec.indices import IndexLayout
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import Geometry

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


def _take(arr: np.ndarray, axis: int, sl: slice) -> np.ndarray:
    index = [slice(None)] * arr.ndim
    index[axis] = sl
    return arr[tuple(index)]


def max_values(x: np.ndarray, geom: Geometry, policy: Policy = SPEC) -> np.ndarray:
    """Max pooling values only (NaN propagates, as under the ``propagate`` policy)."""
    acc = w.padded_input(x, geom, _pad_fill(x.dtype))
    # Reduce the last spatial axis first; each pass shrinks one axis to its output size.
    for i in reversed(range(len(geom.axes))):
        a = geom.axes[i]
        axis = 2 + i
        nxt = np.array(_take(acc, axis, w.tap_slice(a, 0)), copy=True)
        for j in range(1, a.kernel):
            np.maximum(nxt, _take(acc, axis, w.tap_slice(a, j)), out=nxt)
        acc = nxt
    empty = w.empty_windows(geom)
    if empty is not None:
        fill = empty_max_value(x.dtype, policy)
        if fill != _pad_fill(x.dtype):
            acc = np.where(np.broadcast_to(empty, acc.shape), np.asarray(fill, dtype=x.dtype), acc)
    return np.ascontiguousarray(acc)


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
    return result


def avg_pool(x: np.ndarray, geom: Geometry, exclude_pad: bool, policy: Policy = SPEC) -> np.ndarray:
    """Average pooling. Sums accumulate in float64 (last spatial axis first, taps in order),
    are divided once, and rounded once to the input type."""
    acc = w.padded_input(x, geom, 0.0, np.float64)
    for i in reversed(range(len(geom.axes))):
        a = geom.axes[i]
        axis = 2 + i
        nxt = np.array(_take(acc, axis, w.tap_slice(a, 0)), copy=True)
        for j in range(1, a.kernel):
            nxt += _take(acc, axis, w.tap_slice(a, j))
        acc = nxt
    div = divisor(geom, exclude_pad, policy)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = acc / div
    zero = np.broadcast_to(div == 0, mean.shape)
    if zero.any():
        mean[zero] = 0.0 if policy.empty_avg == "zero" else np.nan
    return mean.astype(x.dtype)
