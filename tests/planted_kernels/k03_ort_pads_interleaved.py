"""Planted bug: a converter wrapper around ONNX Runtime writes the ONNX pads interleaved,
[b0, e0, b1, e1, ...] instead of [b0, b1, ..., e0, e1, ...] (issue 20's third bug).

Condition: two or more spatial axes whose pads differ between axes or ends. Expected diagnosis:
pads:onnx-written-interleaved (a name pointing at the pads).
"""

from __future__ import annotations

import runpy
from collections.abc import Sequence
from pathlib import Path

PEER_NAME = "planted-k03-ort-pads-interleaved"
EXPECTED = ("pads:onnx-written-interleaved",)
OPS = ("max", "avg")


def interleaved(begin: Sequence[int], end: Sequence[int]) -> list[int]:
    return [v for pair in zip(begin, end) for v in pair]  # the bug


max_pool, avg_pool = runpy.run_path(str(Path(__file__).with_name("_ort_converter.py")))["make"](interleaved)
