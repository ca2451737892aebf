"""``fuzz --ops`` for the rest of the family: strategies, engine and peer oracles, planted bugs.

Each planted family peer (tests/planted_peers/family.py) breaks one sentence of its operator's
text; a campaign with ``--exit-first`` must find it and give it its name. The faithful peer
stays silent. Bad ``--ops`` are one line, exit 2.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from planted_peers.family import PLANTED_FAMILY, FamilyPeer
from support import cli

from poolcheck.fuzz import family as F
from poolcheck.fuzz.campaign import run_campaign
from poolcheck.fuzz.diagnosis.family import _expected, agrees, diagnose_family
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


def test_torchs_float16_lp_product_overflows_exactly_past_the_range() -> None:
    """torch's lp_pool in float16 is avg_pool(x^p) times the kernel size, in float16: the squares of
    61..90 average 5,700, and times 30 overflow (inf), while those of 31..60 make 64,355, finite --
    above the bound a chain of roundings is judged by (about 63,500), below 65,504. Called plainly,
    it is lp:input-type-average with the product overflowing, unspecified (it was 'unexplained', a
    violation, in a 60 s family campaign, seed 12)."""
    torch = pytest.importorskip("torch")
    x = np.arange(1, 91, dtype=np.float16).reshape(1, 3, 5, 6)
    got = torch.nn.functional.lp_pool2d(torch.from_numpy(x), 2.0, (5, 6)).numpy()
    assert np.isinf(got[0, 2, 0, 0]) and np.isfinite(got[0, :2]).all()
    case = _case("GlobalLpPool-22", {"p": 2}, x)
    f = F.judge_family_peer(case, "torch", PeerResult("ok", PeerOutput(got)), F.expected(case), None)
    assert f is not None and f.explained and set(f.atoms) == {"lp:input-type-average", "lp:input-type-overflow"}
    assert {g.weight.value for g in f.focused()} == {"unspecified"}


def test_onnx_runtimes_float32_exponent_is_named_and_unspecified() -> None:
    """ONNX Runtime 1.32's LpPool p = 3 (recorded): ``powf(S, 1.0f / 3)`` is 4 float32 ulps above
    the norm at 1843 and 12 at 1e12, past the Lp rule; the float32 exponent reproduces it."""
    x = np.array([[[1843.0, 3318.0, 100000.0, 7.0, 1.0e12, 2.0]]], dtype=np.float32)
    case = _case("LpPool-22", {"kernel_shape": [1], "p": 3}, x)
    recorded = np.array([[[1843.00048828125, 3318.0009765625, 100000.03125, 7.000000476837158, 1000000782336.0,
                           2.0]]], dtype=np.float32)
    exp = F.expected(case)
    assert not agrees(case.spec, x, exp, (recorded, None))
    f = F.judge_family_peer(case, "p", PeerResult("ok", PeerOutput(recorded)), exp, None)
    assert f is not None and f.klass == "lp:root-exponent-float32" and f.explained
    assert f.weight.value == "unspecified"
    further = recorded.copy()
    further[0, 0, 0] = 1843.0 + 20 * 2.0 ** -13  # 20 ulps: past the variant's own bound (about 4 ulps) too
    assert "lp:root-exponent-float32" not in diagnose_family(case.spec, x, None, exp, (further, None))


def test_a_rounding_variant_within_the_lp_rule_still_names_the_step_out() -> None:
    """torch 2.13's vectorised pow(1/3) on 32 float32 elements (recorded): 3 ulps above the norm
    everywhere (inside the Lp rule), 4 at 1793 (S rounded to float32 first): only that one element
    diverges. The float32 exponent's own output (3 ulps) lies inside the rule too, yet it is no
    reference: a rounding variant says nothing only where it equals the reference exactly."""
    x = np.arange(1793, 1825, dtype=np.float32).reshape(1, 1, 32)
    case = _case("LpPool-22", {"kernel_shape": [1], "p": 3}, x)
    recorded = np.array([[[1793.00048828125] + [k + 0.0003662109375 for k in range(1794, 1825)]]], dtype=np.float32)
    exp = F.expected(case)
    assert not agrees(case.spec, x, exp, (recorded, None))
    assert diagnose_family(case.spec, x, None, exp, (recorded, None)) == ["lp:root-exponent-float32"]


#: torch 2.13's lp_pool1d/2d, p = 1 (recorded): the signed sum of x, taken as avg_pool in the input
#: type times the kernel size. float16 (kernel 6): -65509 averages to -10920 and comes back as -65520,
#: -inf, and -65448 as -65472 (the window's pieces past 65504 do not overflow on their own);
#: float32 and float64 (the whole plane): -M + 2 + ... + 9 + M + 11 + 12 summed in order is 23.
_M, _D = float(np.finfo(np.float32).max), float(np.finfo(np.float64).max)
_TORCH_P1 = [
    ("LpPool-22", {"kernel_shape": [6], "strides": [6], "p": 1},
     [[[5.0, 7.0, 58.0, -65504.0, -51.0, -24.0, -51.0, -24.0, 58.0, -65504.0, 26.0, 47.0]]], np.float16,
     [[[-np.inf, -65472.0]]], "lp:input-type-overflow+lp:no-abs"),
    ("GlobalLpPool-22", {"p": 1}, [[[[-_M, 2.0, 3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0, _M, 11.0, 12.0]]]], np.float32,
     [[[[23.0]]]], "lp:no-abs"),
    ("GlobalLpPool-22", {"p": 1}, [[[[-_M, 2.0, 3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0, _M, 11.0, 12.0]]]], np.float64,
     [[[[23.0]]]], "lp:no-abs"),
    # sum|x| past float64's own range (the fuzzer's find): the bound is infinite, 12 is a signed sum's value
    ("GlobalLpPool-22", {"p": 1}, [[[[-_D], [8.0], [9.0], [10.0], [_D], [12.0]]]], np.float64, [[[[12.0]]]],
     "lp:no-abs"),
    # (the seed-2 find) -DBL_MAX / 3 * 3 overflows to -inf; inf - DBL_MAX + 3 is inf, where the input-type
    # overflow of each part alone (inf - inf) gives NaN
    ("GlobalLpPool-22", {"p": 1}, [[[np.inf, -_D, 3.0], [-_D, 1.0, 2.0]]], np.float64, [[[np.inf], [-np.inf]]],
     "lp:input-type-overflow+lp:no-abs"),
    # (the seed-3 find) DBL_MAX + 9 stays finite until -inf arrives; summed positives first would overflow
    # to +inf and give NaN: which infinity comes first is the order's
    ("GlobalLpPool-22", {"p": 1}, [[[_D, 9.0, -np.inf, 14.0, _D]]], np.float64, [[[-np.inf]]],
     "lp:input-type-overflow+lp:no-abs"),
]


@pytest.mark.parametrize("op_name, attrs, values, dtype, recorded, klass", _TORCH_P1,
                         ids=["lp-float16", "global-float32", "global-float64", "global-float64-max", "global-float64-inf",
                                                       "global-float64-inf-race"])
def test_torchs_signed_sum_is_named_within_its_own_bound(op_name, attrs, values, dtype, recorded, klass) -> None:
    """A signed sum cancels: its error in the input type is bounded by the sum of |x|^p, not by
    the sum (the Lp rule's premise); within that bound the torch rows are ``lp:no-abs``, inf only
    with ``lp:input-type-overflow``. Both weigh as the violation."""
    x = np.array(values, dtype=dtype)
    case = _case(op_name, attrs, x)
    out = np.array(recorded, dtype=dtype)
    exp = F.expected(case)
    f = F.judge_family_peer(case, "p", PeerResult("ok", PeerOutput(out)), exp, None)
    assert f is not None and f.klass == klass and f.explained, f.klass
    assert f.weight.value == "violation"
    assert klass in diagnose_family(case.spec, x, None, exp, (out, None))


def test_the_signed_bound_is_no_blanket() -> None:
    """Outside the signed sum's bound nothing is named lp:no-abs: a window without cancellation
    keeps the tight bound, inf needs the sum to reach past the type's range."""
    x = np.array([[[-3.0, 2.0, -1.0, 4.0]]], dtype=np.float32)
    case = _case("LpPool-22", {"kernel_shape": [2], "p": 1}, x)
    exp = F.expected(case)
    signed = np.array([[[-1.0, 1.0, 3.0]]], dtype=np.float32)
    assert diagnose_family(case.spec, x, None, exp, (signed, None)) == ["lp:no-abs"]
    for wrong in ([[[-1.0, 1.0, 3.001]]], [[[-np.inf, 1.0, 3.0]]], [[[np.nan, 1.0, 3.0]]]):
        keys = diagnose_family(case.spec, x, None, exp, (np.array(wrong, dtype=np.float32), None))
        assert not any("lp:no-abs" in k for k in keys), (wrong, keys)
    cubed = _case("LpPool-22", {"kernel_shape": [2], "p": 3}, x)  # p = 3: a negative signed sum is NaN
    exp3 = F.expected(cubed)
    nan_first = np.array([[[np.nan, np.cbrt(7.0), np.cbrt(63.0)]]], dtype=np.float32)
    assert diagnose_family(cubed.spec, x, None, exp3, (nan_first, None))[0] == "lp:no-abs"


def test_a_refusal_is_named_by_the_runtimes_words() -> None:
    msg = "NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for LpPool(18)"
    assert F.rejection_reason(msg) == "NotImplemented: Could not find an implementation for LpPool(N)"


def _campaign(peer: FamilyPeer, ops: tuple[str, ...], tmp_path, seconds: float = 60.0, **options_kw):
    options = FuzzOptions(ops=ops, ranks=(3, 4, 5), dtypes=FLOATS, peers=(peer,), time_budget=seconds, seed=3,
                          isolated=False, database=str(tmp_path / "db"), **{"exit_first": True, **options_kw})
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


def test_a_refusal_of_an_index_the_misread_output_has_no_room_for_joins_its_cause(tmp_path) -> None:
    """MaxUnpool sized without output_shape refuses the indices past its end and drops nothing
    else: one bug, one finding, its refusals counted in it (they were a second finding, named
    by the refusal's words)."""
    from planted_peers.family import UnpoolOutputShapeIgnoredRefusing

    peer = UnpoolOutputShapeIgnoredRefusing()
    campaign = _campaign(peer, ("unpool",), tmp_path, exit_first=False, max_examples=20)
    rows = [campaign.session.findings[s] for s in campaign.new]
    assert [r.klass for r in rows] == ["unpool:output-shape-ignored"], [r.signature for r in rows]
    refused = [s for s, n in campaign.session.progress.divergent.items() if "|rejects" in s and n]
    assert refused  # the refusals happened (and, with no registry here, were joined to the one finding)


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


def test_no_abs_is_never_named_where_no_sign_can_matter() -> None:
    """OpenVINO (through its ONNX frontend) runs a float64 GlobalLpPool in float32: on this
    all-non-negative input (recorded, seed 3) it was named 'lp:no-abs+lp:root-exponent-float32',
    a violation claimed on nothing but the signed variant's wider bound (x^3 = |x|^3 here). With
    no negative number, or an even p, lp:no-abs is no name; with one, it still is."""
    spec = operators.parse("GlobalLpPool-22", {"p": 3})
    x = np.array([[[2, 2, 0, 2, 1, 0, 1, 0, 1, 2, 2, 1, 0, 2, 0, 2, 1, 2, 2]],
                  [[2, 0, 0, 0, 1, 2, 0, 0, 0, 2, 1, 1, 2, 2, 0, 1, 2, 0, 0]],
                  [[0, 1, 1, 2, 2, 2, 1, 2, 0, 0, 2, 0, 1, 1, 1, 1, 1, 1, 1]]], dtype=np.float64)
    actual = (np.array([[[4.254321098327637]], [[3.732511281967163]], [[3.6840317249298096]]]), None)
    named = diagnose_family(spec, x, None, _expected(spec, x), actual)
    assert not any("lp:no-abs" in k for k in named), named
    signed = x.copy()
    signed[0, 0, :4] = -signed[0, 0, :4]
    with np.errstate(all="ignore"):
        sums = np.sum(signed ** 3, axis=2, keepdims=True)
        torch_like = np.sign(sums) * np.abs(sums) ** (1 / 3)
    assert "lp:no-abs" in diagnose_family(spec, signed, None, _expected(spec, signed), (torch_like, None))


#: OpenVINO 2026.4's ONNX frontend on float64 LpPool / GlobalLpPool (recorded through
#: ``poolcheck run --peers openvino-onnx``): computed in float32, and the LpPool's SAME pads
#: clamped at 0 besides (width 7, stride 4, kernel 1: the written pad is (2 - 1) * 4 + 1 - 7 = -2).
OV_LP_X = np.array([[[[-1.7049107535537318, 7.0161952089298385, -6.205219602124109, -2.042041627079048,
                       6.177772772195387, 4.062450113336293, 0.6406169229764653]],
                     [[4.6907304837993555, -19.79713614790634, 7.149147722500559, -6.717513318656992,
                       -11.680338898591787, 1.9351203166469975, 4.9038141974457305]]]])
OV_LP_ATTRS = {"p": 3, "kernel_shape": [1, 1], "strides": [4, 4], "dilations": [2, 1], "ceil_mode": 1,
               "auto_pad": "SAME_UPPER"}
OV_LP_OUT = np.array([[[[1.7049107551574707, 6.177773475646973]], [[4.690730571746826, 11.680339813232422]]]])
OV_GLOBAL_X = np.linspace(8163.25, 11901.19, 42).reshape(1, 2, 3, 7)


def test_float64_lp_computed_as_float32_is_named_with_the_rest_and_weighed_by_its_atoms() -> None:
    """float64 computed as float32 is a behaviour of its own (unspecified, as for the adaptive
    pools), named alone or with what else the runtime does (here ONNX SAME pads clamped at 0: an
    erratum); the pair is weighed by its atoms, the most severe of them."""
    case = _case("LpPool-22", OV_LP_ATTRS, OV_LP_X)
    f = F.judge_family_peer(case, "ov", PeerResult("ok", PeerOutput(OV_LP_OUT)), F.expected(case), None)
    assert f is not None and f.explained and f.klass == "lp:float64-as-float32+same:clamped"
    assert f.weight.value == "unspecified"
    glob = _case("GlobalLpPool-2", {"p": 2}, OV_GLOBAL_X)
    as_float32 = F.expected(_case("GlobalLpPool-2", {"p": 2}, OV_GLOBAL_X.astype(np.float32)))[0].astype(np.float64)
    g = F.judge_family_peer(glob, "ov", PeerResult("ok", PeerOutput(as_float32)), F.expected(glob), None)
    assert g is not None and g.klass == "lp:float64-as-float32" and g.weight.value == "unspecified"


def test_run_weighs_a_family_pair_as_the_fuzzer_does(tmp_path) -> None:
    """``poolcheck run`` on the LpPool above with OpenVINO's ONNX frontend, called plainly: the
    same name, and the table's weight of its atoms (it weighed the pair as one unknown atom: a
    violation)."""
    pytest.importorskip("openvino")
    case = {"id": "ov-lp-f64", "op": "LpPool-22", "attributes": OV_LP_ATTRS, "dtype": "float64",
            "input": OV_LP_X.tolist(), "expected": {"shape": [1, 2, 1, 2]}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"schema": "poolcheck.case/1", "cases": [case]}))
    proc = cli("run", str(path), "--peers", "openvino-onnx", "--json")
    (check,) = [k for k in json.loads(proc.stdout)["cases"][0]["checks"] if k["runner"] == "openvino-onnx"]
    assert check["diagnosis"].startswith("lp:float64-as-float32+same:clamped: ")
    assert check["severity"] == "unspecified"


def test_a_many_tap_float16_sum_overflows_only_near_the_types_largest_value() -> None:
    """jax's GlobalLpPool (``jnp.linalg.norm(ord=3)`` of each float16 plane, recorded seed 3):
    inf where |x|^3 passes 65504, 14.46 on a plane of 0, 1 and 2. The input-type overflow bound
    ``max * (1 - (taps + 2) eps)`` fell below 3,031 at 989 taps and made that plane inf too, so
    only a coincidental 'lp:input-type-overflow+lp:no-abs' (a violation) fitted."""
    plane = (np.arange(43 * 23) % 3).astype(np.float16).reshape(43, 23)
    x = np.stack([plane, plane])[:, None].copy()
    x[0, 0, 17, 5] = -65504.0
    spec = operators.parse("GlobalLpPool-22", {"p": 3})
    small = float(np.sum(plane.astype(np.float64) ** 3) ** (1 / 3))
    jax_like = np.array([np.inf, small], dtype=np.float16).reshape(2, 1, 1, 1)
    assert diagnose_family(spec, x, None, _expected(spec, x), (jax_like, None)) == ["lp:input-type-overflow"]


def test_an_lp_sum_past_float64s_range_warns_of_nothing() -> None:
    """|x|^1 summed tap by tap: 1e308 + 1e308 is inf, as the sum of a window past the range is,
    without a RuntimeWarning between a campaign's tables (seed 24, an every-peer family campaign)."""
    import warnings

    spec = operators.parse("LpPool-22", {"p": 1, "kernel_shape": [2]})
    x = np.array([[[1.0e308, 1.0e308, 1.0, 2.0, 3.0]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        values = _expected(spec, x)[0]
    assert values.ravel().tolist() == [np.inf, 1.0e308, 3.0, 5.0]


HOSTILE = (np.nan, np.inf, -np.inf, 65504.0, -65504.0, 3.0e38, -3.0e38, 1.0e308, -1.0e308, 0.0, -0.0, 2.0)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(F.family_configs(FAMILY_OPS, (3, 4), ("float16", "float32", "float64", "bfloat16")))
def test_the_family_diagnosis_is_silent_on_hostile_numbers(case: F.FamilyCase) -> None:
    """Overflow, inf - inf and NaN comparisons are what the variants model, not accidents: the
    diagnosis of every variant on inputs of the type's extremes warns of nothing (60 s every-peer
    family campaigns printed five NumPy RuntimeWarnings between the tables)."""
    import warnings

    from poolcheck.spec import dtypes

    rng = np.random.default_rng(case.x.size)
    x = dtypes.cast(rng.choice(HOSTILE, size=case.x.shape), case.x.dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        expected = F.expected(F.FamilyCase(case.op_name, case.attributes, case.spec, x, {}, indices=case.indices),
                              "numpy")
        with np.errstate(over="ignore"):
            actual = (dtypes.cast(np.asarray(expected[0], np.float64) * 2 + 1, x.dtype), expected[1])
        diagnose_family(case.spec, x, case.indices, expected, actual)


def test_a_power_mean_is_named_lp_mean_and_the_norm_is_not() -> None:
    """tract's GlobalLpPool divides the sum of x^p by the plane's size before the root: called
    plainly it gives sqrt(25 / 2) for the plane {3, 4} (the registry's entry, 'unexplained values'
    until this variant), and the signed mean for an odd p; the spec's own norm, or a norm scaled
    otherwise, is not given the name."""
    spec = operators.parse("GlobalLpPool-22", {"p": 2})
    x = np.array([[[[3.0, 4.0]]]], dtype=np.float32)
    mean = np.array([[[[np.sqrt(12.5)]]]], dtype=np.float32)
    assert diagnose_family(spec, x, None, _expected(spec, x), (mean, None)) == ["lp:mean"]
    assert diagnose_family(spec, x, None, _expected(spec, x), (mean * 2, None)) == []
    assert agrees(spec, x, _expected(spec, x), (np.array([[[[5.0]]]], dtype=np.float32), None))
    odd = operators.parse("GlobalLpPool-22", {"p": 3})
    y = np.arange(-5.0, 7.0).reshape(1, 2, 6)
    signed = np.cbrt(np.array([(y[0, 0] ** 3).mean(), (y[0, 1] ** 3).mean()]))
    signed[0] = np.nan  # C's pow of a negative base (the sum of -125..0 is negative)
    assert diagnose_family(odd, y, None, _expected(odd, y), (signed.reshape(1, 2, 1), None)) == ["lp:mean+lp:no-abs"]
    tract = pytest.importorskip("tract")
    del tract
    from poolcheck.peers.registry import resolve_peer

    got = resolve_peer("tract").run(spec, x).values
    assert diagnose_family(spec, x, None, _expected(spec, x), (got, None)) == ["lp:mean"]
    # a plane holding -FLT_MAX is inf in float32, where the float64 mean's root is finite (NEW as
    # 'unexplained values' in the next campaign, seed 28)
    big = np.array([[[1.0, 2.0], [-3.4028234663852886e38, 4.0]]], dtype=np.float32)
    got = resolve_peer("tract").run(spec, big).values
    assert np.isinf(got[0, 1, 0]) and np.isfinite(_expected(spec, big)[0][0, 1, 0])
    assert diagnose_family(spec, big, None, _expected(spec, big), (got, None)) == ["lp:mean"]
    # float16: for p = 2 the mean of the squares is held in the type ({250, 250}, squares summing
    # past 65504, gives 250; {300, 300} inf), for p = 4 the sum is ({13, 14}: 28561 + 38416 is
    # inf) -- two code paths, two names (each 'unexplained values' at seed 28)
    half = np.array([[[250.0, 250.0]], [[300.0, 300.0]]], dtype=np.float16)
    got = resolve_peer("tract").run(spec, half).values
    assert got.ravel().tolist() == [250.0, np.inf]
    assert diagnose_family(spec, half, None, _expected(spec, half), (got, None)) == ["lp:mean"]
    fourth = operators.parse("GlobalLpPool-22", {"p": 4})
    sums = np.array([[[13.0, 14.0]], [[1.0, 2.0]]], dtype=np.float16)
    got = resolve_peer("tract").run(fourth, sums).values
    assert np.isinf(got[0, 0, 0]) and np.isfinite(got[1, 0, 0])
    assert diagnose_family(fourth, sums, None, _expected(fourth, sums), (got, None)) == ["lp:input-type-overflow+lp:mean"]


def test_tracts_float64_global_lp_pool_is_cast_to_float32_not_saturated() -> None:
    """tract runs a float64 GlobalLpPool in float32 by a plain cast: an inf stays inf (OpenVINO's
    saturating transform, lp:float64-as-float32, gives 3.4028235e38 there). The plane holding inf
    made the pair 'unexplained values', NEW in every-peer family campaigns (seed 51 on an AVX2
    EPYC); the cast names it, and tract's own output on the same input gets the same name."""
    spec = operators.parse("GlobalLpPool-22", {"p": 2})
    x = np.array([[[np.inf, 1.0, 2.0], [3.0, 4.0, 5.0]]])
    mean32 = np.sqrt(np.array([np.inf, (9 + 16 + 25) / 3], dtype=np.float32))
    got = mean32.astype(np.float64).reshape(1, 2, 1)
    assert diagnose_family(spec, x, None, _expected(spec, x), (got, None)) == \
        ["lp:float64-cast-to-float32+lp:mean"]
    saturated = np.where(np.isinf(got), float(np.finfo(np.float32).max), got)
    assert "lp:float64-cast-to-float32+lp:mean" not in diagnose_family(spec, x, None, _expected(spec, x),
                                                                        (saturated, None))
    tract = pytest.importorskip("tract")
    del tract
    from poolcheck.peers.registry import resolve_peer

    got = resolve_peer("tract").run(spec, x).values
    assert diagnose_family(spec, x, None, _expected(spec, x), (got, None)) == ["lp:float64-cast-to-float32+lp:mean"]
