"""The family's registry entries and their standalone reproducers: the scripts' loops are the
reference's answer, every family entry's script reproduces with the runtime called plainly (and
exits 0 where the runtime agrees), the fuzzer's re-check and ``run --peers`` name each entry's
class."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from poolcheck.api_family import run_family
from poolcheck.cases import load_paths
from poolcheck.corpus import EDGE_DIR, KNOWN_DIR, SEEDS_DIR
from poolcheck.fuzz.campaign import recheck_known
from poolcheck.fuzz.known import known_entries
from poolcheck.peers.base import PeerOutput
from poolcheck.repro import reproducer, textbook, write_reproducers
from poolcheck.repro import textbook_family as loops
from poolcheck.repro.family import family_constants
from poolcheck.results import KnownState, Severity
from poolcheck.runner import peer_checks, run_case
from poolcheck.spec.family import FamilySpec
from tests.support import AvailablePeer, available_peer


def _family_cases() -> list[Any]:
    cases, errors = load_paths([KNOWN_DIR, EDGE_DIR, SEEDS_DIR])
    assert not errors
    return [c for c in cases if isinstance(c.spec, FamilySpec) and c.input.size <= 4096]


def _family_entries() -> list[Any]:
    entries, errors = known_entries([KNOWN_DIR])
    assert not errors
    return [e for e in entries if isinstance(e.case.spec, FamilySpec)]


def _loop(case: Any) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    c = family_constants(case.spec, case.input.shape)
    # the script has textbook.py's window_taps beside the family loops; here they import it
    return loops.family_reference(c["FAMILY_OP"], case.input, case.inputs.get("I"), c["AXES"], c["P"],
                                  c["OUT_SHAPE"], c["OUTS"])


def test_the_family_loops_are_the_references_answer() -> None:
    """On every family case of the corpus: values within the loop's own tolerance (exact for the
    max pools and MaxUnpool), AdaptiveMaxPool's indices equal."""
    checked = set()
    for case in _family_cases():
        values, where, tol = _loop(case)
        ref_values, ref_indices = run_family(case.spec, case.input, indices=case.inputs.get("I"))
        assert values.shape == ref_values.shape, case.id
        assert not textbook.differences(ref_values, values, tol), case.id
        if ref_indices is not None:
            assert where is not None and np.array_equal(ref_indices, where), case.id
        checked.add(case.spec.op)
    assert checked == {"lp", "global_avg", "global_max", "global_lp", "unpool", "adaptive_avg", "adaptive_max"}


def test_the_family_loops_catch_planted_differences() -> None:
    x = np.array([[[-1.0, 2.0, 3.0]]], dtype=np.float32)
    axes = [(3, 2, 1, 1, 0, 0, 2)]
    values, tol = loops.lp_pool(x, axes, 3)
    signed = np.cbrt(np.array([[[7.0, 35.0]]])).astype(np.float32)  # x^3 without |x|
    assert textbook.differences(values, signed, tol) == [(0, 0, 0)]
    unpooled = loops.max_unpool(np.array([[[5.0, 6.0]]], np.float32), np.array([[[1, 1]]]), (1, 1, 3))
    assert unpooled.tolist() == [[[0.0, 6.0, 0.0]]]  # the later write stays
    _, where, _ = loops.adaptive_pool(np.array([[[1.0, 3.0, 3.0, 2.0]]], np.float32), "max", [2])
    assert where.tolist() == [[[1, 2]]]  # bins [0, 2) and [2, 4): the first maximum of each


def _plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run(script: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script)], cwd=script.parent, env=_plain_env(), capture_output=True,
                          text=True, timeout=600)


def test_the_registry_holds_family_entries_of_every_runtime() -> None:
    """Every family entry's script is run with its runtime called plainly (exit 1, DIVERGES or
    "raised") by tests/slow/test_repro.py, with every other registry entry, in one process per
    runtime; here: the family has entries for each runtime it is checked on."""
    assert {e.peer for e in _family_entries()} >= {"torch", "tract", "onnx_reference", "onnxruntime", "openvino"}


def test_a_family_script_exits_0_where_the_runtime_agrees(tmp_path: Path) -> None:
    """The torch lp_pool entry's script on an input without negatives: |x| = x, torch agrees."""
    available_peer("torch")
    entry = next(e for e in _family_entries() if e.peer == "torch")
    case = entry.case
    case.input = np.abs(case.input)
    done = _run(reproducer(case).write(tmp_path)[0])
    assert done.returncode == 0, done.stdout[-1500:]
    assert "agrees with the text" in done.stdout


def test_a_family_script_for_another_runtime_and_its_declines(tmp_path: Path) -> None:
    """``--runtime`` on a family entry: the ONNX model scripts for ONNX Runtime (which agrees on
    the torch entry's LpPool: exit 0); OpenVINO's native opsets have no LpPool (PeerDeclined)."""
    available_peer("onnxruntime")
    entry = next(e for e in _family_entries() if e.peer == "torch")
    rep = reproducer(entry.case, "onnxruntime")
    assert rep.model is not None
    assert _run(rep.write(tmp_path)[0]).returncode == 0
    with pytest.raises(Exception, match="no LpPool"):
        reproducer(entry.case, "openvino")


class _Agreeing(AvailablePeer):
    """A peer taking every family op and answering the reference: every entry is 'fixed' on it."""

    family_ops = ("lp", "global_avg", "global_max", "global_lp", "unpool", "adaptive_avg", "adaptive_max")

    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, spec: Any, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        values, where = run_family(spec, x, indices=indices)
        return PeerOutput(values, where)


def test_the_fuzzers_recheck_names_each_family_entry() -> None:
    entries = _family_entries()
    names = sorted({e.peer for e in entries})
    checks = recheck_known(entries, [available_peer(n) for n in names], isolated=False)
    assert [c.state for c in checks] == [KnownState.REPRODUCES] * len(entries), [c.message for c in checks]
    fixed = recheck_known(entries, [_Agreeing(n) for n in names], isolated=False)
    assert [c.state for c in fixed] == [KnownState.FIXED] * len(entries), [c.message for c in fixed]


def test_run_weighs_a_family_entry_on_its_peer_as_its_class() -> None:
    entry = next(e for e in _family_entries() if e.peer == "torch")
    check = peer_checks([entry.case], [available_peer("torch")], isolated=False)[entry.case.id][0]
    assert check.verdict == "fail" and check.severity == Severity.VIOLATION
    assert (check.diagnosis or "").startswith("lp:no-abs")


class _EndFloor(_Agreeing):
    """AdaptiveAvgPool with bin ends rounded down (floor((j + 1) H / O)): a planted bin bug."""

    def run(self, spec: Any, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        (size,), (out,) = x.shape[2:], spec.output_shape
        bins = [(j * size // out, max((j + 1) * size // out, j * size // out + 1)) for j in range(out)]
        values = np.stack([x[..., a:b].mean(axis=-1) for a, b in bins], axis=-1).astype(x.dtype)
        return PeerOutput(values)


def test_run_names_a_planted_adaptive_bin_bug(tmp_path: Path) -> None:
    from poolcheck.cases.load import load_file

    path = tmp_path / "adaptive.yaml"
    path.write_text("""schema: poolcheck.case/1
cases:
- id: adaptive-5-to-3
  op: AdaptiveAvgPool-8
  attributes: {output_shape: [3]}
  dtype: float32
  input: [[[1.0, 2.0, 4.0, 8.0, 16.0]]]
  expected: {values: [[[1.5, 4.6666667, 12.0]]]}
  tolerance: {rtol: 1.0e-6, atol: 0}
""")
    case = load_file(path)[0]
    assert run_case(case, ["numpy", "c"]).verdict == "pass"  # bins [0, 2), [1, 4), [3, 5)
    check = peer_checks([case], [_EndFloor("end-floor")], isolated=False)[case.id][0]
    assert check.verdict == "fail" and check.severity == Severity.VIOLATION
    assert (check.diagnosis or "").startswith("adaptive:end-floor"), check.diagnosis


def test_a_bfloat16_family_case_is_skipped_not_written(tmp_path: Path) -> None:
    """The family scripts have no bfloat16 path: a script holding np.bfloat16 raised on import
    and exited 1, the status of a standing divergence. ``poolcheck repro`` skips such a case
    with its reason and writes nothing."""
    case_file = tmp_path / "bf16.yaml"
    case_file.write_text(
        "schema: poolcheck.case/1\ncases:\n"
        "- id: bf16-global-max\n  op: GlobalMaxPool-22\n  attributes: {}\n  dtype: bfloat16\n"
        "  input: [[[1.0, 2.0]]]\n  expected: {values: [[[2.0]]], shape: [1, 1, 1]}\n"
        "  tags: ['peer:tract']\n")
    out = tmp_path / "out"
    run = write_reproducers([case_file], out)
    assert run.written == []
    assert [cid for cid, _ in run.skipped] == ["bf16-global-max"]
    assert "bfloat16" in run.skipped[0][1]
    assert not out.exists() or not list(out.glob("*.py"))


def test_the_lp_loops_give_inf_past_the_float64_range_as_the_engine_does() -> None:
    """|x|^p past float64's range: the engine's power is inf and so is the norm; the loops raised
    OverflowError (a script then exited 1 on a traceback)."""
    x = np.array([[[1.7976931348623157e308, 1.0, -2.0]]])
    ref, _ = run_family(FamilySpec(op="global_lp", p=3), x)
    values, _ = loops.global_pool(x, "lp", 3)
    assert np.isinf(ref).all() and np.array_equal(values, ref)
    axes = [(3, 2, 1, 1, 0, 0, 2)]  # size, kernel, stride, dilation, pads, output length
    values, _ = loops.lp_pool(x, axes, 3)
    assert np.isinf(values[0, 0, 0]) and values[0, 0, 1] == np.float64(9.0) ** (1 / 3)


def test_a_jax_family_script_calls_jax_numpy_plainly(tmp_path: Path) -> None:
    """jax's GlobalLpPool (``jnp.linalg.norm(ord=3)`` of each plane) in float16: a plane holding
    -65504 overflows to inf, the script says so (exit 1); on the plane without it jax agrees
    (exit 0). MaxUnpool has no jax function: declined."""
    available_peer("jax")
    plane = (np.arange(43 * 23) % 3).astype(np.float16).reshape(1, 1, 43, 23)
    big = plane.copy()
    big[0, 0, 17, 5] = -65504.0
    for x, status in ((big, 1), (plane, 0)):
        case_file = tmp_path / f"jax-{status}.yaml"
        case_file.write_text(
            "schema: poolcheck.case/1\ncases:\n"
            f"- id: jax-global-lp-{status}\n  op: GlobalLpPool-22\n  attributes: {{p: 3}}\n  dtype: float16\n"
            f"  input: {x.astype(float).tolist()}\n  expected: {{shape: [1, 1, 1, 1]}}\n  tags: ['peer:jax']\n")
        out = tmp_path / f"out-{status}"
        run = write_reproducers([case_file], out, runtime="jax")
        ((_, (script, *_)),) = run.written
        done = _run(script)
        assert done.returncode == status, done.stdout[-1500:] + done.stderr[-1500:]
        assert ("DIVERGES" in done.stdout) == (status == 1)
        assert "jax.numpy.linalg.norm" in script.read_text()
    with pytest.raises(Exception, match="jax has no MaxUnpool"):
        from poolcheck.repro.family import family_runtime_call
        from poolcheck.spec import operators
        family_runtime_call("jax", operators.parse("MaxUnpool-22", {"kernel_shape": [2]}), (1, 1, 2), np.dtype("float32"))
