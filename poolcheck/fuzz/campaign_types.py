"""Which element types a campaign draws.

Without ``--dtypes``, a campaign with peers draws only the element types some peer of it can take
for the fuzzed operators (each peer's declaration, :func:`~poolcheck.peers.base.declared_types`):
a configuration no peer can express costs the campaign's main process as much as one a peer
answers, and tells nothing about the peers (a torch-onnx campaign over all twelve types spent
nine configurations in ten on types the chain declines). Every operator and convention the
campaign fuzzes keeps at least one type to draw, so narrowing never drops one from the campaign.
An explicit ``--dtypes`` list is kept as given; when no peer takes any of its types, that is one
warning line (the engines are still fuzzed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from poolcheck.fuzz.family import convention_of, is_family_ops
from poolcheck.fuzz.strategies import ALL_DTYPES
from poolcheck.peers.base import PeerFacts
from poolcheck.peers.isolation import peer_facts
from poolcheck.spec import operators


@dataclass(frozen=True)
class CampaignTypes:
    """The element types a campaign draws, and a warning line when no peer of the campaign takes
    any of them (None otherwise)."""

    dtypes: tuple[str, ...]
    warning: str | None = None


def _operators(ops: Sequence[str], conventions: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Each (op, convention) the campaign draws, as the op and the types its catalogue row allows."""
    if is_family_ops(ops):
        return [(op, operators.newest(op, convention_of(op)).dtypes) for op in ops]
    return [(op, operators.allowed_dtypes(op, c)) for op in ops for c in conventions]


def _taken(declared: Sequence[PeerFacts], op: str, allowed: tuple[str, ...]) -> set[str]:
    """The types of ``allowed`` that some peer takes for ``op`` (a peer declaring none: all)."""
    taken: set[str] = set()
    for facts in declared:
        types = facts.declared(op)
        taken |= set(allowed) if types is None else set(allowed) & set(types)
    return taken


def campaign_types(ops: Sequence[str], conventions: Sequence[str], peers: Sequence[Any],
                   requested: Sequence[str] | None, *, isolated: bool = False) -> CampaignTypes:
    """The element types a campaign over ``ops`` and ``conventions`` draws: ``requested`` (an
    explicit ``--dtypes``) as given; else, with ``peers``, the types some peer takes for some
    fuzzed operator, plus an operator's own types where no peer takes any of them (it is still
    fuzzed, on the engines); with no peers, every type. Each peer declares its types where it
    runs: in its worker when ``isolated`` (the campaign's, started here), else in this process."""
    if not peers:
        return CampaignTypes(tuple(requested) if requested is not None else ALL_DTYPES)
    declared = peer_facts(peers, sorted(set(ops)), isolated=isolated)
    rows = _operators(ops, conventions)
    taken = [(allowed, _taken(declared, op, allowed)) for op, allowed in rows]
    if requested is not None:
        dtypes = tuple(requested)
    else:
        chosen = set().union(*(t for _, t in taken))
        for allowed, _ in taken:
            if not chosen & set(allowed):  # no peer takes this operator: fuzzed on the engines
                chosen |= set(allowed)
        dtypes = tuple(d for d in ALL_DTYPES if d in chosen)
    if any(set(dtypes) & t for _, t in taken):
        return CampaignTypes(dtypes)
    names = ", ".join(str(getattr(p, "name", p)) for p in peers)
    return CampaignTypes(dtypes, f"no peer of this campaign ({names}) takes any of the element types "
                                 f"{', '.join(dtypes)} for the fuzzed operators: only the engines judge them")
