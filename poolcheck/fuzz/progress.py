"""A fuzzing session's counters (:class:`Progress`): what the live view shows and what the
campaign's summary is built from; and what a session found (:class:`SessionResult`). Both are
summed over ``--jobs`` processes and cluster shards (:func:`merge_results`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from poolcheck.fuzz import coverage as cov
from poolcheck.fuzz import oracles as O


@dataclass
class Progress:
    """A snapshot of one session's counters (summed over jobs by the parent)."""

    examples: int = 0
    cases: int = 0
    compared: Counter[str] = field(default_factory=Counter)  # per peer: configurations compared
    divergent: Counter[str] = field(default_factory=Counter)  # per signature: divergent configurations
    peer_status: dict[str, Counter[str]] = field(default_factory=dict)
    new: list[str] = field(default_factory=list)  # signatures settled (shrunk) so far
    known: frozenset[str] = frozenset()  # signatures in the known-divergence registry
    phase: str = "starting"
    elapsed: float = 0.0
    coverage: cov.Coverage = field(default_factory=cov.Coverage)  # hits per runner and spec region

    @property
    def differential(self) -> int:
        """Configurations compared against at least one peer (max over peers)."""
        return max(self.compared.values(), default=0)

    def merge(self, other: Progress) -> None:
        self.examples += other.examples
        self.cases += other.cases
        self.compared.update(other.compared)
        self.divergent.update(other.divergent)
        for peer, counts in other.peer_status.items():
            self.peer_status.setdefault(peer, Counter()).update(counts)
        self.new += [s for s in other.new if s not in self.new]
        self.known |= other.known
        self.coverage.merge(other.coverage)
        self.elapsed = max(self.elapsed, other.elapsed)


@dataclass
class SessionResult:
    """What one session (one process) found."""

    findings: dict[str, O.Finding]  # signature -> best reproducer (shrunk when ``shrunk``)
    shrunk: set[str]
    detected_at: dict[str, float]  # signature -> seconds into the session it was first seen
    shrunk_at: dict[str, float]
    progress: Progress
    versions: dict[str, str]
    unavailable: dict[str, str]
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    rounds: list[tuple[int, int]] = field(default_factory=list)  # (--seed, examples) of the session
    #: The examples of every divergence group, in the order seen (the campaign groups them again
    #: across sessions: :mod:`poolcheck.fuzz.grouping`).
    examples: list[O.Finding] = field(default_factory=list)
    #: Causes an experiment on the peer refuted: (peer, op, variant keys).
    ruled_out: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)


def merged_progress(progresses: Any) -> Progress:
    total = Progress()
    for p in progresses:
        total.merge(p)
    total.phase = "fuzzing"
    return total


def merge_results(results: Sequence[SessionResult]) -> SessionResult:
    """One result from several jobs: the smallest reproducer per signature, the earliest times."""
    if len(results) == 1:
        return results[0]
    findings: dict[str, O.Finding] = {}
    shrunk: set[str] = set()
    detected: dict[str, float] = {}
    shrunk_at: dict[str, float] = {}
    progress = Progress()
    versions: dict[str, str] = {}
    unavailable: dict[str, str] = {}
    warnings: list[str] = []
    rounds: list[tuple[int, int]] = []
    examples: list[O.Finding] = []
    ruled_out: list[tuple[str, str, tuple[str, ...]]] = []
    for r in results:
        examples += r.examples
        ruled_out += [c for c in r.ruled_out if c not in ruled_out]
        for sig, f in r.findings.items():
            have = findings.get(sig)
            better = have is None or (sig in r.shrunk and sig not in shrunk) or (
                (sig in r.shrunk) == (sig in shrunk) and f.size < have.size)
            if better:
                findings[sig] = f
                if sig in r.shrunk:
                    shrunk.add(sig)
        for sig, t in r.detected_at.items():
            detected[sig] = min(t, detected.get(sig, math.inf))
        for sig, t in r.shrunk_at.items():
            shrunk_at[sig] = min(t, shrunk_at.get(sig, math.inf))
        progress.merge(r.progress)
        versions.update(r.versions)
        unavailable.update(r.unavailable)
        warnings += r.warnings
        rounds += r.rounds
    return SessionResult(findings, shrunk, detected, shrunk_at, progress, versions, unavailable,
                         any(r.interrupted for r in results), warnings, rounds, examples, ruled_out)
