"""The one judgement (poolcheck/judgement.py): the average rule, the output contract and the one
message format, as the case runner and the fuzzer both see them.

The float32-accumulated averages below are computed here, element by element in float32, the
way a runtime sums (not by poolcheck's engines); the reference is poolcheck's float64-accumulated
engine.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from poolcheck import judgement as J
from poolcheck import spec as S
from poolcheck.cases import load_paths
from poolcheck.engines import numpy_engine
from poolcheck.judgement import (
    avg_tolerance,
    close_values,
    differing,
    output_contract,
    tolerance_for,
)
from poolcheck.runner import check_engine, check_peer_output
from poolcheck.spec.policy import SPEC
from poolcheck.spec.shape import resolve


def _case(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "c.yaml"
    path.write_text("schema: poolcheck.case/1\ncases:\n" + text)
    cases, errors = load_paths([path])
    assert not errors, errors
    return cases[0]


def _float32_running_average(x: np.ndarray, kernel: int, stride: int) -> np.ndarray:
    """Windows of one 1-D plane summed left to right in float32, then divided in float32."""
    plane = x[0, 0]
    out = []
    for start in range(0, plane.size - kernel + 1, stride):
        acc = np.float32(0)
        for v in plane[start:start + kernel]:
            acc = np.float32(acc + v)
        out.append(np.float32(acc / np.float32(kernel)))
    return np.array(out, dtype=np.float32).reshape(1, 1, -1)


def _avg_case(tmp_path: Path, x: np.ndarray, kernel: int, stride: int):  # type: ignore[no-untyped-def]
    return _case(tmp_path, f"""\
  - id: avg
    op: AvgPool-14
    attributes: {{kernel: [{kernel}], strides: [{stride}], exclude_pad: false}}
    dtype: float32
    input: {x.tolist()!r}
    expected: {{shape: [1, 1, {(x.shape[2] - kernel) // stride + 1}]}}
""")


finite32 = st.floats(-1e6, 1e6, width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(x=hnp.arrays(np.float32, st.tuples(st.just(1), st.just(1), st.integers(4, 40)), elements=finite32),
       kernel=st.integers(1, 4), stride=st.integers(1, 3))
def test_a_float32_accumulated_average_is_within_the_rule(x: np.ndarray, kernel: int, stride: int) -> None:
    geom = _geom(x, kernel, stride)
    ref = numpy_engine.avg_pool(x, geom, False, SPEC)
    actual = _float32_running_average(x, kernel, stride)
    tol = avg_tolerance(x, geom, False, SPEC, ref, numpy_engine)
    assert close_values(ref, actual, tol).all(), (ref, actual, tol)
    # the bound is not vacuous: a value past it is a difference
    past = ref.astype(np.float64) + 2 * tol + np.spacing(np.abs(ref.astype(np.float64)) + 1.0)
    assert not close_values(ref, past, tol).any()


def _geom(x: np.ndarray, kernel: int, stride: int):  # type: ignore[no-untyped-def]
    with tempfile.TemporaryDirectory() as d:
        case = _avg_case(Path(d), x, kernel, stride)
    return resolve(case.spec, x.shape)


def test_the_case_runner_and_the_fuzzer_agree_on_a_peer_average(tmp_path: Path) -> None:
    """A peer one float32 ulp-scale summation error away passes in ``poolcheck run``; twice the
    rule's bound away it fails, with the same positions the fuzzer's comparison reports."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1000, 1000, size=(1, 1, 30)).astype(np.float32)
    case = _avg_case(tmp_path, x, 3, 1)
    geom = resolve(case.spec, x.shape)
    ref = numpy_engine.avg_pool(x, geom, False, SPEC)
    tol = tolerance_for(case.spec, x, geom, ref, numpy_engine)
    assert tol is not None

    class Out:
        def __init__(self, values: np.ndarray) -> None:
            self.values, self.indices, self.notes = values, None, []

    class Result:
        status = "ok"
        message = ""

        def __init__(self, values: np.ndarray) -> None:
            self.output = Out(values)

    good = _float32_running_average(x, 3, 1)
    assert check_peer_output(case, "p", None, Result(good)).verdict == "pass"
    bad = ref.copy()
    bad[0, 0, 5] = np.float32(ref[0, 0, 5] + 4 * tol[0, 0, 5] + np.spacing(np.float32(abs(ref[0, 0, 5]))))
    check = check_peer_output(case, "p", None, Result(bad))
    assert check.verdict == "fail" and [d.position for d in check.diffs] == [[0, 0, 5]]
    assert differing("values", ref, bad, tol=tol)[0] == [(0, 0, 5)]


def test_engine_messages_have_one_format(tmp_path: Path) -> None:
    case = _case(tmp_path, """\
  - id: wrong-shape
    op: MaxPool-14
    attributes: {kernel: [2, 2], strides: [2, 2], rounding_type: ceil}
    input: [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]]
    expected: {shape: [1, 1, 3, 3]}
""")
    check = check_engine(case, "numpy")
    assert check.verdict == "fail"
    assert check.message == (f"out.shape=(1, 1, 2, 2), but should be (1, 1, 3, 3) "
                             f"[{case.spec.describe()} engine=numpy]")


def test_the_output_contract_is_one_for_both_callers(tmp_path: Path) -> None:
    case = _case(tmp_path, """\
  - id: max
    op: MaxPool-14
    attributes: {kernel: [2], strides: [1], index_element_type: i32}
    input: [[[1, 2, 3]]]
    expected: {values: [[[2, 3]]], indices: [[[1, 2]]]}
""")
    values = np.array([[[2, 3]]], dtype=case.dtype)
    indices = np.array([[[1, 2]]], dtype=np.int32)
    spec, shape, dtype = case.spec, case.input.shape, case.dtype
    assert output_contract(spec, shape, dtype, values, indices) == []
    wide = output_contract(spec, shape, dtype, values, indices.astype(np.int64))
    assert [(b.klass, b.what) for b in wide] == [("dtype:indices-int64-for-int32", "dtype")]
    assert wide[0].message == "dtype: indices are int64, index_element_type i32 requires int32"
    cplx = output_contract(spec, shape, dtype, values.astype(np.complex64), indices)
    assert [b.klass for b in cplx] == ["output:values-not-real-numbers"]
    short = output_contract(spec, shape, dtype, values[..., :1], indices[..., :1])
    assert {b.what for b in short} == {"shape"}
    # the fuzzer judges the shape with the values, not in the contract
    assert output_contract(spec, shape, dtype, values[..., :1], indices[..., :1], check_shape=False) == []


# --------------------------------------------------------------------------- order-open averages


def _avg_close(xs: list[float], actual: float) -> bool:
    x = np.array(xs, dtype=np.float64).reshape(1, 1, len(xs))
    spec = S.onnx_average_pool([len(xs)], [1])
    geom = S.resolve(spec, x.shape)
    expected = numpy_engine.avg_pool(x, geom, False)
    tol = J.tolerance_for(spec, x, geom, expected, numpy_engine)
    return bool(J.close_values(expected, np.full_like(expected, actual), tol).all())


def test_an_average_whose_finite_terms_sum_past_float64_is_open_to_any_order() -> None:
    """[M, M, -inf] is NaN summed left to right and -inf right to left; [M, M, -M] is inf or M/3:
    the texts fix no order, so every answer agrees there (the C engine's global sum and the NumPy
    engine's differ exactly so)."""
    big = float(np.finfo(np.float64).max)
    for actual in (np.nan, -np.inf, np.inf, big / 3):
        assert _avg_close([big, big, -np.inf], actual)
        assert _avg_close([big, big, -big], actual)


def test_an_infinity_among_small_terms_is_still_exact() -> None:
    """One infinity among terms that cannot overflow gives that infinity in every order: NaN, the
    other infinity or a finite value is a divergence."""
    for actual in (np.nan, np.inf, 2.0):
        assert not _avg_close([-np.inf, 1.0, 2.0], actual)
    assert _avg_close([-np.inf, 1.0, 2.0], -np.inf)
    assert not _avg_close([np.inf, -np.inf, 1.0], np.inf)  # inf - inf is NaN in every order


def test_the_ulp_at_the_largest_value_is_the_one_below_it() -> None:
    """NumPy's spacing of the largest finite value is inf (the next value up is inf). A tolerance
    built on it was inf: an average of two FLT_MAX accepted any answer, 0 included; and the Lp rule,
    which drops a non-finite bound, required FLT_MAX bit for bit (torch's p = 1 norm, one ulp
    below it, was 'unexplained', a violation, in a 90 s family campaign, seed 17)."""
    from poolcheck.engines import get_engine, get_family_engine
    from poolcheck.judgement import close_values, family_tolerance, tolerance_for
    from poolcheck.spec import attributes as attrs
    from poolcheck.spec import dtypes
    from poolcheck.spec.operators import parse
    from poolcheck.spec.shape import resolve

    big = float(np.finfo(np.float32).max)
    assert dtypes.spacing(np.array([big, 1.0, np.inf, np.nan]), np.float32).tolist() == [2.0 ** 104, 2.0 ** -23, 0, 0]
    assert dtypes.spacing(np.array([float(dtypes.finfo(dtypes.BFLOAT16).max)]), dtypes.BFLOAT16).tolist() == [2.0 ** 120]
    spec = attrs.openvino_avg_pool([2], [2], [0], [0], False, "floor", "explicit")
    x = np.array([[[big, big, 1.0, 3.0]]], dtype=np.float32)
    want = np.array([[[big, 2.0]]], dtype=np.float32)
    tol = tolerance_for(spec, x, resolve(spec, x.shape), want, get_engine("numpy"))
    assert not close_values(want, np.array([[[0.0, 2.0]]], np.float32), tol)[0, 0, 0]
    assert close_values(want, np.array([[[np.nextafter(np.float32(big), 0), 2.0]]], np.float32), tol).all()
    lp = parse("GlobalLpPool-22", {"p": 1})
    y = np.zeros((1, 1, 58), dtype=np.float32)
    y[0, 0, 11] = big
    norm = np.array([[[big]]], dtype=np.float32)
    bound = family_tolerance(lp, y, norm, get_engine("numpy"), get_family_engine("numpy"))
    assert close_values(norm, np.array([[[3.40282326e38]]], np.float32), bound).all()


def _spacing_by_steps(v: float, dt: np.dtype) -> float:
    """An ulp by stepping the bits: from ``|v|`` rounded to ``dt`` to the next value up; at the
    largest finite value and past it (rounded to inf), from the value below it to the largest;
    0 for inf and NaN."""
    from poolcheck.spec import dtypes

    if not np.isfinite(v):
        return 0.0
    unsigned = np.dtype(f"u{dt.itemsize}")
    c = dtypes.cast(np.array([abs(v)]), dt)  # rounded once; a positive value's bits count up
    top = dtypes.cast(np.array([float(dtypes.finfo(dt).max)]), dt)
    if float(c.astype(np.float64)[0]) >= float(top.astype(np.float64)[0]):
        below = (top.view(unsigned) - 1).view(dt)
        return float(top.astype(np.float64)[0] - below.astype(np.float64)[0])
    return float((c.view(unsigned) + 1).view(dt).astype(np.float64)[0] - c.astype(np.float64)[0])


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["float16", "float32", "float64", "bfloat16"]),
       st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                          st.sampled_from([0.0, -0.0, 65504.0, 65520.0, 3.4028234663852886e38, 3.4e38, 3.5e38,
                                           3.3895313892515355e38, 1.7976931348623157e308, 5e-324, 1e-45])),
                min_size=0, max_size=12))
def test_spacing_is_the_step_to_the_next_value(name: str, values: list[float]) -> None:
    """dtypes.spacing on arrays of every kind of value (its fast path, every value finite and
    below the largest, and its slow one) against stepping with nextafter value by value."""
    from poolcheck.spec import dtypes

    dt = dtypes.BFLOAT16 if name == "bfloat16" else np.dtype(name)
    got = dtypes.spacing(np.array(values, dtype=np.float64), dt)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == (len(values),)
    want = [_spacing_by_steps(v, dt) for v in values]
    assert got.tolist() == want
