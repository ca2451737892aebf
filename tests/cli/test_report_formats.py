"""JSON, JUnit XML and Markdown renderers, and atomic report writing, from a fixed result."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from report_sample import DIAGNOSIS, PEER, sample_result
from support import SCHEMA_PATH

from poolcheck import files
from poolcheck.report import writers
from poolcheck.report.html import to_html
from poolcheck.report.jsonfmt import ReportError, from_json, load_result, plain, to_json
from poolcheck.report.junit import to_junit
from poolcheck.report.markdown import to_markdown
from poolcheck.results import VERDICTS, CaseResult, Check, Diff, RunResult


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return sample_result(tmp_path_factory.mktemp("sample"))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _strict_loads(text: str) -> object:
    def reject(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=reject)


def test_sample_covers_the_verdicts(result: RunResult) -> None:
    counts = result.counts()
    assert {v for v, n in counts.items() if n} == {"error", "fail", "crash", "rejects", "erratum", "pass"}
    check_verdicts = {k.verdict for c in result.cases for k in c.checks}
    assert {"pass", "fail", "erratum", "crash", "timeout", "rejects", "skip"} <= check_verdicts


# --------------------------------------------------------------------------- JSON


def test_json_validates_against_the_schema_and_round_trips(result: RunResult, validator) -> None:
    text = to_json(result)
    data = _strict_loads(text)
    validator.validate(data)
    assert data["schema"] == "poolcheck.result/2"
    assert data["counts"] == result.counts()
    assert [c["case_id"] for c in data["cases"]] == [c.case_id for c in result.cases]
    back = from_json(text)
    assert plain(back.to_dict()) == plain(result.to_dict())
    # The NaN a peer produced survives as the string "nan", at the position where it differs.
    fail = next(c for c in data["cases"] if c["case_id"] == "max2d-ceil-peer-fail")
    peer = next(k for k in fail["checks"] if k["runner"] == PEER)
    assert {"output": "values", "position": [0, 1, 0, 1], "actual": "nan"}.items() <= next(
        d for d in peer["diffs"] if d["position"] == [0, 1, 0, 1]).items()
    assert peer["diagnosis"] == DIAGNOSIS


def test_schema_rejects_malformed_documents(result: RunResult, validator) -> None:
    good = _strict_loads(to_json(result))
    bad_verdict = json.loads(json.dumps(good))
    bad_verdict["cases"][0]["verdict"] = "bogus"
    bad_cell = json.loads(json.dumps(good))
    diff = next(d for c in bad_cell["cases"] for k in c["checks"] for d in k["diffs"] if d.get("window"))
    diff["window"][0]["kind"] = "outside"
    missing = json.loads(json.dumps(good))
    del missing["counts"]
    shape_pos = json.loads(json.dumps(good))
    next(d for c in shape_pos["cases"] for k in c["checks"] for d in k["diffs"])["output"] = "shape"
    for doc in (bad_verdict, bad_cell, missing, shape_pos):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(doc)


def test_json_non_finite_values_are_strings() -> None:
    r = RunResult("cmd", [CaseResult("c", "fail", checks=[Check("x", "peer", "fail", diffs=[
        Diff("values", [0, 0, 1], float("nan"), float("-inf"))], n_diffs=1)])])
    text = to_json(r)
    d = _strict_loads(text)["cases"][0]["checks"][0]["diffs"][0]
    assert (d["expected"], d["actual"]) == ("nan", "-inf")


def test_loading_tolerates_unknown_fields_and_reports_bad_files(result: RunResult, tmp_path: Path) -> None:
    data = _strict_loads(to_json(result))
    data["added_later"] = {"x": 1}
    data["cases"][0]["added_later"] = 1
    data["cases"][0]["checks"][0]["added_later"] = 1
    r = from_json(json.dumps(data))
    assert [c.case_id for c in r.cases] == [c.case_id for c in result.cases]

    cases = {
        "missing.json": None,
        "notjson.json": "{not json",
        "wrongschema.json": json.dumps({"schema": "poolcheck.case/1", "cases": []}),
        "list.json": "[1, 2]",
        "badcase.json": json.dumps({"schema": "poolcheck.result/1", "command": "x", "cases": [{"verdict": "pass"}]}),
        "badcheck.json": json.dumps({"schema": "poolcheck.result/1", "command": "x",
                                     "cases": [{"case_id": "a", "verdict": "pass", "checks": [{"runner": "n"}]}]}),
    }
    for name, text in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        with pytest.raises(ReportError) as info:
            load_result(path)
        assert str(path) in str(info.value) and "\n" not in str(info.value)


# --------------------------------------------------------------------------- JUnit

#: The common JUnit schema (Jenkins junit-10.xsd): elements, their attributes and children.
JUNIT_ELEMENTS = {
    "testsuites": ({"name", "time", "tests", "failures", "errors", "skipped", "disabled"}, {"testsuite"}),
    "testsuite": ({"name", "tests", "failures", "errors", "skipped", "time", "disabled", "timestamp", "hostname",
                   "id", "package", "file", "log", "url", "version"},
                  {"properties", "testcase", "system-out", "system-err"}),
    "properties": (set(), {"property"}),
    "property": ({"name", "value"}, set()),
    "testcase": ({"name", "classname", "assertions", "time", "status", "file", "line"},
                 {"skipped", "error", "failure", "system-out", "system-err"}),
    "failure": ({"type", "message"}, set()),
    "error": ({"type", "message"}, set()),
    "skipped": ({"message"}, set()),
    "system-out": (set(), set()),
    "system-err": (set(), set()),
}
REQUIRED = {"testsuite": {"name", "tests"}, "testcase": {"name", "classname"}, "property": {"name", "value"}}
INTEGER_ATTRS = {"tests", "failures", "errors", "skipped"}


def _validate_junit(root: ET.Element) -> None:
    assert root.tag == "testsuites"
    for el in root.iter():
        allowed_attrs, allowed_children = JUNIT_ELEMENTS[el.tag]
        assert set(el.attrib) <= allowed_attrs, (el.tag, el.attrib)
        assert REQUIRED.get(el.tag, set()) <= set(el.attrib), (el.tag, el.attrib)
        for child in el:
            assert child.tag in allowed_children, (el.tag, child.tag)
        for a in INTEGER_ATTRS & set(el.attrib):
            assert re.fullmatch(r"\d+", el.attrib[a]), (el.tag, a, el.attrib[a])
        if el.tag == "testsuite":
            children = [c.tag for c in el]
            if "properties" in children:
                assert children.index("properties") == 0, "properties must come first"
            if "timestamp" in el.attrib:  # xs:dateTime without a zone, as the XSD pattern wants
                assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", el.attrib["timestamp"])
        if el.tag == "testcase":
            outcome = [c.tag for c in el if c.tag in ("skipped", "error", "failure")]
            assert len(outcome) <= 1, outcome


def test_junit_structure_and_counts(result: RunResult) -> None:
    text = to_junit(result)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(text.encode("utf-8"))
    _validate_junit(root)

    pairs = [(c, k) for c in result.cases for k in c.checks] + [(c, None) for c in result.cases if not c.checks]
    testcases = list(root.iter("testcase"))
    assert len(testcases) == len(pairs) == int(root.get("tests"))
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
            assert int(suite.get(attr)) == sum(1 for tc in cases if tc.find(tag) is not None)
    for attr in ("failures", "errors", "skipped"):
        assert int(root.get(attr)) == sum(int(s.get(attr)) for s in root.iter("testsuite"))

    expected_tag = {"fail": "failure", "error": "error", "crash": "error", "timeout": "error",
                    "rejects": "skipped", "skip": "skipped", "pass": None, "erratum": None}
    for suite in root.iter("testsuite"):
        runner = suite.get("name").removeprefix("poolcheck.")
        for tc in suite.findall("testcase"):
            case = next(c for c in result.cases if c.case_id == tc.get("name"))
            check = next((k for k in case.checks if k.runner == runner), None)
            verdict = check.verdict if check is not None else case.verdict
            outcome = [c for c in tc if c.tag in ("failure", "error", "skipped")]
            tag = expected_tag[verdict]
            assert [c.tag for c in outcome] == ([tag] if tag else []), (tc.get("name"), runner, verdict)
            if tag in ("failure", "error"):
                assert outcome[0].get("type") == verdict
                assert outcome[0].get("message")
            assert tc.get("classname").startswith(f"poolcheck.{runner}.")
    # Differing positions and the replay command are in the failure text.
    fail = next(tc for tc in root.iter("testcase") if tc.get("name") == "max2d-ceil-peer-fail" and tc.find("failure") is not None)
    body = fail.find("failure").text
    assert "(0, 0, 2, 2)" in body and "(0, 1, 0, 1)" in body
    assert "replay: poolcheck run" in body and DIAGNOSIS in body
    erratum = next(tc for tc in root.iter("testcase") if tc.get("name") == "avg1d-erratum" and tc.find("system-out") is not None)
    assert "the last value is 3" in erratum.find("system-out").text


def test_junit_escapes_and_drops_invalid_characters() -> None:
    r = RunResult("cmd <&>", [CaseResult("a<b>&\"c\"", "fail", source="x.yaml:3", checks=[
        Check("numpy", "engine", "fail", "bad \x00\x07 value </failure> & more")])])
    root = ET.fromstring(to_junit(r).encode("utf-8"))
    _validate_junit(root)
    tc = next(root.iter("testcase"))
    assert tc.get("name") == 'a<b>&"c"'
    # Control characters are shown escaped (XML cannot carry them; a terminal would act on them).
    assert tc.find("failure").get("message") == "bad \\x00\\x07 value </failure> & more"


# --------------------------------------------------------------------------- Markdown


def test_markdown_counts_table_and_details(result: RunResult) -> None:
    md = to_markdown(result)
    counts = result.counts()
    first = md.splitlines()[0]
    for v in VERDICTS:
        if counts[v]:
            assert f"{counts[v]} {v}" in first
    assert f"{len(result.cases)} case(s)" in first
    # Runner table: one row per runner with its verdict counts.
    header = next(line for line in md.splitlines() if line.startswith("| runner |"))
    cols = [c.strip() for c in header.strip("|").split("|")][1:]
    for runner in ("numpy", PEER):
        row = next(line for line in md.splitlines() if line.startswith(f"| {runner} |"))
        cells = [int(c) for c in row.strip("|").split("|")[1:]]
        want = [sum(1 for c in result.cases for k in c.checks if k.runner == runner and k.verdict == v) for v in cols]
        assert cells == want
    # Every non-passing case is listed in the table; the passing one is not.
    table_ids = re.findall(r"^\| ([\w.-]+) \| ", md, flags=re.M)
    not_passing = [c.case_id for c in result.cases if c.verdict not in ("pass", "skip")]
    assert set(not_passing) <= set(table_ids)
    assert "max2d-pass" not in table_ids
    # Collapsed details with positions, the diagnosis and the erratum; special characters escaped.
    assert md.count("<details>") == md.count("</details>") == len(not_passing)
    assert "| values | (0, 0, 2, 2) |" in md and "(0, 1, 0, 1)" in md
    assert DIAGNOSIS in md and "the last value is 3" in md
    errata = md.split("### Errata in the documents (1)", 1)[1].split("###", 1)[0]
    assert re.search(r"^\| avg1d-erratum \| .*sample_cases.yaml:\d+ \| the last value is 3 \|", errata, re.M)
    assert "AvgPool exclude_pad &lt;1-D&gt; \\| erratum" in md


def test_markdown_stays_short_for_big_results() -> None:
    cases = [CaseResult(f"case-{i:03d}", "fail", op="MaxPool-8", checks=[
        Check("numpy", "engine", "fail", "x" * 400, [Diff("values", [0, 0, j], 1.0, 2.0) for j in range(16)], 40)])
        for i in range(300)]
    r = RunResult("cmd", cases)
    md = to_markdown(r, max_chars=20_000)
    assert len(md) <= 20_000
    assert "300 fail" in md.splitlines()[0]
    assert "more case(s) not shown" in md
    assert "case-000" in md


def test_markdown_when_everything_passes() -> None:
    md = to_markdown(RunResult("cmd", [CaseResult("a", "pass", checks=[Check("numpy", "engine", "pass")])]))
    assert "Every case passed." in md and "<details>" not in md


# --------------------------------------------------------------------------- writers


def test_write_reports_writes_every_format(result: RunResult, tmp_path: Path) -> None:
    out = tmp_path / "reports" / "nested"
    paths = writers.write_reports(result, out)
    assert [p.name for p in paths] == ["result.json", "junit.xml", "summary.md", "report.html"]
    assert (out / "result.json").read_text() == to_json(result)
    assert (out / "junit.xml").read_text() == to_junit(result)
    assert (out / "summary.md").read_text() == to_markdown(result)
    assert (out / "report.html").read_text() == to_html(result)
    umask = os.umask(0o022)
    os.umask(umask)
    assert all((p.stat().st_mode & 0o777) == (0o666 & ~umask) for p in paths)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in paths)  # no temp files left


def test_failed_write_leaves_the_old_report_intact(result: RunResult, tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "reports"
    target.mkdir()
    old = {name: f"old {name}\n" for name in writers.REPORT_FILES}
    for name, text in old.items():
        (target / name).write_text(text)

    # 1. The process is interrupted while the bytes are being flushed to disk.
    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(writers.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        writers.write_reports(result, target)
    monkeypatch.undo()
    assert {p.name: p.read_text() for p in target.iterdir()} == old
    assert [p.name for p in tmp_path.iterdir()] == ["reports"]  # no staging folder left beside it

    # 2. The swap fails (disk full, permissions): a clear error, old files intact, nothing left over.
    def no_rename(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writers.os, "rename", no_rename)
    monkeypatch.setattr(files, "_exchange", lambda a, b: False)
    with pytest.raises(writers.ReportWriteError, match="No space left on device"):
        writers.write_reports(result, target)
    monkeypatch.undo()
    assert {p.name: p.read_text() for p in target.iterdir()} == old
    assert [p.name for p in tmp_path.iterdir()] == ["reports"]
    tmp_path = target

    # 3. A renderer fails: nothing is written at all (everything is rendered before writing).
    def broken(_: RunResult) -> str:
        raise RuntimeError("renderer bug")

    monkeypatch.setitem(writers.REPORT_FILES, "report.html", broken)
    with pytest.raises(RuntimeError):
        writers.write_reports(result, tmp_path)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == old


def test_write_reports_into_a_file_is_an_error(result: RunResult, tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(writers.ReportWriteError, match="not a folder"):
        writers.write_reports(result, f)


def test_every_report_names_the_machine() -> None:
    """Issue 13: the machine fingerprint is in every report format, not only in the JSON."""
    from poolcheck.fingerprint import machine_fingerprint
    from poolcheck.report.jsonfmt import to_json
    from poolcheck.report.junit import to_junit
    from poolcheck.report.markdown import to_markdown
    from poolcheck.results import CaseResult, Check, RunResult, machine_label

    fp = machine_fingerprint().to_dict()
    result = RunResult(command="poolcheck run x", extra={"fingerprint": fp},
                       cases=[CaseResult("c", "pass", checks=[Check("numpy", "engine", "pass")])])
    label = machine_label(result)
    assert label and fp["host"] in label
    assert label in to_markdown(result)
    assert fp["host"] in to_junit(result)
    assert fp["host"] in to_json(result)


def test_markdown_has_a_conformance_matrix_by_case_group() -> None:
    """Issue 11: every runner x every case group (the folder of the case file)."""
    from poolcheck.report.markdown import to_markdown
    from poolcheck.results import CaseResult, Check, RunResult

    def case(cid: str, folder: str, peer_verdict: str) -> CaseResult:
        return CaseResult(cid, peer_verdict, source=f"cases/{folder}/x.yaml:3",
                          checks=[Check("numpy", "engine", "pass"), Check("tract", "peer", peer_verdict)])

    result = RunResult(command="poolcheck run cases", cases=[
        case("a", "seeds", "pass"), case("b", "seeds", "fail"), case("c", "known", "fail"), case("d", "known", "skip")])
    md = to_markdown(result)
    assert "Conformance matrix" in md
    assert "| numpy | 2 / 2 | 2 / 2 |" in md.replace("| known | seeds |", "")
    assert "| tract | 0 / 1 | 1 / 2 |" in md
