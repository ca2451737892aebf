"""A seeded fuzz round generates the same examples whatever modules happen to be imported.

Hypothesis draws some values from literals in the source of every local module in
``sys.modules``; ``seed_only_generation`` switches that off, so a printed ``--seed`` replays
the same examples in a wheel install, an editable one, a cluster worker or a test process.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import Phase, given, seed, settings
from hypothesis import strategies as st

from poolcheck.fuzz.generation import seed_only_generation

providers = pytest.importorskip("hypothesis.internal.conjecture.providers")
if not hasattr(providers, "_get_local_constants"):
    pytest.skip("this Hypothesis draws no constants from source code", allow_module_level=True)


def draws(round_seed: int) -> list[int]:
    """The values one seeded round draws."""
    seen: list[int] = []

    @seed(round_seed)
    @settings(max_examples=300, database=None, phases=[Phase.generate], deadline=None)
    @given(st.integers(0, 10**9))
    def round_(v: int) -> None:
        seen.append(v)

    round_()
    return seen


def with_new_local_module(tmp_path: Path, run: Callable[[], list[int]], salt: int) -> tuple[list[int], list[int]]:
    """``run()`` before and after importing a new local module full of integer literals (new
    ones: ``salt`` differs per call, a literal already collected changes nothing)."""
    before = run()
    name = f"pc_literals_{tmp_path.name[-12:]}".replace("-", "_")
    literals = ", ".join(str(1_000_003 * k + salt) for k in range(1, 400))
    (tmp_path / f"{name}.py").write_text(f"LITERALS = ({literals})\n")
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module(name)  # stays in sys.modules: Hypothesis notices new modules by the count
    finally:
        sys.path.remove(str(tmp_path))
    return before, run()


def test_a_seeded_round_ignores_the_modules_imported(tmp_path: Path) -> None:
    def guarded() -> list[int]:
        with seed_only_generation():
            return draws(7)

    before, after = with_new_local_module(tmp_path, guarded, salt=1)
    assert before == after


def test_without_the_guard_the_same_seed_draws_other_values(tmp_path: Path) -> None:
    """What the guard is for: Hypothesis' own behaviour (if this starts failing, a Hypothesis
    release dropped the feature and the guard can go)."""
    before, after = with_new_local_module(tmp_path, lambda: draws(7), salt=2)
    assert before != after


def test_the_guard_restores_hypothesis() -> None:
    getter = providers._get_local_constants
    with seed_only_generation():
        assert providers._get_local_constants is not getter
        assert not providers._get_local_constants().set_for_type("integer")
    assert providers._get_local_constants is getter
