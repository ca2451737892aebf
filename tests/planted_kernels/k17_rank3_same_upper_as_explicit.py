"""Planted bug: the 1-D (rank 3) kernel ignores auto_pad and applies the explicit pads

Condition: rank 3, auto_pad same_upper/same_lower/valid with explicit pads given. Expected diagnosis: auto_pad:ignored.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k17-rank3-same-upper-as-explicit"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('auto_pad:ignored',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    if x.ndim == 3 and kw.get("auto_pad") != "explicit":
        kw = {**kw, "auto_pad": "explicit"}  # the bug
    return P["correct"](op, x, kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
