"""Planted bug: max indices number the (n, c) planes c * N + n instead of n * C + c

Condition: batch > 1 and channels > 1. Expected diagnosis: index:planes-c*N+n.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k09-index-planes-c-major"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('index:planes-c*N+n',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    values, indices = P["correct"](op, x, {**kw, "axis": 0})
    n_, c_ = x.shape[:2]
    plane = int(np.prod(x.shape[2:]))
    nc, sp = np.divmod(indices.astype(np.int64), plane)
    n, c = np.divmod(nc, c_)
    flat = (c * n_ + n) * plane + sp  # the bug
    axis = int(kw.get("axis", 0))
    axis = axis + x.ndim if axis < 0 else axis
    modulus = int(np.prod(x.shape[axis:]))
    return values, np.where(indices < 0, indices, flat % modulus).astype(indices.dtype)  # -1: no element


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
