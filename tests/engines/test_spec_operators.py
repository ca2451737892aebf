"""The operator catalogue: parse and spell are inverse for every row, and a row is all it takes."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import ROOT

from poolcheck.cases.load import load_file
from poolcheck.errors import AttributeValueError
from poolcheck.spec import operators as O
from poolcheck.spec.family import FAMILY_OPS, FamilySpec
from poolcheck.spec.poolspec import PoolSpec
from poolcheck.spec.shape import resolve


@st.composite
def specs_for(draw: st.DrawFn, name: str) -> Any:
    """Any canonical spec operator ``name`` can express (older versions: only what their
    attributes can say)."""
    row = O.OPERATORS[name]
    names = set(row.attribute_names)
    if row.op in FAMILY_OPS:
        return draw(family_specs_for(name))
    n = draw(st.integers(1, 3))
    ints = st.lists(st.integers(1, 6), min_size=n, max_size=n).map(tuple)
    pads = st.lists(st.integers(0, 4), min_size=n, max_size=n).map(tuple)
    return PoolSpec(
        op=row.op,  # type: ignore[arg-type]
        kernel=draw(ints), strides=draw(ints), pads_begin=draw(pads), pads_end=draw(pads),
        dilations=draw(ints) if "dilations" in names else (1,) * n,
        rounding_type=draw(st.sampled_from(sorted(set(row.rounding.values())))),  # type: ignore[arg-type]
        auto_pad=draw(st.sampled_from(["explicit", "valid", "same_upper", "same_lower"])),
        exclude_pad=draw(st.booleans()) if names & {"exclude_pad", "exclude-pad", "count_include_pad"}
        else row.op == "avg",
        axis=draw(st.integers(-n - 2, n + 1)) if "axis" in names else 0,
        index_element_type=draw(st.sampled_from(["i32", "i64"])) if "index_element_type" in names else "i64",
        storage_order=draw(st.sampled_from([0, 1])) if "storage_order" in names else 0,
        convention=row.convention,
    )


@st.composite
def family_specs_for(draw: st.DrawFn, name: str) -> FamilySpec:
    row = O.OPERATORS[name]
    n = draw(st.integers(1, 3))
    ints = st.lists(st.integers(1, 6), min_size=n, max_size=n).map(tuple)
    window = None
    if row.op in ("lp", "unpool"):
        attrs: dict[str, Any] = {"kernel_shape": list(draw(ints)), "strides": list(draw(ints)),
                                 "pads": draw(st.lists(st.integers(0, 4), min_size=2 * n, max_size=2 * n))}
        if row.op == "lp":
            attrs.update(dilations=list(draw(ints)), ceil_mode=draw(st.sampled_from([0, 1])),
                         auto_pad=draw(st.sampled_from(["NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])))
        names = set(row.attribute_names)
        window = O.parse(name, {k: v for k, v in attrs.items() if k in names}).window
    output_shape = None
    if row.op in ("adaptive_avg", "adaptive_max"):
        output_shape = draw(ints)
    elif row.op == "unpool":
        output_shape = draw(st.none() | st.lists(st.integers(1, 9), min_size=n + 2, max_size=n + 2).map(tuple))
    return FamilySpec(row.op, window, p=draw(st.integers(1, 9)) if "p" in row.attribute_names else 2,  # type: ignore[arg-type]
                      output_shape=output_shape,
                      index_element_type=draw(st.sampled_from(["i32", "i64"])) if row.op == "adaptive_max" else "i64",
                      convention=row.convention,
                      # an older version rides on the configuration (the peers build at its opset)
                      version=None if row is O.newest(row.op, row.convention) else O.version_number(row))


@pytest.mark.parametrize("name", list(O.OPERATORS))
@settings(max_examples=max(settings().max_examples, 60), deadline=None)  # per catalogue row; nightly: more
@given(data=st.data())
def test_parse_spell_round_trip(name: str, data: st.DataObject) -> None:
    spec = data.draw(specs_for(name))
    attrs = O.spell(spec, name)
    assert set(attrs) <= set(O.OPERATORS[name].attribute_names)
    assert O.parse(name, attrs) == spec
    # and spelling what was parsed is canonical: a second round changes nothing
    assert O.spell(O.parse(name, attrs), name) == attrs


def test_spell_of_parsed_case_file_attributes_is_canonical() -> None:
    """Every seed and edge case: its written attributes parse, spell and parse back to the same spec."""
    root = ROOT / "cases"
    seen = set()
    for path in sorted(root.rglob("*.yaml")):
        for case in load_file(path):
            again = O.parse(case.op, O.spell(case.spec, case.op))
            assert again == case.spec, (path, case.id)
            seen.add(case.op)
    assert seen == set(O.OPERATORS)


def test_onnx_ceil_mode_is_one_rounding_under_every_auto_pad() -> None:
    for auto_pad in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        spec = O.parse("MaxPool-22", {"kernel_shape": [2], "strides": [3], "ceil_mode": 1, "auto_pad": auto_pad})
        assert spec.rounding_type == "ceil_torch"
        assert spec.ceil_mode == 1
        assert O.spell(spec, "MaxPool-22")["ceil_mode"] == 1
    valid = O.parse("MaxPool-22", {"kernel_shape": [2], "strides": [3], "ceil_mode": 1, "auto_pad": "VALID"})
    # "VALID: output_spatial_shape[i] = ceil((input_spatial_shape[i] - ... + 1) / strides_spatial_shape[i])":
    # size 7, kernel 2, stride 3 -> 2 (ceil_mode would give 3 under NOTSET)
    assert valid.applied_rounding == "floor"
    assert resolve(valid, (1, 1, 7)).output_shape == (1, 1, 2)
    # translated to OpenVINO, whose valid applies rounding_type, it must say floor
    assert O.spell(valid, "MaxPool-14")["rounding_type"] == "floor"


def test_openvino_rounded_valid_spelled_for_onnx() -> None:
    # OpenVINO valid + ceil rounds up ("valid padding is not used"; the rounding still applies);
    # ONNX's VALID ignores ceil_mode, so the translation is NOTSET, pads 0, ceil_mode 1.
    spec = O.parse("MaxPool-14", {"kernel": [2], "strides": [3], "pads_begin": [1], "pads_end": [1],
                                  "rounding_type": "ceil_torch", "auto_pad": "valid"})
    attrs = O.spell(spec, "MaxPool-22")
    assert (attrs["auto_pad"], attrs["pads"], attrs["ceil_mode"]) == ("NOTSET", [0, 0], 1)
    onnx = O.parse("MaxPool-22", attrs)
    assert resolve(onnx, (1, 1, 7)).output_shape == resolve(spec, (1, 1, 7)).output_shape == (1, 1, 3)


def test_spell_refuses_what_the_operator_cannot_say() -> None:
    ceil_torch = O.parse("MaxPool-14", {"kernel": [2], "strides": [2], "rounding_type": "ceil_torch"})
    with pytest.raises(AttributeValueError) as err:
        O.spell(ceil_torch, "MaxPool-8")
    assert err.value.attribute == "rounding_type"
    dilated = O.parse("AveragePool-22", {"kernel_shape": [2], "dilations": [2]})
    with pytest.raises(AttributeValueError) as err:
        O.spell(dilated, "AvgPool-14")
    assert err.value.attribute == "dilations"
    with pytest.raises(AttributeValueError) as err:
        O.spell(dilated, "MaxPool-22")
    assert err.value.attribute == "op"


@pytest.mark.parametrize(("name", "attrs", "attribute", "text"), [
    ("MaxPool-99", {}, "op", "expected one of MaxPool-1, MaxPool-8, MaxPool-14"),
    ("MaxPool-14", {"kernel": [2]}, "strides", "required by MaxPool-14"),
    ("AveragePool-19", {"strides": [1]}, "kernel_shape", "required by AveragePool-19"),
    ("AvgPool-14", {"kernel": [2], "strides": [1], "dilations": [1]}, "dilations", "not an attribute of AvgPool-14"),
    ("MaxPool-8", {"kernel": [2], "strides": [1], "rounding_type": "ceil_torch"}, "rounding_type", "'floor', 'ceil'"),
    ("MaxPool-22", {"kernel_shape": [2], "ceil_mode": 2}, "ceil_mode", "expected 0 or 1"),
    ("MaxPool-22", {"kernel_shape": [2, 2], "pads": [1, 1]}, "pads", "expected 4 values"),
])
def test_parse_errors_name_the_attribute(name: str, attrs: dict, attribute: str, text: str) -> None:
    with pytest.raises(AttributeValueError) as err:
        O.parse(name, attrs)
    assert err.value.attribute == attribute
    assert text in str(err.value)


def test_dtypes_come_from_the_rows() -> None:
    assert "int32" in O.operator("MaxPool-14").dtypes and "int32" not in O.operator("MaxPool-22").dtypes
    # AveragePool-22 (the newest ONNX average) adds bfloat16; AveragePool-19 does not have it.
    assert O.allowed_dtypes("avg", "onnx") == ("float16", "float32", "float64", "bfloat16")
    assert "bfloat16" not in O.operator("AveragePool-19").dtypes
    assert "bfloat16" in O.operator("MaxPool-22").dtypes and "bfloat16" not in O.operator("MaxPool-14").dtypes
    spec = O.parse("MaxPool-22", {"kernel_shape": [2]})
    with pytest.raises(AttributeValueError, match="does not allow int32"):
        O.check_input(spec, (1, 1, 4), "int32")


def test_a_new_operator_version_is_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adding an opset is adding a row: parse, spell, the case loader and the dtype check follow."""
    row = dataclasses.replace(O.OPERATORS["MaxPool-22"], name="MaxPool-99", dtypes=("float32",),
                              source="a made-up MaxPool-99: float32 only")
    monkeypatch.setitem(O.OPERATORS, "MaxPool-99", row)
    spec = O.parse("MaxPool-99", {"kernel_shape": [3], "strides": [2], "ceil_mode": 1})
    assert spec == O.parse("MaxPool-22", {"kernel_shape": [3], "strides": [2], "ceil_mode": 1})
    assert O.spell(spec, "MaxPool-99") == O.spell(spec, "MaxPool-22")
    with pytest.raises(AttributeValueError, match="not an attribute of MaxPool-99"):
        O.parse("MaxPool-99", {"kernel_shape": [3], "axis": 1})
    # the newest row of (max, onnx) is now MaxPool-99: its dtypes rule inputs
    assert O.newest("max", "onnx").name == "MaxPool-99"
    with pytest.raises(AttributeValueError, match="does not allow float64"):
        O.check_input(spec, (1, 1, 5), "float64")


def test_a_new_row_reaches_case_files(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    row = dataclasses.replace(O.OPERATORS["AvgPool-14"], name="AvgPool-99")
    monkeypatch.setitem(O.OPERATORS, "AvgPool-99", row)
    path = tmp_path / "new.yaml"
    path.write_text(
        "schema: poolcheck.case/1\ncases:\n- id: new-op\n  op: AvgPool-99\n  attributes: {kernel: [2], strides: [2]}\n"
        "  dtype: float32\n  input: [[[1, 2, 3, 4]]]\n  expected: {values: [[[1.5, 3.5]]]}\n")
    [case] = load_file(path)
    assert case.convention == "openvino" and case.spec.kernel == (2,)


def test_a_new_family_version_is_one_row(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A family operator's new version is a row too: parse, spell, the dtype check, a case file and
    both engines follow."""
    from poolcheck.engines import available_engines
    from poolcheck.runner import run_case

    row = dataclasses.replace(O.OPERATORS["LpPool-22"], name="LpPool-99", dtypes=("float64",),
                              source="a made-up LpPool-99: float64 only")
    monkeypatch.setitem(O.OPERATORS, "LpPool-99", row)
    spec = O.parse("LpPool-99", {"kernel_shape": [2], "p": 3})
    older = O.parse("LpPool-22", {"kernel_shape": [2], "p": 3})
    assert older.version == 22 and spec == older.replace(version=None)  # -22 is an older version now
    assert O.spell(spec, "LpPool-99") == O.spell(spec, "LpPool-22")
    assert O.onnx_version("LpPool", 99) is row and O.onnx_version("LpPool", 98).name == "LpPool-22"
    with pytest.raises(AttributeValueError, match="does not allow float32"):
        O.check_input(spec, (1, 1, 4), "float32", row)
    path = tmp_path / "new.yaml"
    path.write_text(
        "schema: poolcheck.case/1\ncases:\n- id: new-lp\n  op: LpPool-99\n  attributes: {kernel_shape: [2], p: 1}\n"
        "  dtype: float64\n  input: [[[1, -2, 3]]]\n  expected: {values: [[[3, 5]]]}\n")
    [case] = load_file(path)
    assert {c.verdict for c in run_case(case, available_engines()).checks} == {"pass"}
