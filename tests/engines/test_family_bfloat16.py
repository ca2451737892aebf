"""bfloat16 for the family's -22 rows (LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool,
MaxUnpool: onnx.defs.get_schema(op, 22) lists tensor(bfloat16)): both engines against the loop
oracle (tests/oracle_family.py, which rounds to bfloat16 once with oracle.bfloat16_round), the
one rounding where ml_dtypes' own cast would round twice, the C engine against the NumPy engine
bit for bit, and the older rows and OpenVINO's adaptive pools still refusing bfloat16."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import oracle_family as OF
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from support import cli
from test_family_engines import assert_close, assert_same, assert_same_max

import poolcheck as P
from poolcheck.api_family import run_family
from poolcheck.engines import available_engines
from poolcheck.errors import AttributeValueError
from poolcheck.spec import operators

BF16 = np.dtype(ml_dtypes.bfloat16)
ENGINES = available_engines()
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Above the midpoint of 1 and 1 + 2^-7 by 2^-30: once rounded, 1 + 2^-7; through float32 (whose
#: 24 bits drop the 2^-30) the midpoint itself, which ties to even: 1.0.
ABOVE_MIDPOINT = [1.0, 2.0 ** -8, 2.0 ** -30]


@st.composite
def bf16_inputs(draw: st.DrawFn, *, specials: bool = True) -> np.ndarray:
    n = draw(st.integers(1, 3))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2)), *(draw(st.integers(1, 4 if n == 3 else 6))
                                                                  for _ in range(n)))
    size = math.prod(shape)
    mags = draw(st.lists(st.integers(-255, 255), min_size=size, max_size=size))
    exps = draw(st.lists(st.integers(-12, 4), min_size=size, max_size=size))
    x = np.array([m * 2.0 ** e for m, e in zip(mags, exps)], np.float32).astype(BF16).reshape(shape)
    if specials and draw(st.booleans()):
        x.reshape(-1)[draw(st.integers(0, size - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))
    return x


def test_the_22_rows_take_bfloat16_and_the_older_ones_do_not() -> None:
    for name in ("LpPool-22", "GlobalAveragePool-22", "GlobalMaxPool-22", "GlobalLpPool-22", "MaxUnpool-22"):
        assert "bfloat16" in operators.operator(name).dtypes, name
    for name in ("LpPool-18", "LpPool-11", "GlobalAveragePool-1", "GlobalMaxPool-1", "GlobalLpPool-2",
                 "MaxUnpool-11", "AdaptiveAvgPool-8", "AdaptiveMaxPool-8"):
        assert "bfloat16" not in operators.operator(name).dtypes, name
    x = np.ones((1, 1, 4, 4), BF16)
    spec = operators.parse("LpPool-18", {"kernel_shape": [2, 2]})
    with pytest.raises(AttributeValueError, match="does not allow bfloat16"):
        run_family(spec, x, row=operators.operator("LpPool-18"))
    with pytest.raises(AttributeValueError, match="does not allow bfloat16"):
        P.adaptive_avg_pool(x, [2, 2])


@pytest.mark.parametrize("engine", ENGINES)
def test_lp_and_global_pools_round_once(engine: str) -> None:
    x = np.array(ABOVE_MIDPOINT, dtype=BF16).reshape(1, 1, 3)
    assert [float(v) for v in x.reshape(-1)] == ABOVE_MIDPOINT  # every value exact in bfloat16
    once = 1 + 2.0 ** -7
    lp = P.onnx_lp_pool(x, [3], p=1, engine=engine)
    glp = P.onnx_global_lp_pool(x, p=1, engine=engine)
    assert lp.dtype == glp.dtype == BF16 and float(lp[0, 0, 0]) == float(glp[0, 0, 0]) == once
    # the mean of [3, 3 * 2^-8, 3 * 2^-30] is the same value: 1 + 2^-8 + 2^-30
    avg = P.onnx_global_average_pool(np.array([3.0, 3 * 2.0 ** -8, 3 * 2.0 ** -30], BF16).reshape(1, 1, 3),
                                      engine=engine)
    assert avg.dtype == BF16 and float(avg[0, 0, 0]) == once
    assert float(np.float64(sum(ABOVE_MIDPOINT)).astype(BF16)) == 1.0  # what a second rounding gives


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(x=bf16_inputs(), p=st.integers(1, 4), k=st.integers(1, 3), pad=st.integers(0, 1))
def test_lp_pool_bfloat16_matches_the_oracle(engine: str, x: np.ndarray, p: int, k: int, pad: int) -> None:
    n = x.ndim - 2
    attrs: dict[str, Any] = {"kernel_shape": [min(k, s) for s in x.shape[2:]], "p": p, "pads": [pad] * (2 * n)}
    if any(pad >= kk for kk in attrs["kernel_shape"]):
        attrs["pads"] = [0] * (2 * n)
    note(f"{attrs} {x.shape}")
    expected = OF.lp_pool(x, **attrs)
    actual = P.onnx_lp_pool(x, engine=engine, **attrs)
    assert_close(expected, actual, math.prod(attrs["kernel_shape"]) + 12, expected.astype(np.float64))


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(x=bf16_inputs(), p=st.integers(1, 4))
def test_global_pools_bfloat16_match_the_oracle(engine: str, x: np.ndarray, p: int) -> None:
    size = math.prod(x.shape[2:])
    assert_same_max(OF.global_pool(x, "max"), P.onnx_global_max_pool(x, engine=engine))
    scale = np.abs(x.astype(np.float64)).reshape(*x.shape[:2], -1).mean(axis=2).reshape(OF.global_pool(x, "max").shape)
    with np.errstate(all="ignore"):
        assert_close(OF.global_pool(x, "avg"), P.onnx_global_average_pool(x, engine=engine), size + 2, scale)
    lp = OF.global_pool(x, "lp", p)
    assert_close(lp, P.onnx_global_lp_pool(x, p=p, engine=engine), size + 12, lp.astype(np.float64))


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(x=bf16_inputs(), data=st.data())
def test_max_unpool_bfloat16_matches_the_oracle_bit_for_bit(engine: str, x: np.ndarray, data: Any) -> None:
    n = x.ndim - 2
    kernel = data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    shape = OF.unpool_shape(x.shape, kernel, kernel, None)
    indices = np.array(data.draw(st.lists(st.integers(0, math.prod(shape) - 1), min_size=x.size, max_size=x.size)),
                       dtype=np.int64).reshape(x.shape)
    got = P.onnx_max_unpool(x, indices, kernel, strides=kernel, engine=engine)
    assert got.dtype == BF16
    assert_same(OF.max_unpool(x, indices, kernel, strides=kernel), got)


@SETTINGS
@given(x=bf16_inputs(), p=st.integers(1, 5))
def test_c_is_numpy_bit_for_bit_on_bfloat16(x: np.ndarray, p: int) -> None:
    if "c" not in ENGINES:
        pytest.skip("no C engine")
    kernel = [min(2, s) for s in x.shape[2:]]
    assert_same(P.onnx_lp_pool(x, kernel, p=p), P.onnx_lp_pool(x, kernel, p=p, engine="c"))
    assert_same(P.onnx_global_lp_pool(x, p=p), P.onnx_global_lp_pool(x, p=p, engine="c"))
    assert_same_max(P.onnx_global_max_pool(x), P.onnx_global_max_pool(x, engine="c"))  # tied zeros: either sign


CASES = """schema: poolcheck.case/1
cases:
  - id: bf16-lp-one-rounding
    op: LpPool-22
    attributes: {kernel_shape: [3], p: 1}
    dtype: bfloat16
    input: [[[1, 0.00390625, 9.313225746154785e-10]]]
    expected: {values: [[[1.0078125]]]}
  - id: bf16-global-lp-one-rounding
    op: GlobalLpPool-22
    attributes: {p: 1}
    dtype: bfloat16
    input: [[[-1, 0.00390625, -9.313225746154785e-10]]]
    expected: {values: [[[1.0078125]]]}
  - id: bf16-global-max-nan
    op: GlobalMaxPool-22
    attributes: {}
    dtype: bfloat16
    input: [[[-0.0, .nan, 1.5]]]
    expected: {values: [[[.nan]]]}
  - id: bf16-unpool
    op: MaxUnpool-22
    attributes: {kernel_shape: [2], strides: [2]}
    dtype: bfloat16
    input: [[[1.0078125, -3.3895313892515355e+38]]]
    inputs: {I: [[[1, 2]]]}
    expected: {values: [[[0, 1.0078125, -3.3895313892515355e+38, 0]]]}
"""


def test_poolcheck_run_judges_bfloat16_family_cases(tmp_path: Path) -> None:
    """Through the real command: the -22 rows' bfloat16 cases pass on every engine; a twice
    rounded expectation fails; the -18 row refuses bfloat16 in one line, exit 2."""
    path = tmp_path / "bf16.yaml"
    path.write_text(CASES)
    proc = cli("run", str(path), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    checks = {(r["case_id"], c["runner"]): c["verdict"] for r in result["cases"] for c in r["checks"]}
    assert len(checks) == 4 * len(ENGINES) and set(checks.values()) == {"pass"}, checks
    path.write_text(CASES.replace("expected: {values: [[[1.0078125]]]}", "expected: {values: [[[1.0]]]}", 1))
    proc = cli("run", f"{path}::bf16-lp-one-rounding", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    path.write_text(CASES.replace("op: LpPool-22", "op: LpPool-18"))
    proc = cli("run", f"{path}::bf16-lp-one-rounding", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr + proc.stdout
    assert "does not allow bfloat16" in proc.stdout + proc.stderr
