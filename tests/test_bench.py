"""``poolcheck bench`` on tiny workloads: every contender's output is checked before it is timed,
wrong / failing / inexpressible / absent contenders are reported as such, and the table, JSON
and Markdown have their structure. No timing is ever asserted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from poolcheck import spec as S
from poolcheck.bench import measure, render, workloads
from poolcheck.bench.contenders import Contender, Prepared, Unsupported, all_contenders
from poolcheck.bench.measure import STATUSES, run_bench
from poolcheck.bench.targets import evaluate
from poolcheck.bench.workloads import Workload
from poolcheck.cases.dump import write_text_atomic
from poolcheck.cli import app
from poolcheck.engines import get_engine
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
    assert len(evaluate(run)) > 0


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
    monkeypatch.setitem(workloads.BY_NAME, "T4", TINY[4])
    result = CliRunner().invoke(app, ["bench", "--workloads", "T4", "--reps", "3", "--time-budget", "0.1s"],
                                env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "T4  tiny MaxPool3D" in result.output
    assert "poolcheck numpy" in result.output and "Targets (issue 3)" in result.output


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
