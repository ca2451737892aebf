"""Spec layer: attributes, validation, shape rules, index semantics and policies."""

from poolcheck.spec.attributes import (
    PoolSpec,
    check_input,
    onnx_average_pool,
    onnx_max_pool,
    openvino_avg_pool,
    openvino_max_pool,
)
from poolcheck.spec.indices import IndexLayout, index_layout
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import AxisGeometry, Geometry, axis_rules, resolve, resolve_axis, window_taps

__all__ = [
    "SPEC",
    "AxisGeometry",
    "Geometry",
    "IndexLayout",
    "Policy",
    "PoolSpec",
    "axis_rules",
    "check_input",
    "index_layout",
    "onnx_average_pool",
    "onnx_max_pool",
    "openvino_avg_pool",
    "openvino_max_pool",
    "resolve",
    "resolve_axis",
    "window_taps",
]
