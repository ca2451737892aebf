"""Planted bug: average pooling divides by the window including its padding even when
``exclude_pad`` is set (the divisor is off by the number of padding elements)."""

from __future__ import annotations

from typing import Any

import numpy as np

import poolcheck
from poolcheck import max_pool as max_pool  # the correct ones: the plugin signatures are poolcheck's

PEER_NAME = "planted-divisor-counts-padding"


def avg_pool(x: Any, kernel: Any, strides: Any, pads_begin: Any = None, pads_end: Any = None,
             exclude_pad: bool = False, rounding_type: str = "floor", auto_pad: str = "explicit") -> np.ndarray:
    exclude_pad = False  # the bug
    return poolcheck.avg_pool(x, kernel, strides, pads_begin, pads_end, exclude_pad, rounding_type, auto_pad)
