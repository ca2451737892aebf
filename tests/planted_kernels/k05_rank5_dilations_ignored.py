"""Planted bug: dilations ignored by the 3-D (rank 5) kernel only

Condition: rank 5 input with a dilation > 1. Expected diagnosis: dilations:ignored.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k05-rank5-dilations-ignored"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('dilations:ignored',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    if x.ndim == 5:
        kw = {**kw, "dilations": [1, 1, 1]}  # the bug
    return P["correct"](op, x, kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
