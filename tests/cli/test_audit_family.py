"""``poolcheck audit`` on the whole pooling family and on older operator versions: every node is
judged by the catalogue row of its own version (ONNX: the version in force at the model's opset;
OpenVINO IR: the op's opset), and that version is named in the text and JSON output.

The JSON documents come from the command in-process (a real command cost ~1.8 s CPU of start-up
each); the text tables from the real command on a 100-column terminal, which the in-process
console (its width fixed when it was created) cannot promise."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from support import PLANTED, invoke  # noqa: E402
from support import cli as _cli  # noqa: E402

from poolcheck.models.audit import unpool_indices  # noqa: E402
from poolcheck.models.risk import Risk, family_risks  # noqa: E402
from poolcheck.spec.operators import parse  # noqa: E402

cli = functools.partial(_cli, columns=100)
CORRECT = str(PLANTED / "correct.py")


def save(path: Path, nodes: list[Any], in_shape: list[int], opset: int, elem: int = TensorProto.FLOAT,
         initializers: list[Any] | None = None) -> Path:
    x = helper.make_tensor_value_info("x", elem, in_shape)
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in nodes[-1].output if o]
    graph = helper.make_graph(nodes, "g", [x], outs, initializer=initializers or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def audit_json(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = invoke("audit", *args, "--json")
    return proc, json.loads(proc.stdout) if proc.stdout.strip() else {}


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in doc["nodes"]}


def engine_verdicts(node: dict[str, Any]) -> set[str]:
    return {c["checks"][e] for c in node["cases"] for e in ("numpy", "c") if e in c["checks"]}


def test_an_older_opset_is_judged_by_its_own_versions(tmp_path: Path) -> None:
    """At opset 9 MaxPool is MaxPool-8 and AveragePool is AveragePool-7: dilations (MaxPool-10)
    and ceil_mode (AveragePool-10) are errors of the model, one line each naming the version;
    the same nodes at opset 22 are judged."""
    nodes = [helper.make_node("MaxPool", ["x"], ["a"], name="dil", kernel_shape=[2, 2], dilations=[2, 2]),
             helper.make_node("AveragePool", ["a"], ["b"], name="ceil", kernel_shape=[2, 2], ceil_mode=1),
             helper.make_node("MaxPool", ["b"], ["y"], name="plain", kernel_shape=[2, 2], strides=[2, 2])]
    old = save(tmp_path / "old.onnx", nodes, [1, 2, 9, 9], opset=9)
    proc, doc = audit_json(str(old), "--peers", CORRECT)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {old}: node 'dil': attribute 'dilations' is not an attribute of MaxPool-8, the version in force "
        "at the model's opset 9 (MaxPool-10 has it)",
        f"error: {old}: node 'ceil': attribute 'ceil_mode' is not an attribute of AveragePool-7, the version in "
        "force at the model's opset 9 (AveragePool-10 has it)"]
    nodes_ = by_name(doc)
    assert [nodes_[n]["operator"] for n in ("dil", "ceil", "plain")] == ["MaxPool-8", "AveragePool-7", "MaxPool-8"]
    assert nodes_["plain"]["problem"] is None and engine_verdicts(nodes_["plain"]) == {"pass"}
    new = save(tmp_path / "new.onnx", nodes, [1, 2, 9, 9], opset=22)
    proc, doc = audit_json(str(new), "--peers", CORRECT)
    assert proc.returncode == 0, proc.stderr
    assert [n["operator"] for n in doc["nodes"]] == ["MaxPool-22", "AveragePool-22", "MaxPool-22"]


@pytest.mark.parametrize(("opset", "operator", "judged"), [(11, "MaxPool-11", False), (12, "MaxPool-12", True)])
def test_element_types_are_the_versions(tmp_path: Path, opset: int, operator: str, judged: bool) -> None:
    """int8 MaxPool arrived at version 12: an opset-11 int8 MaxPool cannot be judged (its row
    takes float types), an opset-12 one is."""
    model = save(tmp_path / "i8.onnx", [helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2])],
                 [1, 1, 4, 4], opset=opset, elem=TensorProto.INT8)
    proc, doc = audit_json(str(model), "--peers", CORRECT)
    (node,) = doc["nodes"]
    assert node["operator"] == operator
    if judged:
        assert proc.returncode == 0 and node["problem"] is None and engine_verdicts(node) == {"pass"}
    else:
        assert proc.returncode == 2 and "cannot judge: dtype int8" in node["problem"]
        assert "MaxPool-11" in node["problem"]


def test_average_pool_1_has_no_count_include_pad(tmp_path: Path) -> None:
    nodes = [helper.make_node("AveragePool", ["x"], ["y"], name="ap", kernel_shape=[2, 2], pads=[1, 1, 1, 1],
                              count_include_pad=1)]
    proc, doc = audit_json(str(save(tmp_path / "a6.onnx", nodes, [1, 1, 4, 4], opset=6)), "--peers", CORRECT)
    assert proc.returncode == 2 and "not an attribute of AveragePool-1" in proc.stderr
    assert "(AveragePool-7 has it)" in proc.stderr
    proc, doc = audit_json(str(save(tmp_path / "a7.onnx", nodes, [1, 1, 4, 4], opset=7)), "--peers", CORRECT)
    (node,) = doc["nodes"]
    assert proc.returncode == 0 and node["operator"] == "AveragePool-7" and "exclude_pad" not in node["config"]


def test_family_nodes_are_judged_as_their_own_operators(tmp_path: Path) -> None:
    """LpPool, GlobalMaxPool, GlobalLpPool and MaxUnpool (with and without its output_shape
    input) at opset 22: each named by its version, its output shape that of onnx's shape
    inference, its risk classes, and both engines run on its cases."""
    nodes = [
        helper.make_node("LpPool", ["x"], ["lp"], name="lp", kernel_shape=[3, 3], p=3, pads=[1, 1, 0, 0]),
        helper.make_node("GlobalMaxPool", ["x"], ["gm"], name="gmax"),
        helper.make_node("GlobalLpPool", ["x"], ["gl"], name="glp", p=1),
        helper.make_node("MaxPool", ["x"], ["mv", "mi"], name="mp", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxUnpool", ["mv", "mi"], ["u1"], name="unpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxUnpool", ["mv", "mi", "shape"], ["u2"], name="unpool_shape", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Concat", ["u1", "u2"], ["y"], axis=1),
    ]
    model = save(tmp_path / "fam.onnx", nodes, [1, 2, 7, 7], opset=22,
                 initializers=[numpy_helper.from_array(np.array([1, 2, 7, 7], dtype=np.int64), "shape")])
    inferred = onnx.shape_inference.infer_shapes(onnx.load(str(model)))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred.graph.value_info}
    proc, doc = audit_json(str(model), "--peers", CORRECT)
    assert proc.returncode == 0, proc.stderr
    nodes_ = by_name(doc)
    assert {k: v["operator"] for k, v in nodes_.items()} == {
        "lp": "LpPool-22", "gmax": "GlobalMaxPool-22", "glp": "GlobalLpPool-22", "mp": "MaxPool-22",
        "unpool": "MaxUnpool-22", "unpool_shape": "MaxUnpool-22"}
    for name, out in (("lp", "lp"), ("gmax", "gm"), ("glp", "gl"), ("unpool", "u1")):
        assert next(iter(nodes_[name]["output_shapes"].values())) == shapes[out], name
    assert nodes_["unpool"]["output_shapes"] == {"onnx": [1, 2, 6, 6]}  # (3 - 1) * 2 + 2
    assert nodes_["unpool_shape"]["output_shapes"] == {"onnx": [1, 2, 7, 7]}  # the given output_shape
    assert nodes_["unpool_shape"]["attributes"]["output_shape"] == [1, 2, 7, 7]
    assert nodes_["lp"]["config"] == "LpPool(p=3, kernel=[3, 3], strides=[1, 1], pads=[1, 1]/[0, 0])"
    assert "lp-pads" in nodes_["lp"]["risks"] and "divisor-overhang" not in nodes_["lp"]["risks"]
    assert nodes_["gmax"]["risks"] == ["nan-max"] and nodes_["unpool_shape"]["risks"] == ["unpool-output-shape"]
    for name in ("lp", "gmax", "glp", "unpool", "unpool_shape"):
        assert engine_verdicts(nodes_[name]) == {"pass"}, (name, nodes_[name]["cases"])
        assert [c["id"].rsplit("/", 1)[1] for c in nodes_[name]["cases"]] == ["random", "adversarial"]
    # the text table names each node's operator version
    text = cli("audit", str(model), "--peers", CORRECT).stdout
    for version in ("LpPool-22", "GlobalMaxPool-22", "GlobalLpPool-22", "MaxUnpool-22"):
        assert version in text


def test_lp_pool_before_18_has_no_ceil_mode(tmp_path: Path) -> None:
    nodes = [helper.make_node("LpPool", ["x"], ["y"], name="lp", kernel_shape=[2, 2], ceil_mode=1)]
    model = save(tmp_path / "lp11.onnx", nodes, [1, 1, 5, 5], opset=11)
    proc = cli("audit", str(model), "--peers", CORRECT)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {model}: node 'lp': attribute 'ceil_mode' is not an attribute of LpPool-11, the version in force "
        "at the model's opset 11 (LpPool-18 has it)"]
    assert "LpPool-11" in proc.stdout


def test_a_version_poolcheck_has_no_row_for_is_that_nodes_error(tmp_path: Path) -> None:
    model = save(tmp_path / "lp1.onnx", [helper.make_node("LpPool", ["x"], ["y"], name="lp", kernel_shape=[2, 2])],
                 [1, 1, 5, 5], opset=1)
    proc, doc = audit_json(str(model), "--peers", CORRECT)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "LpPool at opset 1: poolcheck has no row for it (its versions: LpPool-2" in proc.stderr
    assert doc["nodes"][0]["operator"] == "LpPool"


def test_openvino_adaptive_pools_are_judged(tmp_path: Path) -> None:
    ov = pytest.importorskip("openvino")
    import openvino.opset8 as o8

    x = o8.parameter([1, 2, 7, 7], np.float32, name="x")
    avg = o8.adaptive_avg_pool(x, o8.constant(np.array([3, 3], np.int64)))
    mx = o8.adaptive_max_pool(x, o8.constant(np.array([2, 7], np.int64)), index_element_type="i32")
    xml = tmp_path / "adaptive.xml"
    ov.save_model(ov.Model([avg.output(0), mx.output(0), mx.output(1)], [x]), str(xml))
    proc, doc = audit_json(str(xml), "--peers", CORRECT)
    assert proc.returncode == 0, proc.stderr
    ops = {n["operator"]: n for n in doc["nodes"]}
    assert set(ops) == {"AdaptiveAvgPool-8", "AdaptiveMaxPool-8"}
    a, m = ops["AdaptiveAvgPool-8"], ops["AdaptiveMaxPool-8"]
    assert a["output_shapes"] == {"openvino-runtime": [1, 2, 3, 3]} and a["risks"] == ["adaptive-uneven-bins"]
    assert m["attributes"] == {"output_shape": [2, 7], "index_element_type": "i32"}
    assert m["output_shapes"] == {"openvino-runtime": [1, 2, 2, 7]}
    assert m["risks"] == ["nan-max", "adaptive-uneven-bins"]  # 7 into 2 bins: uneven; 7 into 7: even
    assert engine_verdicts(a) == engine_verdicts(m) == {"pass"}
    assert "AdaptiveMaxPool-8" in cli("audit", str(xml), "--peers", CORRECT).stdout


def test_unpool_indices_invert_a_max_pool_or_collide() -> None:
    spec = parse("MaxUnpool-22", {"kernel_shape": [2, 2], "strides": [2, 2]})
    rnd = unpool_indices(spec, (2, 3, 3, 3), "random")
    plane = 6 * 6
    assert rnd.shape == (2, 3, 3, 3) and rnd.dtype == np.int64
    # MaxPool's indices: each in its own (n, c) plane, each in its own window, none twice
    for n in range(2):
        for c in range(3):
            rows, cols = np.divmod(rnd[n, c] - (n * 3 + c) * plane, 6)
            assert ((rows // 2 == np.arange(3)[:, None]) & (cols // 2 == np.arange(3)[None, :])).all()
    assert len(np.unique(rnd)) == rnd.size
    adv = unpool_indices(spec, (2, 3, 3, 3), "adversarial")
    planes = adv.reshape(6, -1) - (np.arange(6) * plane)[:, None]
    assert planes.min() >= 0 and planes.max() < 3  # the first three positions of each plane: collisions
    # an output_shape MaxPool cannot reach from X's shape: random positions, still in each plane
    wide = spec.replace(output_shape=(1, 1, 8, 8))
    ind = unpool_indices(wide, (1, 1, 3, 3), "random")
    assert ind.min() >= 0 and ind.max() < 64


def test_family_risks() -> None:
    lp = parse("LpPool-22", {"kernel_shape": [2], "pads": [1, 0], "p": 2})
    assert family_risks(lp, (1, 1, 5)) == [Risk.ASYMMETRIC_PADS, Risk.LP_PADS]
    overlap = parse("MaxUnpool-22", {"kernel_shape": [3], "strides": [2]})
    assert family_risks(overlap, (1, 1, 4)) == [Risk.UNPOOL_OVERLAP]
    even = parse("AdaptiveAvgPool-8", {"output_shape": [3]})
    assert family_risks(even, (1, 1, 6), "float16") == [Risk.AVG_PRECISION]
    assert family_risks(even, (1, 1, 7), "float32") == [Risk.ADAPTIVE_UNEVEN_BINS]
    assert family_risks(parse("GlobalMaxPool-22", {}), (1, 1, 4), "float32") == [Risk.NAN_MAX]


def test_max_pool_1_has_one_output_and_no_storage_order(tmp_path: Path) -> None:
    """At opset 7 MaxPool is MaxPool-1: a second output (Indices arrived with MaxPool-8) and
    storage_order are errors of the model."""
    two = save(tmp_path / "two.onnx", [helper.make_node("MaxPool", ["x"], ["y", "i"], name="mp", kernel_shape=[2])],
               [1, 1, 4], opset=7)
    proc, doc = audit_json(str(two), "--peers", CORRECT)
    assert proc.returncode == 2 and doc["nodes"][0]["operator"] == "MaxPool-1"
    assert proc.stderr.strip().splitlines() == [f"error: {two}: node 'mp': MaxPool-1 has one output, the node has 2"]
    so = save(tmp_path / "so.onnx", [helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2],
                                                      storage_order=0)], [1, 1, 4], opset=7)
    proc = cli("audit", str(so), "--peers", CORRECT)
    assert proc.returncode == 2 and "'storage_order' is not an attribute of MaxPool-1" in proc.stderr
    assert "(MaxPool-8 has it)" in proc.stderr


@pytest.mark.parametrize(("opset", "judged"), [(18, False), (22, True)])
def test_bfloat16_lp_pool_is_judged_where_its_version_takes_it(tmp_path: Path, opset: int, judged: bool) -> None:
    model = save(tmp_path / "bf.onnx", [helper.make_node("LpPool", ["x"], ["y"], name="lp", kernel_shape=[2, 2])],
                 [1, 2, 5, 5], opset=opset, elem=TensorProto.BFLOAT16)
    proc, doc = audit_json(str(model), "--peers", CORRECT)
    (node,) = doc["nodes"]
    assert node["operator"] == f"LpPool-{opset}" and node["dtype"] == "bfloat16"
    if judged:
        assert proc.returncode == 0, proc.stderr
        assert engine_verdicts(node) == {"pass"}
    else:
        assert proc.returncode == 2 and "cannot judge: dtype bfloat16" in node["problem"]
