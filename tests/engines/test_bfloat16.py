"""bfloat16 end to end: the one rounding from float64, both engines against the loop oracle (bit
for bit), case files through the real ``poolcheck run``, and a fuzz campaign through the CLI.

The oracle (tests/oracle.py) rounds to bfloat16 with Python's exact ``round`` of the scaled
significand; poolcheck rounds with spec/dtypes.py's round-to-odd through float32. ml_dtypes' own
float64 -> bfloat16 cast (through float32, two roundings) is what both must not be.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import oracle
import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st
from support import cli, invoke
from test_engine_oracle import Config, configs

import poolcheck
from poolcheck.cases import dump_cases, load_file
from poolcheck.engines import available_engines, numpy_engine
from poolcheck.fingerprint import cpu_features
from poolcheck.judgement import close_values, output_contract, same_values, tolerance_for
from poolcheck.peers import call_peer, resolve_peer
from poolcheck.spec import attributes, dtypes, operators
from poolcheck.spec.shape import resolve

BF16 = np.dtype(ml_dtypes.bfloat16)
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
                      deadline=None, max_examples=60)
#: The mean of [4, 2^-6, 2^-30, 0] is 1 + 2^-8 + 2^-32: just above the midpoint of 1 and 1 + 2^-7.
#: Through float32 it becomes the midpoint itself (1 + 2^-8), which ties to even: 1.0.
DOUBLE_ROUNDING = [4.0, 2.0 ** -6, 2.0 ** -30, 0.0]


def bits(a: np.ndarray) -> list[int]:
    return np.ascontiguousarray(a).view(np.uint16).reshape(-1).tolist()


def nearest_bf16(v: float) -> float:
    """The bfloat16 nearest ``v`` (ties to the even bit pattern), by exact comparison of the
    neighbours of a candidate: a third rounding, written without either implementation."""
    c = int(np.array([v], np.float32).astype(BF16).view(np.uint16)[0]) & 0x7FFF
    best: tuple[tuple[Fraction, int], float] | None = None
    for b in range(max(0, c - 2), min(0x7F80, c + 3)):  # finite magnitudes only
        val = float(np.array([b], np.uint16).view(BF16).astype(np.float64)[0])
        key = (abs(Fraction(val) - Fraction(abs(v))), b & 1)
        if best is None or key < best[0]:
            best = (key, val)
    assert best is not None
    return math.copysign(best[1], v)


# --------------------------------------------------------------------------- one rounding


def test_ml_dtypes_casts_float64_through_float32_but_poolcheck_rounds_once() -> None:
    mean = np.array([sum(DOUBLE_ROUNDING) / 4])
    assert mean[0] == 1 + 2.0 ** -8 + 2.0 ** -32
    assert mean.astype(np.float32).astype(BF16)[0] == 1.0  # two roundings: the tie goes to even
    assert mean.astype(BF16)[0] == 1.0  # ml_dtypes 0.6: the same two roundings
    assert dtypes.cast(mean, BF16)[0] == 1 + 2.0 ** -7  # the nearest bfloat16
    assert oracle.bfloat16_round(float(mean[0])) == 1 + 2.0 ** -7


@settings(max_examples=400, deadline=None)
@example(1 + 2.0 ** -8 + 2.0 ** -40)  # twice rounded (through float32): 1.0
@example(-(1 + 3 * 2.0 ** -8 - 2.0 ** -40))
@given(st.floats(allow_nan=False, allow_infinity=False, max_value=3.38e38, min_value=-3.38e38))
def test_cast_rounds_once_to_nearest_even(v: float) -> None:
    got = float(dtypes.cast(np.array([v]), BF16).astype(np.float64)[0])
    want = nearest_bf16(v)
    assert got == want and math.copysign(1, got) == math.copysign(1, want), (v, got, want)
    assert oracle.bfloat16_round(v) == want


def test_cast_specials_and_limits() -> None:
    fi = dtypes.finfo(BF16)
    v = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, float(fi.max), 2.0 ** 128 - 2.0 ** 119, 1e-50, -1e-50,
                  2.0 ** -134, 1.5 * 2.0 ** -133])
    got = dtypes.cast(v, BF16).astype(np.float64)
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == -np.inf
    assert np.signbit(got[3]) and not np.signbit(got[4])
    assert got[5] == float(fi.max) and got[6] == np.inf  # the tie above max rounds to even: infinity
    assert got[7] == 0 and not np.signbit(got[7]) and got[8] == 0 and np.signbit(got[8])
    assert got[9] == 0 and got[10] == 2.0 ** -132  # subnormal ties go to even
    assert dtypes.is_float(BF16) and not dtypes.is_int(BF16) and dtypes.lowest(BF16) == -float(fi.max)
    assert dtypes.compare_dtype(BF16) == np.float32 and dtypes.compare_dtype(np.float16) == np.float16


@pytest.mark.parametrize("engine", available_engines())
def test_engines_average_with_one_rounding(engine: str) -> None:
    x = np.array(DOUBLE_ROUNDING, dtype=BF16).reshape(1, 1, 4)
    got = poolcheck.onnx_average_pool(x, [4], engine=engine)
    assert got.dtype == BF16 and got[0, 0, 0] == 1 + 2.0 ** -7


# --------------------------------------------------------------------------- engines against the oracle


@st.composite
def bf16_arrays(draw: Any, shape: tuple[int, ...], *, exact_sums: bool) -> np.ndarray:
    """bfloat16 inputs. ``exact_sums``: small integers times 2^-24..2^12, whose float64 sums (of
    at most 512 terms) are exact, so the float64 quotient is the same on both sides and only the
    one rounding to bfloat16 is tested; else any bit pattern (NaN payloads, subnormals, extremes)."""
    size = math.prod(shape)
    if exact_sums:
        mags = draw(st.lists(st.integers(-256, 256), min_size=size, max_size=size))
        exps = draw(st.lists(st.integers(-24, 12), min_size=size, max_size=size))
        arr = np.array([m * 2.0 ** e for m, e in zip(mags, exps)], np.float32).astype(BF16)
        for _ in range(draw(st.integers(0, 2))):
            arr[draw(st.integers(0, size - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))
    else:
        raw = draw(st.lists(st.integers(0, 0xFFFF), min_size=size, max_size=size))
        arr = np.array(raw, np.uint16).view(BF16)
    return arr.reshape(shape)


@pytest.mark.parametrize("engine", available_engines())
@FIXTURE_OK
@given(cfg=configs(), data=st.data())
def test_onnx_max_pool_bfloat16_matches_oracle(engine: str, cfg: Config, data: Any) -> None:
    x = data.draw(bf16_arrays(cfg.input_shape, exact_sums=False), label="x")
    attrs = dict(kernel_shape=cfg.kernel, strides=cfg.strides, pads=cfg.pads, dilations=cfg.dilations,
                 ceil_mode=data.draw(st.sampled_from([0, 1])), auto_pad=cfg.onnx_auto_pad,
                 storage_order=data.draw(st.sampled_from([0, 1])))
    note(f"{attrs} {bits(x)}")
    want_v, want_i = oracle.onnx_max_pool(x, **attrs)
    got_v, got_i = poolcheck.onnx_max_pool(x, **attrs, engine=engine)
    assert got_v.dtype == BF16 and got_v.shape == want_v.shape
    assert same_values(want_v, got_v).all()
    # NaN aside, the very element (so the sign of a zero too)
    num = ~np.isnan(want_v.astype(np.float32))
    assert (np.signbit(want_v.astype(np.float32)) == np.signbit(got_v.astype(np.float32)))[num].all()
    np.testing.assert_array_equal(got_i, want_i)


@pytest.mark.parametrize("engine", available_engines())
@FIXTURE_OK
@given(cfg=configs(), data=st.data())
def test_onnx_average_pool_bfloat16_matches_oracle_bit_for_bit(engine: str, cfg: Config, data: Any) -> None:
    x = data.draw(bf16_arrays(cfg.input_shape, exact_sums=True), label="x")
    attrs = dict(kernel_shape=cfg.kernel, strides=cfg.strides, pads=cfg.pads, dilations=cfg.dilations,
                 ceil_mode=data.draw(st.sampled_from([0, 1])), auto_pad=cfg.onnx_auto_pad,
                 count_include_pad=data.draw(st.sampled_from([0, 1])))
    note(f"{attrs} {bits(x)}")
    want = oracle.onnx_average_pool(x, **attrs)
    got = poolcheck.onnx_average_pool(x, **attrs, engine=engine)
    assert got.dtype == BF16 and got.shape == want.shape
    nan = np.isnan(want.astype(np.float32))
    assert (np.isnan(got.astype(np.float32)) == nan).all()
    # the sign of a zero average is the engines' summation order's (a window of -0.0 alone: -0.0
    # on a global window, +0.0 elsewhere, numpy_engine._reduce_axis), the oracle's fsum gives +0.0;
    # the judgement holds -0.0 equal to 0.0
    zero = (want.astype(np.float32) == 0) & (got.astype(np.float32) == 0)
    assert (np.array(bits(got)) == np.array(bits(want)))[~(nan | zero).reshape(-1)].all()


# --------------------------------------------------------------------------- case files and the CLI


CASE = """schema: poolcheck.case/1
cases:
  - id: bf16-avg-one-rounding
    op: AveragePool-22
    attributes: {kernel_shape: [4]}
    dtype: bfloat16
    input: [[[4, 0.015625, 9.313225746154785e-10, 0]]]
    expected:
      values: [[[1.0078125]]]
  - id: bf16-max-nan-zero-lowest
    op: MaxPool-22
    attributes: {kernel_shape: [2], pads: [1, 1]}
    dtype: bfloat16
    input: [[[-0.0, .nan, 1.5, -3.3895313892515355e+38]]]
    expected:
      values: [[[-0.0, .nan, .nan, 1.5, -3.3895313892515355e+38]]]
      indices: [[[0, 1, 1, 2, 3]]]
  - id: bf16-decimal-rounds-once
    op: MaxPool-22
    attributes: {kernel_shape: [1]}
    dtype: bfloat16
    input: [[[1.00390625000000001, 0.1]]]
    expected:
      values: [[[1.0, 0.10009765625]]]
"""


def test_case_file_bfloat16_loads_dumps_and_loads_back_bit_for_bit(tmp_path: Path) -> None:
    path = tmp_path / "bf16.yaml"
    path.write_text(CASE)
    cases = load_file(path)
    assert [c.dtype for c in cases] == [BF16] * 3
    assert cases[0].input.reshape(-1)[2] == 2.0 ** -30
    again = tmp_path / "again.yaml"
    again.write_text(dump_cases([{"id": c.id, "op": c.op, "attributes": c.attributes, "dtype": c.dtype.name,
                                  "input": c.input, "expected": {"values": c.expected["values"]}} for c in cases]))
    for a, b in zip(cases, load_file(again)):
        assert bits(a.input) == bits(b.input) and bits(a.expected["values"]) == bits(b.expected["values"])


def test_case_file_refuses_bfloat16_where_the_version_does_not_allow_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(CASE.replace("AveragePool-22", "AveragePool-19"))
    proc = cli("run", str(path), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr + proc.stdout
    assert "AveragePool-19 does not allow bfloat16" in proc.stdout + proc.stderr


def test_poolcheck_run_judges_bfloat16_cases_on_every_engine(tmp_path: Path) -> None:
    path = tmp_path / "bf16.yaml"
    path.write_text(CASE)
    proc = invoke("run", str(path), "--json")  # in-process; the refusal above is the real command
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    checks = {(r["case_id"], c["runner"]): c["verdict"] for r in result["cases"] for c in r["checks"]}
    assert len(checks) == 3 * len(available_engines()) and set(checks.values()) == {"pass"}, checks
    assert {r["dtype"] for r in result["cases"]} == {"bfloat16"}
    # a planted error in a documented value (the twice-rounded mean) fails the case
    path.write_text(CASE.replace("values: [[[1.0078125]]]", "values: [[[1.0]]]"))
    proc = invoke("run", f"{path}::bf16-avg-one-rounding")
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr


def test_fuzz_campaign_on_bfloat16_through_the_cli(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    proc = cli("fuzz", "--dtypes", "bfloat16", "--peers", "onnxruntime,torch", "--max-examples", "25", "--seed", "3",
               "--no-progress", "--no-shrink", cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out and proc.returncode == 0, out
    assert "dtype-bfloat16" in out
    # ONNX Runtime's missing bfloat16 kernels are in the registry (cases/known/onnxruntime.yaml)
    assert "rejects: no max kernel for bfloat16" in out and "0 new divergence(s)" in out


# --------------------------------------------------------------------------- peers (each measured plainly first)


def _peer(name: str) -> Any:
    peer = resolve_peer(name)
    ok, why = peer.available()
    if not ok:
        pytest.skip(f"{name} is not available: {why}")
    return peer


#: [-0, NaN, 1.5, -2, 4, 2^-6, 2^-30, 0]: a NaN window, and the twice-rounded mean's window.
PEER_X = np.array([-0.0, np.nan, 1.5, -2.0, *DOUBLE_ROUNDING], dtype=BF16).reshape(1, 1, 8)


@pytest.mark.parametrize("name", ["torch", "jax", "onnx_reference", "openvino", "openvino-onnx"])
def test_peers_that_run_bfloat16_average_answer_in_bfloat16_within_the_rule(name: str) -> None:
    spec = operators.parse("AveragePool-22", {"kernel_shape": [4], "strides": [4]})
    res = call_peer(_peer(name), spec, PEER_X, isolated=False)
    assert res.status == "ok", res.verdict
    assert res.output is not None and res.output.values.dtype == BF16
    got = res.output.values.astype(np.float64).reshape(-1)
    # the second window (sum 4 + 2^-6 + 2^-30) is 1.0078125 rounded once; every peer measured
    # (torch through float32, jax in bfloat16, OpenVINO, onnx.reference) gives 1.0: within one
    # bfloat16 ulp, as the average rule allows
    assert got[1] in (1.0, 1.0078125)


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_torch_and_jax_max_pool_bfloat16_agree_with_the_engine(name: str) -> None:
    spec = operators.parse("MaxPool-22", {"kernel_shape": [2], "pads": [1, 1]})
    res = call_peer(_peer(name), spec, PEER_X, isolated=False)
    assert res.status == "ok", res.verdict
    assert res.output is not None and res.output.values.dtype == BF16
    want = poolcheck.onnx_max_pool(PEER_X, [2], pads=[1, 1])[0]
    assert same_values(want, res.output.values).all()


@pytest.mark.parametrize(("name", "words"), [
    ("onnxruntime", "Could not find an implementation for MaxPool(22)"),  # ORT 1.32 CPU: no bf16 kernel
    ("openvino", "supported only with one output"),  # OpenVINO 2026.4 CPU: bf16 MaxPool without indices only
])
def test_runtimes_without_bfloat16_max_pool_refuse_it_themselves(name: str, words: str) -> None:
    spec = operators.parse("MaxPool-22", {"kernel_shape": [2]})
    res = call_peer(_peer(name), spec, PEER_X, isolated=False)
    if name == "openvino" and "avx512_core" not in cpu_features():
        # OpenVINO's CPU plugin runs bfloat16 natively only with avx512_core (or avx2_vnni_2);
        # elsewhere it computes in f32, where MaxPool has its indices (the registry entries of this
        # refusal carry the tag cpu:avx512_core)
        wide = call_peer(_peer(name), spec, PEER_X.astype(np.float32), isolated=False)
        assert res.status == wide.status == "ok", (res.verdict, wide.verdict)
        assert res.output is not None and wide.output is not None and res.output.indices is not None
        assert same_values(wide.output.values.astype(BF16), res.output.values).all()
        assert np.array_equal(wide.output.indices, res.output.indices)
        return
    assert res.status == "rejects" and words in res.message, res.verdict


def test_tract_which_has_no_bfloat16_at_all_declines_it() -> None:
    """tract 0.23 answers "Unknown DatumType Bfloat16" for any bfloat16 tensor (tests/peers/
    test_peers_new.py calls it plainly on an Identity): declined with those words, not refused."""
    spec = operators.parse("MaxPool-22", {"kernel_shape": [2]})
    res = call_peer(_peer("tract"), spec, PEER_X, isolated=False)
    assert res.status == "declined" and "Unknown DatumType Bfloat16" in res.message, res.verdict


# --------------------------------------------------------------------------- judgement


def test_judgement_bfloat16_tolerance_and_output_contract() -> None:
    spec = operators.parse("AveragePool-22", {"kernel_shape": [4], "strides": [4]})
    x = np.array([[[100.0, 101.0, 102.0, 103.0]]], dtype=BF16)  # bfloat16 spacing near 100: 0.5
    geom = resolve(spec, x.shape)
    want = poolcheck.onnx_average_pool(x, [4], strides=[4])
    tol = tolerance_for(spec, x, geom, want, numpy_engine)
    assert tol is not None
    # one ulp of bfloat16 (0.5) plus (taps + 1) * 2^-7 * mean|x| (about 3.9): bfloat16's eps, not float32's
    assert tol[0, 0, 0] == pytest.approx(0.5 + 5 * 2.0 ** -7 * 101.5)
    near = (want.astype(np.float32) + 4).astype(BF16)
    far = (want.astype(np.float32) + 8).astype(BF16)
    assert close_values(want, near, tol).all() and not close_values(want, far, tol).any()
    # values must be bfloat16 for a bfloat16 input, never cast away
    assert output_contract(spec, x.shape, BF16, want, None) == []
    breaches = output_contract(spec, x.shape, BF16, want.astype(np.float32), None)
    assert [b.what for b in breaches] == ["dtype"] and "values are float32, the input is bfloat16" in breaches[0].message


#: NaNs a cast may change, per float type (bits): a signalling NaN and a negative quiet NaN with
#: a payload.
ODD_NANS = {"float16": (0x7C01, 0xFE05), "float32": (0x7F800001, 0xFFC00005),
            "float64": (0x7FF0000000000001, 0xFFF8000000000005), "bfloat16": (0x7F81, 0xFFC5)}


@pytest.mark.parametrize("engine", available_engines())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), dtype=st.sampled_from(sorted(ODD_NANS)))
def test_a_max_keeps_the_bits_of_the_element_it_picks(engine: str, data: st.DataObject, dtype: str) -> None:
    """A max is an input element: its bits come back as they went in, a signalling NaN and a NaN's
    payload too. bfloat16 is compared in float32 and went back through ml_dtypes' cast, which
    makes every NaN canonical (0x7F81 and 0xFFC5 came out 0x7FC0 and 0xFFC0, on both engines).
    The oracle reads the input's bits at the indices the engine returns (no padding: every
    window holds elements)."""
    rank = data.draw(st.integers(1, 3))
    shape = (1, data.draw(st.integers(1, 2)), *(data.draw(st.integers(2, 5)) for _ in range(rank)))
    kernel = [data.draw(st.integers(1, n)) for n in shape[2:]]
    strides = [data.draw(st.integers(1, 2)) for _ in range(rank)]
    dt = dtypes.as_dtype(dtype)
    width = f"u{dt.itemsize}"
    x = (np.arange(math.prod(shape)) % 7 - 3).astype(np.float32).astype(dt).reshape(shape)
    bits = x.reshape(-1).view(width)
    for _ in range(data.draw(st.integers(1, 3))):
        bits[data.draw(st.integers(0, x.size - 1))] = data.draw(st.sampled_from(ODD_NANS[dtype]))
    spec = attributes.onnx_max_pool(kernel, strides, [0] * (2 * rank), None, 0, "NOTSET", 0)
    values, index = poolcheck.run_spec(spec, x, engine=engine)
    assert np.array_equal(np.ascontiguousarray(values).view(width).reshape(-1), bits[index.reshape(-1)])
