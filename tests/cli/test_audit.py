"""``poolcheck audit MODEL``: pooling nodes found, shapes, risk classes, peer runs, exit codes,
and every bad model an exit 2 with a one-line reason. Models are built here with onnx.helper
(plus the onnx package's own ``light/`` models when shipped).

Most tests run the command in-process (``run``: the same code from argument parsing to exit code;
a real command cost ~1.8 s CPU of start-up and imports each, 90 % of this file's CPU). The real
command in a subprocess (``cli``) stays where the process itself is under test: the 80-column
tables, the progress bar on a terminal and on a pipe, hostile text on the real streams, and the
models a native parser (onnx's protobuf, OpenVINO's XML reader) rejects, where nothing of the
library may reach stderr besides the one line."""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from support import PLANTED, cli_command, invoke  # noqa: E402
from support import cli as _cli  # noqa: E402

from poolcheck.results import Signature  # noqa: E402

cli = functools.partial(_cli, columns=80)  # the real command, on an 80-column terminal
run = invoke  # the command in-process

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
    proc = run("audit", *args, "--json")
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
    assert run("audit", str(two_pools), "--peers", str(PLANTED / "divisor_counts_padding.py"),
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
    # judged as its own operator (its row at opset 22), not as an AveragePool over the whole extent
    assert (node["op_type"], node["operator"], node["opset"]) == ("GlobalAveragePool", "GlobalAveragePool-22", 22)
    assert node["attributes"] == {} and node["config"] == "GlobalAveragePool()"
    assert node["output_shapes"] == {"onnx": [2, 3, 1, 1]}


def test_no_pooling_node(tmp_path: Path) -> None:
    model = save_model(tmp_path / "relu.onnx", [helper.make_node("Relu", ["x"], ["y"])], [1, 1, 4, 4])
    proc = run("audit", str(model), "--peers", str(PLANTED / "correct.py"))
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
    # a native parser's own rejections through the real command: nothing but the one line on stderr
    proc = (cli if kind in ("text", "truncated", "bad-xml") else run)("audit", str(target), *args)
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
    # Each node is judged by the row of the version the IR names (OpenVINO's ONNX frontend writes
    # AvgPool of opset1 and MaxPool of opset8), not by the newest version.
    ops = sorted((n["op"], n["opset"]) for n in doc["nodes"])
    assert ops == [("AvgPool-1", "1"), ("MaxPool-8", "8")]
    mp = next(n for n in doc["nodes"] if n["op"] == "MaxPool-8")
    # OpenVINO's ONNX frontend writes ceil_mode=1 as rounding_type "ceil" (not ceil_torch): the IR keeps
    # the last window that starts in the padding, so its node has 3 windows where ONNX has 2.
    assert mp["attributes"]["rounding_type"] == "ceil"
    assert mp["input_shape"] == [1, 2, 5, 5] and mp["output_shapes"]["openvino-runtime"] == [1, 2, 3, 3]
    assert "ceil-window-in-padding" in mp["risks"]


LIGHT_MODELS = sorted(p.stem for p in LIGHT.glob("light_*.onnx")) if LIGHT.is_dir() else []


@pytest.mark.skipif(not LIGHT_MODELS, reason="the onnx package ships no light/ models here")
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_models(name: str) -> None:
    """Every node of every onnx light model is judged, named by its operator version: onnx's own
    schema registry (the version in force at the model's opset) is the oracle for the name."""
    path = LIGHT / f"{name}.onnx"
    model = onnx.load(str(path), load_external_data=False)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred.graph.value_info}
    pools = [n for n in model.graph.node if n.op_type in ("MaxPool", "AveragePool", "GlobalAveragePool",
                                                          "GlobalMaxPool", "LpPool", "GlobalLpPool", "MaxUnpool")]
    proc, doc = audit_json(str(path), "--peers", "onnxruntime")
    assert proc.returncode in (0, 1), proc.stderr
    assert len(doc["nodes"]) == len(pools) > 0
    for node, onnx_node in zip(doc["nodes"], pools):
        assert node["op_type"] == onnx_node.op_type and node["problem"] is None
        version = onnx.defs.get_schema(onnx_node.op_type, opset).since_version
        assert (node["operator"], node["opset"]) == (f"{onnx_node.op_type}-{version}", opset)
        # onnx's own shape inference is the oracle for the output shape under the ONNX rule
        assert node["output_shapes"]["onnx"] == shapes[onnx_node.output[0]]
        assert node["cases"] and all("onnxruntime" in c["checks"] for c in node["cases"])
        assert all(c["checks"]["numpy"] == "pass" for c in node["cases"])


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
    proc = run("audit", str(odd), "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"error: {odd}: node 'mp': attribute 'foo' is not modelled"]


# --------------------------------------------------------------------------- hostile models


def save_graph(path: Path, nodes: list[Any], inputs: list[Any], outputs: list[str], opset: int = 22) -> Path:
    """A model of ``nodes`` with the given input value infos; outputs typed by inference."""
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
                                                   for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    onnx.save(model, str(path))
    return path


HOSTILE_NAME = "\x1b[2J\x1b]0;owned\x07[bold red]HIDDEN[/bold red][link=http://x]click[/link]\x9b"


def test_hostile_node_names_are_inert(tmp_path: Path) -> None:
    """A node name that clears the screen, sets the terminal title or carries rich markup is
    shown as text: control characters escaped, markup brackets kept, in the table, the
    divergence lines and the error lines."""
    model = save_graph(tmp_path / "hostile.onnx", [
        helper.make_node("AveragePool", ["x"], ["a"], name=HOSTILE_NAME, kernel_shape=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["x"], ["m"], name=HOSTILE_NAME + "odd", kernel_shape=[2, 2], foo=1),
    ], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])], ["a", "m"])
    proc = cli("audit", str(model), "--peers", str(PLANTED / "divisor_counts_padding.py"))
    assert proc.returncode == 2, proc.stdout + proc.stderr  # the node with an unknown attribute is an error
    for stream in (proc.stdout, proc.stderr):
        assert not any(ch in stream for ch in "\x1b\x07\x9b"), repr(stream)
    flat = "".join(proc.stdout.split())
    assert "\\x1b[2J\\x1b]0;owned\\x07[boldred]HIDDEN[/boldred][link=http://x]click[/link]" in flat
    assert "divergences:" in proc.stdout
    (err,) = proc.stderr.strip().splitlines()
    assert err.startswith(f"error: {model}: node ") and "\\x1b[2J" in err and "[bold red]HIDDEN" in err
    assert err.endswith("attribute 'foo' is not modelled")


def test_pool_nodes_inside_if_and_loop_subgraphs_are_judged(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])
    then_g = helper.make_graph([helper.make_node("MaxPool", ["x"], ["t"], name="inner_mp", kernel_shape=[3, 3],
                                                 strides=[2, 2], ceil_mode=1)], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("AveragePool", ["x"], ["e"], name="inner_ap", kernel_shape=[2, 2],
                                                 pads=[1, 1, 1, 1])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("MaxPool", ["x"], ["p"], name="loop_mp", kernel_shape=[2, 2], strides=[2, 2])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 1, 3, 3])])
    model = save_graph(tmp_path / "sub.onnx", [
        helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["n", "c"], ["scan"], name="loop", body=body),
    ], [x, helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        helper.make_tensor_value_info("n", TensorProto.INT64, [])], ["y", "scan"])
    proc, doc = audit_json(str(model), "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 0, proc.stderr
    nodes = {n["node"]: n for n in doc["nodes"]}
    assert set(nodes) == {"branch/then_branch/inner_mp", "branch/else_branch/inner_ap", "loop/body/loop_mp"}
    # by hand: MaxPool k3 s2 ceil on 6: ceil((6 - 3) / 2) + 1 = 3; AveragePool k2 s1 pads 1/1 on 6: 6 + 2 - 2 + 1 = 7;
    # MaxPool k2 s2 on 6: 3
    assert nodes["branch/then_branch/inner_mp"]["output_shapes"]["onnx"] == [1, 1, 3, 3]
    assert nodes["branch/else_branch/inner_ap"]["output_shapes"]["onnx"] == [1, 1, 7, 7]
    assert nodes["loop/body/loop_mp"]["output_shapes"]["onnx"] == [1, 1, 3, 3]
    for n in nodes.values():
        assert [c["checks"]["planted-correct"] for c in n["cases"]] == ["pass", "pass"]


@pytest.mark.parametrize("elem,name", [(TensorProto.BOOL, "bool"),
                                       (TensorProto.STRING, "string"), (TensorProto.FLOAT8E4M3FN, "float8_e4m3fn"),
                                       (TensorProto.UINT64, "uint64")])
def test_unmodelled_element_types_are_that_nodes_error(tmp_path: Path, elem: int, name: str) -> None:
    """A pooling node on an element type poolcheck does not judge is that node's one-line error
    (exit 2, no traceback); a float node of the same model is still judged."""
    model = save_graph(tmp_path / f"{name}.onnx", [
        helper.make_node("MaxPool", ["odd"], ["y"], name="odd_mp", kernel_shape=[2, 2]),
        helper.make_node("MaxPool", ["x"], ["z"], name="float_mp", kernel_shape=[2, 2]),
    ], [helper.make_tensor_value_info("odd", elem, [1, 1, 4, 4]),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])], ["y", "z"])
    proc, doc = audit_json(str(model), "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {model}: node 'odd_mp': cannot judge: dtype {name} (MaxPool-22 as poolcheck models it takes "
        "float16, float32, float64, bfloat16, int8, uint8)"]
    odd, good = doc["nodes"]
    assert odd["problem"].startswith(f"cannot judge: dtype {name}") and odd["cases"] == []
    assert [c["checks"]["planted-correct"] for c in good["cases"]] == ["pass", "pass"]


def test_a_huge_node_is_its_own_error_and_the_others_are_judged(tmp_path: Path) -> None:
    model = save_graph(tmp_path / "huge.onnx", [
        helper.make_node("MaxPool", ["big"], ["y"], name="big_mp", kernel_shape=[1, 1]),
        helper.make_node("AveragePool", ["x"], ["z"], name="small_ap", kernel_shape=[2, 2]),
    ], [helper.make_tensor_value_info("big", TensorProto.FLOAT, [1, 1, 60000, 60000]),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])], ["y", "z"])
    proc, doc = audit_json(str(model), "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {model}: node 'big_mp': cannot judge: ") and "3,600,000,000 elements" in line
    big, small = doc["nodes"]
    assert big["cases"] == [] and small["output_shapes"]["onnx"] == [1, 2, 4, 4]
    assert [c["checks"]["planted-correct"] for c in small["cases"]] == ["pass", "pass"]


def test_quiet_lists_only_diverging_nodes_and_names_the_diagnosis(two_pools: Path) -> None:
    proc = cli("audit", "-q", str(two_pools), "--peers", str(PLANTED / "divisor_counts_padding.py"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert all(len(line) <= 80 for line in proc.stdout.splitlines())
    text = " ".join(proc.stdout.split())
    assert "2 pooling node(s), 1 diverging or not judged" in text
    assert "│ mp" not in proc.stdout and "│ ap" in proc.stdout
    # the fuzzer's diagnosis names what the planted peer does: it divides by the window with its padding
    assert "ap (AveragePool-22), planted-divisor-counts-padding (violation): divisor" in text
    _, doc = audit_json(str(two_pools), "--peers", str(PLANTED / "divisor_counts_padding.py"))
    mp, ap = doc["nodes"]
    assert mp["diagnoses"] == {} and ap["diagnoses"]["planted-divisor-counts-padding"][0].startswith("divisor")
    assert {c["id"]: c["diagnoses"] for c in ap["cases"]}["ap/random"]["planted-divisor-counts-padding"] \
        .startswith("divisor")


def test_identical_nodes_run_once_and_share_their_verdicts(tmp_path: Path) -> None:
    nodes, prev = [], "x"
    for i in range(300):
        nodes.append(helper.make_node("MaxPool", [prev], [f"m{i}"], name=f"mp{i}", kernel_shape=[3, 3],
                                      pads=[1, 1, 1, 1]))
        prev = f"m{i}"
    model = save_model(tmp_path / "deep.onnx", nodes, [1, 2, 6, 6])
    proc, doc = audit_json(str(model), "--peers", str(PLANTED / "correct.py"), "--report-dir", str(tmp_path / "rep"))
    assert proc.returncode == 0, proc.stderr
    assert doc["configurations"] == 1 and len(doc["nodes"]) == 300
    assert doc["nodes"][0]["same_configuration_as"] is None
    assert {n["same_configuration_as"] for n in doc["nodes"][1:]} == {"mp0"}
    result = json.loads((tmp_path / "rep" / "result.json").read_text())
    ids = [c["case_id"] for c in result["cases"]]
    assert len(ids) == len(set(ids)) == 600 and ids[-1] == "mp299/adversarial"
    assert {c["verdict"] for c in result["cases"]} == {"pass"}
    text = run("audit", str(model), "--peers", str(PLANTED / "correct.py"))
    assert "mp0 (+299 alike)" in " ".join(text.stdout.split())


def test_progress_is_reported_per_phase(two_pools: Path) -> None:
    from poolcheck.models.audit import audit_model
    from poolcheck.peers.registry import resolve_peers

    seen: list[tuple[str, int, int]] = []
    audit_model(two_pools, {}, resolve_peers(str(PLANTED / "correct.py")), ["numpy"], timeout=60, command="t",
                replay="t", progress=lambda phase, done, total: seen.append((phase, done, total)))
    phases = [p for p, _, _ in seen]
    assert phases[0] == "reading nodes" and ("reading nodes", 2, 2) in seen
    assert "running on planted-correct" in phases and ("judging", 0, 4) in seen and phases[-1] == "done"


def test_openvino_full_kernel_divisor_is_named(tmp_path: Path) -> None:
    """The issue's example: OpenVINO divides an average's overhanging ceil window by the full
    kernel; the audit names it instead of only counting differing elements."""
    pytest.importorskip("openvino")
    model = save_model(tmp_path / "ceil.onnx", [helper.make_node(
        "AveragePool", ["x"], ["y"], name="ap", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1,
        count_include_pad=1, pads=[1, 1, 1, 1])], [1, 4, 36, 36])
    proc = run("audit", str(model), "--peers", "openvino")
    # padding counted: whether taps past the padded input count is not said (docs/severity.md,
    # divisor=full), so the named divergence is unspecified and the audit exits 0
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ap (AveragePool-22), openvino (unspecified): divisor = the full kernel size" in " ".join(proc.stdout.split())


def test_a_subgraph_node_of_unknown_shape_is_its_own_error(tmp_path: Path) -> None:
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("MaxPool", ["x"], ["p"], name="loop_mp", kernel_shape=[2, 2])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, None)])
    model = save_graph(tmp_path / "dyn.onnx", [
        helper.make_node("Loop", ["n", "c"], ["scan"], name="loop", body=body),
        helper.make_node("AveragePool", ["f"], ["z"], name="top_ap", kernel_shape=[2, 2]),
    ], [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, "H", "W"]),
        helper.make_tensor_value_info("f", TensorProto.FLOAT, [1, 1, 4, 4]),
        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        helper.make_tensor_value_info("n", TensorProto.INT64, [])], ["scan", "z"])
    proc, doc = audit_json(str(model), "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {model}: node 'loop/body/loop_mp': the shape of its input 'x' cannot be inferred inside its "
        "subgraph (give --input-shape for x)"]
    assert [c["checks"]["planted-correct"] for c in doc["nodes"][1]["cases"]] == ["pass", "pass"]
    proc, doc = audit_json(str(model), "--peers", str(PLANTED / "correct.py"), "--input-shape", "x=1,1,6,6")
    assert proc.returncode == 0, proc.stderr
    assert doc["nodes"][0]["output_shapes"]["onnx"] == [1, 1, 5, 5]


def test_uint64_is_judged_where_the_operator_takes_it(tmp_path: Path) -> None:
    """OpenVINO MaxPool-14 takes uint64 (ONNX MaxPool-22 does not): the IR's node is judged, its
    random input drawn over the whole uint64 range."""
    ov = pytest.importorskip("openvino")
    import openvino.opset14 as ops

    x = ops.parameter([1, 1, 6, 6], ov.Type.u64, name="x")
    pool = ops.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], "floor")
    xml = tmp_path / "u64.xml"
    ov.save_model(ov.Model([pool.output(0)], [x], "m"), str(xml))
    proc, doc = audit_json(str(xml), "--peers", str(PLANTED / "correct.py"))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    (node,) = doc["nodes"]
    assert node["dtype"] == "uint64" and node["problem"] is None
    assert [c["checks"]["planted-correct"] for c in node["cases"]] == ["pass", "pass"]


def test_progress_bar_on_a_terminal_and_not_with_quiet(tmp_path: Path) -> None:
    """On a terminal, stderr shows a progress bar while the nodes are read, run and judged; -q
    and a pipe show none."""
    import pty
    import select

    nodes, prev = [], "x"
    for i in range(50):
        nodes.append(helper.make_node("MaxPool", [prev], [f"m{i}"], name=f"mp{i}", kernel_shape=[3, 3],
                                      pads=[1, 1, 1, 1]))
        prev = f"m{i}"
    model = save_model(tmp_path / "deep.onnx", nodes, [1, 2, 6, 6])

    def on_terminal(*extra: str) -> str:
        cmd = cli_command()
        leader, follower = pty.openpty()
        env = {**os.environ, "COLUMNS": "80", "TERM": "xterm"}
        proc = subprocess.Popen([*cmd, "audit", str(model), "--peers", str(PLANTED / "correct.py"), *extra],
                                stdin=follower, stdout=subprocess.DEVNULL, stderr=follower, env=env)
        os.close(follower)
        chunks = []
        while True:
            ready, _, _ = select.select([leader], [], [], 120)
            if not ready:
                break
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=120)
        os.close(leader)
        return b"".join(chunks).decode("utf-8", "replace")

    shown = on_terminal()  # the bar redraws ten times a second: the slower phases are the ones seen
    assert "reading the model" in shown and "running on planted-correct" in shown, shown[-2000:]
    assert "running on" not in on_terminal("-q")
    assert "running on" not in cli("audit", str(model), "--peers", str(PLANTED / "correct.py")).stderr


def test_peers_none_audits_on_the_engines_alone_and_the_replay_says_so(two_pools: Path) -> None:
    """As `fuzz --peers none`: without it, audit always ran its default peers (ONNX Runtime and
    OpenVINO where installed), and the replay of such an audit ran them too."""
    rep = two_pools.parent / "rep"
    proc, doc = audit_json(str(two_pools), "--peers", "none", "--report-dir", str(rep))
    assert proc.returncode == 0, proc.stderr
    assert doc["peers"] == []
    assert all(set(c["checks"]) <= {"numpy", "c"} for node in doc["nodes"] for c in node["cases"])
    replays = {c["replay"] for c in json.loads((rep / "result.json").read_text())["cases"]}
    assert replays == {f"poolcheck audit {two_pools} --peers none"}, replays


def test_an_audit_interrupted_before_its_nodes_are_judged_says_so(two_pools: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the peers compute: exit 130, and the table and summary say which nodes were
    not run (they read 'differs: none' and '2 node(s) judged', a clean bill for nodes never run);
    --json carries "interrupted": true."""
    import poolcheck.models.audit as audit

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(audit, "peer_checks", interrupted)
    text = invoke("audit", str(two_pools), "--peers", str(PLANTED / "correct.py"))
    assert text.returncode == 130, text.stdout
    flat = " ".join(text.stdout.split())
    assert flat.count("not run") == 2, flat
    assert "0 of 2 node(s) judged (interrupted)" in flat and "each ran with" not in flat
    proc = invoke("audit", str(two_pools), "--peers", str(PLANTED / "correct.py"), "--json")
    assert proc.returncode == 130 and json.loads(proc.stdout)["interrupted"] is True
    done = invoke("audit", str(two_pools), "--peers", "none", "--json")
    assert json.loads(done.stdout)["interrupted"] is False
