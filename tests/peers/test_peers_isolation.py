"""Isolation: a peer that raises, crashes (os._exit, segfault) or hangs is recorded as
rejects / crash / timeout, its worker is restarted, and the run goes on."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from support import AvailablePeer

from poolcheck.api import run_spec
from poolcheck.peers import PeerOutput, call_peer, call_peer_many, resolve_peer
from poolcheck.peers.isolation import (
    PIPE_BUFFER,
    PeerWorker,
    _worker_for,
    close_workers,
    start_workers,
    submit_peer_many,
)
from poolcheck.spec import attributes as A

# The kernel size picks the misbehaviour; anything else delegates to poolcheck.
MISBEHAVING = textwrap.dedent(
    """
    import ctypes, os, resource, time
    import poolcheck

    def max_pool(x, kernel, strides, pads_begin=None, pads_end=None, dilations=None,
                 rounding_type="floor", auto_pad="explicit", axis=0, index_element_type="i64"):
        k = kernel[0]
        if k == 2:
            raise ValueError("kernel 2 is not supported by this accelerator")
        if k == 3:
            os._exit(3)
        if k == 4:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file
            ctypes.string_at(0)  # segmentation fault
        if k == 5:
            time.sleep(600)
        return poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations,
                                  rounding_type, auto_pad, axis, index_element_type)
    """
)

X = np.arange(12, dtype=np.float32).reshape(1, 1, 12)
GOOD = A.openvino_max_pool([1], [2])
RAISES = A.openvino_max_pool([2], [1])
EXITS = A.openvino_max_pool([3], [1])
SEGFAULTS = A.openvino_max_pool([4], [1])
HANGS = A.openvino_max_pool([5], [1])


@pytest.fixture
def peer(tmp_path: Path):
    path = tmp_path / "flaky_peer.py"
    path.write_text(MISBEHAVING)
    peer = resolve_peer(str(path))
    yield peer
    _worker_for(peer).stop()


def _assert_good(result) -> None:
    assert result.status == "ok", result.verdict
    np.testing.assert_array_equal(result.output.values, run_spec(GOOD, X)[0])


def test_raising_peer_rejects(peer) -> None:
    result = call_peer(peer, RAISES, X, timeout=60)
    assert result.status == "rejects"
    assert result.verdict == "rejects: ValueError: kernel 2 is not supported by this accelerator"
    # The same in process.
    assert call_peer(peer, RAISES, X, isolated=False).verdict == result.verdict


def test_exiting_peer_is_a_crash_and_the_worker_restarts(peer) -> None:
    _assert_good(call_peer(peer, GOOD, X, timeout=60))
    worker = _worker_for(peer)
    result = call_peer(peer, EXITS, X, timeout=60)
    assert result.status == "crash" and "exited with code 3" in result.message
    _assert_good(call_peer(peer, GOOD, X, timeout=60))
    assert worker.restarts == 1


def test_segfaulting_peer_is_a_crash(peer) -> None:
    result = call_peer(peer, SEGFAULTS, X, timeout=60)
    assert result.status == "crash" and "SIGSEGV" in result.message
    _assert_good(call_peer(peer, GOOD, X, timeout=60))


def test_hanging_peer_times_out(peer) -> None:
    _assert_good(call_peer(peer, GOOD, X, timeout=60))  # warm: the timeout covers the call only
    result = call_peer(peer, HANGS, X, timeout=1.0)
    assert result.status == "timeout" and "no answer within 1 s" in result.message
    _assert_good(call_peer(peer, GOOD, X, timeout=60))


def test_batch_pins_each_failure_on_its_item(peer) -> None:
    items = [(GOOD, X), (EXITS, X), (RAISES, X), (HANGS, X), (GOOD, X), (A.openvino_avg_pool([2], [2]), X)]
    results = call_peer_many(peer, items, timeout=2.0)
    assert [r.status for r in results] == ["ok", "crash", "rejects", "timeout", "ok", "declined"]
    _assert_good(results[0])
    _assert_good(results[4])


def test_submitted_batch_runs_while_the_caller_works_and_pins_failures(peer) -> None:
    items = [(GOOD, X), (EXITS, X), (RAISES, X), (HANGS, X), (GOOD, X), (A.openvino_avg_pool([2], [2]), X)]
    answer = submit_peer_many(peer, items, timeout=2.0)
    results = answer()
    assert [r.status for r in results] == ["ok", "crash", "rejects", "timeout", "ok", "declined"]
    _assert_good(results[0])
    _assert_good(results[4])


def test_submitted_timeout_counts_from_the_submission(peer) -> None:
    _assert_good(call_peer(peer, GOOD, X, timeout=60))  # warm
    answer = submit_peer_many(peer, [(HANGS, X)], timeout=1.0)
    time.sleep(1.2)  # the caller's own work outlasts the timeout: no second second of waiting
    started = time.monotonic()
    (result,) = answer()
    assert result.status == "timeout" and "no answer within 1 s" in result.message
    assert time.monotonic() - started < 0.9
    _assert_good(call_peer(peer, GOOD, X, timeout=60))


def test_an_uncollected_answer_never_reaches_the_next_call(peer) -> None:
    other = A.openvino_max_pool([1], [3])
    submit_peer_many(peer, [(GOOD, X)], timeout=60)  # its caller raised: never collected
    (result,) = call_peer_many(peer, [(other, X)], timeout=60)
    assert result.status == "ok"
    np.testing.assert_array_equal(result.output.values, run_spec(other, X)[0])
    assert _worker_for(peer).restarts == 0


def test_an_answer_interrupted_while_due_never_reaches_the_next_call(peer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C or SIGTERM while a batch's answer is due (a campaign stopping mid-call), then one
    more question (its regrouping asks the peer as it stops): the answer is to that question, not
    the interrupted batch's (which once read as two answers to one item: "too many values to
    unpack")."""
    _assert_good(call_peer(peer, GOOD, X, timeout=60))  # warm
    worker = _worker_for(peer)
    conn = worker._conn
    assert conn is not None
    monkeypatch.setattr(type(conn), "poll", lambda self, timeout=0.0: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        call_peer_many(peer, [(GOOD, X), (GOOD, X)], timeout=60)
    monkeypatch.undo()
    other = A.openvino_max_pool([1], [3])
    results = call_peer_many(peer, [(other, X)], timeout=60)
    assert len(results) == 1 and results[0].status == "ok", results
    np.testing.assert_array_equal(results[0].output.values, run_spec(other, X)[0])


def test_a_batch_longer_than_the_pipe_buffer_is_answered_and_pins_failures(peer) -> None:
    """A batch pickled longer than PIPE_BUFFER is written by a thread while the caller goes on:
    its answers, a crash inside it, and an uncollected one are handled as a short batch's."""
    big = np.arange(40_000, dtype=np.float32).reshape(1, 1, 40_000)  # 160 kB per item
    assert big.nbytes > PIPE_BUFFER
    answer = submit_peer_many(peer, [(GOOD, big), (EXITS, big), (GOOD, X)], timeout=60)
    results = answer()
    assert [r.status for r in results] == ["ok", "crash", "ok"]
    np.testing.assert_array_equal(results[0].output.values, run_spec(GOOD, big)[0])
    _assert_good(results[2])
    submit_peer_many(peer, [(GOOD, big)], timeout=60)  # its caller raised: never collected
    (result,) = call_peer_many(peer, [(GOOD, X)], timeout=60)
    _assert_good(result)


def test_in_process_submission_runs_when_collected() -> None:
    answer = submit_peer_many(_Doubler(), [(GOOD, X)], isolated=False)
    (result,) = answer()
    assert result.status == "ok"
    np.testing.assert_array_equal(result.output.values, X * 2)


class _Unavailable:
    """A peer object (not a named plugin): isolated calls pickle it into the worker."""

    name = "not_here"

    def available(self) -> tuple[bool, str]:
        return False, "the accelerator driver is not loaded"

    def version(self) -> str | None:
        return None

    def supports(self, spec, shape, dtype) -> tuple[bool, str]:
        raise AssertionError("supports() must not run on an unavailable peer")

    def run(self, spec, x) -> PeerOutput:
        raise AssertionError("run() must not run on an unavailable peer")


class _Doubler:
    """A picklable object peer with a batched entry point."""

    name = "doubler"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def version(self) -> str | None:
        return "2"

    def supports(self, spec, shape, dtype) -> tuple[bool, str]:
        return (spec.op == "max", "max only")

    def run(self, spec, x) -> PeerOutput:
        return PeerOutput(np.asarray(x) * 2)

    def run_many(self, items):
        return [self.run(spec, x) for spec, x in items]


def test_unavailable_peer_is_never_called() -> None:
    for isolated in (False, True):
        result = call_peer(_Unavailable(), GOOD, X, isolated=isolated, timeout=60)
        assert result.status == "unavailable" and "driver is not loaded" in result.message


def test_object_peer_runs_isolated_by_pickling() -> None:
    peer = _Doubler()
    try:
        results = call_peer_many(peer, [(GOOD, X), (A.openvino_avg_pool([2], [2]), X)], timeout=60)
        assert [r.status for r in results] == ["ok", "declined"]
        np.testing.assert_array_equal(results[0].output.values, X * 2)
        assert results[1].message == "max only"
    finally:
        _worker_for(peer).stop()


def test_worker_for_unpicklable_peer_reports_unavailable() -> None:
    peer = _Doubler()
    peer.run = lambda spec, x: PeerOutput(x)  # a lambda cannot be pickled for the worker
    result = call_peer(peer, GOOD, X, timeout=60)
    assert result.status == "unavailable" and "cannot start a worker" in result.message
    _worker_for(peer).stop()


def test_a_peer_that_cannot_load_in_the_worker_fails_fast(tmp_path: Path) -> None:
    path = tmp_path / "moody_peer.py"
    path.write_text(MISBEHAVING)
    peer = resolve_peer(str(path))
    path.unlink()  # the worker re-imports by path, and finds nothing
    try:
        first = call_peer(peer, GOOD, X, timeout=60)
        assert first.status == "unavailable" and "no such file" in first.message
        worker = _worker_for(peer)
        again = call_peer_many(peer, [(GOOD, X), (GOOD, X)], timeout=60)
        assert [r.message for r in again] == [first.message] * 2
        assert worker.starts == 1
    finally:
        _worker_for(peer).stop()


class _SlowToImport(AvailablePeer):
    """A peer whose runtime takes 1.5 s to import (as torch and its exporter take about 1.8 s)
    and answers at once afterwards."""

    name = "slow-to-import"

    def __init__(self) -> None:
        self.loaded = False

    def load_runtime(self) -> None:
        time.sleep(1.5)
        self.loaded = True

    def run(self, spec: object, x: np.ndarray) -> PeerOutput:
        if not self.loaded:  # imported on first use, as a runtime adapter does without the hook
            self.load_runtime()
        values, indices = run_spec(spec, x)
        return PeerOutput(values, indices)


def test_a_runtimes_import_is_loading_time_not_the_first_calls() -> None:
    """The worker imports the runtime while loading (load_runtime), so a 0.5 s peer timeout
    times the answer: the first call is 'ok', where it was a 'timeout' (with a violation's
    weight) spent importing."""
    spec = A.onnx_max_pool([2], [1], [0, 0], None, 0, "NOTSET", 0)
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 6)
    (result,) = call_peer_many(_SlowToImport(), [(spec, x)], isolated=True, timeout=0.5)
    assert result.status == "ok", result


class _Rendezvous(AvailablePeer):
    """A peer that loads only while its sibling's worker is loading too: each leaves a mark in
    ``folder`` and waits (at most 20 s) for the other's. Loaded alone (one worker started after
    the other was ready), it rejects every call."""

    def __init__(self, name: str, sibling: str, folder: str) -> None:
        self.name, self.sibling, self.folder = name, sibling, folder
        self.met = False

    def load_runtime(self) -> None:
        (Path(self.folder) / self.name).touch()
        deadline = time.monotonic() + 20.0
        while not (Path(self.folder) / self.sibling).exists():
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
        self.met = True

    def run(self, spec: object, x: np.ndarray) -> PeerOutput:
        if not self.met:
            raise RuntimeError(f"{self.name} loaded alone: {self.sibling} never started beside it")
        return PeerOutput(*run_spec(spec, x))


def test_start_workers_loads_the_peers_side_by_side_and_once(tmp_path: Path) -> None:
    """Every worker is launched before any is waited for: two peers that each load only while
    the other loads both answer (started one at a time, at each first call, the first waits for
    the second in vain). Workers already running are left alone."""
    peers = [_Rendezvous("left", "right", str(tmp_path)), _Rendezvous("right", "left", str(tmp_path))]
    try:
        start_workers(peers)
        assert [_worker_for(p).starts for p in peers] == [1, 1]
        for p in peers:
            _assert_good(call_peer(p, GOOD, X, timeout=60))
        start_workers(peers)
        assert [_worker_for(p).starts for p in peers] == [1, 1]
    finally:
        for p in peers:
            _worker_for(p).stop()


def test_a_worker_that_fails_to_start_among_others_fails_at_its_first_call_as_alone(tmp_path: Path) -> None:
    """start_workers never raises for one peer: the one whose worker cannot load keeps its
    failure, which its first call reports as it would have started alone; the others run."""
    path = tmp_path / "moody_peer.py"
    path.write_text(MISBEHAVING)
    moody = resolve_peer(str(path))
    path.unlink()  # the worker re-imports by path, and finds nothing
    good = _Doubler()
    try:
        start_workers([moody, good])
        first = call_peer(moody, GOOD, X, timeout=60)
        assert first.status == "unavailable" and "no such file" in first.message
        assert _worker_for(moody).starts == 1
        result = call_peer(good, GOOD, X, timeout=60)
        assert result.status == "ok"
        np.testing.assert_array_equal(result.output.values, X * 2)
    finally:
        _worker_for(moody).stop()
        _worker_for(good).stop()


def test_start_workers_interrupted_stops_the_ones_still_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the workers load: those not yet ready are stopped (a launched worker's first
    message is its boot, which a call would read as its answer), and a later call starts its
    peer afresh and is answered."""
    first, second = _Doubler(), _Doubler()
    second.name = "doubler-2"
    waited: list[PeerWorker] = []
    real = PeerWorker._await_ready

    def interrupted(self: PeerWorker) -> None:
        waited.append(self)
        if len(waited) == 1:
            real(self)
            return
        raise KeyboardInterrupt

    monkeypatch.setattr(PeerWorker, "_await_ready", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            start_workers([first, second])
        assert waited == [_worker_for(first), _worker_for(second)]
        assert _worker_for(first).alive and not _worker_for(second).alive
        monkeypatch.setattr(PeerWorker, "_await_ready", real)
        for peer in (first, second):
            result = call_peer(peer, GOOD, X, timeout=60)
            assert result.status == "ok", result.message
            np.testing.assert_array_equal(result.output.values, X * 2)
        assert [_worker_for(p).starts for p in (first, second)] == [1, 2]
    finally:
        _worker_for(first).stop()
        _worker_for(second).stop()


def test_a_run_and_a_campaign_load_their_peers_side_by_side(tmp_path: Path) -> None:
    """``poolcheck run``'s peer checks and a fuzz campaign start every peer's worker before they
    call one: the two rendezvous peers, which load only beside each other, answer in both."""
    from poolcheck.cases.model import Case
    from poolcheck.fuzz.campaign import run_campaign
    from poolcheck.fuzz.session import FuzzOptions, Session
    from poolcheck.runner import peer_checks

    def pair(where: Path) -> list[_Rendezvous]:
        where.mkdir()
        return [_Rendezvous("left", "right", str(where)), _Rendezvous("right", "left", str(where))]

    peers = pair(tmp_path / "run")
    case = Case(id="c", op="MaxPool-1", convention="openvino", spec=GOOD, attributes={}, dtype=X.dtype, input=X,
                expected={})
    try:
        checks = peer_checks([case], peers, timeout=60)["c"]
        assert [(c.runner, c.verdict) for c in checks] == [("left", "pass"), ("right", "pass")], checks
    finally:
        for p in peers:
            _worker_for(p).stop()

    def answered_by_both(status: dict) -> None:
        assert set(status) == {"left", "right"}, status
        assert all(s.get("ok", 0) > 0 and set(s) <= {"ok", "declined"} for s in status.values()), status

    # a campaign (its workers serve the registry's re-check, then the session), and a session on
    # its own (a --jobs process's or a cluster shard's, which starts its own workers)
    for where in ("campaign", "session"):
        peers = pair(tmp_path / where)
        options = FuzzOptions(ops=("max",), ranks=(3,), dtypes=("float32",), peers=tuple(peers), max_examples=1,
                              seed=1, shrink=False, database=str(tmp_path / where / "db"))
        try:
            if where == "campaign":
                campaign = run_campaign(options, known_paths=(), save_dir=tmp_path / "finds")
                answered_by_both({p: dict(c) for p, c in campaign.result.fuzz.peer_status.items()})
            else:
                answered_by_both({p: dict(c) for p, c in Session(options, peers, max_examples=1).run().progress.peer_status.items()})
        finally:
            for p in peers:
                _worker_for(p).stop()


def test_close_workers_tells_every_worker_before_waiting_for_any(monkeypatch: pytest.MonkeyPatch) -> None:
    """At exit every worker is told to stop first, then each is waited for within one shared grace
    period: a runtime's teardown outlasting the grace no longer costs it once per worker."""
    first, second = _Doubler(), _Doubler()
    second.name = "doubler-2"
    start_workers([first, second])
    workers = [_worker_for(first), _worker_for(second)]
    processes = [w._proc for w in workers]
    steps: list[tuple[str, PeerWorker]] = []
    ask, wait = PeerWorker._ask_to_stop, PeerWorker._await_stop

    def asked(self: PeerWorker) -> None:
        steps.append(("ask", self))
        ask(self)

    def waited(self: PeerWorker, grace: float) -> None:
        steps.append(("wait", self))
        wait(self, grace)

    monkeypatch.setattr(PeerWorker, "_ask_to_stop", asked)
    monkeypatch.setattr(PeerWorker, "_await_stop", waited)
    close_workers()
    mine = [(what, w) for what, w in steps if w in workers]
    assert [what for what, _ in mine] == ["ask", "ask", "wait", "wait"]
    assert {w for _, w in mine} == set(workers)
    assert all(p is not None and not p.is_alive() for p in processes)
    assert all(not w.alive for w in workers)


class _RunTogether(AvailablePeer):
    """A peer that answers a batch only while its sibling computes one of the same kind
    (MaxPool/AveragePool or the rest of the family): each call leaves a mark in ``folder`` and
    waits (at most 20 s) for the other's. Asked alone, it rejects."""

    family_ops = ("global_max",)

    def __init__(self, name: str, sibling: str, folder: str) -> None:
        self.name, self.sibling, self.folder = name, sibling, folder

    def run(self, spec: object, x: np.ndarray) -> PeerOutput:
        from poolcheck.api_family import run_family
        from poolcheck.spec.family import FamilySpec

        kind = "family" if isinstance(spec, FamilySpec) else "pooling"
        (Path(self.folder) / f"{self.name}.{kind}").touch()
        deadline = time.monotonic() + 20.0
        while not (Path(self.folder) / f"{self.sibling}.{kind}").exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} computed its {kind} batch alone")
            time.sleep(0.01)
        return PeerOutput(*(run_family(spec, x) if kind == "family" else run_spec(spec, x)))


def test_a_runs_peers_compute_their_batches_at_once(tmp_path: Path) -> None:
    """``poolcheck run``'s peer checks hand every peer its batch before judging any answer: two
    peers that each answer only while the other computes too both pass, on a MaxPool case and on
    a GlobalMaxPool case (one call after another, the first asked waits for the second in vain)."""
    from poolcheck.cases.model import Case
    from poolcheck.runner import peer_checks
    from poolcheck.spec.operators import parse

    x4 = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    cases = [Case(id="max", op="MaxPool-1", convention="openvino", spec=GOOD, attributes={}, dtype=X.dtype,
                  input=X, expected={}),
             Case(id="global", op="GlobalMaxPool-1", convention="onnx", spec=parse("GlobalMaxPool-1", {}),
                  attributes={}, dtype=x4.dtype, input=x4, expected={})]
    peers = [_RunTogether("left", "right", str(tmp_path)), _RunTogether("right", "left", str(tmp_path))]
    try:
        checks = peer_checks(cases, peers, timeout=60)
        for case in cases:
            assert [(c.runner, c.verdict) for c in checks[case.id]] == [("left", "pass"), ("right", "pass")], \
                checks[case.id]
    finally:
        for p in peers:
            _worker_for(p).stop()


def test_the_registry_recheck_hands_every_peer_its_entries_at_once(tmp_path: Path) -> None:
    """A campaign's re-check of the registry hands each peer its entries before it judges any
    answer: two peers that answer only while the other computes both agree with the reference on
    a MaxPool/AveragePool entry and on a family one (so both read as fixed upstream); one call
    after another, the first asked rejects them."""
    from dataclasses import replace

    from support import ROOT

    from poolcheck.fuzz.campaign import recheck_known
    from poolcheck.fuzz.known import known_entries
    from poolcheck.results import KnownState
    from poolcheck.spec.family import FamilySpec

    entries, _ = known_entries([ROOT / "cases" / "known"])
    pooling = next(e for e in entries if e.peer and not isinstance(e.case.spec, FamilySpec))
    family = next(e for e in entries if e.peer and isinstance(e.case.spec, FamilySpec) and e.case.spec.op != "unpool")
    peers = [_RunTogether("left", "right", str(tmp_path)), _RunTogether("right", "left", str(tmp_path))]
    for p in peers:
        p.family_ops = (family.case.spec.op,)
    mine = [replace(e, peer=p.name, signature=e.signature.replace(f"|{e.peer}|", f"|{p.name}|"))
            for p in peers for e in (pooling, family)]
    try:
        checks = recheck_known(mine, peers, timeout=60)
        assert [(k.entry.peer, k.state) for k in checks] == [(p.name, KnownState.FIXED) for p in peers for _ in "pf"], \
            [(k.entry.peer, k.state, k.message) for k in checks]
    finally:
        for p in peers:
            _worker_for(p).stop()


class _Faithful(AvailablePeer):
    name = "faithful"

    def run(self, spec: object, x: np.ndarray) -> PeerOutput:
        return PeerOutput(*run_spec(spec, x))


def test_a_peer_named_twice_in_a_run_is_asked_once_at_a_time() -> None:
    """One worker serves both entries of a peer listed twice: its batches are asked one after the
    other (two at once, the second would take the first's answer), and both sets of checks pass."""
    from poolcheck.cases.model import Case
    from poolcheck.runner import peer_checks

    peer = _Faithful()
    case = Case(id="c", op="MaxPool-1", convention="openvino", spec=GOOD, attributes={}, dtype=X.dtype, input=X,
                expected={})
    try:
        checks = peer_checks([case], [peer, peer], timeout=60)["c"]
        assert [(c.runner, c.verdict) for c in checks] == [("faithful", "pass")] * 2, checks
    finally:
        _worker_for(peer).stop()


def test_an_audit_loads_and_runs_its_peers_side_by_side(tmp_path: Path) -> None:
    """``poolcheck audit`` starts every peer's worker before any is waited for, then hands every
    peer its batch before it judges any answer (judged in the order of the peers, a progress line
    each): peers that load only beside each other, and peers that compute only beside each other,
    pass the model's node (peer by peer, each loaded or asked alone, and fails)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from poolcheck.models.audit import audit_model

    node = helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2], strides=[1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = tmp_path / "one.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]), str(model))
    for kind in (_Rendezvous, _RunTogether):
        where = tmp_path / kind.__name__
        where.mkdir()
        peers = [kind("left", "right", str(where)), kind("right", "left", str(where))]
        phases: list[str] = []
        try:
            audit = audit_model(model, {}, peers, ["numpy"], timeout=60, command="t", replay="t",
                                progress=lambda phase, done, total, seen=phases: seen.append(phase))
        finally:
            for p in peers:
                _worker_for(p).stop()
        checks = [[(c.runner, c.verdict) for c in r.checks if c.runner in ("left", "right")] for r in audit.result.cases]
        assert checks and all(c == [("left", "pass"), ("right", "pass")] for c in checks), (kind, checks)
        assert phases.index("loading 2 peers") < phases.index("running on left") < phases.index("running on right")
