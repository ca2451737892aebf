"""``poolcheck shape``: the symbolic formula without ``--input``, the pads each convention applies
(ONNX keeps a negative same_* pad, OpenVINO clamps it), one-line errors.

The command runs in-process (``_shape``: JSON documents and one-line errors, which are never
wrapped) except where the process or the width is under test: the real command (``_real_shape``,
~0.9 s CPU of start-up each, on a pipe without NO_COLOR) for the text views with long lines, the
80-column views and the out-of-range values. PyTorch is imported by the tests that use it as an
oracle, not by the whole module (~2 s CPU)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from support import cli, invoke


def _real_shape(*args: str, columns: int = 200) -> subprocess.CompletedProcess[str]:
    return cli("shape", *args, columns=columns, plain=False, timeout=60)


def _shape(*args: str) -> subprocess.CompletedProcess[str]:
    return invoke("shape", *args)


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
    text = _real_shape("--input", "7", "--kernel", "2", "--strides", "4", "--auto-pad", "same_upper", "--convention",
                       "all")
    assert "pads applied: begin 0, end -1" in text.stdout
    assert "pads applied: begin 0, end 0" in text.stdout


@pytest.mark.parametrize("args,needle", [
    (("--kernel", "2", "--strides", "0"), "strides: every value must be >= 1"),
    (("--kernel", "2", "--strides", str(2**40)), "strides: every value must be <= 2147483647"),
    (("--kernel", "x"), "--kernel: expected comma-separated integers"),
    (("--input", "4", "--kernel", "2", "--pads-begin", str(2**30), "--pads-end", str(2**30)), "padded extent"),
])
def test_bad_values_exit_2_with_one_line(args: tuple[str, ...], needle: str) -> None:
    proc = _real_shape(*args)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# --------------------------------------------------------------------------- conventions
# Oracles: PyTorch itself (its pooling's output size and its average's divisor) and onnx's own
# shape inference for ONNX, never poolcheck's rules.

onnx = pytest.importorskip("onnx")


def _torch() -> Any:
    return pytest.importorskip("torch")


def onnx_inferred(size: list[int], kernel: list[int], strides: list[int], pads: list[int], ceil_mode: int,
                  auto_pad: str = "NOTSET") -> list[int]:
    from onnx import TensorProto, helper

    attrs: dict[str, object] = {"kernel_shape": kernel, "strides": strides, "ceil_mode": ceil_mode,
                                "auto_pad": auto_pad}
    if auto_pad == "NOTSET":
        attrs["pads"] = pads
    node = helper.make_node("MaxPool", ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, *size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]))
    return [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim][2:]


def torch_shape(size: list[int], kernel: list[int], strides: list[int], pad: list[int], ceil_mode: bool) -> list[int]:
    torch = _torch()
    x = torch.zeros((1, 1, *size))
    pool = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d}[len(size)]
    return list(pool(x, kernel, strides, pad, ceil_mode=ceil_mode).shape[2:])


CONFIGS = [  # spatial size, kernel, strides, symmetric pad per axis
    ([7, 7], [2, 2], [2, 2], [1, 1]),  # the last ceil window starts in the padding: ONNX/PyTorch drop it
    ([8, 5], [3, 2], [2, 3], [1, 1]),
    ([5], [2], [2], [1]),
    ([10, 9], [4, 3], [3, 2], [2, 1]),
]


@pytest.mark.parametrize("size,kernel,strides,pad", CONFIGS)
def test_onnx_and_torch_conventions_match_the_runtimes_own_shapes(size: list[int], kernel: list[int],
                                                                  strides: list[int], pad: list[int]) -> None:
    n = len(size)
    common = ("--input", ",".join(map(str, size)), "--kernel", ",".join(map(str, kernel)),
              "--strides", ",".join(map(str, strides)), "--pads", ",".join(map(str, pad + pad)), "--json")
    for ceil in (False, True):  # in-process (24 real commands cost ~15 s CPU; the JSON is the same)
        ceil_opt = ("--ceil-mode",) if ceil else ()
        onnx_doc = json.loads(invoke("shape", *common, *ceil_opt, "--convention", "onnx").stdout)
        assert onnx_doc["output"] == onnx_inferred(size, kernel, strides, pad + pad, int(ceil))
        torch_doc = json.loads(invoke("shape", *common, *ceil_opt, "--convention", "torch").stdout)
        assert torch_doc["output"] == torch_shape(size, kernel, strides, pad, ceil)
        # no --convention: ONNX words (--pads, --ceil-mode) read as ONNX
        assert json.loads(invoke("shape", *common, *ceil_opt).stdout)["convention"] == "onnx"
    assert n in (1, 2)


def test_default_view_says_in_one_line_where_conventions_disagree() -> None:
    # 7, kernel 2, stride 2, pads 1/1, ceil: ceil((7 + 2 - 2) / 2) + 1 = 5 windows, the last starting at 8 = 7 + 1,
    # inside the end padding: OpenVINO's plain ceil keeps it, ONNX and PyTorch drop it (their own shapes say 4)
    assert onnx_inferred([7, 7], [2, 2], [2, 2], [1, 1, 1, 1], 1) == torch_shape([7, 7], [2, 2], [2, 2], [1, 1], True) \
        == [4, 4]
    proc = _real_shape("--input", "1,1,7,7", "--kernel", "2,2", "--strides", "2,2", "--pads-begin", "1,1",
                       "--pads-end", "1,1", "--rounding-type", "ceil")
    assert proc.returncode == 0, proc.stderr
    assert "output shape (OpenVINO): (1, 1, 5, 5)" in proc.stdout
    hints = [line for line in proc.stdout.splitlines() if line.startswith("differs:")]
    assert hints == ["differs: ONNX/PyTorch: 4x4 (last window would start in padding)"]
    onnx_view = _real_shape("--input", "1,1,7,7", "--kernel", "2,2", "--strides", "2,2", "--pads", "1,1,1,1",
                            "--rounding-type", "ceil", "--convention", "onnx")
    assert "output shape (ONNX): (1, 1, 4, 4)" in onnx_view.stdout
    assert [line for line in onnx_view.stdout.splitlines() if line.startswith("differs:")] == [
        "differs: OpenVINO: 5x5 (rounding_type ceil keeps a last window that starts in padding)"]
    agree = _real_shape("--input", "1,1,7,7", "--kernel", "2,2", "--strides", "2,2", "--pads", "1,1,1,1", "--ceil-mode")
    assert "differs" not in agree.stdout and "output shape (ONNX): (1, 1, 4, 4)" in agree.stdout


@pytest.mark.parametrize("spelling,canonical", [("SAME_UPPER", "same_upper"), ("same_upper", "same_upper"),
                                                ("Same_Lower", "same_lower"), ("VALID", "valid"),
                                                ("NOTSET", "explicit"), ("explicit", "explicit"),
                                                ("EXPLICIT", "explicit")])
def test_auto_pad_in_either_case(spelling: str, canonical: str) -> None:
    onnx_name = {"explicit": "NOTSET"}.get(canonical, canonical.upper())
    doc = json.loads(_shape("--input", "7,6", "--kernel", "3,2", "--strides", "2,2", "--auto-pad", spelling,
                            "--convention", "onnx", "--json").stdout)
    assert doc["auto_pad"] == canonical
    assert doc["output"] == onnx_inferred([7, 6], [3, 2], [2, 2], [0, 0, 0, 0], 0, onnx_name)


def test_onnx_pads_are_all_begins_then_all_ends() -> None:
    # pads [1, 0, 2, 3]: H begin 1, W begin 0, H end 2, W end 3
    doc = json.loads(_shape("--input", "6,6", "--kernel", "2,2", "--pads", "1,0,2,3", "--json").stdout)
    assert [ax["pads_applied"] for ax in doc["axes"]] == [[1, 2], [0, 3]]
    assert doc["output"] == onnx_inferred([6, 6], [2, 2], [1, 1], [1, 0, 2, 3], 0)


def test_count_include_pad_shows_the_divisor_per_window() -> None:
    # PyTorch as the oracle: on an input of ones with zero padding, window o averages its input taps over
    # its divisor, so divisor = input taps / output (count_include_pad=True clips the ceil window to the
    # padded input)
    size, k, s, p = 8, 3, 2, 1
    torch = _torch()
    out = torch.nn.functional.avg_pool1d(torch.ones((1, 1, size), dtype=torch.float64), k, s, p, ceil_mode=True,
                                         count_include_pad=True)[0, 0].tolist()
    taps = [sum(1 for j in range(k) if 0 <= o * s - p + j < size) for o in range(len(out))]
    divisors = [round(t / v) for t, v in zip(taps, out)]
    assert divisors == [3, 3, 3, 3, 2]  # by hand too: the last window [7, 10) holds 7, 8 (pad) and 9 (past)
    doc = json.loads(_shape("--input", str(size), "--kernel", str(k), "--strides", str(s), "--pads", f"{p},{p}",
                            "--ceil-mode", "--count-include-pad", "--json").stdout)
    runs = doc["axes"][0]["divisors"]["runs"]
    assert [r["divisor"] for r in runs for _ in range(r["first"], r["last"] + 1)] == divisors
    text = _real_shape("--input", str(size), "--kernel", str(k), "--strides", str(s), "--pads", f"{p},{p}",
                       "--ceil-mode", "--count-include-pad").stdout
    assert "H: windows 0-3: 3; window 4: 2 (window 4 reaches past the padded input: clipped, not the full kernel 3)" \
        in text
    excl = json.loads(_shape("--input", str(size), "--kernel", str(k), "--strides", str(s), "--pads", f"{p},{p}",
                             "--ceil-mode", "--exclude-pad", "--json").stdout)
    assert [r["divisor"] for r in excl["axes"][0]["divisors"]["runs"] for _ in range(r["first"], r["last"] + 1)] \
        == taps


@pytest.mark.parametrize("args,needle", [
    (("--kernel", "2", "--convention", "tflite"), "--convention: expected one of openvino, onnx, torch, all"),
    (("--kernel", "2", "--auto-pad", "same_middle"), "auto_pad: expected explicit (ONNX: NOTSET), valid"),
    (("--kernel", "2,2", "--pads", "1,1,1"), "pads: expected 4 values for a 2-D kernel"),
    (("--kernel", "2", "--pads", "1,1", "--pads-begin", "1"), "--pads and --pads-begin/--pads-end: give one"),
    (("--kernel", "2", "--ceil-mode", "--rounding-type", "ceil"), "--ceil-mode and --rounding-type: give one"),
    (("--input", "7", "--kernel", "2", "--pads", "1,0", "--convention", "torch"),
     "PyTorch cannot express this on axis H: asymmetric pads 1/0"),
    (("--kernel", "2", "--rounding-type", "CEIL"), "rounding_type"),
])
def test_bad_convention_options_exit_2_with_one_line(args: tuple[str, ...], needle: str) -> None:
    proc = _shape(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_readable_at_80_columns() -> None:
    env_args = ("--input", "1,1,7,7", "--kernel", "2,2", "--strides", "2,2", "--pads", "1,1,1,1", "--rounding-type",
                "ceil", "--count-include-pad")
    for conv in ("openvino", "onnx", "torch", "all"):
        proc = _real_shape(*env_args, "--convention", conv, columns=80)
        assert proc.returncode == 0, proc.stderr
        assert all(len(line) <= 80 for line in proc.stdout.splitlines()), proc.stdout


def test_same_shape_with_other_pads_is_said_too() -> None:
    # 7, kernel 2, stride 4, SAME_UPPER: out ceil(7 / 4) = 2 for both; ONNX's pad_shape (2 - 1) * 4 + 2 - 7 = -1
    # is kept (the odd unit at the end), OpenVINO clamps it to 0
    assert onnx_inferred([7, 7], [2, 2], [4, 4], [0, 0, 0, 0], 0, "SAME_UPPER") == [2, 2]
    ov = _real_shape("--input", "7,7", "--kernel", "2,2", "--strides", "4,4", "--auto-pad", "SAME_UPPER")
    assert [line for line in ov.stdout.splitlines() if line.startswith("differs:")] == [
        "differs: ONNX: the same shape, pads (begin/end per axis) 0/-1, 0/-1 (negative pad kept: windows start "
        "inside the input)"]
    on = _real_shape("--input", "7,7", "--kernel", "2,2", "--strides", "4,4", "--auto-pad", "SAME_UPPER",
                     "--convention", "onnx")
    assert "output shape (ONNX): (2, 2)" in on.stdout
    assert [line for line in on.stdout.splitlines() if line.startswith("differs:")] == [
        "differs: OpenVINO: the same shape, pads (begin/end per axis) 0/0, 0/0 (a negative SAME pad clamped to 0)"]
