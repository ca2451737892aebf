"""No bug: the converter wrapper around ONNX Runtime writing the ONNX pads in ONNX order (the
control for k03: the fuzzer must find nothing here)."""

from __future__ import annotations

import runpy
from pathlib import Path

PEER_NAME = "planted-faithful-ort"
EXPECTED = ()
OPS = ("max", "avg")

_converter = runpy.run_path(str(Path(__file__).with_name("_ort_converter.py")))
max_pool, avg_pool = _converter["make"](_converter["onnx_pads"])
