"""``fuzz --ops`` for the rest of the family: strategies, engine and peer oracles, planted bugs.

Each planted family peer (tests/planted_peers/family.py) breaks one sentence of its operator's
text; a campaign with ``--exit-first`` must find it and give it its name. The faithful peer
stays silent. Bad ``--ops`` are one line, exit 2.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from planted_peers.family import PLANTED_FAMILY, FamilyPeer
from support import cli

from poolcheck.fuzz import family as F
from poolcheck.fuzz.campaign import run_campaign
from poolcheck.fuzz.diagnosis.family import agrees, diagnose_family
from poolcheck.fuzz.session import FuzzOptions
from poolcheck.peers.base import PeerOutput, PeerResult
from poolcheck.spec import operators
from poolcheck.spec.family import FAMILY_OPS, FamilySpec, family_output_shape
from poolcheck.spec.regions import FAMILY_REGIONS, family_regions_of

FLOATS = ("float32", "float16", "float64")


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(F.family_configs(FAMILY_OPS, (3, 4, 5), FLOATS))
def test_strategies_draw_valid_family_configurations(case: F.FamilyCase) -> None:
    """Every draw parses back from its case-file spelling, fits its input, runs on both engines
    alike, and (MaxUnpool) carries indices of X's shape inside the output."""
    row = operators.lookup(case.op_name, case.convention)
    assert row.op == case.op and case.x.dtype.name in row.dtypes
    assert operators.parse(case.op_name, case.attributes) == case.spec
    shape = family_output_shape(case.spec, case.x.shape)
    assert all(v >= 1 for v in shape)
    if case.op == "unpool":
        assert case.indices is not None and case.indices.shape == case.x.shape
        assert 0 <= case.indices.min() and case.indices.max() < np.prod(shape)
    else:
        assert case.indices is None
    numpy_out = F.expected(case, "numpy")
    assert numpy_out[0].shape == shape
    assert agrees(case.spec, case.x, numpy_out, F.expected(case, "c"), exact=case.op != "global_avg")
    assert family_regions_of(case.spec, case.x, case.indices) <= {*FAMILY_REGIONS, f"dtype-{case.x.dtype.name}"}


def _case(op_name: str, attrs: dict, x: np.ndarray, indices: np.ndarray | None = None) -> F.FamilyCase:
    spec = operators.parse(op_name, attrs)
    assert isinstance(spec, FamilySpec)
    return F.FamilyCase(op_name, attrs, spec, x, {}, indices=indices)


def test_a_peer_without_the_root_is_named_and_weighed_from_the_text() -> None:
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 1, 8)
    case = _case("LpPool-22", {"kernel_shape": [2], "p": 2}, x)
    exp = F.expected(case)
    sums = (x[..., :-1].astype(np.float64) ** 2 + x[..., 1:] ** 2).astype(np.float32)
    f = F.judge_family_peer(case, "p", PeerResult("ok", PeerOutput(sums)), exp, None)
    assert f is not None and f.klass == "lp:no-root" and f.explained
    assert f.weight.value == "violation"
    assert F.judge_family_peer(case, "p", PeerResult("ok", PeerOutput(exp[0])), exp, None) is None


def test_unexplained_output_is_said_so() -> None:
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 1, 8)
    case = _case("LpPool-22", {"kernel_shape": [2], "p": 2}, x)
    exp = F.expected(case)
    f = F.judge_family_peer(case, "p", PeerResult("ok", PeerOutput(exp[0] + 1)), exp, None)
    assert f is not None and f.klass == "unexplained values" and not f.explained


def test_unpool_collisions_are_named_and_unspecified() -> None:
    """Two elements of X sent to one position: the text does not say which is kept."""
    x = np.array([[[5.0, 7.0]]], dtype=np.float32)
    indices = np.array([[[1, 1]]])
    case = _case("MaxUnpool-22", {"kernel_shape": [2], "strides": [1]}, x, indices)
    exp = F.expected(case)
    assert exp[0].tolist() == [[[0.0, 7.0, 0.0]]]  # the reference: the last write
    first = np.array([[[0.0, 5.0, 0.0]]], dtype=np.float32)
    assert diagnose_family(case.spec, x, indices, exp, (first, None)) == ["unpool:first-write-wins"]
    f = F.judge_family_peer(case, "p", PeerResult("ok", PeerOutput(first)), exp, None)
    assert f is not None and f.weight.value == "unspecified"


def test_adaptive_bins_rounded_down_are_named() -> None:
    x = np.array([[[1.0, 2.0, 4.0, 8.0, 16.0]]], dtype=np.float32)
    case = _case("AdaptiveAvgPool-8", {"output_shape": [3]}, x)
    exp = F.expected(case)
    # bins [0, 2) [1, 4) [3, 5) by the text; [0, 1) [1, 3) [3, 5) with the end rounded down
    floor_end = np.array([[[1.0, 3.0, 12.0]]], dtype=np.float32)
    assert np.allclose(exp[0], [[[1.5, 14 / 3, 12.0]]])
    assert diagnose_family(case.spec, x, None, exp, (floor_end, None)) == ["adaptive:end-floor"]


def test_a_max_seeded_with_the_lowest_value_is_a_violation() -> None:
    """ONNX Runtime's GlobalMaxPool (measured, 1.32): a plane of -inf gives -FLT_MAX."""
    x = np.array([[[-np.inf, -np.inf]]], dtype=np.float32)
    case = _case("GlobalMaxPool-22", {}, x)
    lowest = np.array([[[np.finfo(np.float32).min]]], dtype=np.float32)
    f = F.judge_family_peer(case, "p", PeerResult("ok", PeerOutput(lowest)), F.expected(case), None)
    assert f is not None and f.klass == "global:seed-lowest" and f.weight.value == "violation"


def test_lp_windows_a_negative_same_pad_starts_inside_the_input() -> None:
    """ONNX Runtime's LpPool SAME pads from the undilated kernel (measured, 1.32): kernel 2,
    dilation 3, stride 4 on 4 elements -> pads -1/-1, one window on elements 1 and 4 (past the end):
    |2|, where the text's window reads elements 0 and 3."""
    x = np.array([[[[1.0, 2.0, 3.0, 4.0]]]], dtype=np.float32)
    case = _case("LpPool-22", {"kernel_shape": [1, 2], "strides": [1, 4], "dilations": [1, 3],
                               "auto_pad": "SAME_UPPER"}, x)
    exp = F.expected(case)
    assert exp[0].ravel().tolist() == [pytest.approx(17 ** 0.5)]
    keys = diagnose_family(case.spec, x, None, exp, (np.array([[[[2.0]]]], dtype=np.float32), None))
    assert keys[0] == "same:undilated-kernel"


def test_torch_lp_in_float16_is_two_behaviours() -> None:
    """torch's lp_pool (x^p, not |x|^p, in the input type): a negative sum gives NaN, a power past
    65504 inf; the finding names both, each weighed on its own."""
    x = np.array([[[36.0], [-35.0], [46.0]]], dtype=np.float16)
    case = _case("GlobalLpPool-22", {"p": 3}, x)
    torch_like = np.array([[[35.97], [np.nan], [np.inf]]], dtype=np.float16)
    f = F.judge_family_peer(case, "p", PeerResult("ok", PeerOutput(torch_like)), F.expected(case), None)
    assert f is not None and set(f.atoms) == {"lp:input-type-overflow", "lp:no-abs"}
    assert {g.atom: g.weight.value for g in f.focused()} == {"lp:input-type-overflow": "unspecified",
                                                             "lp:no-abs": "violation"}


def test_a_refusal_is_named_by_the_runtimes_words() -> None:
    msg = "NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for LpPool(18)"
    assert F.rejection_reason(msg) == "NotImplemented: Could not find an implementation for LpPool(N)"


def _campaign(peer: FamilyPeer, ops: tuple[str, ...], tmp_path, seconds: float = 60.0, **options_kw):
    options = FuzzOptions(ops=ops, ranks=(3, 4, 5), dtypes=FLOATS, peers=(peer,), time_budget=seconds, seed=3,
                          isolated=False, exit_first=True, database=str(tmp_path / "db"), **options_kw)
    return run_campaign(options, known_paths=(), save_dir=tmp_path / "finds")


@pytest.mark.parametrize("planted", PLANTED_FAMILY, ids=lambda c: c.name)
def test_each_planted_family_bug_is_found_first_and_named(planted: type[FamilyPeer], tmp_path) -> None:
    campaign = _campaign(planted(), planted.OPS, tmp_path)
    rows = [campaign.session.findings[s] for s in campaign.new]
    assert rows, f"{planted.name}: nothing found"
    assert len(rows) <= 2, [r.signature for r in rows]
    assert rows[0].subject == planted.name and rows[0].klass in planted.EXPECTED, [r.signature for r in rows]
    assert campaign.exit_code == 1
    saved = list((tmp_path / "finds").glob("*.yaml"))
    assert saved  # the case file of the find was written
    ran = cli("run", str(saved[0]))
    assert ran.returncode == 0, ran.stdout + ran.stderr  # and it loads and passes on the engines


def test_a_faithful_family_peer_stays_silent(tmp_path) -> None:
    # ends on its example count (the time budget only a cap): a 20 s budget spent 20 s of CPU
    # whatever the machine, with nothing to find
    campaign = _campaign(FamilyPeer(), FAMILY_OPS, tmp_path, seconds=600.0, max_examples=300)
    assert campaign.new == []
    assert campaign.result.fuzz is not None and sum(campaign.result.fuzz.compared.values()) > 100


@pytest.mark.parametrize("ops, words", [
    ("lpp", "--ops"),
    ("lp,maxpool", "on their own"),
])
def test_bad_family_ops_are_one_line_exit_2(ops: str, words: str) -> None:
    r = cli("fuzz", "--ops", ops, "--peers", "none", "--max-examples", "1")
    out = r.stdout + r.stderr
    assert r.returncode == 2
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], out


def test_family_ops_with_no_dtype_they_take_is_one_line() -> None:
    r = cli("fuzz", "--ops", "adaptive_avg", "--dtypes", "int8", "--peers", "none", "--max-examples", "1")
    out = (r.stdout + r.stderr).strip()
    assert r.returncode == 2 and "AdaptiveAvgPool-8" in out and len(out.splitlines()) == 1, out
