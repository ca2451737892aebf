"""Planted failure: max pooling with a stride of 3 or more never returns; average pooling is
correct."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import poolcheck
from poolcheck import avg_pool as avg_pool  # the correct ones: the plugin signatures are poolcheck's

PEER_NAME = "planted-hangs"


def max_pool(x: Any, kernel: Any, strides: Any, pads_begin: Any = None, pads_end: Any = None, dilations: Any = None,
             rounding_type: str = "floor", auto_pad: str = "explicit", axis: int = 0,
             index_element_type: str = "i64") -> tuple[np.ndarray, np.ndarray]:
    if max(strides) >= 3:
        while True:  # the failure
            time.sleep(1)
    return poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad, axis,
                              index_element_type)
