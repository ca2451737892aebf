"""Planted bug: none: poolcheck's engine behind the plugin signatures, through the same plumbing (the control)

Condition: never. Expected diagnosis: nothing.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-faithful"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ()
OPS = ('max', 'avg')


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    return P["correct"](op, x, kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return _pool("avg", np.asarray(x), kw)
