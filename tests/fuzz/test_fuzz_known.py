"""The known-divergence registry (cases/known/): every entry is a valid case the engine passes,
tagged with its peer, signature and versions; with the runtimes installed here each entry still
reproduces exactly as recorded (a fixed upstream bug makes this fail: move the entry out)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT

from poolcheck.fingerprint import cpu_features
from poolcheck.fuzz.campaign import recheck_known
from poolcheck.fuzz.known import known_entries
from poolcheck.peers.registry import resolve_peer
from poolcheck.runner import run_case
from poolcheck.spec.family import FAMILY_OPS

KNOWN = ROOT / "cases" / "known"
ENTRIES, ERRORS = known_entries([KNOWN])


def test_registry_loads_and_is_tagged() -> None:
    assert ERRORS == []
    assert len(ENTRIES) >= 20
    for e in ENTRIES:
        kind, op, subject, klass = e.signature.split("|", 3)
        assert kind in ("peer", "document") and op in ("max", "avg", *FAMILY_OPS) and klass
        # a family entry was recorded from `poolcheck run --peers` (tag "family"), the others by the fuzzer
        assert ("fuzz" in e.case.tags or (op in FAMILY_OPS and "family" in e.case.tags)) and "known" in e.case.tags
        if kind == "peer":
            assert e.peer == subject
            assert any(t.startswith(f"version:{subject}=") for t in e.case.tags), e.case.id
            assert e.case.notes.startswith(f"{subject}: ")


def test_the_engine_passes_every_entry() -> None:
    for e in ENTRIES:
        verdict = run_case(e.case, ["numpy"]).verdict
        assert verdict == ("erratum" if e.kind == "document" else "pass"), (e.case.id, verdict)


@pytest.mark.slow
@pytest.mark.parametrize("peer_name", sorted({e.peer for e in ENTRIES if e.peer}))
def test_each_entry_still_reproduces(peer_name: str) -> None:
    peer = resolve_peer(peer_name)
    ok, why = peer.available()
    if not ok:
        pytest.skip(f"{peer_name} is not available here: {why}")
    mine = [e for e in ENTRIES if e.peer == peer_name]
    checks = recheck_known(mine, [peer], isolated=False)
    # an entry recorded on a CPU with features this one lacks (cpu: tags) is skipped, and only it
    have = cpu_features()
    states = {k.entry.case.id: (k.state, k.message) for k in checks
              if not (k.state == "skipped" and k.entry.cpu_unmet(have))}
    assert all(state == "reproduces" for state, _ in states.values()), {
        cid: msg for cid, (state, msg) in states.items() if state != "reproduces"}


def test_an_entry_tagged_with_cpu_features_this_cpu_lacks_is_skipped_not_fixed() -> None:
    """A runtime picks kernels by CPU (OpenVINO runs bfloat16 natively only with avx512_core), so
    an entry tagged ``cpu:FEATURE`` is re-checked only where the CPU has the feature; elsewhere it
    is skipped with the reason, never reported as fixed upstream."""
    from dataclasses import replace

    entry = next(e for e in ENTRIES if e.kind == "document")
    lacking = replace(entry, case=replace(entry.case, tags=[*entry.case.tags, "cpu:no-such-feature"]))
    (check,) = recheck_known([lacking], [])
    assert check.state == "skipped" and "no-such-feature" in check.message
    present = sorted(cpu_features())[0]
    having = replace(entry, case=replace(entry.case, tags=[*entry.case.tags, f"cpu:{present}"]))
    (check,) = recheck_known([having], [])
    assert check.state == "reproduces"
    # cpu:!FEATURE: recorded on a CPU without it
    without = replace(entry, case=replace(entry.case, tags=[*entry.case.tags, f"cpu:!{present}"]))
    (check,) = recheck_known([without], [])
    assert check.state == "skipped" and f"without {present}" in check.message
    absent = replace(entry, case=replace(entry.case, tags=[*entry.case.tags, "cpu:!no-such-feature"]))
    (check,) = recheck_known([absent], [])
    assert check.state == "reproduces"
    assert any("cpu:avx512_core" in e.case.tags for e in ENTRIES)


def test_document_entries_are_errata_of_the_written_rules() -> None:
    docs = [e for e in ENTRIES if e.kind == "document"]
    assert {e.signature.split("|", 3)[3] for e in docs} >= {"same_*, any rounding", "valid, ceil"}
    checks = recheck_known(docs, [])
    assert {k.state for k in checks} == {"reproduces"}


def test_a_cpu_tag_without_a_feature_is_a_load_error_naming_the_case(tmp_path: Path) -> None:
    source = (KNOWN / "openvino.yaml").read_text(encoding="utf-8")
    bad = tmp_path / "openvino.yaml"
    bad.write_text(source.replace("'cpu:avx512_core'", "'cpu:!'", 1), encoding="utf-8")
    _entries, errors = known_entries([bad])
    assert len(errors) == 1 and "names no CPU feature" in str(errors[0]) and "rejects-no-max-kernel" in str(errors[0])
