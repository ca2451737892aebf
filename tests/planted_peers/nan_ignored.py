"""Planted bug: max pooling skips NaN (NaN is treated as -inf), so a window holding a NaN and a
number returns the number; the specification's NaN propagates."""

from __future__ import annotations

from typing import Any

import numpy as np

import poolcheck
from poolcheck import avg_pool as avg_pool  # the correct ones: the plugin signatures are poolcheck's

PEER_NAME = "planted-nan-ignored"


def max_pool(x: Any, kernel: Any, strides: Any, pads_begin: Any = None, pads_end: Any = None, dilations: Any = None,
             rounding_type: str = "floor", auto_pad: str = "explicit", axis: int = 0,
             index_element_type: str = "i64") -> tuple[np.ndarray, np.ndarray]:
    arr = np.asarray(x)
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        # the bug: NaN replaced by -inf; an all-NaN window then gives -inf and its first position
        masked = np.where(np.isnan(arr), -np.inf, arr).astype(arr.dtype)
        values, indices = poolcheck.max_pool(masked, kernel, strides, pads_begin, pads_end, dilations, rounding_type,
                                             auto_pad, axis, index_element_type)
        return values, indices
    return poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad, axis,
                              index_element_type)
