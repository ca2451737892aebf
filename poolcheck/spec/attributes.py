"""Keyword constructors for each convention, over the operator catalogue.

``openvino_max_pool(kernel, strides, ...)`` and its siblings are the Python-call form of
:func:`poolcheck.spec.operators.parse`: they validate through the same catalogue row a case file
uses. :class:`PoolSpec` and the vocabularies are re-exported from where they live.
"""

from __future__ import annotations

from typing import Any

from poolcheck.errors import AttributeValueError
from poolcheck.spec.operators import (
    AVG_DTYPES,
    ONNX_AUTO_PADS,
    ONNX_MAX_DTYPES,
    OPENVINO_MAX_DTYPES,
    check_input,
    parse,
)
from poolcheck.spec.poolspec import (
    AUTO_PADS,
    FLOAT_DTYPES,
    INDEX_ELEMENT_TYPES,
    INT_DTYPES,
    ROUNDING_TYPES,
    AutoPad,
    Convention,
    Op,
    PoolSpec,
    Rounding,
)

__all__ = [
    "AUTO_PADS", "AVG_DTYPES", "FLOAT_DTYPES", "INDEX_ELEMENT_TYPES", "INT_DTYPES", "ONNX_AUTO_PADS",
    "ONNX_MAX_DTYPES", "OPENVINO_MAX_DTYPES", "ROUNDING_TYPES", "AutoPad", "Convention", "Op", "PoolSpec",
    "Rounding", "check_input", "onnx_average_pool", "onnx_max_pool", "openvino_avg_pool", "openvino_max_pool",
]


def openvino_max_pool(
    kernel: Any,
    strides: Any,
    pads_begin: Any = None,
    pads_end: Any = None,
    dilations: Any = None,
    rounding_type: Any = "floor",
    auto_pad: Any = "explicit",
    axis: Any = 0,
    index_element_type: Any = "i64",
    version: int = 14,
) -> PoolSpec:
    """Validate OpenVINO MaxPool-8/MaxPool-14 attributes."""
    if version not in (8, 14):
        raise AttributeValueError("version", f"OpenVINO MaxPool versions are 8 and 14, got {version!r}")
    return parse(f"MaxPool-{version}", {
        "kernel": kernel, "strides": strides, "pads_begin": pads_begin, "pads_end": pads_end,
        "dilations": dilations, "rounding_type": rounding_type, "auto_pad": auto_pad, "axis": axis,
        "index_element_type": index_element_type})


def openvino_avg_pool(
    kernel: Any,
    strides: Any,
    pads_begin: Any = None,
    pads_end: Any = None,
    exclude_pad: Any = False,
    rounding_type: Any = "floor",
    auto_pad: Any = "explicit",
) -> PoolSpec:
    """Validate OpenVINO AvgPool-14 attributes (AvgPool has no dilations)."""
    return parse("AvgPool-14", {
        "kernel": kernel, "strides": strides, "pads_begin": pads_begin, "pads_end": pads_end,
        "exclude_pad": exclude_pad, "rounding_type": rounding_type, "auto_pad": auto_pad})


def onnx_max_pool(
    kernel_shape: Any,
    strides: Any = None,
    pads: Any = None,
    dilations: Any = None,
    ceil_mode: Any = 0,
    auto_pad: Any = "NOTSET",
    storage_order: Any = 0,
) -> PoolSpec:
    """Validate ONNX MaxPool-22 attributes."""
    return parse("MaxPool-22", {
        "kernel_shape": kernel_shape, "strides": strides, "pads": pads, "dilations": dilations,
        "ceil_mode": ceil_mode, "auto_pad": auto_pad, "storage_order": storage_order})


def onnx_average_pool(
    kernel_shape: Any,
    strides: Any = None,
    pads: Any = None,
    dilations: Any = None,
    ceil_mode: Any = 0,
    count_include_pad: Any = 0,
    auto_pad: Any = "NOTSET",
) -> PoolSpec:
    """Validate ONNX AveragePool-19/22 attributes."""
    return parse("AveragePool-22", {
        "kernel_shape": kernel_shape, "strides": strides, "pads": pads, "dilations": dilations,
        "ceil_mode": ceil_mode, "count_include_pad": count_include_pad, "auto_pad": auto_pad})
