"""Planted bug: the multi-channel path ignores axis: indices count the whole tensor

Condition: channels > 1 and axis > 0. Expected diagnosis: index:axis-ignored.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k15-channels-axis-ignored"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('index:axis-ignored',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    if x.shape[1] > 1:
        kw = {**kw, "axis": 0}  # the bug
    return P["correct"](op, x, kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
