"""What a campaign covered: hits per spec region (:mod:`poolcheck.spec.regions`) and per runner.

A configuration counts for a runner when the runner answered it (the reference engine always;
a peer when it returned outputs or rejected the configuration, not when it declined or crashed).
The counts are reported and end a ``--min-per-region`` campaign (:meth:`Coverage.covers`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from poolcheck.spec import operators, regions
from poolcheck.spec.dtypes import is_float
from poolcheck.spec.family import FAMILY_OPS
from poolcheck.spec.regions import dtype_region, regions_of

__all__ = ["Coverage", "Plan", "dtype_region", "plan", "regions_of"]


@dataclass
class Coverage:
    """Hits per runner and region (``runner -> region -> configurations``)."""

    hits: dict[str, Counter[str]] = field(default_factory=dict)
    #: configurations of a region a peer declined (could not express): why it has no hits there
    declined: dict[str, Counter[str]] = field(default_factory=dict)

    def record(self, runner: str, keys: Iterable[str]) -> None:
        self.hits.setdefault(runner, Counter()).update(keys)

    def record_declined(self, runner: str, keys: Iterable[str]) -> None:
        self.declined.setdefault(runner, Counter()).update(keys)

    def merge(self, other: Coverage) -> None:
        for runner, counts in other.hits.items():
            self.hits.setdefault(runner, Counter()).update(counts)
        for runner, counts in other.declined.items():
            self.declined.setdefault(runner, Counter()).update(counts)

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {runner: dict(sorted(c.items())) for runner, c in self.hits.items()}

    def declined_dict(self) -> dict[str, dict[str, int]]:
        return {runner: dict(sorted(c.items())) for runner, c in self.declined.items()}

    def least(self, runner: str, keys: Sequence[str]) -> int:
        """The fewest hits ``runner`` has on any of ``keys`` (0 for a runner never recorded)."""
        counts = self.hits.get(runner, Counter())
        return min((counts[k] for k in keys), default=0)

    def covers(self, runner: str, keys: Sequence[str], n: int) -> bool:
        """Whether ``runner`` has ``n`` hits on every region of ``keys`` it can express: a region
        it declined ``n`` times without answering one configuration of it counts as one it cannot
        express (torch and padding wholly in a window, OpenVINO and a negative SAME total), which
        no number of draws would cover."""
        hits, declined = self.hits.get(runner, Counter()), self.declined.get(runner, Counter())
        return all(hits[k] >= n or (hits[k] == 0 and declined[k] >= n) for k in keys)


@dataclass(frozen=True)
class Plan:
    """The regions a campaign's options can reach, and why the others cannot be reached."""

    reachable: tuple[str, ...]
    unreachable: dict[str, str]


def plan(ops: Sequence[str], conventions: Sequence[str], ranks: Sequence[int], dtypes: Sequence[str]) -> Plan:
    """The regions reachable by ``ops`` x ``conventions`` with these ranks and dtypes."""
    reach: dict[str, None] = {}
    why: dict[str, str] = {}
    for op in ops:
        if op in FAMILY_OPS:  # one convention each; their own regions
            for key in regions.family_reachable(op):
                if not key.startswith("dtype-") or key.removeprefix("dtype-") in dtypes:
                    reach[key] = None
            continue
        for conv in conventions:
            allowed = [d for d in operators.allowed_dtypes(op, conv) if d in dtypes]
            if not allowed:
                continue
            for key in regions.reachable(op, conv):
                if key.startswith("dtype-") and key.removeprefix("dtype-") not in dtypes:
                    continue
                reach[key] = None
            for key, text in regions.unreachable(op, conv).items():
                why.setdefault(key, f"{_label(op, conv)}: {text}")
    chosen = {d for op in ops for conv in conventions if op not in FAMILY_OPS
              for d in operators.allowed_dtypes(op, conv) if d in dtypes}
    chosen |= {d for op in ops if op in FAMILY_OPS for k in regions.family_reachable(op)
               if k.startswith("dtype-") and (d := k.removeprefix("dtype-")) in dtypes}
    if not any(is_float(d) for d in chosen):
        for key in ("nan-in-window", "inf-in-window", "neg-zero-in-window"):
            if reach.pop(key, "") is None:
                why[key] = "no floating-point type among --dtypes"
    if not any(np.dtype(d).kind in "iu" for d in chosen) and reach.pop("int-extreme", "") is None:
        why["int-extreme"] = "no integer type among --dtypes"
    if 5 not in ranks:
        for key in ("rank-5", "family-rank-5"):
            if reach.pop(key, "") is None:
                why[key] = "rank 5 is not among --ranks"
    keys = [r.key for r in regions.REGIONS if r.key in reach] + [k for k in regions.FAMILY_REGIONS if k in reach]
    keys += [k for k in reach if k.startswith("dtype-")]
    return Plan(tuple(keys), {k: v for k, v in why.items() if k not in reach})


def _label(op: str, convention: str) -> str:
    return operators.newest(op, convention).name


