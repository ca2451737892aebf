"""Proof of reach: a planted bug that only one spec region shows, for every region, is found.

The planted peers (tests/planted_peers/region_bugs.py) trigger on conditions written over the
loop oracle's axes, not on poolcheck.spec.regions. Each session is bounded by examples, not by
time; nothing here is timed (docs/fuzzing.md gives the measured times).
"""

from __future__ import annotations

import pytest
from planted_peers.region_bugs import LARGE_KERNEL_TAP_DROP, SINGLE_WINDOW_AVG, TRIGGERS, RegionBug

from poolcheck.fuzz.session import FuzzOptions, run_sessions
from poolcheck.results import Signature
from poolcheck.spec import regions


def test_every_region_has_its_planted_bug() -> None:
    assert set(TRIGGERS) == {r.key for r in regions.REGIONS}


@pytest.mark.slow
def test_each_region_bug_is_found() -> None:
    # One exploration, every planted peer at once: each configuration goes to all of them, so a
    # region's bug is found as soon as the generator reaches the region.
    peers = [RegionBug(key) for key in TRIGGERS]
    options = FuzzOptions(peers=tuple(peers), seed=0, isolated=False, oracles=frozenset({"peers"}), shrink=False,
                          max_examples=120, time_budget=600.0)
    (result,) = run_sessions(options)
    found = {Signature.parse(s).subject for s in result.findings}
    missing = [p.name for p in peers if p.name not in found]
    assert not missing, missing


@pytest.mark.slow
@pytest.mark.parametrize("bug", [LARGE_KERNEL_TAP_DROP, SINGLE_WINDOW_AVG])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_tap_dropping_kernels_are_found_and_shrunk_on_every_seed(bug: str, seed: int) -> None:
    peer = RegionBug(bug)
    options = FuzzOptions(peers=(peer,), seed=seed, isolated=False, oracles=frozenset({"peers"}), exit_first=True,
                          max_examples=3000, time_budget=600.0, shrink_seconds=10.0)
    (result,) = run_sessions(options)
    mine = [s for s in result.shrunk if Signature.parse(s).subject == peer.name]
    assert mine, sorted(result.findings)


def test_the_faithful_control_behind_the_same_wrapper_is_silent() -> None:
    peer = RegionBug(None)
    options = FuzzOptions(peers=(peer,), seed=0, isolated=False, oracles=frozenset({"peers"}), shrink=False,
                          max_examples=60, time_budget=600.0)
    (result,) = run_sessions(options)
    assert not [s for s in result.findings if Signature.parse(s).subject == peer.name]
