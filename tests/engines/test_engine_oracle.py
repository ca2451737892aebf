"""Property tests: poolcheck's reference engines against the independent loop oracle (tests/oracle.py).

Every attribute of every convention is drawn: ranks 3-5, per-axis kernel/strides/dilations,
asymmetric pads (also pads >= kernel, i.e. windows wholly in padding), every rounding_type and
auto_pad (same_* with stride > 1 too), axis (negative too), index_element_type, storage_order,
exclude_pad / count_include_pad, integer and floating dtypes, inputs with ties, NaN and +-inf.

Max pooling must match exactly: values (NaN where the oracle has NaN), indices, dtypes.
Averages: float16 inputs must match exactly (a float64 sum of at most a few hundred float16 values
is exact, so both sides round the same quotient once); float32/float64 may differ by the float64
summation-order error only, bounded by ``(taps + 2) * eps64 * mean(|x|)``, or one ulp of the result
type after rounding (see ``assert_close_avg``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import oracle
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import poolcheck
from poolcheck import Policy
from poolcheck import spec as S
from poolcheck.engines import available_engines
from poolcheck.spec.operators import ONNX_AUTO_PAD_NAMES

try:  # the shared ``engine`` fixture (tests/conftest.py), when present, drives the parametrisation
    import conftest as _conftest

    _HAS_ENGINE_FIXTURE = hasattr(_conftest, "engine")
except ImportError:  # pragma: no cover - conftest always sits next to this file in the repo
    _HAS_ENGINE_FIXTURE = False

if not _HAS_ENGINE_FIXTURE:

    @pytest.fixture(params=available_engines())
    def engine(request: pytest.FixtureRequest) -> str:
        """Every engine usable here (numpy, and c once it is built)."""
        return str(request.param)


# ``engine`` is a plain string fixture: safe to share between hypothesis examples.
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

FLOAT_DTYPES = ("float16", "float32", "float64")
INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


# --------------------------------------------------------------------------- strategies


@dataclass(frozen=True)
class Limits:
    size: int
    kernel: int
    pad: int
    stride: int
    dilation: int
    channels: int


#: Kept small so the loop oracle stays fast: at most a few thousand taps per example.
LIMITS = {
    1: Limits(size=9, kernel=4, pad=4, stride=4, dilation=3, channels=3),
    2: Limits(size=6, kernel=3, pad=3, stride=3, dilation=3, channels=2),
    3: Limits(size=4, kernel=3, pad=2, stride=3, dilation=2, channels=2),
}


@dataclass(frozen=True)
class Config:
    """Geometry drawn for one example (OpenVINO names; ``pads`` is the ONNX begin+end list)."""

    input_shape: tuple[int, ...]
    kernel: list[int]
    strides: list[int]
    pads_begin: list[int]
    pads_end: list[int]
    dilations: list[int]
    auto_pad: str  # canonical: explicit | valid | same_upper | same_lower

    @property
    def pads(self) -> list[int]:
        return self.pads_begin + self.pads_end

    @property
    def onnx_auto_pad(self) -> str:
        return {"explicit": "NOTSET", "valid": "VALID", "same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER"}[
            self.auto_pad
        ]


@st.composite
def configs(draw: Any, *, dilated: bool = True) -> Config:
    """A geometry with an output: the dilated kernel fits the padded input (explicit) / the input
    (valid); same_* fits any kernel. Pads are drawn even when auto_pad makes them irrelevant."""
    rank = draw(st.integers(1, 3), label="spatial rank")
    lim = LIMITS[rank]
    auto_pad = draw(st.sampled_from(["explicit", "explicit", "valid", "same_upper", "same_lower"]), label="auto_pad")
    sizes, kernel, strides, pb, pe, dil = [], [], [], [], [], []
    for _ in range(rank):
        size = draw(st.integers(1, lim.size))
        d = draw(st.integers(1, lim.dilation)) if dilated else 1
        b = draw(st.integers(0, lim.pad))
        e = draw(st.integers(0, lim.pad))
        room = {"explicit": size + b + e, "valid": size}.get(auto_pad, 10**6)
        k = draw(st.integers(1, max(1, min(lim.kernel, (room - 1) // d + 1))))
        sizes.append(size)
        kernel.append(k)
        strides.append(draw(st.integers(1, lim.stride)))
        pb.append(b)
        pe.append(e)
        dil.append(d)
    batch = draw(st.integers(1, 2), label="N")
    channels = draw(st.integers(1, lim.channels), label="C")
    return Config((batch, channels, *sizes), kernel, strides, pb, pe, dil, auto_pad)


SPECIALS = (math.nan, math.inf, -math.inf)
TIE_POOL = (-2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0)


@st.composite
def arrays_for(draw: Any, shape: tuple[int, ...], dtype: str, *, specials: bool = True) -> np.ndarray:
    """Input values: few distinct values (ties) or a spread, plus a few NaN / +-inf for floats and the
    extreme values for integers."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        if draw(st.booleans(), label="ties"):
            elements = st.sampled_from(TIE_POOL)
        else:
            bound = 1e6 if dt == np.float64 else None  # keep float64 sums far from overflow
            elements = st.floats(width=dt.itemsize * 8, allow_nan=False, allow_infinity=False,
                                 min_value=-bound if bound else None, max_value=bound)
    else:
        info = np.iinfo(dt)
        elements = st.one_of(st.integers(max(info.min, -3), 3), st.sampled_from([int(info.min), int(info.max)]))
    arr = draw(hnp.arrays(dt, shape, elements=elements))
    arr = np.array(arr, copy=True)
    if dt.kind == "f" and specials:
        for _ in range(draw(st.integers(0, 3), label="special count")):
            pos = draw(st.integers(0, arr.size - 1))
            arr.flat[pos] = draw(st.sampled_from(SPECIALS))
    return arr


# --------------------------------------------------------------------------- comparisons


def _first_mismatch(bad: np.ndarray) -> tuple[int, ...]:
    return tuple(int(v) for v in np.argwhere(bad)[0])


def assert_same_max(got: tuple[np.ndarray, np.ndarray], exp: tuple[np.ndarray, np.ndarray], label: str) -> None:
    """Exact equality of values (NaN matches NaN), indices and both dtypes."""
    gv, gi = got
    ev, ei = exp
    assert gv.shape == ev.shape, f"out.shape={gv.shape}, but should be {ev.shape} [{label}]"
    assert gv.dtype == ev.dtype, f"out.dtype={gv.dtype}, but should be {ev.dtype} [{label}]"
    assert gi.dtype == ei.dtype, f"indices.dtype={gi.dtype}, but should be {ei.dtype} [{label}]"
    same = gv == ev
    if ev.dtype.kind == "f":
        same |= np.isnan(gv) & np.isnan(ev)
    if not same.all():
        at = _first_mismatch(~same)
        raise AssertionError(f"out[{at}]={gv[at]!r}, but should be {ev[at]!r} [{label}]")
    if not np.array_equal(gi, ei):
        at = _first_mismatch(gi != ei)
        raise AssertionError(f"indices[{at}]={gi[at]}, but should be {ei[at]} (value {ev[at]!r}) [{label}]")


def assert_close_avg(got: np.ndarray, exp: np.ndarray, scale: np.ndarray, taps: int, label: str) -> None:
    """Averages: NaN/inf positions equal; float16 exact; float32/64 within the summation-order bound
    ``(taps + 2) * eps64 * scale`` (``scale`` = mean of |x| over the window) or 1 ulp of the dtype."""
    assert got.shape == exp.shape, f"out.shape={got.shape}, but should be {exp.shape} [{label}]"
    assert got.dtype == exp.dtype, f"out.dtype={got.dtype}, but should be {exp.dtype} [{label}]"
    nan_bad = np.isnan(got) != np.isnan(exp)
    if nan_bad.any():
        at = _first_mismatch(nan_bad)
        raise AssertionError(f"out[{at}]={got[at]!r}, but should be {exp[at]!r} [{label}]")
    finite = np.isfinite(exp)
    inf_bad = ~finite & ~np.isnan(exp) & (got != exp)
    if inf_bad.any():
        at = _first_mismatch(inf_bad)
        raise AssertionError(f"out[{at}]={got[at]!r}, but should be {exp[at]!r} [{label}]")
    g = got.astype(np.float64)
    e = exp.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # non-finite cells are masked out
        diff = np.where(finite, np.abs(g - e), 0.0)
        if exp.dtype == np.float16:
            allowed = np.zeros_like(diff)
        else:
            allowed = np.maximum(
                (taps + 2) * np.finfo(np.float64).eps * scale.astype(np.float64),
                np.spacing(np.abs(exp)).astype(np.float64),
            )
    bad = finite & (diff > allowed)
    if bad.any():
        at = _first_mismatch(bad)
        raise AssertionError(
            f"out[{at}]={got[at]!r}, but should be {exp[at]!r} (|diff|={diff[at]:.3g} > {allowed[at]:.3g}) [{label}]"
        )


def _abs_scale(x: np.ndarray, fn: Any, **kw: Any) -> np.ndarray:
    """Mean |x| per window: the scale of the summation error (the oracle on |x| in float64,
    non-finite entries zeroed: they are compared separately)."""
    a = np.abs(x.astype(np.float64))
    a[~np.isfinite(a)] = 0.0
    return fn(a, **kw)


# --------------------------------------------------------------------------- OpenVINO MaxPool


@FIXTURE_OK
@given(cfg=configs(), data=st.data())
def test_openvino_max_pool_matches_oracle(engine: str, cfg: Config, data: Any) -> None:
    dtype = data.draw(st.sampled_from(FLOAT_DTYPES + INT_DTYPES), label="dtype")
    x = data.draw(arrays_for(cfg.input_shape, dtype), label="x")
    rounding = data.draw(st.sampled_from(["floor", "ceil", "ceil_torch"]), label="rounding_type")
    rank = len(cfg.input_shape)
    axis = data.draw(st.integers(-rank, rank - 1), label="axis")
    itype = data.draw(st.sampled_from(["i32", "i64"]), label="index_element_type")
    attrs = dict(kernel=cfg.kernel, strides=cfg.strides, pads_begin=cfg.pads_begin, pads_end=cfg.pads_end,
                 dilations=cfg.dilations, rounding_type=rounding, auto_pad=cfg.auto_pad, axis=axis,
                 index_element_type=itype)
    label = f"MaxPool {attrs} x{x.shape}:{x.dtype} engine={engine}"
    note(label)
    before = x.copy()
    expected = oracle.openvino_max_pool(x, **attrs)
    got = poolcheck.max_pool(x, **attrs, engine=engine)
    assert_same_max(got, expected, label)
    np.testing.assert_array_equal(x, before, err_msg=f"input modified [{label}]")


# --------------------------------------------------------------------------- ONNX MaxPool


@FIXTURE_OK
@given(cfg=configs(), data=st.data())
def test_onnx_max_pool_matches_oracle(engine: str, cfg: Config, data: Any) -> None:
    dtype = data.draw(st.sampled_from(FLOAT_DTYPES + ("int8", "uint8")), label="dtype")
    x = data.draw(arrays_for(cfg.input_shape, dtype), label="x")
    attrs = dict(kernel_shape=cfg.kernel, strides=cfg.strides, pads=cfg.pads, dilations=cfg.dilations,
                 ceil_mode=data.draw(st.sampled_from([0, 1]), label="ceil_mode"), auto_pad=cfg.onnx_auto_pad,
                 storage_order=data.draw(st.sampled_from([0, 1]), label="storage_order"))
    label = f"ONNX MaxPool {attrs} x{x.shape}:{x.dtype} engine={engine}"
    note(label)
    expected = oracle.onnx_max_pool(x, **attrs)
    got = poolcheck.onnx_max_pool(x, **attrs, engine=engine)
    assert_same_max(got, expected, label)


# --------------------------------------------------------------------------- averages


@FIXTURE_OK
@given(cfg=configs(dilated=False), data=st.data())
def test_openvino_avg_pool_matches_oracle(engine: str, cfg: Config, data: Any) -> None:
    dtype = data.draw(st.sampled_from(FLOAT_DTYPES), label="dtype")
    x = data.draw(arrays_for(cfg.input_shape, dtype), label="x")
    attrs = dict(kernel=cfg.kernel, strides=cfg.strides, pads_begin=cfg.pads_begin, pads_end=cfg.pads_end,
                 exclude_pad=data.draw(st.booleans(), label="exclude_pad"),
                 rounding_type=data.draw(st.sampled_from(["floor", "ceil", "ceil_torch"]), label="rounding_type"),
                 auto_pad=cfg.auto_pad)
    label = f"AvgPool {attrs} x{x.shape}:{x.dtype} engine={engine}"
    note(label)
    before = x.copy()
    expected = oracle.openvino_avg_pool(x, **attrs)
    got = poolcheck.avg_pool(x, **attrs, engine=engine)
    np.testing.assert_array_equal(x, before, err_msg=f"input modified [{label}]")
    scale = _abs_scale(x, oracle.openvino_avg_pool, **attrs)
    assert_close_avg(got, expected, scale, math.prod(cfg.kernel), label)


@FIXTURE_OK
@given(cfg=configs(), data=st.data())
def test_onnx_average_pool_matches_oracle(engine: str, cfg: Config, data: Any) -> None:
    dtype = data.draw(st.sampled_from(FLOAT_DTYPES), label="dtype")
    x = data.draw(arrays_for(cfg.input_shape, dtype), label="x")
    attrs = dict(kernel_shape=cfg.kernel, strides=cfg.strides, pads=cfg.pads, dilations=cfg.dilations,
                 ceil_mode=data.draw(st.sampled_from([0, 1]), label="ceil_mode"),
                 count_include_pad=data.draw(st.sampled_from([0, 1]), label="count_include_pad"),
                 auto_pad=cfg.onnx_auto_pad)
    label = f"ONNX AveragePool {attrs} x{x.shape}:{x.dtype} engine={engine}"
    note(label)
    expected = oracle.onnx_average_pool(x, **attrs)
    got = poolcheck.onnx_average_pool(x, **attrs, engine=engine)
    scale = _abs_scale(x, oracle.onnx_average_pool, **attrs)
    assert_close_avg(got, expected, scale, math.prod(cfg.kernel), label)


# --------------------------------------------------------------------------- policy alternatives

policies = st.builds(
    Policy,
    empty_max=st.sampled_from(["-inf", "lowest", "zero"]),
    empty_index=st.sampled_from([-1, 0, 7]),
    nan=st.sampled_from(["propagate", "ignore", "first"]),
    divisor=st.sampled_from(["attribute", "full", "padded", "valid"]),
    empty_avg=st.sampled_from(["zero", "nan"]),
)


@FIXTURE_OK
@given(cfg=configs(), policy=policies, data=st.data())
def test_max_pool_policies_match_oracle(engine: str, cfg: Config, policy: Policy, data: Any) -> None:
    dtype = data.draw(st.sampled_from(FLOAT_DTYPES + ("int8", "uint16", "int64")), label="dtype")
    x = data.draw(arrays_for(cfg.input_shape, dtype), label="x")
    rounding = data.draw(st.sampled_from(["floor", "ceil", "ceil_torch"]), label="rounding_type")
    spec = S.openvino_max_pool(cfg.kernel, cfg.strides, cfg.pads_begin, cfg.pads_end, cfg.dilations,
                               rounding, cfg.auto_pad)
    label = f"{spec.describe()} policy({policy.label()}) x{x.shape}:{x.dtype} engine={engine}"
    note(label)
    expected = oracle.openvino_max_pool(x, cfg.kernel, cfg.strides, cfg.pads_begin, cfg.pads_end, cfg.dilations,
                                        rounding, cfg.auto_pad, policy=policy)
    values, indices = poolcheck.run_spec(spec, x, engine=engine, policy=policy)
    assert indices is not None
    assert_same_max((values, indices), expected, label)
    # Values-only runs (with_indices=False) take a different path in the engine: same values.
    values_only, none = poolcheck.run_spec(spec, x, engine=engine, policy=policy, with_indices=False)
    assert none is None
    assert_same_max((values_only, expected[1]), expected, label + " with_indices=False")


@FIXTURE_OK
@given(cfg=configs(), policy=policies, data=st.data())
def test_avg_pool_policies_match_oracle(engine: str, cfg: Config, policy: Policy, data: Any) -> None:
    dtype = data.draw(st.sampled_from(FLOAT_DTYPES), label="dtype")
    x = data.draw(arrays_for(cfg.input_shape, dtype), label="x")
    ceil_mode = data.draw(st.sampled_from([0, 1]), label="ceil_mode")
    cip = data.draw(st.sampled_from([0, 1]), label="count_include_pad")
    spec = S.onnx_average_pool(cfg.kernel, cfg.strides, cfg.pads, cfg.dilations, ceil_mode, cip, cfg.onnx_auto_pad)
    label = f"{spec.describe()} policy({policy.label()}) x{x.shape}:{x.dtype} engine={engine}"
    note(label)
    attrs = dict(kernel_shape=cfg.kernel, strides=cfg.strides, pads=cfg.pads, dilations=cfg.dilations,
                 ceil_mode=ceil_mode, count_include_pad=cip, auto_pad=cfg.onnx_auto_pad, policy=policy)
    expected = oracle.onnx_average_pool(x, **attrs)
    values, none = poolcheck.run_spec(spec, x, engine=engine, policy=policy)
    assert none is None
    scale = _abs_scale(x, oracle.onnx_average_pool, **attrs)
    assert_close_avg(values, expected, scale, math.prod(cfg.kernel), label)


# --------------------------------------------------------------------------- targeted configurations

#: Configurations the properties must cover whatever hypothesis draws (each found on paper first).
TARGETED = [
    # (spatial shape, kernel, strides, pads_begin, pads_end, dilations, rounding, auto_pad) and why
    ((3, 3), [2, 2], [2, 2], [1, 1], [1, 1], [1, 1], "ceil_torch", "explicit"),  # last window dropped
    ((3,), [2], [3], [0], [0], [1], "ceil", "valid"),  # ceil + valid: a window starting past the input
    ((2,), [2], [1], [3], [3], [1], "floor", "explicit"),  # pads > kernel: windows wholly in padding
    ((5, 4), [1, 2], [3, 3], [0, 0], [0, 0], [1, 1], "floor", "same_upper"),  # stride > kernel: pads clamp to 0
    ((7,), [3], [2], [0], [0], [2], "floor", "same_lower"),  # dilated same_lower, odd total pad at begin
    ((6,), [2], [4], [0], [0], [3], "floor", "same_upper"),  # dilated, stride 4
    ((1, 2, 3), [2, 1, 2], [1, 2, 3], [1, 0, 2], [2, 1, 0], [1, 1, 2], "ceil", "explicit"),
    ((4,), [3], [2], [2], [0], [1], "ceil", "explicit"),  # ceil overhang past the padded input
    ((1,), [2], [1], [1], [3], [3], "floor", "explicit"),  # dilation skips the only element
]


@pytest.mark.parametrize("geometry", TARGETED, ids=lambda g: f"{g[0]}-k{g[1]}-s{g[2]}-{g[6]}-{g[7]}")
@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_targeted_max_pool(engine: str, geometry: tuple[Any, ...], dtype: str) -> None:
    spatial, kernel, strides, pb, pe, dil, rounding, auto_pad = geometry
    rng = np.random.default_rng(sum(spatial) * 31 + sum(kernel))
    x = rng.integers(-4, 5, size=(2, 2, *spatial)).astype(dtype)
    if dtype == "float32":
        x.flat[1] = np.nan
        x.flat[-1] = -np.inf
    for axis in range(-len(x.shape), len(x.shape)):
        attrs = dict(kernel=kernel, strides=strides, pads_begin=pb, pads_end=pe, dilations=dil,
                     rounding_type=rounding, auto_pad=auto_pad, axis=axis)
        label = f"MaxPool {attrs} x{x.shape}:{x.dtype} engine={engine}"
        assert_same_max(poolcheck.max_pool(x, **attrs, engine=engine), oracle.openvino_max_pool(x, **attrs), label)


@pytest.mark.parametrize("geometry", TARGETED, ids=lambda g: f"{g[0]}-k{g[1]}-s{g[2]}-{g[6]}-{g[7]}")
@pytest.mark.parametrize("exclude_pad", [False, True])
def test_targeted_avg_pool(engine: str, geometry: tuple[Any, ...], exclude_pad: bool) -> None:
    spatial, kernel, strides, pb, pe, dil, rounding, auto_pad = geometry
    rng = np.random.default_rng(sum(spatial) * 17 + sum(kernel))
    x = rng.integers(-8, 9, size=(1, 2, *spatial)).astype(np.float64) / 4
    pads = pb + pe
    ceil_mode = int(rounding != "floor")
    onnx_pad = ONNX_AUTO_PAD_NAMES
    attrs = dict(kernel_shape=kernel, strides=strides, pads=pads, dilations=dil, ceil_mode=ceil_mode,
                 count_include_pad=int(not exclude_pad), auto_pad=onnx_pad[auto_pad])
    label = f"ONNX AveragePool {attrs} engine={engine}"
    # Quarter-integers: every sum is exact, so both sides must agree bit for bit.
    got = poolcheck.onnx_average_pool(x, **attrs, engine=engine)
    assert np.array_equal(got, oracle.onnx_average_pool(x, **attrs)), label
    if dil == [1] * len(kernel):
        ov = dict(kernel=kernel, strides=strides, pads_begin=pb, pads_end=pe, exclude_pad=exclude_pad,
                  rounding_type=rounding, auto_pad=auto_pad)
        got = poolcheck.avg_pool(x, **ov, engine=engine)
        assert np.array_equal(got, oracle.openvino_avg_pool(x, **ov)), f"AvgPool {ov} engine={engine}"


# --------------------------------------------------------------------------- the oracle against the documents


def _doc(values: list[Any], dtype: str = "float32") -> np.ndarray:
    return np.array(values, dtype=dtype)


X3 = [[[[-1, 2, 3], [4, 5, -6], [-7, 8, 9]]]]
X19 = [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]]

#: Examples of the OpenVINO shape-rules page (seeds/000_4f109fca0e18ec5f.txt), transcribed.
#: (name, input, attributes, output0, output1)
OPENVINO_EXAMPLES = [
    ("example 1", X3, dict(kernel=[2, 2], strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1]),
     [[[[-1, 2, 3, 3], [4, 5, 5, -6], [4, 8, 9, 9], [-7, 8, 9, 9]]]],
     [[[[0, 1, 2, 2], [3, 4, 4, 5], [3, 7, 8, 8], [6, 7, 8, 8]]]]),
    ("example 2", [[[-1, 2, 3, 5, -7, 9, 1]]], dict(kernel=[3], strides=[1], auto_pad="valid"),
     [[[3, 5, 5, 9, 9]]], [[[2, 3, 3, 5, 5]]]),
    ("example 3", X3, dict(kernel=[2, 2], strides=[1, 1], auto_pad="same_lower"),
     [[[[-1, 2, 3], [4, 5, 5], [4, 8, 9]]]], [[[[0, 1, 2], [3, 4, 4], [3, 7, 8]]]]),
    ("example 4", [[[[-1, 2, 3], [4, 5, -6], [-7, 8, 9]], [[2, -1, 5], [6, -7, 1], [8, 2, -3]]]],
     dict(kernel=[2, 2], strides=[1, 1], auto_pad="same_upper"),
     [[[[5, 5, 3], [8, 9, 9], [8, 9, 9]], [[6, 5, 5], [8, 2, 1], [8, 2, -3]]]],
     [[[[4, 4, 2], [7, 8, 8], [7, 8, 8]], [[12, 11, 11], [15, 16, 14], [15, 16, 17]]]]),
    ("example 5", X19, dict(kernel=[2, 2], strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
                            rounding_type="ceil_torch"),
     [[[[1, 3], [7, 9]]]], [[[[0, 2], [6, 8]]]]),
    ("example 6", X3, dict(kernel=[2, 2], strides=[2, 2], rounding_type="ceil", auto_pad="valid"),
     [[[[5, 3], [8, 9]]]], [[[[4, 2], [7, 8]]]]),
    ("example 7", X19, dict(kernel=[2, 2], strides=[1, 1], dilations=[2, 2], pads_begin=[1, 1], pads_end=[1, 1]),
     [[[[5, 6, 5], [8, 9, 8], [5, 6, 5]]]], [[[[4, 5, 4], [7, 8, 7], [4, 5, 4]]]]),
    ("example 8", [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[10, 11, 12], [13, 14, 15], [16, 17, 18]]]],
     dict(kernel=[2, 2], strides=[1, 1], axis=2),
     [[[[5, 6], [8, 9]], [[14, 15], [17, 18]]]], [[[[4, 5], [7, 8]], [[4, 5], [7, 8]]]]),
]

#: Cells where the page contradicts its own rules, checked by hand. Example 1, output row 1 column 3:
#: the window covers rows 0-1 and columns 2-3 (column 3 is padding), i.e. x[0,2] = 3 and x[1,2] = -6,
#: so the maximum is 3 at index 2; the page prints -6 at index 5.
OPENVINO_ERRATA = {("example 1", (0, 0, 1, 3)): (3.0, 2)}


@pytest.mark.parametrize("name, x, attrs, out0, out1", OPENVINO_EXAMPLES, ids=[e[0] for e in OPENVINO_EXAMPLES])
def test_oracle_reproduces_openvino_examples(name: str, x: Any, attrs: dict[str, Any], out0: Any, out1: Any) -> None:
    values, indices = oracle.openvino_max_pool(_doc(x), **attrs)
    want_v, want_i = _doc(out0), _doc(out1, "int64")
    for (ex, cell), (v, i) in OPENVINO_ERRATA.items():
        if ex == name:
            assert (want_v[cell], want_i[cell]) != (v, i), "erratum no longer in the transcription"
            want_v[cell], want_i[cell] = v, i
    assert np.array_equal(values, want_v), f"{name}: {values.tolist()}"
    assert np.array_equal(indices, want_i), f"{name}: {indices.tolist()}"


X44 = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
X55 = np.arange(1, 26, dtype=np.float32).reshape(1, 1, 5, 5)

#: Examples of ONNX AveragePool-19 (seeds/004_509d0c367cfe146b.txt): (name, input, attributes, y).
ONNX_AVG_EXAMPLES = [
    ("1d_default", np.arange(1, 9, dtype=np.float32).reshape(1, 1, 8), dict(kernel_shape=[2]),
     [[[1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5]]]),
    ("2d_ceil", X44, dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), [[[[6.0, 7.5], [12.0, 13.5]]]]),
    ("2d_ceil_last_window_starts_on_pad", np.array([[[[1, 2], [3, 4]]]], np.float32),
     dict(kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
     [[[[1.1111112]]]]),
    ("2d_default", X44, dict(kernel_shape=[2, 2]),
     [[[[3.5, 4.5, 5.5], [7.5, 8.5, 9.5], [11.5, 12.5, 13.5]]]]),
    ("2d_pads", X44, dict(kernel_shape=[3, 3], pads=[2, 2, 2, 2]),
     [[[[1.0, 1.5, 2.0, 3.0, 3.5, 4.0], [3.0, 3.5, 4.0, 5.0, 5.5, 6.0], [5.0, 5.5, 6.0, 7.0, 7.5, 8.0],
        [9.0, 9.5, 10.0, 11.0, 11.5, 12.0], [11.0, 11.5, 12.0, 13.0, 13.5, 14.0],
        [13.0, 13.5, 14.0, 15.0, 15.5, 16.0]]]]),
    ("2d_pads_count_include_pad", X55, dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
     [[[[1.7777778, 3.0, 3.6666667, 4.3333335, 3.1111112], [4.3333335, 7.0, 8.0, 9.0, 6.3333335],
        [7.6666665, 12.0, 13.0, 14.0, 9.666667], [11.0, 17.0, 18.0, 19.0, 13.0],
        [8.444445, 13.0, 13.666667, 14.333333, 9.777778]]]]),
    ("2d_precomputed_pads", X55, dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
     [[[[7.0, 7.5, 8.0, 8.5, 9.0], [9.5, 10.0, 10.5, 11.0, 11.5], [12.0, 12.5, 13.0, 13.5, 14.0],
        [14.5, 15.0, 15.5, 16.0, 16.5], [17.0, 17.5, 18.0, 18.5, 19.0]]]]),
    ("2d_precomputed_pads_count_include_pad", X55, dict(kernel_shape=[5, 5], pads=[2, 2, 2, 2], count_include_pad=1),
     [[[[2.52, 3.6, 4.8, 4.08, 3.24], [4.56, 6.4, 8.4, 7.04, 5.52], [7.2, 10.0, 13.0, 10.8, 8.4],
        [6.96, 9.6, 12.4, 10.24, 7.92], [6.12, 8.4, 10.8, 8.88, 6.84]]]]),
    ("2d_precomputed_strides", X55, dict(kernel_shape=[2, 2], strides=[2, 2]), [[[[4.0, 6.0], [14.0, 16.0]]]]),
    ("2d_strides", X55, dict(kernel_shape=[3, 3], strides=[2, 2]), [[[[7.0, 9.0], [17.0, 19.0]]]]),
    ("3d_default", np.arange(1, 28, dtype=np.float32).reshape(1, 1, 3, 3, 3), dict(kernel_shape=[2, 2, 2]),
     [[[[[7.5, 8.5], [10.5, 11.5]], [[16.5, 17.5], [19.5, 20.5]]]]]),
]


@pytest.mark.parametrize("name, x, attrs, y", ONNX_AVG_EXAMPLES, ids=[e[0] for e in ONNX_AVG_EXAMPLES])
def test_oracle_reproduces_onnx_average_pool_examples(name: str, x: np.ndarray, attrs: dict[str, Any], y: Any) -> None:
    # The page prints float32 values in their shortest round-trip form: equality is exact.
    assert np.array_equal(oracle.onnx_average_pool(x, **attrs), _doc(y)), name


# --------------------------------------------------------------------------- input memory layouts

_NON_NATIVE = ">" if np.little_endian else "<"


def _layouts() -> list[Any]:
    """(id, make(x) -> array-like handed to the API). Values are always those of ``x``."""

    def readonly(x: np.ndarray) -> np.ndarray:
        y = x.copy()
        y.flags.writeable = False
        return y

    def reversed_view(x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(x[..., ::-1])[..., ::-1]  # same values, negative last stride

    cases = [
        ("fortran-order", np.asfortranarray),
        ("reversed-view", reversed_view),
        ("strided-view", lambda x: np.repeat(x, 2, axis=-1)[..., ::2]),
        ("read-only", readonly),
        ("nested-list", lambda x: x.tolist()),
        ("non-native-byte-order", lambda x: x.astype(x.dtype.newbyteorder(_NON_NATIVE))),
    ]
    return cases


@pytest.mark.parametrize("layout, make", _layouts(), ids=[c[0] for c in _layouts()])
@pytest.mark.parametrize("dtype", ["float32", "int16", "float64"])
def test_input_layouts(engine: str, layout: str, make: Any, dtype: str) -> None:
    """The engines see values, not memory: any layout of the same values gives the same result."""
    rng = np.random.default_rng(7)
    # magnitudes past one byte: a byte-swapped read of |v| < 128 keeps the order of integers
    x = rng.integers(-3000, 3000, size=(2, 3, 5, 4)).astype(dtype)
    if layout == "nested-list" and dtype != "float64":
        x = x.astype(np.float64 if dtype == "float32" else np.int64)  # what np.asarray(list) gives
    arg = make(x)
    attrs = dict(kernel=[2, 3], strides=[2, 1], pads_begin=[1, 0], pads_end=[0, 2], rounding_type="ceil")
    got_v, got_i = poolcheck.max_pool(arg, **attrs, engine=engine)
    want_v, want_i = oracle.openvino_max_pool(x, **attrs)
    assert got_v.dtype.name == want_v.dtype.name
    np.testing.assert_array_equal(got_v, want_v, err_msg=f"{layout} engine={engine}")
    np.testing.assert_array_equal(got_i, want_i, err_msg=f"{layout} engine={engine}")
    if x.dtype.kind == "f":
        avg = dict(kernel=[2, 3], strides=[2, 1], pads_begin=[1, 0], pads_end=[0, 2], exclude_pad=True)
        got = poolcheck.avg_pool(arg, **avg, engine=engine)
        assert got.dtype.name == x.dtype.name
        np.testing.assert_array_equal(got, oracle.openvino_avg_pool(x, **avg), err_msg=f"{layout} engine={engine}")
