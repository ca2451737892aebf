"""A run check weighed by the diagnosis: for ``poolcheck audit`` (and any caller at the fuzz
floor or above), a peer divergence the run's own weighing left unexplained is named by the
diagnosis -- every named behaviour, verified by replay -- and weighed by the same table
(:mod:`poolcheck.spec.severity`).

:func:`poolcheck.runner.peer_severity` replays the behaviours the engines take as a
:class:`~poolcheck.spec.policy.Policy`; the diagnosis-only ones (OpenVINO's seeded scan, NaN read
as -inf, sums in the input type) live here, one floor up. Without this an audit called OpenVINO's
consistent seeded scan a violation on the nodes whose adversarial input held a window of -inf,
NaN and the lowest float (its index is the scan's seed there), and unspecified on the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from poolcheck.cases.model import Case
from poolcheck.engines import get_engine
from poolcheck.fuzz.diagnosis.search import diagnose_output
from poolcheck.peers.base import Peer
from poolcheck.peers.isolation import call_peer_many
from poolcheck.results import Check, CheckKind, Severity, Verdict


def _unexplained(check: Check) -> bool:
    return (check.kind == CheckKind.PEER and check.verdict == Verdict.FAIL and check.severity == Severity.VIOLATION
            and not check.diagnosis)


def reweigh_peer_checks(cases: Sequence[Case], checks: Mapping[str, list[Check]], peers: Sequence[Peer], *,
                        timeout: float) -> None:
    """Re-run each case whose peer check is an unexplained violation on that peer, diagnose the
    output and, when a named behaviour reproduces it, give the check that class and its severity
    (in place)."""
    by_name = {p.name: p for p in peers}
    engine = get_engine("auto")
    for case in cases:
        for check in checks.get(case.id, []):
            peer = by_name.get(check.runner)
            if peer is None or not _unexplained(check):
                continue
            (result,) = call_peer_many(peer, [(case.spec, case.input)], timeout=timeout)
            out = result.output
            if result.status != "ok" or out is None or getattr(out, "values", None) is None:
                continue
            values = np.asarray(out.values)
            indices = None if getattr(out, "indices", None) is None else np.asarray(out.indices).astype(np.int64)
            d = diagnose_output(engine, case.spec, case.input, values, indices)
            if d.explained and d.severity is not None:
                check.severity = d.severity
                check.diagnosis = f"{d.klass}: {d.text}"
