"""Planted bug: integer max pooling pads with 0 instead of the type's lowest value (issue 20's second bug)

Condition: a signed integer input and a window touching the padding whose elements are all negative. Expected diagnosis: int_max:pad-zero.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k02-int-max-pad-zero"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('int_max:pad-zero',)
OPS = ('max',)


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    values, indices = P["correct"](op, x, kw)
    if x.dtype.kind != "i":
        return values, indices
    g = P["geometry"](op, x, kw)
    touching = np.zeros(values.shape, dtype=bool)
    for pos in np.ndindex(*values.shape[2:]):  # a plain loop over the windows
        for o, a in zip(pos, g.axes):
            taps = [o * a.stride - a.pad_begin + j * a.dilation for j in range(a.kernel)]
            if any(-a.pad_begin <= t < 0 or a.size <= t < a.size + a.pad_end for t in taps):
                touching[(slice(None), slice(None), *pos)] = True
    values = np.where(touching & (values < 0), np.zeros((), values.dtype), values)  # the bug: padding is 0
    return values, indices


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
