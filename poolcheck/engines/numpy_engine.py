"""The vectorised NumPy reference engine.

No Python loop runs over output elements. Values-only max pooling and average pooling are
separable reductions, one axis at a time over cache-sized chunks of planes: where an axis is
``stride * out`` long, one contiguous 1-D ufunc call per tap covers every window of every plane
(:func:`_reduce_axis_flat`; a stride's phases gathered first, by an integer cast where a group
of rows fits 8 bytes, :func:`_gather_phase`), else one strided slice per tap
(:func:`_reduce_axis`). A global average sums each plane in NumPy's pairwise order
(:func:`_global_average`). Max pooling with indices scans the kernel offsets in row-major order
over the whole output at once, with running maxima where no NaN, zero or padding pick is
involved (:func:`_max_pool_scan`), else with the general masked scan. Every shortcut gives the
bits of the path it replaced (tests/engines/test_numpy_fast_paths.py).
"""

from __future__ import annotations

import functools
import itertools
import math
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.spec import dtypes
from poolcheck.spec.indices import IndexLayout
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import AxisGeometry, Geometry

NAME = "numpy"


def _pad_fill(dtype: np.dtype) -> float | int:
    """Padding for max pooling: -inf [OV-PAD-NEG-INF] (integer types: their lowest value)."""
    return float("-inf") if dtypes.is_float(dtype) else int(np.iinfo(dtype).min)


def empty_max_value(dtype: np.dtype, policy: Policy) -> float | int:
    if policy.empty_max == "zero":
        return 0
    if policy.empty_max == "lowest" or not dtypes.is_float(dtype):
        return dtypes.lowest(dtype)
    return float("-inf")


def _narrow_max(values: np.ndarray, dtype: np.dtype, geom: Geometry, policy: Policy) -> np.ndarray:
    """Max values computed in :func:`~poolcheck.spec.dtypes.compare_dtype` (float32 for
    bfloat16), back in ``dtype``: exact, every value is an input element or a fill, and empty
    windows get ``dtype``'s own fill (bfloat16's lowest is not float32's)."""
    out = dtypes.narrow_bfloat16(values) if dtype == dtypes.BFLOAT16 and values.dtype == np.float32 \
        else values.astype(dtype)
    empty = w.empty_windows(geom)
    if empty is not None:
        fill = np.asarray(empty_max_value(dtype, policy), dtype=dtype)
        out = np.where(np.broadcast_to(empty, out.shape), fill, out)
    return out


#: Bytes of accumulator per chunk of (n, c) planes: about two of one core's L2 cache. Each
#: chunk costs some 20 us of calls and views besides its passes, so fewer chunks pay off even past
#: L2: 2 MiB ran W1, W4, W5, W6 5-10% faster than 1 MiB, and W3 the same (AMD EPYC, 1 MiB L2
#: per core; 32 KiB..512 KiB were slower still).
CHUNK_BYTES = 1 << 21


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


#: Edge outputs (windows with a tap outside the input) per axis that the flat path fixes one by one.
MAX_EDGE_OUTPUTS = 16
#: Rows of at least this many elements are combined in place; shorter ones are gathered first.
CONTIGUOUS_ROW = 32
#: Below this many elements, rows are also gathered where some phase serves two taps or more: a
#: gathered phase is copied once and then read by 1-D calls, while combining in place pays a
#: ufunc call per row for each tap (W1's first axis, rows of 112, 3 taps on 2 phases: 5% faster
#: with it; W4's, 2 taps on 2 phases, is not, so it keeps its row views).
SHARED_PHASE_ROW = 128


@dataclass(frozen=True)
class _FlatPlan:
    """How :func:`_reduce_axis_flat` combines the taps along one axis (see there)."""

    stride: int
    out: int
    lo: int  #: windows [lo, hi) have every tap inside the input
    hi: int
    taps: tuple[tuple[int, int], ...]  #: (phase, row shift) of each tap that is ever inside, in order
    phases: tuple[int, ...]
    edges: tuple[tuple[int, tuple[int, ...]], ...]  #: (window, input positions of its taps inside)


@functools.lru_cache(maxsize=512)
def _flat_plan(a: AxisGeometry) -> _FlatPlan | None:
    """The plan of the flat path for axis ``a``, or None where it does not apply: the axis is
    not ``stride * out`` long, or no window or too many windows lie wholly inside the input."""
    if a.size != a.stride * a.out:
        return None
    ranges = [(lo, hi, j * a.dilation - a.pad_begin) for j in range(a.kernel)
              for lo, hi, _ in [_tap_range(a, j)] if hi > lo]
    if not ranges:
        return None
    lo, hi = max(r[0] for r in ranges), min(r[1] for r in ranges)
    edges = tuple((o, tuple(o * a.stride + off for t_lo, t_hi, off in ranges if t_lo <= o < t_hi))
                  for o in range(a.out) if not lo <= o < hi)
    if hi <= lo or len(edges) > MAX_EDGE_OUTPUTS:
        return None
    taps = tuple((off % a.stride, off // a.stride) for _, _, off in ranges)
    return _FlatPlan(a.stride, a.out, lo, hi, taps, tuple(sorted({p for p, _ in taps})), edges)


def _combine(ufunc: np.ufunc, values: list[np.ndarray], dst: np.ndarray, init: float | int) -> None:
    """``dst = values[0] (op) values[1] (op) ...`` left to right; ``init`` when there are none."""
    if not values:
        dst[...] = init
    elif len(values) == 1:
        np.copyto(dst, values[0])
    else:
        ufunc(values[0], values[1], out=dst)
        for v in values[2:]:
            ufunc(dst, v, out=dst)


_LITTLE_ENDIAN = sys.byteorder == "little"


def _gather_phase(src: np.ndarray, phase: int, stride: int, dst: np.ndarray) -> None:
    """Copy row ``phase`` of every group of ``stride`` rows of a C-contiguous ``(R, size, inner)``
    array (``size`` a multiple of ``stride``) into the 1-D ``dst``, in order.

    Where a whole group is at most 8 bytes and a row a power of two bytes, the copy is an integer
    cast: the group read as one unsigned integer and truncated to the width of a row keeps its
    lowest bytes, which on a little-endian machine are the group's first row; reading from row
    ``phase`` on makes that row ``phase``. A contiguous cast runs about twice as fast as a
    strided copy, and it moves bits (NaN payloads, -0.0) untouched. Else a strided copy."""
    rows, size, inner = src.shape
    groups = rows * size // stride
    unit = inner * src.itemsize
    if not (_LITTLE_ENDIAN and unit in (1, 2, 4) and stride * unit in (2, 4, 8) and src.flags.c_contiguous):
        grouped = src.reshape(groups, stride, inner)
        if inner == 1:  # 1-D: NumPy copies a (k, 1) array row by row
            np.copyto(dst, grouped[:, phase, 0])
        else:
            np.copyto(dst.reshape(groups, inner), grouped[:, phase, :])
        return
    flat = src.reshape(-1)
    start = phase * inner
    # The last group read from row ``phase`` on would run past the end unless ``phase`` is 0.
    whole = groups if phase == 0 else groups - 1
    packed = flat[start:start + whole * stride * inner].view(f"u{stride * unit}")
    np.copyto(dst[:whole * inner].view(f"u{unit}"), packed, casting="unsafe")
    if whole < groups:
        tail = start + whole * stride * inner
        dst[whole * inner:] = flat[tail:tail + inner]


def _reduce_axis_flat(src: np.ndarray, plan: _FlatPlan, ufunc: np.ufunc, init: float | int,
                      out: np.ndarray | None = None) -> np.ndarray:
    """Combine the taps of every window along the middle axis of a C-contiguous ``(R, size, inner)``
    array into ``out`` (C-contiguous ``(R, plan.out, inner)``, allocated when None).

    With ``size == stride * out``, tap ``j`` of window ``o`` reads input position
    ``o * stride + offset_j``: row ``o + offset_j // stride`` of *phase* ``offset_j % stride``
    (the positions congruent to it modulo the stride). So one 1-D contiguous ufunc call per tap
    covers every interior window of every plane at once. With a stride above one, each phase in
    use is first gathered into a contiguous scratch array when rows are short (a strided copy is
    far cheaper than a strided ufunc), or not long and some phase serves several taps; long rows
    are combined where they lie. The few windows
    that overhang the input, where the flat pass read a neighbouring plane, are then recomputed
    from their valid taps, in tap order.
    """
    rows, _, inner = src.shape
    s, n = plan.stride, plan.out
    if out is None:
        out = np.empty((rows, n, inner), dtype=src.dtype)
    first, last = plan.lo, (rows - 1) * n + plan.hi  # flat output rows holding every interior window
    if s == 1:
        flat = src.reshape(-1)
        views = [flat[(first + q) * inner:(last + q) * inner] for _, q in plan.taps]
        dst = out.reshape(-1)[first * inner:last * inner]
    elif inner < CONTIGUOUS_ROW or (inner < SHARED_PHASE_ROW and len(plan.taps) > len(plan.phases)):
        phases = {}
        for p in plan.phases:
            phase = _scratch(2 + p, rows * n * inner, src.dtype)
            _gather_phase(src, p, s, phase)
            phases[p] = phase
        views = [phases[p][(first + q) * inner:(last + q) * inner] for p, q in plan.taps]
        dst = out.reshape(-1)[first * inner:last * inner]
    else:  # rows long enough that a ufunc over (rows, inner) views runs at full speed
        windows = src.reshape(rows * n, s * inner)  # one row per window start: its s phases
        views = [windows[first + q:last + q, p * inner:(p + 1) * inner] for p, q in plan.taps]
        dst = out.reshape(rows * n, inner)[first:last]
    _combine(ufunc, views, dst, init)
    for o, positions in plan.edges:
        _combine(ufunc, [src[:, q, :] for q in positions], out[:, o, :], init)
    return out


def _starts_from_zero(a: AxisGeometry) -> bool:
    """Whether :func:`_reduce_axis` starts this axis's sums from the ``init`` fill (+0.0) rather
    than from its first two taps (which it does only when both cover every window)."""
    ranges = [r for r in (_tap_range(a, j) for j in range(a.kernel)) if r[1] > r[0]]
    return not (len(ranges) >= 2 and ranges[0][:2] == ranges[1][:2] == (0, a.out))


def _is_global(geom: Geometry) -> bool:
    """Whether one window covers each whole plane (and nothing else)."""
    return all(a.out == 1 and a.dilation == 1 and a.pad_begin >= 0 and a.kernel - a.pad_begin >= a.size
               for a in geom.axes)


def _plane_sums(rows: np.ndarray, dtype: np.dtype, lead: float = 0.0) -> np.ndarray:
    """``np.add.reduce(rows.astype(dtype), axis=1, initial=lead)``, bit for bit, in less time.

    That reduction starts each row's sum from ``lead`` and adds NumPy's pairwise sum of the row:
    ``lead + pairwise(x0, ..., x[m-1])`` (without ``initial``, from +0.0). ``np.add.reduceat``
    over a segment gives ``s0 + pairwise(s1, ...)`` (its first element, plus the pairwise sum of
    the rest), with far less overhead per row; so each row is copied (and widened) behind a
    ``lead`` of its own, and the segments ``[lead, x0, ..., x[m-1]]`` are reduced. The same
    additions in the same order (tests/engines/test_numpy_fast_paths.py compares the bits with
    np.add.reduce on rows of wide exponent ranges, which any other order would round
    differently). The buffer of the last shape is kept with its ``lead`` column in place
    (:func:`_lead_buffer`): a call of the same shape only copies the rows in."""
    count, m = rows.shape
    if m == 0 or count == 0:
        return np.add.reduce(rows.astype(dtype, copy=False), axis=1, initial=lead)
    buffer, body, starts = _lead_buffer(count, m, np.dtype(dtype), lead)
    np.copyto(body, rows, casting="unsafe")
    return np.add.reduceat(buffer, starts)


def _lead_buffer(count: int, m: int, dtype: np.dtype, lead: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The flat ``count * (m + 1)`` buffer of :func:`_plane_sums` with ``lead`` in front of each
    row, the ``(count, m)`` view behind the leads, and the segment starts. Kept per thread for the
    last shape up to :data:`SCRATCH_KEEP_BYTES` (the leads stay in place: nothing else writes
    there), else fresh."""
    key = (count, m, dtype, math.copysign(1.0, lead))
    kept = getattr(_kept, "plane_sums", None)
    if kept is not None and kept[0] == key:
        return kept[1]
    buffer = np.empty((count, m + 1), dtype=dtype)
    buffer[:, 0] = lead
    entry = (buffer.reshape(-1), buffer[:, 1:], _segment_starts(count, m + 1))
    if buffer.nbytes <= SCRATCH_KEEP_BYTES:
        _kept.plane_sums = (key, entry)
    return entry


@functools.lru_cache(maxsize=64)
def _segment_starts(count: int, length: int) -> np.ndarray:
    starts = np.arange(0, count * length, length)
    starts.flags.writeable = False  # cached: shared between calls
    return starts


def _chunk_planes(geom: Geometry, dtype: np.dtype) -> int:
    """How many (n, c) planes :func:`_separable` reduces at a time: at most :data:`CHUNK_BYTES`
    of them, in chunks of equal size (no short last chunk that costs a chunk's calls)."""
    plane_bytes = dtype.itemsize * math.prod(max(a.size, a.out) for a in geom.axes)
    most = max(1, CHUNK_BYTES // max(1, plane_bytes))
    planes = geom.batch * geom.channels
    chunks = max(1, -(-planes // most))
    return -(-planes // chunks)


@dataclass(frozen=True)
class _Layout:
    """What :func:`_separable` derives from the geometry alone (cached: it runs on every call)."""

    is_global: bool
    plans: tuple[_FlatPlan | None, ...]
    order: tuple[int, ...]  #: the spatial axes in the order of the passes
    step: int  #: planes per chunk
    biggest: int  #: elements of one plane at its largest between passes


@functools.lru_cache(maxsize=256)
def _layout(geom: Geometry, dtype: np.dtype, any_order: bool) -> _Layout:
    order = tuple(range(len(geom.axes)))[::1 if any_order else -1]
    extent = [a.size for a in geom.axes]
    biggest = math.prod(extent)
    for i in order:
        extent[i] = geom.axes[i].out
        biggest = max(biggest, math.prod(extent))
    return _Layout(_is_global(geom), tuple(_flat_plan(a) for a in geom.axes), order, _chunk_planes(geom, dtype),
                   biggest)


def _separable(x: np.ndarray, geom: Geometry, ufunc: np.ufunc, init: float | int, dtype: np.dtype,
               out: np.ndarray, finish: Callable[[np.ndarray, slice], None] | None = None) -> None:
    """Reduce every window in ``dtype``, one spatial axis at a time, in cache-sized chunks of
    (n, c) planes, into ``out`` (``(N * C, *out)``, C-contiguous); or, given ``finish``, call
    ``finish(chunk_result, planes)`` for each chunk of planes, which writes ``out[planes]``.
    A Python loop runs over chunks, taps and overhanging windows, never over output elements.

    Sums go last axis first, taps in order. They come out as if each axis's sums started from
    +0.0 wherever :func:`_reduce_axis` would start them so, whichever path computed them:
    ``0 + a + b + ...`` equals ``a + b + ...`` except that it is +0.0 where the latter is -0.0
    (a round-to-nearest sum is -0.0 only when both operands are), so the caller adds +0.0 to the
    sums once, before dividing them (see :func:`avg_pool`)."""
    planes = geom.batch * geom.channels
    # Sums go last axis first (the documented order), and so does a float16 max (whose scalar
    # np.maximum keeps the first of tied zeros: the row-major scan's pick). An integer max, or a
    # float32/float64 one (whose SIMD np.maximum picks either tied zero anyway), goes first axis
    # first: the long-row passes shrink the data before the short-row ones.
    any_order = ufunc is np.maximum and (dtype.kind in "iub" or dtype in (np.float32, np.float64))
    layout = _layout(geom, dtype, any_order)
    if layout.is_global:
        # Global pooling: one window covers each whole plane; a single reduction per plane.
        # (Global averages take _global_average instead.)
        result = ufunc.reduce(x.reshape(planes, -1).astype(dtype, copy=False), axis=1).reshape(out.shape)
        if finish is None:
            out[...] = result
        else:
            finish(result, slice(0, planes))
        return
    src = x.reshape((planes, *x.shape[2:]))
    plans, order, step = layout.plans, layout.order, layout.step
    direct = finish is None and out.dtype == dtype and plans[order[-1]] is not None
    # Two scratch buffers that the passes of every chunk use in turn: a small cache footprint,
    # and no fresh pages to fault in for each pass.
    buffers = [_scratch(slot, step * layout.biggest, dtype) for slot in range(2)]
    for lo in range(0, planes, step):
        chunk = slice(lo, min(planes, lo + step))
        acc = src[chunk]
        turn = 0
        if acc.dtype != dtype or not acc.flags.c_contiguous:
            # Widen once per chunk (a fast contiguous cast) rather than inside every tap's ufunc.
            widened = _take(buffers[0], acc.shape)
            np.copyto(widened, acc, casting="unsafe")
            acc, turn = widened, 1
        for i in order:
            a, plan, shape = geom.axes[i], plans[i], acc.shape
            if plan is None:
                acc = _reduce_axis(acc, a, 1 + i, ufunc, init, dtype)
                continue
            rows = math.prod(shape[:1 + i])
            if direct and i == order[-1]:  # the last pass writes the output directly
                dst = out[chunk].reshape(rows, a.out, -1)
            else:
                dst = _take(buffers[turn], (rows, a.out, math.prod(shape[2 + i:])))
                turn ^= 1
            view = acc.reshape(rows, shape[1 + i], -1)
            acc = _reduce_axis_flat(view, plan, ufunc, init, dst).reshape(*shape[:1 + i], a.out, *shape[2 + i:])
        if finish is not None:
            finish(acc, chunk)
        elif not direct:
            out[chunk] = acc


#: Scratch buffers up to this size are kept per thread between calls (fresh large arrays cost
#: page faults on every call, which dominated the passes themselves).
SCRATCH_KEEP_BYTES = 1 << 23
_kept = threading.local()


def _scratch(slot: int, size: int, dtype: np.dtype) -> np.ndarray:
    """A 1-D scratch array of ``size`` elements for ``slot``, reused by later calls in this thread
    (callers never hand one out: results are always fresh arrays)."""
    dtype = np.dtype(dtype)
    if size * dtype.itemsize > SCRATCH_KEEP_BYTES:
        return np.empty(size, dtype=dtype)
    kept: dict[tuple[int, np.dtype], np.ndarray] = _kept.__dict__.setdefault("buffers", {})
    buffer = kept.get((slot, dtype))
    if buffer is None or buffer.size < size:
        buffer = kept[(slot, dtype)] = np.empty(size, dtype=dtype)
    return buffer[:size]


def _take(buffer: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The first elements of a 1-D scratch buffer, as a C-contiguous array of ``shape``."""
    return buffer[:math.prod(shape)].reshape(shape)


def max_values(x: np.ndarray, geom: Geometry, policy: Policy = SPEC) -> np.ndarray:
    """Max pooling values only (NaN propagates, as under the ``propagate`` policy)."""
    if dtypes.compare_dtype(x.dtype) != x.dtype:
        return _narrow_max(max_values(x.astype(dtypes.compare_dtype(x.dtype)), geom, policy), x.dtype, geom, policy)
    acc = np.empty(geom.output_shape, dtype=x.dtype)
    _separable(x, geom, np.maximum, _pad_fill(x.dtype), x.dtype, acc.reshape(-1, *acc.shape[2:]))
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
    if dtypes.compare_dtype(x.dtype) != x.dtype:
        best, index = max_pool(x.astype(dtypes.compare_dtype(x.dtype)), geom, layout, policy)
        return _narrow_max(best, x.dtype, geom, policy), index
    if layout is None and policy.nan == "propagate":
        return max_values(x, geom, policy), None
    fast = _max_pool_scan(x, geom, layout)
    if fast is not None:
        return fast
    n = len(geom.axes)
    is_float = dtypes.is_float(x.dtype)
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
        assert flat is not None  # a pooling op has at least one spatial axis
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


def _max_pool_scan(x: np.ndarray, geom: Geometry,
                   layout: IndexLayout | None) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The row-major strict ``>`` scan without masked copies, or None where it cannot decide.

    Over the input padded with the type's lowest value, a running ``np.maximum`` and, per tap in
    row-major order, ``better = v > best`` give the scan's choices wherever no NaN and no float
    zero is involved: the chosen tap is the last one that was better, and since tap numbers only
    grow, it is the running maximum of ``better * tap``. It returns None, for the general scan to
    decide, where a NaN reached any window (the policies differ there), where the maximum is a
    float zero (np.maximum may return either of tied zeros), where the choice fell on padding (a
    window whose elements all equal the lowest value), or where a window has no element at all.
    """
    kernel = [a.kernel for a in geom.axes]
    if w.empty_windows(geom) is not None or x.dtype.kind not in "fiu" or math.prod(kernel) > 255:
        return None
    xp = w.padded_input(x, geom, _pad_fill(x.dtype))
    best = np.empty(geom.output_shape, dtype=x.dtype)
    chosen = np.zeros(geom.output_shape, dtype=np.uint8)
    better = np.empty(geom.output_shape, dtype=bool)
    step = np.empty(geom.output_shape, dtype=np.uint8)
    for j, offsets in enumerate(itertools.product(*(range(k) for k in kernel))):
        v = xp[(slice(None), slice(None)) + tuple(w.tap_slice(a, o) for a, o in zip(geom.axes, offsets))]
        if j == 0:
            np.copyto(best, v)
            continue
        np.greater(v, best, out=better)
        np.maximum(best, v, out=best)
        np.multiply(better.view(np.uint8), np.uint8(j), out=step)
        np.maximum(chosen, step, out=chosen)
    if dtypes.is_float(x.dtype) and (np.isnan(best).any() or (best == 0).any()):  # integers have one zero
        return None
    n = len(geom.axes)
    order = layout.order if layout is not None else "C"
    weights = [0] * n
    weight = 1
    for i in (reversed(range(n)) if order == "C" else range(n)):
        weights[i] = weight
        weight *= geom.axes[i].size
    index = np.zeros(geom.output_shape, dtype=np.int64)
    term = np.empty(geom.output_shape, dtype=np.int64)
    base = np.arange(geom.batch * geom.channels, dtype=np.int64).reshape((geom.batch, geom.channels) + (1,) * n) * weight
    rest = chosen
    for i in reversed(range(n)):  # tap numbers are row-major: the last axis varies fastest
        a = geom.axes[i]
        tap = rest % np.uint8(a.kernel)
        rest = rest // np.uint8(a.kernel)
        start = np.arange(a.out, dtype=np.int64) * a.stride - a.pad_begin
        # Windows with a tap outside the input: is the chosen tap inside?
        outside = (start < 0) | (start + (a.kernel - 1) * a.dilation >= a.size)
        if outside.any():
            where = (slice(None), slice(None)) + (slice(None),) * i + (np.flatnonzero(outside),)
            pos = w.broadcast_axis(start[outside], i, n) + tap[where].astype(np.int64) * a.dilation
            if pos.min() < 0 or pos.max() >= a.size:
                return None
        np.multiply(tap, np.int64(a.dilation * weights[i]), out=term)
        np.add(index, term, out=index)
        base = base + w.broadcast_axis(start * weights[i], i, n)
    np.add(index, base, out=index)
    if layout is None:
        return best, None
    if layout.modulus < x.size:
        np.remainder(index, layout.modulus, out=index)
    return best, index.astype(layout.dtype, copy=False)


@functools.lru_cache(maxsize=256)
def divisor(geom: Geometry, exclude_pad: bool, policy: Policy = SPEC) -> np.ndarray:
    """The per-window divisor of average pooling, broadcastable to the output.

    ONNX: divided by the number of elements, padding excluded when count_include_pad is zero
    [ONNX-DIVISOR]. With padding counted, a window that overhangs
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


@functools.lru_cache(maxsize=4)
def _chunk_divisor(geom: Geometry, exclude_pad: bool, policy: Policy, planes: int) -> np.ndarray:
    """The divisor repeated for ``planes`` planes, contiguous (a division by a broadcast operand
    runs about 1.5x slower in NumPy's loops)."""
    div = _float_divisor(geom, exclude_pad, policy)
    full = np.ascontiguousarray(np.broadcast_to(div.reshape(div.shape[1:]), (planes, *div.shape[2:])))
    full.flags.writeable = False
    return full


@dataclass(frozen=True)
class _AvgLayout:
    """What :func:`avg_pool` derives from the geometry alone (cached: it runs on every call)."""

    per_plane: np.ndarray  #: the divisor of one plane, (1, *out): broadcasts over any planes
    step: int  #: planes per chunk of :func:`_separable`
    chunked: bool  #: whether the divisor is repeated for a chunk (:func:`_chunk_divisor`)
    from_zero: bool  #: whether the sums must come out as if started from +0.0
    empty: np.ndarray | None  #: windows without a counted element (divisor 0), or None
    is_global: bool  #: one window covers each whole plane (:func:`_is_global`)
    #: Global pooling: what each plane's pairwise sum starts from. Without padding -0.0 (the
    #: identity: a plane of -0.0 alone sums to -0.0, as the C engine's sums, started from -0.0,
    #: do); where the window reaches into padding +0.0 (as the zero-padded sum would).
    lead: float
    planes: int  #: batch * channels
    output_shape: tuple[int, ...]


@functools.lru_cache(maxsize=256)
def _avg_layout(geom: Geometry, exclude_pad: bool, policy: Policy) -> _AvgLayout:
    div = _float_divisor(geom, exclude_pad, policy)
    step = _chunk_planes(geom, np.dtype(np.float64))
    is_global = _is_global(geom)
    empty = div == 0
    empty.flags.writeable = False  # cached: shared between calls
    return _AvgLayout(
        per_plane=div[0], step=step, chunked=step > 1 and step * div.size * 8 <= SCRATCH_KEEP_BYTES,
        from_zero=not is_global and any(_starts_from_zero(a) for a in geom.axes),
        empty=empty if empty.any() else None, is_global=is_global,
        lead=-0.0 if not any(a.pad_begin > 0 or a.kernel - a.pad_begin > a.size for a in geom.axes) else 0.0,
        planes=geom.batch * geom.channels, output_shape=geom.output_shape)


#: The arguments and result of the last :func:`_avg_layout_of` call (replaced whole: any thread
#: reads a consistent tuple; it holds the Geometry, so an identical object is that one).
_last_avg_layout: tuple[Geometry, Policy, bool, _AvgLayout] | None = None


def _avg_layout_of(geom: Geometry, exclude_pad: bool, policy: Policy) -> _AvgLayout:
    """:func:`_avg_layout`; a call with the same (frozen) Geometry and Policy objects as the last
    one skips hashing them (a few microseconds, a tenth of W2's time)."""
    global _last_avg_layout
    last = _last_avg_layout
    if last is not None and last[0] is geom and last[1] is policy and last[2] == exclude_pad:
        return last[3]
    layout = _avg_layout(geom, exclude_pad, policy)
    _last_avg_layout = (geom, policy, exclude_pad, layout)
    return layout


#: NumPy's floating-point warnings off for a whole call: inf + -inf is NaN, as IEEE-754 says, and
#: x / 0 is replaced by the caller. As a decorator it sets the error state per call without
#: building an errstate object each time (0.9 us instead of 2.3 us, a few percent of W2).
_quiet = np.errstate(invalid="ignore", over="ignore", divide="ignore")


@_quiet
def _global_average(x: np.ndarray, layout: _AvgLayout, policy: Policy) -> np.ndarray:
    """:func:`avg_pool` where one window covers each whole plane: the same sums (the pairwise sum
    of each plane, :func:`_plane_sums`), the same -0.0 rule, one division by the one divisor and
    one rounding, without the chunks and passes of the general path (whose fixed cost was a
    sixth of W2's time)."""
    sums = _plane_sums(x.reshape(layout.planes, -1), _FLOAT64, layout.lead)
    np.divide(sums, layout.per_plane.item(0), out=sums)
    out = (dtypes.cast(sums, x.dtype) if x.dtype == dtypes.BFLOAT16 else sums.astype(x.dtype)).reshape(layout.output_shape)
    if layout.empty is not None:
        out[...] = 0.0 if policy.empty_avg == "zero" else np.nan
    return out


_FLOAT64 = np.dtype(np.float64)

#: Input types whose float64 sums :func:`avg_pool` may give their +0.0 after the division.
_NARROW_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(dtypes.BFLOAT16))


def _holds_negative_zero(values: np.ndarray) -> bool:
    """Whether a float16/float32/bfloat16 array holds a -0.0: its bits, read as a signed integer
    of the same width, are that integer type's lowest value (one integer min, no masks)."""
    signed, lowest = _SIGNED[values.dtype.itemsize]
    return bool(values.view(signed).min() == lowest)


_SIGNED = {size: (np.dtype(f"i{size}"), np.iinfo(f"i{size}").min) for size in (2, 4)}


def _negative_zero_quotients(quotients: np.ndarray) -> np.ndarray:
    """Where float64 quotients ``sum / divisor`` of float16/float32/bfloat16 sums are -0.0, which
    is exactly where the sum was -0.0: such a sum is 0 or at least 2^-149 in magnitude (every term
    is a multiple of 2^-149 and a float64 sum below 2^-96 is exact), and a divisor counts taps
    (far below 2^900), so a nonzero sum never divides to zero in float64. ``(sum + 0.0) / d``
    therefore equals ``sum / d`` except that these -0.0 become +0.0; a nonzero quotient that
    rounds to -0.0 only in the output type keeps its sign."""
    return (quotients == 0) & np.signbit(quotients)


def avg_pool(x: np.ndarray, geom: Geometry, exclude_pad: bool, policy: Policy = SPEC) -> np.ndarray:
    """Average pooling. Sums accumulate in float64 from +0.0 (last spatial axis first, taps in
    order, taps outside the input skipped), are divided once, and rounded once to the input type.
    (Each chunk of planes is divided and rounded while it is still in cache.)"""
    layout = _avg_layout_of(geom, exclude_pad, policy)
    if layout.is_global:
        return _global_average(x, layout, policy)
    per_plane = layout.per_plane
    per_chunk = _chunk_divisor(geom, exclude_pad, policy, layout.step) if layout.chunked else per_plane
    out = np.empty(geom.output_shape, dtype=x.dtype)
    out_planes = out.reshape(geom.batch * geom.channels, *geom.output_shape[2:])
    from_zero = layout.from_zero
    # Sums of float16/float32/bfloat16 values: a zero quotient is -0.0 exactly where the sum was
    # (see _negative_zero_quotients), so the +0.0 can be added after the division, and only
    # where the rounded output holds a -0.0 at all: no pass over the sums in the common case.
    zero_after = from_zero and x.dtype in _NARROW_FLOATS
    # Integer outputs have one zero: the sign of a zero sum is lost in the rounding anyway.
    from_zero = from_zero and not zero_after and dtypes.is_float(x.dtype)

    def finish(sums: np.ndarray, planes: slice) -> None:
        if from_zero:
            # -0.0 -> +0.0, as for a sum started from +0.0 (see _separable). On the sums, not on
            # the rounded result: a nonzero sum whose quotient rounds to -0.0 in the output type
            # (-2^-148 / 6 in float32) keeps its sign.
            np.add(sums, 0.0, out=sums)
        np.divide(sums, per_chunk[:len(sums)] if len(sums) <= len(per_chunk) else per_plane, out=sums)
        out_planes[planes] = dtypes.cast(sums, out.dtype) if out.dtype == dtypes.BFLOAT16 else sums
        if zero_after and _holds_negative_zero(out_planes[planes]):
            out_planes[planes][_negative_zero_quotients(sums)] = 0.0

    # inf + -inf is NaN, as IEEE-754 says; x / 0 is replaced below
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        _separable(x, geom, np.add, 0.0, np.dtype(np.float64), out_planes, finish)
    if layout.empty is not None:
        out[np.broadcast_to(layout.empty, out.shape)] = 0.0 if policy.empty_avg == "zero" else np.nan
    return out
