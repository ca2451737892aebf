"""`poolcheck report`, `poolcheck explain` and `poolcheck run --report-dir` (also after Ctrl-C)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from report_sample import sample_case_file, sample_result
from support import SCHEMA_PATH
from typer.testing import CliRunner

import poolcheck.runner as run_module
from poolcheck.cli import app
from poolcheck.report.jsonfmt import load_result, to_json
from poolcheck.results import RunResult

runner = CliRunner()


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunResult, Path]:
    d = tmp_path_factory.mktemp("saved")
    result = sample_result(d)
    path = d / "result.json"
    path.write_text(to_json(result))
    return result, path


@pytest.fixture(scope="module")
def case_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_case_file(tmp_path_factory.mktemp("cases"))


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# --------------------------------------------------------------------------- report


@pytest.mark.parametrize("fmt", ["json", "junit", "md", "html"])
def test_report_renders_a_saved_result(saved, fmt: str, tmp_path: Path) -> None:
    result, path = saved
    out = tmp_path / f"out.{fmt}"
    r = runner.invoke(app, ["report", str(path), "--format", fmt, "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    stdout = runner.invoke(app, ["report", str(path), "--format", fmt])
    assert stdout.exit_code == 0 and stdout.stdout == text
    if fmt == "json":
        assert json.loads(text)["counts"] == result.counts()
    elif fmt == "junit":
        assert int(ET.fromstring(text).get("tests")) == sum(max(1, len(c.checks)) for c in result.cases)
    elif fmt == "md":
        assert text.startswith(f"## poolcheck run: {len(result.cases)} case(s)")
    else:
        assert text.startswith("<!DOCTYPE html>") and 'id="poolcheck-result"' in text


def test_report_console_view(saved) -> None:
    result, path = saved
    r = runner.invoke(app, ["report", str(path)])
    assert r.exit_code == 0
    out = _plain(r.stdout)
    for case in result.cases:
        assert case.case_id in out


@pytest.mark.parametrize("content, message", [
    (None, "cannot read"),
    ("{oops", "not JSON"),
    ('{"schema": "poolcheck.case/1"}', "not a poolcheck.result/2 (or poolcheck.result/1) document"),
    ('{"schema": "poolcheck.result/1", "command": "x", "cases": [{"case_id": 3, "verdict": "pass"}]}', "case_id"),
])
def test_report_bad_file_is_a_one_line_error(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    r = runner.invoke(app, ["report", str(path), "--format", "html"])
    assert r.exit_code == 2
    err = _plain(r.stderr).strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_report_unknown_format(saved) -> None:
    r = runner.invoke(app, ["report", str(saved[1]), "--format", "pdf"])
    assert r.exit_code == 2 and "--format" in _plain(r.stderr)


# --------------------------------------------------------------------------- explain


def test_explain_max_element_window_values_and_argmax(case_file: Path) -> None:
    r = runner.invoke(app, ["explain", f"{case_file}::max2d-ceil-peer-fail", "--at", "0,1,2,2"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    out = _plain(r.stdout)
    # Output (2, 2) of kernel 3, stride 2, pads 1/1, ceil, on a 4x4 input: taps rows/cols 3..5,
    # where 3 is input, 4 is pads_end and 5 lies past it.
    assert "9 taps = 1 input + 3 padding + 5 past pads_end" in out
    assert "pad" in out and "×" in out
    from poolcheck.cases import load_file

    case = next(c for c in load_file(case_file) if c.id == "max2d-ceil-peer-fail")
    v = case.input[0, 1, 3, 3]
    assert re.search(rf"numpy\s+│\s+engine\s+│\s+{v:g}\s+│\s+31\s+│\s+\(3, 3\) from its index", out), out
    assert re.search(rf"document\s+│\s+document\s+│\s+{v:g}", out)


def test_explain_avg_implied_divisor_and_erratum(case_file: Path) -> None:
    r = runner.invoke(app, ["explain", str(case_file), "-k", "avg1d-erratum", "--at", "0,0,2"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    out = _plain(r.stdout)
    assert "reference divisor (exclude_pad) = 2; sum of input taps = 5" in out
    # The document's 3 implies a divisor of 5/3; the corrected 2.5 and the engine imply 2.
    assert re.search(r"document\s+│\s+document\s+│\s+3\s+│\s+1\.66667", out)
    assert re.search(r"erratum \(corrected\)\s+│\s+erratum\s+│\s+2\.5\s+│\s+2\s", out)
    assert re.search(r"numpy\s+│\s+engine\s+│\s+2\.5\s+│\s+2\s", out)


def test_explain_defaults_to_the_first_disagreement(case_file: Path) -> None:
    r = runner.invoke(app, ["explain", f"{case_file}::avg2d-doc-fail"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "output element (0, 0, 0, 0)" in _plain(r.stdout)
    r = runner.invoke(app, ["explain", f"{case_file}::max3d"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    out = _plain(r.stdout)
    assert "output element (0, 0, 0, 0, 0)" in out
    assert "axis 0 at 0 (input)" in out and "axis 0 at 1 (input)" in out


def test_explain_with_a_plugin_peer(case_file: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "halfpeer.py"
    plugin.write_text(
        "import poolcheck\n"
        "PEER_NAME = 'half'\n"
        "def avg_pool(x, kernel, strides, pads_begin, pads_end, exclude_pad, rounding_type, auto_pad):\n"
        "    return poolcheck.avg_pool(x, kernel, strides, pads_begin, pads_end, exclude_pad, rounding_type,"
        " auto_pad) / 2\n")
    r = runner.invoke(app, ["explain", f"{case_file}::avg1d-erratum", "--at", "0,0,2", "--peers", str(plugin)],
                      env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert re.search(r"half\s+│\s+peer\s+│\s+1\.25\s+│\s+4\s", _plain(r.stdout)), r.stdout


@pytest.mark.parametrize("args, message", [
    (["--at", "0,0,9,9"], "at: coordinate 2 is 9"),
    (["--at", "0,0,1"], "at: expected 4 coordinates"),
    (["--at", "a,b"], "at: expected comma-separated integers"),
])
def test_explain_bad_position(case_file: Path, args: list[str], message: str) -> None:
    r = runner.invoke(app, ["explain", f"{case_file}::max2d-pass", *args])
    assert r.exit_code == 2
    assert message in _plain(r.stderr) and "Traceback" not in r.output


def test_explain_bad_case_reference(case_file: Path, tmp_path: Path) -> None:
    for args, message in (
        ([str(case_file)], "holds 6 cases"),
        ([str(case_file), "-k", "nope"], "no case in"),
        ([str(case_file), "-k", "max"], "matches 3 cases"),
        ([f"{tmp_path}/missing.yaml::x"], "no such case file"),
    ):
        r = runner.invoke(app, ["explain", *args])
        assert r.exit_code == 2, (args, r.output)
        assert message in _plain(r.stderr), (args, r.stderr)


# --------------------------------------------------------------------------- run --report-dir


def test_run_report_dir_writes_every_format(case_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    r = runner.invoke(app, ["run", str(case_file), "-q", "--report-dir", str(out)])
    assert r.exit_code == 1  # avg2d-doc-fail fails against its document
    saved = load_result(out / "result.json")
    assert [c.case_id for c in saved.cases] == [
        "max2d-pass", "max2d-ceil-peer-fail", "avg1d-erratum", "avg2d-doc-fail", "max3d-peer-crash", "onnx-avg-peer-rejects"]
    assert saved.counts()["fail"] == 1 and not saved.interrupted
    assert {p.name for p in out.iterdir()} == {"result.json", "junit.xml", "summary.md", "report.html"}


def test_ctrl_c_during_run_still_writes_reports(case_file: Path, tmp_path: Path, monkeypatch) -> None:
    real = run_module.run_case
    calls = []

    def interrupt_on_third(case, engines, *args, **kwargs):
        calls.append(case.id)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(case, engines, *args, **kwargs)

    monkeypatch.setattr(run_module, "run_case", interrupt_on_third)
    out = tmp_path / "reports"
    r = runner.invoke(app, ["run", str(case_file), "-q", "--report-dir", str(out)])
    assert r.exit_code == 130  # CLI decision: Ctrl-C exits 130 after writing what was found
    saved = load_result(out / "result.json")
    assert saved.interrupted is True
    assert [c.case_id for c in saved.cases] == calls[:2]
    assert "Interrupted" in (out / "summary.md").read_text()
    assert '"interrupted":true' in (out / "report.html").read_text()
    root = ET.parse(out / "junit.xml").getroot()
    assert int(root.get("tests")) == sum(len(c.checks) for c in saved.cases)


def test_explain_matches_the_engine_output(case_file: Path) -> None:
    """The value explain reports for the reference engine is the engine's output at that element."""
    from poolcheck.api import run_spec
    from poolcheck.cases import load_file
    from poolcheck.explain import explain_element

    case = next(c for c in load_file(case_file) if c.id == "max3d-peer-crash")
    values, indices = run_spec(case.spec, case.input)
    rng = np.random.default_rng(0)
    for _ in range(5):
        pos = [int(rng.integers(0, n)) for n in values.shape]
        ex = explain_element(case, pos, ["numpy"])
        rv = next(r for r in ex.runners if r.name == "numpy")
        assert rv.value == values[tuple(pos)] and rv.index == indices[tuple(pos)]
        chosen = [c for c in ex.cells if c.chosen]
        assert len(chosen) == 1 and chosen[0].coords == rv.argmax
        assert case.input[(pos[0], pos[1], *rv.argmax)] == rv.value


def test_run_json_output_follows_the_documented_schema(case_file: Path) -> None:
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    r = runner.invoke(app, ["run", str(case_file), "--json"])
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    jsonschema.Draft202012Validator(schema).validate(data)
    assert data["counts"]["fail"] == 1 and len(data["cases"]) == 6
    assert all(c["geometry"] and c["input"] for c in data["cases"])
