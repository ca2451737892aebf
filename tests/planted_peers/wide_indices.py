"""Bug: indices always come back as int64, even when index_element_type asks for i32 (the values
are right)."""

from __future__ import annotations

from typing import Any

import numpy as np

import poolcheck

PEER_NAME = "planted-wide-indices"


def max_pool(x: Any, kernel: Any, strides: Any, pads_begin: Any = None, pads_end: Any = None, dilations: Any = None,
             rounding_type: str = "floor", auto_pad: str = "explicit", axis: int = 0,
             index_element_type: str = "i64") -> tuple[np.ndarray, np.ndarray]:
    values, indices = poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad,
                                         axis, index_element_type)
    return values, indices.astype(np.int64)  # the bug
