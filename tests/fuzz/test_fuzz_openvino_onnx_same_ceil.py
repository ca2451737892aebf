"""OpenVINO's ONNX frontend under SAME with ceil_mode=1 (``same:clamped-ceil-mode-applied``).

ONNX sizes a SAME output ceil(size / stride) whatever ceil_mode says. The frontend resolves the
SAME pads as OpenVINO does (the total clamped at 0) and then sizes the output by the explicit
formula with OpenVINO's ``ceil`` for ceil_mode=1: a last window may start past the input.
Measured with openvino 2026.4.1 (read_model on a MaxPool-22 model, CPU, one thread), 1-D sizes
1-8, kernels 1-3, strides 1-4, dilations 1-2, SAME_UPPER and SAME_LOWER, ceil_mode 0 and 1 (768
configurations): the output shape is that rule's on every one (80 ceil_mode=1 configurations differ
from ONNX's); with ceil_mode=0 it is same:clamped's. AveragePool does not follow it (its SAME
shapes there are ONNX's or another SAME variant's): the variant is MaxPool's.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle import Axis, max_pool_loops, onnx_index

from poolcheck.engines import get_engine
from poolcheck.fuzz.diagnosis import GEOMETRY_VARIANTS, diagnose_output, predict
from poolcheck.spec.operators import parse

ENGINE = get_engine("numpy")
KEY = "same:clamped-ceil-mode-applied"
GRID = list(itertools.product(range(1, 9), range(1, 4), range(1, 5), range(1, 3), ("SAME_UPPER", "SAME_LOWER")))


def frontend_axis(size: int, k: int, s: int, d: int, mode: str) -> Axis:
    """The frontend's axis: total = max(0, (ceil(size / s) - 1) * s + dilated kernel - size),
    the odd element at the end (SAME_UPPER) or the beginning (SAME_LOWER), then
    out = ceil((size + total - dilated kernel) / s) + 1."""
    dk = (k - 1) * d + 1
    total = max(0, (-(-size // s) - 1) * s + dk - size)
    begin = total // 2 if mode == "SAME_UPPER" else total - total // 2
    out = -(-(size + total - dk) // s) + 1
    return Axis(size, k, s, d, begin, total - begin, out)


def attrs_of(k: int, s: int, d: int, mode: str, ceil: int = 1) -> dict[str, object]:
    return {"kernel_shape": [k], "strides": [s], "dilations": [d], "auto_pad": mode, "ceil_mode": ceil}


def test_the_variant_is_the_loop_oracle() -> None:
    differs = 0
    for size, k, s, d, mode in GRID:
        x = (np.arange(size, dtype=np.float32) * 7 % 5 + 1).reshape(1, 1, size)
        spec = parse("MaxPool-22", attrs_of(k, s, d, mode))
        got = predict(ENGINE, spec, x, [KEY])
        assert got is not None and got[1] is not None
        axis = frontend_axis(size, k, s, d, mode)
        want, idx = max_pool_loops(x, [axis], onnx_index(x.shape, 0))
        assert got[0].shape == want.shape and np.array_equal(got[0], want), (size, k, s, d, mode)
        assert got[1].ravel().tolist() == idx, (size, k, s, d, mode)
        plain = predict(ENGINE, spec, x, [])
        differs += plain is None or plain[0].shape != want.shape
    assert differs > 20


def test_the_variant_applies_only_to_onnx_same_with_ceil_mode() -> None:
    gv = next(g for g in GEOMETRY_VARIANTS if g.key == KEY)
    assert gv.applies(parse("MaxPool-22", attrs_of(1, 2, 1, "SAME_UPPER")))
    assert not gv.applies(parse("MaxPool-22", attrs_of(1, 2, 1, "SAME_UPPER", ceil=0)))
    assert not gv.applies(parse("MaxPool-22", {"kernel_shape": [1], "strides": [2], "ceil_mode": 1}))
    # measured: the frontend's AveragePool under SAME with ceil_mode=1 (768 configurations,
    # count_include_pad 0/1) is diagnosed as 'same' (652) or an existing SAME variant, and 160 of its
    # output shapes are not this rule's
    assert not gv.applies(parse("AveragePool-22", attrs_of(1, 2, 1, "SAME_UPPER")))
    assert not gv.applies(parse("MaxPool-14", {"kernel": [1], "strides": [2], "auto_pad": "same_upper",
                                               "rounding_type": "ceil"}))


def test_the_spec_is_not_given_the_name() -> None:
    for size, k, s, d, mode in GRID[::5]:
        x = np.arange(1, size + 1, dtype=np.float32).reshape(1, 1, size)
        spec = parse("MaxPool-22", attrs_of(k, s, d, mode))
        plain = predict(ENGINE, spec, x, [])
        assert plain is not None
        assert KEY not in diagnose_output(ENGINE, spec, x, plain[0], plain[1]).klass


ov = pytest.importorskip("openvino")
onnx = pytest.importorskip("onnx")


def openvino_onnx(x: np.ndarray, attrs: dict[str, object]) -> tuple[np.ndarray, np.ndarray]:
    """A MaxPool-22 model read plainly by OpenVINO's ONNX frontend, run on the CPU."""
    h = onnx.helper
    node = h.make_node("MaxPool", ["X"], ["Y", "I"], **attrs)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("X", onnx.TensorProto.FLOAT, list(x.shape))],
                         [h.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None),
                          h.make_tensor_value_info("I", onnx.TensorProto.INT64, None)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    core = ov.Core()
    compiled = core.compile_model(core.read_model(model.SerializeToString(), b""), "CPU",
                                  {"INFERENCE_NUM_THREADS": 1})
    y, i = (np.asarray(v) for v in compiled.infer_new_request({0: x}).values())
    return y, i


def test_the_registry_input_is_named() -> None:
    x = np.array([[[1.0, 2.0]]], dtype=np.float32)
    attrs = attrs_of(1, 2, 1, "SAME_UPPER")
    y, i = openvino_onnx(x, attrs)
    assert y.shape == (1, 1, 2) and i.ravel().tolist() == [0, 0]  # ONNX: one output
    d = diagnose_output(ENGINE, parse("MaxPool-22", attrs), x, y, i)
    assert d.explained and KEY in d.atoms, d


def test_openvino_onnx_on_a_grid_is_named_with_no_remainder() -> None:
    named = 0
    for size, k, s, d, mode in GRID[::3]:
        x = np.arange(1, size + 1, dtype=np.float32).reshape(1, 1, size)
        attrs = attrs_of(k, s, d, mode)
        y, i = openvino_onnx(x, attrs)
        spec = parse("MaxPool-22", attrs)
        assert y.shape == (1, 1, frontend_axis(size, k, s, d, mode).out)
        diag = diagnose_output(ENGINE, spec, x, y, i)
        assert "unexplained" not in diag.klass, (size, k, s, d, mode, diag)
        if y.shape != predict(ENGINE, spec, x, [])[0].shape:  # type: ignore[index]
            assert KEY in diag.atoms, (size, k, s, d, mode, diag)
            named += 1
    assert named > 5
