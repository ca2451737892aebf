"""Older versions of the family (LpPool-2/11/18, GlobalAveragePool-1, GlobalMaxPool-1,
GlobalLpPool-2, MaxUnpool-9/11) reach the ONNX peers at their own version: a case or a model node
of ``GlobalLpPool-2`` is a model at an opset where version 2 is in force (21, the newest such;
opsets 2 to 4 were never released), judged by the types of its own row.

The runtime claims are checked plainly first (no poolcheck code): ONNX Runtime has a
GlobalLpPool kernel for version 2 and none for 22; onnx.reference has none at all.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pytest
from support import CORPUS, cli

from poolcheck.peers.base import PeerDeclined
from poolcheck.peers.family_onnx import family_model, family_to_onnx
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.operators import OPERATORS, family_row, onnx_opset, onnx_version, parse

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

FAMILY_CASES = CORPUS / "edge" / "family.yaml"


def _plain_global_lp(opset: int) -> Any:
    node = helper.make_node("GlobalLpPool", ["x"], ["y"], p=2)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model.SerializeToString()


def test_onnx_runtime_plainly_has_global_lp_pool_2_and_not_22() -> None:
    x = np.array([[[[3, 0], [0, 4]]]], dtype=np.float32)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    for opset in (2, 21):
        session = ort.InferenceSession(_plain_global_lp(opset), options, providers=["CPUExecutionProvider"])
        assert session.run(None, {"x": x})[0].tolist() == [[[[5.0]]]]
    with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
        ort.InferenceSession(_plain_global_lp(22), options, providers=["CPUExecutionProvider"])


def test_every_onnx_row_has_a_released_opset_where_it_is_in_force() -> None:
    released = {v for d, v in helper.OP_SET_ID_VERSION_MAP if d == "ai.onnx"}
    for row in OPERATORS.values():
        if row.convention == "onnx":
            opset = onnx_opset(row)
            assert opset in released and onnx_version(row.title.rpartition("-")[0], opset) is row, row.name


@pytest.mark.parametrize(("name", "attrs", "version", "opset", "absent"), [
    ("LpPool-2", {"kernel_shape": [2], "strides": [2]}, 2, 10, ("dilations", "ceil_mode")),
    ("LpPool-11", {"kernel_shape": [2]}, 11, 17, ("dilations", "ceil_mode")),
    ("LpPool-18", {"kernel_shape": [2], "ceil_mode": 1}, 18, 21, ()),
    ("GlobalAveragePool-1", {}, 1, 21, ()),
    ("GlobalMaxPool-1", {}, 1, 21, ()),
    ("GlobalLpPool-2", {"p": 3}, 2, 21, ()),
    ("MaxUnpool-9", {"kernel_shape": [2], "strides": [2]}, 9, 10, ()),
    ("MaxUnpool-11", {"kernel_shape": [2]}, 11, 21, ()),
])
def test_an_older_version_is_a_model_where_it_is_in_force(name: str, attrs: dict[str, Any], version: int, opset: int,
                                                         absent: tuple[str, ...]) -> None:
    spec = parse(name, attrs)
    assert isinstance(spec, FamilySpec) and spec.version == version and family_row(spec).name == name
    assert spec.describe().startswith(f"{name}(")
    node = family_to_onnx(spec, (1, 1, 4), np.dtype(np.float32), "onnxruntime")
    assert node.opset == opset and node.operator == name
    assert not set(absent) & set(node.attrs())
    model = family_model(node, output_rank=True)  # the checker wants a shape on the output
    assert [(o.domain, o.version) for o in model.opset_import] == [("", opset)]
    onnx.checker.check_model(model)


@pytest.mark.parametrize("name", ["LpPool-22", "GlobalLpPool-22", "MaxUnpool-22"])
def test_the_newest_version_stays_opset_22_and_unversioned(name: str) -> None:
    """The fuzzer and the public functions write the newest version: no version on the spec, the
    same spec as before, a model at opset 22."""
    spec = parse(name, {"kernel_shape": [2]} if name != "GlobalLpPool-22" else {})
    assert spec.version is None and "-" not in spec.describe().split("(")[0]
    assert family_to_onnx(spec, (1, 1, 4), np.dtype(np.float32), "onnxruntime").opset == 22


def test_an_older_version_is_judged_by_its_own_types() -> None:
    """bfloat16 arrived in the -22 versions: GlobalAveragePool-1 declines it, naming its row."""
    import ml_dtypes

    bf16 = np.dtype(ml_dtypes.bfloat16)
    assert family_to_onnx(parse("GlobalAveragePool-22", {}), (1, 1, 4), bf16, "onnxruntime").opset == 22
    with pytest.raises(PeerDeclined, match="ONNX GlobalAveragePool-1 has no bfloat16 type"):
        family_to_onnx(parse("GlobalAveragePool-1", {}), (1, 1, 4), bf16, "onnxruntime")


def _peer_checks(*args: str) -> dict[str, dict[str, tuple[str, str]]]:
    proc = cli("run", str(FAMILY_CASES), *args, "--json")
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    return {c["case_id"]: {k["runner"]: (k["verdict"], k["message"]) for k in c["checks"] if k["kind"] == "peer"}
            for c in doc["cases"]}


def test_run_takes_a_global_lp_pool_2_case_to_onnx_runtime_at_opset_2() -> None:
    """The case of GlobalLpPool-2 passes on ONNX Runtime (before: built at opset 22, it was a
    NOT_IMPLEMENTED refusal) and on its backend API, which takes released opsets only (2 is none);
    onnx.reference has no GlobalLpPool at any opset and still rejects."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checks = _peer_checks("-k", "edge-onnx-globallppool2,edge-globallppool-p2,edge-onnx-lppool2",
                              "--peers", "onnxruntime,onnx_reference,onnx-backend:onnxruntime.backend")
    assert checks["edge-onnx-globallppool2"]["onnxruntime"] == ("pass", "")
    assert checks["edge-onnx-globallppool2"]["onnx-backend:onnxruntime.backend"] == ("pass", "")
    assert checks["edge-onnx-lppool2-strides"]["onnx-backend:onnxruntime.backend"] == ("pass", "")
    assert checks["edge-onnx-globallppool2"]["onnx_reference"][0] == "rejects"
    assert "NOT_IMPLEMENTED" in checks["edge-globallppool-p2"]["onnxruntime"][1]  # -22: still refused
    assert checks["edge-onnx-lppool2-strides"]["onnxruntime"] == ("pass", "")


def test_a_script_for_an_older_version_builds_its_model_there(tmp_path: Any) -> None:
    """``repro`` on the GlobalLpPool-2 case for ONNX Runtime: the script's model imports opset 21
    and ONNX Runtime, called plainly, agrees (exit 0; at opset 22 it has no kernel)."""
    import os
    import subprocess
    import sys

    from poolcheck.cases.load import load_file
    from poolcheck.repro import reproducer

    [case] = [c for c in load_file(FAMILY_CASES) if c.id == "edge-onnx-globallppool2"]
    rep = reproducer(case, "onnxruntime")
    assert rep.model is not None and [o.version for o in onnx.load_from_string(rep.model).opset_import] == [21]
    script = rep.write(tmp_path)[0]
    assert "GlobalLpPool-2" in script.read_text() and "opset 21" in script.read_text()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(script)], cwd=script.parent, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr[-1500:]
