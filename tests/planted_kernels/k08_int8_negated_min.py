"""Planted bug: int8 max computed as -min(-x) in int8: -(-128) wraps to -128, so a window holding -128 gives -128

Condition: an int8 window holding -128 and a larger element. Expected diagnosis: unexplained (no named variant).
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k08-int8-negated-min"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('unexplained',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    values, indices = P["correct"](op, x, kw)
    if x.dtype != np.int8:
        return values, indices
    holds_min, _ = P["correct"](op, (x == -128).astype(np.int8), kw)
    return np.where(holds_min == 1, np.int8(-128), values), indices  # the bug: -(-128) == -128 in int8


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
