"""Planted bug: max pooling ignores ``axis`` and always reports indices over the whole tensor
(as for ``axis=0``)."""

from __future__ import annotations

from typing import Any

import numpy as np

import poolcheck
from poolcheck import avg_pool as avg_pool  # the correct ones: the plugin signatures are poolcheck's

PEER_NAME = "planted-axis-ignored"


def max_pool(x: Any, kernel: Any, strides: Any, pads_begin: Any = None, pads_end: Any = None, dilations: Any = None,
             rounding_type: str = "floor", auto_pad: str = "explicit", axis: int = 0,
             index_element_type: str = "i64") -> tuple[np.ndarray, np.ndarray]:
    axis = 0  # the bug
    return poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad, axis,
                              index_element_type)
