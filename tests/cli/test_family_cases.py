"""Case files of the family: bad input is one error naming file, line, case and field; an older
version's case parses through its own row; the whole corpus passes on both engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from poolcheck.cases import load_paths
from poolcheck.engines import available_engines
from poolcheck.runner import run_case

CASE = """
  - id: {id}
    op: {op}
    attributes: {attributes}
    input: [[[1, 2]]]
{extra}    expected: {expected}
"""


@pytest.mark.parametrize(("op", "attributes", "extra", "expected", "field", "text"), [
    ("MaxUnpool-22", "{kernel_shape: [2]}", "", "{values: [[[0]]]}", "inputs", "needs its second input"),
    ("MaxUnpool-22", "{kernel_shape: [2]}", "    inputs: {I: [[[0, 9]]]}\n", "{values: [[[0]]]}", "inputs.I",
     "every index must lie in [0, 3)"),
    ("MaxUnpool-22", "{kernel_shape: [2]}", "    inputs: {J: [[[0, 1]]]}\n", "{values: [[[0]]]}", "inputs",
     "exactly the key I"),
    ("MaxUnpool-22", "{kernel_shape: [2], output_shape: [1, 1, 2147483647]}", "    inputs: {I: [[[0, 1]]]}\n",
     "{values: [[[0]]]}", "attributes.output_shape", "exceeds 50000000"),
    ("LpPool-22", "{kernel_shape: [2]}", "    inputs: {I: [[[0, 1]]]}\n", "{values: [[[0]]]}", "inputs",
     "takes one input"),
    ("LpPool-22", "{kernel_shape: [2], p: 0}", "", "{values: [[[0]]]}", "attributes.p", "must be >= 1"),
    ("GlobalMaxPool-22", "{}", "", "{values: [[[2]]], indices: [[[1]]]}", "expected.indices", "no indices output"),
    ("AdaptiveMaxPool-8", "{output_shape: [2147483647]}", "", "{values: [[[2]]]}", "attributes.output_shape",
     "exceeds 50000000"),
    ("AdaptiveAvgPool-8", "{output_shape: [2, 2]}", "", "{values: [[[2]]]}", "attributes.output_shape", "rank 4"),
    ("AvgPool-1", "{kernel: [2], strides: [1]}", "", "{values: [[[2]]]}", "attributes", "exclude-pad: required by AvgPool-1"),
    ("MaxPool-99", "{kernel: [2], strides: [1]}", "", "{values: [[[2]]]}", "op", "expected one of"),
])
def test_bad_family_cases_are_one_line_naming_the_field(tmp_path: Path, op: str, attributes: str, extra: str,
                                                        expected: str, field: str, text: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("schema: poolcheck.case/1\ncases:" + CASE.format(id="bad", op=op, attributes=attributes,
                                                                     extra=extra, expected=expected))
    cases, errors = load_paths([path])
    assert cases == [] and len(errors) == 1
    message = str(errors[0])
    assert f"field '{field}'" in message and text in message and "bad.yaml:" in message, message
    assert "\n" not in message


def test_onnx_maxpool8_is_found_by_its_convention(tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text("schema: poolcheck.case/1\ncases:" + CASE.format(
        id="v", op="MaxPool-8\n    convention: onnx", attributes="{kernel_shape: [2], storage_order: 1}", extra="",
        expected="{values: [[[2]]], indices: [[[1]]]}"))
    cases, errors = load_paths([path])
    assert errors == [] and cases[0].op == "onnx:MaxPool-8" and cases[0].spec.convention == "onnx"
    assert {c.verdict for c in run_case(cases[0], available_engines()).checks} == {"pass"}
