"""Planted bug: ceil_torch's last-window test compares the last window's start with H instead of H + pads_begin (issue 20's first bug): a last window that starts in the input's
last pads_begin elements is dropped (the output is one element short on that axis)

Condition: ceil_torch rounding with explicit begin padding, when the last ceil window starts in [H, H + pads_begin). Expected diagnosis: rounding:ceil_torch-last-window-vs-H.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k01-ceil-torch-last-window-vs-h"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('rounding:ceil_torch-last-window-vs-H',)
OPS = ('max', 'avg')


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    s = P["spec"](op, kw)
    if s.applied_rounding != "ceil_torch" or s.auto_pad != "explicit":
        return P["correct"](op, x, kw)
    g = P["geometry"](op, x, {**kw, "rounding_type": "ceil"})
    axes = []
    for a in g.axes:
        drop = a.out > 1 and (a.out - 1) * a.stride >= a.size  # the bug: H, not H + pads_begin
        axes.append(type(a)(a.size, a.kernel, a.stride, a.dilation, a.pad_begin, a.pad_end, a.out - drop))
    return P["on_geometry"](op, x, type(g)(g.batch, g.channels, tuple(axes)), kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return _pool("avg", np.asarray(x), kw)
