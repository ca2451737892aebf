"""Planted bugs, two of different weight: max pooling skips NaN (an ``unspecified`` policy point:
the specification is silent on NaN) and ignores dilations in rank 5 float16 (a ``violation``). ``--exit-first
--fail-on violation`` must not stop at the NaN find, which shows first."""

from __future__ import annotations

from typing import Any

import numpy as np

import poolcheck

PEER_NAME = "planted-nan-and-dilations"


def max_pool(x: Any, kernel: Any, strides: Any, pads_begin: Any = None, pads_end: Any = None, dilations: Any = None,
             rounding_type: str = "floor", auto_pad: str = "explicit", axis: int = 0,
             index_element_type: str = "i64") -> tuple[np.ndarray, np.ndarray]:
    arr = np.asarray(x)
    if arr.dtype.kind == "f":
        arr = np.where(np.isnan(arr), -np.inf, arr).astype(arr.dtype)  # bug 1: NaN read as -inf
    if arr.ndim == 5 and arr.dtype == np.float16:
        dilations = None  # bug 2: dilations ignored in rank 5 float16
    return poolcheck.max_pool(arr, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad, axis,
                              index_element_type)


def avg_pool(x: Any, kernel: Any, strides: Any, pads_begin: Any = None, pads_end: Any = None,
             exclude_pad: bool = False, rounding_type: str = "floor", auto_pad: str = "explicit") -> np.ndarray:
    return poolcheck.avg_pool(x, kernel, strides, pads_begin, pads_end, exclude_pad, rounding_type, auto_pad)
