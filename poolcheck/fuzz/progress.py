"""A fuzzing session's counters (:class:`Progress`): what the live view shows and what the
campaign's summary is built from; summed over ``--jobs`` processes and cluster shards."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from poolcheck.fuzz import coverage as cov


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
