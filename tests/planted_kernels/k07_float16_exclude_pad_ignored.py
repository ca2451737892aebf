"""Planted bug: the float16 average counts the padding in the divisor even with exclude_pad

Condition: float16 input, exclude_pad=true and a window touching the padding. Expected diagnosis: divisor=padded.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k07-float16-exclude-pad-ignored"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('divisor=padded',)
OPS = ('avg',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    if x.dtype == np.float16:
        kw = {**kw, "exclude_pad": False}  # the bug
    return P["correct"](op, x, kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return _pool("avg", np.asarray(x), kw)
