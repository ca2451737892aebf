"""A fuzz session reuses what it learnt about a repeated configuration (hypothesis repeats
configurations: its mutations copy one within and across examples, shrinking replays them):
the engines' verdicts always, a repeatable peer's outputs and refusals; a peer's rejections,
crashes and timeouts, and every answer of a peer not marked repeatable, are asked again. Every
finding names the repeat's own case."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from support import AvailablePeer

from poolcheck.engines import numpy_engine
from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.repeats import config_key, peer_key
from poolcheck.fuzz.session import FuzzOptions, Session
from poolcheck.fuzz.strategies import FuzzCase
from poolcheck.peers.base import PeerOutput
from poolcheck.spec import attributes as A
from poolcheck.spec import operators


def _case(seed: int = 0, kernel: int = 2) -> FuzzCase:
    """A fresh case object (own arrays, own attribute dict) for the same content."""
    spec = A.openvino_max_pool([kernel], [1])
    attrs = operators.spell(spec, "MaxPool-14")
    x = (np.arange(8, dtype=np.float32) + seed).reshape(1, 1, 8)
    return FuzzCase("MaxPool-14", attrs, operators.parse("MaxPool-14", attrs), x, {"pattern": "arange", "seed": seed})


class _CountingPeer(AvailablePeer):
    """An in-process peer that answers with the engine's output (plus ``shift``), or raises,
    and records every item it was asked for."""

    def __init__(self, *, repeatable: bool | None, shift: float = 0.0, raises: bool = False) -> None:
        self.name = "counting"
        if repeatable is not None:
            self.repeatable = repeatable
        self.shift = shift
        self.raises = raises
        self.asked: list[Any] = []

    def run(self, spec, x) -> PeerOutput:
        self.asked.append((spec, np.array(x)))
        if self.raises:
            raise ValueError("this accelerator has no pooling")
        values, indices = O.expected_for(numpy_engine, SimpleNamespace(spec=spec, x=np.asarray(x), op=spec.op))[0].values, None
        return PeerOutput(values + self.shift, indices)


def _session(peer: _CountingPeer | None = None, **options: Any) -> Session:
    opts = FuzzOptions(peers=(), isolated=False, **options)
    return Session(opts, [peer] if peer is not None else [])


def test_keys_tell_inputs_apart() -> None:
    a, b = _case(), _case()
    assert config_key(a) == config_key(b) and peer_key(a) == peer_key(b)
    nan_a, nan_b = _case(), _case()
    nan_a.x.reshape(-1)[0] = np.float32("nan")
    nan_b.x.reshape(-1)[0] = -np.float32("nan")  # another NaN: other bytes
    assert peer_key(nan_a) != peer_key(nan_b)
    wide = _case()
    wide.x = wide.x.astype(np.float64)
    assert peer_key(wide) != peer_key(a)
    assert peer_key(_case(kernel=3)) != peer_key(a)
    odd = _case()
    odd.attributes["pads_begin"] = [[0], [0]]  # a spelling poolcheck never writes: still a key of its own
    assert config_key(odd) != config_key(a) and peer_key(odd) == peer_key(a)


def test_a_repeatable_peer_is_asked_once_per_configuration() -> None:
    peer = _CountingPeer(repeatable=True, shift=1.0)
    session = _session(peer)
    first, twin, later = _case(), _case(), _case()
    found = session.check_batch([first, twin])
    found += session.check_batch([later, _case(seed=1)])
    assert len(peer.asked) == 2  # the configuration once, the other seed once
    peer_findings = [f for f in found if f.kind == "peer"]
    assert [f.case for f in peer_findings[:3]] == [first, twin, later]  # each repeat judged as its own case
    assert len({f.signature for f in peer_findings}) == 1
    assert session.progress.peer_status["counting"]["ok"] == 4
    assert session.progress.compared["counting"] == 4


def test_a_peer_not_marked_repeatable_is_asked_every_time() -> None:
    for repeatable in (None, False):
        peer = _CountingPeer(repeatable=repeatable)
        session = _session(peer)
        session.check_batch([_case(), _case()])
        session.check_batch([_case()])
        assert len(peer.asked) == 3


def test_rejections_are_asked_again() -> None:
    peer = _CountingPeer(repeatable=True, raises=True)
    session = _session(peer)
    found = session.check_batch([_case()]) + session.check_batch([_case()])
    assert len(peer.asked) == 2
    assert session.progress.peer_status["counting"]["rejects"] == 2
    assert [f.status for f in found if f.kind == "peer"] == ["rejects", "rejects"]


def test_engine_side_verdicts_are_computed_once_and_rebound() -> None:
    calls: list[str] = []

    def engine(name: str, shift: int) -> SimpleNamespace:
        def max_pool(x, geom, layout, policy):  # shift != 0: an engine off by that everywhere
            calls.append(name)
            values, indices = numpy_engine.max_pool(x, geom, layout, policy)
            return values + shift, indices

        return SimpleNamespace(NAME=name, max_pool=max_pool, avg_pool=numpy_engine.avg_pool)

    session = _session(engine_checks="all", oracles=frozenset({"engines"}))
    session.engine_module = engine("reference", 0)  # type: ignore[assignment]
    session.engines = {"reference": session.engine_module, "broken": engine("broken", 1)}  # type: ignore[dict-item]
    first, twin = _case(), _case()
    found = session.check_batch([first, twin]) + session.check_batch([_case(seed=1)])
    assert calls == ["reference", "broken", "reference", "broken"]  # the repeat reused the first verdicts
    engine_findings = [f for f in found if f.kind == "engine"]
    assert [f.case for f in engine_findings[:2]] == [first, twin]
    assert engine_findings[0].signature == engine_findings[1].signature
    assert engine_findings[0].detail == engine_findings[1].detail
    assert len(engine_findings) == 3


def test_a_diagnosis_is_reused_only_while_its_history_is_unchanged(monkeypatch) -> None:
    made: list[Any] = []
    real = O.diagnose_output

    def counting(*args: Any) -> Any:
        made.append(args[-1])
        return real(*args)

    monkeypatch.setattr(O, "diagnose_output", counting)
    memo = O.DiagnosisMemo()
    case = _case()
    values = O.expected_for(numpy_engine, case)[0].values
    wrong = values.copy()
    wrong.reshape(-1)[0] = np.nan  # a NaN where the reference has a number
    first = memo(numpy_engine, case.spec, case.x, wrong, None, {})
    assert memo(numpy_engine, case.spec, _case().x, wrong.copy(), None, {}) is first
    assert first == real(numpy_engine, case.spec, case.x, wrong, None, {})
    memo(numpy_engine, case.spec, case.x, wrong, None, {"nan=ignore": 1})  # the history moved
    other = wrong.copy()
    other.reshape(-1)[1] = 0
    memo(numpy_engine, case.spec, case.x, other, None, {})  # another output
    assert len(made) == 3


def test_a_full_cache_never_evicts_what_the_batch_holds(monkeypatch) -> None:
    """A repeat of the oldest entry, then new configurations that fill the caches past their
    bound in the same batch: each configuration still gets its own verdict and peer result (the
    batch once raised KeyError at --batch 64: the repeat was evicted before it was judged)."""
    from poolcheck.fuzz import session as S

    monkeypatch.setattr(S, "ENGINE_SIDE_CACHE", 2)
    monkeypatch.setattr(S, "PEER_RESULTS_CACHE", 2)
    peer = _CountingPeer(repeatable=True)
    session = _session(peer, engine_checks="all")
    session.check_batch([_case(seed=0), _case(seed=1)])
    batch = [_case(seed=0), *(_case(seed=s) for s in range(2, 6))]
    session.check_batch(batch)
    assert session.progress.peer_status["counting"]["ok"] == 7
    assert len(peer.asked) == 6  # seed 0 answered once, from the cache the second time
