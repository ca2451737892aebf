"""The public Python API: OpenVINO- and ONNX-shaped entry points over the reference engines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from poolcheck import spec as S
from poolcheck.engines import get_engine
from poolcheck.errors import AttributeValueError
from poolcheck.spec import dtypes
from poolcheck.spec.policy import SPEC, Policy


def _as_array(x: Any) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == object or not dtypes.is_numeric(arr.dtype):
        raise AttributeValueError("input", f"expected a numeric array, got dtype {arr.dtype}")
    if not arr.dtype.isnative:  # engines read native byte order only
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return np.ascontiguousarray(arr)


def run_spec(
    spec: S.PoolSpec,
    x: Any,
    *,
    engine: str = "numpy",
    policy: Policy = SPEC,
    with_indices: bool = True,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Run a validated :class:`PoolSpec` on ``x``; returns ``(values, indices or None)``."""
    arr = _as_array(x)
    S.check_input(spec, arr.shape, arr.dtype)
    geom = S.resolve(spec, arr.shape)
    eng = get_engine(engine)
    if spec.op == "avg":
        return eng.avg_pool(arr, geom, spec.exclude_pad, policy), None
    layout = S.index_layout(spec, arr.shape) if with_indices else None
    return eng.max_pool(arr, geom, layout, policy)


def max_pool(
    x: Any,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads_begin: Sequence[int] | None = None,
    pads_end: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    rounding_type: str = "floor",
    auto_pad: str = "explicit",
    axis: int = 0,
    index_element_type: str = "i64",
    engine: str = "numpy",
) -> tuple[np.ndarray, np.ndarray]:
    """OpenVINO MaxPool-14: returns ``(values, indices)``."""
    spec = S.openvino_max_pool(kernel, strides, pads_begin, pads_end, dilations, rounding_type,
                               auto_pad, axis, index_element_type)
    values, indices = run_spec(spec, x, engine=engine)
    assert indices is not None
    return values, indices


def avg_pool(
    x: Any,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads_begin: Sequence[int] | None = None,
    pads_end: Sequence[int] | None = None,
    exclude_pad: bool = False,
    rounding_type: str = "floor",
    auto_pad: str = "explicit",
    engine: str = "numpy",
) -> np.ndarray:
    """OpenVINO AvgPool-14."""
    spec = S.openvino_avg_pool(kernel, strides, pads_begin, pads_end, exclude_pad, rounding_type, auto_pad)
    return run_spec(spec, x, engine=engine)[0]


def onnx_max_pool(
    x: Any,
    kernel_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    ceil_mode: int = 0,
    auto_pad: str = "NOTSET",
    storage_order: int = 0,
    engine: str = "numpy",
) -> tuple[np.ndarray, np.ndarray]:
    """ONNX MaxPool-22: returns ``(Y, Indices)``."""
    spec = S.onnx_max_pool(kernel_shape, strides, pads, dilations, ceil_mode, auto_pad, storage_order)
    values, indices = run_spec(spec, x, engine=engine)
    assert indices is not None
    return values, indices


def onnx_average_pool(
    x: Any,
    kernel_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    ceil_mode: int = 0,
    count_include_pad: int = 0,
    auto_pad: str = "NOTSET",
    engine: str = "numpy",
) -> np.ndarray:
    """ONNX AveragePool-19/22."""
    spec = S.onnx_average_pool(kernel_shape, strides, pads, dilations, ceil_mode, count_include_pad, auto_pad)
    return run_spec(spec, x, engine=engine)[0]


def output_shape(
    input_shape: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads_begin: Sequence[int] | None,
    pads_end: Sequence[int] | None,
    dilations: Sequence[int] | None = None,
    rounding_type: str = "floor",
    auto_pad: str = "explicit",
) -> tuple[int, ...]:
    """Output shape under OpenVINO's rules (as the runtime applies them).

    ``input_shape`` is the full ``(N, C, *spatial)`` shape, or only the spatial part (then the
    spatial output shape is returned).
    """
    spec = S.openvino_max_pool(kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad)
    shape = tuple(input_shape)
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in shape):
        raise AttributeValueError("input_shape", f"expected positive integers, got {list(shape)}")
    if len(shape) == spec.spatial_rank:
        return S.resolve(spec, (1, 1, *shape)).output_shape[2:]
    return S.resolve(spec, shape).output_shape
