"""OpenVINO's CPU plugin runs a float64 model in float32: inputs past float32's range (inf
included) saturate to its largest magnitude going in, and an inf coming out does too (``inf * inf``
in an f64 Mul gives 3.4028235e38). Its ONNX frontend builds GlobalLpPool's root as pow(S, 1/p)
with 1/p a constant of the input's type (0.33325195 for p = 3 in float16). Called plainly here
(onnx.helper models, ``Core.compile_model``), each is one class, unspecified: a 90 s every-peer
family campaign (seed 14) had openvino-onnx's LpPool under eight names, five of them violations
('unexplained values', 'window:last-tap-dropped', '+dilations:ignored' on a kernel of 1, ...)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from poolcheck.fuzz import family as F
from poolcheck.fuzz.oracles import Finding
from poolcheck.peers.base import PeerOutput, PeerResult
from poolcheck.spec.operators import parse

CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}
BIG = float(np.finfo(np.float32).max)


def openvino_onnx(op: str, x: np.ndarray, **attrs: object) -> np.ndarray:
    """``op`` (opset 22) read by OpenVINO's ONNX frontend and run on the CPU plugin."""
    ov = pytest.importorskip("openvino")
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", elem, list(x.shape))],
                              [helper.make_tensor_value_info("y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    core = ov.Core()
    compiled = core.compile_model(core.read_model(model.SerializeToString(), b""), "CPU", CONFIG)
    return np.asarray(compiled([x])[compiled.outputs[0]])


def judged(op_name: str, attrs: dict, x: np.ndarray, got: np.ndarray) -> Finding | None:
    spec = parse(op_name, attrs)
    case = F.FamilyCase(op_name, attrs, spec, x, {})
    return F.judge_family_peer(case, "openvino-onnx", PeerResult("ok", PeerOutput(got)), F.expected(case), None)


def test_float64_lp_pool_is_float32_both_ways() -> None:
    x = np.array([[[np.inf, np.inf, 58.0, 1e300, 1.0, -np.inf, 3e38, 3e38]], [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]])
    got = openvino_onnx("LpPool", x, kernel_shape=[2], p=2)
    assert (got[0] == BIG).all()  # every window saturated, none inf
    assert got[1, 0, 0] == float(np.float32(np.sqrt(5.0)))  # float32's root, not float64's
    f = judged("LpPool-22", {"kernel_shape": [2], "p": 2}, x, got)
    assert f is not None and f.explained and f.atoms == ("lp:float64-as-float32",), f
    assert f.weight.value == "unspecified"
    # a dilation on a kernel of 1 changes nothing: not named beside it
    y = np.arange(1.0, 31.0).reshape(1, 1, 15, 2)
    attrs = {"kernel_shape": [15, 1], "dilations": [1, 2], "p": 2}
    f = judged("LpPool-22", attrs, y, openvino_onnx("LpPool", y, **attrs))
    assert f is not None and f.atoms == ("lp:float64-as-float32",), f


def test_float16_global_lp_pool_takes_the_root_with_a_float16_exponent() -> None:
    x = np.array([[[60000.0]], [[50000.0]], [[3.0]]], dtype=np.float16)
    got = openvino_onnx("GlobalLpPool", x, p=3)
    assert got[0, 0, 0] == 59840.0  # 60000 ** (3 * fl16(1/3)): 0.27% low, past the Lp rule's 0.22%
    f = judged("GlobalLpPool-22", {"p": 3}, x, got)
    assert f is not None and f.explained and f.atoms == ("lp:root-exponent-input-type",), f
    assert f.weight.value == "unspecified"


def test_float64_global_pools_are_float32_too() -> None:
    x = np.array([[[-3.0, 1.0, 31.0]], [[np.inf, 1.1, 2.0]]])
    for op in ("GlobalAveragePool", "GlobalMaxPool"):
        got = openvino_onnx(op, x)
        want = F.expected(F.FamilyCase(f"{op}-22", {}, parse(f"{op}-22", {}), x, {}))[0]
        assert not np.array_equal(got, want) and np.isfinite(got).all()  # float32 roundings; inf saturated
        f = judged(f"{op}-22", {}, x, got)
        assert f is not None and f.atoms == ("global:float64-as-float32",) and f.weight.value == "unspecified", f


def test_an_output_an_open_behaviour_explains_is_named_by_it() -> None:
    """float32 |x|^p overflowing gives inf, as a sum left without its root would: the mildest
    explanation names the finding (a power or sum in the input type, unspecified), the other is
    an alternative (it was lp:no-root, a violation, by table order)."""
    x = np.array([[[*range(1, 19), -BIG]]], dtype=np.float32)
    got = openvino_onnx("LpPool", x, kernel_shape=[19], p=2)
    assert np.isinf(got).all()
    f = judged("LpPool-22", {"kernel_shape": [19], "p": 2}, x, got)
    assert f is not None and f.klass in ("lp:input-type-overflow", "lp:input-type-average"), f
    assert f.weight.value == "unspecified"
    assert ["lp:no-root"] in f.extra["alternatives"]


def test_a_seeded_max_leaves_a_plane_of_nan_open() -> None:
    """OpenVINO's GlobalMaxPool seeds with the lowest finite value (a plane of -inf gives
    -3.4028235e38) and gives NaN for a plane of NaN only: what a plane of NaN gives is a NaN
    question, left open, so global:seed-lowest names it (it was 'unexplained values' in a 90 s
    every-peer family campaign, seed 16)."""
    x = np.array([[[np.nan], [2.0], [3.0]], [[-np.inf], [8.0], [9.0]]], dtype=np.float32)
    got = openvino_onnx("GlobalMaxPool", x)
    assert np.isnan(got[0, 0, 0]) and got[1, 0, 0] == -BIG
    f = judged("GlobalMaxPool-22", {}, x, got)
    assert f is not None and f.atoms == ("global:seed-lowest",), f


def test_float32_and_two_misreadings_are_one_name() -> None:
    """A float64 LpPool under VALID with ceil_mode=1: OpenVINO computes it in float32, applies
    the ceil rounding VALID leaves out, and scales the last window's one tap by the kernel size.
    The three at once are one name (it was 'unexplained shape', seed 17); its severity is the
    contradicted sentences'."""
    x = np.arange(1.0, 5.0).reshape(1, 1, 4, 1, 1)
    attrs = {"kernel_shape": [2, 1, 1], "strides": [3, 1, 1], "ceil_mode": 1, "auto_pad": "VALID", "p": 2}
    got = openvino_onnx("LpPool", x, **attrs)
    assert got.shape == (1, 1, 2, 1, 1) and got[0, 0, 1, 0, 0] == float(np.float32(np.sqrt(32.0)))
    f = judged("LpPool-22", attrs, x, got)
    assert f is not None and f.explained and f.atoms[0] == "lp:float64-as-float32", f
    assert "lp:ceil-window-rescaled" in f.atoms and len(f.atoms) == 3 and f.weight.value == "violation"


def test_float64_lp_pool_with_negative_same_pads_is_named_after_the_pad_rule_on_record() -> None:
    """Several SAME rules for a negative pad total reproduce this float64 LpPool (seed 24, an
    every-peer family campaign): kept negative, clamped at 0, cropped, halved rounding down. The
    mildest, rules openvino-onnx's LpPool never showed, named it NEW; with the peer's history
    (seeded from the registry: same:clamped is its LpPool's float32 class) it is the one on
    record."""
    x = np.array([[[[9.0, 45.0, np.inf, 3.0], [24.0, 30.0, -58.0, -52.0]],
                   [[-1.0, -32.0, 39.0, -2.0], [-8.0, -np.inf, np.inf, 1.7976931348623157e308]],
                   [[53.0, -58.0, -19.0, 23.0], [43.0, -23.0, 10.0, 14.0]]]])
    attrs = {"p": 3, "kernel_shape": [1, 2], "strides": [4, 2], "auto_pad": "SAME_LOWER"}
    got = openvino_onnx("LpPool", x, **attrs)
    spec = parse("LpPool-22", attrs)
    case = F.FamilyCase("LpPool-22", attrs, spec, x, {})
    result = PeerResult("ok", PeerOutput(got))
    alone = F.judge_family_peer(case, "openvino-onnx", result, F.expected(case), None)
    assert alone is not None and alone.klass.startswith("lp:float64-as-float32+same:negative-pads"), alone
    assert ["lp:float64-as-float32", "same:clamped"] in alone.extra["alternatives"]
    history = {"same:clamped+lp:input-type-average": 1, "lp:float64-as-float32": 1}
    named = F.judge_family_peer(case, "openvino-onnx", result, F.expected(case), None, history)
    assert named is not None and named.klass == "lp:float64-as-float32+same:clamped", named
    assert named.weight == alone.weight
