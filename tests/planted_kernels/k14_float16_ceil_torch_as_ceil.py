"""Planted bug: the float16 kernel treats ceil_torch as ceil (a last window starting in the end padding is kept)

Condition: float16 input, ceil_torch rounding, a last window starting in the end padding. Expected diagnosis: rounding:ceil_torch->ceil.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k14-float16-ceil-torch-as-ceil"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('rounding:ceil_torch->ceil',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    if x.dtype == np.float16 and kw.get("rounding_type") == "ceil_torch":
        kw = {**kw, "rounding_type": "ceil"}  # the bug
    return P["correct"](op, x, kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
