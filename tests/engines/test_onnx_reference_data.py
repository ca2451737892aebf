"""poolcheck's engines against ONNX's own test data and reference implementation.

1. The official ONNX backend node tests (``test_maxpool_*``, ``test_averagepool_*``). The pip wheel
   ships no ``onnx/backend/test/data/node`` directory, so the cases are regenerated from the very
   definitions that produce it (``onnx.backend.test.case.node.maxpool`` / ``averagepool``: node,
   inputs, expected outputs, tolerances) and compared the way the ONNX backend runner does.
2. ``onnx.reference.ReferenceEvaluator`` on drawn configurations, restricted to the domain where
   that reference is sound. Outside it the reference is wrong (each exclusion below names the
   defect, read from onnx/reference/ops/op_max_pool.py, _op_common_pool.py, op_pool_common.py of
   onnx 1.23 and confirmed against the loop oracle), so comparing there would test the reference.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

import numpy as np
import oracle
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import poolcheck
from poolcheck.engines import available_engines

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

try:  # the shared ``engine`` fixture (tests/conftest.py), when present, drives the parametrisation
    import conftest as _conftest

    _HAS_ENGINE_FIXTURE = hasattr(_conftest, "engine")
except ImportError:  # pragma: no cover
    _HAS_ENGINE_FIXTURE = False

if not _HAS_ENGINE_FIXTURE:

    @pytest.fixture(params=available_engines())
    def engine(request: pytest.FixtureRequest) -> str:
        return str(request.param)


# --------------------------------------------------------------------------- 1. official node cases


def _official_cases() -> list[Any]:
    """The MaxPool / AveragePool node test cases, built by onnx's case generator."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("maxpool", "averagepool"):
            importlib.import_module(f"onnx.backend.test.case.node.{name}")
    return [c for c in node._NodeTestCases if c.model.graph.node[0].op_type in ("MaxPool", "AveragePool")]


OFFICIAL = _official_cases()


def _attributes(node: Any) -> dict[str, Any]:
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if isinstance(attrs.get("auto_pad"), bytes):
        attrs["auto_pad"] = attrs["auto_pad"].decode()
    return attrs


def test_official_cases_found() -> None:
    names = {c.name for c in OFFICIAL}
    # onnx 1.16+ defines 19 MaxPool and 20 AveragePool node tests; these two anchor the set.
    assert "test_maxpool_with_argmax_2d_precomputed_strides" in names
    assert "test_averagepool_2d_ceil_last_window_starts_on_pad" in names


@pytest.mark.parametrize("case", OFFICIAL, ids=[c.name for c in OFFICIAL])
def test_official_onnx_node_case(engine: str, case: Any) -> None:
    node = case.model.graph.node[0]
    attrs = _attributes(node)
    for inputs, outputs in case.data_sets:
        x = inputs[0] if isinstance(inputs[0], np.ndarray) else numpy_helper.to_array(inputs[0])
        if node.op_type == "MaxPool":
            values, indices = poolcheck.onnx_max_pool(x, **attrs, engine=engine)
            # Max pooling selects an input element: no tolerance.
            np.testing.assert_array_equal(values, outputs[0], err_msg=case.name)
            assert values.dtype == outputs[0].dtype
            if len(outputs) > 1:
                np.testing.assert_array_equal(indices, outputs[1], err_msg=case.name)
        else:
            got = poolcheck.onnx_average_pool(x, **attrs, engine=engine)
            assert got.dtype == outputs[0].dtype
            # The backend runner's comparison, with the case's own tolerances (rtol 1e-3, atol 1e-7:
            # some expected outputs are typed in with 4 decimals).
            np.testing.assert_allclose(got, outputs[0], rtol=case.rtol, atol=case.atol, err_msg=case.name)


# --------------------------------------------------------------------------- 2. ReferenceEvaluator


def reference_run(op: str, x: np.ndarray, attrs: dict[str, Any]) -> list[np.ndarray]:
    outputs = ["y", "i"] if op == "MaxPool" else ["y"]
    node = helper.make_node(op, ["x"], outputs, **attrs)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        [node], "pool", [helper.make_tensor_value_info("x", elem, None)],
        [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(ReferenceEvaluator(model).run(None, {"x": x}))


def _axes(x: np.ndarray, attrs: dict[str, Any]) -> list[oracle.Axis]:
    n = len(attrs["kernel_shape"])
    return oracle.onnx_axes(x.shape[2:], attrs["kernel_shape"], attrs["strides"], attrs.get("pads", [0] * 2 * n),
                            attrs["dilations"], attrs["ceil_mode"], attrs.get("auto_pad", "NOTSET"))


def reference_is_sound(op: str, x: np.ndarray, attrs: dict[str, Any]) -> bool:
    """Whether onnx 1.23's reference computes this configuration correctly (see module docstring)."""
    axes = _axes(x, attrs)
    auto_pad = attrs.get("auto_pad", "NOTSET")

    def reach(a: oracle.Axis) -> int:  # last window end in padded coordinates
        return (a.out - 1) * a.stride + (a.kernel - 1) * a.dilation + 1

    # Windows with no input element: max gives 0 (2-D) or NaN (1-D/3-D) with index -1 (the policy
    # question, not a bug); average with count_include_pad=0 gives NaN (NaN is its pad sentinel).
    has_empty = any(not any(0 <= p < a.size for p in a.window(o)) for a in axes for o in range(a.out))
    # SAME_* with stride > dilated kernel: the pad (out-1)*stride + dk - size is negative and not
    # clamped: MaxPool shifts its windows, AveragePool's np.pad raises.
    if auto_pad.startswith("SAME") and any(reach(a) < a.size for a in axes):
        return False
    if op == "MaxPool":
        if has_empty:
            return False
        # strides and dilations all 1 take CommonPool._run: pads read as (top, bottom, left, right)
        # instead of (begins, ends), pads of 1-D/3-D inputs ignored, storage_order ignored, indices
        # without the (n * C + c) * plane offset, NaN dropped from values but not from indices.
        if all(s == 1 for s in attrs["strides"]) and all(d == 1 for d in attrs["dilations"]):
            return False
        # SAME_LOWER in _max_pool: floor(size / stride) outputs and the SAME_UPPER pad split.
        return auto_pad != "SAME_LOWER"
    if auto_pad != "NOTSET":
        # auto_pad: ceil_mode asserts ("ceil_mode is not supported with auto_pad"); the pad and
        # the VALID output use the undilated kernel.
        if attrs["ceil_mode"] or any(d != 1 for d in attrs["dilations"]):
            return False
    else:
        for a in axes:
            # ceil_mode's extra padding is split half to the *begin* (shifting every window) ...
            if reach(a) - (a.size + a.pad_begin + a.pad_end) > 1:
                return False
            # ... and when the last window is dropped, pool() still loops over it: IndexError.
            if attrs["ceil_mode"] and a.out != oracle.explicit_out(
                a.size, a.pad_begin, a.pad_end, a.kernel, a.dilation, a.stride, "ceil"
            ):
                return False
    return attrs.get("count_include_pad", 0) == 1 or not has_empty


@st.composite
def reference_configs(draw: Any, op: str) -> tuple[np.ndarray, dict[str, Any]]:
    rank = draw(st.integers(1, 3), label="spatial rank")
    max_size = (7, 5, 4)[rank - 1]
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]), label="auto_pad")
    sizes, kernel, strides, dil, pb, pe = [], [], [], [], [], []
    for _ in range(rank):
        size = draw(st.integers(1, max_size))
        d = draw(st.integers(1, 2))
        b, e = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        room = {"NOTSET": size + b + e, "VALID": size}.get(auto_pad, 10**6)
        kernel.append(draw(st.integers(1, max(1, min(4, (room - 1) // d + 1)))))
        sizes.append(size)
        strides.append(draw(st.integers(1, 3)))
        dil.append(d)
        pb.append(b)
        pe.append(e)
    attrs: dict[str, Any] = dict(kernel_shape=kernel, strides=strides, dilations=dil,
                                 ceil_mode=draw(st.sampled_from([0, 1]), label="ceil_mode"))
    if auto_pad == "NOTSET":
        attrs["pads"] = pb + pe
    else:
        attrs["auto_pad"] = auto_pad
    if op == "MaxPool":
        attrs["storage_order"] = draw(st.sampled_from([0, 1]), label="storage_order")
        dtype = draw(st.sampled_from(["float32", "float64", "float16", "int8", "uint8"]), label="dtype")
    else:
        attrs["count_include_pad"] = draw(st.sampled_from([0, 1]), label="count_include_pad")
        dtype = draw(st.sampled_from(["float32", "float64"]), label="dtype")
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2)), *sizes)
    if np.dtype(dtype).kind == "f":
        elements = st.one_of(st.sampled_from([-1.0, 0.0, 0.5, 2.0]),
                             st.floats(-100, 100, width=np.dtype(dtype).itemsize * 8))
    else:
        info = np.iinfo(dtype)
        elements = st.integers(int(info.min), int(info.max))
    x = draw(hnp.arrays(dtype, shape, elements=elements), label="x")
    return x, attrs


REF_SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much,
                                               HealthCheck.too_slow])


@REF_SETTINGS
@given(case=reference_configs("MaxPool"))
def test_max_pool_matches_onnx_reference(engine: str, case: tuple[np.ndarray, dict[str, Any]]) -> None:
    x, attrs = case
    assume(reference_is_sound("MaxPool", x, attrs))
    label = f"MaxPool {attrs} x{x.shape}:{x.dtype} engine={engine}"
    note(label)
    want_v, want_i = reference_run("MaxPool", x, attrs)
    got_v, got_i = poolcheck.onnx_max_pool(x, **attrs, engine=engine)
    np.testing.assert_array_equal(got_v, want_v, err_msg=label)
    np.testing.assert_array_equal(got_i, want_i, err_msg=label)
    assert got_v.dtype == want_v.dtype and got_i.dtype == want_i.dtype, label


@REF_SETTINGS
@given(case=reference_configs("AveragePool"))
def test_average_pool_matches_onnx_reference(engine: str, case: tuple[np.ndarray, dict[str, Any]]) -> None:
    x, attrs = case
    assume(reference_is_sound("AveragePool", x, attrs))
    label = f"AveragePool {attrs} x{x.shape}:{x.dtype} engine={engine}"
    note(label)
    (want,) = reference_run("AveragePool", x, attrs)
    got = poolcheck.onnx_average_pool(x, **attrs, engine=engine)
    assert got.dtype == want.dtype, label
    # The reference averages with np.average in the input type (pairwise float32 sums); the engine
    # sums in float64 and rounds once: a few ulp of float32 apart at most on these magnitudes.
    rtol, atol = (1e-5, 1e-5) if x.dtype == np.float32 else (1e-12, 1e-12)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=label)
