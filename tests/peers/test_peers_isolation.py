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
from poolcheck.peers.isolation import PIPE_BUFFER, _worker_for, submit_peer_many
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
