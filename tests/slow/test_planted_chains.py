"""Converter-chain peers with a planted bug in their export step (tests/planted_peers/
export_drops_*.py): the fuzzer finds each, and the replayed result names the step that wrote the
wrong attribute. Skipped with the reason where torch, onnx or onnxruntime is absent."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from poolcheck.fuzz.session import FuzzOptions, run_sessions
from poolcheck.peers.isolation import call_peer_many
from poolcheck.results import Signature


def _planted(kind: str) -> Any:
    from poolcheck.peers.torch_onnx_peer import TorchOnnxPeer

    ok, why = TorchOnnxPeer().available()
    if not ok:
        pytest.skip(f"torch-onnx is not available: {why}")
    if kind == "ceil_mode":
        from planted_peers.export_drops_ceil_mode import ExportDropsCeilMode

        return ExportDropsCeilMode()
    from planted_peers.export_drops_count_include_pad import ExportDropsCountIncludePad

    return ExportDropsCountIncludePad()


@pytest.mark.parametrize(("kind", "ops", "step_message"), [
    ("ceil_mode", ("max", "avg"), "planted exporter wrote ceil_mode=0 for ceil_mode=True"),
    ("count_include_pad", ("avg",), "planted exporter wrote count_include_pad=0 for count_include_pad=True"),
])
def test_fuzzer_finds_the_converter_step_bug_and_names_the_step(kind: str, ops: tuple[str, ...],
                                                                step_message: str) -> None:
    peer = _planted(kind)
    options = FuzzOptions(peers=(peer,), ops=ops, seed=0, isolated=False, oracles=frozenset({"peers"}),
                          exit_first=True, time_budget=30.0, max_examples=3000, dtypes=("float32",))
    result = run_sessions(options)[0]
    found = [f for sig, f in result.findings.items() if Signature.parse(sig).subject == peer.name]
    assert found, sorted(result.findings)
    items = [(f.case.spec, f.case.x) for f in found]
    replays = call_peer_many(peer, items, isolated=False)
    named = [i for i, r in enumerate(replays) if r.output is not None and step_message in r.output.notes]
    assert named, [(f.case.describe(), r.verdict, r.output and r.output.notes) for f, r in zip(found, replays)]
    # the unbroken chain writes the attribute right (no attribution note) and, on at least one
    # of these finds, computes other values: the dropped attribute is what made it diverge
    from poolcheck.peers.torch_onnx_peer import TorchOnnxPeer

    cleans = call_peer_many(TorchOnnxPeer(), [items[i] for i in named], isolated=False)
    differ = 0
    for i, clean in zip(named, cleans, strict=True):
        bad = replays[i].output
        assert clean.status == "ok" and clean.output is not None and bad is not None
        assert not any("wrote" in n for n in clean.output.notes)
        a, b = clean.output.values, bad.values
        differ += a.shape != b.shape or not np.array_equal(a, b, equal_nan=True)
    assert differ, "the dropped attribute never changed a value"
