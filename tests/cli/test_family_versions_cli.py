"""``audit`` and ``export --format onnx-tests`` on the family at older versions: a model at opset
11 holding LpPool, GlobalLpPool, GlobalAveragePool and MaxUnpool names each node's version, runs
its cases on the peers at that version (ONNX Runtime runs GlobalLpPool-2; it has no -22 kernel)
and names a planted plugin's divergence with the family variants; an exported older-version case
is a model at an opset where that version is in force, which ONNX Runtime, called plainly, runs to
the stored output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import CORPUS, KERNELS, cli

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _model(path: Path, opset: int) -> Path:
    nodes = [
        helper.make_node("LpPool", ["x"], ["lp"], name="lp", kernel_shape=[2, 2], p=3, pads=[1, 0, 0, 1]),
        helper.make_node("GlobalLpPool", ["x"], ["gl"], name="glp", p=2),
        helper.make_node("GlobalAveragePool", ["x"], ["ga"], name="gavg"),
        helper.make_node("MaxPool", ["x"], ["mv", "mi"], name="mp", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxUnpool", ["mv", "mi"], ["y"], name="unpool", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in ("lp", "gl", "ga", "y")]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], outs), opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _audit(model: Path, peers: str) -> dict[str, Any]:
    proc = cli("audit", str(model), "--peers", peers, "--json")
    assert proc.returncode in (0, 1), proc.stderr
    return {n["node"]: n for n in json.loads(proc.stdout)["nodes"]}


def _peer_verdicts(node: dict[str, Any], peer: str) -> set[str]:
    return {c["checks"][peer] for c in node["cases"]}


def test_an_opset_11_model_runs_its_family_nodes_on_onnx_runtime_at_their_versions(tmp_path: Path) -> None:
    nodes = _audit(_model(tmp_path / "m11.onnx", 11), "onnxruntime")
    assert {k: v["operator"] for k, v in nodes.items()} == {
        "lp": "LpPool-11", "glp": "GlobalLpPool-2", "gavg": "GlobalAveragePool-1", "mp": "MaxPool-11",
        "unpool": "MaxUnpool-11"}
    assert nodes["glp"]["config"] == "GlobalLpPool-2(p=2)"
    # built at opset 22 GlobalLpPool was ONNX Runtime's NOT_IMPLEMENTED refusal; at 2 it runs and agrees
    for name in ("lp", "glp", "gavg", "unpool"):
        assert _peer_verdicts(nodes[name], "onnxruntime") == {"pass"}, (name, nodes[name]["cases"])
    # the same nodes at opset 22: GlobalLpPool-22, which ONNX Runtime has no kernel for
    nodes22 = _audit(_model(tmp_path / "m22.onnx", 22), "onnxruntime")
    assert nodes22["glp"]["operator"] == "GlobalLpPool-22"
    assert _peer_verdicts(nodes22["glp"], "onnxruntime") == {"rejects"}


def test_audit_names_a_family_divergence_with_the_family_variants(tmp_path: Path) -> None:
    """The planted plugin k18 drops LpPool's pads on rank-4 inputs: audit names it (before: 'not
    diagnosed (LpPool-11)' for every family divergence)."""
    nodes = _audit(_model(tmp_path / "m11.onnx", 11), str(KERNELS / "k18_lp_pads_ignored_rank4.py"))
    [(peer, texts)] = nodes["lp"]["diagnoses"].items()
    assert peer == "planted-k18-lp-pads-ignored-rank4"
    assert texts[0].startswith("pads:ignored"), texts


def test_export_writes_an_older_version_at_its_opset(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = cli("export", str(CORPUS / "edge" / "family.yaml"), "--format", "onnx-tests", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    written = {w["case"]: Path(w["directory"]) for w in json.loads(proc.stdout)["written"]}
    # the newest opset where each case's version is in force
    expected = {"edge-onnx-lppool2-strides": 10, "edge-onnx-lppool11-default-strides": 17, "edge-lppool18-pads": 21,
                "edge-onnx-globalaveragepool1": 21, "edge-onnx-globalmaxpool1": 21, "edge-onnx-globallppool2": 21,
                "edge-onnx-maxunpool9": 10, "edge-onnx-maxunpool11-default-strides": 21, "edge-globallppool-p2": 22,
                "edge-maxunpool-collision": 22}
    for case_id, opset in expected.items():
        model = onnx.load(str(written[case_id] / "model.onnx"))
        assert [(o.domain, o.version) for o in model.opset_import] == [("", opset)], case_id
        onnx.checker.check_model(model)
    # ONNX Runtime, called plainly, runs the GlobalLpPool-2 directory to its stored output
    d = written["edge-onnx-globallppool2"]
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(d / "model.onnx"), options, providers=["CPUExecutionProvider"])
    x = numpy_helper.to_array(onnx.load_tensor(str(d / "test_data_set_0" / "input_0.pb")))
    y = numpy_helper.to_array(onnx.load_tensor(str(d / "test_data_set_0" / "output_0.pb")))
    assert np.array_equal(session.run(None, {session.get_inputs()[0].name: x})[0], y)
    # and poolcheck replays the exported directories
    replay = cli("run", str(out), "--json")
    assert replay.returncode == 0, replay.stderr
    assert {c["verdict"] for c in json.loads(replay.stdout)["cases"]} == {"pass"}
