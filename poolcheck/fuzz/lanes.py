"""Examples in flight to the peers, each peer at its own pace.

An example is judged once every peer has answered it, in the order the examples were made, but
no peer waits for another: each peer's worker takes the oldest example it has not answered as
soon as it is free. A slow peer (a compile per new window) no longer holds the fast ones idle
until it catches up; they run up to ``depth`` examples ahead of it. What is judged, and in which
order, is what a one-example-at-a-time loop judges: the answers are the peers' own, collected
whole before their example is judged.

A worker holds one call at a time (:func:`~poolcheck.peers.isolation.submit_peer_many`), so a
peer is busy from a send until its answer is collected. The caller judging an example calls
:meth:`Lanes.pump` as it goes: the answers already in are collected and their peers handed the
next example at once, so a peer that finishes while an example is judged does not sit idle until
the judgement ends. :meth:`Lanes.drain` collects every answer in flight (shrinking and telling
causes apart ask the peers themselves).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Generic, TypeVar

from poolcheck.peers.base import PeerResult
from poolcheck.peers.isolation import Submitted

__all__ = ["Ask", "Lanes"]

B = TypeVar("B")

#: Seconds of one wait for an answer (a stop request is seen between two).
WAIT_STEP = 0.25

#: Seconds between two looks at the workers from :meth:`Lanes.pump` (a look is a poll of their
#: pipes: tens of microseconds).
PUMP_INTERVAL = 0.002

#: Hand one example to one peer: (peer index, example) -> its answer to come.
Ask = Callable[[int, B], Submitted]


def _given(results: list[PeerResult]) -> Callable[[], list[PeerResult]]:
    return lambda: results


@dataclass
class _Example(Generic[B]):
    batch: B
    sent: list[bool]
    results: list[list[PeerResult] | None]

    def answered(self) -> bool:
        return all(r is not None for r in self.results)


class Lanes(Generic[B]):
    """Examples from :meth:`run`'s iterator, sent to each of ``peers`` peers and given back, in
    order, with all their answers. At most ``depth`` examples are made ahead of the one being
    judged; ``check`` runs at every step (it raises to stop)."""

    def __init__(self, ask: Ask[B], peers: int, depth: int, check: Callable[[], None]) -> None:
        if depth < 1 or peers < 0:
            raise ValueError("lanes need a depth of at least 1")
        self.ask = ask
        self.peers = peers
        self.depth = depth
        self.check = check
        self._held: deque[_Example[B]] = deque()
        #: peer -> the example it computes and its answer to come.
        self._busy: dict[int, tuple[_Example[B], Submitted]] = {}
        self._next_pump = 0.0

    @property
    def in_flight(self) -> int:
        """Examples made and not yet given back."""
        return len(self._held)

    def run(self, batches: Iterator[B]) -> Iterator[tuple[B, list[Callable[[], list[PeerResult]]]]]:
        """Each example of ``batches`` with one answer per peer (call it for the results), in
        order. ``batches`` is read ahead, up to ``depth`` examples."""
        exhausted = False
        while True:
            self.check()
            while not exhausted and len(self._held) < self.depth:
                batch = next(batches, None)
                if batch is None:
                    exhausted = True
                    break
                self._held.append(_Example(batch, [False] * self.peers, [None] * self.peers))
            self._dispatch()
            if not self._held:
                return
            head = self._held[0]
            if head.answered():
                self._held.popleft()
                yield head.batch, [_given(r) for r in head.results if r is not None]
                continue
            self._collect_next()

    def pump(self) -> None:
        """Without waiting: collect the answers that are in and hand each peer so freed the oldest
        example it has not been sent. Called while an example is judged (at most every
        :data:`PUMP_INTERVAL` seconds); what is judged, and in which order, does not change."""
        now = time.monotonic()
        if now < self._next_pump:
            return
        self._next_pump = now + PUMP_INTERVAL
        by_connection = {a.connection: p for p, (_e, a) in self._busy.items() if a.connection is not None}
        if not by_connection:
            return
        ready = wait(list(by_connection), timeout=0)
        for connection in ready:
            self._collect(by_connection[connection])  # type: ignore[index]  # wait gives back what it got
        if ready:
            self._dispatch()

    def drain(self) -> None:
        """Collect every answer in flight (the workers are idle after it)."""
        for peer in list(self._busy):
            self._collect(peer)

    # ------------------------------------------------------------------ inside

    def _dispatch(self) -> None:
        """Every free peer takes the oldest example it has not been sent."""
        for peer in range(self.peers):
            if peer in self._busy:
                continue
            example = next((e for e in self._held if not e.sent[peer]), None)
            if example is not None:
                example.sent[peer] = True
                self._busy[peer] = (example, self.ask(peer, example.batch))

    def _collect(self, peer: int) -> None:
        example, answer = self._busy.pop(peer)
        example.results[peer] = answer()

    def _collect_next(self) -> None:
        """Wait for the first answer to come in and collect it (an answer the call computes,
        or one past its time, is collected at once: the call says what became of it)."""
        assert self._busy, "an example waits on a peer that was never asked"
        at_once = next((p for p, (_e, a) in self._busy.items() if a.connection is None or a.due is None), None)
        if at_once is not None:
            self._collect(at_once)
            return
        by_connection = {a.connection: p for p, (_e, a) in self._busy.items() if a.connection is not None}
        first_due = min(a.due for _e, a in self._busy.values() if a.due is not None)
        # a short wait at a time: the caller's check (a stop request) runs between them
        ready = wait(list(by_connection), timeout=min(WAIT_STEP, max(0.0, first_due - time.monotonic())))
        for connection in ready:
            self._collect(by_connection[connection])  # type: ignore[index]  # wait gives back what it got
        if not ready and time.monotonic() >= first_due:
            # the earliest is late: collecting it ends the wait (a timeout, its worker killed)
            self._collect(min(self._busy, key=lambda p: self._busy[p][1].due or 0.0))
