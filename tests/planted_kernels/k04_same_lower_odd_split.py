"""Planted bug: same_lower puts the odd padding element at the end, as same_upper does

Condition: auto_pad same_lower with an odd total padding. Expected diagnosis: same:swapped.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k04-same-lower-odd-split"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('same:swapped',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    if kw.get("auto_pad") == "same_lower":
        kw = {**kw, "auto_pad": "same_upper"}  # the bug
    return P["correct"](op, x, kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
