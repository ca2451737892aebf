"""Planted bug: a family kernel (LpPool): the pads are dropped on rank-4 inputs -- the windows
are those of pads 0, as if the padding were never applied (issue 23's "pads ignored by LpPool").

Condition: LpPool on a 2-D (rank-4) input with explicit, non-zero pads. Expected diagnosis:
the window variant pads:ignored, which places LpPool's windows as MaxPool's would be placed (one
name for one behaviour). A plugin takes a family op by defining the public function of its name
(docs/peers.md): this one defines ``onnx_lp_pool`` and ``onnx_global_lp_pool`` (faithful) only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import poolcheck

PEER_NAME = "planted-k18-lp-pads-ignored-rank4"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ("pads:ignored",)
OPS = ("lp",)
#: A family kernel is fuzzed on its own ops (the family fuzzes apart from MaxPool/AveragePool).
FUZZ_ARGS = ("--ops", "lp")


def onnx_lp_pool(x: Any, kernel_shape: Any, p: int = 2, strides: Any = None, pads: Any = None,
                 dilations: Any = None, ceil_mode: int = 0, auto_pad: str = "NOTSET") -> Any:
    x = np.asarray(x)
    if x.ndim == 4 and auto_pad == "NOTSET" and pads is not None and any(pads):
        pads = [0] * len(pads)  # the bug
    return poolcheck.onnx_lp_pool(x, kernel_shape, p=p, strides=strides, pads=pads, dilations=dilations,
                                  ceil_mode=ceil_mode, auto_pad=auto_pad)


onnx_global_lp_pool = poolcheck.onnx_global_lp_pool
