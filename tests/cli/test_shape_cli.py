"""``poolcheck shape`` through the real command: the symbolic formula without ``--input``, the pads
each convention applies (ONNX keeps a negative same_* pad, OpenVINO clamps it), one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import poolcheck


def _shape(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(poolcheck.__file__))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env["COLUMNS"] = "200"
    return subprocess.run([sys.executable, "-m", "poolcheck", "shape", *args], capture_output=True, text=True,
                          timeout=60, env=env)


def test_no_input_prints_the_formula_per_axis() -> None:
    proc = _shape("--kernel", "2,3", "--strides", "2,1", "--pads-begin", "1,0", "--pads-end", "1,2",
                  "--rounding-type", "ceil")
    assert proc.returncode == 0, proc.stderr
    assert "H_out = ceil((H + 1 + 1 - 2) / 2 + 1)" in proc.stdout
    assert "W_out = ceil((W + 0 + 2 - 3) / 1 + 1)" in proc.stdout


def test_no_input_json_shows_both_conventions_for_same() -> None:
    proc = _shape("--kernel", "2", "--strides", "4", "--auto-pad", "same_upper", "--convention", "all", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["input"] is None and data["output"] is None
    rules = {r["convention"]: r["formula"] for r in data["axes"][0]["rules"]}
    assert "max(0, (H_out - 1) * 4 + 2 - H)" in rules["openvino-runtime"]
    assert "pad_shape = (H_out - 1) * 4 + 2 - H" in rules["onnx"] and "negative" in rules["onnx"]


def test_convention_all_shows_the_pads_each_convention_applies() -> None:
    # size 7, kernel 2, stride 4: out 2, pad_shape = 1 * 4 + 2 - 7 = -1: the odd unit at the end (upper)
    proc = _shape("--input", "7", "--kernel", "2", "--strides", "4", "--auto-pad", "same_upper", "--convention",
                  "all", "--json")
    assert proc.returncode == 0, proc.stderr
    rules = {r["convention"]: r for r in json.loads(proc.stdout)["axes"][0]["rules"]}
    assert rules["openvino-runtime"]["pads"] == [0, 0]
    assert rules["onnx"]["pads"] == [0, -1]
    assert rules["onnx"]["out"] == rules["openvino-runtime"]["out"] == 2
    text = _shape("--input", "7", "--kernel", "2", "--strides", "4", "--auto-pad", "same_upper", "--convention", "all")
    assert "pads applied: begin 0, end -1" in text.stdout
    assert "pads applied: begin 0, end 0" in text.stdout


@pytest.mark.parametrize("args,needle", [
    (("--kernel", "2", "--strides", "0"), "strides: every value must be >= 1"),
    (("--kernel", "2", "--strides", str(2**40)), "strides: every value must be <= 2147483647"),
    (("--kernel", "x"), "--kernel: expected comma-separated integers"),
    (("--input", "4", "--kernel", "2", "--pads-begin", str(2**30), "--pads-end", str(2**30)), "padded extent"),
])
def test_bad_values_exit_2_with_one_line(args: tuple[str, ...], needle: str) -> None:
    proc = _shape(*args)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
