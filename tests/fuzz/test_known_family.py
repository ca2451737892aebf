"""Re-checking the registry's family entries (poolcheck/fuzz/known_family.py) on recorded answers."""

from __future__ import annotations

import ast

import numpy as np
from support import ROOT

from poolcheck.fuzz.known import known_entries
from poolcheck.fuzz.known_family import _state
from poolcheck.peers.base import PeerOutput, PeerResult
from poolcheck.results import KnownState

ENTRIES, _ = known_entries([ROOT / "cases" / "known"])


def _recorded(case_id: str) -> tuple[object, PeerResult]:
    """A registry entry and the answer its peer gave when the campaign found it (its notes)."""
    entry = next(e for e in ENTRIES if e.case.id == case_id)
    line = next(t for t in entry.case.notes.splitlines() if t.startswith(f"{entry.peer} values: "))
    values = np.array(ast.literal_eval(line.split(": ", 1)[1].replace("nan", "None").replace("inf", "1e999")),
                      dtype=float)
    return entry, PeerResult("ok", PeerOutput(values.astype(entry.case.input.dtype)))


def test_an_atom_of_a_combined_class_reproduces() -> None:
    # the campaign split 'lp:input-type-overflow+lp:no-abs' into one row per atom; the entry
    # registered for the first atom is the same answer again, not a different divergence
    entry, result = _recorded("fuzz-torch-onnx-global_lp-lp-input-type-overflow-lp-no-abs-7173ad")
    assert entry.sig.detail == "lp:input-type-overflow"
    state, message = _state(entry, result)
    assert state == KnownState.REPRODUCES, message
    assert "lp:input-type-overflow+lp:no-abs" in message


def test_the_norm_computed_wider_is_no_longer_the_entry() -> None:
    entry, result = _recorded("fuzz-torch-onnx-global_lp-lp-input-type-overflow-lp-no-abs-7173ad")
    assert result.output is not None
    # the same case answered with the norm of |x| computed in float64, rounded to float32 once
    x = np.asarray(entry.case.input, dtype=np.float64)
    p = entry.case.attributes["p"]
    norm = (np.abs(x) ** p).sum(axis=-1, keepdims=True) ** (1.0 / p)
    wide = PeerResult("ok", PeerOutput(norm.astype(np.float32)))
    state, _ = _state(entry, wide)
    assert state == KnownState.FIXED
