"""A fixed result for the report tests: real cases run through the runner (so geometry, windows
and chosen taps come from the real code), plus made-up peer outcomes for every verdict.

Documented outputs are the reference engine's own output, perturbed where a case must fail or
record an erratum -- the renderers are under test here, not the engines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from poolcheck.api import run_spec
from poolcheck.cases import build_spec, load_file
from poolcheck.peers.base import PeerOutput
from poolcheck.results import CaseResult, Check, RunResult
from poolcheck.runner import check_peer_output, new_result, run_case

PEER = "fakert"
DIAGNOSIS = "consistent with policy empty_max=-FLT_MAX (OpenVINO CPU); the spec leaves it open"


@dataclass
class _Result:
    """Stands in for poolcheck.peers.base.PeerResult (status, output, message)."""

    status: str
    output: PeerOutput | None = None
    message: str = ""


def _doc(op: str, attrs: dict[str, Any], x: np.ndarray) -> dict[str, Any]:
    values, indices = run_spec(build_spec(op, attrs), x)
    out: dict[str, Any] = {"values": values.tolist()}
    if indices is not None:
        out["indices"] = indices.tolist()
    return out


def _case_specs() -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    x2 = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    xc = rng.integers(-50, 50, size=(1, 2, 4, 4)).astype(np.float32)
    x1 = np.array([[[1, 2, 3]]], dtype=np.float32)
    xa = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    x3 = rng.integers(-9, 9, size=(1, 1, 3, 4, 4)).astype(np.float32)
    xo = np.arange(5, dtype=np.float32).reshape(1, 1, 5)

    a_pass = {"kernel": [2, 2], "strides": [2, 2]}
    a_ceil = {"kernel": [3, 3], "strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1], "rounding_type": "ceil"}
    a_avg1 = {"kernel": [2], "strides": [1], "pads_begin": [1], "pads_end": [0], "exclude_pad": True}
    a_avg2 = {"kernel": [2, 2], "strides": [1, 1], "pads_begin": [1, 1], "pads_end": [0, 0], "exclude_pad": False}
    a_3d = {"kernel": [2, 2, 2], "strides": [2, 2, 2], "pads_begin": [0, 0, 0], "pads_end": [1, 0, 0],
            "rounding_type": "ceil"}
    a_onnx = {"kernel_shape": [3], "pads": [2, 2], "count_include_pad": 0}

    avg1 = _doc("AvgPool-14", a_avg1, x1)
    wrong1 = [[[1.0, 1.5, 3.0]]]
    avg2 = _doc("AvgPool-14", a_avg2, xa)
    wrong2 = np.array(avg2["values"])
    wrong2[0, 0, 2, 1] += 1.0
    wrong2[0, 0, 0, 0] = 9.0
    return [
        {"id": "max2d-pass", "title": "MaxPool 2x2 stride 2", "op": "MaxPool-8", "attributes": a_pass,
         "input": x2.tolist(), "expected": _doc("MaxPool-8", a_pass, x2), "tags": ["openvino", "2d"]},
        {"id": "max2d-ceil-peer-fail", "title": "MaxPool ceil, a peer differs next to the padding", "op": "MaxPool-8",
         "attributes": a_ceil, "input": xc.tolist(), "expected": _doc("MaxPool-8", a_ceil, xc)},
        {"id": "avg1d-erratum", "title": "AvgPool exclude_pad <1-D> | erratum", "op": "AvgPool-14",
         "attributes": a_avg1, "input": x1.tolist(), "expected": {"values": wrong1},
         "erratum": {"says": "the last value is 3", "correct": {"values": avg1["values"]},
                     "why": "the window (2, 3) averages to 2.5"}},
        {"id": "avg2d-doc-fail", "title": "AvgPool include_pad, documented value wrong", "op": "AvgPool-14",
         "attributes": a_avg2, "input": xa.tolist(), "expected": {"values": wrong2.tolist()}},
        {"id": "max3d-peer-crash", "title": "3-D MaxPool ceil", "op": "MaxPool-8", "attributes": a_3d,
         "input": x3.tolist(), "expected": _doc("MaxPool-8", a_3d, x3)},
        {"id": "onnx-avg-peer-rejects", "title": "ONNX AveragePool, pads equal to the kernel", "op": "AveragePool-19",
         "attributes": a_onnx, "input": xo.tolist(), "expected": _doc("AveragePool-19", a_onnx, xo)},
    ]


def sample_case_file(directory: Path) -> Path:
    path = directory / "sample_cases.yaml"
    path.write_text(yaml.safe_dump({"schema": "poolcheck.case/1", "cases": _case_specs()}, sort_keys=False))
    return path


def sample_result(directory: Path) -> RunResult:
    """A result holding every verdict: pass, fail (document and peer), erratum, crash, timeout,
    rejects, skip, error."""
    cases = {c.id: c for c in load_file(sample_case_file(directory))}

    def peer(case_id: str) -> list[Check]:
        case = cases[case_id]
        values, indices = run_spec(case.spec, case.input)
        if case_id == "max2d-ceil-peer-fail":
            values = values.copy()
            indices = indices.copy()
            values[0, 0, 2, 2] = -3.4028234663852886e38
            indices[0, 0, 2, 2] = 0
            values[0, 1, 0, 1] = np.nan
            check = check_peer_output(case, PEER, "9.9", _Result("ok", PeerOutput(values, indices)))
            check.diagnosis = DIAGNOSIS
            return [check]
        if case_id == "max3d-peer-crash":
            return [check_peer_output(case, PEER, "9.9", _Result("crash", None, "worker died (SIGSEGV)"))]
        if case_id == "onnx-avg-peer-rejects":
            return [check_peer_output(case, PEER, "9.9", _Result("rejects", None, "pads must be < kernel"))]
        if case_id == "avg2d-doc-fail":
            return [check_peer_output(case, PEER, "9.9", _Result("timeout", None, "no answer in 30 s"))]
        if case_id == "avg1d-erratum":
            return [check_peer_output(case, PEER, "9.9", _Result("declined", None, "1-D pooling not supported"))]
        return [check_peer_output(case, PEER, "9.9", _Result("ok", PeerOutput(values, indices)))]

    result = new_result("poolcheck run sample_cases.yaml --peers fakert")
    result.created = "2026-01-02T03:04:05+00:00"
    for case_id, case in cases.items():
        result.cases.append(run_case(case, ["numpy"], peer(case_id)))
    result.cases.append(CaseResult(case_id="broken-case", verdict="error", source=f"{directory}/broken.yaml:4",
                                   message="broken.yaml:4: case 'broken-case': field 'attributes.kernel': required by MaxPool-8"))
    return result
