"""``poolcheck report merge``: results of separate runs (a CI matrix over machines) merged into one
report with the fuzzer's deduplication, and "only on avx512_core" where the machines disagree.

The inputs are real results of ``poolcheck fuzz`` and ``poolcheck run``. A second machine cannot
be had in a test, so the "other machine" is this one with its recorded fingerprint rewritten to
an AVX2 CPU, running a peer of the same name without the bug.

The usage errors and the two ``run`` results of one machine come from the command in-process
(``invoke``; a real command cost ~1 s CPU of start-up each); the merges and the fuzz campaigns
from the real command.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import PLANTED, ROOT, cli, invoke

from poolcheck.fingerprint import fingerprint_id, isa_levels
from poolcheck.report.merge import merge_results
from poolcheck.results import RunResult

SIG = "peer|max|planted-pads-swapped|pads:swapped"
AVX512 = "sse4_2 avx avx2 fma avx512f avx512cd avx512bw avx512dq avx512vl".split()
AVX2 = "sse4_2 avx avx2 fma".split()


def fuzz_result(tmp: Path, name: str, peer: Path, seed: int, flags: list[str], host: str,
                bound: tuple[str, str] = ("--time-budget", "20s")) -> Path:
    rep = tmp / name
    out = cli("fuzz", "--peers", str(peer), "--ops", "maxpool", "--oracles", "peers", "--seed", str(seed),
                    "--exit-first", *bound, "--no-progress", "--no-bundled-known",
                    "--save-cases", str(rep / "cases"), "--report", str(rep), cwd=tmp)
    assert out.returncode in (0, 1), out.stdout[-2000:] + out.stderr[-2000:]
    path = rep / "result.json"
    data = json.loads(path.read_text())
    # this machine's fingerprint, as the named machine would have recorded it
    fp = dict(data["extra"]["fingerprint"])
    assert fp["id"] in data["extra"]["fingerprints"]
    old = fp["id"]
    fp.update(host=host, isa=isa_levels(flags), flags=sorted(flags))
    fp["id"] = fingerprint_id(fp)
    data["extra"]["fingerprint"] = fp
    data["extra"]["fingerprints"] = {fp["id"]: fp}
    for case in data["cases"]:
        case["tags"] = [f"fingerprint:{fp['id']}" if t == f"fingerprint:{old}" else t for t in case["tags"]]
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("merge")
    # the same runtime name on the AVX2 machine, without the bug
    fixed = tmp / "fixed_peer.py"
    fixed.write_text((PLANTED / "correct.py").read_text().replace('PEER_NAME = "planted-correct"',
                                                                  'PEER_NAME = "planted-pads-swapped"'))
    return {
        "avx512-a": fuzz_result(tmp, "a", PLANTED / "pads_swapped.py", 1, AVX512, "skx-1"),
        "avx512-b": fuzz_result(tmp, "b", PLANTED / "pads_swapped.py", 2, AVX512, "skx-2"),
        # nothing to find, so --exit-first never ends it: an example count, not the 20 s budget, bounds
        # it. 400 examples is more than twice what the buggy peer needs to be found and shrunk with
        # this seed (about 160), so "ran it and saw nothing" is the same search that found the bug.
        "avx2": fuzz_result(tmp, "c", fixed, 1, AVX2, "hsw-1", bound=("--max-examples", "400")),
    }


def load(path: Path) -> RunResult:
    return RunResult.from_dict(json.loads(path.read_text()))


def test_same_divergence_from_two_machines_is_one_case(results: dict[str, Path]) -> None:
    a, b = load(results["avx512-a"]), load(results["avx512-b"])
    assert SIG in a.fuzz.new and SIG in b.fuzz.new
    merged = merge_results([("a.json", a), ("b.json", b)])
    cases = [c for c in merged.cases if f"signature:{SIG}" in c.tags]
    assert len(cases) == 1
    case = cases[0]
    # the smaller reproducer of the two, the machines that showed it, no "only on" (both did)
    sizes = [min(_size(c) for c in r.cases if f"signature:{SIG}" in c.tags) for r in (a, b)]
    assert _size(case) == min(sizes)
    fps = {t.split(":", 1)[1] for t in case.tags if t.startswith("fingerprint:")}
    assert fps == set(a.extra["fingerprints"]) | set(b.extra["fingerprints"]) and len(fps) == 2
    assert not any(t.startswith("only-on:") for t in case.tags)
    assert merged.extra["merge"]["merged_cases"] >= 1
    assert set(merged.extra["fingerprints"]) == fps


def _size(case: object) -> int:
    n = 1
    for d in case.input_shape:  # type: ignore[attr-defined]
        n *= d
    return n


def test_only_on_avx512_core(results: dict[str, Path]) -> None:
    a, c = load(results["avx512-a"]), load(results["avx2"])
    assert SIG not in c.fuzz.divergent_configurations  # the AVX2 machine ran it and saw nothing
    assert "planted-pads-swapped" in c.fuzz.compared
    assert c.fuzz.examples >= a.fuzz.examples  # at least as long a search as the one that found the bug
    merged = merge_results([("skx.json", a), ("hsw.json", c)])
    case = next(k for k in merged.cases if f"signature:{SIG}" in k.tags)
    assert "only-on:planted-pads-swapped: only on avx512_core" in case.tags
    assert "only on avx512_core" in case.message
    assert merged.extra["merge"]["only_on"][SIG] == "planted-pads-swapped: only on avx512_core"


def test_cli_merge(results: dict[str, Path], tmp_path: Path) -> None:
    files = [str(results[k]) for k in ("avx512-a", "avx512-b", "avx2")]
    out = cli("report", "merge", *files, "-f", "json", "-o", str(tmp_path / "merged.json"),
                    "--report-dir", str(tmp_path / "rep"), cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert f"reports written to {tmp_path / 'rep'}" in out.stderr.replace("\n", "")
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert merged["schema"] == "poolcheck.result/2" and len(merged["extra"]["merge"]["inputs"]) == 3
    assert sum(f"signature:{SIG}" in c["tags"] for c in merged["cases"]) == 1
    assert {p.name for p in (tmp_path / "rep").iterdir()} >= {"result.json", "report.html", "junit.xml", "summary.md"}
    # the merged file is a result like any other: it renders, and merges again
    again = cli("report", "merge", str(tmp_path / "merged.json"), files[0], "-f", "md", cwd=tmp_path)
    assert again.returncode == 0 and "only on avx512_core" in again.stdout


@pytest.mark.parametrize("args", [["merge", "ONE"], ["ONE", "ONE"], ["merge"], ["ONE", "--report-dir", "out"],
                                  ["merge", "ONE", "missing.json"]])
def test_cli_merge_usage_errors(results: dict[str, Path], tmp_path: Path, args: list[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    args = [str(results["avx2"]) if a == "ONE" else a for a in args]
    out = invoke("report", *args, cwd=tmp_path, monkeypatch=monkeypatch)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and out.stderr.strip()


def test_merge_run_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``poolcheck run`` results (no signatures) merge by case: the same suite on two machines
    gives each case once."""
    seeds = ROOT / "cases" / "seeds" / "openvino-maxpool8.yaml"
    paths = []
    for name in ("x", "y"):
        out = invoke("run", str(seeds), "--quiet", "--report-dir", str(tmp_path / name), cwd=tmp_path,
                     monkeypatch=monkeypatch)
        assert out.returncode in (0, 1), out.stdout[-2000:] + out.stderr[-2000:]
        paths.append(tmp_path / name / "result.json")
    one = load(paths[0])
    assert one.extra["fingerprint"]["id"]
    merged = merge_results([(str(p), load(p)) for p in paths])
    assert sorted(c.case_id for c in merged.cases) == sorted(c.case_id for c in one.cases)
    assert [c.verdict for c in merged.cases] == [c.verdict for c in one.cases]


def test_results_without_fingerprints_count_as_one_machine_each(results: dict[str, Path]) -> None:
    """A result written before fingerprints existed: one unknown machine, named after its file."""
    old = load(results["avx512-a"])
    old.extra = {k: v for k, v in old.extra.items() if k not in ("fingerprint", "fingerprints")}
    for case in old.cases:
        case.tags = [t for t in case.tags if not t.startswith("fingerprint:")]
    merged = merge_results([("old.json", old), ("avx2.json", load(results["avx2"]))])
    hosts = sorted(fp["host"] for fp in merged.extra["fingerprints"].values())
    assert hosts == ["hsw-1", "old.json"]
    case = next(k for k in merged.cases if f"signature:{SIG}" in k.tags)
    # the ISA of the old machine is unknown: the note names the host instead
    assert "only-on:planted-pads-swapped: only on old.json (1 of 2 machines)" in case.tags


def test_one_machine_is_one_fingerprint_and_registry_rows_of_peers_not_run_are_left_out(tmp_path: Path) -> None:
    """A ``poolcheck run`` and a ``poolcheck fuzz`` (with the bundled registry) on this machine:
    the run records no peer versions, so the two fingerprints differ, yet they are one machine;
    the fuzz result lists every registry entry of a peer it never ran as a skip row."""
    seeds = ROOT / "cases" / "seeds" / "openvino-maxpool8.yaml"
    out = cli("run", str(seeds), "--quiet", "--report-dir", "run", cwd=tmp_path)
    assert out.returncode in (0, 1), out.stdout[-2000:] + out.stderr[-2000:]
    out = cli("fuzz", "--peers", str(PLANTED / "pads_swapped.py"), "--ops", "maxpool", "--oracles", "peers",
                    "--seed", "1", "--exit-first", "--time-budget", "20s", "--no-progress", "--report", "fz",
                    "--save-cases", "fz/cases", cwd=tmp_path)
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    run, fz = load(tmp_path / "run" / "result.json"), load(tmp_path / "fz" / "result.json")
    assert run.extra["fingerprint"]["id"] != fz.extra["fingerprint"]["id"]
    assert run.extra["fingerprint"]["host"] == fz.extra["fingerprint"]["host"]
    not_run = [c for c in fz.cases if {"known", "skipped"} <= set(c.tags)]
    assert len(not_run) > 10 and not any(k.runner == "planted-pads-swapped" for c in not_run for k in c.checks)

    out = cli("report", "merge", "run/result.json", "fz/result.json", "-f", "json", "-o", "merged.json",
                    cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    merged = json.loads((tmp_path / "merged.json").read_text())
    ((fid, fp),) = merged["extra"]["fingerprints"].items()
    assert fp["packages"]["planted-pads-swapped"] == fz.extra["fingerprint"]["packages"]["planted-pads-swapped"]
    assert [i["fingerprints"] for i in merged["extra"]["merge"]["inputs"]] == [[fid], [fid]]
    assert {t for c in merged["cases"] for t in c["tags"] if t.startswith("fingerprint:")} == {f"fingerprint:{fid}"}
    assert not [c["case_id"] for c in merged["cases"] if {"known", "skipped"} <= set(c["tags"])]
    assert merged["extra"]["merge"]["registry_entries_not_run"] == len(not_run)
    assert len(merged["cases"]) == len(run.cases) + len(fz.cases) - len(not_run)
    assert sum(f"signature:{SIG}" in c["tags"] for c in merged["cases"]) == 1
