"""``poolcheck fuzz`` end to end: usage errors exit 2, no new divergence exits 0, a new one exits
1 with a saved case and reports; the known-divergence registry is re-checked (reproduces, or
fixed upstream) and known classes do not count as new."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from support import PLANTED
from typer.testing import CliRunner

from poolcheck.cases import load_file
from poolcheck.cli import app
from poolcheck.cli.common import parse_duration

runner = CliRunner()


def fuzz(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["fuzz", "--no-progress", *args])
    return result.exit_code, " ".join(result.output.split())  # the console wraps at 80 columns


@pytest.mark.parametrize(("args", "needle"), [
    (["--ops", "maxpol"], "--ops"),
    (["--ranks", "3,7"], "ranks"),
    (["--ranks", "x"], "--ranks"),
    (["--dtypes", "float8"], "dtypes"),
    (["--time-budget", "soon"], "--time-budget"),
    (["--peers", "no_such_peer_anywhere"], "no_such_peer_anywhere"),
    (["--oracles", "peers,vibes"], "--oracles"),
    (["--jobs", "0"], "--jobs"),
    (["--ops", "avgpool", "--dtypes", "int8"], "average pooling needs one"),
    (["--dtypes", "bfloat16", "--conventions", "openvino"], "no operator of these ops and conventions"),
])
def test_bad_usage_exits_2_naming_the_option(args: list[str], needle: str, tmp_path: Path) -> None:
    code, out = fuzz(*args, "--max-examples", "1", "--no-bundled-known")
    assert code == 2, out
    assert needle in out
    assert "Traceback" not in out


def test_parse_duration() -> None:
    assert parse_duration("--x", "60s") == 60 and parse_duration("--x", "2m") == 120
    assert parse_duration("--x", "90") == 90
    assert parse_duration("--x", "1.5h") == 5400 and parse_duration("--x", "250ms") == 0.25


def test_engine_only_run_finds_nothing_new(tmp_path: Path) -> None:
    code, out = fuzz("--peers", "none", "--oracles", "engines,metamorphic", "--max-examples", "60", "--seed", "3",
                     "--no-bundled-known", "--save-cases", str(tmp_path / "finds"))
    assert code == 0, out
    assert "0 new divergence(s)" in out
    assert "replay: poolcheck fuzz" in out and "--seed 3" in out
    assert not (tmp_path / "finds").exists()


def test_the_default_batch_follows_the_peers_and_the_replay_line_says_it(tmp_path: Path) -> None:
    """Without --batch a campaign against ONNX Runtime or OpenVINO draws examples of up to 64
    configurations and its replay line says so (pasted where the default differs, it still draws
    the same examples); the engine-only campaign keeps 8 and needs no --batch."""
    common = ["--max-examples", "2", "--seed", "3", "--no-bundled-known", "--save-cases", str(tmp_path / "finds"),
              "--database", str(tmp_path / "db")]
    installed = ["onnxruntime"] + (["openvino"] if importlib.util.find_spec("openvino") else [])
    for peer in installed:  # a session or a compile per model: 64
        code, out = fuzz("--peers", peer, "--no-isolation", "--no-shrink", *common)  # what it finds is not asked
        assert code in (0, 1), out
        assert "--batch 64" in out.split("replay: poolcheck fuzz")[1], peer
    code, out = fuzz("--peers", "none", *common)
    assert code == 0, out
    assert "--batch" not in out.split("replay: poolcheck fuzz")[1]


def test_new_divergence_exits_1_saves_a_case_and_reports(tmp_path: Path) -> None:
    peer = str(PLANTED / "pads_swapped.py")
    finds, report = tmp_path / "finds", tmp_path / "report"
    code, out = fuzz("--peers", peer, "--ops", "maxpool", "--oracles", "peers", "--exit-first", "--max-examples", "2000",
                     "--time-budget", "30s", "--seed", "0", "--no-isolation", "--no-bundled-known",
                     "--save-cases", str(finds), "--report-dir", str(report))
    assert code == 1, out
    assert "NEW" in out and "1 new divergence(s)" in out
    files = sorted(finds.glob("*.yaml"))
    assert len(files) == 1
    (case,) = load_file(files[0])
    assert "peer:planted-pads-swapped" in case.tags and "fuzz" in case.tags
    assert "pads_begin and pads_end swapped" in case.notes
    # the case replays: the engine passes it
    ran = runner.invoke(app, ["run", str(files[0])])
    assert ran.exit_code == 0, ran.output
    data = json.loads((report / "result.json").read_text())
    assert data["kind"] == "fuzz"
    assert data["fuzz"]["new"] == ["peer|max|planted-pads-swapped|pads:swapped"]
    assert (report / "junit.xml").exists() and (report / "report.html").exists()

    # Filed as a known divergence: the same run now exits 0, and the registry entry reproduces.
    known = tmp_path / "known"
    known.mkdir()
    shutil.copy(files[0], known / files[0].name)
    code, out = fuzz("--peers", peer, "--ops", "maxpool", "--oracles", "peers", "--max-examples", "300", "--seed", "0", "--no-isolation",
                     "--no-bundled-known", "--known", str(known), "--save-cases", str(tmp_path / "finds2"))
    assert code == 0, out
    assert "1 reproduce" in out

    # The "runtime" fixes its bug (same peer name, no bug): the entry is reported as fixed upstream.
    fixed = tmp_path / "fixed_peer.py"
    fixed.write_text((PLANTED / "correct.py").read_text().replace('"planted-correct"', '"planted-pads-swapped"'))
    code, out = fuzz("--peers", str(fixed), "--ops", "maxpool", "--oracles", "peers", "--max-examples", "50", "--seed", "0",
                     "--no-isolation", "--no-bundled-known", "--known", str(known), "--save-cases", str(tmp_path / "finds3"))
    assert code == 0, out
    assert "1 fixed upstream" in out and "no longer reproduces" in out


@pytest.mark.slow
def test_jobs_run_in_parallel_processes(tmp_path: Path) -> None:
    code, out = fuzz("--peers", str(PLANTED / "correct.py"), "--jobs", "2", "--max-examples", "60", "--seed", "5",
                     "--oracles", "peers,engines", "--no-isolation", "--no-bundled-known")
    assert code == 0, out
    assert "--jobs 2" in out


def test_the_example_database_replays_a_find_first(tmp_path: Path) -> None:
    args = ["--peers", str(PLANTED / "pads_swapped.py"), "--ops", "maxpool", "--oracles", "peers", "--exit-first",
            "--max-examples", "2000", "--no-isolation", "--database", str(tmp_path / "db"),
            "--no-bundled-known", "--save-cases", str(tmp_path / "finds")]
    code, _ = fuzz(*args, "--seed", "1", "--report", str(tmp_path / "r1"))
    assert code == 1 and any((tmp_path / "db").iterdir())
    first = json.loads((tmp_path / "r1" / "result.json").read_text())["fuzz"]
    # another seed: the saved example replays before any generation
    code, _ = fuzz(*args, "--seed", "2", "--report", str(tmp_path / "r2"))
    second = json.loads((tmp_path / "r2" / "result.json").read_text())["fuzz"]
    assert code == 1 and second["new"] == first["new"]
    assert second["examples"] == 1  # the replayed find, and --exit-first stops there


def test_fail_on_chooses_which_severities_exit_1(tmp_path: Path) -> None:
    """NaN handling is a policy point (the spec is silent): a peer that ignores NaN is a new
    `unspecified` divergence, which fails the run only when --fail-on names it."""
    base = ["--peers", str(PLANTED / "nan_ignored.py"), "--ops", "maxpool", "--oracles", "peers", "--seed", "0",
            "--no-isolation", "--no-bundled-known"]
    args = [*base, "--max-examples", "400"]
    code, out = fuzz(*args, "--save-cases", str(tmp_path / "a"), "--database", str(tmp_path / "db-a"),
                     "--report-dir", str(tmp_path / "ra"))
    assert code == 0, out
    assert "new divergence(s) (0 of a --fail-on severity: violation)" in out
    data = json.loads((tmp_path / "ra" / "result.json").read_text())
    severities = {c["checks"][0]["severity"] for c in data["cases"] if "new" in c["tags"]}
    assert severities == {"unspecified"}
    # the same find, replayed first from the first run's database (not searched for again over the
    # same 400 examples), fails the run once --fail-on names its severity
    code, out = fuzz(*base, "--max-examples", "20", "--save-cases", str(tmp_path / "b"), "--database", str(tmp_path / "db-a"),
                     "--fail-on", "unspecified,violation")
    assert code == 1, out
    assert "(1 of a --fail-on severity: unspecified, violation)" in out
    code, out = fuzz(*args, "--fail-on", "severe")
    assert code == 2 and "--fail-on" in out


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon", "1e-300s", "9ms"])
def test_peer_timeout_must_be_a_positive_finite_duration(value: str) -> None:
    code, out = fuzz("--peer-timeout", value, "--max-examples", "1", "--peers", "none")
    assert code == 2 and "--peer-timeout" in out and "Traceback" not in out


@pytest.mark.parametrize("command", [["run", "cases"], ["audit", "model.onnx"]])
def test_a_peer_timeout_no_peer_can_meet_is_a_usage_error(command: list[str]) -> None:
    """Every call would have timed out and counted as a violation; 10ms, the floor, is taken."""
    result = runner.invoke(app, [*command, "--peer-timeout", "1e-300s"])
    assert result.exit_code == 2 and "--peer-timeout: must be at least 10ms" in result.output, result.output
    assert "Traceback" not in result.output
    code, out = fuzz("--peer-timeout", "10ms", "--max-examples", "1", "--peers", "none")
    assert code == 0, out


def test_jobs_and_output_folders_are_checked_before_any_work(tmp_path: Path) -> None:
    code, out = fuzz("--jobs", "100000", "--max-examples", "1", "--peers", "none")
    assert code == 2 and "--jobs" in out
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, out = fuzz("--save-cases", str(blocker / "sub"), "--max-examples", "1", "--peers", "none")
    assert code == 2 and "--save-cases" in out
    code, out = fuzz("--known", str(tmp_path / "missing"), "--max-examples", "1", "--peers", "none")
    assert code == 2 and "--known" in out


def test_a_wrong_index_type_is_its_own_divergence(tmp_path: Path) -> None:
    """Issue 9: int64 indices where index_element_type is i32 are never cast away."""
    code, out = fuzz("--peers", str(PLANTED / "wide_indices.py"), "--ops", "maxpool", "--conventions", "openvino",
                     "--oracles", "peers", "--max-examples", "300", "--seed", "0", "--no-isolation",
                     "--no-bundled-known", "--save-cases", str(tmp_path / "f"), "--report-dir", str(tmp_path / "r"))
    assert code == 1, out
    data = json.loads((tmp_path / "r" / "result.json").read_text())
    assert data["fuzz"]["new"] == ["peer|max|planted-wide-indices|dtype:indices-int64-for-int32"]


def test_exit_first_stops_only_at_a_fail_on_severity(tmp_path: Path) -> None:
    """--exit-first ends the run at the first new divergence of a --fail-on severity. On seed 6
    the planted peer's NaN find (unspecified) is shrunk first; it must not end the run and hide
    the violation (dilations ignored) found 30 examples later. With --fail-on all the NaN find
    itself is one, and the run stops at the example that shrank it."""
    base = ["--peers", str(PLANTED / "nan_ignored_dilations_ignored.py"), "--ops", "maxpool", "--oracles", "peers",
            "--exit-first", "--time-budget", "90s", "--seed", "6", "--no-isolation", "--no-bundled-known"]
    code, out = fuzz(*base, "--save-cases", str(tmp_path / "a"), "--database", str(tmp_path / "db-a"),
                     "--report-dir", str(tmp_path / "ra"))
    assert code == 1, out
    new = json.loads((tmp_path / "ra" / "result.json").read_text())["fuzz"]["new"]
    assert any(s.endswith("|dilations:ignored") for s in new), new
    assert [s for s in new if "|nan=" in s] == new[:1], new  # found first, kept, and the run went on

    code, out = fuzz(*base, "--fail-on", "all", "--save-cases", str(tmp_path / "b"), "--database",
                     str(tmp_path / "db-b"), "--report-dir", str(tmp_path / "rb"))
    assert code == 1, out
    fz = json.loads((tmp_path / "rb" / "result.json").read_text())["fuzz"]
    # the example that shrank the NaN find ends the run, long before the budget
    assert [s for s in fz["new"] if "|nan=" in s] == fz["new"], fz["new"]
    assert fz["elapsed_s"] < 60, fz["elapsed_s"]


def test_the_replay_line_never_asks_for_fewer_examples_than_ran(tmp_path: Path) -> None:
    """Shrinking a find costs many calls of the test body; they are not examples. The summary's
    example count (generated examples) stays within the --max-examples the replay line prints
    (before, this run: '570 examples' and a replay line saying --max-examples 261)."""
    code, _ = fuzz("--peers", str(PLANTED / "dilations_ignored.py"), "--ops", "maxpool", "--oracles", "peers",
                   "--max-examples", "250", "--seed", "1", "--no-isolation", "--no-bundled-known",
                   "--save-cases", str(tmp_path / "f"), "--database", str(tmp_path / "db"),
                   "--report-dir", str(tmp_path / "r"))
    assert code == 1
    fz = json.loads((tmp_path / "r" / "result.json").read_text())["fuzz"]
    asked = int(fz["replay"].split("--max-examples ")[1].split()[0])
    assert fz["new"] and fz["shrunk_at_s"]  # something was shrunk
    assert 250 <= fz["examples"] <= asked, (fz["examples"], asked)


def test_fuzz_in_a_callers_process_gives_back_its_signal_handlers(tmp_path: Path) -> None:
    """While it runs, the command takes SIGTERM and Ctrl-C (to end the campaign with its summary);
    a script or test that runs it in its own process gets its own handlers back afterwards (a
    handler left behind turned a later Ctrl-C of the caller into a stop request of a campaign
    long over)."""
    import signal

    def mine(signum: int, frame: object) -> None:
        raise AssertionError("not called")

    before_int, before_term = signal.getsignal(signal.SIGINT), signal.signal(signal.SIGTERM, mine)
    try:
        result = CliRunner().invoke(app, ["fuzz", "--peers", "none", "--max-examples", "1", "--seed", "1",
                                          "--database", str(tmp_path / "db"), "--save-cases", str(tmp_path / "finds")])
        assert result.exit_code == 0, result.output
        assert signal.getsignal(signal.SIGINT) is before_int and signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before_term)
