"""Where a generated configuration's choices come from: a seeded generator, Hypothesis, or a
recorded list.

The generators of :mod:`poolcheck.fuzz.strategies` and :mod:`poolcheck.fuzz.family` are written
once, against :class:`Choices`: a bounded integer, or one of a tuple (an integer index). Three
sources answer them:

- :class:`SeededChoices` explores. It answers from a PCG64 stream (NumPy's bit generator, whose
  raw stream NumPy keeps stable across releases and platforms), a few hundred nanoseconds a
  choice: a campaign expands a batch of configurations from one seed instead of asking
  Hypothesis for every choice (its bookkeeping cost 0.64-0.86 ms per configuration, more than
  ONNX Runtime took to run it; docs/fuzzing.md, "Generation").
- :class:`DrawnChoices` answers through Hypothesis' ``draw``: one Hypothesis choice per
  :class:`Choices` call, an ``st.integers`` of the same bounds. This is how a divergence is shrunk: the
  choices the seeded run recorded are handed to Hypothesis as a saved example
  (:func:`as_example`), Hypothesis replays them to the same configuration and shrinks from there.
- :class:`ReplayedChoices` replays a recorded list without Hypothesis (the example database's
  earlier finds at the start of a campaign).

Every source records what it answered (:attr:`Choices.record`), so any configuration, however it
was made, carries the choices that make it again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
from hypothesis import reject as hypothesis_reject
from hypothesis import strategies as st
from hypothesis.database import choices_from_bytes, choices_to_bytes

T = TypeVar("T")

#: One recorded choice (``Choices.integer``).
Choice = int


class Rejected(Exception):
    """A generator found its choices make no valid configuration (:meth:`Choices.reject`)."""


class Choices:
    """The choices a generator asks for. Subclasses answer :meth:`_integer`; every answer is appended to :attr:`record` in order."""

    def __init__(self) -> None:
        self.record: list[Choice] = []
        #: Where the choices of the configuration's input begin in :attr:`record` (None: not yet):
        #: what comes before is its geometry (operator, type, shape, attributes).
        self.input_at: int | None = None

    def integer(self, lo: int, hi: int, label: str) -> int:
        """An integer in ``[lo, hi]`` (``label`` names it in Hypothesis' reports)."""
        value = self._integer(lo, hi, label)
        self.record.append(value)
        return value

    def begin_input(self) -> None:
        """The input's choices begin here (the first call of a configuration counts)."""
        if self.input_at is None:
            self.input_at = len(self.record)

    def pick(self, values: Sequence[T], label: str) -> T:
        """One of ``values``; shrinking heads for the first."""
        return values[self.integer(0, len(values) - 1, label)]

    def reject(self) -> None:
        """These choices make no valid configuration: the seeded source draws again,
        Hypothesis discards the example."""
        raise Rejected

    def _integer(self, lo: int, hi: int, label: str) -> int:
        raise NotImplementedError



#: Raw 64-bit words fetched from the bit generator at a time (one NumPy call per block).
_BLOCK = 256


class SeededChoices(Choices):
    """Choices from a PCG64 stream seeded by ``seed``: an integer in ``[lo, hi]`` is
    ``lo + (word * (hi - lo + 1) >> 64)`` of the next raw 64-bit word (every value equally likely
    to within 2^-40 for the ranges the generators use, which stay below 2^24). Depends on the
    seed alone: the same seed gives the same configurations on every machine and NumPy release.
    Each configuration's choices may start with a recorded ``prefix`` (:meth:`restart`), answered
    first, so several configurations share a geometry and differ in their input."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self._bits = np.random.PCG64(seed)
        self._words: list[int] = []
        self._prefix: list[Choice] = []

    def _next(self) -> int:
        if not self._words:
            self._words = self._bits.random_raw(_BLOCK).tolist()[::-1]
        return self._words.pop()

    def _integer(self, lo: int, hi: int, label: str) -> int:
        if self._prefix:
            value = self._prefix.pop()
            if lo <= value <= max(lo, hi):
                return value
            self._prefix = []  # the prefix no longer fits: the rest is drawn afresh
        if hi <= lo:
            return lo
        return lo + (self._next() * (hi - lo + 1) >> 64)

    def restart(self, prefix: Sequence[Choice] = ()) -> None:
        """Start a new record (the next configuration's), answering ``prefix`` first."""
        self.record = []
        self.input_at = None
        self._prefix = list(prefix)[::-1]


class DrawnChoices(Choices):
    """Choices drawn through Hypothesis (inside ``@st.composite`` or ``data.draw``): one
    ``st.integers(lo, hi)`` choice per call."""

    def __init__(self, draw: st.DrawFn) -> None:
        super().__init__()
        self._draw = draw

    def _integer(self, lo: int, hi: int, label: str) -> int:
        return self._draw(_integers(lo, max(lo, hi)), label=label)

    def reject(self) -> None:
        hypothesis_reject()


class ReplayedChoices(Choices):
    """A recorded list answered in order. A value that no longer fits its bounds (a generator
    changed since it was recorded) and every choice past the end are the simplest one (the
    lower bound), as Hypothesis treats a misaligned example."""

    def __init__(self, recorded: Sequence[Choice]) -> None:
        super().__init__()
        self._recorded = list(recorded)
        self._at = 0

    def _take(self) -> Choice | None:
        if self._at >= len(self._recorded):
            return None
        self._at += 1
        return self._recorded[self._at - 1]

    def _integer(self, lo: int, hi: int, label: str) -> int:
        value = self._take()
        return value if isinstance(value, int) and lo <= value <= max(lo, hi) else lo


@functools.cache
def _integers(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)  # built once per bounds: a draw then costs far less



def generated(generate: Callable[[Choices], T], src: Choices) -> T:
    """``generate(src)`` with the choices that made it attached as its ``choices``."""
    start = len(src.record)
    src.input_at = None
    case = generate(src)
    case.choices = tuple(src.record[start:])  # type: ignore[attr-defined]
    case.input_at = None if src.input_at is None else src.input_at - start  # type: ignore[attr-defined]
    return case


def as_example(record: Sequence[Choice]) -> bytes:
    """``record`` as an entry of Hypothesis' example database: the choice sequence a test that
    draws the same generator through :class:`DrawnChoices` replays to the same configuration."""
    return choices_to_bytes(tuple(record))


def from_example(entry: bytes) -> list[Choice] | None:
    """An example database entry's choices (None: not a choice sequence of this kind)."""
    choices: Any = choices_from_bytes(entry)
    if choices is None or not all(isinstance(c, int) and not isinstance(c, bool) for c in choices):
        return None
    return list(choices)
