"""The family's reference engine against the runtimes that have the operators, called plainly
(no poolcheck peer code): ONNX Runtime, onnx.reference, torch and OpenVINO.

Agreement is asserted where the runtime follows the text; the known divergences are asserted
as what they are (so a runtime that changes shows up here):

- onnx.reference MaxUnpool with output_shape places the indices in the shape inferred without
  it, then pads that to output_shape (the documented example does the same; see the erratum of
  onnx-maxunpool-with-output-shape). ONNX Runtime and torch address the output itself.
- onnx.reference's GlobalMaxPool reduces the wrong axes of 3-D and 5-D inputs (onnx/onnx#7682).
- onnx.reference has no GlobalLpPool; ONNX Runtime has no GlobalLpPool-22 kernel
  (NOT_IMPLEMENTED) but runs GlobalLpPool-2 (a model at opset 21).
- OpenVINO's CPU plugin refuses AdaptiveMaxPool-8 with i64 indices (the default); i32 agrees.
- torch's lp_pool raises x (not |x|) to the p-th power: for odd p and negative inputs it
  differs (p = 1 sums signed values; p = 3 takes the cube root of a negative sum: NaN).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import poolcheck as P

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

F32_EPS = float(np.finfo(np.float32).eps)


def _model(op: str, inputs: int, opset: int = 22, **attrs: Any) -> Any:
    names = ["x", "i", "s"][:inputs]
    types = [TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT64]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, None) for n, t in zip(names, types)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _ort(model: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _reference(model: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(model).run(None, feeds)[0]


def _rel_close(expected: np.ndarray, actual: np.ndarray, terms: int) -> None:
    """float32 runtimes accumulate in float32: within ``terms`` float32 roundings of the result."""
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    tol = terms * F32_EPS * np.abs(expected.astype(np.float64)) + np.spacing(np.abs(expected)).astype(np.float64)
    assert np.all(np.abs(actual.astype(np.float64) - expected.astype(np.float64)) <= tol)


def _x(seed: int, shape: tuple[int, ...] = (1, 2, 5, 6)) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("run", [_ort, _reference], ids=["onnxruntime", "onnx.reference"])
@pytest.mark.parametrize(("p", "pads", "strides", "seed"), [
    (1, [0, 0, 0, 0], [1, 1], 0), (2, [1, 1, 0, 1], [1, 1], 1), (3, [1, 0, 1, 1], [2, 1], 2), (4, [0, 2, 0, 2], [1, 3], 3),
])
def test_lp_pool_agrees_with_onnx_runtimes(run: Any, p: int, pads: list[int], strides: list[int], seed: int) -> None:
    x = _x(seed)
    got = run(_model("LpPool", 1, kernel_shape=[2, 3], p=p, pads=pads, strides=strides), {"x": x})
    _rel_close(P.onnx_lp_pool(x, [2, 3], p=p, pads=pads, strides=strides), got, 2 * 6 + 4)


@pytest.mark.parametrize("run", [_ort, _reference], ids=["onnxruntime", "onnx.reference"])
@pytest.mark.parametrize("shape", [(2, 3, 7), (2, 3, 4, 5), (2, 3, 4, 5, 3)])
def test_global_average_and_max_agree_with_onnx_runtimes(run: Any, shape: tuple[int, ...]) -> None:
    x = _x(len(shape), shape)
    _rel_close(P.onnx_global_average_pool(x), run(_model("GlobalAveragePool", 1), {"x": x}), 60 + 2)
    got = run(_model("GlobalMaxPool", 1), {"x": x})
    ours = P.onnx_global_max_pool(x)
    if run is _reference and len(shape) != 4 and got.shape != ours.shape:
        # onnx/onnx#7682: onnx.reference's GlobalMaxPool reduces axes (s, s + 1) for s spatial
        # axes, right only for 4-D inputs; merged upstream fix #8383, not in every release.
        spatial = len(shape) - 2
        wrong = x.max(axis=(spatial, spatial + 1)).reshape(*x.max(axis=(spatial, spatial + 1)).shape, *[1] * spatial)
        assert np.array_equal(got, wrong)
        return
    assert np.array_equal(ours, got)


def test_global_lp_pool_gaps_and_agreement() -> None:
    x = _x(4)
    with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
        _ort(_model("GlobalLpPool", 1, opset=22, p=3), {"x": x})
    with pytest.raises(Exception, match="GlobalLpPool"):
        _reference(_model("GlobalLpPool", 1, opset=21, p=3), {"x": x})
    for p in (1, 2, 3):
        _rel_close(P.onnx_global_lp_pool(x, p=p), _ort(_model("GlobalLpPool", 1, opset=21, p=p), {"x": x}), 2 * 30 + 4)


def test_max_unpool_agrees_and_the_reference_diverges_with_output_shape() -> None:
    x = np.array([[[5, 6, 7]]], dtype=np.float32)
    collide = np.array([[[1, 1, 4]]], dtype=np.int64)  # two values for position 1: the last stays
    ours = P.onnx_max_unpool(x, collide, [2], strides=[2])
    for run in (_ort, _reference):
        assert np.array_equal(ours, run(_model("MaxUnpool", 2, kernel_shape=[2], strides=[2]), {"x": x, "i": collide}))
    xs = np.array([[[[5, 6], [7, 8]]]], dtype=np.float32)
    idx = np.array([[[[5, 7], [13, 15]]]], dtype=np.int64)
    feeds = {"x": xs, "i": idx, "s": np.array([1, 1, 5, 5], dtype=np.int64)}
    model = _model("MaxUnpool", 3, kernel_shape=[2, 2], strides=[2, 2])
    ours = P.onnx_max_unpool(xs, idx, [2, 2], strides=[2, 2], output_shape=[1, 1, 5, 5])
    assert np.array_equal(ours, _ort(model, feeds))
    reference = _reference(model, feeds)
    assert not np.array_equal(ours, reference)
    inferred = P.onnx_max_unpool(xs, idx, [2, 2], strides=[2, 2])  # 4x4, then padded to 5x5
    assert np.array_equal(reference, np.pad(inferred, [(0, 0), (0, 0), (0, 1), (0, 1)]))


def test_torch_adaptive_pooling_and_max_unpool_agree() -> None:
    torch = pytest.importorskip("torch")
    x = _x(5, (2, 3, 7, 5))
    t = torch.from_numpy(x)
    for outs in ([3, 4], [7, 5], [9, 11], [1, 1]):
        avg = torch.nn.functional.adaptive_avg_pool2d(t, outs).numpy()
        values, indices = torch.nn.functional.adaptive_max_pool2d(t, outs, return_indices=True)
        _rel_close(P.adaptive_avg_pool(x, outs), avg, 4 * 3 + 2)
        ours, ours_i = P.adaptive_max_pool(x, outs)
        assert np.array_equal(ours, values.numpy()) and np.array_equal(ours_i, indices.numpy())
    pooled, where = torch.nn.functional.max_pool2d(t, 2, 2, return_indices=True)
    plane = x.shape[2] * x.shape[3]
    flat = where.numpy() + plane * np.arange(6).reshape(2, 3, 1, 1)  # ONNX indices are flat over N, C too
    back = torch.nn.functional.max_unpool2d(pooled, where, 2, 2, output_size=x.shape[2:]).numpy()
    assert np.array_equal(P.onnx_max_unpool(pooled.numpy(), flat, [2, 2], strides=[2, 2],
                                            output_shape=list(x.shape)), back)


def test_torch_lp_pool_agrees_for_even_p_and_diverges_for_odd_p_on_negatives() -> None:
    torch = pytest.importorskip("torch")
    x = _x(6)
    t = torch.from_numpy(x)
    got = torch.nn.functional.lp_pool2d(t, 2, (2, 3), stride=(2, 3)).numpy()
    _rel_close(P.onnx_lp_pool(x, [2, 3], p=2, strides=[2, 3]), got, 2 * 6 + 4)
    positive = np.abs(x)
    got = torch.nn.functional.lp_pool2d(torch.from_numpy(positive), 3, (2, 3), stride=(2, 3)).numpy()
    _rel_close(P.onnx_lp_pool(positive, [2, 3], p=3, strides=[2, 3]), got, 2 * 6 + 8)
    signed = torch.nn.functional.lp_pool2d(t, 1, (2, 3), stride=(2, 3)).numpy()
    sums = x[:, :, :4, :].reshape(1, 2, 2, 2, 2, 3).astype(np.float64).sum(axis=(3, 5))  # sum of x, not of |x|
    assert np.allclose(signed, sums, rtol=1e-5, atol=1e-5)
    assert not np.allclose(signed, P.onnx_lp_pool(x, [2, 3], p=1, strides=[2, 3]))


def test_openvino_adaptive_pooling_agrees() -> None:
    ov = pytest.importorskip("openvino")
    opset8 = pytest.importorskip("openvino.opset8")
    x = _x(7, (1, 2, 5, 6))
    core = ov.Core()
    for outs in ([3, 4], [7, 9], [5, 6]):
        for index_type, dtype in (("i32", np.int32),):
            data = opset8.parameter(list(x.shape), np.float32)
            shape = opset8.constant(np.array(outs, dtype=np.int64))
            avg = core.compile_model(ov.Model([opset8.adaptive_avg_pool(data, shape).output(0)], [data]), "CPU")
            node = opset8.adaptive_max_pool(data, shape, index_type)
            mx = core.compile_model(ov.Model([node.output(0), node.output(1)], [data]), "CPU")
            _rel_close(P.adaptive_avg_pool(x, outs), avg([x])[0], 4 * 3 + 2)
            values, indices = mx([x])[0], mx([x])[1]
            ours, ours_i = P.adaptive_max_pool(x, outs, index_element_type=index_type)
            assert np.array_equal(ours, values) and ours_i.dtype == dtype == indices.dtype
            assert np.array_equal(ours_i, indices)
    # The CPU plugin refuses i64 indices ("CPU plugin does not support i64 for use with oneDNN"),
    # the operator's default: a runtime limitation, not a divergence of values.
    data = opset8.parameter(list(x.shape), np.float32)
    node = opset8.adaptive_max_pool(data, opset8.constant(np.array([2, 2], dtype=np.int64)), "i64")
    try:
        compiled = core.compile_model(ov.Model([node.output(0), node.output(1)], [data]), "CPU")
    except RuntimeError as exc:
        assert "i64" in str(exc)
    else:  # a version that accepts it must agree
        ours, ours_i = P.adaptive_max_pool(x, [2, 2])
        assert np.array_equal(ours, compiled([x])[0]) and np.array_equal(ours_i, compiled([x])[1])
