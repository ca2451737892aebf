"""Examples in flight to the peers (fuzz/lanes.py): each peer at its own pace, every example
given back in order with all its answers, and a campaign with several peers judging exactly
what each peer's campaign alone judges."""

from __future__ import annotations

import threading
import time
from collections import Counter
from multiprocessing import Pipe
from pathlib import Path
from typing import Any

import pytest
from support import cli

from poolcheck.fuzz.lanes import Lanes
from poolcheck.fuzz.session import FuzzOptions, Session, lane_depth, resolve_peer_list, unique_peers
from poolcheck.peers.base import PeerResult
from poolcheck.peers.isolation import Submitted

PLANTED = Path(__file__).resolve().parents[1] / "planted_peers"


class FakePeers:
    """Peers answering each example after ``delays[peer]`` seconds, through a real pipe (what
    the lanes wait on); every ask and every collected answer is logged, in order."""

    def __init__(self, delays: list[float], *, due_in: float = 10.0) -> None:
        self.delays = delays
        self.due_in = due_in
        self.log: list[tuple[str, int, int]] = []
        self._lock = threading.Lock()
        self._open: list[Any] = []  # the sending ends of peers that never answer, kept open

    def ask(self, peer: int, batch: int) -> Submitted:
        with self._lock:
            self.log.append(("ask", peer, batch))
        receiving, sending = Pipe(duplex=False)
        delay = self.delays[peer]
        if delay >= 0:
            threading.Timer(delay, lambda: sending.send((peer, batch))).start()
        else:
            self._open.append(sending)

        def results() -> list[PeerResult]:
            if receiving.poll(max(0.0, due - time.monotonic())):
                got = receiving.recv()
                status = "ok"
            else:
                got, status = (peer, batch), "timeout"
            with self._lock:
                self.log.append(("collect", peer, batch))
            return [PeerResult(status, None, repr(got))]

        due = time.monotonic() + self.due_in
        return Submitted(results, receiving, due)


def _never() -> None:
    pass


def _run(peers: FakePeers, n: int, depth: int) -> list[tuple[int, list[str]]]:
    lanes: Lanes[int] = Lanes(peers.ask, len(peers.delays), depth=depth, check=_never)
    return [(batch, [a()[0].message for a in answers]) for batch, answers in lanes.run(iter(range(n)))]


def test_every_example_comes_back_in_order_with_each_peers_own_answer() -> None:
    peers = FakePeers([0.03, 0.0, 0.01])
    got = _run(peers, 9, depth=4)
    assert [b for b, _ in got] == list(range(9))
    for batch, messages in got:
        assert messages == [repr((p, batch)) for p in range(3)]
    # each peer was asked each example once, in order
    for p in range(3):
        assert [b for kind, q, b in peers.log if kind == "ask" and q == p] == list(range(9))


def test_a_fast_peer_runs_ahead_of_a_slow_one_up_to_the_depth() -> None:
    peers = FakePeers([0.3, 0.0])
    lanes: Lanes[int] = Lanes(peers.ask, 2, depth=4, check=_never)
    made: list[int] = []

    def batches() -> Any:
        for i in range(8):
            made.append(i)
            yield i

    for batch, _answers in lanes.run(batches()):
        assert len(made) - batch <= 4  # never more than the depth made ahead of the one given back
    log = peers.log
    # the fast peer had its fourth example before the slow one answered the first
    assert log.index(("ask", 1, 3)) < log.index(("collect", 0, 0))
    assert ("ask", 1, 4) not in log[:log.index(("collect", 0, 0))]  # but no further than the depth


def test_one_peer_keeps_one_example_in_flight_while_one_is_judged() -> None:
    peers = FakePeers([0.0])
    seen: list[tuple[str, int, int]] = []
    lanes: Lanes[int] = Lanes(peers.ask, 1, depth=lane_depth(1), check=_never)
    for batch, _answers in lanes.run(iter(range(4))):
        seen.append(("judged", 0, batch))
        if batch < 3:
            assert ("ask", 0, batch + 1) in peers.log  # the next one is computing while this is judged
            assert ("ask", 0, batch + 2) not in peers.log


def test_pump_hands_a_peer_that_answered_its_next_example_while_one_is_judged() -> None:
    """While example 0 is judged, the slow peer answers example 1: pump() collects that answer at
    once and sends it example 2 (the lanes would otherwise only see it when the judgement ends);
    with nothing in, it neither waits nor asks; and the examples still come back in order, each
    with every peer's own answer."""
    peers = FakePeers([0.0, 0.15])
    lanes: Lanes[int] = Lanes(peers.ask, 2, depth=4, check=_never)
    got: list[tuple[int, list[str]]] = []
    for batch, answers in lanes.run(iter(range(5))):
        got.append((batch, [a()[0].message for a in answers]))
        if batch == 0:
            assert ("ask", 1, 1) in peers.log and ("ask", 1, 2) not in peers.log
            start = time.monotonic()
            lanes.pump()  # peer 1 still computes example 1: nothing to collect
            assert time.monotonic() - start < 0.05
            assert ("collect", 1, 1) not in peers.log
            time.sleep(0.3)  # peer 1 answers example 1 meanwhile
            lanes.pump()
            assert ("collect", 1, 1) in peers.log and ("ask", 1, 2) in peers.log
            lanes.pump()  # at most every PUMP_INTERVAL, and again nothing waits
    assert got == [(b, [repr((0, b)), repr((1, b))]) for b in range(5)]


def test_an_answer_past_its_time_is_collected_when_due() -> None:
    peers = FakePeers([-1.0, 0.0], due_in=0.4)  # peer 0 never answers
    start = time.monotonic()
    got = _run(peers, 2, depth=2)
    assert [b for b, _ in got] == [0, 1]
    assert time.monotonic() - start >= 0.4
    lanes: Lanes[int] = Lanes(FakePeers([-1.0], due_in=0.2).ask, 1, depth=1, check=_never)
    ((_, answers),) = list(lanes.run(iter([0])))
    assert answers[0]()[0].status == "timeout"


def test_answers_computed_by_their_call_and_an_example_without_peers() -> None:
    calls: list[int] = []

    def ask(peer: int, batch: int) -> Submitted:
        def results() -> list[PeerResult]:
            calls.append(batch)
            return [PeerResult("ok", None, str(batch))]

        return Submitted(results)

    lanes: Lanes[int] = Lanes(ask, 1, depth=3, check=_never)
    assert [b for b, _ in lanes.run(iter(range(5)))] == list(range(5)) and calls == list(range(5))
    none: Lanes[int] = Lanes(ask, 0, depth=3, check=_never)
    assert [(b, a) for b, a in none.run(iter(range(3)))] == [(0, []), (1, []), (2, [])]


def test_drain_collects_every_answer_in_flight_and_a_stop_request_ends_the_run() -> None:
    peers = FakePeers([0.05, 0.1])
    lanes: Lanes[int] = Lanes(peers.ask, 2, depth=4, check=_never)
    run = lanes.run(iter(range(6)))
    next(run)
    lanes.drain()
    asked = {(p, b) for kind, p, b in peers.log if kind == "ask"}
    collected = {(p, b) for kind, p, b in peers.log if kind == "collect"}
    assert asked == collected and len(asked) > 2
    assert [b for b, _ in run] == [1, 2, 3, 4, 5]  # drained answers are kept for their examples

    def stop() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        next(Lanes(peers.ask, 2, depth=2, check=stop).run(iter(range(3))))


def _findings(peers: list[str], **options: Any) -> tuple[dict[str, dict[str, int]], int]:
    opts = FuzzOptions(ops=("max",), ranks=(3, 4), dtypes=("float32",), peers=tuple(peers), seed=5,
                       shrink=False, peer_timeout=60.0, **options)
    session = Session(opts, resolve_peer_list(peers), max_examples=6)
    result = session.run()
    by_peer: dict[str, dict[str, int]] = {}
    for sig, count in result.progress.divergent.items():
        subject = sig.split("|")[2]
        by_peer.setdefault(subject, {})[sig] = count
    return by_peer, result.progress.examples


def test_a_campaign_with_several_peers_judges_what_each_peer_alone_judges() -> None:
    planted = [str(PLANTED / "axis_ignored.py"), str(PLANTED / "dilations_ignored.py")]
    together, examples = _findings(planted)
    assert examples == 6
    names: Counter[str] = Counter()
    for path in planted:
        alone, alone_examples = _findings([path])
        assert alone_examples == 6
        for subject, counts in alone.items():
            if subject.startswith("planted-"):
                assert together[subject] == counts
                names[subject] += 1
    assert len(names) == 2  # both planted bugs were found, alone and together


def test_a_peer_named_twice_is_one_lane_and_the_replay_names_it_once(tmp_path: Path) -> None:
    """`--peers onnxruntime,onnxruntime` made two lanes ask one warm worker at once: each drained
    the other's answer, and each example waited out the peer timeout before its configurations were
    asked again one by one (3 examples took 60 s). A repeat is dropped, from the replay line too."""
    planted = str(PLANTED / "axis_ignored.py")
    r = cli("fuzz", "--no-progress", "--peers", f"{planted},{planted}", "--max-examples", "2", "--no-shrink",
            "--seed", "1", "--peer-timeout", "20s", "--ops", "maxpool", "--dtypes", "float32",
            "--database", str(tmp_path / "db"), "--save-cases", str(tmp_path / "finds"),
            env={"POOLCHECK_DATA_DIR": str(tmp_path / "data")})
    assert r.returncode in (0, 1), r.stdout + r.stderr
    words = " ".join(r.stdout.split())
    assert "timeout" not in words, words
    replay = next(line for line in r.stdout.splitlines() if line.startswith("replay: poolcheck fuzz"))
    assert replay.count("axis_ignored.py") == 1, replay
    _names, peers = unique_peers([planted, planted, "onnxruntime"])
    assert [p.name for p in peers] == ["planted-axis-ignored", "onnxruntime"]
    if not peers[1].available()[0]:
        return  # (the planted part above is the test without ONNX Runtime)
    # a built-in peer named twice shares its warm worker: the case that timed out
    r = cli("fuzz", "--no-progress", "--peers", "onnxruntime,onnxruntime", "--max-examples", "1", "--no-shrink",
            "--seed", "1", "--peer-timeout", "10s", "--ops", "maxpool", "--dtypes", "float32",
            "--database", str(tmp_path / "db2"), env={"POOLCHECK_DATA_DIR": str(tmp_path / "data2")})
    assert r.returncode in (0, 1), r.stdout + r.stderr
    replay = next(line for line in r.stdout.splitlines() if line.startswith("replay: poolcheck fuzz"))
    assert "--peers onnxruntime --" in replay, replay
