"""Planted bug: the generic path (kernels of 3 and more on the last axis) stops one tap short on that axis

Condition: a kernel >= 3 on the last spatial axis. Expected diagnosis: window:last-tap-dropped.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k11-last-tap-dropped"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('window:last-tap-dropped',)
OPS = ('max', 'avg')


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    g = P["geometry"](op, x, kw)
    last = g.axes[-1]
    if last.kernel < 3:
        return P["correct"](op, x, kw)
    short = type(last)(last.size, last.kernel - 1, last.stride, last.dilation, last.pad_begin, last.pad_end, last.out)
    return P["on_geometry"](op, x, type(g)(g.batch, g.channels, (*g.axes[:-1], short)), kw)  # the bug


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return _pool("avg", np.asarray(x), kw)
