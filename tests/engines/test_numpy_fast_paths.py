"""The NumPy engine's shortcuts that must not change a bit (issue 22).

- Phases gathered by an integer cast (``_gather_phase``): a group of rows read as one unsigned
  integer and truncated keeps one row. Checked on random bytes (every NaN payload, -0.0) against
  the strided copy, and through max and average pooling against the loop oracle and against the
  same engine with the cast switched off.
- Rows of 32..127 elements gathered where a phase serves several taps (``SHARED_PHASE_ROW``):
  bit for bit against combining them in place.
- Averages of float16/float32/bfloat16 sums take their +0.0 after the division, and only where
  the output holds a -0.0: bit for bit against the same engine adding +0.0 to every sum first.
- Global sums by ``np.add.reduceat`` behind a lead of +0.0 or -0.0: bit for bit against
  ``np.add.reduce`` (with ``initial=-0.0``), on rows of wide exponent ranges, where another order
  of the additions rounds differently; a plane of -0.0 keeps its sign from the -0.0 lead alone.

Each comparison is with a slower path whose result is the definition (the oracle, or the code the
shortcut replaced), so a shortcut that moved a row, dropped a sign or reordered a sum fails here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import oracle
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from poolcheck import spec as S
from poolcheck.engines import numpy_engine
from poolcheck.spec import dtypes

FAST = settings(suppress_health_check=[HealthCheck.too_slow])


def bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).view(f"u{np.asarray(a).dtype.itemsize}")


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(bits(a), bits(b)))


def as_type(values: np.ndarray, dtype: str) -> np.ndarray:
    return dtypes.cast(values, dtype) if dtype == "bfloat16" else values.astype(dtype)


# --------------------------------------------------------------------------- the gather


GATHER_TYPES = ["int8", "uint8", "int16", "float16", "bfloat16", "float32", "int32", "float64"]


def casts(dtype: str, stride: int, inner: int) -> bool:
    """Whether ``_gather_phase`` takes the integer cast for this row (else a strided copy)."""
    unit = inner * np.dtype(dtypes.as_dtype(dtype)).itemsize
    return numpy_engine._LITTLE_ENDIAN and unit in (1, 2, 4) and stride * unit in (2, 4, 8)


def gather_all(src: np.ndarray, stride: int) -> list[np.ndarray]:
    rows, size, inner = src.shape
    out = []
    for phase in range(stride):
        dst = np.zeros(rows * size // stride * inner, dtype=src.dtype)
        numpy_engine._gather_phase(src, phase, stride, dst)
        out.append(dst)
    return out


@FAST
@given(dtype=st.sampled_from(GATHER_TYPES), stride=st.integers(1, 9), inner=st.integers(1, 5),
       rows=st.integers(1, 4), groups=st.integers(1, 7), seed=st.integers(0, 2**32 - 1))
def test_gather_phase_copies_the_rows_of_its_phase(dtype: str, stride: int, inner: int, rows: int, groups: int,
                                                   seed: int) -> None:
    """Random bytes, so every bit pattern (NaN payloads, -0.0, subnormals) must come through."""
    dt = np.dtype(dtypes.as_dtype(dtype))
    size = stride * groups
    raw = np.random.default_rng(seed).integers(0, 256, rows * size * inner * dt.itemsize, dtype=np.uint8)
    src = raw.view(dt).reshape(rows, size, inner)
    note(f"cast path: {casts(dtype, stride, inner)}")
    for phase, got in enumerate(gather_all(src, stride)):
        want = src.reshape(rows * groups, stride, inner)[:, phase, :].reshape(-1)
        assert np.array_equal(bits(got), bits(want)), f"phase {phase}"


@pytest.mark.parametrize(("dtype", "stride", "inner"), [
    ("float32", 2, 1), ("int32", 2, 1), ("float16", 2, 1), ("float16", 4, 1), ("float16", 2, 2),
    ("bfloat16", 4, 1), ("int8", 2, 1), ("int8", 4, 1), ("int8", 8, 1), ("uint8", 2, 4), ("int16", 2, 2),
])
def test_gather_phase_casts_where_a_group_fits_an_integer(dtype: str, stride: int, inner: int) -> None:
    """The cases the cast serves (so the property test above does reach it), each phase's last
    group included (read from row ``phase`` on, it would run past the end)."""
    assert casts(dtype, stride, inner)
    dt = np.dtype(dtypes.as_dtype(dtype))
    src = np.arange(3 * stride * 5 * inner * dt.itemsize, dtype=np.uint8).view(dt).reshape(3, stride * 5, inner)
    for phase, got in enumerate(gather_all(src, stride)):
        assert np.array_equal(bits(got), bits(src.reshape(15, stride, inner)[:, phase, :].reshape(-1)))


# --------------------------------------------------------------------------- pooling through the gather


def special_input(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Ties, -0.0 and +0.0, NaN, +-inf, the type's extremes and subnormals."""
    dt = np.dtype(dtypes.as_dtype(dtype))
    if dtypes.is_int(dt):
        info = np.iinfo(dt)
        x = rng.integers(-3, 4, size=shape).astype(np.int64).clip(info.min, info.max).astype(dt)
        x.reshape(-1)[rng.random(x.size) < 0.15] = info.min
        x.reshape(-1)[rng.random(x.size) < 0.15] = info.max
        return x
    x = rng.integers(-3, 4, size=shape).astype(np.float64)
    flat = x.reshape(-1)
    info = dtypes.finfo(dt)
    for value, share in ((-0.0, 0.2), (0.0, 0.1), (np.nan, 0.05), (-np.inf, 0.05), (np.inf, 0.03),
                         (float(info.max), 0.05), (-float(info.smallest_subnormal), 0.05)):
        flat[rng.random(flat.size) < share] = value
    return as_type(x, dtype)


@st.composite
def gathered_geometries(draw: Any) -> tuple[tuple[int, ...], list[int], list[int], list[int], list[int]]:
    """Geometries whose last axis (rows of one element) is gathered by phase: ``size = stride *
    out`` (the flat path), a stride of 2, 4 or 8, a kernel shorter or longer than the stride,
    padding on either side; leading axes of any flat kind."""
    rank = draw(st.integers(1, 3))
    spatial, kernel, strides, pb, pe = [], [], [], [], []
    for i in range(rank):
        last = i == rank - 1
        s = draw(st.sampled_from([2, 4, 8])) if last else draw(st.integers(1, 3))
        k = draw(st.integers(1, s + 2))
        total = draw(st.integers(max(0, k - s), k - 1))  # so that the output is size / stride
        begin = draw(st.integers(0, total))
        out = draw(st.integers(k + 2, k + 5) if last else st.integers(1, 5))  # last: some window wholly inside
        spatial.append(s * out)
        kernel.append(k)
        strides.append(s)
        pb.append(begin)
        pe.append(total - begin)
    return tuple(spatial), kernel, strides, pb, pe


def without_cast(call: Any) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(numpy_engine, "_LITTLE_ENDIAN", False)
        return call()


@FAST
@given(geometry=gathered_geometries(), dtype=st.sampled_from(["float16", "float32", "float64", "int8", "uint8",
                                                              "int16", "int32", "bfloat16"]),
       seed=st.integers(0, 2**32 - 1))
def test_max_pool_through_the_gather_matches_oracle(geometry: Any, dtype: str, seed: int) -> None:
    spatial, kernel, strides, pb, pe = geometry
    x = special_input(np.random.default_rng(seed), (2, 3, *spatial), dtype)
    spec = S.openvino_max_pool(kernel, strides, pb, pe)
    geom = S.resolve(spec, x.shape)
    assert numpy_engine._flat_plan(geom.axes[-1]) is not None  # the drawn axis takes the flat path
    got = numpy_engine.max_pool(x, geom, None)[0]
    assert same_bits(got, without_cast(lambda: numpy_engine.max_pool(x, geom, None)[0]))
    want = np.asarray(oracle.openvino_max_pool(x, kernel, strides, pb, pe)[0])
    if dtype in ("float32", "float64", "bfloat16"):  # tied zeros: either sign (documented; bfloat16 via float32)
        assert got.dtype == want.dtype
        assert np.array_equal(got.astype(np.float64), want.astype(np.float64), equal_nan=True)
    else:
        assert same_bits(got, want)


@FAST
@given(geometry=gathered_geometries(), dtype=st.sampled_from(["float16", "float32", "bfloat16"]),
       exclude_pad=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_averages_through_the_gather_keep_their_bits(geometry: Any, dtype: str, exclude_pad: bool, seed: int) -> None:
    """Averages widen to float64 before any gather, so the cast moves 8-byte rows there only when
    a row of the leading axes is short: the bits must not move either way."""
    spatial, kernel, strides, pb, pe = geometry
    x = special_input(np.random.default_rng(seed), (2, 2, *spatial), dtype)
    geom = S.resolve(S.openvino_avg_pool(kernel, strides, pb, pe, exclude_pad), x.shape)
    with np.errstate(all="ignore"):
        got = numpy_engine.avg_pool(x, geom, exclude_pad)
        assert same_bits(got, without_cast(lambda: numpy_engine.avg_pool(x, geom, exclude_pad)))


def test_workload_geometries_reach_the_cast(monkeypatch: pytest.MonkeyPatch) -> None:
    """W1 and W4 (float32, stride 2, rows of one element last) gather by the cast."""
    seen: list[tuple[np.dtype, int, int]] = []
    real = numpy_engine._gather_phase

    def spy(src: np.ndarray, phase: int, stride: int, dst: np.ndarray) -> None:
        seen.append((src.dtype, stride, src.shape[2]))
        real(src, phase, stride, dst)

    monkeypatch.setattr(numpy_engine, "_gather_phase", spy)
    x = np.random.default_rng(0).standard_normal((1, 2, 8, 12, 16)).astype(np.float32)
    numpy_engine.max_pool(x, S.resolve(S.openvino_max_pool([2, 2, 2], [2, 2, 2]), x.shape), None)
    x2 = x[:, :, 0]
    numpy_engine.max_pool(x2, S.resolve(S.openvino_max_pool([3, 3], [2, 2], [1, 1], [1, 1]), x2.shape), None)
    assert any(casts(dt.name, stride, inner) for dt, stride, inner in seen), seen


@FAST
@given(stride=st.integers(2, 3), extra=st.integers(1, 2), begin=st.integers(0, 4), out=st.integers(2, 6),
       row=st.integers(32, 127), dtype=st.sampled_from(["float16", "float32", "float64", "int8", "bfloat16"]),
       op=st.sampled_from(["max", "avg"]), seed=st.integers(0, 2**32 - 1))
def test_rows_gathered_for_shared_phases_keep_their_bits(stride: int, extra: int, begin: int, out: int, row: int,
                                                         dtype: str, op: str, seed: int) -> None:
    """Rows of 32..127 elements where a phase serves two taps (a kernel longer than the stride)
    are gathered (SHARED_PHASE_ROW) instead of combined in place: the same operands in the same
    order, so the same bits, tied zeros of float32 and NaN included."""
    kernel = stride + extra
    begin = min(begin, kernel - 1)
    end = max(0, kernel - stride - begin)
    x = special_input(np.random.default_rng(seed), (1, 2, stride * (out + kernel), row), dtype)
    if op == "max":
        spec = S.openvino_max_pool([kernel, 1], [stride, 1], [begin, 0], [end, 0])
    else:
        spec = S.openvino_avg_pool([kernel, 1], [stride, 1], [begin, 0], [end, 0], True)
    geom = S.resolve(spec, x.shape)
    plan = numpy_engine._flat_plan(geom.axes[0])
    assert plan is not None and len(plan.taps) > len(plan.phases)

    def run() -> np.ndarray:
        with np.errstate(all="ignore"):
            if op == "max":
                return numpy_engine.max_pool(x, geom, None)[0]
            return numpy_engine.avg_pool(x, geom, True)

    got = run()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(numpy_engine, "SHARED_PHASE_ROW", 0)  # rows of 32 and more combined in place
        assert same_bits(got, run())


# --------------------------------------------------------------------------- +0.0 after the division


@st.composite
def padded_averages(draw: Any) -> tuple[tuple[int, ...], list[int], list[int], list[int], list[int], str]:
    """Average pools whose sums start from +0.0 (a window that misses its first taps)."""
    rank = draw(st.integers(1, 3))
    spatial = [draw(st.integers(1, 7)) for _ in range(rank)]
    kernel = [draw(st.integers(1, 4)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    pb = [draw(st.integers(0, k - 1)) for k in kernel]
    pe = [draw(st.integers(0, k - 1)) for k in kernel]
    return tuple(spatial), kernel, strides, pb, pe, draw(st.sampled_from(["floor", "ceil"]))


def zeros_input(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Mostly -0.0 (whole windows of it), some +0.0, the smallest subnormals of either sign (whose
    averages round to a zero of their own sign), NaN and infinities."""
    x = np.full(shape, -0.0)
    flat = x.reshape(-1)
    tiny = float(dtypes.finfo(dtypes.as_dtype(dtype)).smallest_subnormal)
    for value, share in ((0.0, 0.1), (-tiny, 0.1), (tiny, 0.05), (1.5, 0.05), (np.nan, 0.02), (-np.inf, 0.02)):
        flat[rng.random(flat.size) < share] = value
    return as_type(x, dtype)


@FAST
@given(geometry=padded_averages(), dtype=st.sampled_from(["float16", "float32", "bfloat16"]),
       exclude_pad=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_zero_added_after_division_keeps_every_bit(geometry: Any, dtype: str, exclude_pad: bool, seed: int) -> None:
    spatial, kernel, strides, pb, pe, rounding = geometry
    x = zeros_input(np.random.default_rng(seed), (2, 3, *spatial), dtype)
    try:
        geom = S.resolve(S.openvino_avg_pool(kernel, strides, pb, pe, exclude_pad, rounding), x.shape)
    except ValueError:
        return  # no output for this geometry
    with np.errstate(all="ignore"):
        got = numpy_engine.avg_pool(x, geom, exclude_pad)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(numpy_engine, "_NARROW_FLOATS", ())  # +0.0 on every sum, before dividing
            want = numpy_engine.avg_pool(x, geom, exclude_pad)
    assert same_bits(got, want)


@pytest.mark.parametrize("dtype", ["float16", "float32", "bfloat16"])
def test_windows_of_negative_zeros_average_to_positive_zero(dtype: str) -> None:
    """"divided by the number of elements": with padding counted, a window of -0.0 sums from the
    padded +0.0 and averages to +0.0; one over the smallest negative subnormal and -0.0 averages to
    a quotient that rounds to -0.0 and keeps that sign (both in one output)."""
    x = as_type(np.full((1, 2, 6), -0.0), dtype)
    tiny = float(dtypes.finfo(dtypes.as_dtype(dtype)).smallest_subnormal)
    x[0, 1, 0] = as_type(np.array([-tiny]), dtype)[0]
    geom = S.resolve(S.openvino_avg_pool([3], [1], [1], [1], False), x.shape)
    got = numpy_engine.avg_pool(x, geom, False)
    assert np.all(got == 0)
    assert not np.signbit(got[0, 0].astype(np.float32)).any()
    assert np.signbit(got[0, 1, :2].astype(np.float32)).all() and not np.signbit(got[0, 1, 2:].astype(np.float32)).any()
    want = np.asarray(oracle.openvino_avg_pool(x, [3], [1], [1], [1], False))
    assert np.array_equal(got.astype(np.float32), want.astype(np.float32))


# --------------------------------------------------------------------------- global sums


def wide_rows(rng: np.random.Generator, count: int, m: int, dtype: str) -> np.ndarray:
    """Values whose exponents span far more than float64's 53 bits: each order of the additions
    rounds differently. Some -0.0, whole rows of it, NaN and infinities."""
    spread = {"float16": 12, "float32": 100, "float64": 600}[dtype]
    x = rng.standard_normal((count, m)) * 2.0 ** rng.integers(-spread, spread, (count, m)).astype(np.float64)
    x[rng.random((count, m)) < 0.05] = -0.0
    if count > 1:
        x[1] = -0.0
    if rng.random() < 0.3:
        x[0, rng.integers(0, m)] = rng.choice([np.nan, np.inf, -np.inf])
    with np.errstate(over="ignore"):
        return x.astype(dtype)


@FAST
@given(count=st.integers(1, 6), m=st.integers(1, 300), dtype=st.sampled_from(["float16", "float32", "float64"]),
       lead=st.sampled_from([0.0, -0.0]), seed=st.integers(0, 2**32 - 1))
def test_plane_sums_are_np_add_reduce_bit_for_bit(count: int, m: int, dtype: str, lead: float, seed: int) -> None:
    rows = wide_rows(np.random.default_rng(seed), count, m, dtype)
    want = np.add.reduce(rows.astype(np.float64), axis=1, initial=lead)
    assert same_bits(numpy_engine._plane_sums(rows, np.dtype(np.float64), lead), want)
    if count > 1:  # row 1 is all -0.0: its sum has the sign of the lead
        assert np.signbit(want[1]) == np.signbit(lead)


@pytest.mark.parametrize("m", [49, 128, 129, 1000, 8193, 40000])
def test_plane_sums_on_long_rows(m: int) -> None:
    """Rows past NumPy's pairwise block (128) and its buffer (8192); and the data is such that the
    order matters: a plain left-to-right sum of the same rows differs."""
    rows = wide_rows(np.random.default_rng(m), 4, m, "float32")
    wide = rows.astype(np.float64)
    want = np.add.reduce(wide, axis=1)
    assert same_bits(numpy_engine._plane_sums(rows, np.dtype(np.float64)), want)
    in_order = np.array([sum(r.tolist(), 0.0) for r in wide[2:]])
    assert not np.array_equal(in_order, want[2:], equal_nan=True)  # row 1 is all -0.0; rows 2+ are sensitive


def test_global_average_uses_the_plane_sums() -> None:
    """The engine's global average divides exactly those sums (float32, wide exponents)."""
    x = wide_rows(np.random.default_rng(3), 6, 49, "float32").reshape(1, 6, 7, 7)
    geom = S.resolve(S.openvino_avg_pool([7, 7], [1, 1]), x.shape)
    got = numpy_engine.avg_pool(x, geom, False)
    sums = np.add.reduce(x.reshape(6, 49).astype(np.float64), axis=1)
    sums[1] = -0.0  # the all--0.0 plane keeps its sign (tests/engines/test_numpy_engine.py)
    with np.errstate(invalid="ignore"):
        assert same_bits(got.reshape(-1), (sums / 49).astype(np.float32))


def test_plane_sums_zero_their_prefix_again_after_another_shape() -> None:
    """The lead in front of each row stays in the kept buffer between calls of the same shape and
    lead; a call of another shape or lead must not start a row from another row's element or
    from the other lead (rows of -0.0 sum to the lead's zero)."""
    rng = np.random.default_rng(9)
    calls = [(8, 49, 0.0), (7, 57, 0.0), (8, 49, 0.0), (8, 49, -0.0), (8, 49, -0.0), (50, 7, 0.0), (8, 49, 0.0),
             (1, 400, -0.0), (8, 49, -0.0), (8, 49, 0.0)]
    for count, m, lead in calls:
        rows = rng.standard_normal((count, m)).astype(np.float32) + 1000  # no sum is zero
        rows[-1] = -0.0
        got = numpy_engine._plane_sums(rows, np.dtype(np.float64), lead)
        want = np.add.reduce(rows.astype(np.float64), axis=1, initial=lead)
        assert same_bits(got, want), (count, m, lead)


def test_the_last_layout_is_reused_only_for_the_same_geometry() -> None:
    """avg_pool reuses the last call's layout for the same Geometry and Policy objects: calls that
    alternate between geometries, or pass an equal but new Geometry, or the other exclude_pad,
    each get their own divisor and -0.0 rule (a global plane of -0.0 with and without padding)."""
    x = np.full((1, 2, 3, 3), -0.0, dtype=np.float32)
    x[0, 1] = np.arange(9, dtype=np.float32).reshape(3, 3)
    unpadded = S.openvino_avg_pool([3, 3], [1, 1])
    padded = S.openvino_avg_pool([3, 3], [1, 1], [1, 1], [1, 1])
    glob = S.resolve(unpadded, x.shape)
    windows = S.resolve(padded, x.shape)
    want_global = np.array([-0.0, 4.0], np.float32).reshape(1, 2, 1, 1)
    want_sum = numpy_engine.avg_pool(x, S.resolve(padded, x.shape), False)
    for _ in range(2):
        assert same_bits(numpy_engine.avg_pool(x, glob, False), want_global)
        assert same_bits(numpy_engine.avg_pool(x, S.resolve(unpadded, x.shape), False), want_global)
        assert same_bits(numpy_engine.avg_pool(x, windows, False), want_sum)
        for planes in (x, x[:, 1:]):  # two planes share a chunk's divisor; one plane divides by its own
            one = S.resolve(padded, planes.shape)
            assert numpy_engine.avg_pool(planes, one, True)[0, -1, 0, 0] == np.float32((0 + 1 + 3 + 4) / 4)
            assert numpy_engine.avg_pool(planes, one, False)[0, -1, 0, 0] == np.float32((0 + 1 + 3 + 4) / 9)
