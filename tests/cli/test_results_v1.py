"""The typed result model (poolcheck/results.py) and reading the previous JSON version.

``tests/data/*-v1.json`` were written by poolcheck before version 2 (a real ``poolcheck run
--peers ...`` and a real ``poolcheck fuzz`` with a planted peer, trimmed to a few cases), so the
reader is checked against what version 1 actually looked like.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import DATA, SCHEMA_PATH
from typer.testing import CliRunner

from poolcheck.cli import app
from poolcheck.report.jsonfmt import from_json, load_result, to_json
from poolcheck.results import (
    SCHEMA,
    CheckKind,
    FindingKind,
    FuzzSummary,
    RunResult,
    Severity,
    Signature,
    Verdict,
)

FUZZ_V1 = DATA / "fuzz-result-v1.json"
RUN_V1 = DATA / "run-result-v1.json"
runner = CliRunner()


@given(kind=st.sampled_from(list(FindingKind)), op=st.sampled_from(["max", "avg"]),
       subject=st.text(st.characters(blacklist_characters="|"), max_size=20), detail=st.text(max_size=40))
def test_signature_text_round_trips(kind: FindingKind, op: str, subject: str, detail: str) -> None:
    sig = Signature(kind, op, subject, detail)
    assert Signature.parse(str(sig)) == sig
    assert str(sig).split("|", 3) == [kind.value, op, subject, detail]


@pytest.mark.parametrize("text", ["", "peer|max|x", "nonsense|max|x|y"])
def test_a_malformed_signature_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        Signature.parse(text)


def test_v1_fuzz_result_reads_with_its_summary_moved() -> None:
    raw = json.loads(FUZZ_V1.read_text())
    assert raw["schema"] == "poolcheck.result/1" and "fuzz" not in raw
    result = load_result(FUZZ_V1)
    assert isinstance(result.fuzz, FuzzSummary) and "fuzz" not in result.extra
    assert result.fuzz.new == raw["extra"]["fuzz"]["new"]
    assert result.fuzz.divergent_configurations == raw["extra"]["fuzz"]["divergent_configurations"]
    new = [c for c in result.cases if "new" in c.tags]
    assert [c.signature for c in new] == [Signature.parse(s) for s in result.fuzz.new]
    assert all(isinstance(c.verdict, Verdict) for c in result.cases)
    check = new[0].checks[0]
    assert check.kind is CheckKind.PEER and check.verdict is Verdict.FAIL and check.severity is Severity.VIOLATION
    # written back, it is a valid version 2 document with the summary at the top level
    doc = json.loads(to_json(result))
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(doc)
    assert doc["schema"] == SCHEMA and doc["fuzz"]["new"] == raw["extra"]["fuzz"]["new"]
    again = from_json(json.dumps(doc))
    assert again.fuzz == result.fuzz and again.counts() == result.counts()


def test_report_renders_v1_files(tmp_path: Path) -> None:
    for path in (FUZZ_V1, RUN_V1):
        out = tmp_path / f"{path.stem}.json"
        r = runner.invoke(app, ["report", str(path), "--format", "json", "-o", str(out)])
        assert r.exit_code == 0, r.output
        doc = json.loads(out.read_text())
        assert doc["schema"] == SCHEMA
        assert [c["case_id"] for c in doc["cases"]] == [c["case_id"] for c in json.loads(path.read_text())["cases"]]
        r = runner.invoke(app, ["report", str(path)])
        assert r.exit_code == 0, r.output  # the console view renders
        assert "fail" in r.output


def test_report_merge_reads_v1_and_v2_together(tmp_path: Path) -> None:
    v2 = tmp_path / "fuzz-v2.json"
    v2.write_text(to_json(load_result(FUZZ_V1)))
    out = tmp_path / "merged.json"
    r = runner.invoke(app, ["report", "merge", str(FUZZ_V1), str(v2), str(RUN_V1), "-f", "json", "-o", str(out)])
    assert r.exit_code in (0, 1), r.output
    merged = RunResult.from_dict(json.loads(out.read_text()))
    sig = Signature.parse(json.loads(FUZZ_V1.read_text())["extra"]["fuzz"]["new"][0])
    # the same divergence from a v1 and a v2 file is one case
    assert sum(1 for c in merged.cases if c.signature == sig) == 1


def test_an_unknown_schema_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "v0.json"
    bad.write_text(json.dumps({"schema": "poolcheck.result/0", "command": "x", "cases": []}))
    r = runner.invoke(app, ["report", str(bad)])
    assert r.exit_code == 2 and "poolcheck.result/2" in r.output


def test_a_malformed_fuzz_summary_is_a_clear_error(tmp_path: Path) -> None:
    raw = json.loads(FUZZ_V1.read_text())
    raw["extra"]["fuzz"]["new"] = "not a list"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    r = runner.invoke(app, ["report", str(bad)])
    assert r.exit_code == 2 and "fuzz.new" in r.output
