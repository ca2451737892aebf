"""Planted bug: a negative axis is normalised as axis + rank - 1 (one too low)

Condition: max pooling with a negative axis other than -rank. Expected diagnosis: index:negative-axis-off-by-one.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k10-negative-axis-off-by-one"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('index:negative-axis-off-by-one',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    axis = int(kw.get("axis", 0))
    if axis < 0 and axis + x.ndim - 1 >= 0:
        kw = {**kw, "axis": axis + x.ndim - 1}  # the bug
    return P["correct"](op, x, kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
