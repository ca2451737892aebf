"""Every invalid attribute is rejected through the public API with a ValueError subclass
(poolcheck.AttributeValueError) whose message and ``attribute`` name the offending attribute."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import poolcheck
from poolcheck import spec as S
from poolcheck.engines import available_engines

X4 = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)


def ov_max(**kw: Any) -> Any:
    args: dict[str, Any] = dict(kernel=[2, 2], strides=[1, 1])
    args.update(kw)
    x = args.pop("x", X4)
    return poolcheck.max_pool(x, **args)


def ov_avg(**kw: Any) -> Any:
    args: dict[str, Any] = dict(kernel=[2, 2], strides=[1, 1])
    args.update(kw)
    x = args.pop("x", X4)
    return poolcheck.avg_pool(x, **args)


def onnx_max(**kw: Any) -> Any:
    args: dict[str, Any] = dict(kernel_shape=[2, 2])
    args.update(kw)
    x = args.pop("x", X4)
    return poolcheck.onnx_max_pool(x, **args)


def onnx_avg(**kw: Any) -> Any:
    args: dict[str, Any] = dict(kernel_shape=[2, 2])
    args.update(kw)
    x = args.pop("x", X4)
    return poolcheck.onnx_average_pool(x, **args)


def shape(**kw: Any) -> Any:
    args: dict[str, Any] = dict(input_shape=(4, 4), kernel=[2, 2], strides=[1, 1], pads_begin=None, pads_end=None)
    args.update(kw)
    return poolcheck.output_shape(**args)


def ov_max_v8(**kw: Any) -> Any:
    args: dict[str, Any] = dict(kernel=[2, 2], strides=[1, 1], version=8)
    args.update(kw)
    return S.openvino_max_pool(**args)


# (case id, call, keyword arguments, the attribute the error must name)
CASES: list[tuple[str, Callable[..., Any], dict[str, Any], str]] = [
    # kernel
    ("kernel empty", ov_max, dict(kernel=[], strides=[]), "kernel"),
    ("kernel zero", ov_max, dict(kernel=[0, 2]), "kernel"),
    ("kernel negative", ov_avg, dict(kernel=[2, -1]), "kernel"),
    ("kernel float", ov_max, dict(kernel=[2.0, 2]), "kernel"),
    ("kernel string items", ov_max, dict(kernel=["2", "2"]), "kernel"),
    ("kernel string", ov_max, dict(kernel="22"), "kernel"),
    ("kernel bool", ov_max, dict(kernel=[True, 2]), "kernel"),
    ("kernel scalar", ov_max, dict(kernel=2), "kernel"),
    ("kernel None", ov_max, dict(kernel=None), "kernel"),
    ("kernel too long", ov_max, dict(kernel=[1, 1, 1, 1], strides=[1, 1, 1, 1]), "kernel"),
    ("kernel_shape empty", onnx_max, dict(kernel_shape=[]), "kernel_shape"),
    ("kernel_shape zero", onnx_avg, dict(kernel_shape=[0, 1]), "kernel_shape"),
    ("kernel_shape too long", onnx_avg, dict(kernel_shape=[1, 1, 1, 1]), "kernel_shape"),
    # strides
    ("strides zero", ov_max, dict(strides=[0, 1]), "strides"),
    ("strides negative", onnx_max, dict(strides=[1, -2]), "strides"),
    ("strides too short", ov_avg, dict(strides=[1]), "strides"),
    ("strides None (required)", ov_max, dict(strides=None), "strides"),
    ("onnx strides zero", onnx_avg, dict(strides=[0, 1]), "strides"),
    # dilations
    ("dilations zero", ov_max, dict(dilations=[1, 0]), "dilations"),
    ("dilations too long", onnx_max, dict(dilations=[1, 1, 1]), "dilations"),
    ("onnx avg dilations zero", onnx_avg, dict(dilations=[0, 1]), "dilations"),
    # pads
    ("pads_begin negative", ov_max, dict(pads_begin=[-1, 0]), "pads_begin"),
    ("pads_end negative", ov_avg, dict(pads_end=[0, -1]), "pads_end"),
    ("pads_begin wrong length", ov_max, dict(pads_begin=[0], pads_end=[0, 0]), "pads_begin"),
    ("pads_end wrong length", ov_avg, dict(pads_begin=[0, 0], pads_end=[0, 0, 0]), "pads_end"),
    ("onnx pads odd length", onnx_max, dict(pads=[1, 1, 1]), "pads"),
    ("onnx pads per-axis only", onnx_avg, dict(pads=[1, 1]), "pads"),
    ("onnx pads negative", onnx_avg, dict(pads=[0, 0, -1, 0]), "pads"),
    # rounding / auto_pad / ceil_mode
    ("rounding_type unknown", ov_max, dict(rounding_type="round"), "rounding_type"),
    ("rounding_type case", ov_avg, dict(rounding_type="CEIL"), "rounding_type"),
    ("ceil_torch on MaxPool-8", ov_max_v8, dict(rounding_type="ceil_torch"), "rounding_type"),
    ("MaxPool version 9", ov_max_v8, dict(version=9), "version"),
    ("auto_pad unknown", ov_max, dict(auto_pad="same"), "auto_pad"),
    ("auto_pad ONNX spelling on OpenVINO", ov_avg, dict(auto_pad="SAME_UPPER"), "auto_pad"),
    ("onnx auto_pad OpenVINO spelling", onnx_max, dict(auto_pad="same_upper"), "auto_pad"),
    ("ceil_mode 2", onnx_max, dict(ceil_mode=2), "ceil_mode"),
    ("ceil_mode string", onnx_avg, dict(ceil_mode="1"), "ceil_mode"),
    # max-only attributes
    ("axis too large", ov_max, dict(axis=4), "axis"),
    ("axis too small", ov_max, dict(axis=-5), "axis"),
    ("axis float", ov_max, dict(axis=1.0), "axis"),
    ("index_element_type i16", ov_max, dict(index_element_type="i16"), "index_element_type"),
    ("index_element_type int64", ov_max, dict(index_element_type="int64"), "index_element_type"),
    ("storage_order 2", onnx_max, dict(storage_order=2), "storage_order"),
    # average-only attributes
    ("count_include_pad 2", onnx_avg, dict(count_include_pad=2), "count_include_pad"),
    ("exclude_pad int", ov_avg, dict(exclude_pad=1), "exclude_pad"),
    # the input against the attributes
    ("rank mismatch (2-D kernel, 3-D input)", ov_max, dict(x=np.zeros((1, 1, 4), np.float32)), "kernel"),
    ("rank mismatch (2-D kernel, 5-D input)", onnx_avg, dict(x=np.zeros((1, 1, 4, 4, 4), np.float32)), "kernel"),
    ("empty input dimension", ov_max, dict(x=np.zeros((1, 0, 4, 4), np.float32)), "input"),
    ("int avg (OpenVINO)", ov_avg, dict(x=X4.astype(np.int32)), "dtype"),
    ("int avg (ONNX)", onnx_avg, dict(x=X4.astype(np.uint8)), "dtype"),
    ("int16 ONNX max", onnx_max, dict(x=X4.astype(np.int16)), "dtype"),
    ("int64 ONNX max", onnx_max, dict(x=X4.astype(np.int64)), "dtype"),
    ("bool input", ov_max, dict(x=np.zeros((1, 1, 4, 4), bool)), "input"),
    ("complex input", ov_max, dict(x=np.zeros((1, 1, 4, 4), np.complex64)), "input"),
    ("string input", onnx_max, dict(x=np.full((1, 1, 4, 4), "a")), "input"),
    ("dilated kernel larger than padded input", ov_max,
     dict(kernel=[3, 3], dilations=[2, 2], pads_begin=[0, 0], pads_end=[0, 0]), "kernel"),
    ("kernel larger than input (valid)", ov_avg, dict(kernel=[5, 2], pads_begin=[1, 1], pads_end=[1, 1],
                                                     auto_pad="valid"), "kernel"),
    ("onnx kernel larger than padded input", onnx_avg, dict(kernel_shape=[7, 1], pads=[1, 0, 1, 0]), "kernel"),
    # output_shape
    ("output_shape zero dimension", shape, dict(input_shape=(0, 4)), "input_shape"),
    ("output_shape float dimension", shape, dict(input_shape=(4.0, 4)), "input_shape"),
    ("output_shape kernel too large", shape, dict(kernel=[5, 1]), "kernel"),
    ("output_shape rank mismatch", shape, dict(input_shape=(1, 4, 4)), "kernel"),
    # engine
    ("unknown engine", ov_max, dict(engine="gpu"), "engine"),
]


@pytest.mark.parametrize("call, kwargs, attribute", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_attribute_is_named(call: Callable[..., Any], kwargs: dict[str, Any], attribute: str) -> None:
    with pytest.raises(poolcheck.AttributeValueError) as info:
        call(**kwargs)
    err = info.value
    assert isinstance(err, ValueError)
    assert isinstance(err, poolcheck.PoolcheckError)
    assert err.attribute == attribute
    assert str(err).startswith(f"{attribute}: ")
    assert len(str(err)) > len(attribute) + 10  # says what is wrong, not just where


def test_valid_baseline_calls_succeed() -> None:
    """The helpers above are valid without the bad keyword: each case fails for its own reason."""
    ov_max()
    ov_avg()
    onnx_max()
    onnx_avg()
    assert shape() == (3, 3)
    ov_max_v8(rounding_type="ceil")


def test_messages_show_the_bad_value() -> None:
    with pytest.raises(poolcheck.AttributeValueError, match=r"got 0 in \[0, 2\]"):
        ov_max(kernel=[0, 2])
    with pytest.raises(poolcheck.AttributeValueError, match=r"'round'"):
        ov_max(rounding_type="round")
    with pytest.raises(poolcheck.AttributeValueError, match=r"\[-4, 3\].*got 4"):
        ov_max(axis=4)
    with pytest.raises(poolcheck.AttributeValueError, match=r"int16"):
        onnx_max(x=X4.astype(np.int16))
    with pytest.raises(poolcheck.AttributeValueError, match=r"\(5\).*\(4 \+ 0 \+ 0 = 4\)"):
        ov_max(kernel=[3, 3], dilations=[2, 2])


def test_c_engine_unavailable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether or not the extension is built here: pretend it failed to load."""
    from poolcheck.engines import c_engine

    monkeypatch.setattr(c_engine, "AVAILABLE", False)
    monkeypatch.setattr(c_engine, "UNAVAILABLE_REASON", "no compiler in this test")
    with pytest.raises(poolcheck.EngineUnavailableError, match="engine 'c' is not available: no compiler") as info:
        ov_max(engine="c")
    assert isinstance(info.value, poolcheck.PoolcheckError)
    assert available_engines() == ["numpy"]
    # "auto" falls back to numpy instead of failing
    values, _ = poolcheck.max_pool(X4, [2, 2], [2, 2], engine="auto")
    assert values.shape == (2, 3, 2, 2)


def test_auto_engine_always_runs() -> None:
    values, indices = poolcheck.max_pool(X4, [2, 2], [2, 2], engine="auto")
    assert values.shape == indices.shape == (2, 3, 2, 2)
