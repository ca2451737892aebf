"""``poolcheck shape --op lp|global|unpool|adaptive`` through the real command: the output shape
against onnx's reference implementation (onnx.reference runs the operator; its output's shape is
the oracle), the adaptive bins against the loop oracle's (tests/oracle_family.py), the working
per axis, the formula without --input, and bad values as one line naming the option, exit 2.

The JSON documents and the one-line errors (never wrapped) come from the command in-process
(``invoke``; a real command cost ~0.9 s CPU of start-up each); the text views, whose lines the
in-process console (its width fixed when it was created) may wrap, from the real command."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import numpy as np
import oracle_family as OF
import pytest
from support import cli, invoke

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402


def shape(*args: str) -> subprocess.CompletedProcess[str]:
    return cli("shape", *args, columns=200, timeout=60)


def shape_json(*args: str) -> dict[str, Any]:
    proc = invoke("shape", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def reference_shape(op_type: str, x_shape: list[int], output_shape: list[int] | None = None,
                    **attrs: Any) -> list[int]:
    """The shape of what onnx.reference computes for one node at opset 22."""
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    names, feeds = ["x"], {"x": np.zeros(x_shape, np.float32)}
    inits = []
    if op_type == "MaxUnpool":
        inputs.append(helper.make_tensor_value_info("i", TensorProto.INT64, x_shape))
        names.append("i")
        feeds["i"] = np.zeros(x_shape, np.int64)
        if output_shape is not None:
            inits.append(numpy_helper.from_array(np.array(output_shape, np.int64), "s"))
            names.append("s")
    graph = helper.make_graph([helper.make_node(op_type, names, ["y"], **attrs)], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    return list(ReferenceEvaluator(model).run(None, feeds)[0].shape)


@pytest.mark.parametrize(("x", "attrs"), [
    ([1, 2, 5, 5], {"kernel_shape": [2, 2]}),
    ([1, 1, 7], {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "p": 3}),
    ([2, 1, 6, 5], {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1}),
    ([1, 1, 9, 9], {"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [3, 1]}),
    ([1, 1, 5, 4, 3], {"kernel_shape": [2, 2, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2, 2]}),
])
def test_lp_pool_shape_is_onnx_references(x: list[int], attrs: dict[str, Any]) -> None:
    args = ["--op", "lp", "--input", ",".join(map(str, x)), "--kernel", ",".join(map(str, attrs["kernel_shape"]))]
    for key, option in (("strides", "--strides"), ("pads", "--pads"), ("dilations", "--dilations")):
        if key in attrs:
            args += [option, ",".join(map(str, attrs[key]))]
    if attrs.get("ceil_mode"):
        args.append("--ceil-mode")
    if "auto_pad" in attrs:
        args += ["--auto-pad", attrs["auto_pad"]]
    report = shape_json(*args)
    assert report["operator"] == "LpPool-22" and report["convention"] == "onnx"
    assert report["output"] == reference_shape("LpPool", x, **attrs)


@pytest.mark.parametrize("x", [[1, 3, 7], [2, 3, 7, 5], [1, 2, 3, 4, 5]])
def test_global_pool_shape_is_onnx_references(x: list[int]) -> None:
    # GlobalAveragePool's: onnx.reference's GlobalMaxPool (onnx 1.23.2) reduces the last two axes,
    # wrong for rank 3 and 5 (onnx/onnx#7682, fixed by onnx/onnx#8383 after that release).
    report = shape_json("--op", "global", "--input", ",".join(map(str, x)))
    assert report["output"] == reference_shape("GlobalAveragePool", x)
    assert [ax["out"] for ax in report["axes"]] == [1] * (len(x) - 2)


@pytest.mark.parametrize(("x", "kernel", "strides", "pads", "given"), [
    ([1, 1, 2, 2], [2, 2], [2, 2], None, None),
    ([1, 2, 3], [3], [2], [1, 0], None),
    ([1, 1, 2, 2], [2, 2], [2, 2], None, [1, 1, 5, 5]),
    ([2, 1, 3, 2], [2, 2], [2, 2], [1, 1, 0, 0], [2, 1, 6, 3]),
])
def test_max_unpool_shape_with_and_without_output_shape_is_onnx_references(
        x: list[int], kernel: list[int], strides: list[int], pads: list[int] | None, given: list[int] | None) -> None:
    args = ["--op", "unpool", "--input", ",".join(map(str, x)), "--kernel", ",".join(map(str, kernel)),
            "--strides", ",".join(map(str, strides))]
    attrs: dict[str, Any] = {"kernel_shape": kernel, "strides": strides}
    if pads is not None:
        args += ["--pads", ",".join(map(str, pads))]
        attrs["pads"] = pads
    if given is not None:
        args += ["--output-shape", ",".join(map(str, given))]
    report = shape_json(*args)
    assert report["operator"] == "MaxUnpool-22"
    assert report["output"] == reference_shape("MaxUnpool", x, given, **attrs)


def test_max_unpool_working_names_the_rule_and_the_given_shape() -> None:
    proc = shape("--op", "unpool", "--input", "1,1,2,3", "--kernel", "2,2", "--strides", "2,2")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "output shape (MaxUnpool-22): (1, 1, 4, 6)" in text
    assert "H: (2 - 1) * 2 + 2 - 0 - 0 = 4" in text and "W: (3 - 1) * 2 + 2 - 0 - 0 = 6" in text
    proc = shape("--op", "unpool", "--input", "2,3", "--kernel", "2,2", "--strides", "2,2", "--output-shape", "5,7")
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 0 and "(5, 7)" in text
    assert "given by output_shape: 5 (pads are ignored; inferred: (2 - 1) * 2 + 2 - 0 - 0 = 4)" in text


@pytest.mark.parametrize(("x", "sizes"), [([1, 3, 7, 10], [3, 4]), ([2, 1, 5], [5]), ([1, 1, 4, 9, 2], [3, 2, 5])])
def test_adaptive_shape_and_bins(x: list[int], sizes: list[int]) -> None:
    report = shape_json("--op", "adaptive", "--input", ",".join(map(str, x)), "--output-shape",
                        ",".join(map(str, sizes)))
    assert report["output"] == [*x[:2], *sizes]
    for ax, size, out in zip(report["axes"], x[2:], sizes):
        bins = OF.bins(size, out)[:6]
        assert ax["working"].endswith(" ".join(f"[{s}, {e})" for s, e in bins) + (f" ... ({out} bins)" if out > 6 else ""))


def test_no_input_prints_the_family_formulas() -> None:
    proc = shape("--op", "unpool", "--kernel", "3", "--strides", "2", "--pads", "1,0")
    assert proc.returncode == 0 and "H_out = (H - 1) * 2 + 3 - 1 - 0" in proc.stdout
    proc = shape("--op", "adaptive", "--output-shape", "4,2")
    assert proc.returncode == 0 and "W_out = 2; bin j = [floor(j * W / 2), ceil((j + 1) * W / 2))" in proc.stdout
    proc = shape("--op", "lp", "--kernel", "2", "--strides", "2")
    assert proc.returncode == 0 and "H_out = floor((H + 0 + 0 - 2) / 2 + 1)" in proc.stdout


@pytest.mark.parametrize(("args", "needle"), [
    (("--op", "nope"), "--op: expected one of pool, lp, global, unpool, adaptive"),
    (("--op", "global", "--input", "1,1,4", "--kernel", "2"), "--kernel: --op global does not take it"),
    (("--op", "adaptive", "--input", "1,1,4"), "--output-shape: required for --op adaptive"),
    (("--op", "adaptive", "--input", "1,1,4", "--output-shape", "0"), "output_shape: every value must be >= 1"),
    (("--op", "adaptive", "--input", "1,1,4", "--output-shape", "x"), "--output-shape: expected comma-separated"),
    (("--op", "adaptive", "--input", "1,1,4,4", "--output-shape", "2,2,2"), "input: expected 3 spatial dims"),
    (("--op", "unpool", "--input", "1,1,2,2", "--kernel", "2,2", "--output-shape", "2,1,5,5"),
     "output_shape: N and C must be those of X"),
    (("--op", "unpool", "--input", "1,1,2", "--kernel", "2", "--dilations", "2"), "--dilations: --op unpool does not"),
    (("--op", "unpool", "--input", "1,1,1", "--kernel", "3", "--pads", "2,2"), "pads: the inferred output size"),
    (("--op", "lp", "--input", "4"), "--kernel: required for --op lp"),
    (("--op", "lp", "--kernel", "2", "--rounding-type", "ceil"), "--rounding-type: --op lp does not take it"),
    (("--op", "global", "--input", "4,4"), "input: global pooling takes the whole shape"),
    (("--kernel", "2", "--input", "4", "--output-shape", "3"), "--output-shape: only --op unpool and --op adaptive"),
])
def test_bad_values_exit_2_with_one_line(args: tuple[str, ...], needle: str) -> None:
    proc = invoke("shape", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert needle in proc.stderr
