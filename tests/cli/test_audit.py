"""``poolcheck audit MODEL``: pooling nodes found, shapes, risk classes, peer runs, exit codes,
and every bad model an exit 2 with a one-line reason. Models are built here with onnx.helper
(plus the onnx package's own ``light/`` models when shipped)."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from support import PLANTED  # noqa: E402
from support import cli as _cli  # noqa: E402

from poolcheck.results import Signature  # noqa: E402

cli = functools.partial(_cli, columns=80)

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def save_model(path: Path, nodes: list[Any], in_shape: list[Any], opset: int = 22) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in nodes[-1].output]
    graph = helper.make_graph(nodes, "g", [x], outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    onnx.save(model, str(path))
    return path


@pytest.fixture
def two_pools(tmp_path: Path) -> Path:
    """Relu -> MaxPool(k3 s3 pads 1/1 ceil) -> AveragePool(k2 s1 pads 1/0) on 1x2x5x5."""
    return save_model(tmp_path / "two.onnx", [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["m"], name="mp", kernel_shape=[3, 3], strides=[3, 3],
                         pads=[1, 1, 1, 1], ceil_mode=1),
        helper.make_node("AveragePool", ["m"], ["y"], name="ap", kernel_shape=[2, 2], pads=[1, 1, 0, 0]),
    ], [1, 2, 5, 5])


def audit_json(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = cli("audit", *args, "--json")
    return proc, json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_nodes_shapes_and_risks(two_pools: Path) -> None:
    proc, doc = audit_json(str(two_pools), "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 0, proc.stderr
    mp, ap = doc["nodes"]
    assert (mp["node"], mp["op_type"], mp["input_shape"]) == ("mp", "MaxPool", [1, 2, 5, 5])
    # By hand: ceil((5 + 2 - 3) / 3) + 1 = 3 windows, the last starting at 6 = 5 + 1 (in the padding):
    # ONNX's ceil_mode drops it (2), plain ceil keeps it (3).
    assert mp["output_shapes"]["openvino-runtime"] == [1, 2, 2, 2]
    assert mp["output_shapes"]["onnx"] == [1, 2, 2, 2]
    assert "ceil-window-in-padding" in mp["risks"] and "nan-max" in mp["risks"]
    assert ap["input_shape"] == [1, 2, 2, 2] and ap["output_shapes"]["onnx"] == [1, 2, 2, 2]
    assert "divisor-overhang" in ap["risks"] and "asymmetric-pads" in ap["risks"]
    assert all(Signature.parse(k["signature"]).op == "avg" for k in ap["known_divergences"])
    assert any("divisor=" in k["signature"] for k in ap["known_divergences"])
    for node in (mp, ap):
        assert [c["id"].split("/")[1] for c in node["cases"]] == ["random", "adversarial"]
        assert all(c["checks"]["planted-correct"] == "pass" for c in node["cases"])
    assert doc["nodes"][0]["differing_peers"] == {}


def test_diverging_peer_exits_1_and_table_fits_80_columns(two_pools: Path, tmp_path: Path) -> None:
    proc = cli("audit", str(two_pools), "--peers", str(PLANTED / "divisor_counts_padding.py"),
               "--report-dir", str(tmp_path / "rep"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert all(len(line) <= 80 for line in proc.stdout.splitlines() if not line.startswith("reports written"))
    assert "planted-divisor" in proc.stdout.replace("\n", "") and "violation" in proc.stdout
    result = json.loads((tmp_path / "rep" / "result.json").read_text())
    verdicts = {c["case_id"]: c["verdict"] for c in result["cases"]}
    assert verdicts["ap/random"] == "fail" and verdicts["mp/random"] == "pass"
    # --fail-on decides: a violation outside the chosen severities is exit 0.
    assert cli("audit", str(two_pools), "--peers", str(PLANTED / "divisor_counts_padding.py"),
               "--fail-on", "erratum").returncode == 0


def test_global_pool_and_dynamic_input(tmp_path: Path) -> None:
    model = save_model(tmp_path / "g.onnx", [helper.make_node("GlobalAveragePool", ["x"], ["y"])],
                       ["N", 3, "H", "W"])
    proc, _ = audit_json(str(model), "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot be inferred" in lines[0] and "--input-shape for x" in lines[0]
    proc, doc = audit_json(str(model), "--input-shape", "x=2,3,4,6", "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 0, proc.stderr
    (node,) = doc["nodes"]
    assert node["op_type"] == "GlobalAveragePool" and node["attributes"] == {"kernel_shape": [4, 6]}
    assert node["output_shapes"]["onnx"] == [2, 3, 1, 1]


def test_no_pooling_node(tmp_path: Path) -> None:
    model = save_model(tmp_path / "relu.onnx", [helper.make_node("Relu", ["x"], ["y"])], [1, 1, 4, 4])
    proc = cli("audit", str(model), "--peers", str(PLANTED / "correct.py"))
    # the console wraps at 80 columns, and the model's path (a temporary folder) can be long
    assert proc.returncode == 0 and "no pooling node" in " ".join(proc.stdout.split())


@pytest.mark.parametrize("kind", ["missing", "text", "truncated", "folder", "bad-shape-option", "unknown-input",
                                  "bad-xml"])
def test_bad_models_exit_2_with_one_line(kind: str, two_pools: Path, tmp_path: Path) -> None:
    args: list[str] = []
    if kind == "missing":
        target = tmp_path / "nope.onnx"
    elif kind == "text":
        target = tmp_path / "t.onnx"
        target.write_text("this is not a model\n")
    elif kind == "truncated":
        target = tmp_path / "cut.onnx"
        target.write_bytes(two_pools.read_bytes()[:60])
    elif kind == "folder":
        target = tmp_path
    elif kind == "bad-xml":
        target = tmp_path / "m.xml"
        target.write_text("<net><layers><layer id='0' type='MaxPool'/></layers></net>\n")
    else:
        target = two_pools
        args = ["--input-shape", "x=1,a" if kind == "bad-shape-option" else "y=1,2,3,3"]
    proc = cli("audit", str(target), *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in proc.stderr
    assert (str(target) in lines[0]) or "--input-shape" in lines[0]


def test_openvino_ir(two_pools: Path, tmp_path: Path) -> None:
    ov = pytest.importorskip("openvino")
    xml = tmp_path / "two.xml"
    ov.save_model(ov.convert_model(str(two_pools)), str(xml))
    proc, doc = audit_json(str(xml), "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 0, proc.stderr
    ops = sorted(n["op"] for n in doc["nodes"])
    assert ops == ["AvgPool-14", "MaxPool-14"]
    mp = next(n for n in doc["nodes"] if n["op"] == "MaxPool-14")
    # OpenVINO's ONNX frontend writes ceil_mode=1 as rounding_type "ceil" (not ceil_torch): the IR keeps
    # the last window that starts in the padding, so its node has 3 windows where ONNX has 2.
    assert mp["attributes"]["rounding_type"] == "ceil"
    assert mp["input_shape"] == [1, 2, 5, 5] and mp["output_shapes"]["openvino-runtime"] == [1, 2, 3, 3]
    assert "ceil-window-in-padding" in mp["risks"]


@pytest.mark.skipif(not LIGHT.is_dir(), reason="the onnx package ships no light/ models here")
@pytest.mark.parametrize("name", ["light_squeezenet", "light_inception_v2"])
def test_light_models(name: str) -> None:
    path = LIGHT / f"{name}.onnx"
    model = onnx.load(str(path), load_external_data=False)
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred.graph.value_info}
    pools = [n for n in model.graph.node if n.op_type in ("MaxPool", "AveragePool", "GlobalAveragePool",
                                                          "GlobalMaxPool")]
    proc, doc = audit_json(str(path), "--peers", "onnxruntime")
    assert proc.returncode in (0, 1), proc.stderr
    assert len(doc["nodes"]) == len(pools) > 0
    for node, onnx_node in zip(doc["nodes"], pools):
        assert node["op_type"] == onnx_node.op_type
        # onnx's own shape inference is the oracle for the output shape under the ONNX rule
        assert node["output_shapes"]["onnx"] == shapes[onnx_node.output[0]]
        assert node["cases"] and all("onnxruntime" in c["checks"] for c in node["cases"])


def test_missing_external_weights_and_unmodelled_attribute(tmp_path: Path) -> None:
    """A model whose weights live in a missing external file is still audited (only shapes and
    attributes matter); a pooling node with an attribute poolcheck does not model is exit 2."""
    import numpy as np
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"]),
                               helper.make_node("MaxPool", ["c"], ["y"], name="mp", kernel_shape=[2, 2],
                                                strides=[2, 2])], "g", [x], [y], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    path = tmp_path / "ext.onnx"
    onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin",
              size_threshold=0)
    (tmp_path / "w.bin").unlink()
    proc, doc = audit_json(str(path), "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 0, proc.stderr
    (node,) = doc["nodes"]
    assert node["input_shape"] == [1, 4, 6, 6] and node["output_shapes"]["onnx"] == [1, 4, 3, 3]
    odd = save_model(tmp_path / "odd.onnx", [helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2],
                                                              foo=3)], [1, 1, 4, 4])
    proc = cli("audit", str(odd), "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"error: {odd}: node 'mp': attribute 'foo' is not modelled"]
