"""Planted failure: the process dies (``os._exit``) on any average pooling with exclude_pad, as a
segfaulting runtime would; max pooling is correct."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import poolcheck
from poolcheck import max_pool as max_pool  # the correct ones: the plugin signatures are poolcheck's

PEER_NAME = "planted-crashes"


def avg_pool(x: Any, kernel: Any, strides: Any, pads_begin: Any = None, pads_end: Any = None,
             exclude_pad: bool = False, rounding_type: str = "floor", auto_pad: str = "explicit") -> np.ndarray:
    if exclude_pad:
        os._exit(139)  # the failure
    return poolcheck.avg_pool(x, kernel, strides, pads_begin, pads_end, exclude_pad, rounding_type, auto_pad)
