"""Re-checking the registry's family entries (LpPool, global pooling, MaxUnpool, adaptive pooling)
against today's peer: each entry's case goes to its peer through the family interface
(:func:`~poolcheck.peers.isolation.submit_peer_family`), is judged by the one judgement
(:func:`~poolcheck.judgement.family_tolerance`) and named by the family diagnosis; the state is
that of every known check: the recorded class still reproduces, the peer now agrees (fixed), or
it diverges differently (changed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from poolcheck.api_family import run_family
from poolcheck.engines import family_numpy, numpy_engine
from poolcheck.errors import PoolcheckError
from poolcheck.fuzz.diagnosis.family import diagnose_family
from poolcheck.fuzz.known import KnownEntry
from poolcheck.judgement import close_values, family_tolerance
from poolcheck.peers.isolation import submit_peer_family
from poolcheck.results import KnownState
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.operators import OPERATORS

#: The class (prefix) the fuzzer records for a family divergence no variant names ("unexplained values").
UNEXPLAINED = "unexplained"
#: The class the fuzzer records for an answer that is no pooling output (a wrong rank, ...).
INVALID = "invalid output"


def is_family_entry(entry: KnownEntry) -> bool:
    return isinstance(entry.case.spec, FamilySpec)


def recheck_family(entries: Sequence[KnownEntry], peer: Any, *, isolated: bool = True,
                   timeout: float = 30.0) -> Callable[[], list[tuple[KnownState, str]]]:
    """The entries (all on ``peer``) handed to it now; calling the result collects its answers:
    ``(state, message)`` per entry."""
    items = [(e.case.spec, e.case.input, e.case.inputs.get("I")) for e in entries]
    answer = submit_peer_family(peer, items, isolated=isolated, timeout=timeout)  # type: ignore[arg-type]
    return lambda: [_state(e, r) for e, r in zip(entries, answer(), strict=True)]


def _state(entry: KnownEntry, result: Any) -> tuple[KnownState, str]:
    klass = entry.sig.detail
    if result.status in ("declined", "unavailable"):
        return KnownState.SKIPPED, f"{result.status}: {result.message}"
    if klass.startswith("rejects"):
        if result.status == "rejects":
            return KnownState.REPRODUCES, f"still rejects: {result.message}"
        return (KnownState.FIXED, "now accepts the configuration") if result.status == "ok" else \
            (KnownState.CHANGED, f"now {result.status}: {result.message}")
    if result.status == "invalid" and klass == INVALID:
        return KnownState.REPRODUCES, f"still answers with something that is not an output: {result.message}"
    if result.status != "ok":
        return KnownState.CHANGED, f"now {result.status}: {result.message}"
    case = entry.case
    spec = case.spec
    assert isinstance(spec, FamilySpec)
    unpool = case.inputs.get("I")
    try:
        expected = run_family(spec, case.input, indices=unpool, row=OPERATORS[case.op])
    except PoolcheckError as exc:
        return KnownState.CHANGED, f"the engine now rejects it: {exc}"
    values = np.asarray(result.output.values)
    indices = None if result.output.indices is None else np.asarray(result.output.indices)
    if _agrees(spec, case.input, expected, values, indices):
        return KnownState.FIXED, "no longer reproduces: the peer agrees with the reference -- fixed upstream?"
    keys = diagnose_family(spec, case.input, unpool, expected, (values, indices))
    if klass in keys or (klass.startswith(UNEXPLAINED) and not keys):
        return KnownState.REPRODUCES, f"reproduces: {klass}"
    # a campaign records one signature per atom of a combined class (lp:input-type-overflow of
    # 'lp:input-type-overflow+lp:no-abs'): the atom reproduces where a key holds it
    holding = next((k for k in keys if klass in k.split("+")), None)
    if holding is not None:
        return KnownState.REPRODUCES, f"reproduces: {klass} (as {holding})"
    return KnownState.CHANGED, f"diverges differently: {keys[0] if keys else UNEXPLAINED}"


def _agrees(spec: FamilySpec, x: np.ndarray, expected: tuple[np.ndarray, np.ndarray | None],
            values: np.ndarray, indices: np.ndarray | None) -> bool:
    ref_values, ref_indices = expected
    if values.shape != ref_values.shape or values.dtype != ref_values.dtype:
        return False
    tol = family_tolerance(spec, x, ref_values, numpy_engine, family_numpy)
    if not close_values(ref_values, values, tol).all():
        return False
    return ref_indices is None or (indices is not None and indices.shape == ref_indices.shape
                                   and bool(np.array_equal(ref_indices.astype(np.int64), indices.astype(np.int64))))
