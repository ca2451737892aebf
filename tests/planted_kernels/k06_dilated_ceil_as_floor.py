"""Planted bug: ceil rounding falls back to floor when the window is dilated

Condition: ceil rounding (OpenVINO ceil) with a dilation > 1 where ceil and floor differ. Expected diagnosis: rounding:ceil->floor.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k06-dilated-ceil-as-floor"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('rounding:ceil->floor',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    if kw.get("rounding_type") == "ceil" and any(d > 1 for d in kw.get("dilations") or ()):
        kw = {**kw, "rounding_type": "floor"}  # the bug
    return P["correct"](op, x, kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
