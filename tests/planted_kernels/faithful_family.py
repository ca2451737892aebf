"""Planted bug: none: poolcheck's own family functions as a plugin's (the control of the family
kernels k18, k19): a module takes a family op by defining the public function of its name.

Condition: never. Expected diagnosis: nothing.
"""

from __future__ import annotations

from poolcheck import (  # noqa: F401  (re-exported: the plugin's functions)
    adaptive_avg_pool,
    adaptive_max_pool,
    onnx_global_average_pool,
    onnx_global_lp_pool,
    onnx_global_max_pool,
    onnx_lp_pool,
    onnx_max_unpool,
)

PEER_NAME = "planted-faithful-family"
EXPECTED = ()
OPS = ("lp", "global_avg", "global_max", "global_lp", "unpool", "adaptive_avg", "adaptive_max")
