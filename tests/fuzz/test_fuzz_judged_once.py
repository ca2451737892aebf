"""Each output is judged once: a finding carries the expected outputs and the judgement made where
its outputs were compared, and the campaign's report and case files show them without computing
the reference or comparing again (issue 20, deliver 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from poolcheck.engines import numpy_engine
from poolcheck.fuzz import campaign as C
from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.strategies import FuzzCase
from poolcheck.peers.base import PeerOutput, PeerResult
from poolcheck.spec import attributes as A
from poolcheck.spec.policy import SPEC, Policy


def _case(spec: A.PoolSpec, x: np.ndarray) -> FuzzCase:
    return FuzzCase("MaxPool-14" if spec.op == "max" else "AvgPool-14", {}, spec, x, {})


def _peer_finding() -> O.Finding:
    """A peer whose max at output 1 is wrong, and so is the index there: one differing element for
    the comparison (an index is compared only where the values agree)."""
    x = np.array([[[1, 5, 2, 4, 3, 6]]], dtype=np.float32)
    c = _case(A.openvino_max_pool([2], [2]), x)
    base, geom = O.expected_for(numpy_engine, c)
    values, indices = base.values.copy(), base.indices.copy()
    values[0, 0, 1] = 3.0
    indices[0, 0, 1] = 4
    f = O.check_peer(c, "p", PeerResult("ok", PeerOutput(values, indices)), numpy_engine, base, geom)
    assert f is not None
    return f


def _no_recomputing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("the reference computed or an output compared again")

    for name in ("expected_for", "tolerance_for", "mismatch"):
        monkeypatch.setattr(O, name, refused)
    monkeypatch.setattr(C, "expected_for", refused)


def test_the_report_shows_the_comparison_the_finding_was_made_by(monkeypatch: pytest.MonkeyPatch) -> None:
    """The row counts what the comparison counted (1 differing element, as the finding's detail
    says), not a second comparison's (which also counted the index behind the wrong value: 2)."""
    f = _peer_finding()
    assert f.detail.startswith("values: 1 of 3 differ")
    (check,) = C.finding_result(f, new=True, replay="r").checks
    assert check.n_diffs == 1
    f = _peer_finding()
    _no_recomputing(monkeypatch)
    (check,) = C.finding_result(f, new=True, replay="r").checks
    assert check.n_diffs == 1
    assert [(d.output, d.position, d.expected, d.actual) for d in check.diffs] == [("values", [0, 0, 1], 4.0, 3.0)]
    assert check.diffs[0].window  # described with its window
    assert check.expected["values"] == [[[5.0, 4.0, 6.0]]]


def test_an_engine_finding_carries_its_outputs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Two engines disagreeing: the row and the case file come from what the comparison kept."""
    def doubled(x: np.ndarray, geom: Any, layout: Any, policy: Policy = SPEC) -> Any:
        v, i = numpy_engine.max_pool(x, geom, layout, policy)
        return v * 2, i

    from types import SimpleNamespace

    broken = SimpleNamespace(NAME="broken", max_pool=doubled, avg_pool=numpy_engine.avg_pool)
    c = _case(A.openvino_max_pool([2], [2]), np.array([[[1, 5, 2, 4, 3, 6]]], dtype=np.float32))
    base, geom = O.expected_for(numpy_engine, c)
    (f,) = O.check_engines(c, {"numpy": numpy_engine, "broken": broken}, base, geom)
    _no_recomputing(monkeypatch)
    (check,) = C.finding_result(f, new=True, replay="r").checks
    assert check.n_diffs == 3 and check.expected["values"] == [[[5.0, 4.0, 6.0]]]
    assert check.actual["values"] == [[[10.0, 8.0, 12.0]]]
    path = C._save(f, tmp_path, C.FuzzOptions(), "poolcheck fuzz", {})
    assert path is not None and "values: [[[5.0, 4.0, 6.0]]]" in path.read_text().replace("\n", " ").replace("  ", " ")


def test_a_broken_property_and_a_written_rule_carry_what_their_case_files_expect() -> None:
    """A metamorphic finding expects the engine's own outputs; a document finding the shape the
    written rule gives: both set where they are found, nothing for the campaign to compute."""
    def ignores_begin_pad(x: np.ndarray, geom: Any, layout: Any, policy: Policy = SPEC) -> Any:
        import dataclasses

        axes = tuple(dataclasses.replace(a, pad_begin=0) for a in geom.axes)
        return numpy_engine.max_pool(x, dataclasses.replace(geom, axes=axes), layout, policy)

    from types import SimpleNamespace

    eng = SimpleNamespace(NAME="broken", max_pool=ignores_begin_pad, avg_pool=numpy_engine.avg_pool)
    c = _case(A.openvino_max_pool([2], [2], [1], [1]), np.array([[[1, 5, 2, 4, 3, 6]]], dtype=np.float32))
    base, geom = O.expected_for(eng, c)
    found = O.check_metamorphic(c, eng, "broken", base, geom)  # type: ignore[arg-type]
    assert found and all(np.array_equal(f.expected["values"], base.values) for f in found)
    # same_upper, stride 2 on 2 elements: "H_out = H" is written, the runtimes give 1
    doc = _case(A.openvino_max_pool([1], [2], auto_pad="same_upper"), np.zeros((1, 1, 2), np.float32))
    (f,) = O.check_shape_rules(doc, O.resolve(doc.spec, doc.x.shape))
    assert f.expected == {"shape": [1, 1, 2]} == {"shape": f.extra["written_shape"]}
