"""``poolcheck bench`` on tiny workloads: every contender's output is checked before it is timed,
wrong / failing / inexpressible / absent contenders are reported as such, and the table, JSON
and Markdown have their structure. No timing is ever asserted."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from support import ROOT
from typer.testing import CliRunner

from poolcheck import spec as S
from poolcheck.bench import measure, render, summary, workloads
from poolcheck.bench.contenders import Contender, Prepared, Unsupported, all_contenders
from poolcheck.bench.measure import STATUSES, run_bench
from poolcheck.bench.targets import evaluate
from poolcheck.bench.workloads import Workload
from poolcheck.cli import app
from poolcheck.engines import c_engine, get_engine
from poolcheck.files import write_text_atomic
from poolcheck.spec.policy import SPEC

TINY = [
    Workload("T1", "tiny MaxPool2D k3 s2 p1", S.openvino_max_pool([3, 3], [2, 2], [1, 1], [1, 1]), (1, 3, 9, 10)),
    Workload("T1i", "tiny MaxPool2D + indices", S.openvino_max_pool([3, 3], [2, 2], [1, 1], [1, 1]), (2, 3, 9, 10),
             with_indices=True),
    Workload("T2", "tiny global AvgPool2D", S.openvino_avg_pool([5, 5], [1, 1]), (1, 8, 5, 5)),
    Workload("T3", "tiny AvgPool2D exclude pads", S.openvino_avg_pool([3, 3], [1, 1], [1, 1], [1, 1], True),
             (2, 2, 7, 6)),
    Workload("T4", "tiny MaxPool3D", S.openvino_max_pool([2, 2, 2], [2, 2, 2]), (1, 2, 4, 6, 6)),
    Workload("T5", "tiny MaxPool1D", S.openvino_max_pool([4], [4]), (2, 3, 20)),
    Workload("T6", "tiny dilated MaxPool2D", S.openvino_max_pool([3, 3], [1, 1], [2, 2], [2, 2], [2, 2]), (1, 2, 8, 9)),
]


def fake(key: str, make: object, **kw: object) -> Contender:
    return Contender(key, f"fake {key}", "NCHW", None, make, **kw)  # type: ignore[arg-type]


def correct(w: Workload, x: np.ndarray) -> Prepared:
    eng = get_engine("numpy")
    if w.spec.op == "avg":
        def run() -> tuple[np.ndarray, np.ndarray | None]:
            return eng.avg_pool(x, w.geometry, w.spec.exclude_pad, SPEC), None
    else:
        layout = S.index_layout(w.spec, w.shape) if w.with_indices else None

        def run() -> tuple[np.ndarray, np.ndarray | None]:
            return eng.max_pool(x, w.geometry, layout, SPEC)
    return Prepared(run, run)


def float32_average(w: Workload, x: np.ndarray) -> Prepared:
    """What a runtime does: sums in float32 (a different rounding, within the tolerance)."""
    eng = get_engine("numpy")

    def run() -> tuple[np.ndarray, None]:
        exact = eng.avg_pool(x, w.geometry, w.spec.exclude_pad, SPEC)
        return (exact.astype(np.float64) * (1 + 2.0**-23)).astype(np.float32), None
    return Prepared(run, run)


def off_values(w: Workload, x: np.ndarray) -> Prepared:
    def run() -> tuple[np.ndarray, np.ndarray | None]:
        values, indices = correct(w, x).outputs()
        values = values.copy()
        values.reshape(-1)[-1] += np.float32(1e-3) * (1 + abs(values.reshape(-1)[-1]))
        return values, indices
    return Prepared(run, run)


def off_indices(w: Workload, x: np.ndarray) -> Prepared:
    def run() -> tuple[np.ndarray, np.ndarray | None]:
        values, indices = correct(w, x).outputs()
        return values, (None if indices is None else indices + 1)
    return Prepared(run, run)


def rejects(w: Workload, x: np.ndarray) -> Prepared:
    raise RuntimeError("this runtime rejects the model")


def inexpressible(w: Workload, x: np.ndarray) -> Prepared:
    raise Unsupported("cannot express this")


def crashes_when_run(w: Workload, x: np.ndarray) -> Prepared:
    def run() -> tuple[np.ndarray, None]:
        raise ValueError("boom")
    return Prepared(run, run)


FAKES = [
    fake("good", correct),
    fake("float32-sums", float32_average),
    fake("off-values", off_values),
    fake("off-indices", off_indices),
    fake("rejects", rejects),
    fake("inexpressible", inexpressible),
    fake("crashes", crashes_when_run),
    Contender("missing", "missing runtime", "NCHW", "poolcheck_no_such_runtime", correct),
    fake("only-T3", correct, only=("T3",), max_reps=4),
]


@pytest.fixture(scope="module")
def fake_run() -> measure.BenchRun:
    return run_bench(TINY, reps=5, budget_s=0.5, warmup=1, block=2, contenders=FAKES)


def test_every_contender_is_checked_before_it_is_timed(fake_run: measure.BenchRun) -> None:
    for w in fake_run.workloads:
        status = {r.key: r for r in w.results}
        assert status["good"].status == "ok" and status["good"].timing is not None
        assert status["rejects"].status == "error" and "rejects the model" in status["rejects"].message
        assert status["crashes"].status == "error" and "boom" in status["crashes"].message
        assert status["inexpressible"].status == "n/a"
        assert status["missing"].status == "absent" and "poolcheck_no_such_runtime" in status["missing"].message
        assert status["off-values"].status == "wrong" and status["off-values"].timing is None
        assert "differ from poolcheck's engine" in status["off-values"].message
        if w.with_indices:
            assert status["off-indices"].status == "wrong" and "indices" in status["off-indices"].message
        else:
            assert status["off-indices"].status == "ok"
        # float32 summation error is tolerated for averages; any change of a max is not
        assert status["float32-sums"].status == ("ok" if w.op == "avg" else "wrong")
        for r in w.results:
            assert r.status in STATUSES
            assert (r.timing is not None) == (r.status == "ok")
        only = status["only-T3"]
        if w.name == "T3":
            assert only.status == "ok" and only.timing is not None and only.timing.reps == 4
        else:
            assert only.status == "n/a"


def test_timed_results_carry_every_column(fake_run: measure.BenchRun) -> None:
    for w in fake_run.workloads:
        assert w.copy_gbps is not None and w.copy_gbps > 0
        assert w.bound_ms is not None and w.bound_ms > 0
        assert w.bytes_moved == 4 * int(np.prod(w.shape)) + int(np.prod(w.output_shape)) * (12 if w.with_indices else 4)
        timed = [r for r in w.results if r.timing is not None]
        assert min(r.ratio_fastest or 0 for r in timed) == 1.0
        for r in timed:
            assert r.timing is not None
            assert r.timing.min_ms <= r.timing.median_ms <= r.timing.max_ms
            assert 3 <= r.timing.reps <= 5
            assert r.gbps is not None and r.ratio_bound is not None
            assert r.ratio_ort is None  # no ONNX Runtime among the fakes


def test_json_and_markdown_structure(fake_run: measure.BenchRun, tmp_path: Path) -> None:
    data = json.loads(render.to_json(fake_run))
    assert data["schema"] == "poolcheck.bench/1"
    assert [w["name"] for w in data["workloads"]] == [w.name for w in TINY]
    for w in data["workloads"]:
        assert {"title", "shape", "output_shape", "bytes_moved", "copy_gbps", "bound_ms", "results"} <= set(w)
        for r in w["results"]:
            assert {"contender", "status", "message", "ratio_ort", "ratio_fastest", "gbps", "ratio_bound"} <= set(r)
            assert ("median_ms" in r) == (r["status"] == "ok")
    assert {t["workload"] for t in data["targets"]} <= {w.name for w in TINY}
    assert data["settings"]["threads"] == 1
    md = render.to_markdown(fake_run, "poolcheck bench --test")
    assert md.startswith("# Benchmarks\n")
    assert "`poolcheck bench --test`" in md
    for w in TINY:
        assert f"### {w.name} — {w.title}" in md
    assert "| fake good | ok |" in md and "| fake off-values | wrong |" in md
    assert "## Contenders not timed" in md and "differ from poolcheck's engine" in md
    path = write_text_atomic(tmp_path / "docs" / "benchmarks.md", md)
    assert path.read_text(encoding="utf-8") == md
    assert not list(path.parent.glob(".*.tmp"))


def test_real_contenders_agree_on_tiny_workloads() -> None:
    """The model/session construction for every installed runtime computes the workloads'
    operator: each is either ok, or not applicable / absent with a reason -- never wrong."""
    run = run_bench(TINY, reps=3, budget_s=0.2, warmup=1, block=1, contenders=all_contenders())
    for w in run.workloads:
        for r in w.results:
            assert r.status in ("ok", "n/a", "absent"), f"{w.name} {r.label}: {r.status} {r.message}"
            if r.status != "ok":
                assert r.message
        ok = {r.key for r in w.results if r.status == "ok"}
        assert {"c", "numpy"} <= ok or "c" not in ok
        assert "numpy" in ok
        if w.name == "T5":
            assert w.result("torch-cl") is not None and w.result("torch-cl").status in ("n/a", "absent")
    for w, r in zip(run.workloads, summary.ratios(run)):  # the headline ratios come from this one run
        timed = {x.key for x in w.results if x.status == "ok"}
        assert (r.c_ort is not None) == ({"c", "onnxruntime"} <= timed)
        assert (r.numpy_ort is not None) == ("onnxruntime" in timed)
    assert evaluate(run) == []  # the standing targets name W1..W6, not these tiny workloads


def test_workload_selection() -> None:
    assert [w.name for w in workloads.select(["w3", "W1"])] == ["W3", "W1"]
    assert [w.name for w in workloads.select(None)] == ["W1", "W1i", "W2", "W3", "W4", "W5", "W6"]
    with pytest.raises(ValueError, match="workloads: unknown workload 'W9'"):
        workloads.select(["W9"])
    w1i = workloads.BY_NAME["W1i"]
    assert w1i.geometry.output_shape == (1, 64, 56, 56)
    assert w1i.bytes_moved == 4 * 64 * 112 * 112 + 64 * 56 * 56 * 12


def test_cli_rejects_unknown_workload() -> None:
    result = CliRunner().invoke(app, ["bench", "--workloads", "W1,W9"])
    assert result.exit_code == 2
    assert "unknown workload 'W9'" in result.output


def test_cli_json_and_docs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(workloads.BY_NAME, "T5", TINY[5])
    docs = tmp_path / "bench.md"
    result = CliRunner().invoke(app, ["bench", "--workloads", "T5", "--reps", "3", "--budget", "0.1", "--json",
                                      "--write-docs", str(docs)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout[result.stdout.index("{"):result.stdout.rindex("}") + 1])
    assert [w["name"] for w in data["workloads"]] == ["T5"]
    assert docs.read_text(encoding="utf-8").startswith("# Benchmarks")


def test_cli_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from poolcheck.cli import common

    monkeypatch.setitem(workloads.BY_NAME, "T4", TINY[4])
    # A console made while COLUMNS was set keeps that width for the whole process (rich reads it
    # once); a real command starts a process of its own, so give this in-process one 160 columns.
    saved = common.console._width
    common.console.width = 160
    try:
        result = CliRunner().invoke(app, ["bench", "--workloads", "T4", "--reps", "3", "--time-budget", "0.1s"],
                                    env={"COLUMNS": "160"})
    finally:
        common.console._width = saved
    assert result.exit_code == 0, result.output
    assert "T4  tiny MaxPool3D" in result.output
    assert "poolcheck numpy" in result.output and "Ratios of medians, this run" in result.output
    assert "More targets" not in result.output  # T4 has no target beyond the ratios: no empty table


def test_cli_writes_no_docs_unless_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`bench` never rewrites the tracked docs/benchmarks.md by itself (issue 9): only --write-docs."""
    monkeypatch.setitem(workloads.BY_NAME, "T4", TINY[4])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    result = CliRunner().invoke(app, ["bench", "--workloads", "T4", "--reps", "3", "--time-budget", "100ms"])
    assert result.exit_code == 0, result.output
    assert list((tmp_path / "docs").iterdir()) == []
    result = CliRunner().invoke(app, ["bench", "--workloads", "T4", "--time-budget", "0"])
    assert result.exit_code == 2 and "--time-budget" in result.output


# --------------------------------------------------------------------------- headline ratios


def fixed_run(setup: dict[str, object] | None = None) -> measure.BenchRun:
    """A run with made-up medians (no timing happens): the ratios are then known exactly."""
    def res(key: str, ms: float | None, fmt: str = "NCHW", status: str = "ok") -> measure.Result:
        timing = None if ms is None else measure.Timing(ms, ms * 0.9, ms * 1.5, 10)
        return measure.Result(key, f"label {key}", fmt, None, status, "" if status == "ok" else "why", timing)

    def wl(name: str, results: list[measure.Result]) -> measure.WorkloadResult:
        return measure.WorkloadResult(name, f"title {name}", (1, 2, 8, 8), (1, 2, 4, 4), "max", False, 1000,
                                      10.0, 0.0001, results)

    workloads_ = [
        # C 0.5x ORT; NumPy 2.5x ORT; fastest NCHW contender is openvino (0.16 ms), not torch-cl (0.1, channels_last)
        wl("A", [res("c", 0.1), res("numpy", 0.5), res("onnxruntime", 0.2), res("openvino", 0.16),
                 res("torch-cl", 0.1, "channels_last"), res("torch", None, status="wrong")]),
        # C 1.2x behind ORT, which is the fastest NCHW contender; NumPy 6x (over 3x): two missed targets
        wl("B", [res("c", 0.3), res("numpy", 1.5), res("onnxruntime", 0.25), res("torch", 0.4)]),
        # no ONNX Runtime timed: only C / fastest NCHW is known
        wl("C", [res("c", 0.2), res("numpy", 0.4), res("onnxruntime", None, status="absent"), res("torch", 0.19)]),
        # nothing but poolcheck's engines: no NCHW contender to compare with
        wl("D", [res("c", 0.2), res("numpy", 0.4)]),
    ]
    machine: dict[str, object] = {"cpu": "Test CPU 9000", "load_start": 0.5, "load_end": 0.6, "c_engine_isa": "avx2",
                                  "c_engine_isas": ["portable", "avx2"]}
    machine.update(setup or {})
    return measure.BenchRun(workloads_, machine, {"reps": 10, "reference_engine": "c"})


def test_ratios_from_fixed_measurements() -> None:
    by_name = {r.workload: r for r in summary.ratios(fixed_run())}
    a, b, c, d = (by_name[k] for k in "ABCD")
    assert a.c_ort == pytest.approx(0.5) and a.numpy_ort == pytest.approx(2.5)
    assert a.fastest_nchw == "label openvino" and a.c_fastest_nchw == pytest.approx(0.1 / 0.16)
    assert a.met() == {"c_ort": True, "numpy_ort": True, "c_fastest_nchw": True}
    assert b.c_ort == pytest.approx(1.2) and b.numpy_ort == pytest.approx(6.0)
    assert b.fastest_nchw == "label onnxruntime" and b.c_fastest_nchw == pytest.approx(1.2)
    assert b.met() == {"c_ort": False, "numpy_ort": False, "c_fastest_nchw": False}
    assert c.c_ort is None and c.numpy_ort is None and c.met()["c_ort"] is None
    assert c.fastest_nchw == "label torch" and c.c_fastest_nchw == pytest.approx(0.2 / 0.19)
    assert c.met()["c_fastest_nchw"] is True  # 5% behind: within the 10% allowed
    assert d == summary.Ratios("D", None, None, None, None)


def test_ratios_rendered_side_by_side() -> None:
    run = fixed_run(summary.SetupTime(83.4, "2026-01-02 03:04 UTC", "fresh `make install`").machine_fields())
    console = Console(record=True, width=200)
    console.print(render.renderable(run))
    text = console.export_text()
    assert "Ratios of medians, this run, on Test CPU 9000" in text
    table = text[text.index("Ratios of medians"):text.index("Set-up time")]
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:7]]
            for line in table.splitlines() if line.startswith("│") and line.split("│")[1].strip()}
    assert rows["A"] == ["0.50x", "2.50x", "0.62x", "label openvino", "avx2"]
    assert rows["B"][:3] == ["1.20x", "6.00x", "1.20x"] and rows["B"][4] == "avx2"
    assert rows["C"] == ["n/a", "n/a", "1.05x", "label torch", "avx2"]
    assert rows["D"] == ["n/a", "n/a", "n/a", "none timed", "avx2"]
    # the caption wraps at the table's width
    assert "Set-up time of the last fresh install: 83 s (fresh `make install`, recorded 2026-01-02 03:04 UTC)" in \
        " ".join(text.split())
    md = render.to_markdown(run, "poolcheck bench --test")
    assert "| B | **1.20x** | **6.00x** | **1.20x** | label onnxruntime | avx2 |" in md
    assert "| A | 0.50x | 2.50x | 0.62x | label openvino | avx2 |" in md
    assert "Measured on Test CPU 9000, C engine path avx2." in md
    assert "install`, from creating the virtual environment to the end of the install): 83 s" in md
    data = json.loads(render.to_json(run))
    assert data["machine"]["setup_seconds"] == 83.4
    ratio_b = next(r for r in data["ratios"] if r["workload"] == "B")
    assert ratio_b["c_ort"] == pytest.approx(1.2) and ratio_b["met"]["numpy_ort"] is False


def test_setup_time_unknown_unless_recorded(tmp_path: Path) -> None:
    assert "unknown" in render.to_markdown(fixed_run())  # a run that never read a record
    unknown = summary.read_setup_time(tmp_path)
    assert unknown.seconds is None and unknown.text().startswith("unknown (no fresh `make install` recorded")
    record = tmp_path / summary.INSTALL_RECORD
    record.write_text("71\n", encoding="utf-8")
    known = summary.read_setup_time(tmp_path)
    assert known.seconds == 71.0 and known.text().startswith("71 s (fresh `make install`, recorded ")
    assert summary.setup_time_of(fixed_run(known.machine_fields())) == known
    for garbage in ("", "soon", "-3", "nan", "inf"):
        record.write_text(garbage, encoding="utf-8")
        bad = summary.read_setup_time(tmp_path)
        assert bad.seconds is None and "unreadable install record" in bad.text()


def test_build_time_read_from_the_record_beside_the_extension(tmp_path: Path) -> None:
    assert "C engine build (setup.py's compile and link of the loaded extension): unknown (not read in this run)" \
        in render.to_markdown(fixed_run())
    record = tmp_path / c_engine.BUILD_RECORD_NAME
    missing = summary.read_build_time(record)
    assert missing.seconds is None and missing.text().startswith("unknown (no build record beside the extension")
    record.write_text('{"seconds": 17.94, "cpus": 2, "machine": "x86_64", "recorded": "2026-11-27 04:05 UTC"}\n',
                      encoding="utf-8")
    known = summary.read_build_time(record)
    assert known == summary.BuildTime(17.94, 2, "2026-11-27 04:05 UTC", "setup.py") and known.met() is True
    assert known.text() == ("17.9 s on 2 CPUs (setup.py, recorded 2026-11-27 04:05 UTC; "
                            "target at most 20 s on 2 cores: met)")
    assert summary.build_time_of(fixed_run(known.machine_fields())) == known
    slow = dataclasses.replace(known, seconds=23.5)
    assert slow.met() is False and slow.text().endswith("target at most 20 s on 2 cores: missed)")
    four = dataclasses.replace(known, cpus=4)  # the target is stated for 2 cores: not judged on others
    assert four.met() is None and four.text() == "17.9 s on 4 CPUs (setup.py, recorded 2026-11-27 04:05 UTC)"
    run = fixed_run({**known.machine_fields(), **summary.SetupTime(83.4, "x", "fresh `make install`").machine_fields()})
    console = Console(record=True, width=200)
    console.print(render.renderable(run))
    assert "C engine build: 17.9 s on 2 CPUs (setup.py" in " ".join(console.export_text().split())
    assert "compile and link of the loaded extension): 17.9 s on 2 CPUs" in render.to_markdown(run)
    assert json.loads(render.to_json(run))["machine"]["build_seconds"] == 17.94
    for garbage in ("", "soon", "[]", '{"seconds": -1, "cpus": 2, "recorded": "x"}',
                    '{"seconds": NaN, "cpus": 2, "recorded": "x"}', '{"seconds": 3, "cpus": 0, "recorded": "x"}',
                    '{"seconds": 3, "cpus": 2}', '{"seconds": "3", "cpus": 2, "recorded": "x"}',
                    '{"seconds": 3, "cpus": true, "recorded": "2026-11-27 04:05 UTC"}',
                    '{"seconds": 3, "cpus": 2, "recorded": "[red]2026-11-27 04:05 UTC[/red]"}',
                    '{"seconds": 3, "cpus": 2, "recorded": "2026-11-27 04:05 UTC\\u001b[2J"}'):
        record.write_text(garbage, encoding="utf-8")
        bad = summary.read_build_time(record)
        assert bad.seconds is None and bad.text() == "unknown (unreadable build record)", garbage


@pytest.mark.skipif(not c_engine.AVAILABLE, reason=f"C engine: {c_engine.UNAVAILABLE_REASON}")
def test_the_installed_extension_has_its_build_record() -> None:
    """setup.py wrote the record beside the extension it built (a fresh install, as CI's; an
    extension built before setup.py kept records needs `make install` or a rebuild)."""
    build = summary.read_build_time()
    assert build.seconds is not None and build.seconds > 0, build.text()
    assert build.cpus == os.cpu_count() and build.note == "setup.py"


def test_real_command_reports_the_ratios(tmp_path: Path) -> None:
    """`python -m poolcheck bench` itself, on the smallest real workload with a tiny repeat count:
    the ratio table and the set-up line are there, and the JSON holds the same ratios."""
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "poolcheck", "bench", "--workloads", "W2", "--reps", "3", "--time-budget", "0.05s"]
    table = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert table.returncode == 0, table.stderr
    assert "Ratios of medians, this run, on " in table.stdout
    assert "Set-up time of the last fresh install: " in table.stdout and "C engine build: " in table.stdout
    ratios_part = table.stdout[table.stdout.index("Ratios of medians"):]
    row = [c.strip() for c in next(ln for ln in ratios_part.splitlines() if ln.startswith("│ W2 ")).split("│")[2:7]]
    assert all(c.endswith("x") or c == "n/a" for c in row[:3]) and row[3]
    from poolcheck.engines import c_engine
    assert row[4] == (c_engine.active_isa() or "not built")  # the C engine's path beside the ratios
    as_json = subprocess.run([*args, "--json"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert [r["workload"] for r in data["ratios"]] == ["W2"]
    medians = {r["contender"]: r.get("median_ms") for r in data["workloads"][0]["results"]}
    for key, engine in (("c_ort", "c"), ("numpy_ort", "numpy")):
        if medians.get(engine) and medians.get("onnxruntime"):
            assert data["ratios"][0][key] == pytest.approx(medians[engine] / medians["onnxruntime"])
        else:
            assert data["ratios"][0][key] is None
    assert "setup_note" in data["machine"] and "build_note" in data["machine"]
    assert list(tmp_path.iterdir()) == []  # writes nothing without --write-docs


# --------------------------------------------------------------------------- what a reader sees


def realistic_run() -> measure.BenchRun:
    """fixed_run with the long labels, versions and wide numbers of real runtimes."""
    run = fixed_run()
    w = run.workloads[0]
    names = {"onnxruntime": ("ONNX Runtime", "1.20.1"), "openvino": ("OpenVINO", "2025.0.0-17942-1f68be9f594"),
             "torch-cl": ("PyTorch channels_last", "2.5.1+cpu")}
    for r in w.results:
        r.label, r.version = names.get(r.key, (r.label, r.version))
        if r.timing is not None:
            r.timing = measure.Timing(123.4, 0.01234, 12345.6, 10)
            r.ratio_ort, r.ratio_fastest, r.gbps, r.ratio_bound = 12.34, 123.45, 1234.5, 12.34
    return run


@pytest.mark.parametrize("width", [80, 100])
def test_tables_keep_every_header_and_number_at_80_and_100_columns(width: int) -> None:
    """Nothing is cut (no ellipsis), no column is squeezed away: every header word and every
    number of every table is printed whole; long contender names wrap instead."""
    run = realistic_run()
    console = Console(record=True, width=width)
    console.print(render.renderable(run))
    text = console.export_text()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    for word in ("contender", "status", "median", "min–max", "ORT", "fastest", "GB/s", "bound",
                 "C / ORT", "NumPy / ORT", "C / fastest", "contender", "path"):
        assert word in text, word
    for cell in ("123", "0.0123–12346", "12.34x", "123.45x", "1234.5", "1.20x", "6.00x", "1.05x"):
        assert cell in text, cell


def test_output_names_the_cpu_and_path_and_nothing_internal() -> None:
    run = realistic_run()
    console = Console(record=True, width=120)
    console.print(render.renderable(run))
    text = console.export_text()
    md = render.to_markdown(run, "poolcheck bench")
    for out in (text, md):
        assert "issue" not in out.lower() and "standing" not in out.lower()
    # beside every ratio: the C engine's path; the CPU in the title of the ratios and of each table
    assert text.count("on Test CPU 9000, C engine path avx2") == len(run.workloads)
    assert md.count("measured on Test CPU 9000, C engine path avx2") == len(run.workloads)
    assert "C engine instruction-set path: avx2 (this CPU and build offer: portable, avx2;" in md
    assert "## Instruction-set paths of the C engine" in md and "NEON" in md
    assert "Measured under load" not in md  # load 0.5-0.6, no CPU count: not flagged
    run.machine.update(logical_cpus=2, load_end=9.5)
    assert "**Measured under load**: the load average exceeded the 2 logical CPUs" in render.to_markdown(run)


@pytest.mark.parametrize("kind", ["folder", "under-a-file", "not-writable", "dangling", "empty"])
def test_write_docs_is_checked_before_measuring(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str) -> None:
    """A --write-docs path that cannot be written fails at once (exit 2, one line naming the
    option), before any workload is timed."""
    import poolcheck.cli.bench as cli_bench

    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("benchmarked before checking --write-docs")

    monkeypatch.setattr(cli_bench, "run_bench", no_run)
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    locked = tmp_path / "locked"
    locked.mkdir()
    targets = {"folder": str(tmp_path), "under-a-file": str(tmp_path / "afile" / "bench.md"),
               "not-writable": str(locked / "bench.md"), "dangling": str(tmp_path / "dangling.md"), "empty": " "}
    if kind == "dangling":
        (tmp_path / "dangling.md").symlink_to(tmp_path / "missing" / "x.md")
    if kind == "not-writable":
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        locked.chmod(0o500)
    result = CliRunner().invoke(app, ["bench", "--workloads", "W2", "--write-docs", targets[kind]])
    assert result.exit_code == 2, result.output
    assert "--write-docs" in result.output and "Traceback" not in result.output

