"""The family's engines (LpPool, global pooling, adaptive pooling, MaxUnpool) against the
independent loop oracle (tests/oracle_family.py), and the C engine against the NumPy engine.

Exact where the result is exact: max values and indices, MaxUnpool, and C against NumPy for
everything but GlobalAveragePool (whose engines share the existing average kernels; their
global sums agree within the judgement's average rule). Against the oracle, which computes sums
exactly: Lp norms and averages within the float64 summation error plus one ulp of the result
type (``assert_close``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import oracle
import oracle_family as OF
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

import poolcheck as P
from poolcheck.engines import available_engines
from poolcheck.errors import AttributeValueError

ENGINES = available_engines()
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOATS = ("float16", "float32", "float64")


@st.composite
def inputs(draw: st.DrawFn, rank: int | None = None, *, specials: bool = False, small: bool = False) -> np.ndarray:
    n = rank if rank is not None else draw(st.integers(1, 3))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2)),
             *(draw(st.integers(1, 4 if n == 3 else 7)) for _ in range(n)))
    dtype = np.dtype(draw(st.sampled_from(FLOATS)))
    size = math.prod(shape)
    values = draw(st.lists(st.integers(-8, 8), min_size=size, max_size=size))
    x = (np.array(values, dtype=np.float64) / (1 if small else draw(st.sampled_from([1, 4, 3])))).astype(dtype)
    x = x.reshape(shape)
    if specials and draw(st.booleans()):
        flat = x.reshape(-1)
        for _ in range(draw(st.integers(1, 2))):
            flat[draw(st.integers(0, size - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))
    return x


def assert_same(expected: np.ndarray, actual: np.ndarray) -> None:
    """Bit for bit: the same dtype, shape, values, NaN positions and signs of zero."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    assert np.array_equal(np.isnan(e), np.isnan(a))
    ok = ~np.isnan(e)
    assert np.array_equal(e[ok], a[ok]) and np.array_equal(np.signbit(e[ok]), np.signbit(a[ok]))


def assert_same_max(expected: np.ndarray, actual: np.ndarray) -> None:
    """A float max bit for bit, except that a max of tied zeros may come out with either sign
    (documented in numpy_engine.py: SIMD np.maximum picks either), as for MaxPool
    (tests/engines/test_numpy_engine.py)."""
    assert actual.dtype == expected.dtype
    assert_same(expected, np.where(expected == 0, expected, actual).astype(actual.dtype))
    assert np.array_equal(expected, actual, equal_nan=True)


def assert_close(expected: np.ndarray, actual: np.ndarray, terms: int, scale: np.ndarray) -> None:
    """Within ``terms`` float64 roundings of ``scale`` plus one ulp of the result type."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    assert np.array_equal(np.isnan(e), np.isnan(a))
    ok = np.isfinite(e)
    assert np.array_equal(e[~ok & ~np.isnan(e)], a[~ok & ~np.isnan(e)])
    ulp = np.spacing(np.abs(expected[ok])).astype(np.float64)
    tol = terms * np.finfo(np.float64).eps * np.abs(scale[ok]) + ulp
    assert np.all(np.abs(e[ok] - a[ok]) <= tol), (e, a)


# --------------------------------------------------------------------------- LpPool


@st.composite
def lp_configs(draw: st.DrawFn) -> tuple[np.ndarray, dict[str, Any]]:
    x = draw(inputs(small=True))
    n = x.ndim - 2
    ints = st.lists(st.integers(1, 3), min_size=n, max_size=n)
    attrs = {"kernel_shape": draw(ints), "strides": draw(ints), "dilations": draw(st.lists(st.integers(1, 2), min_size=n, max_size=n)),
             "pads": draw(st.lists(st.integers(0, 3), min_size=2 * n, max_size=2 * n)),
             "ceil_mode": draw(st.sampled_from([0, 1])),
             "auto_pad": draw(st.sampled_from(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])),
             "p": draw(st.integers(1, 5))}
    if attrs["auto_pad"] != "NOTSET":
        del attrs["pads"]
    return x, attrs


def _oracle_or_skip(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except oracle.OracleShapeError:
        assume(False)


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(cfg=lp_configs())
def test_lp_pool_matches_the_oracle(engine: str, cfg: tuple[np.ndarray, dict[str, Any]]) -> None:
    x, attrs = cfg
    note(f"{attrs} {x.dtype} {x.shape}")
    expected = _oracle_or_skip(OF.lp_pool, x, **attrs)
    try:
        actual = P.onnx_lp_pool(x, engine=engine, **attrs)
    except AttributeValueError:
        assume(False)  # e.g. a dilated kernel longer than the padded input (the oracle agrees)
        return
    taps = math.prod(attrs["kernel_shape"])
    assert_close(expected, actual, taps + 12, expected.astype(np.float64))


@SETTINGS
@given(cfg=lp_configs())
def test_lp_pool_c_is_numpy_bit_for_bit(cfg: tuple[np.ndarray, dict[str, Any]]) -> None:
    if "c" not in ENGINES:
        pytest.skip("no C engine")
    x, attrs = cfg
    try:
        ref = P.onnx_lp_pool(x, engine="numpy", **attrs)
    except AttributeValueError:
        assume(False)
        return
    assert_same(ref, P.onnx_lp_pool(x, engine="c", **attrs))


def test_lp_pool_worked_example() -> None:
    # 1-D, kernel 2, p 2, pads [1, 0]: windows {pad, 3}, {3, 4}, {4, 0}
    x = np.array([[[3.0, 4.0, 0.0]]], dtype=np.float32)
    for engine in ENGINES:
        y = P.onnx_lp_pool(x, [2], p=2, pads=[1, 0], engine=engine)
        assert y.tolist() == [[[3.0, 5.0, 4.0]]]
        assert P.onnx_lp_pool(x, [2], p=1, engine=engine).tolist() == [[[7.0, 4.0]]]


# --------------------------------------------------------------------------- global pooling


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(x=inputs(specials=True), p=st.integers(1, 4))
def test_global_pooling_matches_the_oracle(engine: str, x: np.ndarray, p: int) -> None:
    size = math.prod(x.shape[2:])
    scale = np.abs(x.astype(np.float64)).reshape(*x.shape[:2], -1).mean(axis=2).reshape(OF.global_pool(x, "max").shape)
    with np.errstate(all="ignore"):
        assert_close(OF.global_pool(x, "avg"), P.onnx_global_average_pool(x, engine=engine), size + 2, scale)
    assert_same_max(OF.global_pool(x, "max"), P.onnx_global_max_pool(x, engine=engine))
    lp = OF.global_pool(x, "lp", p)
    assert_close(lp, P.onnx_global_lp_pool(x, p=p, engine=engine), size + 12, lp.astype(np.float64))


@SETTINGS
@given(x=inputs(specials=True), p=st.integers(1, 4))
def test_global_pooling_c_is_numpy(x: np.ndarray, p: int) -> None:
    if "c" not in ENGINES:
        pytest.skip("no C engine")
    assert_same_max(P.onnx_global_max_pool(x), P.onnx_global_max_pool(x, engine="c"))
    assert_same(P.onnx_global_lp_pool(x, p=p), P.onnx_global_lp_pool(x, p=p, engine="c"))


def test_global_output_shape_keeps_rank() -> None:
    x = np.arange(2 * 3 * 2 * 2 * 5, dtype=np.float64).reshape(2, 3, 2, 2, 5)
    for engine in ENGINES:
        assert P.onnx_global_average_pool(x, engine=engine).shape == (2, 3, 1, 1, 1)
        assert P.onnx_global_max_pool(x, engine=engine)[1, 2, 0, 0, 0] == x[1, 2].max()


# --------------------------------------------------------------------------- adaptive pooling


@st.composite
def adaptive_configs(draw: st.DrawFn) -> tuple[np.ndarray, list[int]]:
    x = draw(inputs(specials=True))
    return x, [draw(st.integers(1, 9)) for _ in range(x.ndim - 2)]


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(cfg=adaptive_configs(), index_type=st.sampled_from(["i32", "i64"]))
def test_adaptive_pooling_matches_the_oracle(engine: str, cfg: tuple[np.ndarray, list[int]], index_type: str) -> None:
    x, outs = cfg
    note(f"{x.dtype} {x.shape} -> {outs}")
    values, index = OF.adaptive(x, outs, "max")
    y, ind = P.adaptive_max_pool(x, outs, index_element_type=index_type, engine=engine)
    assert_same(values, y)
    assert ind.dtype == {"i32": np.int32, "i64": np.int64}[index_type]
    assert np.array_equal(ind, index)
    mean, _ = OF.adaptive(x, outs, "avg")
    biggest = max(math.ceil(n / o) + 1 for n, o in zip(x.shape[2:], outs))
    with np.errstate(all="ignore"):
        assert_close(mean, P.adaptive_avg_pool(x, outs, engine=engine), biggest ** len(outs) + 2,
                     np.full(mean.shape, np.nanmax(np.abs(np.where(np.isfinite(x), x, 0)).astype(np.float64))))


@SETTINGS
@given(cfg=adaptive_configs())
def test_adaptive_pooling_c_is_numpy_bit_for_bit(cfg: tuple[np.ndarray, list[int]]) -> None:
    if "c" not in ENGINES:
        pytest.skip("no C engine")
    x, outs = cfg
    assert_same(P.adaptive_avg_pool(x, outs), P.adaptive_avg_pool(x, outs, engine="c"))
    (y, i), (yc, ic) = P.adaptive_max_pool(x, outs), P.adaptive_max_pool(x, outs, engine="c")
    assert_same(y, yc)
    assert np.array_equal(i, ic)


def test_adaptive_bins_overlap_when_the_input_does_not_divide() -> None:
    # H_in 5 -> H_out 3: bins [0, 2), [1, 4), [3, 5) (floor(1 * 5 / 3) = 1, ceil(2 * 5 / 3) = 4)
    x = np.array([[[1.0, 2.0, 3.0, 4.0, 5.0]]])
    for engine in ENGINES:
        assert P.adaptive_avg_pool(x, [3], engine=engine).tolist() == [[[1.5, 3.0, 4.5]]]
        y, ind = P.adaptive_max_pool(x, [3], engine=engine)
        assert y.tolist() == [[[2.0, 4.0, 5.0]]] and ind.tolist() == [[[1, 3, 4]]]


# --------------------------------------------------------------------------- MaxUnpool


@st.composite
def unpool_configs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    x = draw(inputs(specials=True))
    n = x.ndim - 2
    attrs: dict[str, Any] = {"kernel_shape": draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)),
                             "strides": draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)),
                             "pads": [0] * (2 * n)}
    shape = OF.unpool_shape(x.shape, attrs["kernel_shape"], attrs["strides"], attrs["pads"])
    if draw(st.booleans()):
        shape = (*x.shape[:2], *(draw(st.integers(1, 9)) for _ in range(n)))
        attrs["output_shape"] = list(shape)
    total = math.prod(shape)
    indices = np.array(draw(st.lists(st.integers(0, total - 1), min_size=x.size, max_size=x.size)),
                       dtype=np.int64).reshape(x.shape)  # collisions included
    return x, indices, attrs


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(cfg=unpool_configs())
def test_max_unpool_matches_the_oracle(engine: str, cfg: tuple[np.ndarray, np.ndarray, dict[str, Any]]) -> None:
    x, indices, attrs = cfg
    assert_same(OF.max_unpool(x, indices, **attrs), P.onnx_max_unpool(x, indices, engine=engine, **attrs))


def test_max_unpool_documented_example_without_output_shape() -> None:
    # onnx/backend/test/case/node/maxunpool.py, export_without_output_shape
    x = np.array([[[[1, 2], [3, 4]]]], dtype=np.float32)
    i = np.array([[[[5, 7], [13, 15]]]], dtype=np.int64)
    for engine in ENGINES:
        y = P.onnx_max_unpool(x, i, [2, 2], strides=[2, 2], engine=engine)
        assert y.tolist() == [[[[0, 0, 0, 0], [0, 1, 0, 2], [0, 0, 0, 0], [0, 3, 0, 4]]]]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("call", "attribute"), [
    (lambda x: P.onnx_lp_pool(x, [2], p=0), "p"),
    (lambda x: P.onnx_lp_pool(x, [2], p=2.5), "p"),
    (lambda x: P.onnx_lp_pool(x, [2], pads=[1]), "pads"),
    (lambda x: P.onnx_lp_pool(x, [2], auto_pad="same_upper"), "auto_pad"),
    (lambda x: P.onnx_lp_pool(x, [2, 2]), "kernel_shape"),
    (lambda x: P.onnx_lp_pool(x, [2], ceil_mode=2), "ceil_mode"),
    (lambda x: P.onnx_lp_pool(x, [2], engine="fortran"), "engine"),
    (lambda x: P.onnx_global_lp_pool(x, p=-1), "p"),
    (lambda x: P.adaptive_avg_pool(x, [0]), "output_shape"),
    (lambda x: P.adaptive_avg_pool(x, 3), "output_shape"),
    (lambda x: P.adaptive_avg_pool(x, [2, 2]), "output_shape"),
    (lambda x: P.adaptive_max_pool(x, [2], index_element_type="u8"), "index_element_type"),
    (lambda x: P.onnx_max_unpool(x, np.array([[[0, 9, 1, 2]]]), [2]), "indices"),
    (lambda x: P.onnx_max_unpool(x, np.array([[[0, 1]]]), [2]), "indices"),
    (lambda x: P.onnx_max_unpool(x, np.array([[[0, 1, 2, 3]]]), [2], output_shape=[1, 2, 9]), "output_shape"),
    (lambda x: P.onnx_max_unpool(x, np.array([[[0, 1, 2, 3]]]), [2], pads=[3, 3]), "pads"),
    (lambda x: P.onnx_global_max_pool(x.astype(np.int32)), "dtype"),
])
def test_invalid_attributes_raise_value_error_naming_them(call: Any, attribute: str) -> None:
    x = np.zeros((1, 1, 4), dtype=np.float32)
    with pytest.raises(ValueError) as err:
        call(x)
    assert isinstance(err.value, AttributeValueError) and err.value.attribute == attribute, str(err.value)


def test_family_output_shape_is_what_the_engines_return() -> None:
    from poolcheck.spec.family import family_output_shape
    from poolcheck.spec.operators import parse

    x = np.zeros((2, 3, 5, 7), dtype=np.float32)
    for name, attrs, run in [
        ("LpPool-22", {"kernel_shape": [2, 3], "strides": [2, 2], "ceil_mode": 1},
         lambda: P.onnx_lp_pool(x, [2, 3], strides=[2, 2], ceil_mode=1)),
        ("GlobalLpPool-22", {}, lambda: P.onnx_global_lp_pool(x)),
        ("AdaptiveAvgPool-8", {"output_shape": [4, 9]}, lambda: P.adaptive_avg_pool(x, [4, 9])),
        ("MaxUnpool-22", {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 0, 0, 1]},
         lambda: P.onnx_max_unpool(x, np.zeros(x.shape, dtype=np.int64), [2, 2], strides=[2, 2], pads=[1, 0, 0, 1])),
    ]:
        assert family_output_shape(parse(name, attrs), x.shape) == run().shape, name


@SETTINGS
@given(cfg=adaptive_configs(), lp=lp_configs())
def test_the_numpy_engines_two_loops_agree_bit_for_bit(cfg: tuple[np.ndarray, list[int]],
                                                        lp: tuple[np.ndarray, dict[str, Any]]) -> None:
    """Loops over offsets or taps (each pass covering every window) and over windows or bins
    (each reduced in order) must give the same bits: the engine runs whichever is shorter."""
    from poolcheck.engines import family_numpy as F
    from poolcheck.spec.operators import parse
    from poolcheck.spec.shape import resolve

    x, outs = cfg
    original = F._by_bin
    try:
        results = []
        for choice in (False, True):
            F._by_bin = lambda sizes, outs, choice=choice: choice  # type: ignore[assignment]
            results.append((F.adaptive_avg(x, outs), *F.adaptive_max(x, outs)))
    finally:
        F._by_bin = original  # type: ignore[assignment]
    (avg, values, index), (avg_b, values_b, index_b) = results
    assert_same(avg, avg_b)
    assert_same(values, values_b)
    assert np.array_equal(index, index_b)
    xl, attrs = lp
    window = parse("LpPool-22", attrs).window
    try:
        geom = resolve(window, xl.shape)
    except AttributeValueError:
        assume(False)
        return
    powers = F.power(xl, attrs["p"])
    assert_same(F._lp_sums_by_tap(powers, geom), F._lp_sums_by_window(powers, geom))


def test_large_windows_agree_between_engines() -> None:
    rng = np.random.default_rng(23)
    x = rng.standard_normal((1, 2, 300, 300)).astype(np.float32)
    for engine in ENGINES:
        assert P.onnx_global_lp_pool(x, p=3, engine=engine).shape == (1, 2, 1, 1)
    if "c" in ENGINES:
        assert_same(P.onnx_global_lp_pool(x, p=3), P.onnx_global_lp_pool(x, p=3, engine="c"))
        long = rng.standard_normal((1, 1, 200_000)).astype(np.float64)
        assert_same(P.adaptive_avg_pool(long, [3]), P.adaptive_avg_pool(long, [3], engine="c"))
        (v, i), (vc, ic) = P.adaptive_max_pool(long, [3]), P.adaptive_max_pool(long, [3], engine="c")
        assert_same(v, vc) and np.array_equal(i, ic)


# The Lp root's bits on every CPU: ``s ** fl(1/p)`` rounded correctly, never the machine's pow.
ROOT_CASES = [(127.0, 3), (76.0, 3),  # an AVX-512 NumPy's SIMD pow rounded these down
              (7.863003716563987e-74, 3), (9.291042207970062e-121, 4), (1.339067909718994e-39, 4),
              (9.342860382578622e+208, 7)]  # glibc's pow (NumPy on an AVX2 CPU) rounds these wrong


@pytest.mark.parametrize("s,p", ROOT_CASES)
def test_lp_root_is_the_correctly_rounded_power_whatever_the_cpu(s: float, p: int) -> None:
    """The oracle: Python's decimal at 60 digits, ``s ** Decimal(1.0 / p)`` (the float64 exponent,
    as every ``pow(s, 1.0 / p)`` takes it), rounded once to float64."""
    import decimal

    from poolcheck.api_family import nearest_root

    want = float(decimal.Context(prec=60).power(decimal.Decimal(s), decimal.Decimal(1.0 / p)))
    assert nearest_root(np.array([s, 0.0, np.inf, np.nan]), p).tolist()[:3] == [want, 0.0, np.inf]
    assert math.isnan(nearest_root(np.array([np.nan]), p)[0])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_float64_lp_pool_root_has_the_same_bits_on_every_cpu(engine: str) -> None:
    """LpPool p = 3 over windows whose cubes sum to 127 and 76: 5.026525695313479 and
    4.235823584254893, the nearest float64s (an AVX-512 machine's np.power gave one unit less)."""
    x = np.array([[[5.0, 1.0, 1.0, 0.0, 0.0, 0.0, 4.0, 2.0, 1.0, 1.0, 1.0, 1.0]]])  # 125+1+1; 64+8+1+1+1+1
    got = P.onnx_lp_pool(x, [6], strides=[6], p=3, engine=engine)
    assert got.ravel().tolist() == [5.026525695313479, 4.235823584254893]


@pytest.mark.parametrize("every_one_in_decimal", [False, True])
def test_lp_root_agrees_with_decimal_on_sums_across_the_range(every_one_in_decimal: bool,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """800 sums from 1e-300 to 1e300 and small integers, p = 3 and 7: the long double path
    (with its near-midpoint cases in decimal) and the decimal path alone give the 60-digit
    oracle's float64, bit for bit."""
    import decimal

    from poolcheck import api_family

    if every_one_in_decimal:
        monkeypatch.setattr(api_family, "ROOT_MARGIN", np.longdouble(1.0))
    rng = np.random.default_rng(7)
    sums = np.concatenate([rng.random(600) * 10.0 ** rng.integers(-300, 300, 600),
                           rng.integers(1, 200, 200).astype(np.float64)])
    context = decimal.Context(prec=60)
    for p in (3, 7):
        want = [float(context.power(decimal.Decimal(float(s)), decimal.Decimal(1.0 / p))) for s in sums]
        assert api_family.nearest_root(sums, p).tolist() == want


# --------------------------------------------------------------------------- values that are copies

#: NaNs whose bits an arithmetic operation would change: a signalling NaN (quieted by any
#: widening cast) and a negative quiet NaN with a payload, per float type (bits).
ODD_NANS = {"float16": (0x7C01, 0xFE05), "float32": (0x7F800001, 0xFFC00005),
            "float64": (0x7FF0000000000001, 0xFFF8000000000005)}


@st.composite
def with_odd_nans(draw: st.DrawFn) -> np.ndarray:
    """An input of :func:`inputs` with one to three elements made signalling or payload NaNs."""
    x = draw(inputs(specials=True))
    bits = x.reshape(-1).view(f"u{x.dtype.itemsize}")
    for _ in range(draw(st.integers(1, 3))):
        bits[draw(st.integers(0, x.size - 1))] = draw(st.sampled_from(ODD_NANS[x.dtype.name]))
    return x


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(x=with_odd_nans(), data=st.data())
def test_adaptive_max_and_max_unpool_values_are_the_input_elements_bits(engine: str, x: np.ndarray,
                                                                        data: st.DataObject) -> None:
    """AdaptiveMaxPool's values are elements of X and MaxUnpool's are elements of X or zero: each
    keeps its bits, a signalling NaN and a NaN's payload too (the C engine's float64 widening
    used to quiet them: 0x7F800001 -> 0x7FC00001). The oracle reads the bits at the indices (a
    loop over the elements for MaxUnpool, the last write staying)."""
    outs = [data.draw(st.integers(1, 5)) for _ in range(x.ndim - 2)]
    y, ind = P.adaptive_max_pool(x, outs, engine=engine)
    planes = x.shape[0] * x.shape[1]
    want = np.take_along_axis(_bits(x).reshape(planes, -1), ind.reshape(planes, -1), 1)
    assert np.array_equal(_bits(y).reshape(planes, -1), want)
    total = math.prod(x.shape)
    indices = np.array(data.draw(st.lists(st.integers(0, total - 1), min_size=total, max_size=total)),
                       dtype=np.int64).reshape(x.shape)  # an output the shape of X: collisions included
    out = P.onnx_max_unpool(x, indices, kernel_shape=[1] * (x.ndim - 2), strides=[1] * (x.ndim - 2),
                            engine=engine)
    expected = np.zeros(total, dtype=_bits(x).dtype)
    for at, b in zip(indices.reshape(-1), _bits(x).reshape(-1)):
        expected[at] = b
    assert np.array_equal(_bits(out).reshape(-1), expected)
