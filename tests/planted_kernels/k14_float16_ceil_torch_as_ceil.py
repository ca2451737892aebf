"""Planted bug: the float16 kernel treats ceil_torch as ceil (a last window starting in the end padding is kept)

Condition: float16 input, ceil_torch rounding, a last window starting in the end padding. Expected diagnosis: rounding:ceil_torch->ceil.

A violation under the OpenVINO convention only: [OV-CEIL-TORCH] drops the window. An ONNX
MaxPool-22 with ceil_mode=1 reaches the kernel as ceil_torch too, but there the class is an
erratum: the ONNX formula [ONNX-SHAPE-CEIL] keeps a window starting in the end padding and the
page's own example [ONNX-LAST-WINDOW-EXAMPLE] drops it -- only contradicting sentences decide
(docs/severity.md). So ``--exit-first`` stops only at an OpenVINO-convention example: on seeds
where the ONNX ones come first the run goes on (seed 2 found the violation after 55 s of 60);
the suite fuzzes it under ``--conventions openvino`` (FUZZ_ARGS).
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np

P = runpy.run_path(str(Path(__file__).with_name("_planted.py")))
PEER_NAME = "planted-k14-float16-ceil-torch-as-ceil"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ('rounding:ceil_torch->ceil',)
OPS = ('max',)
#: Extra ``poolcheck fuzz`` options the suite runs this kernel with: the convention where it is a violation.
FUZZ_ARGS = ("--conventions", "openvino")


def _pool(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    if x.dtype == np.float16 and kw.get("rounding_type") == "ceil_torch":
        kw = {**kw, "rounding_type": "ceil"}  # the bug
    return P["correct"](op, x, kw)


def max_pool(x: Any, **kw: Any) -> Any:
    return _pool("max", np.asarray(x), kw)


def avg_pool(x: Any, **kw: Any) -> Any:
    return P["correct"]("avg", np.asarray(x), kw)
