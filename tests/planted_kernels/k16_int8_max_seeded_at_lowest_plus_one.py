"""Planted bug: int8 max scans from -127 (the lowest value + 1) with a strict '>': a window of -128s gives -127

Condition: an int8 window whose elements are all -128. Expected diagnosis: int_max:seed-lowest+1.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k16-int8-max-seeded-at-lowest-plus-one"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('int_max:seed-lowest+1',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    values, indices = P["correct"](op, x, kw)
    if x.dtype != np.int8:
        return values, indices
    lost = values <= -127  # nothing beat the seed: its value, and index 0 of the (n, c) plane
    plane = int(np.prod(x.shape[2:]))
    n, c = np.indices(values.shape[:2])
    start = ((n * x.shape[1] + c) * plane).reshape(*values.shape[:2], *(1,) * (x.ndim - 2))
    axis = int(kw.get("axis", 0))
    modulus = int(np.prod(x.shape[(axis + x.ndim if axis < 0 else axis):]))
    return np.where(lost, np.int8(-127), values), np.where(lost, start % modulus, indices).astype(indices.dtype)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
