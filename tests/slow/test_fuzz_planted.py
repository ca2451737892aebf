"""The fuzzer against planted-bug peers (tests/planted_peers/): every bug is found, shrunk to a
small case, named by the diagnosis, and written as a case file that replays; the bug-free control
yields nothing; a crashing and a hanging peer are recorded and the run goes on.

Each session is bounded by its example budget and stops at the first shrunk divergence (the time
budget is only a cap against a hang: a 20 s budget ended the bug-free control after 200 of its
400 examples on a loaded machine); none of these tests times anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import PLANTED

from poolcheck.cases import load_file
from poolcheck.engines import get_engine
from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.known import finding_case, fuzz_case_from, write_finding
from poolcheck.fuzz.session import FuzzOptions, SessionResult, run_sessions
from poolcheck.peers.isolation import call_peer_many
from poolcheck.peers.registry import resolve_peer
from poolcheck.results import Severity, Signature
from poolcheck.runner import run_case

#: planted module, ops to fuzz, the class(es) the diagnosis may give. NaN read as -inf agrees with
#: "NaN ignored" and "NaN skipped" wherever a window also holds a number, so a shrunk example may
#: carry any of the three names.
BUGS = [
    ("ceil_torch_as_ceil", ("max", "avg"), ("rounding:ceil_torch->ceil",)),
    ("axis_ignored", ("max",), ("index:axis-ignored",)),
    ("divisor_counts_padding", ("avg",), ("divisor=padded",)),
    ("nan_ignored", ("max",), ("nan=-inf", "nan=ignore", "nan=skip")),
    ("same_swapped", ("max", "avg"), ("same:swapped",)),
    ("pads_swapped", ("max", "avg"), ("pads:swapped",)),
    ("dilations_ignored", ("max",), ("dilations:ignored",)),
    ("empty_window_zero", ("max",), ("empty_max=zero",)),
]


def fuzz(peer: object, ops: tuple[str, ...], **kw: object) -> SessionResult:
    options = FuzzOptions(peers=(peer,), ops=ops, seed=0, isolated=False, oracles=frozenset({"peers"}),
                          exit_first=True, time_budget=600.0, max_examples=3000,
                          fail_on=frozenset(s.value for s in Severity))  # the first find of any weight ends it
    for k, v in kw.items():
        setattr(options, k, v)
    return run_sessions(options)[0]


def _names(f: Any) -> set[str]:
    """Every name a finding offers: its own behaviours, and the explanations that fit its example
    as well (an ambiguous shrunk example: ``dilations=[2]`` on two elements is also swapped pads)."""
    alternatives = {k for alt in f.extra.get("alternatives", ()) for k in alt}
    return {f.atom, *(f.atoms or ()), *alternatives, *(a for c in f.extra.get("also", ()) for a in c.split("+"))}


def assert_found_and_replays(result: SessionResult, peer: Any, classes: tuple[str, ...], tmp_path: Path) -> None:
    # the session keys a finding by its group's first signature; its name is the finding's own
    shrunk = [s for s in result.shrunk if Signature.parse(s).subject == peer.name
              and (_names(result.findings[s]) | {Signature.parse(s).detail}) & set(classes)]
    assert shrunk, sorted(result.findings)
    sig = shrunk[0]
    f = result.findings[sig]
    assert f.case.x.size <= 16, f"not shrunk: {f.case.describe()}"
    # the find as a case file: the engine passes it, the planted peer still diverges the same way
    data = finding_case(f, O.expected_outputs(f), command="test", seed=0)
    assert data is not None
    path = write_finding(tmp_path, data)
    (case,) = load_file(path)
    assert run_case(case, ["numpy"]).verdict == "pass"
    (res,) = call_peer_many(peer, [(case.spec, case.input)], isolated=False)
    engine = get_engine("auto")
    fc = fuzz_case_from(case)
    base, geom = O.expected_for(engine, fc)
    again = O.check_peer(fc, f.subject, res, engine, base, geom)
    # re-diagnosed without the session's tie-breaking history: any of the acceptable names
    assert again is not None and (_names(again) | {again.klass}) & set(classes), again.klass


def _storage_peer() -> Any:
    from planted_peers.storage_order_ignored import StorageOrderIgnored

    return StorageOrderIgnored()


@pytest.mark.parametrize(("module", "ops", "classes"), BUGS, ids=[b[0] for b in BUGS])
def test_planted_bug_is_found_shrunk_and_named(module: str, ops: tuple[str, ...], classes: tuple[str, ...],
                                               tmp_path: Path) -> None:
    peer = resolve_peer(str(PLANTED / f"{module}.py"))
    result = fuzz(peer, ops)
    assert_found_and_replays(result, peer, classes, tmp_path)
    assert all(Signature.parse(s).subject == peer.name for s in result.findings)


def test_storage_order_ignored_peer_object(tmp_path: Path) -> None:
    peer = _storage_peer()
    result = fuzz(peer, ("max",), conventions=("onnx",))
    assert_found_and_replays(result, peer, ("index:storage_order-ignored",), tmp_path)


def test_the_bug_free_control_yields_nothing() -> None:
    result = fuzz(str(PLANTED / "correct.py"), ("max", "avg"), max_examples=400, exit_first=False)
    assert result.progress.examples >= 400
    assert result.progress.compared["planted-correct"] > 400
    assert result.findings == {}


@pytest.mark.slow
def test_a_crashing_peer_is_recorded_and_the_run_goes_on() -> None:
    result = fuzz(str(PLANTED / "crashes.py"), ("avg",), isolated=True, shrink=False, exit_first=False,
                  max_examples=30, time_budget=5.0, peer_timeout=20.0)
    crash = [s for s in result.findings if s.endswith("|crash")]
    assert crash, sorted(result.findings)
    status = result.progress.peer_status["planted-crashes"]
    assert status["crash"] >= 1 and status["ok"] >= 1  # later (and sibling) configurations still ran


@pytest.mark.slow
def test_a_hanging_peer_times_out_and_the_run_goes_on() -> None:
    result = fuzz(str(PLANTED / "hangs.py"), ("max",), isolated=True, shrink=False, exit_first=False,
                  max_examples=60, time_budget=4.0, peer_timeout=1.0, max_configs=2)
    assert any(s.endswith("|timeout") for s in result.findings), sorted(result.findings)
    status = result.progress.peer_status["planted-hangs"]
    assert status["timeout"] >= 1 and status["ok"] >= 1


def test_engine_agrees_on_generated_cases() -> None:
    """Engine-only oracles (C vs NumPy, shape rules, metamorphic) over a short run: the only
    findings are the written shape rules' documented gaps."""
    options = FuzzOptions(peers=(), seed=1, max_examples=150, oracles=frozenset({"engines", "shapes", "metamorphic"}),
                          engine_checks="all", shrink=False)
    result = run_sessions(options)[0]
    kinds = {Signature.parse(s).kind for s in result.findings}
    assert kinds <= {"document"}, sorted(result.findings)
    assert result.progress.cases > 150
    assert np.all([f.explained for f in result.findings.values()])
