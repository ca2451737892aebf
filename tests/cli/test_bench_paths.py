"""``poolcheck bench --isa``: the C engine timed on several instruction-set paths side by side in
one run, each path's calls really running on that path, each over ONNX Runtime against its target
(portable within 2x, the others at most 1x), the default path restored afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from support import cli, invoke

from poolcheck import spec as S
from poolcheck.bench import contenders as C
from poolcheck.bench import measure, render, summary
from poolcheck.bench.workloads import Workload
from poolcheck.engines import c_engine, get_engine
from poolcheck.spec.policy import SPEC

PATHS = c_engine.available_isas()
needs_two_paths = pytest.mark.skipif(len(PATHS) < 2, reason="this CPU and build run fewer than two C engine paths")

SMALL = [
    Workload("T1", "small MaxPool2D k3 s2 p1", S.openvino_max_pool([3, 3], [2, 2], [1, 1], [1, 1]), (1, 3, 9, 10),
             with_indices=True),
    Workload("T3", "small AvgPool2D exclude pads", S.openvino_avg_pool([3, 3], [1, 1], [1, 1], [1, 1], True),
             (2, 2, 7, 6)),
]


def numpy_runtime(w: Workload, x: np.ndarray) -> C.Prepared:
    """A stand-in for ONNX Runtime: the NumPy engine (so no runtime needs to be installed)."""
    eng = get_engine("numpy")
    if w.spec.op == "avg":
        def run() -> tuple[np.ndarray, np.ndarray | None]:
            return eng.avg_pool(x, w.geometry, w.spec.exclude_pad, SPEC), None
    else:
        layout = S.index_layout(w.spec, w.shape)

        def run() -> tuple[np.ndarray, np.ndarray | None]:
            return eng.max_pool(x, w.geometry, layout, SPEC)
    return C.Prepared(run, run)


@needs_two_paths
def test_each_path_runs_on_its_own_path_while_the_others_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every timed call of every path's contender runs on that path, although the contenders take
    turns; the per-path ratios are those medians over the runtime's; the default path is back."""
    seen: list[list[str | None]] = []
    real = C._engine_calls

    def recording(engine_name: str, w: Workload, x: np.ndarray) -> C.Prepared:
        prepared = real(engine_name, w, x)
        calls: list[str | None] = []
        seen.append(calls)
        inner = prepared.call

        def call() -> object:
            calls.append(c_engine.active_isa())
            return inner()

        prepared.call = call
        return prepared

    monkeypatch.setattr(C, "_engine_calls", recording)
    default = c_engine.active_isa()
    chosen = [c for c in C.all_contenders(PATHS) if c.key == "c" or c.key.startswith(C.C_PATH_PREFIX)]
    assert [c.isa for c in chosen] == [default, *(p for p in PATHS if p != default)]
    runtime = C.Contender("onnxruntime", "stand-in runtime", "NCHW", None, numpy_runtime)
    run = measure.run_bench(SMALL, reps=12, budget_s=5.0, block=3, contenders=[*chosen, runtime])
    assert c_engine.active_isa() == default
    assert len(seen) == len(chosen) * len(SMALL)
    for i, calls in enumerate(seen):  # one recorder per contender per workload, in that order
        assert set(calls) == {chosen[i % len(chosen)].isa}, (chosen[i % len(chosen)].key, calls)
    assert sorted(run.machine["c_engine_paths_timed"]) == sorted(PATHS)
    assert summary.paths_timed(run) == list(PATHS)  # narrowest first
    ratios = summary.path_ratios(run)
    assert [(r.workload, r.path) for r in ratios] == [(w.name, p) for w in SMALL for p in PATHS]
    for r in ratios:
        wr = next(w for w in run.workloads if w.name == r.workload)
        key = "c" if r.path == default else C.C_PATH_PREFIX + r.path
        c_result, ort = wr.result(key), wr.result("onnxruntime")
        assert c_result is not None and ort is not None and c_result.status == "ok"
        assert c_result.timing is not None and ort.timing is not None
        assert r.c_ort == pytest.approx(c_result.timing.median_ms / ort.timing.median_ms)
        assert r.target == (2.0 if r.path == "portable" else 1.0)


@needs_two_paths
def test_a_failing_contender_still_leaves_the_default_path(monkeypatch: pytest.MonkeyPatch) -> None:
    default = c_engine.active_isa()
    other = next(p for p in PATHS if p != default)

    def breaks(w: Workload, x: np.ndarray) -> C.Prepared:
        def boom() -> object:
            raise RuntimeError("planted")

        return C.Prepared(boom, lambda: (c_engine.switch_isa(other), boom())[1])  # switches, then fails

    contenders = [*C.all_contenders([other])[:2], C.Contender("broken", "broken", "NCHW", None, breaks)]
    run = measure.run_bench(SMALL[:1], reps=3, budget_s=1.0, contenders=contenders)
    assert c_engine.active_isa() == default
    assert run.workloads[0].result("broken").status == "error"  # type: ignore[union-attr]


def fixed_paths_run() -> measure.BenchRun:
    """Made-up medians: avx2 the default path, portable timed beside it."""
    def res(key: str, ms: float, label: str) -> measure.Result:
        return measure.Result(key, label, "NCHW", None, "ok", "", measure.Timing(ms, ms, ms, 3))

    def wl(name: str, c: float, portable: float, ort: float) -> measure.WorkloadResult:
        return measure.WorkloadResult(name, f"title {name}", (1, 2, 8, 8), (1, 2, 4, 4), "max", False, 1000, 10.0,
                                      0.0001, [res("c", c, "poolcheck c"), res("c@portable", portable,
                                                                                   "poolcheck c [portable]"),
                                               res("numpy", 1.0, "poolcheck numpy"),
                                               res("onnxruntime", ort, "onnxruntime")])

    machine = {"cpu": "Test CPU 9000", "c_engine_isa": "avx2", "c_engine_isas": ["portable", "avx2"],
               "c_engine_paths_timed": ["avx2", "portable"]}
    # A: both paths meet their targets; B: portable 2.5x (over its 2x), avx2 1.5x (over 1x)
    return measure.BenchRun([wl("A", 0.1, 0.3, 0.2), wl("B", 0.3, 0.5, 0.2)], machine, {"reps": 3})


def test_per_path_ratios_rendered_against_their_targets() -> None:
    run = fixed_paths_run()
    by = {(r.workload, r.path): r for r in summary.path_ratios(run)}
    assert by["A", "avx2"].c_ort == pytest.approx(0.5) and by["A", "portable"].c_ort == pytest.approx(1.5)
    assert by["A", "portable"].met() is True and by["B", "portable"].met() is False
    assert by["B", "avx2"].c_ort == pytest.approx(1.5) and by["B", "avx2"].met() is False
    # the fastest NCHW contender is never one of poolcheck's engines, on any path
    assert all(r.fastest_nchw == "onnxruntime" for r in summary.ratios(run))

    console = Console(record=True, width=120)
    console.print(render.renderable(run))
    text = console.export_text()
    words = " ".join(text.split())
    assert render.PATHS_TITLE in words and "poolcheck c [portable]" in text  # the label's brackets are text
    assert "Test CPU 9000: the default path is avx2; ONNX Runtime runs its own kernels for this CPU" in words
    table = text[text.index("Each C engine path"):]
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:4]]
            for line in table.splitlines() if line.startswith("│") and line.split("│")[1].strip()}
    assert rows == {"A": ["1.50x", "0.50x"], "B": ["2.50x", "1.50x"]}  # portable, then avx2
    md = render.to_markdown(run, "poolcheck bench --isa all")
    assert "## The C engine on each instruction-set path (this run)" in md
    assert "| workload | portable / ORT ≤ 2 | avx2 / ORT ≤ 1 |" in md
    assert "| A | 1.50x | 0.50x |" in md and "| B | **2.50x** | **1.50x** |" in md
    data = json.loads(render.to_json(run))
    assert {(p["workload"], p["path"], p["met"]) for p in data["paths"]} == {
        ("A", "portable", True), ("A", "avx2", True), ("B", "portable", False), ("B", "avx2", False)}


def test_one_path_adds_no_path_section() -> None:
    run = fixed_paths_run()
    run.machine["c_engine_paths_timed"] = []
    assert summary.path_ratios(run) == [] and "instruction-set path (this run)" not in render.to_markdown(run)
    assert json.loads(render.to_json(run))["paths"] == []


@needs_two_paths
def test_real_command_times_every_path(tmp_path: Path) -> None:
    docs = tmp_path / "bench.md"
    done = cli("bench", "--workloads", "W2", "--reps", "3", "--time-budget", "0.05s", "--isa", "all", "--json",
               "--write-docs", str(docs), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert sorted(data["machine"]["c_engine_paths_timed"]) == sorted(PATHS)
    results = {r["contender"]: r for r in data["workloads"][0]["results"]}
    default = data["machine"]["c_engine_isa"]
    for p in PATHS:
        key = "c" if p == default else C.C_PATH_PREFIX + p
        assert results[key]["status"] == "ok", results[key]
    ort = results.get("onnxruntime", {}).get("median_ms")
    for p in data["paths"]:
        key = "c" if p["path"] == default else C.C_PATH_PREFIX + p["path"]
        if ort:
            assert p["c_ort"] == pytest.approx(results[key]["median_ms"] / ort)
        else:
            assert p["c_ort"] is None
    md = docs.read_text(encoding="utf-8")
    assert "--isa all --write-docs" in md and "## The C engine on each instruction-set path (this run)" in md


@pytest.mark.parametrize(("value", "said"), [
    ("sse9", "--isa: unknown instruction-set path 'sse9'; expected portable, avx2, avx512 or all"),
    (" , ", "--isa: expected portable, avx2, avx512 or all, got ' , '"),
    ("all,avx2", "--isa: unknown instruction-set path 'all'"),
])
def test_a_bad_path_list_is_one_line_before_anything_runs(value: str, said: str) -> None:
    if not PATHS:
        pytest.skip("the C engine is not built here")
    done = invoke("bench", "--workloads", "W2", "--isa", value)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr


def test_a_path_this_cpu_cannot_run_is_named_with_the_ones_it_can(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(c_engine, "available_isas", lambda: ("portable", "avx2"))
    done = invoke("bench", "--workloads", "W2", "--isa", "portable,avx512")
    assert done.returncode == 2
    assert "--isa: this CPU and build cannot run the avx512 path (they run: portable, avx2)" in done.stderr


def test_without_the_c_engine_isa_is_one_line(tmp_path: Path) -> None:
    done = cli("bench", "--workloads", "W2", "--isa", "all", cwd=tmp_path, env={"POOLCHECK_PURE_PYTHON": "1"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert "--isa: the C engine is not available here (POOLCHECK_PURE_PYTHON is set" in done.stderr
