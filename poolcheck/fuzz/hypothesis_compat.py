"""The one place poolcheck touches Hypothesis' private attributes (tests/fuzz/test_hypothesis_compat.py
fails when an upgrade removes one of them):

- ``_hypothesis_internal_add_digest`` on a test function: the key of its example database entries,
  so runs with the same search space share examples whatever the function's source;
- ``_hypothesis_internal_database_key`` on a ``@given`` test: the key its example database
  entries are read under, so a shrinking run replays the example a seeded run saved for it
  (:func:`set_test_database_key`);
- ``KEY.secondary``, the example database key of a test's secondary corpus: examples that once
  failed but are not known to be minimal. Hypothesis replays them and shrinks a failure (an
  entry of the primary corpus that fails is taken as shrunk already: it is reported as it is)
  (:func:`unshrunk_key`);
- ``_hypothesis_internal_use_settings`` on a ``@given`` test: its settings, set again after
  ``@seed`` (which switches the example database off) so a seeded run still replays and keeps finds;
- ``hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS``: the only bound on the time one
  run spends shrinking (five minutes by default);
- ``hypothesis.internal.conjecture.engine.ParetoFront``: the front of target scores a run keeps when
  it has an example database (:func:`no_pareto_front`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import settings

DIGEST_ATTRIBUTE = "_hypothesis_internal_add_digest"
SETTINGS_ATTRIBUTE = "_hypothesis_internal_use_settings"
TEST_KEY_ATTRIBUTE = "_hypothesis_internal_database_key"


def set_database_key(function: Callable[..., Any], digest: bytes) -> None:
    """Key ``function``'s example database entries by ``digest`` (before ``@given`` wraps it)."""
    setattr(function, DIGEST_ATTRIBUTE, digest)


def set_test_database_key(test: Any, key: bytes) -> None:
    """Read and write a ``@given`` test's example database entries under ``key`` exactly (the
    test's own key is a digest of its source, which a caller cannot compute)."""
    setattr(test, TEST_KEY_ATTRIBUTE, key)


def unshrunk_key(key: bytes) -> bytes:
    """The database key under which a test keyed ``key`` finds examples to replay AND shrink."""
    return key + b".secondary"


def keep_database(test: Any, database: Any) -> None:
    """Give a ``@seed``-decorated test its example database back."""
    setattr(test, SETTINGS_ATTRIBUTE, settings(getattr(test, SETTINGS_ATTRIBUTE), database=database))


class _NoFront:
    """A pareto front that keeps nothing (see :func:`no_pareto_front`)."""

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def add(self, _data: Any) -> bool:
        return False

    def on_evict(self, _listener: Any) -> None:
        pass

    def __contains__(self, _data: Any) -> bool:
        return False

    def __len__(self) -> int:
        return 0


@contextlib.contextmanager
def no_pareto_front() -> Iterator[None]:
    """Within the block, a run keeps no pareto front of its ``target()`` scores.

    A run with an example database keeps every example that no other beats on both its size
    and its target score, and compares each new example with a sample of them by their sort keys
    (every choice of both examples, recomputed per comparison). The fuzzer's score (rarity of the
    regions reached) falls as regions fill, so almost every example joins the front: a 20 s
    campaign spent a third of its time there (``docs/fuzzing.md``, "Batches"). The front only
    feeds the ``target`` phase (off in the fuzzer) and the replay of earlier runs' fronts; the
    score still steers the generate phase's mutations, failures are still saved and replayed."""
    from hypothesis.internal.conjecture import engine as conjecture_engine

    old = getattr(conjecture_engine, "ParetoFront", None)
    if old is None:  # a hypothesis without the class: nothing to switch off
        yield
        return
    conjecture_engine.ParetoFront = _NoFront  # type: ignore[assignment,misc]
    try:
        yield
    finally:
        conjecture_engine.ParetoFront = old  # type: ignore[misc]


@contextlib.contextmanager
def shrink_limit(seconds: float) -> Iterator[None]:
    """Bound the time hypothesis spends shrinking in one run, for the duration of that run; when
    shrinking stops early the best reproducer found so far is reported."""
    from hypothesis.internal.conjecture import engine as conjecture_engine

    old = getattr(conjecture_engine, "MAX_SHRINKING_SECONDS", None)
    if old is None:  # a hypothesis without the constant: no limit to set
        yield
        return
    conjecture_engine.MAX_SHRINKING_SECONDS = seconds  # type: ignore[assignment]
    try:
        yield
    finally:
        conjecture_engine.MAX_SHRINKING_SECONDS = old
