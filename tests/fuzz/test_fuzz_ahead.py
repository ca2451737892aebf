"""The engine side ahead (fuzz/ahead.py): a helper process makes a session's examples and their
engine sides, and nothing judged changes -- not with the helper, not when it fails or dies."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from poolcheck.fuzz import ahead as A
from poolcheck.fuzz import session as S
from poolcheck.fuzz.ahead import Ahead, Plan, reference_engines
from poolcheck.fuzz.repeats import EngineSide
from poolcheck.fuzz.session import FuzzOptions, Session, resolve_peer_list

PLANTED = Path(__file__).resolve().parents[1] / "planted_peers"
PEERS = [str(PLANTED / "axis_ignored.py"), str(PLANTED / "dilations_ignored.py")]
EXAMPLES = 10


def _options(**kw: Any) -> FuzzOptions:
    base: dict[str, Any] = dict(ops=("max", "avg"), ranks=(3, 4), dtypes=("float32", "float16", "int8"),
                                peers=tuple(PEERS), seed=11, shrink=False, peer_timeout=60.0, invalid=True)
    base.update(kw)
    return FuzzOptions(**base)


def _ready(helper: Ahead, index: int, seconds: float = 60.0) -> tuple[list[Any], list[EngineSide]]:
    """Example ``index`` from the helper, waiting for it (the session never waits)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got = helper.take(index)
        if got is not None:
            return got
        assert helper.failure is None, helper.failure
        time.sleep(0.02)
    raise AssertionError(f"the helper did not make example {index} in {seconds} s")


def _same_side(a: EngineSide, b: EngineSide) -> None:
    assert (a.expected is None) == (b.expected is None)
    if a.expected is not None and b.expected is not None:
        (ea, ga), (eb, gb) = a.expected, b.expected
        assert ga == gb
        assert ea.values.dtype == eb.values.dtype and ea.values.tobytes() == eb.values.tobytes()
        assert (ea.indices is None) == (eb.indices is None)
        if ea.indices is not None and eb.indices is not None:
            np.testing.assert_array_equal(ea.indices, eb.indices)
    assert [f.signature for f in a.findings] == [f.signature for f in b.findings]
    assert (a.checks is None) == (b.checks is None)
    assert [f.signature for f in a.checks or []] == [f.signature for f in b.checks or []]
    assert a.regions == b.regions


def test_the_helper_makes_the_examples_and_engine_sides_this_process_makes() -> None:
    opts = _options(max_configs=8)
    plan = Session(opts, [])._plan_ahead
    engine_module, engines = reference_engines(plan.engine)
    generate = plan.generator()
    helper = Ahead(plan)
    try:
        checked = 0
        for index in range(6):
            batch, sides = _ready(helper, index)
            here = plan.example(generate, index)
            assert [c.choices for c in batch] == [c.choices for c in here]
            assert [(c.spec, c.mutation, c.x.dtype, c.x.tobytes()) for c in batch] == \
                [(c.spec, c.mutation, c.x.dtype, c.x.tobytes()) for c in here]
            for a, b in zip(sides, plan.sides(here, engine_module, engines)):
                _same_side(a, b)
                checked += a.checks is not None
        assert checked >= 6  # the engine checks ran where the session runs them
        assert helper.taken == 6
    finally:
        helper.close()
    assert not helper._proc.is_alive()


def _waiting(monkeypatch: pytest.MonkeyPatch, *, kill_after: int | None = None) -> list[Ahead]:
    """Sessions start their helper for any exploration, and take every example from it, waiting
    for it (so a test sees each example come from the helper); with ``kill_after``, the helper is
    killed after that many examples. Returns the helpers started."""
    monkeypatch.setattr(S, "MIN_EXAMPLES", 1)
    started: list[Ahead] = []
    original_init, original_take = Ahead.__init__, Ahead.take

    def init(self: Ahead, plan: Plan, depth: int = A.DEPTH) -> None:
        original_init(self, plan, depth)
        started.append(self)

    def take(self: Ahead, index: int) -> Any:
        if kill_after is not None and self.taken == kill_after and self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5.0)
        end = time.monotonic() + 60.0
        while time.monotonic() < end and self.failure is None:
            got = original_take(self, index)
            if got is not None:
                return got
            time.sleep(0.01)
        return None

    monkeypatch.setattr(Ahead, "__init__", init)
    monkeypatch.setattr(Ahead, "take", take)
    return started


def _campaign(opts: FuzzOptions, *, ahead: bool, plan: Plan | None = None) -> tuple[Any, Session]:
    session = Session(opts, resolve_peer_list(PEERS), max_examples=EXAMPLES, ahead=ahead)
    if plan is not None:
        session._plan_ahead = plan
    return session.run(), session


def _judged(result: Any) -> dict[str, Any]:
    """Everything a campaign judged, without its times."""
    p = result.progress
    return {
        "examples": p.examples, "cases": p.cases, "divergent": dict(p.divergent),
        "compared": dict(p.compared), "status": {k: dict(v) for k, v in p.peer_status.items()},
        "coverage": (p.coverage.as_dict(), p.coverage.declined_dict()),
        "findings": sorted((sig, f.severity, f.text, f.case.spec, f.case.x.tobytes())
                           for sig, f in result.findings.items()),
    }


@pytest.fixture(scope="module")
def alone() -> dict[str, Any]:
    """The campaign judged in this process alone."""
    return _judged(_campaign(_options(), ahead=False)[0])


def test_a_campaign_with_the_helper_judges_what_one_without_it_judges(monkeypatch: pytest.MonkeyPatch,
                                                                      alone: dict[str, Any]) -> None:
    started = _waiting(monkeypatch)
    here: list[Any] = []  # engine sides this process computed
    monkeypatch.setattr(S, "engine_side", lambda case, engine: here.append(case) or A.engine_side(case, engine))
    result, _session = _campaign(_options(), ahead=True)
    assert len(started) == 1 and started[0].taken == EXAMPLES  # every example came from the helper
    assert here == []  # with its engine sides
    assert started[0].failure is None and not started[0]._proc.is_alive()  # and it was ended
    assert _judged(result) == alone
    assert alone["divergent"] and alone["findings"]  # the planted bugs were found: not an empty match
    assert not result.warnings


@pytest.mark.parametrize("how", ["fails", "dies"])
def test_a_helper_that_fails_or_dies_leaves_the_session_to_make_the_rest(how: str, monkeypatch: pytest.MonkeyPatch,
                                                                        alone: dict[str, Any]) -> None:
    started = _waiting(monkeypatch, kill_after=3 if how == "dies" else None)
    plan = Session(_options(), [])._plan_ahead
    if how == "fails":  # the helper cannot even load its engine: it reports the error and ends
        plan = dataclasses.replace(plan, engine="no-such-engine")
    result, _session = _campaign(_options(), ahead=True, plan=plan)
    helper = started[0]
    if how == "dies":  # (what it had sent before it died is still taken)
        assert 3 <= helper.taken <= 3 + A.DEPTH < EXAMPLES
    else:
        assert helper.taken == 0
    assert helper.failure is not None
    assert _judged(result) == alone
    warning = next(w for w in result.warnings if w.startswith("the engine-side helper stopped"))
    assert ("no-such-engine" in warning) if how == "fails" else ("ended" in warning or "gone" in warning)


def test_the_helper_runs_only_when_asked_and_the_exploration_is_long_enough() -> None:
    def helper_started(opts: FuzzOptions, **kw: Any) -> bool:
        session = Session(opts, [], **kw)
        return session.ahead and session._long_enough_for_a_helper()

    opts = _options(peers=())
    assert not helper_started(opts, max_examples=10_000)  # not asked
    assert helper_started(opts, max_examples=A.MIN_EXAMPLES, ahead=True)
    assert not helper_started(opts, max_examples=A.MIN_EXAMPLES - 1, ahead=True)
    assert helper_started(opts, deadline=time.time() + A.MIN_SECONDS + 5, ahead=True)
    assert not helper_started(opts, deadline=time.time() + 2, ahead=True)
    assert not helper_started(opts, ahead=True)  # a round of ROUND_EXAMPLES: short


def test_run_sessions_asks_for_the_helper_where_a_cpu_is_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[bool] = []

    class Recording(Session):
        def __init__(self, *args: Any, ahead: bool = False, **kw: Any) -> None:
            asked.append(ahead)
            super().__init__(*args, ahead=ahead, **kw)

        def run(self) -> Any:
            return None

    monkeypatch.setattr(S, "Session", Recording)
    for cpus, option, want in [(2, None, True), (1, None, False), (8, False, False), (1, True, True)]:
        monkeypatch.setattr(S, "usable_cpus", lambda cpus=cpus: cpus)
        S.run_sessions(_options(peers=(), ahead=option, max_examples=1))
        assert asked.pop() is want, (cpus, option)
