"""Planted bug: the batched path (batch > 1) swaps pads_begin and pads_end

Condition: batch > 1 with asymmetric explicit pads. Expected diagnosis: pads:swapped.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k13-batched-pads-swapped"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('pads:swapped',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    if x.shape[0] > 1:
        kw = {**kw, "pads_begin": kw.get("pads_end"), "pads_end": kw.get("pads_begin")}  # the bug
    return P["correct"](op, x, kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
