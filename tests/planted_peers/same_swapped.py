"""Planted bug: ``same_lower`` and ``same_upper`` swapped, so an odd total SAME pad goes to the
wrong end."""

from __future__ import annotations

from typing import Any

import numpy as np

import poolcheck

PEER_NAME = "planted-same-swapped"
SWAP = {"same_upper": "same_lower", "same_lower": "same_upper"}


def max_pool(x: Any, kernel: Any, strides: Any, pads_begin: Any = None, pads_end: Any = None, dilations: Any = None,
             rounding_type: str = "floor", auto_pad: str = "explicit", axis: int = 0,
             index_element_type: str = "i64") -> tuple[np.ndarray, np.ndarray]:
    auto_pad = SWAP.get(auto_pad, auto_pad)  # the bug
    return poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad, axis,
                              index_element_type)


def avg_pool(x: Any, kernel: Any, strides: Any, pads_begin: Any = None, pads_end: Any = None,
             exclude_pad: bool = False, rounding_type: str = "floor", auto_pad: str = "explicit") -> np.ndarray:
    auto_pad = SWAP.get(auto_pad, auto_pad)  # the bug
    return poolcheck.avg_pool(x, kernel, strides, pads_begin, pads_end, exclude_pad, rounding_type, auto_pad)
