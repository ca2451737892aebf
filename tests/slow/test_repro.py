"""Standalone reproducer scripts (``poolcheck repro``): every registry entry's script reproduces its
divergence with the runtime called plainly, and the script's own loop is the text's answer."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from poolcheck.api import run_spec
from poolcheck.cases import load_paths
from poolcheck.cli import app
from poolcheck.corpus import EDGE_DIR, KNOWN_DIR, SEEDS_DIR
from poolcheck.fingerprint import cpu_features
from poolcheck.fuzz.known import known_entries
from poolcheck.repro import reproducer, textbook
from poolcheck.repro.runtimes import spec_index
from poolcheck.spec.dtypes import BFLOAT16, cast, is_numpy_type
from poolcheck.spec.poolspec import PoolSpec
from poolcheck.spec.shape import resolve

#: Runs every script of one runtime in one process (the runtime is imported once), each as
#: ``__main__`` with ``--save OUT.npz``; writes {script: exit status} as JSON.
DRIVER = """
import contextlib, io, json, runpy, sys
jobs_file, results_file = sys.argv[1], sys.argv[2]
results = {}
for script, save in json.loads(open(jobs_file).read()):
    sys.argv = [script, "--save", save]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:
        code = repr(exc)
    said = out.getvalue()
    verdict = [w for w in ("DIVERGES", " raised ", "the written rule gives") if w in said]
    results[script] = [code, verdict[0].strip() if verdict else said[-300:]]
open(results_file, "w").write(json.dumps(results))
"""


def _verdict(entry: Any) -> str:
    """What an entry's script says when the divergence stands."""
    if entry.signature.startswith("document|"):
        return "the written rule gives"
    return "raised" if entry.sig.detail.startswith("rejects") else "DIVERGES"


def _plain_env() -> dict[str, str]:
    """No PYTHONPATH: the scripts must not find poolcheck."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _engine_cases() -> list:
    """The MaxPool/AveragePool cases in NumPy's own types and bfloat16 (the family has no script)."""
    cases, errors = load_paths([KNOWN_DIR, EDGE_DIR, SEEDS_DIR])
    assert not errors
    return [c for c in cases if isinstance(c.spec, PoolSpec) and (is_numpy_type(c.dtype) or c.dtype == BFLOAT16)]


def test_the_scripts_loop_is_the_references_answer() -> None:
    """The loop copied into every script against poolcheck's engine, on every registry, edge and
    seed case it can run (values bit for bit for max, within the loop's own tolerance for
    averages; indices in the text's layout)."""
    checked = 0
    for case in _engine_cases():
        x = np.asarray(case.input)
        geom = resolve(case.spec, x.shape)
        if x.size > 4096 or 0 in geom.output_shape:
            continue
        _same_as_the_engine(case.spec, x, case.id)
        checked += 1
    assert checked > 150


def _same_as_the_engine(spec: PoolSpec, x: np.ndarray, label: str) -> None:
    """The loop (a bfloat16 input held in float32, as the script holds it) against the NumPy engine."""
    geom = resolve(spec, x.shape)
    axes = [(a.size, a.kernel, a.stride, a.dilation, a.pad_begin, a.pad_end, a.out) for a in geom.axes]
    order, modulus = spec_index(spec, x.shape)
    bf16 = x.dtype == BFLOAT16
    v, i, tol = textbook.pool(x.astype(np.float32) if bf16 else x, spec.op, axes, bool(spec.exclude_pad), order,
                              modulus, bfloat16=bf16)
    ref_v, ref_i = run_spec(spec, x, engine="numpy")
    if bf16:
        ref_v = ref_v.astype(np.float32)
    assert not textbook.differences(ref_v, v, tol if spec.op == "avg" else None), label
    if spec.op == "max":
        assert np.array_equal(ref_i, i), label


def test_the_loop_rounds_to_bfloat16_once_as_poolcheck_does() -> None:
    """The script's own rounding (NumPy only, no ml_dtypes) against poolcheck's one rounding from
    float64 (spec.dtypes.cast), bit for bit: ties to even, the double-rounding trap (1 + 2^-8 +
    2^-40 is 1 + 2^-7, not 1.0), subnormals, overflow past the largest value, -0, NaN and inf;
    then random float64 values over the whole range."""
    tricky = [1.0, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -40, 2.0 ** -126, 2.0 ** -133,
              2.0 ** -134, 3 * 2.0 ** -134, 2.0 ** -150, 3.3895313892515355e38, 3.3961775292304957e38,
              3.4e38, 1e39, -0.0, -(1 + 2.0 ** -8), float("nan"), float("inf"), -float("inf"), 0.1, -65504.0]
    rng = np.random.default_rng(0)
    wide = rng.standard_normal(20000) * np.exp2(rng.integers(-140, 128, 20000))
    for values in (np.array(tricky), wide):
        want = cast(values, BFLOAT16).astype(np.float32)
        got = textbook.to_bfloat16(values)
        assert got.dtype == np.float32
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_the_loop_answers_bfloat16_pooling_as_the_engine_does() -> None:
    """Random bfloat16 inputs (averages whose float32 rounding would differ from bfloat16's) through
    the loop and the engine: the same values, bit for bit where they are rounded once."""
    from poolcheck.spec import attributes as A

    rng = np.random.default_rng(1)
    for k in range(40):
        x = cast(rng.standard_normal((2, 2, 5, 4)) * 100, BFLOAT16)
        pads = [int(v) for v in rng.integers(0, 2, 4)]
        if k % 2:
            spec = A.onnx_max_pool([2, 3], [1, 2], pads)
        else:
            spec = A.onnx_average_pool([2, 3], [1, 2], pads, count_include_pad=int(k % 4 == 0))
        _same_as_the_engine(spec, x, f"example {k}")


def test_the_loop_catches_a_planted_difference() -> None:
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 12)
    v, i, _ = textbook.pool(x, "max", [(12, 3, 2, 1, 1, 1, 6)])
    w = v.copy()
    w[0, 0, 2] += 1
    assert textbook.differences(v, w) == [(0, 0, 2)]
    assert i.tolist() == [[[1, 3, 5, 7, 9, 11]]]


def _recorded(case, peer: str, what: str = "values") -> np.ndarray | None:
    """The peer's output the registry recorded (the ``<peer> values: [...]`` or ``<peer> indices:
    [...]`` line of its notes; indices in poolcheck's layout)."""
    for line in case.notes.splitlines():
        m = re.match(rf"^(\S+) {what}: (.*)$", line)
        if m and m.group(1) == peer:
            text = m.group(2).replace("-inf", "-Infinity").replace("inf", "Infinity").replace("nan", "NaN")
            return np.array(json.loads(text), dtype=np.float64)
    return None


@pytest.mark.slow
def test_every_registry_entry_reproduces_with_the_runtime_called_plainly(tmp_path: Path) -> None:
    """Each registry entry's script, run against the installed runtime without poolcheck on the
    path, exits 1 (the divergence stands); where the registry recorded the peer's values, the
    plain call differs from the text's answer at exactly the positions the peer did (the jax
    by-axis entry's first example failed this: the plain call showed one of its two differences)."""
    entries, errors = known_entries([KNOWN_DIR])
    assert not errors and len(entries) > 100
    jobs: dict[str, list[list[str]]] = defaultdict(list)
    meta = {}
    have = cpu_features()
    for e in entries:
        if e.cpu_unmet(have):
            continue  # recorded on a CPU with features this one lacks (cpu: tags): other kernels here
        rep = reproducer(e.case)
        if not all(importlib.util.find_spec(p.split(".")[0]) for p in _needs(rep.script)):
            continue  # that runtime is not installed here
        script = rep.write(tmp_path)[0]
        jobs[rep.runtime.split(":")[0]].append([str(script), str(script.with_suffix(".npz"))])
        meta[str(script)] = e
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    statuses: dict[str, list[object]] = {}
    for runtime, batch in jobs.items():
        jobs_file, results_file = tmp_path / f"{runtime}.jobs.json", tmp_path / f"{runtime}.results.json"
        jobs_file.write_text(json.dumps(batch))
        proc = subprocess.run([sys.executable, str(driver), str(jobs_file), str(results_file)], cwd=tmp_path,
                              env=_plain_env(), capture_output=True, text=True, timeout=1200)
        assert proc.returncode == 0 and results_file.exists(), (runtime, proc.stderr[-2000:])
        statuses.update(json.loads(results_file.read_text()))
    # exit 1, saying DIVERGES, that the runtime raised (a refusal entry), or what the written
    # rule gives beside the runtime (a document entry)
    failures = [f"{Path(s).name}: exit {code}, {said!r} ({meta[s].signature})" for s, (code, said) in statuses.items()
                if code != 1 or said != _verdict(meta[s])]
    assert not failures, "\n".join(failures)
    assert len(statuses) > 100
    moved = []
    for script, e in meta.items():
        recorded = _recorded(e.case, e.peer or "")
        npz = Path(script).with_suffix(".npz")
        if recorded is None or not npz.exists():
            continue
        saved = np.load(npz)
        expected, actual = saved["expected"], saved["actual"]
        if recorded.size == 0 and actual.size == 0:
            continue
        assert actual.shape == recorded.shape, (e.case.id, actual.shape, recorded.shape)
        if actual.shape == expected.shape:
            plain = set(textbook.differences(expected, actual))
            before = set(textbook.differences(expected, recorded.astype(expected.dtype)))
            if plain != before:
                moved.append(f"{e.case.id}: plain call differs at {sorted(plain)}, the peer at {sorted(before)}")
        # indices: the script's in the runtime's own layout, the record's in poolcheck's; the
        # positions where each departs from its expected indices must be the same
        recorded_indices = _recorded(e.case, e.peer or "", "indices")
        if recorded_indices is not None and "actual_indices" in saved and "indices" in e.case.expected:
            documented = np.asarray(e.case.expected["indices"])
            if saved["actual_indices"].shape == saved["expected_indices"].shape == documented.shape:
                plain = set(textbook.differences(saved["expected_indices"], saved["actual_indices"]))
                before = set(textbook.differences(documented, recorded_indices))
                if plain != before:
                    moved.append(f"{e.case.id}: plain indices differ at {sorted(plain)}, the peer's at {sorted(before)}")
    assert not moved, "\n".join(moved)


def _needs(script: str) -> list[str]:
    """The packages a script's docstring says it needs (besides Python and numpy)."""
    line = next(t for t in script.splitlines() if t.startswith("Needs: "))
    listed = line[len("Needs: Python 3, "):].split(";")[0].split(" and ")[0]
    return [p.strip() for p in listed.split(",") if p.strip()]


def _run_script(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(path)], cwd=path.parent, env=_plain_env(), capture_output=True,
                          text=True, timeout=600)


def test_a_bfloat16_refusal_is_the_pools(tmp_path: Path) -> None:
    """The bfloat16 registry entries (ONNX Runtime's missing kernels, OpenVINO's max with indices):
    NumPy has no bfloat16, so the script feeds float32 and the runtime converts in front of the
    pool and behind it. Each script exits 1 with the runtime naming the pool, after checking that
    the conversions alone run; where the runtime refuses the conversion itself (tract knows no
    bfloat16 at all), the script says so and exits 2: that would be no refusal of the pool."""
    entries, errors = known_entries([KNOWN_DIR])
    assert not errors
    bf16 = [e for e in entries if e.case.dtype == BFLOAT16 and "|rejects" in e.signature]
    assert len(bf16) >= 4
    for e in bf16:
        if e.cpu_unmet(cpu_features()):
            continue  # OpenVINO's refusal needs avx512_core (cpu: tag): it computes in f32 elsewhere
        rep = reproducer(e.case)
        if not all(importlib.util.find_spec(p.split(".")[0]) for p in _needs(rep.script)):
            continue
        script = rep.write(tmp_path / e.peer)[0]
        proc = _run_script(script)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "the refusal is the pool's on bfloat16" in proc.stdout, proc.stdout
        assert re.search(r"raised .*(MaxPool|AveragePool)", proc.stdout), proc.stdout
        assert "np.float32" in script.read_text() and "ml_dtypes" not in script.read_text()
    pytest.importorskip("tract")
    case = next(e.case for e in bf16 if e.peer == "onnxruntime")
    script = reproducer(case, "tract").write(tmp_path / "tract")[0]
    proc = _run_script(script)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "refuses bfloat16 itself, not the pool" in proc.stdout, proc.stdout


@pytest.mark.parametrize("runtime", ["torch", "jax", "openvino"])
def test_a_bfloat16_script_computes_where_the_runtime_runs_it(tmp_path: Path, runtime: str) -> None:
    """torch, jax and OpenVINO's average run bfloat16: the script's answer (the loop on float32
    copies, rounded once to bfloat16) agrees with theirs on an average whose float32 rounding
    differs, and exits 0."""
    pytest.importorskip(runtime)
    cases = tmp_path / "bf16.yaml"
    cases.write_text(
        "schema: poolcheck.case/1\ncases:\n  - id: bf16-avg\n    op: AveragePool-22\n"
        "    attributes: {kernel_shape: [3, 3], strides: [1, 2], pads: [1, 1, 1, 1], count_include_pad: 1}\n"
        "    dtype: bfloat16\n    input: [[[[1, 2.5, 3, 0.0078125], [4, 5, 0.0078125, -7], [7, 8, 9.5, 1.25]]]]\n"
        "    expected: {shape: [1, 1, 3, 2]}\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["repro", str(cases), "--runtime", runtime, "-o", str(out)])
    assert result.exit_code == 0 and "0 skipped" in " ".join(result.output.split()), result.output
    proc = _run_script(out / "bf16-avg.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "input (bfloat16, held in float32)" in proc.stdout and "agrees with the text" in proc.stdout


def test_cli_writes_a_script_that_prints_the_sentences_and_exits_1(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["repro", str(KNOWN_DIR / "openvino-onnx.yaml"), "-k", "max-same-clamped-d60ebb",
                                      "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    scripts = sorted(tmp_path.glob("*.py"))
    assert len(scripts) == 1 and scripts[0].with_suffix(".onnx").exists()
    proc = _run_script(scripts[0])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert "openvino-onnx: same:clamped (erratum)" in out
    assert "[ONNX-SAME-PADS]" in out and "[ONNX-PADS]" in out and "greater than or equal to 0" in out
    assert "runtime call: openvino.Core().compile_model(Core().read_model(MODEL), \"CPU\", CONFIG): MaxPool-22" in out
    assert "input (" in out and "expected values" in out and "actual values" in out and "DIVERGES" in out
    text = scripts[0].read_text()
    assert "poolcheck" not in text.split('"""', 2)[2].replace("poolcheck's", "")  # nothing of poolcheck imported


def test_a_script_exits_0_where_the_runtime_agrees(tmp_path: Path) -> None:
    """A seed example ONNX Runtime computes as the text says: the script says so and exits 0."""
    result = CliRunner().invoke(app, ["repro", str(SEEDS_DIR / "onnx-averagepool19.yaml"), "-k",
                                      "onnx-averagepool19-2d-pads", "--runtime", "onnxruntime", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    script = sorted(tmp_path.glob("*.py"))[0]
    proc = _run_script(script)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "agrees with the text" in proc.stdout


def test_cli_errors(tmp_path: Path) -> None:
    missing = CliRunner().invoke(app, ["repro", str(tmp_path / "nope.yaml"), "-o", str(tmp_path)])
    assert missing.exit_code == 2 and "nope.yaml" in missing.output
    nomatch = CliRunner().invoke(app, ["repro", str(KNOWN_DIR / "jax.yaml"), "-k", "zzz", "-o", str(tmp_path)])
    assert nomatch.exit_code == 2 and "-k 'zzz'" in nomatch.output
    # a case with no runtime of its own is skipped, with the reason
    skipped = CliRunner().invoke(app, ["repro", str(EDGE_DIR / "ceil.yaml"), "-k", "edge-ceil-torch-max",
                                       "-o", str(tmp_path)])
    assert skipped.exit_code == 0 and "names no runtime" in skipped.output
    unknown = CliRunner().invoke(app, ["repro", str(EDGE_DIR / "ceil.yaml"), "-k", "edge-ceil-torch-max",
                                       "--runtime", "nosuch_module_xyz", "-o", str(tmp_path)])
    assert unknown.exit_code == 2 and "--runtime" in unknown.output and "nosuch_module_xyz" in unknown.output


def test_audit_names_openvinos_seeded_scan_instead_of_calling_it_a_violation() -> None:
    """A window of -inf, NaN, the lowest float and NaN: OpenVINO's seeded scan keeps its seed's
    index. The run's checks (which the audit makes) name it as the fuzzer does, max=seeded-scan,
    unspecified -- before, 'NaN ignored' was all they replayed, and this window made it a
    violation on some vgg19 nodes and not others."""
    pytest.importorskip("openvino")
    from poolcheck.cases.model import Case
    from poolcheck.peers.openvino_peer import OpenVinoPeer
    from poolcheck.runner import peer_checks
    from poolcheck.spec import attributes as A

    low = np.finfo(np.float32).min
    x = np.array([[[[1.0, 2.0, -np.inf, np.nan], [3.0, 4.0, low, np.nan]]]], dtype=np.float32)
    spec = A.onnx_max_pool([2, 2], [2, 2])
    case = Case(id="w", op="MaxPool-22", convention="onnx", spec=spec, attributes={"kernel_shape": [2, 2],
                "strides": [2, 2]}, dtype=x.dtype, input=x, expected={})
    (check,) = peer_checks([case], [OpenVinoPeer()], timeout=120)["w"]
    assert check.verdict == "fail", check
    assert check.severity == "unspecified" and (check.diagnosis or "").startswith("max=seeded-scan"), check


def test_jax_peer_averages_as_a_plain_reduce_window_call_does() -> None:
    """The registry's first by-axis example: reduce_window called on the input's own layout sums
    the last window to -inf (65504 + 18 overflows in one row only, no NaN); the peer, which ran
    averages on a re-laid-out block, gave NaN there. Now it gives what the plain call gives."""
    jax = pytest.importorskip("jax")
    from jax import lax

    from poolcheck.peers.jax_peer import JaxPeer
    from poolcheck.spec import attributes as A

    jax.config.update("jax_enable_x64", True)
    x = np.array([[[[[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]]],
                   [[[11, 12], [13, 14], [-np.inf, 16], [65504, 18], [19, 20]]]]], dtype=np.float16)
    spec = A.openvino_avg_pool([1, 2, 2], [3, 1, 1], [0, 1, 0], [0, 0, 0], exclude_pad=False)
    zero = np.array(0, dtype=np.float16)
    pads = ((0, 0), (0, 0), (0, 0), (1, 0), (0, 0))
    total = lax.reduce_window(x[:, :, :, :, 0:2], zero, lax.add, (1, 1, 1, 2, 2), (1, 1, 3, 1, 1), pads)
    count = lax.reduce_window(np.pad(np.ones_like(x), pads, constant_values=1), zero, lax.add, (1, 1, 1, 2, 2),
                              (1, 1, 3, 1, 1), ((0, 0),) * 5)
    plain = np.asarray(total / count)
    got = JaxPeer(persistent_cache=False).run(spec, x).values
    assert not np.isnan(plain).any()
    np.testing.assert_array_equal(got, plain)


_PLUGIN = """
import itertools
import math

import numpy as np

{textbook}


def avg_pool(x, kernel, strides, pads_begin, pads_end, exclude_pad, rounding_type, auto_pad):
    axes = [(n, k, s, 1, b, e, (n + b + e - k) // s + 1)
            for n, k, s, b, e in zip(x.shape[2:], kernel, strides, pads_begin, pads_end)]
    return pool(x, "avg", axes, {exclude})[0]
"""


@pytest.mark.parametrize("bug, status", [(True, 1), (False, 0)])
def test_a_plugins_script_imports_the_plugin(tmp_path: Path, bug: bool, status: int) -> None:
    """A pure-NumPy plugin (explicit pads, floor) that counts padding when told to exclude it: its
    script imports the plugin file and exits 1; the faithful plugin's exits 0."""
    import inspect

    body = inspect.getsource(textbook).split('\"\"\"', 2)[2]
    plugin = tmp_path / "kernel.py"
    plugin.write_text(_PLUGIN.format(textbook=body, exclude="not exclude_pad" if bug else "exclude_pad"))
    cases = tmp_path / "case.yaml"
    cases.write_text(
        "schema: poolcheck.case/1\ncases:\n  - id: plugin-divisor\n    op: AvgPool-14\n"
        "    attributes: {kernel: [3], strides: [2], pads_begin: [1], pads_end: [1], exclude_pad: true}\n"
        "    dtype: float32\n    input: [[[1, 2, 3, 4, 5]]]\n    expected: {shape: [1, 1, 3]}\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["repro", str(cases), "--runtime", str(plugin), "-o", str(out)])
    assert result.exit_code == 0, result.output
    script = out / "plugin-divisor.py"
    assert "spec_from_file_location" in script.read_text() and str(plugin) in script.read_text()
    proc = _run_script(script)
    assert proc.returncode == status, proc.stdout + proc.stderr


def test_hostile_case_text_stays_inert_in_the_script(tmp_path: Path) -> None:
    """An id with a path and quotes, a title that tries to end the docstring and run code, a
    class with a terminal escape: the script lands in the output folder under a safe name,
    compiles, runs, and nothing it was fed runs or escapes. (An id cannot hold a line break:
    the loader refuses it; the title carries one.)"""
    evil = 'x/../../evil"""\nimport os; os.system("touch PWNED")  #'
    cases = tmp_path / "hostile.yaml"
    cases.write_text(
        "schema: poolcheck.case/1\ncases:\n  - id: " + json.dumps(evil.replace("\n", "; ")) + "\n    title: " + json.dumps(evil + " \x1b[31m") +
        "\n    op: MaxPool-22\n    attributes: {kernel_shape: [2]}\n    dtype: float32\n"
        "    input: [[[1, 2, 3]]]\n    expected: {shape: [1, 1, 2]}\n"
        "    tags: ['peer:onnxruntime', " + json.dumps("signature:peer|max|onnxruntime|nan=first\x1b[2J") + "]\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["repro", str(cases), "-o", str(out)])
    assert result.exit_code == 0, result.output
    (script,) = out.glob("*.py")
    assert script.parent == out and ".." not in script.name and "/" not in script.name
    compile(script.read_text(), str(script), "exec")
    proc = _run_script(script)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # ONNX Runtime agrees on this input
    assert not (out / "PWNED").exists() and not (tmp_path / "PWNED").exists()
    assert "\x1b" not in proc.stdout
