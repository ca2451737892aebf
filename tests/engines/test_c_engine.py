"""The C engine against the NumPy engine.

Contract (poolcheck/engines/c_engine.py, docs/benchmarks.md):

- max pooling: values and indices identical bit for bit, for every dtype, NaN policy, index
  layout and geometry. Only the NumPy engine's values-only fast path (float32/float64, no
  indices, NaN policy "propagate") may differ, on the sign of a zero that ties with the other
  zero and on NaN payloads, because np.maximum's SIMD loops return either operand there; the
  values are equal (``-0.0 == 0.0``, NaN where NaN), and the C values equal the C engine's own
  values-with-indices bit for bit.
- average pooling: float64 sums in the NumPy engine's order, one division, one rounding --
  identical bits (a NaN result is NaN in both; its payload follows the operand order the
  compiler chose for the additions, in both engines), except for global pooling, where the
  NumPy engine sums each plane with np.add.reduce (pairwise order) and the C engine in 8
  interleaved float64 lanes; there the two float64 sums differ by at most
  2 (m - 1) 2^-53 sum(|x|) for m summed elements, and the results by that over the divisor plus
  one unit in the last place of the output type.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from support import TESTS

from poolcheck import spec as S
from poolcheck.engines import c_engine, numpy_engine
from poolcheck.errors import AttributeValueError
from poolcheck.spec import dtypes
from poolcheck.spec.indices import IndexLayout
from poolcheck.spec.policy import Policy

pytestmark = pytest.mark.skipif(not c_engine.AVAILABLE, reason=f"C engine: {c_engine.UNAVAILABLE_REASON}")

FLOATS = ("float16", "float32", "float64")
INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
PROFILE_EXAMPLES = settings().max_examples
#: The instruction-set paths this CPU and build run (portable first): the agreement tests run
#: on each, switched in this process.
ISAS = c_engine.available_isas()


@pytest.fixture(scope="module", params=ISAS, ids=[f"isa={i}" for i in ISAS])
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test on one instruction-set path of the C engine (restored afterwards)."""
    from poolcheck.engines import _cpool

    previous = _cpool._set_isa(request.param)
    try:
        yield request.param
    finally:
        _cpool._set_isa(previous)


# --------------------------------------------------------------------------- drawing cases


@dataclass(frozen=True)
class Case:
    spec: S.PoolSpec
    shape: tuple[int, ...]
    geom: S.Geometry
    x: np.ndarray
    policy: Policy
    layout: IndexLayout | None

    def label(self) -> str:
        lay = "" if self.layout is None else f" layout={self.layout.order}/{self.layout.modulus}/{self.layout.dtype}"
        return f"{self.spec.describe()} shape={self.shape} dtype={self.x.dtype} policy={self.policy.label()}{lay}"


def make_input(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> np.ndarray:
    """Inputs with ties, signed zeros, NaN (several payloads), infinities, integer extremes;
    "tiny": small multiples of the smallest subnormal and signed zeros only, so that averages
    underflow (a nonzero sum whose quotient rounds to a signed zero)."""
    if dtype.kind == "f":
        if mode == "ties":
            x = rng.integers(-3, 4, shape).astype(dtype)
        elif mode == "tiny":
            x = (rng.integers(-3, 4, shape) * np.finfo(dtype).smallest_subnormal).astype(dtype)
        else:
            x = rng.standard_normal(shape).astype(dtype)
        flat = x.reshape(-1)
        specials = ((-0.0, 0.15), (0.0, 0.1), (np.inf, 0.03), (-np.inf, 0.03))
        for value, frac in specials[:2] if mode == "tiny" else specials:
            flat[rng.random(flat.size) < frac] = value
        if mode not in ("finite", "tiny"):
            bits = {np.dtype("float16"): (np.uint16, [0x7E00, 0xFE00, 0x7C01, 0x7E55]),
                    np.dtype("float32"): (np.uint32, [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FC12345]),
                    np.dtype("float64"): (np.uint64, [0x7FF8000000000000, 0xFFF8000000000000,
                                                      0x7FF0000000000001, 0x7FF8123456789ABC])}[dtype]
            view = flat.view(bits[0])
            where = np.flatnonzero(rng.random(flat.size) < 0.06)
            view[where] = np.array(bits[1], dtype=bits[0])[rng.integers(0, 4, where.size)]
        return x
    info = np.iinfo(dtype)
    if mode == "ties":
        lo, hi = max(info.min, -3), min(info.max, 3)
        return rng.integers(lo, hi + 1, shape, dtype=np.int64).astype(dtype)
    x = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    flat = x.reshape(-1)
    flat[rng.random(flat.size) < 0.1] = info.min
    flat[rng.random(flat.size) < 0.1] = info.max
    return x


@st.composite
def cases(draw: st.DrawFn, op: str) -> Case:
    r = draw(st.integers(1, 3), label="spatial rank")
    big = 40 if r <= 2 else 10  # rows of >= 16 windows (>= 32 elements) reach the vectorised, fused, edge paths
    kernel = tuple(draw(st.lists(st.integers(1, 4), min_size=r, max_size=r), label="kernel"))
    strides = tuple(draw(st.lists(st.integers(1, 4), min_size=r, max_size=r), label="strides"))
    dilations = tuple(draw(st.lists(st.integers(1, 3), min_size=r, max_size=r), label="dilations"))
    pads_begin = tuple(draw(st.integers(0, k + 1)) for k in kernel)
    pads_end = tuple(draw(st.integers(0, k + 1)) for k in kernel)
    rounding = draw(st.sampled_from(S.attributes.ROUNDING_TYPES), label="rounding_type")
    auto_pad = draw(st.sampled_from(S.attributes.AUTO_PADS), label="auto_pad")
    shape = (draw(st.integers(1, 2), label="N"), draw(st.integers(1, 3), label="C"),
             *draw(st.lists(st.integers(1, big), min_size=r, max_size=r), label="spatial"))
    spec = S.PoolSpec(op, kernel, strides, pads_begin, pads_end, dilations, rounding, auto_pad,  # type: ignore[arg-type]
                      exclude_pad=draw(st.booleans(), label="exclude_pad"))
    try:
        geom = S.resolve(spec, shape)
    except AttributeValueError:
        assume(False)
        raise
    dtype = np.dtype(draw(st.sampled_from(FLOATS + INTS if op == "max" else FLOATS), label="dtype"))
    mode = draw(st.sampled_from(["normal", "ties", "finite", "tiny"]), label="values")
    x = make_input(np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="seed")), shape, dtype, mode)
    policy = Policy(
        empty_max=draw(st.sampled_from(["-inf", "lowest", "zero"])),
        empty_index=draw(st.sampled_from([-1, 0, 7, 2**31 + 5])),
        nan=draw(st.sampled_from(["propagate", "ignore", "first"])),
        divisor=draw(st.sampled_from(["attribute", "full", "padded", "valid"])),
        empty_avg=draw(st.sampled_from(["zero", "nan"])),
    )
    layout = None
    if op == "max" and draw(st.booleans(), label="with indices"):
        axis = draw(st.integers(0, len(shape) - 1), label="index axis")
        layout = IndexLayout(draw(st.sampled_from(["C", "F"])), math.prod(shape[axis:]),
                             np.dtype(draw(st.sampled_from([np.int32, np.int64]))))
    return Case(spec, shape, geom, x, policy, layout)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def assert_same_bits(c: np.ndarray, n: np.ndarray, what: str, any_nan: bool = False) -> None:
    """Identical bit patterns (with ``any_nan``: a NaN matches any NaN, whatever its payload)."""
    assert c.shape == n.shape and c.dtype == n.dtype, f"{what}: {c.shape}/{c.dtype} vs {n.shape}/{n.dtype}"
    differ = bits(c).reshape(-1) != bits(n).reshape(-1)
    if any_nan:
        differ &= ~(np.isnan(c.reshape(-1)) & np.isnan(n.reshape(-1)))
    diff = np.flatnonzero(differ)
    assert diff.size == 0, f"{what}: {diff.size} element(s) differ, first at {diff[0]}: c={c.reshape(-1)[diff[0]]!r} numpy={n.reshape(-1)[diff[0]]!r}"


def assert_equal_values(c: np.ndarray, n: np.ndarray, what: str) -> None:
    """Equal as numbers: -0.0 == 0.0, NaN where NaN."""
    assert c.shape == n.shape and c.dtype == n.dtype
    assert np.array_equal(c, n, equal_nan=True), f"{what}: values differ"


# --------------------------------------------------------------------------- agreement


FIXTURELESS = settings(max_examples=max(PROFILE_EXAMPLES, 300), suppress_health_check=[HealthCheck.too_slow])


@FIXTURELESS
@given(cases("max"))
def test_max_pool_matches_numpy_engine(isa: str, case: Case) -> None:
    note(case.label())
    cv, ci = c_engine.max_pool(case.x, case.geom, case.layout, case.policy)
    nv, ni = numpy_engine.max_pool(case.x, case.geom, case.layout, case.policy)
    numpy_fast_path = case.layout is None and case.policy.nan == "propagate" and case.x.dtype in (np.float32, np.float64)
    if numpy_fast_path:
        assert_equal_values(cv, nv, "values")
    else:
        assert_same_bits(cv, nv, "values")
    if case.layout is None:
        assert ci is None and ni is None
        # The values-only path chooses the same elements as the indices path, bit for bit.
        lay = IndexLayout("C", math.prod(case.shape), np.dtype(np.int64))
        assert_same_bits(cv, c_engine.max_pool(case.x, case.geom, lay, case.policy)[0], "values-only vs with indices")
    else:
        assert ci is not None and ni is not None
        assert_same_bits(ci, ni, "indices")


def numpy_global_path(geom: S.Geometry) -> bool:
    """Where numpy_engine sums each whole plane with np.add.reduce (pairwise order)."""
    return all(a.out == 1 and a.dilation == 1 and a.kernel - a.pad_begin >= a.size for a in geom.axes)


def assert_avg_within_bound(case: Case, c: np.ndarray, n: np.ndarray) -> None:
    """|c - numpy| <= 2 (m - 1) 2^-53 sum|x| / divisor + 1 ulp of the output type, per window."""
    assert c.shape == n.shape and c.dtype == n.dtype
    # Inputs hold NaN and +-inf on purpose: the bound arithmetic may meet inf - inf.
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        x = case.x.astype(np.float64)
        planes = x.reshape(case.geom.batch * case.geom.channels, -1)
        m = planes.shape[1]
        absum = np.abs(planes).sum(axis=1).reshape(c.shape)
        div = np.broadcast_to(numpy_engine.divisor(case.geom, case.spec.exclude_pad, case.policy),
                              c.shape).astype(np.float64)
        bound = 2 * (m - 1) * 2.0**-53 * absum / div
        cf, nf = c.astype(np.float64), n.astype(np.float64)
        ulp = np.spacing(np.abs(n)).astype(np.float64)
        both_nan = np.isnan(cf) & np.isnan(nf)
        same = (cf == nf) | both_nan
        close = np.abs(cf - nf) <= np.nan_to_num(bound, nan=np.inf, posinf=np.inf) + ulp
    assert np.all(same | close), "averages differ by more than the documented bound"


@FIXTURELESS
@given(cases("avg"))
def test_avg_pool_matches_numpy_engine(isa: str, case: Case) -> None:
    note(case.label())
    c = c_engine.avg_pool(case.x, case.geom, case.spec.exclude_pad, case.policy)
    n = numpy_engine.avg_pool(case.x, case.geom, case.spec.exclude_pad, case.policy)
    if numpy_global_path(case.geom):
        assert_avg_within_bound(case, c, n)
    else:
        assert_same_bits(c, n, "averages", any_nan=True)


# The benchmark workloads at reduced size, with NaN, -0.0 and ties planted: they reach the
# vectorised, fused and staged C kernels that small random shapes rarely do.
WORKLOAD_SPECS = [
    (S.openvino_max_pool([3, 3], [2, 2], [1, 1], [1, 1]), (1, 3, 41, 50)),
    (S.openvino_max_pool([3, 3], [1, 1], [2, 2], [2, 2], [2, 2]), (2, 2, 37, 35)),
    (S.openvino_max_pool([2, 2, 2], [2, 2, 2]), (1, 3, 8, 18, 38)),
    (S.openvino_max_pool([4], [4]), (2, 3, 150)),
    (S.openvino_max_pool([3], [3]), (2, 3, 100)),
    (S.openvino_avg_pool([7, 7], [1, 1]), (1, 40, 7, 7)),
    (S.openvino_avg_pool([3, 3], [1, 1], [1, 1], [1, 1], exclude_pad=True), (2, 3, 36, 40)),
    (S.openvino_avg_pool([2, 3], [2, 1], [0, 1], [1, 0], exclude_pad=False), (1, 2, 19, 45)),
    # W windows of 2 on the fused average strips (the baseline forms their taps by shuffles)
    (S.openvino_avg_pool([2, 2], [1, 1], [0, 0], [1, 1], exclude_pad=False), (1, 2, 11, 27)),
    (S.openvino_avg_pool([3, 2], [1, 1], [1, 1], [1, 0], exclude_pad=True), (2, 2, 12, 30)),
    (S.openvino_avg_pool([3, 3, 3], [1, 2, 1], [1, 1, 1], [1, 1, 1], True, "ceil"), (1, 2, 6, 9, 33)),
]


@pytest.mark.parametrize(("spec", "shape"), WORKLOAD_SPECS, ids=lambda v: str(v) if isinstance(v, tuple) else v.describe())
@pytest.mark.parametrize("mode", ["normal", "ties"])
def test_workload_shapes_match(isa: str, spec: S.PoolSpec, shape: tuple[int, ...], mode: str) -> None:
    rng = np.random.default_rng(abs(hash((shape, mode))) % 2**32)
    geom = S.resolve(spec, shape)
    for dtype in (np.dtype(np.float32), np.dtype(np.float64)):
        x = make_input(rng, shape, dtype, mode)
        if spec.op == "avg":
            c = c_engine.avg_pool(x, geom, spec.exclude_pad, Policy())
            n = numpy_engine.avg_pool(x, geom, spec.exclude_pad, Policy())
            if numpy_global_path(geom):
                assert_avg_within_bound(Case(spec, shape, geom, x, Policy(), None), c, n)
            else:
                assert_same_bits(c, n, "averages", any_nan=True)
            continue
        for nan in ("propagate", "ignore", "first"):
            for layout in (None, S.index_layout(spec, shape)):
                cv, ci = c_engine.max_pool(x, geom, layout, Policy(nan=nan))
                nv, ni = numpy_engine.max_pool(x, geom, layout, Policy(nan=nan))
                if layout is None and nan == "propagate":
                    assert_equal_values(cv, nv, "values")
                else:
                    assert_same_bits(cv, nv, f"values nan={nan}")
                if layout is not None:
                    assert ci is not None and ni is not None
                    assert_same_bits(ci, ni, f"indices nan={nan}")


@pytest.mark.parametrize("name", ISAS)
def test_poolcheck_isa_forces_a_path(name: str) -> None:
    """POOLCHECK_ISA=NAME makes the import choose that path, and the benchmark shapes agree on it."""
    code = (
        f"import sys; sys.path[:0] = [{os.path.dirname(os.path.abspath(__file__))!r}, {str(TESTS)!r}]; "
        "import test_c_engine as t; "
        f"from poolcheck.engines import _cpool, c_engine; assert _cpool.isa() == {name!r}, _cpool.isa(); "
        f"assert c_engine.active_isa() == {name!r}; "
        "[t.test_workload_shapes_match('', s, sh, m) for s, sh in t.WORKLOAD_SPECS for m in ('normal', 'ties')]; "
        "print('ok')"
    )
    env = dict(os.environ, POOLCHECK_ISA=name)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


def test_poolcheck_isa_refuses_an_unknown_path() -> None:
    """An unknown POOLCHECK_ISA makes the C engine unavailable, with a reason naming the variable
    and the paths this CPU runs; engine 'c' and 'auto' then fail instead of silently running
    another path or engine."""
    code = (
        "from poolcheck.engines import c_engine, get_engine\n"
        "from poolcheck.errors import EngineUnavailableError\n"
        "assert not c_engine.AVAILABLE\n"
        "print(c_engine.UNAVAILABLE_REASON)\n"
        "for name in ('c', 'auto'):\n"
        "    try:\n"
        "        get_engine(name)\n"
        "    except EngineUnavailableError as exc:\n"
        "        print('refused', name, exc)\n"
    )
    env = dict(os.environ, POOLCHECK_ISA="avx9")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "POOLCHECK_ISA: unknown instruction-set path 'avx9'" in out.stdout
    assert "this CPU runs: portable" in out.stdout
    assert "refused c " in out.stdout and "refused auto " in out.stdout


def test_set_isa_refuses_what_the_cpu_cannot_run() -> None:
    from poolcheck.engines import _cpool

    with pytest.raises(ValueError, match="unknown instruction-set path 'sse9'"):
        _cpool._set_isa("sse9")
    for name in ("portable", "avx2", "avx512"):
        if name not in ISAS:
            with pytest.raises(ValueError, match=f"cannot run the {name} path"):
                _cpool._set_isa(name)
    assert ISAS[0] == "portable" and _cpool.isa() == c_engine.active_isa()


#: Every float16 bit pattern, and its signalling NaNs (all-ones exponent, quiet bit clear).
EVERY_HALF = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
SIGNALLING_HALF = ((EVERY_HALF & 0x7E00) == 0x7C00) & ((EVERY_HALF & 0x01FF) != 0)


@pytest.mark.parametrize("keep", [True, False], ids=["this-numpy", "fixed-up"])
def test_float16_widening_keeps_every_bit_pattern(keep: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """float16 max runs on the float32 kernel: every float16 bit pattern (NaN payloads, signalling
    NaNs too) widens to float32 and narrows back unchanged, with NumPy's casts where they keep
    the bits and with the fix-up of the casts that quiet a signalling NaN (AArch64) forced; a
    number widens to its own value, a NaN to its sign and payload on top."""
    monkeypatch.setattr(dtypes, "HALF_CASTS_KEEP_BITS", keep and dtypes.HALF_CASTS_KEEP_BITS)
    wide = dtypes.widen_half(EVERY_HALF.view(np.float16))
    back = dtypes.narrow_half(wide)
    assert wide.dtype == np.float32 and back.dtype == np.float16
    assert np.array_equal(back.view(np.uint16), EVERY_HALF)
    nan = np.isnan(EVERY_HALF.view(np.float16))
    assert nan.sum() == 2 * 1023 and SIGNALLING_HALF.sum() == 2 * 511
    h = EVERY_HALF[nan].astype(np.uint32)
    assert np.array_equal(wide.view(np.uint32)[nan], ((h & 0x8000) << 16) | 0x7F800000 | ((h & 0x03FF) << 13))
    numbers = EVERY_HALF[~nan].view(np.float16)
    assert np.array_equal(wide[~nan].astype(np.float64), numbers.astype(np.float64))


def test_the_float16_cast_probe_tells_what_numpy_does() -> None:
    """``HALF_CASTS_KEEP_BITS`` (probed on two patterns at import) is whether NumPy's own casts
    give back every float16 bit pattern on this machine."""
    with np.errstate(invalid="ignore"):
        back = EVERY_HALF.view(np.float16).astype(np.float32).astype(np.float16).view(np.uint16)
    assert dtypes.HALF_CASTS_KEEP_BITS == bool(np.array_equal(back, EVERY_HALF))
    assert dtypes.HALF_CASTS_KEEP_BITS or not np.array_equal(back[SIGNALLING_HALF], EVERY_HALF[SIGNALLING_HALF])


@pytest.mark.parametrize("keep", [True, False], ids=["this-numpy", "fixed-up"])
def test_float16_max_returns_the_signalling_nan_it_read(isa: str, keep: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A float16 max whose window holds a signalling NaN returns that NaN's bits (the element the
    scan picked), as the NumPy engine does, with indices and without; and without a
    RuntimeWarning from the casts."""
    monkeypatch.setattr(dtypes, "HALF_CASTS_KEEP_BITS", keep and dtypes.HALF_CASTS_KEEP_BITS)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 8, 32, 32)).astype(np.float16)  # long enough for SIMD casts
    signalling = EVERY_HALF[SIGNALLING_HALF]
    flat = x.reshape(-1).view(np.uint16)
    where = rng.choice(flat.size, 400, replace=False)
    flat[where] = signalling[rng.integers(0, signalling.size, where.size)]
    spec = S.openvino_max_pool([3, 3], [2, 2], [1, 1], [1, 1])
    geom, layout = S.resolve(spec, x.shape), S.index_layout(spec, x.shape)
    for policy in (Policy(), Policy(nan="ignore")):
        with np.errstate(all="raise"):
            cv, ci = c_engine.max_pool(x, geom, layout, policy)
            cv_only, _ = c_engine.max_pool(x, geom, None, policy)
        nv, ni = numpy_engine.max_pool(x, geom, layout, policy)
        assert_same_bits(cv, nv, "values")
        assert_same_bits(cv_only, nv, "values only")
        assert np.array_equal(ci, ni)
        if policy.nan == "propagate":
            assert (cv.view(np.uint16)[np.isnan(cv)] & 0x0200 == 0).any(), "no signalling NaN came out"


def test_threads_share_the_engine() -> None:
    """The engine releases the GIL while computing; concurrent calls give the serial results."""
    spec = S.openvino_max_pool([3, 3], [2, 2], [1, 1], [1, 1])
    shape = (2, 4, 40, 40)
    geom, layout = S.resolve(spec, shape), S.index_layout(spec, shape)
    inputs = [np.random.default_rng(i).standard_normal(shape).astype(np.float32) for i in range(6)]
    expected = [c_engine.max_pool(x, geom, layout)[1] for x in inputs]
    results: list[np.ndarray | None] = [None] * len(inputs)

    def work(i: int) -> None:
        for _ in range(5):
            results[i] = c_engine.max_pool(inputs[i], geom, layout)[1]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        assert got is not None and np.array_equal(got, want)


def test_non_contiguous_input() -> None:
    spec = S.openvino_avg_pool([2, 2], [1, 1])
    x = np.random.default_rng(3).standard_normal((1, 2, 9, 12)).astype(np.float32)[:, :, ::2, ::-1]
    geom = S.resolve(spec, x.shape)
    assert_same_bits(c_engine.avg_pool(x, geom, False), numpy_engine.avg_pool(np.ascontiguousarray(x), geom, False), "avg",
                     any_nan=True)


# --------------------------------------------------------------------------- errors


def test_bad_dtype_names_the_attribute() -> None:
    spec = S.openvino_avg_pool([2], [1])
    x = np.zeros((1, 1, 4), dtype=np.int32)
    with pytest.raises(AttributeValueError, match="dtype"):
        c_engine.avg_pool(x, S.resolve(spec, x.shape), False)
    with pytest.raises(AttributeValueError, match="dtype"):
        c_engine.max_pool(np.zeros((1, 1, 4), dtype=np.complex64), S.resolve(spec, (1, 1, 4)), None)


def test_shape_mismatch_is_an_attribute_error() -> None:
    spec = S.openvino_max_pool([2], [1])
    with pytest.raises(AttributeValueError, match="input"):
        c_engine.max_pool(np.zeros((1, 1, 5), np.float32), S.resolve(spec, (1, 1, 4)), None)


def test_extension_checks_its_buffers() -> None:
    """Misuse of the raw extension raises, it never reads or writes out of bounds."""
    from poolcheck.engines import _cpool  # type: ignore[attr-defined]

    geom = c_engine._geometry_args(S.resolve(S.openvino_max_pool([2], [1]), (1, 1, 4)))
    x, out = np.zeros(4, np.float32), np.zeros(3, np.float32)
    fill = np.float32(0).tobytes()
    with pytest.raises(ValueError, match="input"):
        _cpool.max_pool(np.zeros(5, np.float32), out, None, geom, 0, 0, fill, -1, 0, 4)
    with pytest.raises(ValueError, match="output"):
        _cpool.max_pool(x, np.zeros(2, np.float32), None, geom, 0, 0, fill, -1, 0, 4)
    with pytest.raises(ValueError, match="indices"):
        _cpool.max_pool(x, out, np.zeros(2, np.int64), geom, 0, 0, fill, -1, 0, 4)
    with pytest.raises(ValueError, match="geometry"):
        _cpool.max_pool(x, out, None, (1, 4, 2), 0, 0, fill, -1, 0, 4)
    with pytest.raises(ValueError):
        _cpool.avg_pool(x, out, (1, 4, 0, 1, 1, 0, 0, 3), 0, 1, 0.0)


# --------------------------------------------------------------------------- loader


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                          capture_output=True, text=True, timeout=120)


LOADER_PROBE = """
import numpy as np
from poolcheck import api
from poolcheck.engines import c_engine, get_engine, numpy_engine, available_engines
from poolcheck.errors import EngineUnavailableError
assert not c_engine.AVAILABLE
print("reason:", c_engine.UNAVAILABLE_REASON)
assert get_engine("auto") is numpy_engine
assert available_engines() == ["numpy"]
try:
    api.max_pool(np.zeros((1, 1, 4), np.float32), [2], [1], engine="c")
except EngineUnavailableError as exc:
    print("error:", exc)
else:
    raise SystemExit("engine='c' did not raise")
v, i = api.max_pool(np.arange(4, dtype=np.float32).reshape(1, 1, 4), [2], [1], engine="auto")
assert v.tolist() == [[[1.0, 2.0, 3.0]]]
"""


def test_env_var_forces_the_pure_engine() -> None:
    out = run_python(LOADER_PROBE, POOLCHECK_PURE_PYTHON="1")
    assert out.returncode == 0, out.stderr
    assert "reason: POOLCHECK_PURE_PYTHON is set" in out.stdout
    assert "error: engine 'c' is not available: POOLCHECK_PURE_PYTHON is set" in out.stdout


def test_missing_extension_gives_a_clear_error() -> None:
    # sys.modules[name] = None makes "import name" raise ImportError, as a missing build does.
    out = run_python("import sys; sys.modules['poolcheck.engines._cpool'] = None\n" + LOADER_PROBE)
    assert out.returncode == 0, out.stderr
    assert "could not be imported" in out.stdout
    assert "error: engine 'c' is not available: the C extension poolcheck.engines._cpool could not be imported" in out.stdout


def test_auto_picks_the_c_engine_when_built() -> None:
    from poolcheck.engines import available_engines, get_engine

    assert get_engine("auto") is c_engine
    assert available_engines() == ["numpy", "c"]


def test_engine_fixture_covers_both_engines(engine: str) -> None:
    """The shared fixture (tests/conftest.py) yields each engine; both compute the same thing."""
    from poolcheck import api

    x = np.array([[[1.0, -0.0, 0.0, 3.0, np.nan, 2.0]]], dtype=np.float32)
    values, indices = api.max_pool(x, [2], [2], engine=engine)
    assert np.array_equal(values, np.array([[[1.0, 3.0, np.nan]]], np.float32), equal_nan=True)
    assert indices.tolist() == [[[0, 3, 4]]]
    with pytest.raises(AttributeValueError, match="strides"):
        api.max_pool(x, [2], [0], engine=engine)


# --------------------------------------------------------------------------- module surface


def test_code_tables_come_from_the_extension() -> None:
    """c_engine reads the type/NaN/divisor/average-kind codes from the extension's tables."""
    from poolcheck.engines import _cpool

    assert set(_cpool.MAX_TYPES) == {"float32", "float64", *INTS}
    assert sorted(_cpool.MAX_TYPES.values()) == list(range(len(_cpool.MAX_TYPES)))
    assert set(_cpool.NAN_MODES) == {"propagate", "ignore", "first"}
    assert set(_cpool.DIVISOR_RULES) == {"full", "padded", "valid"}
    assert set(_cpool.AVG_KINDS) == {"float32", "float64", "float32_to_float64"}
    assert c_engine._MAX_CODES == _cpool.MAX_TYPES and c_engine._NAN_CODES == _cpool.NAN_MODES
    for name in _cpool.MAX_TYPES:  # every name is NumPy's spelling of a dtype
        assert np.dtype(name).name == name


def test_multi_phase_init_gives_independent_module_objects() -> None:
    """PEP 489: the extension loads again under another name as a separate module object."""
    import importlib.util

    from poolcheck.engines import _cpool

    spec = importlib.util.spec_from_file_location("other._cpool", _cpool.__file__)
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    assert other is not _cpool and other.MAX_TYPES == _cpool.MAX_TYPES
    x = np.arange(6, dtype=np.float32)
    out = np.empty(5, np.float32)
    geom = c_engine._geometry_args(S.resolve(S.openvino_max_pool([2], [1]), (1, 1, 6)))
    other.max_pool(x, out, None, geom, other.MAX_TYPES["float32"], 0, np.float32(0).tobytes(), -1, 0, 6)
    assert out.tolist() == [1, 2, 3, 4, 5]


def on_every_path(call: Callable[[], Any]) -> dict[str, Any]:
    """``call()`` on every instruction-set path this CPU runs, switched in this process (the
    path in use is restored)."""
    from poolcheck.engines import _cpool

    previous = _cpool.isa()
    try:
        results = {}
        for name in ISAS:
            _cpool._set_isa(name)
            results[name] = call()
        return results
    finally:
        _cpool._set_isa(previous)


def test_paths_agree_in_process() -> None:
    """Every path this CPU runs agrees with the portable one bit for bit on the benchmark shapes
    (max with and without indices), switched in one process."""
    rng = np.random.default_rng(7)
    for spec, shape in WORKLOAD_SPECS + [(S.openvino_max_pool([4], [4]), (2, 3, 260))]:
        if spec.op != "max":
            continue
        geom = S.resolve(spec, shape)
        for mode in ("normal", "ties"):
            x = make_input(rng, shape, np.dtype(np.float32), mode)
            for layout in (None, S.index_layout(spec, shape)):
                for nan in ("propagate", "ignore"):
                    got = on_every_path(lambda: c_engine.max_pool(x, geom, layout, Policy(nan=nan)))  # noqa: B023
                    for name, (values, indices) in got.items():
                        assert_same_bits(values, got["portable"][0], f"{name} values nan={nan}")
                        if layout is not None:
                            assert_same_bits(indices, got["portable"][1], f"{name} indices nan={nan}")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_global_average_within_bound_on_wide_exponents(isa: str, dtype: str) -> None:
    """Global pooling sums in 8 interleaved float64 lanes: within the documented bound of the
    NumPy engine even where float64 sums of the plane are inexact (exponents 2^-60..2^60)."""
    rng = np.random.default_rng(11)
    shape = (2, 5, 9, 13)
    dt = np.dtype(dtype)
    top = 10 if dt == np.float16 else 60
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-top, top, shape))).astype(dt)
    x[0, 0] = -0.0  # an all -0.0 plane
    for spec in (S.openvino_avg_pool([9, 13], [1, 1]), S.openvino_avg_pool([10, 14], [1, 1], [1, 1], [0, 0], False)):
        geom = S.resolve(spec, shape)
        assert numpy_global_path(geom)
        c = c_engine.avg_pool(x, geom, spec.exclude_pad, Policy())
        n = numpy_engine.avg_pool(x, geom, spec.exclude_pad, Policy())
        assert_avg_within_bound(Case(spec, shape, geom, x, Policy(), None), c, n)


# --------------------------------------------------------------------------- fused 2-D kernels
# Two spatial axes: float32 max pooling, values only, with windows of 3 and stride 2 along the
# last axis (rows of >= 16 windows), and float32 average pooling with stride and dilation 1 on
# both axes, windows of 2 or 3 along the last (rows of >= 8 windows) and of 1 to 3 along the
# first, have fused AVX-512 kernels (avx512.c): masked first blocks or strips, overlapping last
# blocks or strips, scalar borders, rows cut by the padding, whole-row NaN fallbacks. These
# shapes reach each of those paths and the geometries left to the staged path (and the same
# shapes the other paths, switched in process or forced with POOLCHECK_ISA).

FUSED_MAX_SPECS = [
    # (kernel, strides, pads_begin, pads_end, dilations, rounding), (H, W)
    (([3, 3], [2, 2], [1, 1], [1, 1], [1, 1], "floor"), (9, 37)),   # W1's geometry, odd width
    (([3, 3], [2, 2], [1, 1], [1, 1], [1, 1], "floor"), (7, 32)),   # 16 windows exactly
    (([3, 3], [2, 2], [1, 1], [1, 1], [1, 1], "floor"), (4, 57)),   # 12 windows after the first 16: overlap
    (([2, 3], [1, 2], [0, 2], [1, 2], [2, 1], "ceil"), (6, 41)),    # pb 2: two masked taps; right border
    (([1, 3], [3, 2], [0, 0], [0, 1], [1, 1], "ceil"), (8, 36)),    # no left border, ceil right border
    (([4, 3], [2, 2], [3, 3], [3, 3], [1, 1], "floor"), (11, 51)),  # pb 3: scalar left border; empty rows
    (([3, 3], [2, 2], [1, 1], [1, 1], [1, 1], "floor"), (5, 30)),   # 15 windows: the portable path
]
FUSED_AVG_SPECS = [
    # (kernel, strides, pads_begin, pads_end, exclude_pad, rounding[, dilations]), (H, W)
    (([3, 3], [1, 1], [1, 1], [1, 1], True, "floor"), (7, 13)),     # W3's geometry, odd width: overlap
    (([3, 3], [1, 1], [1, 1], [1, 1], False, "floor"), (6, 8)),     # 8 windows exactly
    (([2, 2], [1, 1], [1, 1], [1, 2], True, "ceil"), (7, 17)),      # windows of 2; right padding
    (([3, 3], [1, 1], [0, 0], [0, 2], False, "floor"), (5, 12)),    # padding on the right only
    (([3, 3], [1, 1], [3, 3], [3, 3], True, "floor"), (6, 11)),     # rows and columns with no element
    (([1, 2], [1, 1], [0, 0], [0, 0], False, "floor"), (3, 9)),     # no padding at all; H windows of 1
    (([1, 3], [1, 1], [1, 1], [1, 1], False, "ceil"), (4, 24)),     # H windows of 1; unmasked strips
    (([2, 3], [1, 1], [0, 1], [1, 1], True, "ceil"), (5, 43)),      # unmasked strips, then an overlap
    (([3, 3], [1, 1], [1, 1], [1, 1], True, "floor"), (4, 7)),      # 7 windows: the staged path
    (([4, 3], [1, 1], [2, 2], [3, 2], True, "ceil"), (9, 11)),      # H windows of 4: the staged path
    (([2, 2], [2, 1], [1, 1], [1, 2], True, "ceil"), (7, 17)),      # H stride 2: the staged path
    (([3, 2], [1, 1], [2, 0], [2, 1], True, "floor", [2, 1]), (9, 12)),  # H dilation 2 (ONNX): staged
]


def _fused_max_spec(p: tuple) -> S.PoolSpec:  # type: ignore[type-arg]
    kernel, strides, pb, pe, dil, rounding = p
    return S.PoolSpec("max", tuple(kernel), tuple(strides), tuple(pb), tuple(pe), tuple(dil), rounding, "explicit")


def _fused_avg_spec(p: tuple) -> S.PoolSpec:  # type: ignore[type-arg]
    kernel, strides, pb, pe, excl, rounding, *dil = p
    return S.PoolSpec("avg", tuple(kernel), tuple(strides), tuple(pb), tuple(pe), tuple(dil[0] if dil else (1, 1)),
                      rounding, "explicit", exclude_pad=excl)


def _oracle_axes(geom: S.Geometry) -> list:  # type: ignore[type-arg]
    import oracle

    return [oracle.Axis(a.size, a.kernel, a.stride, a.dilation, a.pad_begin, a.pad_end, a.out) for a in geom.axes]


def _check_values_only(spec: S.PoolSpec, geom: S.Geometry, x: np.ndarray) -> None:
    """The C engine's values-only max under every NaN policy: bit for bit its values with
    indices and the NumPy engine's values; equal values to the loop oracle."""
    import oracle

    layout = S.index_layout(spec, x.shape)
    for nan in ("propagate", "ignore", "first"):
        policy = Policy(nan=nan)
        cv, _ = c_engine.max_pool(x, geom, None, policy)
        wv, _ = c_engine.max_pool(x, geom, layout, policy)
        nv, _ = numpy_engine.max_pool(x, geom, layout, policy)
        assert_same_bits(cv, wv, f"values only vs with indices nan={nan}")
        assert_same_bits(cv, nv, f"values nan={nan}")
        ov, _ = oracle.max_pool_loops(x, _oracle_axes(geom), lambda n, c, pos: 0, policy)
        assert_equal_values(cv, ov, f"oracle values nan={nan}")


@pytest.mark.parametrize(("params", "hw"), FUSED_MAX_SPECS)
@pytest.mark.parametrize("mode", ["normal", "ties", "finite"])
def test_fused_max_k3s2_matches_numpy_and_oracle(isa: str, params: tuple, hw: tuple[int, int], mode: str) -> None:  # type: ignore[type-arg]
    """Values only: bit for bit the C engine's values with indices (which are the NumPy engine's
    bit for bit), equal values to the NumPy engine and to the loop oracle."""

    spec = _fused_max_spec(params)
    shape = (2, 3, *hw)
    geom = S.resolve(spec, shape)
    rng = np.random.default_rng(zlib.crc32(repr((params, hw, mode)).encode()))
    x = make_input(rng, shape, np.dtype(np.float32), mode)
    if mode == "ties":
        x[0, 0] = np.where(rng.random(hw) < 0.5, np.float32(-0.0), np.float32(0.0))  # a plane of zeros only
    _check_values_only(spec, geom, x)


@pytest.mark.parametrize(("params", "hw"), [
    (([3, 3], [2, 2], [1, 1], [1, 1], [1, 1], "floor"), (9, 70)),  # W1's geometry: one-pass rows 1-3
    (([3, 3], [2, 2], [0, 0], [0, 0], [1, 1], "floor"), (7, 67)),  # no padding: every row one pass
])
def test_fused_max_k3s2_one_nan(isa: str, params: tuple, hw: tuple[int, int]) -> None:  # type: ignore[type-arg]
    """H windows of 3 with stride 2 take each whole output row in one pass over its blocks,
    which hands the row back when one of its taps is NaN. One NaN per plane, at the places a
    pass can miss: each of the three tap rows of a whole output row, the first and last
    element of a row, each block boundary of the 4-, 8- and 16-lane paths, and the overlap."""
    spec = _fused_max_spec(params)
    rng = np.random.default_rng(7)
    h, w = hw
    cols = sorted({0, 1, 2, w - 3, w - 2, w - 1, *(c for vl in (4, 8, 16) for c in (2 * vl - 2, 2 * vl - 1, 2 * vl))})
    places = [(r, c) for r in (1, 2, 3, 4) for c in cols]
    x = make_input(rng, (2, len(places), h, w), np.dtype(np.float32), "finite")
    for plane, (r, c) in enumerate(places):
        x[0, plane, r, c] = np.float32(np.nan)
        x[1, plane, h - 1 - r, c] = np.float32(-np.nan)
    _check_values_only(spec, S.resolve(spec, x.shape), x)


@pytest.mark.parametrize(("params", "hw"), FUSED_AVG_SPECS)
@pytest.mark.parametrize("mode", ["normal", "ties", "finite", "wide"])
def test_fused_avg_matches_numpy_and_oracle(isa: str, params: tuple, hw: tuple[int, int], mode: str) -> None:  # type: ignore[type-arg]
    """float64 sums in the NumPy engine's order: identical bits (NaN where NaN); the loop
    oracle's exact sums give the same values where float64 sums are exact (small integers)."""
    import oracle

    spec = _fused_avg_spec(params)
    shape = (2, 3, *hw)
    geom = S.resolve(spec, shape)
    rng = np.random.default_rng(zlib.crc32(repr((params, hw, mode)).encode()))
    if mode == "wide":  # exponents 2^-140 .. 2^120: float64 sums round, subnormal float32 quotients
        x = (rng.standard_normal(shape) * np.exp2(rng.integers(-140, 120, shape))).astype(np.float32)
        x[0, 1] = -0.0
    else:
        x = make_input(rng, shape, np.dtype(np.float32), mode)
    if mode == "ties":
        x[1, 2] = np.where(rng.random(hw) < 0.5, np.float32(-0.0), np.float32(0.0))
    for divisor in ("attribute", "full", "valid"):
        for empty_avg in ("zero", "nan"):
            policy = Policy(divisor=divisor, empty_avg=empty_avg)
            c = c_engine.avg_pool(x, geom, spec.exclude_pad, policy)
            n = numpy_engine.avg_pool(x, geom, spec.exclude_pad, policy)
            assert_same_bits(c, n, f"averages divisor={divisor} empty={empty_avg}", any_nan=True)
            if mode == "ties":
                o = oracle.avg_pool_loops(x, _oracle_axes(geom), spec.exclude_pad, policy)
                assert_equal_values(c, o, f"oracle averages divisor={divisor}")


# Float32 max pooling, values only, has two more fused AVX-512 kernels (avx512.c) that hand a
# tensor with a NaN back to the staged path: three axes with windows of 2, stride 2 and
# dilation 1 along every axis, every window whole and rows of >= 16 windows (W4); and two axes
# with stride 1, windows of 2 or 3 along the last (rows of >= 16 windows) and of 1 to 3 along
# the first, any dilations, no window without an element (the max strips; W6). These shapes
# reach their whole, masked and overlapping blocks or strips, H dilations walked in interleaved
# runs, rows cut by the padding, and the geometries they leave to the staged path.
FUSED_MAX_VALUES_SPECS = [
    # (kernel, strides, pads_begin, pads_end, dilations, rounding), spatial shape
    (([3, 3], [1, 1], [2, 2], [2, 2], [2, 2], "floor"), (9, 37)),   # W6's geometry: masked strips
    (([3, 3], [1, 1], [2, 2], [2, 2], [2, 2], "floor"), (12, 70)),  # unmasked strips, then an overlap
    (([2, 2], [1, 1], [0, 0], [0, 0], [1, 1], "floor"), (5, 17)),   # 16 windows exactly, no padding
    (([2, 3], [1, 1], [1, 20], [1, 20], [1, 20], "floor"), (5, 60)),  # W dilation 20: whole border strips
                                                                      # of taps outside the row
    (([2, 3], [1, 1], [1, 0], [1, 2], [3, 2], "ceil"), (11, 40)),   # H dilation 3: three runs; right pad
    (([1, 2], [1, 1], [0, 1], [0, 1], [1, 1], "floor"), (3, 33)),   # H windows of 1
    (([3, 3], [1, 1], [0, 0], [0, 0], [1, 1], "floor"), (6, 35)),   # no padding: the last element is a
                                                                    # third tap only (late-nan)
    (([3, 5], [2, 1], [1, 2], [1, 3], [1, 1], "ceil"), (7, 40)),    # H stride 2: the staged path
    (([2, 3], [1, 1], [3, 4], [3, 4], [1, 1], "floor"), (4, 20)),   # windows with no element: staged
    (([1, 4], [1, 1], [0, 0], [0, 0], [1, 5], "floor"), (3, 35)),   # W windows of 4: staged
    (([3, 3], [1, 1], [1, 1], [1, 1], [1, 1], "floor"), (4, 15)),   # 15 windows: the staged path
    (([2, 3], [2, 1], [1, 1], [1, 1], [3, 1], "floor"), (11, 24)),  # H stride 2, dilation 3: staged
    (([2, 2, 2], [2, 2, 2], [0, 0, 0], [0, 0, 0], [1, 1, 1], "floor"), (4, 6, 32)),  # 3-D: 16 windows
    (([2, 2, 2], [2, 2, 2], [0, 0, 0], [0, 0, 0], [1, 1, 1], "floor"), (3, 5, 45)),  # 22: overlap, odd sizes
    (([2, 2, 2], [2, 2, 2], [0, 0, 0], [0, 0, 0], [1, 1, 1], "ceil"), (2, 4, 33)),   # partial window: staged
    (([2, 2, 2], [2, 2, 2], [0, 1, 0], [0, 1, 0], [1, 1, 1], "floor"), (2, 4, 32)),  # padding: staged
    (([2, 2, 2], [2, 2, 2], [0, 0, 0], [0, 0, 0], [1, 1, 1], "floor"), (2, 2, 30)),  # 15 windows: staged
]


@pytest.mark.parametrize(("params", "spatial"), FUSED_MAX_VALUES_SPECS)
@pytest.mark.parametrize("mode", ["normal", "zeros", "finite", "late-nan"])
def test_fused_max_values_match_numpy_and_oracle(isa: str, params: tuple, spatial: tuple[int, ...], mode: str) -> None:  # type: ignore[type-arg]
    """Values only: bit for bit the NumPy engine's values (signed-zero ties keep the earlier
    tap) and the C engine's values with indices; equal values to the loop oracle."""

    spec = _fused_max_spec(params)
    shape = (2, 3, *spatial)
    geom = S.resolve(spec, shape)
    rng = np.random.default_rng(zlib.crc32(repr((params, spatial, mode)).encode()))
    x = make_input(rng, shape, np.dtype(np.float32), "normal" if mode == "normal" else "finite")
    if mode == "late-nan":  # the fast path runs every plane but the last, then hands back
        x[(1, 2, *(-1 for _ in spatial))] = np.nan
    if mode == "zeros":  # no NaN: the fast path on windows whose maximum is a tie of +0.0 and -0.0
        x[0, 0] = np.where(rng.random(spatial) < 0.5, np.float32(-0.0), np.float32(0.0))
        x[1, 1] = np.where(rng.random(spatial) < 0.3, np.float32(-1.0), x[0, 0])
    _check_values_only(spec, geom, x)


def test_fused_kernels_agree_with_portable_in_process() -> None:
    """The fused AVX-512 kernels, the avx2 path and the portable one, switched in one process:
    same bits."""
    rng = np.random.default_rng(5)
    for mode in ("normal", "ties"):
        # the 2-D k3 s2 shapes with NaN; the values-only shapes without (a NaN hands the 3-D
        # kernel's whole tensor back), each with a plane of signed zeros
        cases = [(p, hw, mode, False) for p, hw in FUSED_MAX_SPECS]
        cases += [(p, sp, "finite" if mode == "ties" else mode, True) for p, sp in FUSED_MAX_VALUES_SPECS]
        for p, spatial, x_mode, zero_plane in cases:
            spec = _fused_max_spec(p)
            geom = S.resolve(spec, (1, 4, *spatial))
            x = make_input(rng, (1, 4, *spatial), np.dtype(np.float32), x_mode)
            if zero_plane:
                x[0, 1] = np.where(rng.random(spatial) < 0.5, np.float32(-0.0), np.float32(0.0))
            for nan in ("propagate", "ignore"):
                got = on_every_path(lambda: c_engine.max_pool(x, geom, None, Policy(nan=nan))[0])  # noqa: B023
                for name, values in got.items():
                    assert_same_bits(values, got["portable"], f"{name} max {spatial} nan={nan}")
        for p, hw in FUSED_AVG_SPECS:
            spec = _fused_avg_spec(p)
            geom = S.resolve(spec, (1, 4, *hw))
            x = make_input(rng, (1, 4, *hw), np.dtype(np.float32), mode)
            got = on_every_path(lambda: c_engine.avg_pool(x, geom, spec.exclude_pad, Policy()))  # noqa: B023
            for name, values in got.items():
                assert_same_bits(values, got["portable"], f"{name} avg {hw}", any_nan=True)
