"""Max indices re-encoded in another layout (order, scope, padded coordinates) and the index a
window wholly in padding reports under each empty-window rule."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.dtypes import BFLOAT16, finfo
from poolcheck.spec.indices import index_layout
from poolcheck.spec.shape import Geometry


def encode_indices(canon: np.ndarray, shape: tuple[int, ...], order: str, modulus: int,
                   pads: tuple[tuple[int, ...], tuple[int, ...]] | None = None) -> np.ndarray:
    """Re-encode whole-tensor row-major indices (``-1`` = no element) in another layout:
    spatial ``order``, ``modulus``, and optionally coordinates in the padded input."""
    if order == TRANSPOSED:
        return _transpose_spatial(encode_indices(canon, shape, "C", modulus, pads))
    if order == "C" and pads is None and canon.dtype == np.int64:
        # row-major within the planes, unpadded: the flat index itself, wrapped by the scope
        return np.where(canon >= 0, canon % modulus, canon) if modulus != math.prod(shape) else canon.copy()
    spatial = shape[2:]
    plane = math.prod(spatial)
    valid = canon >= 0
    nc, sp = np.divmod(np.where(valid, canon, 0), plane)
    sizes = spatial
    outside = None  # elements a negative pad crops away: no coordinate in the padded input
    if order != "C" or pads is not None:
        coords = list(np.unravel_index(sp, spatial))
        if pads is not None:
            coords = [c + b for c, b in zip(coords, pads[0])]
            sizes = tuple(max(1, s + b + e) for s, b, e in zip(spatial, pads[0], pads[1]))
            outside = np.logical_or.reduce([(c < 0) | (c >= n) for c, n in zip(coords, sizes)])
            coords = [np.where(outside, 0, c) for c in coords]
        sp = np.ravel_multi_index(tuple(coords), sizes, order=order)  # type: ignore[call-overload]
    full = nc * math.prod(sizes) + sp
    whole = math.prod(shape)
    if pads is not None:
        # the same scope (whole tensor, or from ``axis`` on) measured in the padded shape
        first = next((i for i in range(len(shape)) if math.prod(shape[i:]) == modulus), 0)
        modulus = math.prod((*shape[:2], *sizes)[first:])
        whole = math.prod((*shape[:2], *sizes))
    # a whole-tensor index is not wrapped (an empty window's index may lie past the input)
    encoded = np.where(valid, full % modulus if modulus != whole else full, canon)
    if outside is not None and (outside & valid).any():
        encoded[outside & valid] = NO_INDEX  # no padded coordinate: no peer's index matches it
    return encoded


#: An index no peer reports (the lowest int64): where a layout has no index for an element.
NO_INDEX = int(np.iinfo(np.int64).min)


#: Index "order" of a peer that writes row-major indices into a tensor whose spatial axes are
#: reversed (OpenVINO's ONNX frontend maps storage_order=1 to a Transpose of the index output).
TRANSPOSED = "T"


def _palindromic(geom: Geometry) -> bool:
    """The output's spatial shape reads the same reversed (a transposed index tensor keeps it)."""
    out = tuple(a.out for a in geom.axes)
    return len(out) > 1 and out == out[::-1]


def _transpose_spatial(a: np.ndarray) -> np.ndarray:
    """``a`` with its spatial axes reversed; where that changes the shape, no index can match
    (the lowest int64, which no peer reports)."""
    t = np.transpose(a, (0, 1, *range(a.ndim - 1, 1, -1)))
    return t if t.shape == a.shape else np.full_like(a, NO_INDEX)


def _spec_order_modulus(spec: PoolSpec, shape: tuple[int, ...]) -> tuple[str, int]:
    lay = index_layout(spec, shape)
    return lay.order, lay.modulus


def empty_index_fill(key: str, out_shape: tuple[int, ...], shape: tuple[int, ...], geom: Geometry,
                     crop: tuple[tuple[int, int], ...] | None = None, order: str = "C") -> np.ndarray:
    """Whole-tensor index an empty-window rule reports at every output position, flattened in
    ``order`` (used only where the reference has no element): per-axis coordinates, flattened
    without a bounds check. ``-1-per-axis`` is ONNX Runtime's (coordinate -1 on every axis);
    ``first-tap`` is PyTorch's scan start ``o * stride - pad_begin``, moved up by whole dilations
    while negative."""
    start = _plane_start(out_shape, shape)
    spatial = shape[2:]
    if key == "empty_index=0":
        return start
    n = len(spatial)
    strides = [math.prod(spatial[i + 1:]) if order == "C" else math.prod(spatial[:i]) for i in range(n)]
    if key == "empty_index=-1-per-axis":
        return start - sum(strides)
    total = np.zeros((1, 1) + (1,) * n, dtype=np.int64)
    for i, a in enumerate(geom.axes):
        first = np.arange(a.out, dtype=np.int64) * a.stride - a.pad_begin
        first = np.where(first < 0, first + (-first + a.dilation - 1) // a.dilation * a.dilation, first)
        if crop is not None:
            first = first + crop[i][0]
        total = total + w.broadcast_axis(first * strides[i], i, n)
    return start + total


#: PyTorch's channels_last max_pool3d start-index rule (``compute_internal`` in
#: aten/src/ATen/native/cpu/MaxPoolKernel.cpp): see :func:`depthless_tail_start`.
DEPTHLESS_TAIL = "index:depthless-tail-start"
#: Bytes of the vector that kernel fills per step (measured on PyTorch 2.13 CPU, AVX512 machine:
#: 32 lanes of int8/uint8, 16 of float16, 8 of float32, 4 of float64).
TAIL_VECTOR_BYTES = 32


def depthless_tail_applies(shape: tuple[int, ...]) -> bool:
    """PyTorch runs its channels_last kernel on a 3-D pooling input with more than one channel and
    more than one spatial element (otherwise the tensor is also contiguous and the NCDHW kernel runs)."""
    return len(shape) == 5 and shape[1] > 1 and math.prod(shape[2:]) > 1


def _lowest_chosen(x: np.ndarray, canon: np.ndarray) -> np.ndarray:
    """Where the chosen element (``canon``, whole-tensor row-major) holds the type's lowest value
    (-inf for a float): no element of that window beats a scan started from it."""
    flat = np.asarray(x).reshape(-1)
    got = flat[np.clip(canon, 0, max(flat.size - 1, 0))]
    low = np.iinfo(flat.dtype).min if flat.dtype.kind in "iu" else -np.inf
    return (canon >= 0) & (got.astype(np.float64) == float(low))


def depthless_tail_start(canon: np.ndarray, shape: tuple[int, ...], geom: Geometry, x: np.ndarray,
                         crop: tuple[tuple[int, int], ...] | None = None) -> np.ndarray:
    """Whole-tensor row-major indices as PyTorch's channels_last max_pool3d reports them: each
    window's scan starts from the type's lowest value at its first tap at or after coordinate 0
    on every axis and only a greater element (or NaN) replaces it, so a window whose elements all
    equal the lowest value, or that holds none, reports that start. The channels past the last
    whole vector of :data:`TAIL_VECTOR_BYTES` (every channel when C is below that many elements)
    start from ``h0 * W + w0``, without the depth term ``d0 * H * W`` the vector lanes get."""
    start = np.broadcast_to(empty_index_fill("empty_index=first-tap", canon.shape, shape, geom, crop, "C"),
                            canon.shape).copy()
    lanes = max(1, TAIL_VECTOR_BYTES // np.asarray(x).dtype.itemsize)
    channels = shape[1]
    tail = np.arange(channels) >= channels - channels % lanes
    a = geom.axes[0]
    first = np.arange(a.out, dtype=np.int64) * a.stride - a.pad_begin
    first = np.where(first < 0, first + (-first + a.dilation - 1) // a.dilation * a.dilation, first)
    if crop is not None:
        first = first + crop[0][0]
    depth = w.broadcast_axis(first * math.prod(shape[3:]), 0, 3)
    start = start - np.where(tail.reshape(1, -1, 1, 1, 1), depth, 0)
    return np.where((canon < 0) | _lowest_chosen(x, canon), start, canon)


def encode_with_fill(canon: np.ndarray, shape: tuple[int, ...], order: str, modulus: int,
                     pads: tuple[tuple[int, ...], tuple[int, ...]] | None, fill: str | None, geom: Geometry,
                     crop: tuple[tuple[int, int], ...] | None = None, x: np.ndarray | None = None) -> np.ndarray:
    """:func:`encode_indices`, with the windows holding no element (``canon < 0``) reporting what
    the empty-window rule ``fill`` gives, in the same ``order`` and ``modulus`` (a negative index
    is not wrapped). :data:`DEPTHLESS_TAIL` also rewrites windows whose chosen element of ``x``
    is the lowest value (:func:`depthless_tail_start`)."""
    if order == TRANSPOSED:
        return _transpose_spatial(encode_with_fill(canon, shape, "C", modulus, pads, fill, geom, crop, x))
    if fill == DEPTHLESS_TAIL:
        if x is None or not depthless_tail_applies(shape):
            fill = "empty_index=first-tap"  # PyTorch's NCDHW kernel: the plain scan start
        else:
            return encode_indices(depthless_tail_start(canon, shape, geom, x, crop), shape, order, modulus, pads)
    encoded = encode_indices(canon, shape, order, modulus, pads)
    if fill is None or not (canon < 0).any():
        return encoded
    if fill == "empty_index=first-tap":
        # PyTorch flattens row-major per plane; that number then goes through the same layout
        # conversion as any index (storage order, axis)
        f = np.broadcast_to(empty_index_fill(fill, canon.shape, shape, geom, crop, "C"), canon.shape)
        return np.where(canon < 0, encode_indices(f, shape, order, modulus, pads), encoded)
    # ONNX Runtime flattens the coordinates -1 in its own storage order
    f = np.broadcast_to(empty_index_fill(fill, canon.shape, shape, geom, crop, order), canon.shape)
    if modulus != math.prod(shape):
        f = np.where(f >= 0, f % modulus, f)
    return np.where(canon < 0, f, encoded)


def renumber_planes(canon: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Whole-tensor indices with their (n, c) plane numbered ``c * N + n`` instead of ``n * C +
    c`` (``-1``, no element, stays)."""
    plane = math.prod(shape[2:])
    valid = canon >= 0
    nc, sp = np.divmod(np.where(valid, canon, 0), plane)
    n, c = np.divmod(nc, shape[1])
    return np.where(valid, (c * shape[0] + n) * plane + sp, canon)


def _plane_start(out_shape: tuple[int, ...], in_shape: tuple[int, ...]) -> np.ndarray:
    """Whole-tensor index of element 0 of each output position's (n, c) plane."""
    grid = np.indices(out_shape[:2]).reshape(2, *out_shape[:2], *(1,) * (len(out_shape) - 2))
    return (grid[0] * in_shape[1] + grid[1]) * math.prod(in_shape[2:])


def window_offset_indices(spec: PoolSpec, x: np.ndarray, geom: Geometry, canon: np.ndarray) -> np.ndarray:
    """Max indices as onnx.reference 1.23 computes them on its MaxPool path for strides and
    dilations 1 (``_op_common_pool.py``: ``_pool`` with ``indices``): ``np.argmax`` over the
    window's values with NaN (padding, or a NaN element) replaced by the smallest other value and,
    as ``np.nan_to_num`` also does, +-inf by the type's largest finite magnitude (a window holding
    FLT_MAX before inf reports FLT_MAX's place; a bfloat16 window is left as it is, so its first
    NaN tap wins: :func:`_first_nan_tap`) --
    the rank of the chosen element among the window's taps (row-major; for a 1-D or 3-D input only
    the taps inside the input, the window cut short at its end; for a 2-D input every tap of the
    padded input), or rank 0 when the window's numbers are all equal (an unsigned integer input:
    when its largest is 0, the padding being NaN cast to 0) -- unraveled with the OUTPUT's
    spatial shape (``_get_indices``: no bound on the first axis), plus the output position minus
    the explicit ``pads_begin``, flattened row-major within the (n, c) plane without a bounds check
    (``_get_index``). In 1-D: the position minus ``pads_begin``. Windows start where ``geom`` puts
    them; one reaching past the padded input is never computed (-1: a 2-D ceil_mode output sized
    with the pads counted twice). A window wholly in padding is computed like any other (rank 0) in
    an unsigned integer input; in a float one it raises, in a signed integer one the padding does.
    ``canon`` is whole-tensor row-major (``-1``: no element)."""
    shape = tuple(x.shape)
    spatial = shape[2:]
    n = len(spatial)
    out = canon.shape[2:]
    valid = canon >= 0
    coords = np.unravel_index(np.where(valid, canon, 0) % math.prod(spatial), spatial)
    pos = np.indices(out).reshape(n, 1, 1, *out)
    starts = [pos[i] * a.stride - a.pad_begin for i, a in enumerate(geom.axes)]
    touched = np.zeros(canon.shape, dtype=bool)
    if x.dtype == BFLOAT16:  # nothing replaced: the first NaN wins, an infinity is itself
        first, touched = _first_nan_tap(x, geom, starts)
        coords = tuple(np.where(touched, c, k) for c, k in zip(first, coords))
    elif x.dtype.kind == "f" and bool(np.isinf(x).any()):  # where a window holds an infinity
        clipped, touched = _first_clipped_max(x, geom, starts)
        coords = tuple(np.where(touched, c, k) for c, k in zip(clipped, coords))
    arg = np.zeros(canon.shape, dtype=np.int64)
    for i, a in enumerate(geom.axes):
        # the taps ranked on axis i: those inside the input (1-D, 3-D) or the whole kernel (2-D)
        ranked = a.kernel if n == 2 else np.minimum(a.kernel, a.size - starts[i])
        arg = arg * ranked + (coords[i] - starts[i])
    if x.dtype.kind == "u":
        # np.pad casts the padding's NaN to 0 here: a tap like any other, so the first tap (rank
        # 0) wins where the window's largest is 0 or it holds no element, the first largest else
        largest = x.reshape(-1)[np.where(valid, canon, 0)]
        arg = np.where(~valid | (largest == 0), 0, arg)
    else:  # NaN padding (a float window with no number raises; a signed integer input's padding does)
        arg = np.where(_numbers_all_equal(x, geom, starts) & ~touched, 0, arg)
    pads_begin = spec.pads_begin if spec.auto_pad == "explicit" else (0,) * n
    index = np.zeros(canon.shape, dtype=np.int64)
    for i in range(n - 1, -1, -1):  # _get_indices: the last axes by remainder, the first takes the rest
        part = arg % out[i] if i > 0 else arg
        arg = arg // out[i]
        index = index + (part + pos[i] - pads_begin[i]) * math.prod(spatial[i + 1:])
    # a window reaching past the padded input is one the runtime never computes (its -1 stays)
    computed = np.logical_and.reduce([s + a.dilated_kernel <= a.size + a.pad_end for s, a in zip(starts, geom.axes)])
    index = np.where(computed, index, -1)
    # in the spec's layout, as an ONNX adapter reads an ONNX index (a whole-tensor one, in the
    # storage order the spec spells): an ``axis`` scope wraps it (a negative one passes)
    modulus = _spec_order_modulus(spec, shape)[1]
    return np.where(index >= 0, index % modulus, index) if modulus != math.prod(shape) else index


def _clipped(x: np.ndarray) -> np.ndarray:
    """``x`` in float64 with +-inf as ``np.nan_to_num`` replaces them: the type's largest finite
    magnitude (NaN kept)."""
    v = x.astype(np.float64)
    if x.dtype.kind != "f":
        return v
    big = float(finfo(x.dtype).max)
    return np.where(np.isposinf(v), big, np.where(np.isneginf(v), -big, v))


def _tap(geom: Geometry, starts: list[np.ndarray],
         j: tuple[int, ...]) -> tuple[np.ndarray, tuple[Any, ...], list[np.ndarray]]:
    """Tap ``j`` of every window (``starts``: per axis, the windows' first coordinates): where it
    lies inside the input, an index reading it (clipped into the input), its coordinates."""
    idx = [(s + k * a.dilation)[0, 0] for s, k, a in zip(starts, j, geom.axes)]
    inside = np.logical_and.reduce([(q >= 0) & (q < a.size) for q, a in zip(idx, geom.axes)])
    return inside, (slice(None), slice(None), *(np.clip(q, 0, a.size - 1) for q, a in zip(idx, geom.axes))), idx


def _first_nan_tap(x: np.ndarray, geom: Geometry, starts: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """Per output position: the coordinates of the window's first NaN tap (a NaN element; for a
    2-D input also a padded tap), ranked as :func:`window_offset_indices` says, and where there is
    one. ``np.nan_to_num`` leaves a bfloat16 window as it is (ml_dtypes' type is no NumPy float),
    so onnx.reference's ``np.argmax`` meets the NaN and picks its first."""
    raw = x.astype(np.float64)
    shape = (*x.shape[:2], *(a.out for a in geom.axes))
    two_d = len(geom.axes) == 2
    found = np.zeros(shape, dtype=bool)
    coords = [np.zeros(shape, dtype=np.int64) for _ in geom.axes]
    for j in np.ndindex(*(a.kernel for a in geom.axes)):
        inside, where, idx = _tap(geom, starts, j)
        nan = (~inside if two_d else np.zeros(shape, dtype=bool)) | (inside & np.isnan(raw[where]))
        first = nan & ~found
        coords = [np.where(first, q, c) for q, c in zip(idx, coords)]
        found |= first
    return coords, found


def _first_clipped_max(x: np.ndarray, geom: Geometry,
                       starts: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """Per output position whose window holds an infinity: the coordinates of the tap
    onnx.reference's ``np.argmax`` picks after ``np.nan_to_num(window, nan=m)``, ``m`` the
    window's smallest number. The masks are taken before the replacements, so a NaN tap (a NaN
    element; for a 2-D input also a padded tap) gets ``m`` itself, even when ``m`` is an
    infinity, while the numbers' infinities become the type's largest finite magnitude: a window
    of +inf and padding picks its first padded tap. The taps are ranked as
    :func:`window_offset_indices` says (a 1-D or 3-D window only inside the input). Also returns
    where a window holds an infinity (elsewhere nothing moves)."""
    v, raw = _clipped(x), x.astype(np.float64)
    shape = (*x.shape[:2], *(a.out for a in geom.axes))
    two_d = len(geom.axes) == 2
    taps = list(np.ndindex(*(a.kernel for a in geom.axes)))

    def at(j: tuple[int, ...]) -> tuple[np.ndarray, tuple[Any, ...], list[np.ndarray]]:
        return _tap(geom, starts, j)

    low = np.full(shape, np.inf)
    touched = np.zeros(shape, dtype=bool)
    for j in taps:
        inside, where, _ = at(j)
        number = inside & ~np.isnan(raw[where])
        low = np.where(number, np.minimum(low, raw[where]), low)
        touched |= inside & np.isinf(raw[where])
    best = np.full(shape, np.nan)
    coords = [np.zeros(shape, dtype=np.int64) for _ in geom.axes]
    for j in taps:
        inside, where, idx = at(j)
        nan = ~inside if two_d else np.zeros(shape, dtype=bool)
        nan = nan | (inside & np.isnan(raw[where]))
        value = np.where(nan, low, v[where])
        ranked = inside | two_d
        better = ranked & (np.isnan(best) | (value > best))
        best = np.where(better, value, best)
        coords = [np.where(better, q, c) for q, c in zip(idx, coords)]
    return coords, touched


def _numbers_all_equal(x: np.ndarray, geom: Geometry, starts: list[np.ndarray]) -> np.ndarray:
    """Per output position: the window's input elements other than NaN are all equal (its
    largest is its smallest), so NaN replaced by the smallest ties with the largest (a window
    holding an infinity: :func:`_first_clipped_max`)."""
    v = x.astype(np.float64)
    lo = np.full((*x.shape[:2], *(a.out for a in geom.axes)), np.inf)
    hi = -lo
    for taps in np.ndindex(*(a.kernel for a in geom.axes)):
        idx = [(s + j * a.dilation)[0, 0] for s, j, a in zip(starts, taps, geom.axes)]  # each: the output's shape
        inside = np.logical_and.reduce([(q >= 0) & (q < a.size) for q, a in zip(idx, geom.axes)])
        got = v[(slice(None), slice(None), *(np.clip(q, 0, a.size - 1) for q, a in zip(idx, geom.axes)))]
        ok = inside & ~np.isnan(got)
        lo = np.where(ok, np.minimum(lo, got), lo)
        hi = np.where(ok, np.maximum(hi, got), hi)
    return lo == hi
