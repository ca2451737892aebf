"""The one place poolcheck touches Hypothesis' private attributes (tests/fuzz/test_hypothesis_compat.py
fails when an upgrade removes one of them):

- ``_hypothesis_internal_add_digest`` on a test function: the key of its example database entries,
  so runs with the same search space share examples whatever the function's source;
- ``_hypothesis_internal_use_settings`` on a ``@given`` test: its settings, set again after
  ``@seed`` (which switches the example database off) so a seeded run still replays and keeps finds;
- ``hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS``: the only bound on the time one
  run spends shrinking (five minutes by default).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import settings

DIGEST_ATTRIBUTE = "_hypothesis_internal_add_digest"
SETTINGS_ATTRIBUTE = "_hypothesis_internal_use_settings"


def set_database_key(function: Callable[..., Any], digest: bytes) -> None:
    """Key ``function``'s example database entries by ``digest`` (before ``@given`` wraps it)."""
    setattr(function, DIGEST_ATTRIBUTE, digest)


def keep_database(test: Any, database: Any) -> None:
    """Give a ``@seed``-decorated test its example database back."""
    setattr(test, SETTINGS_ATTRIBUTE, settings(getattr(test, SETTINGS_ATTRIBUTE), database=database))


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
