"""The NumPy engine's flat separable passes (issue 14) on geometries chosen to reach each of
them: stride-1 shifts, gathered phases (stride > 1, short rows), row views (stride > 1, long
rows), overhanging windows fixed one by one, and the strided fallback (an axis that is not
``stride * out`` long, or too many overhanging windows). Max pooling is checked against the loop
oracle (tests/oracle.py) -- bit for bit for float16 and integers, as numbers for float32/float64
(the documented values-only exception) -- and averages of quarter-integers, whose float64 sums
are exact, bit for bit; both also against the C engine's bits where it is built."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import oracle
import pytest

import poolcheck
from poolcheck import spec as S
from poolcheck.engines import c_engine, numpy_engine

# (spatial shape, kernel, strides, pads_begin, pads_end, dilations, rounding): the axes' paths
GEOMETRIES = [
    ((12, 40), [3, 3], [2, 2], [1, 1], [1, 1], [1, 1], "floor"),  # W1: phases (last) + row views (first)
    ((14, 13), [3, 3], [1, 1], [2, 2], [2, 2], [2, 2], "floor"),  # W6: stride-1 shifts, 4 edges per axis
    ((4, 8, 64), [2, 2, 2], [2, 2, 2], [0, 0, 0], [0, 0, 0], [1, 1, 1], "floor"),  # W4: no edges
    ((64,), [4], [4], [0], [0], [1], "floor"),  # W5
    ((9, 10), [3, 3], [1, 1], [1, 1], [1, 1], [1, 1], "floor"),  # W3 (exclude pads below)
    ((11, 12), [3, 2], [2, 3], [1, 0], [1, 2], [1, 1], "ceil"),  # 11 is not 2 * out: strided fallback
    ((40,), [9], [1], [20], [20], [3], "floor"),  # more overhanging windows than the flat path fixes
    ((6, 33), [2, 3], [3, 1], [0, 1], [1, 1], [1, 1], "floor"),  # mixed: fallback axis, flat axis
    ((3, 3), [3, 3], [1, 1], [2, 2], [2, 2], [1, 1], "floor"),  # windows of padding only at the ends
]


def _input(rng: np.random.Generator, spatial: tuple[int, ...], dtype: str, batch: int = 2) -> np.ndarray:
    """Small integers (ties everywhere) with -0.0, NaN and -inf planted for float types."""
    x = rng.integers(-3, 4, size=(batch, 3, *spatial)).astype(dtype)
    if x.dtype.kind == "f":
        flat = x.reshape(-1)
        flat[rng.random(flat.size) < 0.2] = -0.0
        flat[rng.integers(0, flat.size, 3)] = np.nan
        flat[rng.integers(0, flat.size, 2)] = -np.inf
    return x


def _plans(spatial: tuple[int, ...], kernel: list[int], strides: list[int], pb: list[int], pe: list[int],
           dil: list[int], rounding: str) -> list[Any]:
    spec = S.openvino_max_pool(kernel, strides, pb, pe, dil, rounding)
    return [numpy_engine._flat_plan(a) for a in S.resolve(spec, (1, 1, *spatial)).axes]


def test_geometries_reach_every_path() -> None:
    """The list above does reach both the flat passes and the fallback, and the fix-ups."""
    plans = [p for g in GEOMETRIES for p in _plans(*g)]
    assert any(p is None for p in plans) and any(p is not None and p.edges for p in plans)
    assert any(p is not None and p.stride == 1 for p in plans)
    assert any(p is not None and p.stride > 1 for p in plans)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.all(
        (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")) | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: f"{g[0]}-k{g[1]}-s{g[2]}")
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int16"])
def test_max_values_match_oracle(geometry: tuple[Any, ...], dtype: str) -> None:
    spatial, kernel, strides, pb, pe, dil, rounding = geometry
    rng = np.random.default_rng(len(spatial) * 1000 + sum(spatial))
    x = _input(rng, spatial, dtype)
    attrs = dict(kernel=kernel, strides=strides, pads_begin=pb, pads_end=pe, dilations=dil, rounding_type=rounding)
    got = poolcheck.max_pool(x, **attrs, engine="numpy")
    want = oracle.openvino_max_pool(x, **attrs)
    got_v, want_v = np.asarray(got[0]), np.asarray(want[0])
    if dtype in ("float32", "float64"):  # tied zeros may come out with either sign (documented)
        assert got_v.dtype == want_v.dtype and np.array_equal(got_v, want_v, equal_nan=True)
    else:
        assert same_bits(got_v, want_v)
    if c_engine.AVAILABLE:
        geom = S.resolve(S.openvino_max_pool(kernel, strides, pb, pe, dil, rounding), x.shape)
        c_values, _ = c_engine.max_pool(x, geom, None)
        assert np.array_equal(c_values, got_v, equal_nan=True)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: f"{g[0]}-k{g[1]}-s{g[2]}")
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("exclude_pad", [False, True])
def test_averages_match_oracle_and_c(geometry: tuple[Any, ...], dtype: str, exclude_pad: bool) -> None:
    spatial, kernel, strides, pb, pe, dil, rounding = geometry
    if dil != [1] * len(dil):
        pytest.skip("OpenVINO AvgPool has no dilations")
    rng = np.random.default_rng(len(spatial) * 7 + sum(spatial))
    # Quarter-integers: every float64 sum is exact, so the rounded quotient is fully determined.
    x = (rng.integers(-8, 9, size=(2, 3, *spatial)) / 4).astype(dtype)
    spec = S.openvino_avg_pool(kernel, strides, pb, pe, exclude_pad, rounding)
    geom = S.resolve(spec, x.shape)
    got = numpy_engine.avg_pool(x, geom, exclude_pad)
    attrs = dict(kernel=kernel, strides=strides, pads_begin=pb, pads_end=pe, exclude_pad=exclude_pad,
                 rounding_type=rounding)
    assert same_bits(got, np.asarray(oracle.openvino_avg_pool(x, **attrs)))
    if c_engine.AVAILABLE and dtype != "float16":
        assert same_bits(got, c_engine.avg_pool(x, geom, exclude_pad))


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: f"{g[0]}-k{g[1]}-s{g[2]}")
def test_average_specials_match_c_bits(geometry: tuple[Any, ...]) -> None:
    """NaN, +-inf and all--0.0 windows: the sign of a zero sum follows the documented order."""
    spatial, kernel, strides, pb, pe, _, rounding = geometry
    if not c_engine.AVAILABLE:
        pytest.skip(f"C engine: {c_engine.UNAVAILABLE_REASON}")
    rng = np.random.default_rng(sum(spatial))
    for fill in (None, -0.0):
        x = _input(rng, spatial, "float32", batch=5)
        if fill is not None:
            x[...] = fill
        for exclude_pad in (False, True):
            geom = S.resolve(S.openvino_avg_pool(kernel, strides, pb, pe, exclude_pad, rounding), x.shape)
            assert same_bits(numpy_engine.avg_pool(x, geom, exclude_pad), c_engine.avg_pool(x, geom, exclude_pad))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_a_nonzero_sum_whose_average_underflows_keeps_its_sign(dtype: str, rank: int) -> None:
    """"divided by the number of elements", rounded once: windows of 3 (one padded tap counted)
    over [s, -0.0], s the smallest negative subnormal, sum to s and average to s / 3, which rounds
    to -0.0. A sum started from +0.0 turns only a zero sum into +0.0, not a nonzero one whose
    quotient then rounds to zero (the NumPy engine once gave +0.0 here)."""
    tiny = -np.finfo(np.dtype(dtype)).smallest_subnormal
    x = np.full((1, 2, *[1] * (rank - 1), 2), -0.0, dtype=dtype)
    x[:, 0, ..., 0] = tiny  # channel 1 holds zeros only: its sums are +0.0 (from +0.0), then +0.0
    ones, zeros = [1] * (rank - 1), [0] * (rank - 1)
    attrs = dict(kernel=[*ones, 3], strides=[*ones, 1], pads_begin=[*zeros, 1], pads_end=[*zeros, 1])
    geom = S.resolve(S.openvino_avg_pool(attrs["kernel"], attrs["strides"], attrs["pads_begin"],
                                         attrs["pads_end"], False), x.shape)
    got = numpy_engine.avg_pool(x, geom, False)
    assert got.dtype == np.dtype(dtype) and got.shape == x.shape
    assert np.all(got[:, 0] == 0) and np.all(np.signbit(got[:, 0])), got  # -0.0: the sign of the sum
    assert np.all(got[:, 1] == 0) and not np.any(np.signbit(got[:, 1])), got
    assert same_bits(got, np.asarray(oracle.openvino_avg_pool(x, **attrs, exclude_pad=False)))
    if c_engine.AVAILABLE:
        assert same_bits(got, c_engine.avg_pool(x, geom, False))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_global_average_of_negative_zeros_keeps_the_sign(dtype: str) -> None:
    """One window over each whole plane: a plane of -0.0 alone sums to -0.0 (IEEE-754: x + y is
    -0.0 only when both are) and averages to -0.0; with padding counted the sum starts from
    +0.0 (the padded zeros) and gives +0.0; a plane with a +0.0, or whose terms cancel, gives
    +0.0. (np.add.reduce starts its pairwise sums from +0.0: the NumPy engine once gave +0.0
    for the first.)"""
    x = np.full((1, 4, 2, 3), -0.0, dtype=dtype)
    x[0, 1, 1, 2] = 0.0
    x[0, 2, 0, :2] = [1.0, -1.0]
    x[0, 3] = -np.finfo(np.dtype(dtype)).smallest_subnormal
    want_sign = {False: [True, False, False, True], True: [False, False, False, True]}
    for padded in (False, True):
        pb = [1, 0] if padded else [0, 0]
        geom = S.resolve(S.openvino_avg_pool([2 + pb[0], 3], [1, 1], pb, [0, 0], False), x.shape)
        assert numpy_engine._is_global(geom)
        got = numpy_engine.avg_pool(x, geom, False)
        assert got.shape == (1, 4, 1, 1)
        assert np.signbit(got.reshape(-1)).tolist() == want_sign[padded], got.reshape(-1)
        if c_engine.AVAILABLE:
            assert same_bits(got, c_engine.avg_pool(x, geom, False))


def test_non_contiguous_and_chunked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A strided input view, and chunks of a single plane (many chunks, a short last one)."""
    monkeypatch.setattr(numpy_engine, "CHUNK_BYTES", 1)
    rng = np.random.default_rng(5)
    base = _input(rng, (12, 80), "float32", batch=3)
    x = base[:, :, :, ::2]
    assert not x.flags.c_contiguous
    attrs = dict(kernel=[3, 3], strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1])
    got = poolcheck.max_pool(x, **attrs, engine="numpy")[0]
    assert np.array_equal(got, oracle.openvino_max_pool(x, **attrs)[0], equal_nan=True)
    q = (rng.integers(-8, 9, size=(3, 5, 12, 40)) / 4).astype(np.float32)[:, :, :, ::2]
    geom = S.resolve(S.openvino_avg_pool([3, 3], [1, 1], [1, 1], [1, 1], True), q.shape)
    want = oracle.openvino_avg_pool(q, kernel=[3, 3], strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                                    exclude_pad=True)
    assert same_bits(numpy_engine.avg_pool(q, geom, True), np.asarray(want))


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: f"{g[0]}-k{g[1]}-s{g[2]}")
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint8"])
@pytest.mark.parametrize("kind", ["distinct", "ties", "lowest"])
def test_indices_scan_matches_oracle(geometry: tuple[Any, ...], dtype: str, kind: str) -> None:
    """Max pooling with indices: the masked-copy-free scan where it decides (distinct values, and
    ties away from zero), the general scan where it does not (zeros, NaN, the lowest value at the
    border, which the padding equals): values and indices bit for bit, every index layout."""
    spatial, kernel, strides, pb, pe, dil, rounding = geometry
    rng = np.random.default_rng(sum(spatial) + len(kind))
    shape = (2, 3, *spatial)
    if kind == "distinct":
        x = (rng.permutation(int(np.prod(shape))) % 100 + 1).reshape(shape).astype(dtype)
    elif kind == "ties":
        x = rng.integers(1, 4, size=shape).astype(dtype)
    else:
        x = rng.integers(1, 4, size=shape).astype(dtype)
        low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        x[..., :2] = low  # border windows whose elements all equal the padding
        if x.dtype.kind == "f":
            x.reshape(-1)[::7] = 0.0
            x.reshape(-1)[5] = np.nan
    spec = S.openvino_max_pool(kernel, strides, pb, pe, dil, rounding)
    geom = S.resolve(spec, x.shape)
    decided = numpy_engine._max_pool_scan(x, geom, S.index_layout(spec, x.shape))
    if kind != "lowest" and numpy_engine.w.empty_windows(geom) is None:
        assert decided is not None  # the fast scan is what these inputs exercise
    for axis in (0, 2):
        attrs = dict(kernel=kernel, strides=strides, pads_begin=pb, pads_end=pe, dilations=dil,
                     rounding_type=rounding, axis=axis)
        got = poolcheck.max_pool(x, **attrs, engine="numpy")
        want = oracle.openvino_max_pool(x, **attrs)
        assert same_bits(np.asarray(got[0]), np.asarray(want[0]))
        assert np.array_equal(np.asarray(got[1]), np.asarray(want[1])) and got[1].dtype == want[1].dtype
    onnx = dict(kernel_shape=kernel, strides=strides, pads=pb + pe, dilations=dil, ceil_mode=int(rounding == "ceil"),
                storage_order=1)
    if len(spatial) >= 2 and rounding == "floor":
        got = poolcheck.onnx_max_pool(x, **onnx, engine="numpy")
        want = oracle.onnx_max_pool(x, **onnx)
        assert same_bits(np.asarray(got[0]), np.asarray(want[0]))
        assert np.array_equal(np.asarray(got[1]), np.asarray(want[1]))


def test_threads_keep_their_own_scratch() -> None:
    """Scratch buffers are kept between calls per thread: concurrent calls on different inputs
    and geometries still give each caller its own answer."""
    rng = np.random.default_rng(11)
    jobs = []
    for i, geometry in enumerate(GEOMETRIES[:5]):
        spatial, kernel, strides, pb, pe, dil, rounding = geometry
        x = rng.standard_normal((3, 4, *spatial)).astype(np.float32)
        if i % 2:
            spec = S.openvino_avg_pool(kernel, strides, pb, pe, True, rounding)
            geom = S.resolve(spec, x.shape)
            jobs.append(lambda x=x, geom=geom: numpy_engine.avg_pool(x, geom, True))
        else:
            spec = S.openvino_max_pool(kernel, strides, pb, pe, dil, rounding)
            geom = S.resolve(spec, x.shape)
            jobs.append(lambda x=x, geom=geom: numpy_engine.max_pool(x, geom, None)[0])
    expected = [job() for job in jobs]
    failures: list[int] = []

    def worker(k: int) -> None:
        for _ in range(20):
            for i, job in enumerate(jobs[k:] + jobs[:k]):
                if not np.array_equal(job(), expected[(i + k) % len(jobs)]):
                    failures.append(i)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
