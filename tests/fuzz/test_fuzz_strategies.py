"""The fuzzer's strategies: valid configurations across the whole attribute space, inputs that
rebuild from their recipe, invalid ones the engine rejects, argument errors that name the fix."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from support import drawn

from poolcheck.cases.load import build_spec
from poolcheck.engines import _windows as w
from poolcheck.errors import AttributeValueError
from poolcheck.fuzz.oracles import engine_accepts
from poolcheck.fuzz.strategies import (
    FuzzCase,
    config_batches,
    configs,
    invalid_config,
    make_input,
    pool_configs,
)
from poolcheck.spec import attributes as A
from poolcheck.spec.dtypes import is_float
from poolcheck.spec.shape import resolve

QUICK = settings(suppress_health_check=list(HealthCheck), deadline=None, database=None)


@QUICK
@given(pool_configs())
def test_every_generated_configuration_is_valid(case: FuzzCase) -> None:
    A.check_input(case.spec, case.x.shape, case.x.dtype)
    geom = resolve(case.spec, case.x.shape)
    assert all(a.out >= 1 for a in geom.axes)
    # the case-file spelling parses back to the same canonical configuration
    assert build_spec(case.op_name, case.attributes) == case.spec
    r = case.recipe
    rebuilt = make_input(r["shape"], case.x.dtype, r["pattern"], r["seed"], [tuple(p) for p in r["specials"]])
    assert rebuilt.dtype == case.x.dtype
    # bit for bit (NumPy's testing compares bfloat16 NaN as unequal: ml_dtypes' kind is 'V')
    assert rebuilt.shape == case.x.shape and rebuilt.tobytes() == case.x.tobytes()
    assert engine_accepts(case) == (True, "")


@QUICK
@given(configs(invalid_config))
def test_every_broken_configuration_is_rejected_by_the_engine(case: FuzzCase) -> None:
    assert case.mutation is not None
    ok, why = engine_accepts(case)
    assert not ok, f"{case.mutation}: accepted {case.describe()}"
    assert why


@QUICK
@given(config_batches(max_configs=4))
def test_batches_hold_one_to_max_configurations(batch: list[FuzzCase]) -> None:
    assert 1 <= len(batch) <= 4


@QUICK
@given(pool_configs(ops=("max",), ranks=(5,), dtypes=("uint8",), conventions=("onnx",)))
def test_restrictions_are_honoured(case: FuzzCase) -> None:
    assert (case.op, case.spec.rank, case.x.dtype.name, case.convention) == ("max", 5, "uint8", "onnx")


def _with_nan(c: FuzzCase) -> bool:
    return c.x.dtype.kind == "f" and bool(np.isnan(c.x).any())


def _wholly_in_padding(c: FuzzCase) -> bool:
    return w.empty_windows(resolve(c.spec, c.x.shape)) is not None


def _ceil_torch_drops(c: FuzzCase) -> bool:
    return c.spec.rounding_type == "ceil_torch" and c.spec.auto_pad == "explicit" and (
        resolve(c.spec.replace(rounding_type="ceil"), c.x.shape).output_shape
        != resolve(c.spec, c.x.shape).output_shape)


REACHABLE = {
    "same_lower with stride > 1": lambda c: c.spec.auto_pad == "same_lower" and max(c.spec.strides) > 1,
    "ceil_torch dropping a window": _ceil_torch_drops,
    "window wholly in padding": _wholly_in_padding,
    "asymmetric pads": lambda c: c.spec.auto_pad == "explicit" and c.spec.pads_begin != c.spec.pads_end,
    "dilation > 1, rank 5": lambda c: c.spec.rank == 5 and max(c.spec.dilations) > 1,
    "negative axis": lambda c: c.spec.axis < 0,
    "storage_order 1": lambda c: c.spec.storage_order == 1,
    "exclude_pad, ONNX": lambda c: c.spec.exclude_pad and c.convention == "onnx",
    "NaN in the input": _with_nan,
    "+inf in the input": lambda c: c.x.dtype.kind == "f" and bool(np.isposinf(c.x).any()),
    "ties in a window": lambda c: c.recipe["pattern"] == "ties",
    "int8": lambda c: c.x.dtype == np.int8,
    "float16 average": lambda c: c.op == "avg" and c.x.dtype == np.float16,
    "i32 indices": lambda c: c.spec.index_element_type == "i32",
}


@pytest.mark.parametrize("what", list(REACHABLE))
def test_the_attribute_space_is_covered(what: str) -> None:
    found = drawn(pool_configs(), REACHABLE[what], what)  # within 3000 draws
    assert REACHABLE[what](found)


def test_arguments_are_checked_with_a_hint() -> None:
    with pytest.raises(AttributeValueError, match="ops='maxpool' is not one of max, avg"):
        config_batches(ops=("maxpool",))
    with pytest.raises(AttributeValueError, match="ranks"):
        config_batches(ranks=(6,))
    with pytest.raises(AttributeValueError, match="average pooling needs one"):
        config_batches(ops=("avg",), dtypes=("int8",))
    with pytest.raises(AttributeValueError, match="max_configs"):
        config_batches(max_configs=0)


def test_make_input_patterns_and_specials() -> None:
    x = make_input((1, 1, 4), "float32", "arange", 0, [(1, 0), (3, 1)])
    assert np.isnan(x[0, 0, 1]) and x[0, 0, 3] == np.inf and x[0, 0, 0] == 1 and x[0, 0, 2] == 3
    u = make_input((1, 1, 300), "uint8", "negative", 0)
    assert u.dtype == np.uint8 and int(u.max()) <= 255
    i = make_input((1, 1, 2), "int8", "arange", 0, [(0, 0), (1, 1)])
    assert i.tolist() == [[[-128, 127]]]
    with pytest.raises(AttributeValueError, match="pattern"):
        make_input((1, 1, 2), "float32", "zigzag", 0)


def test_strategies_compose_with_st_data() -> None:
    @QUICK
    @given(st.data())
    def inner(data: st.DataObject) -> None:
        c = data.draw(pool_configs(ops=("avg",)), label="config")
        assert c.op == "avg" and is_float(c.x.dtype)  # float16/32/64, or bfloat16 (NumPy kind 'V')

    inner()


def test_repeated_recipes_give_arrays_and_attributes_of_their_own() -> None:
    """Inputs and spellings are built once per recipe; each case still owns what it holds."""
    first = make_input((1, 2, 3), "float32", "random", 7, [(1, 0)])
    first[...] = 0
    again = make_input((1, 2, 3), "float32", "random", 7, [(1, 0)])
    assert np.isnan(again.reshape(-1)[1]) and again.any()
    np.testing.assert_array_equal(again, make_input([1, 2, 3], np.dtype(np.float32), "random", 7, [(1, 0)]))

    @given(config_batches(("max",), (3,), ("float32",), ("onnx",), max_configs=1))
    @settings(max_examples=30, database=None, suppress_health_check=list(HealthCheck))
    def cases_own_their_attributes(batch) -> None:
        case = batch[0]
        case.attributes["kernel_shape"].append(99)  # e.g. invalid_config breaking a copy
        case.x[...] = 0

    cases_own_their_attributes()
    case = find(pool_configs(("max",), (3,), ("float32",), ("onnx",)), lambda c: True)
    assert 99 not in case.attributes["kernel_shape"]


def test_operator_regime_and_dtype_are_drawn_evenly() -> None:
    """The operator, convention, rank, regime and dtype are uniform draws (as sampled_from makes
    them): 600 seeded draws hold every operator and convention about equally often and integer
    inputs about as often as the catalogue allows them. (Spelled as the leading digits of one
    wide integer they were not: hypothesis biases wide integers towards 0, and nine draws in ten
    were float32 MaxPool of the first convention.)"""
    from collections import Counter

    from hypothesis import Phase, seed

    seen: Counter[tuple[str, str]] = Counter()
    ints = [0]

    @seed(20261126)
    @settings(max_examples=600, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(pool_configs())
    def draw(case: FuzzCase) -> None:
        seen[(case.op, case.convention)] += 1
        ints[0] += case.x.dtype.kind in "iu"

    draw()
    total = sum(seen.values())
    assert len(seen) == 4 and min(seen.values()) > total / 8, seen
    assert ints[0] > total / 10, ints[0]  # about a fifth: integer types are MaxPool's only
