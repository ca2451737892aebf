"""Planted bug: a max window lying wholly in padding yields 0 instead of -inf (the padding is
filled with zeros for such windows)."""

from __future__ import annotations

from typing import Any

import numpy as np

from poolcheck import avg_pool as avg_pool  # the correct ones: the plugin signatures are poolcheck's
from poolcheck import spec as S
from poolcheck.api import run_spec
from poolcheck.spec.policy import Policy

PEER_NAME = "planted-empty-window-zero"


def max_pool(x: Any, kernel: Any, strides: Any, pads_begin: Any = None, pads_end: Any = None, dilations: Any = None,
             rounding_type: str = "floor", auto_pad: str = "explicit", axis: int = 0,
             index_element_type: str = "i64") -> tuple[np.ndarray, np.ndarray]:
    spec = S.openvino_max_pool(kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad, axis,
                               index_element_type)
    values, indices = run_spec(spec, x, policy=Policy(empty_max="zero"))  # the bug
    assert indices is not None
    return values, indices
