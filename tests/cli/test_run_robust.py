"""`poolcheck run` as a hostile user and a plugin author would use it (issues 8 and 9): every
failure inside a case is that case's `error` verdict (exit 2) and the run goes on; the output
contract (dtypes, shape) is checked for engines and peers; severities and --fail-on; replays
that reproduce through a real subprocess; the bundled corpus; --version, help and 80 columns;
report sets written whole to a folder checked before any work.

The command runs in-process (``invoke``) where that checks the same; the real command in a
subprocess (``cli``, ~1.6 s CPU of start-up each) where the process is under test: replays pasted
elsewhere, --version and help, the 80-column tables, a deeply nested file (a fresh interpreter's
stack), a peer that prints to the real stdout, a plugin that exits while loading, and a usage error."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import ROOT, cli, invoke

from poolcheck.cases import load_paths
from poolcheck.cases.load import parse_yaml
from poolcheck.results import Severity

GOOD = """\
  - id: ok-case
    op: MaxPool-14
    attributes: {kernel: [2], strides: [1]}
    input: [[[1, 2, 3]]]
    expected: {values: [[[2, 3]]], indices: [[[1, 2]]]}
"""

#: A case the loader accepts but the engines cannot compute (a stride past every integer type).
ENGINE_ERROR = f"""\
  - id: engine-error
    op: MaxPool-14
    attributes: {{kernel: [2, 2], strides: [1, {'9' * 60}]}}
    input: [[[[1, 2], [3, 4]]]]
    expected: {{values: [[[[4]]]]}}
"""

#: The document says 9 where the engines compute 3: an engine failure (a violation).
ENGINE_FAIL = """\
  - id: engine-fail
    op: MaxPool-14
    attributes: {kernel: [2], strides: [1], index_element_type: i32}
    input: [[[1, 2, 3]]]
    expected: {values: [[[2, 9]]]}
"""


def case_file(tmp_path: Path, *bodies: str, name: str = "cases.yaml") -> Path:
    path = tmp_path / name
    path.write_text("schema: poolcheck.case/1\ncases:\n" + "".join(bodies), encoding="utf-8")
    return path


def verdicts(proc: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return {c["case_id"]: c["verdict"] for c in json.loads(proc.stdout)["cases"]}


# --------------------------------------------------------------------------- error verdicts


@pytest.mark.parametrize("digits", [60, 400])
def test_engine_error_is_a_case_error_with_location_and_exit_2(tmp_path: Path, digits: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Caught by the engines (or, with attribute limits, by the loader): either way an error verdict."""
    case_file(tmp_path, GOOD, ENGINE_ERROR.replace("9" * 60, "9" * digits))
    proc = invoke("run", "cases.yaml", "--json", cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    by_id = {c["case_id"]: c for c in doc["cases"]}
    assert by_id["ok-case"]["verdict"] == "pass"  # the run went on
    bad = by_id["engine-error"]
    assert bad["verdict"] == "error"
    assert re.match(r".*cases\.yaml:(8|10): ", bad["message"]), bad["message"]  # file and line (case or attribute)
    assert all(k["verdict"] == "error" and k["message"] for k in bad["checks"])


def test_a_bad_file_never_loses_the_other_files(tmp_path: Path) -> None:
    case_file(tmp_path, GOOD, name="a.yaml")
    (tmp_path / "b.yaml").write_text("cases: [" * 3000, encoding="utf-8")  # deep nesting, unterminated
    (tmp_path / "c.yaml").write_text("schema: poolcheck.case/1\ncases:\n  - id: c\n    op: [x]\n", encoding="utf-8")
    proc = cli("run", ".", "--json", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    got = verdicts(proc)
    assert got["ok-case"] == "pass"
    assert sum(v == "error" for v in got.values()) == 2
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 2 and any("b.yaml:1" in e for e in errors) and any("c.yaml:4: case 'c': field 'op'" in e
                                                                             for e in errors), errors


def test_yaml_lines_survive_the_single_parse() -> None:
    text = "schema: poolcheck.case/1\ncases:\n" + "".join(
        f"  - id: c{i}\n    op: MaxPool-14\n    attributes:\n      kernel: [1]\n      strides: [1]\n"
        f"    input: [[[{i}]]]\n    expected: {{values: [[[{i}]]]}}\n" for i in range(300))
    data, lines = parse_yaml(text)
    assert len(data["cases"]) == 300
    for i in (0, 1, 150, 299):
        first = 3 + 7 * i
        assert lines[("cases", i)] == first
        assert lines[("cases", i, "op")] == first + 1
        assert lines[("cases", i, "attributes", "strides")] == first + 4
        assert lines[("cases", i, "expected")] == first + 6


def test_large_file_loads_with_the_right_lines(tmp_path: Path) -> None:
    """A 2k-case file (the 10k timing is measured by hand, never asserted) keeps its lines."""
    path = case_file(tmp_path, *(GOOD.replace("ok-case", f"case-{i}") for i in range(2000)))
    start = time.perf_counter()
    cases, errors = load_paths([path])
    elapsed = time.perf_counter() - start
    assert not errors and len(cases) == 2000
    assert [c.line for c in cases[:3]] == [3, 8, 13] and cases[-1].line == 3 + 5 * 1999
    assert cases[5].field_lines["expected"] == 3 + 25 + 4
    print(f"2000 cases loaded in {elapsed:.2f} s")


# --------------------------------------------------------------------------- output contract


PLUGIN_HEAD = """\
import numpy as np
import poolcheck

PEER_NAME = "{name}"
__version__ = "1.0"
"""

PEERS = {
    # Indices as int64 whatever index_element_type says (issue 9: never reported before).
    "wide_indices": PLUGIN_HEAD + """
def max_pool(x, kernel, strides, pads_begin=None, pads_end=None, dilations=None, rounding_type="floor",
             auto_pad="explicit", axis=0, index_element_type="i64"):
    v, i = poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad,
                              axis, index_element_type)
    return v, i.astype(np.int64)
""",
    # Complex values with the right real part: must not pass by dropping the imaginary part.
    "complex_values": PLUGIN_HEAD + """
def max_pool(x, kernel, strides, pads_begin=None, pads_end=None, dilations=None, rounding_type="floor",
             auto_pad="explicit", axis=0, index_element_type="i64"):
    v, i = poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad,
                              axis, index_element_type)
    return v.astype(np.complex64) + 1j, i
""",
    # Strings: a numeric comparison would raise.
    "string_values": PLUGIN_HEAD + """
def max_pool(x, kernel, strides, pads_begin=None, pads_end=None, dilations=None, rounding_type="floor",
             auto_pad="explicit", axis=0, index_element_type="i64"):
    v, i = poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad,
                              axis, index_element_type)
    return v.astype(str), i
""",
    # A structured (record) array.
    "record_values": PLUGIN_HEAD + """
def max_pool(x, kernel, strides, pads_begin=None, pads_end=None, dilations=None, rounding_type="floor",
             auto_pad="explicit", axis=0, index_element_type="i64"):
    v, i = poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad,
                              axis, index_element_type)
    out = np.zeros(v.shape, dtype=[("a", "<f4"), ("b", "<f4")])
    out["a"] = v
    return out, i
""",
    # A one-line bug: the last output element is off by one.
    "off_by_one": PLUGIN_HEAD + """
def max_pool(x, kernel, strides, pads_begin=None, pads_end=None, dilations=None, rounding_type="floor",
             auto_pad="explicit", axis=0, index_element_type="i64"):
    v, i = poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad,
                              axis, index_element_type)
    v = v.copy()
    v.reshape(-1)[-1] += 1
    return v, i
""",
}

I32_CASE = """\
  - id: i32-case
    op: MaxPool-14
    attributes: {kernel: [2], strides: [1], index_element_type: i32}
    input: [[[1, 5, 3]]]
    expected: {values: [[[5, 5]]], indices: [[[1, 1]]]}
"""


def write_peer(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(PEERS[name].format(name=name), encoding="utf-8")
    return path


@pytest.mark.parametrize(("peer", "message"), [
    ("wide_indices", "dtype: indices are int64, index_element_type i32 requires int32"),
    ("complex_values", "complex64, not a real numeric dtype"),
    ("string_values", "not a real numeric dtype"),
    ("record_values", "structured array, not a real numeric dtype"),
])
def test_peer_output_contract(tmp_path: Path, peer: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    write_peer(tmp_path, peer)
    case_file(tmp_path, I32_CASE)
    proc = invoke("run", "cases.yaml", "--json", "--peers", f"{peer}.py", cwd=tmp_path, monkeypatch=monkeypatch)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1, proc.stdout + proc.stderr
    case = json.loads(proc.stdout)["cases"][0]
    check = next(k for k in case["checks"] if k["runner"] == peer)
    assert check["verdict"] == "fail"
    assert message in check["message"], check["message"]
    assert check["severity"] == Severity.VIOLATION.value
    assert all(k["verdict"] == "pass" for k in case["checks"] if k["kind"] == "engine")


def test_engine_output_contract_names_the_dtype() -> None:
    """The runner's own check, independent of any peer layer."""
    from poolcheck.runner import output_contract

    cases, errors = load_paths([ROOT / "cases" / "edge"])
    assert not errors
    case = next(c for c in cases if c.spec.op == "max")
    values, indices = poolcheck_run(case)
    assert output_contract(case, values, indices, peer=False) == ""
    wrong = {np.dtype(np.int32): np.int64, np.dtype(np.int64): np.int32}[indices.dtype]
    assert output_contract(case, values, indices.astype(wrong), peer=False).startswith(
        f"dtype: indices are {np.dtype(wrong).name}")
    assert "values are float64" in output_contract(case, values.astype(np.float64), indices, peer=False) or \
        case.dtype == np.float64
    assert output_contract(case, values[..., :-1], indices[..., :-1], peer=False).startswith("shape: values are")
    assert "complex" in output_contract(case, values.astype(np.complex128), indices, peer=True)


def poolcheck_run(case: Any) -> tuple[np.ndarray, np.ndarray]:
    from poolcheck.api import run_spec

    v, i = run_spec(case.spec, case.input)
    assert i is not None
    return v, i


# --------------------------------------------------------------------------- severity and --fail-on


def test_fail_on_chooses_the_exit_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case_file(tmp_path, ENGINE_FAIL)
    proc = invoke("run", "cases.yaml", "--json", cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 1
    check = json.loads(proc.stdout)["cases"][0]["checks"][0]
    assert check["verdict"] == "fail" and check["severity"] == "violation"
    assert invoke("run", "cases.yaml", "-q", "--fail-on", "erratum").returncode == 0
    assert invoke("run", "cases.yaml", "-q", "--fail-on", "all").returncode == 1
    bad = cli("run", "cases.yaml", "--fail-on", "fatal", cwd=tmp_path)  # the real command's usage error
    assert bad.returncode == 2 and bad.stderr.startswith("error: --fail-on:") and len(bad.stderr.splitlines()) == 1


def test_erratum_cases_carry_the_erratum_severity_in_every_format(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "reports"
    proc = invoke("run", str(ROOT / "cases" / "seeds"), "-q", "--report-dir", str(out), cwd=tmp_path,
                  monkeypatch=monkeypatch)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # errata are not violations
    doc = json.loads((out / "result.json").read_text())
    errata = [k for c in doc["cases"] for k in c["checks"] if k["verdict"] == "erratum"]
    assert errata and all(k["severity"] == "erratum" for k in errata)
    assert "erratum" in (out / "summary.md").read_text().split("Severity of the non-passing checks:", 1)[1]
    assert '"severity":"erratum"' in (out / "report.html").read_text()
    assert re.search(r"severity: \d+ erratum", proc.stdout), proc.stdout


def test_peer_severity_unspecified_under_an_open_policy() -> None:
    """A peer that ignores NaN made a choice the spec leaves open: unspecified, not a violation."""
    from poolcheck.api import run_spec
    from poolcheck.peers.base import PeerOutput, PeerResult
    from poolcheck.runner import check_peer_output
    from poolcheck.spec.policy import Policy

    cases, _ = load_paths([ROOT / "cases" / "edge"])
    case = next(c for c in cases if c.spec.op == "max" and c.input.dtype.kind == "f" and np.isnan(c.input).any())
    v, i = run_spec(case.spec, case.input, policy=Policy(nan="ignore"))
    ref, _ = run_spec(case.spec, case.input)
    assert not np.array_equal(v, ref, equal_nan=True)
    check = check_peer_output(case, "p", None, PeerResult("ok", PeerOutput(v, i)))
    assert check.verdict == "fail" and check.severity == "unspecified", check
    assert "nan=ignore" in (check.diagnosis or "")
    bumped = ref.copy()
    bumped.reshape(-1)[0] = 1234
    assert check_peer_output(case, "p", None, PeerResult("ok", PeerOutput(bumped, i))).severity == "violation"
    rejected = check_peer_output(case, "p", None, PeerResult("rejects", None, "no"))
    assert rejected.verdict == "rejects" and rejected.severity == "limitation"


# --------------------------------------------------------------------------- replays


def _replay_line(proc: subprocess.CompletedProcess[str], case_id: str) -> list[str]:
    doc = json.loads(proc.stdout)
    replay = next(c["replay"] for c in doc["cases"] if c["case_id"] == case_id)
    args = shlex.split(replay)
    assert args[:2] == ["poolcheck", "run"]
    return args[1:]


def test_replay_of_an_engine_failure_reproduces(tmp_path: Path) -> None:
    case_file(tmp_path, GOOD, ENGINE_FAIL)
    proc = cli("run", "cases.yaml", "--json", "--engine", "numpy", cwd=tmp_path)
    assert verdicts(proc)["engine-fail"] == "fail"
    args = _replay_line(proc, "engine-fail")
    assert "--engine" in args
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = cli(*args, "--json", cwd=elsewhere)  # pasted in another folder
    assert again.returncode == proc.returncode == 1
    assert verdicts(again) == {"engine-fail": "fail"}


def test_replay_of_a_peer_failure_reproduces(tmp_path: Path) -> None:
    write_peer(tmp_path, "off_by_one")
    case_file(tmp_path, I32_CASE)
    proc = cli("run", "cases.yaml", "--json", "--peers", "off_by_one.py", "--peer-timeout", "30s", cwd=tmp_path)
    assert verdicts(proc) == {"i32-case": "fail"}, proc.stderr
    args = _replay_line(proc, "i32-case")
    assert "--peers" in args and "--peer-timeout" in args
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = cli(*args, "--json", cwd=elsewhere)
    assert again.returncode == 1, again.stderr
    case = json.loads(again.stdout)["cases"][0]
    assert case["verdict"] == "fail"
    assert [k["verdict"] for k in case["checks"] if k["runner"] == "off_by_one"] == ["fail"]


# --------------------------------------------------------------------------- the CLI


def test_run_without_a_path_runs_the_bundled_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc = invoke("run", "--json", "--engine", "numpy", cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["cases"]) > 100
    assert {"ov-maxpool8-ex1", "ov-shape-rules-ex1"} <= {c["case_id"] for c in doc["cases"]}
    assert list(tmp_path.iterdir()) == []  # nothing written unasked


def test_version_and_readable_help(tmp_path: Path) -> None:
    import poolcheck

    proc = cli("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == f"poolcheck {poolcheck.__version__}"
    help_text = cli("run", "--help", cwd=tmp_path, columns=100).stdout
    assert "<list[Path]>" not in help_text and "<bool>" not in help_text and "<" not in help_text
    assert "numpy, c, or all" in help_text
    bad = cli("run", "--engine", "gpu", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: --engine: expected numpy, c or all, got 'gpu'"


@pytest.mark.parametrize("columns", [80, 100])
def test_tables_readable_at_80_columns(tmp_path: Path, columns: int) -> None:
    long_ids = [GOOD.replace("ok-case", f"a-rather-long-case-identifier-number-{i}-with-words") for i in range(3)]
    case_file(tmp_path, *long_ids, ENGINE_FAIL)
    proc = cli("run", "cases.yaml", cwd=tmp_path, columns=columns)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    # Every line fits, except the replay commands: one unbroken line each, for copy and paste.
    assert all(len(ln) <= columns for ln in lines if not ln.startswith("replay: ")), max(lines, key=len)
    assert any(ln.startswith("replay: poolcheck run ") and ln.endswith("::engine-fail") for ln in lines)
    for i in range(3):
        assert f"a-rather-long-case-identifier-number-{i}-with-words" in proc.stdout  # never broken
    header = next(ln for ln in lines if "case" in ln.split())
    known = {"case", "op", "op,", "result", "numpy", "c", "source", "result,", "checks"}
    assert set(header.split()) <= known, header  # headers whole, never split mid-word


def test_unwritable_report_dir_fails_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case_file(tmp_path, GOOD)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = invoke("run", "cases.yaml", "--report-dir", "file/reports", cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("error: file/reports")
    assert proc.stdout == ""  # no table: nothing ran
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        proc = invoke("run", "cases.yaml", "--report-dir", "locked/out")
        assert proc.returncode == 2 and proc.stdout == ""


def test_report_dir_is_replaced_whole_and_announced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case_file(tmp_path, GOOD)
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_text("old")
    proc = invoke("run", "cases.yaml", "--report-dir", "out", cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 0
    assert "reports written to out" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == ["junit.xml", "report.html", "result.json", "summary.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.yaml", "out"]  # no staging folder left
    assert json.loads((out / "result.json").read_text())["cases"][0]["case_id"] == "ok-case"
    proc = invoke("run", "cases.yaml", "--json", "--report-dir", "out")
    assert "reports written to out" in proc.stderr and json.loads(proc.stdout)  # stdout stays JSON
    # A folder holding other files is updated file by file: nothing else moves.
    (out / "mine.txt").write_text("keep")
    assert invoke("run", "cases.yaml", "-q", "--report-dir", "out").returncode == 0
    assert (out / "mine.txt").read_text() == "keep"


def test_a_printing_peer_never_corrupts_json(tmp_path: Path) -> None:
    (tmp_path / "loud.py").write_text(PLUGIN_HEAD.format(name="loud") + """
print("hello from import")

def max_pool(x, kernel, strides, pads_begin=None, pads_end=None, dilations=None, rounding_type="floor",
             auto_pad="explicit", axis=0, index_element_type="i64"):
    print("hello from max_pool")
    return poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad,
                              axis, index_element_type)
""", encoding="utf-8")
    case_file(tmp_path, I32_CASE)
    proc = cli("run", "cases.yaml", "--json", "--peers", "loud.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert verdicts(proc) == {"i32-case": "pass"}  # stdout is the JSON document alone
    assert "hello from import" in proc.stderr


def test_a_plugin_that_exits_while_loading_is_that_peers_crash(tmp_path: Path) -> None:
    """Loading a plugin is isolated like calling it: sys.exit(0) at import is the peer's crash
    (the engines still judge every case), never the end of the run with exit 0."""
    (tmp_path / "quitter.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    case_file(tmp_path, GOOD)
    proc = cli("run", "cases.yaml", "--peers", "quitter.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "crash" in proc.stdout and "sys.exit(0)" in proc.stdout


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_bad_peer_timeout_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    case_file(tmp_path, GOOD)
    proc = invoke("run", "cases.yaml", f"--peer-timeout={value}", cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: --peer-timeout:") and len(proc.stderr.strip().splitlines()) == 1


def test_peers_get_read_only_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "scribbler.py").write_text(PLUGIN_HEAD.format(name="scribbler") + """
def max_pool(x, kernel, strides, pads_begin=None, pads_end=None, dilations=None, rounding_type="floor",
             auto_pad="explicit", axis=0, index_element_type="i64"):
    x[...] = 0
    return poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad,
                              axis, index_element_type)
""", encoding="utf-8")
    case_file(tmp_path, I32_CASE)
    proc = invoke("run", "cases.yaml", "--json", "--peers", "scribbler.py", cwd=tmp_path, monkeypatch=monkeypatch)
    case = json.loads(proc.stdout)["cases"][0]
    assert case["input"] == [[[1, 5, 3]]]  # the input every check and the report see is intact
    check = next(k for k in case["checks"] if k["runner"] == "scribbler")
    assert check["verdict"] in ("fail", "rejects"), check  # its bug shows instead of hiding


def test_a_missing_path_never_loses_the_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case_file(tmp_path, GOOD)
    proc = invoke("run", "missing.yaml", "cases.yaml", "--json", cwd=tmp_path, monkeypatch=monkeypatch)
    assert proc.returncode == 2
    assert verdicts(proc)["ok-case"] == "pass"
    assert "error: missing.yaml: no such file or folder" in proc.stderr


def test_engine_with_wrong_index_dtype_fails_with_its_own_message(tmp_path: Path, monkeypatch) -> None:
    """Through the real `run` command (in process): an engine that returns int64 indices for
    index_element_type i32 is a violation with a dtype message, exit 1."""
    from typer.testing import CliRunner

    import poolcheck.runner as runner_module
    from poolcheck.cli import app

    real = runner_module.run_spec

    def wide(spec, x, **kwargs):
        v, i = real(spec, x, **kwargs)
        return v, None if i is None else i.astype(np.int64)

    monkeypatch.setattr(runner_module, "run_spec", wide)
    path = case_file(tmp_path, I32_CASE)
    result = CliRunner().invoke(app, ["run", str(path), "--engine", "numpy", "--json"])
    assert result.exit_code == 1, result.output
    check = json.loads(result.stdout)["cases"][0]["checks"][0]
    assert check["verdict"] == "fail" and check["severity"] == "violation"
    assert check["message"].startswith("dtype: indices are int64, index_element_type i32 requires int32")


def test_file_id_targets_select_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case_file(tmp_path, GOOD, ENGINE_FAIL, name="a.yaml")
    case_file(tmp_path, GOOD.replace("ok-case", "b-case"), name="b.yaml")
    proc = invoke("run", "a.yaml::ok-case", "b.yaml", "--json", cwd=tmp_path, monkeypatch=monkeypatch)
    assert verdicts(proc) == {"ok-case": "pass", "b-case": "pass"}
    proc = invoke("run", "a.yaml::nope")
    assert proc.returncode == 2 and "a.yaml: case 'nope': no case has this id" in proc.stderr


def test_report_dir_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    from poolcheck.report.writers import write_reports
    from poolcheck.results import RunResult

    real = tmp_path / "real"
    real.mkdir()
    (real / "result.json").write_text("old")
    link = tmp_path / "link"
    link.symlink_to(real)
    write_reports(RunResult(command="x"), link)
    assert link.is_symlink() and json.loads((link / "result.json").read_text())["command"] == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]
