"""Hypothesis draws that depend on the seed and the choices alone.

A campaign's examples are expanded from seeds without Hypothesis (:mod:`poolcheck.fuzz.shrinking`);
Hypothesis runs when a divergence is shrunk, and its draws there must not depend on what else is
imported either.

Hypothesis (6.131 and later) draws about one primitive value in twenty from the literals it
finds in the source of every *local* module in ``sys.modules`` (anything outside site-packages
and the standard library; see ``hypothesis.internal.conjecture.providers._get_local_constants``).
For a fuzzer whose replay commands must reproduce anywhere that is wrong: the examples of
``poolcheck fuzz --seed 3`` would change with every module that happens to be imported first
(a peer module the registry imports, a plugin file, a test), with every edited literal, and
between an editable install (poolcheck's own modules are local) and a wheel (they are not).
That is what once made hoisting the registry's imports "break" the shared-database test: the
same seed generated and shrank to another example.

:func:`seed_only_generation` switches those constants off while a shrinking run goes; the global
constants Hypothesis ships (0, -1, inf, 2**31, ...) stay, so generation keeps its edge cases.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def seed_only_generation() -> Iterator[None]:
    """Within the block, Hypothesis draws no constants from local source code (a Hypothesis
    without that feature is left as it is). Not thread-safe: one fuzz round at a time per process."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants

        getter = providers._get_local_constants
        cache: Any = providers.CONSTANTS_CACHE
    except (ImportError, AttributeError):  # pragma: no cover - a Hypothesis before 6.131
        yield
        return
    empty = Constants()
    providers._get_local_constants = lambda: empty
    cache.cache.clear()  # allowed constants computed with the local ones
    try:
        yield
    finally:
        providers._get_local_constants = getter
        cache.cache.clear()
