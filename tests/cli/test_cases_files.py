"""Every case file under cases/ through the real ``poolcheck run`` (a subprocess of the installed
console script): the verdict of each documented example, ``poolcheck run cases/`` exiting 0, every
case's expected output against the slow loop oracle, the examples in docs/case-format.md, and each
malformed-case error path (exit 2, file:line, case id and field named, no traceback). The many
malformed files go through the same command in-process (typer's CliRunner: the same code from
argument parsing to exit code, without a Python start-up each); a sample of them, one of each kind
of error, also through the subprocess."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import oracle
import oracle_family
import pytest
from support import ROOT, cli, invoke

from poolcheck.api import run_spec
from poolcheck.cases import dump_cases, load_paths
from poolcheck.cases.model import Case
from poolcheck.spec.operators import OPERATORS

CASES = ROOT / "cases"
DOC = ROOT / "docs" / "case-format.md"

#: Every documented example and the verdict its case records: ``erratum`` where the document
#: prints a wrong output (the case says what and why), ``pass`` everywhere else.
SEED_VERDICTS: dict[str, str] = {
    **{f"ov-shape-rules-ex{i}": "pass" for i in range(2, 9)},
    "ov-shape-rules-ex1": "erratum",  # output0[1][3] = -6 / output1 = 5; the window holds 3 and -6
    **{f"ov-maxpool8-ex{i}": "pass" for i in range(2, 8)},
    "ov-maxpool8-ex1": "erratum",  # the same example and error as the shape-rules page
    "ov-maxpool8-xml1": "erratum",  # same_upper, stride 2 on 32x32: 16x16, not 32x32
    "ov-maxpool8-xml2": "pass",
    "ov-maxpool8-xml3": "pass",
    **{f"onnx-averagepool19-{name}": "pass" for name in (
        "1d-default", "2d-ceil", "2d-ceil-last-window-starts-on-pad", "2d-default", "2d-pads",
        "2d-pads-count-include-pad", "2d-precomputed-pads", "2d-precomputed-pads-count-include-pad",
        "2d-precomputed-strides", "2d-strides", "3d-default",
    )},
    **{f"ov-maxpool1-ex{i}": "pass" for i in range(2, 6)},
    "ov-maxpool1-ex1": "erratum",  # MaxPool-8's example 1 again, with the same -6
    "ov-maxpool1-xml1": "erratum",  # same_upper, stride 2 on 32x32: 16x16, not 32x32
    "ov-maxpool1-xml2": "pass",
    "ov-maxpool1-xml3": "pass",
    "ov-avgpool1-xml1": "erratum",  # same_upper, stride 2: 16x16, not 32x32
    "ov-avgpool1-xml2": "erratum",  # likewise with kernel 5
    **{f"ov-avgpool1-xml{i}": "pass" for i in range(3, 6)},
    **{f"onnx-lppool-{name}": "pass" for name in (
        "1d-default", "2d-default", "3d-default", "2d-same-upper", "2d-same-lower", "2d-pads", "2d-strides",
        "2d-dilations")},
    **{f"onnx-{op}{suffix}": "pass" for op in ("globalaveragepool", "globalmaxpool") for suffix in ("", "-precomputed")},
    "onnx-maxunpool-without-output-shape": "pass",
    "onnx-maxunpool-with-output-shape": "erratum",  # the indices placed in the inferred 4x4, not the 5x5 output
    "ov-adaptiveavgpool8-xml1": "pass",
    "ov-adaptivemaxpool8-xml1": "pass",
}


@pytest.fixture(scope="module")
def full_run() -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = cli("run", "cases/", "--json")
    return proc, json.loads(proc.stdout)


# --------------------------------------------------------------------------- the case files


def test_run_cases_exits_0(full_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]]) -> None:
    proc, result = full_run
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    bad = {c["case_id"]: c["verdict"] for c in result["cases"] if c["verdict"] not in ("pass", "erratum")}
    assert bad == {}


def test_every_documented_example_has_its_recorded_verdict(
    full_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    _, result = full_run
    verdicts = {c["case_id"]: c["verdict"] for c in result["cases"] if "/known/" not in c["source"]}  # the registry
    seeds = {k: v for k, v in verdicts.items() if not k.startswith("edge-")}
    assert seeds == SEED_VERDICTS
    for case in result["cases"]:
        if case["case_id"] in SEED_VERDICTS:
            assert case["checks"], case["case_id"]
            assert {c["verdict"] for c in case["checks"]} == {SEED_VERDICTS[case["case_id"]]}, case["case_id"]


def test_seed_files_hold_every_example_of_their_page() -> None:
    cases, errors = load_paths([CASES / "seeds"])
    assert errors == []
    per_file: dict[str, list[str]] = {}
    for c in cases:
        per_file.setdefault(Path(c.path).name, []).append(c.id)
    assert len(per_file["openvino-shape-rules.yaml"]) == 8
    assert len(per_file["openvino-maxpool8.yaml"]) == 7 + 3
    assert len(per_file["onnx-averagepool19.yaml"]) == 11
    assert len(per_file["openvino-maxpool1.yaml"]) == 5 + 3
    assert len(per_file["openvino-avgpool1.yaml"]) == 5
    assert len(per_file["onnx-lppool.yaml"]) == 8
    assert len(per_file["onnx-global-pool.yaml"]) == 4
    assert len(per_file["onnx-maxunpool.yaml"]) == 2
    assert len(per_file["openvino-adaptive-pool.yaml"]) == 2
    for c in cases:
        if Path(c.path).name == "openvino-shape-rules.yaml":
            copies = {copy["document"] for copy in c.source["copies"]}
            assert c.source["document"].startswith("000_") and copies == {
                "002_dd8fdd98fbb69559.txt", "003_7b80d6bba5e5e9b1.txt"}
            assert all(copy["differences"].strip() for copy in c.source["copies"])


def test_edge_cases_all_pass_and_are_worked_out_by_hand(
    full_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    _, result = full_run
    edge = {c["case_id"]: c["verdict"] for c in result["cases"] if c["case_id"].startswith("edge-")}
    assert len(edge) >= 30
    assert set(edge.values()) == {"pass"}
    cases, errors = load_paths([CASES / "edge"])
    assert errors == []
    for c in cases:
        assert len(c.notes) > 80, f"{c.id}: the expected output must be worked out in notes"


def test_erratum_cases_report_what_the_document_says(
    full_run: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    _, result = full_run
    by_id = {c["case_id"]: c for c in result["cases"]}
    ex1 = by_id["ov-shape-rules-ex1"]
    assert ex1["erratum"]["correct"]["values"][0][0][1][3] == 3
    assert ex1["erratum"]["correct"]["indices"][0][0][1][3] == 2
    diffs = [d for check in ex1["checks"] for d in check["diffs"]]
    assert {(d["output"], tuple(d["position"]), d["expected"], d["actual"]) for d in diffs} == {
        ("values", (0, 0, 1, 3), -6.0, 3.0), ("indices", (0, 0, 1, 3), 5, 2)}
    xml1 = by_id["ov-maxpool8-xml1"]
    assert xml1["erratum"]["correct"]["shape"] == [1, 3, 16, 16]


def _oracle_outputs(case: Case) -> dict[str, np.ndarray]:
    """The loop oracles (tests/oracle.py, tests/oracle_family.py, no poolcheck code) on the case's
    own attributes, chosen by the catalogue row's op and convention."""
    a = dict(case.attributes)
    x = case.input
    row = OPERATORS[case.op]
    if row.op == "max" and row.convention == "openvino":
        values, indices = oracle.openvino_max_pool(x, **a)
        return {"values": values, "indices": indices}
    if row.op == "avg" and row.convention == "openvino":
        if "exclude-pad" in a:  # AvgPool-1 spells it with a hyphen
            a["exclude_pad"] = a.pop("exclude-pad")
        return {"values": oracle.openvino_avg_pool(x, **a)}
    if row.op == "max":
        values, indices = oracle.onnx_max_pool(x, **a)
        return {"values": values, "indices": indices}
    if row.op == "avg":
        return {"values": oracle.onnx_average_pool(x, **a)}
    if row.op == "lp":
        return {"values": oracle_family.lp_pool(x, **a)}
    if row.op.startswith("global_"):
        return {"values": oracle_family.global_pool(x, row.op.removeprefix("global_"), **a)}
    if row.op.startswith("adaptive_"):
        values, index = oracle_family.adaptive(x, a["output_shape"], row.op.removeprefix("adaptive_"))
        return {"values": values} if index is None else {"values": values, "indices": index}
    return {"values": oracle_family.max_unpool(x, case.inputs["I"], **a)}


def _all_cases() -> list[Case]:
    cases, errors = load_paths([CASES])
    assert errors == []
    return cases


#: Inputs the loop oracle takes seconds over (the 3-D LpPool example: 98,304 elements, 3.4 s CPU,
#: the rest of the corpus together ~1 s) are slow: make test runs them, test-fast leaves them out.
ORACLE_SLOW_SIZE = 10_000


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c.input.size > ORACLE_SLOW_SIZE else c
                                  for c in _all_cases()], ids=lambda c: c.id)
def test_expected_outputs_agree_with_the_loop_oracle(case: Case) -> None:
    """The documented output, with any erratum's correction applied, is what the spec's windows
    give when enumerated tap by tap -- a check of the hand working independent of the engines."""
    target = {**case.expected, **(case.erratum["correct"] if case.erratum else {})}
    got = _oracle_outputs(case)
    if "shape" in target:
        assert tuple(got["values"].shape) == tuple(target["shape"])
    if "values" in target:
        exp = np.asarray(target["values"], dtype=np.float64)
        act = got["values"].astype(np.float64)
        assert act.shape == exp.shape
        rtol = case.rtol
        if OPERATORS[case.op].op in ("lp", "global_lp") and case.input.dtype == np.float64:
            # the oracle's root is within a few float64 ulps of the norm (tests/oracle_family.py),
            # and so is the engines': in float64 the two may part in the last place
            rtol = max(rtol, 4 * float(np.finfo(np.float64).eps))
        assert np.allclose(act, exp, rtol=rtol, atol=case.atol, equal_nan=True) or np.array_equal(act, exp)
    if "indices" in target:
        assert np.array_equal(got["indices"].astype(np.int64), np.asarray(target["indices"]))


def test_erratum_outputs_differ_from_the_document() -> None:
    """An erratum must actually correct something (no erratum restating the document)."""
    for case in _all_cases():
        if case.erratum is None:
            continue
        differs = False
        for key, right in case.erratum["correct"].items():
            said = case.expected.get(key)
            differs |= said is None or not np.array_equal(np.asarray(said), np.asarray(right))
        assert differs, case.id


def test_index_element_type_i32_gives_int32_indices() -> None:
    """The case format compares index values only; the element type is checked here."""
    cases = {c.id: c for c in _all_cases()}
    c32 = cases["edge-index-element-type-i32"]
    values, indices = run_spec(c32.spec, c32.input)
    assert np.array_equal(values, c32.expected["values"])
    assert indices is not None and indices.dtype == np.int32
    assert np.array_equal(indices, c32.expected["indices"])
    c64 = cases["ov-shape-rules-ex8"]
    _, indices64 = run_spec(c64.spec, c64.input)
    assert indices64 is not None and indices64.dtype == np.int64


# --------------------------------------------------------------------------- format round trips


def _yaml_blocks(text: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("index", range(len(_yaml_blocks(DOC.read_text(encoding="utf-8")))))
def test_docs_examples_load_and_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index: int) -> None:
    block = _yaml_blocks(DOC.read_text(encoding="utf-8"))[index]
    (tmp_path / "doc.yaml").write_text(block, encoding="utf-8")
    proc = invoke("run", "doc.yaml", "--json", cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdicts = {c["verdict"] for c in json.loads(proc.stdout)["cases"]}
    assert verdicts <= {"pass", "erratum"} and verdicts


def test_dumped_case_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fuzz reproducers are written with dump_cases and must replay with `poolcheck run`.

    Worked by hand: H: ceil((2 + 2 - 2) / 2 + 1) = 2 (last start 2 < 2 + 1, kept); W: ceil((3 + 2 -
    2) / 2 + 1) = 3, last start 4 >= 3 + 1 -> 2. Windows rows {-1, 0} / {1, 2}, cols {-1, 0} / {1, 2}:
    1 at (0, 0); NaN at (0, 1) wins over 3; -inf at (1, 0); 6 at (1, 2). Column-major index h + 2w:
    0, 2, 1, 5.
    """
    case = {
        "id": "fuzz-roundtrip", "op": "MaxPool-22",
        "attributes": {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1,
                       "storage_order": 1},
        "dtype": "float32",
        "input": np.array([[[[1.0, np.nan, 3.0], [-np.inf, 5.0, 6.0]]]], dtype=np.float32),
        "expected": {"values": np.array([[[[1.0, np.nan], [-np.inf, 6.0]]]], dtype=np.float32),
                     "indices": np.array([[[[0, 2], [1, 5]]]])},
        "tags": ["fuzz"],
    }
    (tmp_path / "repro.yaml").write_text(dump_cases([case]), encoding="utf-8")
    proc = invoke("run", "repro.yaml", "-k", "fuzz-roundtrip", "--json", cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [c["verdict"] for c in json.loads(proc.stdout)["cases"]] == ["pass"]


# --------------------------------------------------------------------------- malformed cases

GOOD = """\
schema: poolcheck.case/1
cases:
  - id: ok-case
    op: MaxPool-14
    attributes: {kernel: [2], strides: [1]}
    input: [[[1, 2, 3]]]
    expected: {values: [[[2, 3]]], indices: [[[1, 2]]]}
  - id: bad-case
    op: MaxPool-14
    attributes:
      kernel: [2, 2]
      strides: [1, 1]
    dtype: float32
    input: [[[[1, 2], [3, 4]]]]
    expected:
      values: [[[[4]]]]
"""

#: Nine levels of ten aliases each: 10**9 elements once expanded, a few hundred bytes of text.
ALIAS_BOMB = "[" + ", ".join(
    ["&a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    + [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]) + "]"

AVG = GOOD.replace("""  - id: bad-case
    op: MaxPool-14""", """  - id: bad-case
    op: AvgPool-14""").replace("values: [[[[4]]]]", "values: [[[[2.5]]]]")


def _sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


#: (name, file text, marker of the reported line, case id or None, field or None, message part)
MALFORMED: list[tuple[str, str, str, str | None, str | None, str]] = [
    ("yaml-syntax", _sub(GOOD, "kernel: [2, 2]", "kernel: [2, 2"), "strides: [1, 1]", None, None,
     "invalid YAML"),
    ("missing-id", _sub(GOOD, "  - id: bad-case\n    op: MaxPool-14", "  - op: MaxPool-14"),
     "  - op: MaxPool-14", None, "id", "non-empty string 'id'"),
    ("unknown-key", _sub(GOOD, "    dtype: float32", "    colour: red"), "colour: red", "bad-case", "colour",
     "unknown key"),
    ("unknown-op", _sub(GOOD, "  - id: bad-case\n    op: MaxPool-14", "  - id: bad-case\n    op: MaxPool-99"),
     "op: MaxPool-99", "bad-case", "op", "MaxPool-99"),
    ("bad-attribute-value", _sub(GOOD, "strides: [1, 1]", "strides: [1, 0]"), "strides: [1, 0]", "bad-case",
     "attributes.strides", ">= 1"),
    ("bad-rounding-type", _sub(GOOD, "strides: [1, 1]", "strides: [1, 1]\n      rounding_type: round"),
     "rounding_type: round", "bad-case", "attributes.rounding_type", "'round'"),
    ("unknown-attribute", _sub(GOOD, "strides: [1, 1]", "strides: [1, 1]\n      kernel_shape: [2, 2]"),
     "kernel_shape: [2, 2]", "bad-case", "attributes.kernel_shape", "not an attribute of MaxPool-14"),
    ("wrong-pads-length", _sub(GOOD, "strides: [1, 1]", "strides: [1, 1]\n      pads_begin: [1]"),
     "pads_begin: [1]", "bad-case", "attributes.pads_begin", "expected 2 value(s)"),
    ("wrong-onnx-pads-length", _sub(GOOD, "op: MaxPool-14\n    attributes:\n      kernel: [2, 2]\n"
                                    "      strides: [1, 1]",
                                    "op: MaxPool-22\n    attributes:\n      kernel_shape: [2, 2]\n"
                                    "      pads: [1, 1]"),
     "pads: [1, 1]", "bad-case", "attributes.pads", "expected 4 values"),
    ("ragged-input", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]", "input: [[[[1, 2], [3]]]]"),
     "input: [[[[1, 2], [3]]]]", "bad-case", "input", "ragged"),
    ("wrong-rank-input", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]", "input: [[[1, 2, 3, 4]]]"),
     "input: [[[1, 2, 3, 4]]]", "bad-case", "input", "rank 4"),
    ("non-numeric-values", _sub(GOOD, "values: [[[[4]]]]", "values: [[[[four]]]]"), "values: [[[[four]]]]",
     "bad-case", "expected.values", "expected numbers"),
    ("not-a-dtype", _sub(GOOD, "dtype: float32", "dtype: banana"), "dtype: banana", "bad-case", "dtype",
     "banana"),
    ("dtype-not-allowed", _sub(AVG, "dtype: float32", "dtype: int8"), "dtype: int8", "bad-case", "dtype",
     "does not allow int8"),
    ("duplicate-id", _sub(GOOD, "  - id: bad-case", "  - id: ok-case"), "  - id: ok-case", "ok-case", "id",
     "duplicate id (first at line 3)"),
    ("indices-on-avg-pool", _sub(AVG, "values: [[[[2.5]]]]", "values: [[[[2.5]]]]\n      indices: [[[[3]]]]"),
     "indices: [[[[3]]]]", "bad-case", "expected.indices", "no indices output"),
    ("erratum-missing-why", GOOD + "    erratum:\n      says: it is 5\n      correct: {values: [[[[4]]]]}\n",
     "    erratum:", "bad-case", "erratum", "'why'"),
    ("expected-missing", _sub(GOOD, "    expected:\n      values: [[[[4]]]]\n", ""), "  - id: bad-case", "bad-case",
     "expected", "expected a mapping"),
    ("negative-tolerance", GOOD + "    tolerance: {rtol: -1}\n", "tolerance: {rtol: -1}", "bad-case",
     "tolerance.rtol", "non-negative"),
    # ---- hostile probes (issue 8): each was a traceback that ended the whole run
    ("op-as-list", _sub(GOOD, "op: MaxPool-14\n    attributes:\n      kernel: [2, 2]",
                        "op: [MaxPool-14]\n    attributes:\n      kernel: [2, 2]"),
     "op: [MaxPool-14]", "bad-case", "op", "expected one of"),
    ("op-as-mapping", _sub(GOOD, "op: MaxPool-14\n    attributes:\n      kernel: [2, 2]",
                           "op: {a: 1}\n    attributes:\n      kernel: [2, 2]"),
     "op: {a: 1}", "bad-case", "op", "expected one of"),
    ("dtype-mapping", _sub(GOOD, "dtype: float32", "dtype: {kind: f}"), "dtype: {kind: f}", "bad-case", "dtype",
     "does not allow"),
    ("dtype-void", _sub(GOOD, "dtype: float32", "dtype: V8"), "dtype: V8", "bad-case", "dtype", "does not allow V8"),
    ("dtype-complex", _sub(GOOD, "dtype: float32", "dtype: complex64"), "dtype: complex64", "bad-case", "dtype",
     "does not allow complex64"),
    ("dtype-object", _sub(GOOD, "dtype: float32", "dtype: object"), "dtype: object", "bad-case", "dtype",
     "does not allow object"),
    ("dtype-bool", _sub(GOOD, "dtype: float32", "dtype: bool"), "dtype: bool", "bad-case", "dtype",
     "does not allow bool"),
    ("dtype-structured", _sub(GOOD, "dtype: float32", "dtype: '[(\"a\", \"<f4\")]'"), "dtype: '[", "bad-case",
     "dtype", "does not allow"),
    ("non-string-key", _sub(GOOD, "    dtype: float32", "    dtype: float32\n    7: seven"), "7: seven", "bad-case",
     "7", "keys must be strings"),
    ("non-string-attribute-key", _sub(GOOD, "strides: [1, 1]", "strides: [1, 1]\n      3: x"), "3: x", "bad-case",
     "attributes", "keys must be strings"),
    ("nan-in-int-input", _sub(GOOD, "dtype: float32\n    input: [[[[1, 2], [3, 4]]]]",
                              "dtype: int32\n    input: [[[[1, .nan], [3, 4]]]]"),
     "input: [[[[1, .nan]", "bad-case", "input", "cannot be stored in the integer type int32"),
    ("inf-string-in-int-input", _sub(GOOD, "dtype: float32\n    input: [[[[1, 2], [3, 4]]]]",
                                     "dtype: int8\n    input: [[[[1, '-inf'], [3, 4]]]]"),
     "input: [[[[1, '-inf']", "bad-case", "input", "cannot be stored"),
    ("fraction-in-int-input", _sub(GOOD, "dtype: float32\n    input: [[[[1, 2], [3, 4]]]]",
                                   "dtype: int8\n    input: [[[[1, 2.5], [3, 4]]]]"),
     "input: [[[[1, 2.5]", "bad-case", "input", "non-integer value 2.5"),
    ("int-out-of-range", _sub(GOOD, "dtype: float32\n    input: [[[[1, 2], [3, 4]]]]",
                              "dtype: int8\n    input: [[[[1, 300], [3, 4]]]]"),
     "input: [[[[1, 300]", "bad-case", "input", "out of range for int8"),
    ("400-digit-input", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]", f"input: [[[[1, {'9' * 400}], [3, 4]]]]"),
     "input: [[[[1, 999", "bad-case", "input", "out of range for float32"),
    ("400-digit-int64-input", _sub(GOOD, "dtype: float32\n    input: [[[[1, 2], [3, 4]]]]",
                                   f"dtype: int64\n    input: [[[[1, -{'9' * 400}], [3, 4]]]]"),
     "input: [[[[1, -999", "bad-case", "input", "out of range for int64"),
    ("400-digit-expected", _sub(GOOD, "values: [[[[4]]]]", f"values: [[[[{'7' * 400}]]]]"), "values: [[[[777",
     "bad-case", "expected.values", "out of range"),
    ("attribute-as-mapping", _sub(GOOD, "strides: [1, 1]", "strides: {a: 1}"), "strides: {a: 1}", "bad-case",
     "attributes.strides", "expected a list of integers"),
    ("recipe-shape-overflow", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]",
                                   f"input: {{shape: [1, 1, {2**62}, {2**62}]}}"),
     "input: {shape:", "bad-case", "input.shape", "too large"),
    ("recipe-shape-strings", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]", "input: {shape: [1, one, 2, 2]}"),
     "input: {shape:", "bad-case", "input.shape", "positive integers"),
    ("recipe-name-list", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]", "input: {shape: [1, 1, 2, 2], recipe: [a]}"),
     "input: {shape:", "bad-case", "input.recipe", "expected one of"),
    ("recipe-seed-string", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]",
                                "input: {shape: [1, 1, 2, 2], recipe: random, seed: abc}"),
     "input: {shape:", "bad-case", "input.seed", "expected an integer"),
    ("recipe-seed-negative", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]",
                                  "input: {shape: [1, 1, 2, 2], recipe: randint, seed: -3}"),
     "input: {shape:", "bad-case", "input.seed", "expected an integer"),
    ("recipe-low-string", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]",
                               "input: {shape: [1, 1, 2, 2], recipe: random, low: zero}"),
     "input: {shape:", "bad-case", "input.low", "finite number"),
    ("recipe-randint-empty-range", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]",
                                        "input: {shape: [1, 1, 2, 2], recipe: randint, low: 5, high: 5}"),
     "input: {shape:", "bad-case", "input.low", "empty"),
    ("recipe-randint-fraction", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]",
                                     "input: {shape: [1, 1, 2, 2], recipe: randint, low: 0.5}"),
     "input: {shape:", "bad-case", "input.low", "expected an integer"),
    ("recipe-constant-list", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]",
                                  "input: {shape: [1, 1, 2, 2], recipe: constant, value: [1, 2, 3]}"),
     "input: {shape:", "bad-case", "input.value", "finite number"),
    ("recipe-constant-nan", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]",
                                 "input: {shape: [1, 1, 2, 2], recipe: constant, value: .nan}"),
     "input: {shape:", "bad-case", "input.value", "finite number"),
    ("recipe-start-huge", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]",
                               f"input: {{shape: [1, 1, 2, 2], start: {'9' * 400}}}"),
     "input: {shape:", "bad-case", "input.start", "out of range"),
    ("recipe-unknown-key", _sub(GOOD, "input: [[[[1, 2], [3, 4]]]]", "input: {shape: [1, 1, 2, 2], stat: 3}"),
     "input: {shape:", "bad-case", "input.stat", "unknown recipe key"),
    ("tolerance-nan", GOOD + "    tolerance: {rtol: .nan}\n", "tolerance: {rtol: .nan}", "bad-case",
     "tolerance.rtol", "non-negative"),
    ("erratum-shape-not-list", GOOD + "    erratum: {says: x, why: y, correct: {shape: 3}}\n", "    erratum:",
     "bad-case", "erratum.correct", "list of integers"),
    ("deep-nesting", _sub(GOOD, "    input: [[[[1, 2], [3, 4]]]]", "    input: " + "[" * 5000 + "]" * 5000),
     "    input: [[[[[[", None, None, "nested deeper than 64 levels"),
    ("alias-bomb", _sub(GOOD, "    input: [[[[1, 2], [3, 4]]]]", "    input: " + ALIAS_BOMB), "    input:",
     None, None, "expands to more than"),
    ("recursive-alias", _sub(GOOD, "    input: [[[[1, 2], [3, 4]]]]", "    input: &a [*a]"), "    input:",
     None, None, "refers to a collection that contains it"),
    ("collection-key", _sub(GOOD, "    dtype: float32", "    dtype: float32\n    [a, b]: c"), "[a, b]: c",
     None, None, "a mapping key must be a scalar"),
    ("duplicate-key", _sub(GOOD, "    dtype: float32", "    dtype: float32\n    dtype: float64"), "    dtype: float64",
     None, None, "duplicate key 'dtype'"),
    ("python-tag", _sub(GOOD, "dtype: float32", "dtype: !!python/name:os.system ''"), "dtype: !!python", None,
     None, "invalid YAML"),
]


def _line_of(text: str, marker: str) -> int:
    """1-based line of the last occurrence of ``marker`` in ``text``."""
    return text.count("\n", 0, text.rindex(marker)) + 1


#: Malformed files run in-process (the same code from argument parsing to exit code); these also
#: through the installed command in a subprocess: the YAML parser's error, a case's field, a
#: hostile-YAML guard (test_run_robust.py runs `run` as a real command many more ways).
THROUGH_SUBPROCESS = {"yaml-syntax", "unknown-key", "alias-bomb"}


@pytest.mark.parametrize(("name", "text", "marker", "case_id", "field", "message"), MALFORMED,
                         ids=[m[0] for m in MALFORMED])
def test_malformed_case_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str,
                                         marker: str, case_id: str | None, field: str | None, message: str) -> None:
    (tmp_path / f"{name}.yaml").write_text(text, encoding="utf-8")
    if name in THROUGH_SUBPROCESS:
        proc = cli("run", f"{name}.yaml", "--json", cwd=tmp_path)
    else:
        proc = invoke("run", f"{name}.yaml", "--json", cwd=tmp_path, monkeypatch=monkeypatch)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out
    line = _line_of(text, marker)
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    err = errors[0]
    assert f"{name}.yaml:{line}:" in err, err
    if case_id is not None:
        assert f"case {case_id!r}" in err, err
    if field is not None:
        assert f"field {field!r}" in err, err
    assert message in err, err
    if name not in ("yaml-syntax", "deep-nesting", "alias-bomb", "recursive-alias", "collection-key",
                    "duplicate-key", "python-tag"):
        # The file's other case still loads and runs; the bad one is an `error` row.
        verdicts = {c["case_id"]: c["verdict"] for c in json.loads(proc.stdout)["cases"]}
        assert verdicts.get("ok-case") == "pass", verdicts


def test_duplicate_id_across_files_names_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.yaml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(GOOD.replace("id: bad-case", "id: other-case"), encoding="utf-8")
    proc = invoke("run", ".", cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "b.yaml:3: case 'ok-case': duplicate id, also defined at a.yaml:3" in proc.stderr


@pytest.mark.parametrize("path", ["no-such-file.yaml", "no/such/folder"])
def test_nonexistent_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    proc = invoke("run", path, cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    assert f"{path}: no such file or folder" in proc.stderr


@pytest.mark.parametrize(("text", "message"), [
    ("- just a list\n", "expected a mapping with a 'cases' list at the top"),
    ("schema: poolcheck.case/2\ncases: []\n", "unsupported schema"),
    ("cases: []\nextra: 1\n", "unknown top-level key 'extra'"),
    ("cases: {id: x}\n", "'cases' must be a list"),
])
def test_malformed_file_level(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str) -> None:
    (tmp_path / "f.yaml").write_text(text, encoding="utf-8")
    proc = invoke("run", "f.yaml", cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    assert re.search(r"f\.yaml:\d+: ", proc.stderr), proc.stderr
    assert message in proc.stderr
