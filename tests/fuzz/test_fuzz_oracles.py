"""The fuzzer's oracles and diagnosis, against simulated peers.

A simulated peer is poolcheck's own engine run under one named setting (a Policy, a different
geometry, another index layout) -- the diagnosis must name exactly that setting. Broken engines
(wrappers that get one thing wrong) must trip the metamorphic properties; the shape-rule oracle
must find the written rules' known gaps and nothing where the rules agree.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from poolcheck.engines import get_engine, numpy_engine
from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.diagnosis import (
    Placement,
    diagnose_output,
    diagnose_rejection,
    encode_indices,
)
from poolcheck.fuzz.diagnosis.variants import _legacy_same
from poolcheck.fuzz.reference import Outputs, canonical_layout, compute_expected
from poolcheck.fuzz.strategies import FuzzCase
from poolcheck.peers.base import PeerOutput, PeerResult
from poolcheck.spec import attributes as A
from poolcheck.spec.indices import index_layout
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import resolve

ENGINE = get_engine("auto")


def case(spec: A.PoolSpec, x: Any, op_name: str | None = None) -> FuzzCase:
    arr = np.asarray(x)
    name = op_name or {("max", "openvino"): "MaxPool-14", ("avg", "openvino"): "AvgPool-14",
                       ("max", "onnx"): "MaxPool-22", ("avg", "onnx"): "AveragePool-22"}[(spec.op, spec.convention)]
    return FuzzCase(name, {}, spec, arr, {})


def run(spec: A.PoolSpec, x: np.ndarray, policy: Policy = SPEC, geom: Any = None) -> Outputs:
    geom = geom or resolve(spec, x.shape)
    layout = index_layout(spec, x.shape) if spec.op == "max" else None
    return compute_expected(ENGINE, x, geom, spec.op, exclude_pad=spec.exclude_pad, layout=layout, policy=policy)


def x1(*values: float, dtype: str = "float32") -> np.ndarray:
    return np.asarray(values, dtype=dtype).reshape(1, 1, -1)


# --------------------------------------------------------------------------- policies

POLICY_CASES = [
    # (policy the simulated peer follows, spec, input, expected class)
    (Policy(nan="ignore"), A.openvino_max_pool([2], [2]), x1(1, np.nan, 3, 2), "nan=ignore"),
    (Policy(nan="first"), A.openvino_max_pool([2], [2]), x1(np.nan, 1, 3, np.nan), "nan=first"),
    (Policy(empty_max="lowest"), A.openvino_max_pool([2], [2], [2], [0]), x1(1, 2, 3, 4), "empty_max=lowest"),
    (Policy(empty_max="zero"), A.openvino_max_pool([2], [2], [2], [0]), x1(1, 2, 3, 4), "empty_max=zero"),
    # kernel 3, stride 2, pads 1/1, ceil: the last window {3, pad, overhang} -> full 3, padded 2, valid 1
    (Policy(divisor="full"), A.openvino_avg_pool([3], [2], [1], [1], True, "ceil"), x1(1, 2, 3, 4), "divisor=full"),
    (Policy(divisor="padded"), A.openvino_avg_pool([3], [2], [1], [1], True, "ceil"), x1(1, 2, 3, 4), "divisor=padded"),
    (Policy(divisor="valid"), A.openvino_avg_pool([2], [2], [1], [1], False), x1(1, 2, 3, 4), "divisor=valid"),
]


@pytest.mark.parametrize(("policy", "spec", "x", "klass"), POLICY_CASES, ids=[c[3] for c in POLICY_CASES])
def test_policy_of_a_simulated_peer_is_named(policy: Policy, spec: A.PoolSpec, x: np.ndarray, klass: str) -> None:
    peer = run(spec, x, policy)
    d = diagnose_output(ENGINE, spec, x, peer.values, peer.indices if policy.empty_max == "-inf" else None)
    assert d.explained
    assert d.klass == klass, d.text


def test_two_policies_at_once_are_both_named() -> None:
    """A leading NaN wins (strict '>' scan) AND a window wholly in padding gives 0."""
    spec = A.openvino_max_pool([2], [2], [2], [0])
    x = x1(np.nan, 1, 3, np.nan)
    peer = run(spec, x, Policy(nan="first", empty_max="zero"))
    d = diagnose_output(ENGINE, spec, x, peer.values, None)
    assert set(d.klass.split("+")) == {"nan=first", "empty_max=zero"}
    assert set(d.atoms) == {"nan=first", "empty_max=zero"}
    assert d.explained


def test_openvino_seeded_scan_is_one_behaviour() -> None:
    """OpenVINO 2026.4 CPU (measured): the max scan starts from the lowest value at index 0 of
    the plane with a strict '>', so NaN never wins, an element equal to the lowest value keeps
    index 0, and a window wholly in padding gives (lowest, 0) -- one behaviour, one class."""
    spec = A.openvino_max_pool([2], [2], [2], [0])
    low = float(np.finfo(np.float32).min)
    x = np.asarray([[[np.nan, 2, low, low]], [[5, 6, 7, 8]]], dtype=np.float32)
    # windows: {pad, pad} {NaN, 2} {low, low} -> (low, 0) (2, 1) (low, 0) per plane
    values = np.asarray([[[low, 2, low]], [[low, 6, 8]]], dtype=np.float32)
    indices = np.asarray([[[0, 1, 0]], [[4, 5, 7]]])
    d = diagnose_output(ENGINE, spec, x, values, indices)
    assert d.klass == "max=seeded-scan", d.text


def test_an_unknown_behaviour_is_reported_unexplained() -> None:
    spec = A.openvino_max_pool([2], [2])
    x = x1(1, 5, 3, 2)
    peer = run(spec, x).values.copy()
    peer[0, 0, 1] = 42.0
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert not d.explained
    assert d.klass == "unexplained values"


def test_preference_breaks_a_tie_between_equal_explanations() -> None:
    # The second window [3, NaN] reads 3 both when NaN is ignored and when a leading number wins.
    spec = A.openvino_max_pool([2], [2])
    x = x1(1, 2, 3, np.nan)
    peer = run(spec, x, Policy(nan="ignore"))
    assert diagnose_output(ENGINE, spec, x, peer.values, None, {"nan=first": 5}).klass == "nan=first"
    assert diagnose_output(ENGINE, spec, x, peer.values, None, {"nan=ignore": 5}).klass == "nan=ignore"
    assert diagnose_output(ENGINE, spec, x, peer.values, None).ambiguous


# --------------------------------------------------------------------------- geometry


def test_ceil_torch_computed_as_ceil_is_named() -> None:
    spec = A.openvino_max_pool([1], [2], rounding_type="ceil_torch")
    x = x1(1, 2)
    peer = run(spec.replace(rounding_type="ceil"), x)
    d = diagnose_output(ENGINE, spec, x, peer.values, peer.indices)
    assert d.klass == "rounding:ceil_torch->ceil"
    assert peer.values.shape[-1] == 2  # "the last pooling operation ... cannot start in the padding area"


def test_same_upper_and_lower_swapped_is_named() -> None:
    spec = A.openvino_max_pool([2], [1], auto_pad="same_upper")
    x = x1(1, 5, 2, 4)
    peer = run(spec.replace(auto_pad="same_lower"), x)
    assert diagnose_output(ENGINE, spec, x, peer.values, peer.indices).klass == "same:swapped"


def test_pads_swapped_and_dilations_ignored_are_named() -> None:
    spec = A.openvino_max_pool([2], [2], [1], [0])
    x = x1(1, 5, 2, 4, 3)
    peer = run(spec.replace(pads_begin=(0,), pads_end=(1,)), x)
    assert diagnose_output(ENGINE, spec, x, peer.values, peer.indices).klass == "pads:swapped"
    spec = A.openvino_max_pool([2], [1], dilations=[2])
    peer = run(spec.replace(dilations=(1,)), x)
    assert diagnose_output(ENGINE, spec, x, peer.values, peer.indices).klass == "dilations:ignored"


def test_onnxruntime_same_padding_model() -> None:
    """ONNX Runtime 1.31, measured: SAME pads from the undilated kernel, negative when the stride
    exceeds it, C integer division; e.g. size 7, kernel 1, stride 4, SAME_UPPER -> windows at 1, 5."""
    spec = A.onnx_max_pool([1], [4], auto_pad="SAME_UPPER")
    x = x1(*range(1, 8))
    place = _legacy_same(dilated=True)(spec, x.shape)
    assert place.crop == ((1, 7),)  # pad_head -1: the windows start one element into the input
    out = compute_expected(ENGINE, x[..., 1:], place.geom, "max")
    assert out.values.ravel().tolist() == [2.0, 6.0]
    lower = A.onnx_max_pool([1], [4], auto_pad="SAME_LOWER")
    place = _legacy_same(dilated=True)(lower, x.shape)  # pad_head = (-2 + 1) / 2 = 0 in C
    assert place.crop is None
    out = compute_expected(ENGINE, x, place.geom, "max")
    assert out.values.ravel().tolist() == [1.0, 5.0]
    # The spec (pad_shape as written, -2 split -1/-1): windows at 1 and 5 for both modes, so ONNX
    # Runtime's SAME_UPPER agrees; its SAME_LOWER (C division: 0/-2, windows at 0 and 4) is diagnosed.
    assert compute_expected(ENGINE, x, resolve(spec, x.shape), "max").values.ravel().tolist() == [2.0, 6.0]
    d = diagnose_output(ENGINE, lower, x, np.asarray([[[1.0, 5.0]]], np.float32), None)
    # here C division (0/-2) and clamping (0/0) place the windows alike: either name reproduces it
    assert d.klass in ("same:negative-pads", "same:clamped")
    # A peer that clamps the ONNX pad_shape at 0 (windows at 0 and 4 for SAME_UPPER) is named too.
    d = diagnose_output(ENGINE, spec, x, np.asarray([[[1.0, 5.0]]], np.float32), None)
    assert d.klass == "same:clamped"


def test_rejection_diagnosis() -> None:
    ort = ("Fail: [ONNXRuntimeError] : 1 : FAIL : pads[dim] < kernel_shape[dim] && pads[dim + kernel_shape.size()] "
           "< kernel_shape[dim] was false. Pad should be smaller than kernel.")
    ov = "Check '!op->get_exclude_pad() || ((kernel > pad_begin) && (kernel > pad_end))' failed"
    spec = A.openvino_avg_pool([2], [1], [2], [0], exclude_pad=True)
    x = x1(1, 2, 3)
    assert diagnose_rejection(spec, x, ort).klass == "rejects: pads >= kernel"
    assert diagnose_rejection(spec, x, ov).klass == "rejects: exclude_pad with pads >= kernel"
    assert diagnose_rejection(spec, x, "something else entirely 12").klass.startswith("rejects: ")
    # ORT's SAME arithmetic leaves this one without output: size 1, kernel 2, dilation 3
    same = A.openvino_max_pool([2], [1], dilations=[3], auto_pad="same_upper")
    msg = "Calculated output dimension is negative."
    assert diagnose_rejection(same, x1(1), msg).klass == "rejects: same:undilated-kernel gives no output"


# --------------------------------------------------------------------------- indices


def test_index_layout_variants_are_named() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    spec = A.openvino_max_pool([2], [2], axis=2)
    peer = run(spec.replace(axis=0), x)  # whole-tensor indices
    d = diagnose_output(ENGINE, spec, x, peer.values, peer.indices)
    assert d.klass == "index:axis-ignored"
    so = A.onnx_max_pool([2, 2], [1, 1], storage_order=1)
    x4 = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    peer = run(so.replace(storage_order=0), x4)
    assert diagnose_output(ENGINE, so, x4, peer.values, peer.indices).klass == "index:storage_order-ignored"


def test_empty_window_index_zero_is_named() -> None:
    spec = A.openvino_max_pool([2], [2], [2], [0])
    x = x1(1, 2, 3, 4)
    peer = run(spec, x)  # -inf, as specified, but index 0 instead of -1
    idx = np.where(peer.indices < 0, 0, peer.indices)
    d = diagnose_output(ENGINE, spec, x, peer.values, idx)
    assert d.klass == "empty_index=0"


def test_encode_indices_round_trip() -> None:
    shape = (2, 3, 4, 5)
    canon = np.arange(math.prod(shape)).reshape(shape)
    assert (encode_indices(canon, shape, "C", math.prod(shape)) == canon).all()
    plane = encode_indices(canon, shape, "C", 20)
    assert (plane == canon % 20).all()
    f = encode_indices(canon, shape, "F", math.prod(shape))
    assert f[0, 0, 1, 0] == 1 and f[0, 0, 0, 1] == 4  # column-major within the plane


# --------------------------------------------------------------------------- peer judgement


def test_check_peer_agreement_and_float_tolerance() -> None:
    spec = A.openvino_avg_pool([3], [1], [1], [1], exclude_pad=True)
    x = x1(0.1, 0.2, 0.7, 1.3, dtype="float32")
    c = case(spec, x)
    base, geom = O.expected_for(ENGINE, c)
    same = PeerResult("ok", PeerOutput(base.values.copy()))
    assert O.check_peer(c, "p", same, ENGINE, base, geom) is None
    nudged = np.nextafter(base.values, np.float32(np.inf)).astype(np.float32)  # one unit in the last place
    assert O.check_peer(c, "p", PeerResult("ok", PeerOutput(nudged)), ENGINE, base, geom) is None
    off = (base.values * np.float32(1.01)).astype(np.float32)
    f = O.check_peer(c, "p", PeerResult("ok", PeerOutput(off)), ENGINE, base, geom)
    assert f is not None and f.kind == "peer" and not f.explained


def test_check_peer_statuses() -> None:
    spec = A.openvino_max_pool([2], [1], [2], [0])
    c = case(spec, x1(1, 2, 3))
    base, geom = O.expected_for(ENGINE, c)
    assert O.check_peer(c, "p", PeerResult("declined", None, "no"), ENGINE, base, geom) is None
    crash = O.check_peer(c, "p", PeerResult("crash", None, "killed by SIGSEGV"), ENGINE, base, geom)
    assert crash is not None and crash.klass == "crash" and crash.signature == "peer|max|p|crash"
    # an invalid configuration (engine rejects: base None) that the peer computes anyway
    bad = FuzzCase("MaxPool-14", {}, spec.replace(strides=(0,)), c.x, {}, "stride 0")
    f = O.check_peer(bad, "p", PeerResult("ok", PeerOutput(base.values)), ENGINE, None, None)
    assert f is not None and f.kind == "invalid" and f.klass == "accepts invalid: stride 0"
    assert O.check_peer(bad, "p", PeerResult("rejects", None, "stride"), ENGINE, None, None) is None


# --------------------------------------------------------------------------- shape rules


def test_shape_rule_oracle_finds_the_written_rule_gaps() -> None:
    same = case(A.openvino_max_pool([1], [2], auto_pad="same_upper"), x1(1, 2, 3, 4))
    found = O.check_shape_rules(same, resolve(same.spec, same.x.shape))
    assert [f.klass for f in found] == ["same_*, any rounding"]
    assert found[0].extra["written_shape"] == [1, 1, 4] and found[0].extra["runtime_shape"] == [1, 1, 2]
    valid = case(A.openvino_max_pool([1], [2], rounding_type="ceil", auto_pad="valid"), x1(1, 2))
    assert [f.klass for f in O.check_shape_rules(valid, resolve(valid.spec, valid.x.shape))] == ["valid, ceil"]
    agree = case(A.openvino_max_pool([2], [2], [1], [1], rounding_type="ceil_torch"), x1(1, 2, 3, 4, 5))
    assert O.check_shape_rules(agree, resolve(agree.spec, agree.x.shape)) == []


# --------------------------------------------------------------------------- metamorphic


def _broken(**overrides: Any) -> SimpleNamespace:
    """The NumPy engine with some functions replaced."""
    eng = SimpleNamespace(NAME="broken", max_pool=numpy_engine.max_pool, avg_pool=numpy_engine.avg_pool)
    for k, v in overrides.items():
        setattr(eng, k, v)
    return eng


def _props(eng: Any, c: FuzzCase) -> set[str]:
    geom = resolve(c.spec, c.x.shape)
    layout = index_layout(c.spec, c.x.shape) if c.op == "max" else None
    base = compute_expected(eng, c.x, geom, c.op, exclude_pad=c.spec.exclude_pad, layout=layout)
    return {f.klass for f in O.check_metamorphic(c, eng, "broken", base, geom)}


MAX_CASE = case(A.openvino_max_pool([2, 2], [2, 2], [1, 1], [1, 1]), np.arange(1, 33, dtype=np.float32).reshape(2, 1, 4, 4))
AVG_CASE = case(A.openvino_avg_pool([2], [2], [1], [1], exclude_pad=True), x1(1, 2, 3, 4, 5, 6))


def test_metamorphic_properties_hold_on_the_engines() -> None:
    for name in ("numpy", "c"):
        try:
            eng = get_engine(name)
        except Exception:
            continue
        assert _props(eng, MAX_CASE) == set()
        assert _props(eng, AVG_CASE) == set()


def test_metamorphic_properties_catch_broken_engines() -> None:
    def off_by_one_index(x: np.ndarray, geom: Any, layout: Any, policy: Policy = SPEC) -> Any:
        v, i = numpy_engine.max_pool(x, geom, layout, policy)
        return v, (None if i is None else np.where(i >= 0, i + 1, i))

    def plus_one_avg(x: np.ndarray, geom: Any, exclude_pad: bool, policy: Policy = SPEC) -> np.ndarray:
        return numpy_engine.avg_pool(x, geom, exclude_pad, policy) + 1

    def ignores_begin_pad(x: np.ndarray, geom: Any, layout: Any, policy: Policy = SPEC) -> Any:
        shifted = type(geom)(geom.batch, geom.channels, tuple(
            type(a)(a.size, a.kernel, a.stride, a.dilation, 0, a.pad_end + a.pad_begin, a.out) for a in geom.axes))
        return numpy_engine.max_pool(x, shifted, layout, policy)

    assert "indices gather back" in _props(_broken(max_pool=off_by_one_index), MAX_CASE)
    assert "average of a constant" in _props(_broken(avg_pool=plus_one_avg), AVG_CASE)
    assert "flip symmetry" in _props(_broken(max_pool=ignores_begin_pad), case(
        A.openvino_max_pool([2], [2], [1], [1]), x1(1, 5, 2, 4, 3, 6)))


def test_engine_comparison_flags_a_differing_engine() -> None:
    def wrong(x: np.ndarray, geom: Any, layout: Any, policy: Policy = SPEC) -> Any:
        v, i = numpy_engine.max_pool(x, geom, layout, policy)
        return v * 2, i

    c = MAX_CASE
    base, geom = O.expected_for(numpy_engine, c)
    found = O.check_engines(c, {"numpy": numpy_engine, "broken": _broken(max_pool=wrong)}, base, geom)
    assert [f.signature for f in found] == ["engine|max|numpy vs broken|values"]
    assert O.check_engines(c, {"numpy": numpy_engine, "again": numpy_engine}, base, geom) == []


def test_canonical_layout_indices_decode() -> None:
    x = np.arange(12, dtype=np.float32).reshape(1, 2, 6)
    spec = A.openvino_max_pool([2], [2])
    out = compute_expected(ENGINE, x, resolve(spec, x.shape), "max", layout=canonical_layout(x.shape))
    assert out.indices is not None
    assert (x.reshape(-1)[out.indices.reshape(-1)] == out.values.reshape(-1)).all()
    assert Placement(resolve(spec, x.shape)).output_shape == (1, 2, 3)
