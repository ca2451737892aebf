"""The torch -> ONNX export -> ONNX Runtime chain (``torch-onnx``) on the rest of the family.

What the exporter writes is checked plainly first (torch.onnx.export, ``dynamo=False``, opset
18, then ONNX Runtime; no poolcheck code): lp_pool as Pow/AveragePool/.../Pow, an adaptive pool
whose output sizes divide its input sizes as one AveragePool/MaxPool, and no ONNX form of
max_unpool nor of an adaptive pool whose sizes do not divide. The peer then runs what exports
and declines the rest with the exporter's words; its reproducer script calls the chain plainly.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import CORPUS, cli

from poolcheck.api_family import run_family
from poolcheck.engines import family_numpy, numpy_engine
from poolcheck.judgement import close_values, family_tolerance
from poolcheck.peers import resolve_peer
from poolcheck.peers.isolation import call_peer_family
from poolcheck.spec.operators import parse

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
import torch.nn.functional as F  # noqa: E402


def _export(fn: Any, *args: Any) -> Any:
    class Module(torch.nn.Module):
        def forward(self, *xs: Any) -> Any:
            return fn(*xs)

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Module(), args, buf, dynamo=False, opset_version=18)
    return onnx.load_from_string(buf.getvalue())


def _ops(model: Any) -> list[str]:
    return [n.op_type for n in model.graph.node if n.op_type != "Constant"]


def test_what_the_exporter_writes_plainly() -> None:
    x = torch.randn(1, 2, 6, 4)
    lp = _export(lambda t: F.lp_pool2d(t, 2.0, (2, 2), (2, 1)), x)
    assert "AveragePool" in _ops(lp) and _ops(lp)[0] == "Pow"
    session = ort.InferenceSession(lp.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    assert np.allclose(got, F.lp_pool2d(x, 2.0, (2, 2), (2, 1)).numpy(), rtol=1e-5)
    assert _ops(_export(lambda t: F.adaptive_avg_pool2d(t, (3, 2)), x)) == ["AveragePool"]
    assert _ops(_export(lambda t: F.adaptive_max_pool2d(t, (3, 2)), x)) == ["MaxPool"]
    with pytest.raises(Exception, match="not factor of input size"):
        _export(lambda t: F.adaptive_avg_pool2d(t, (4, 3)), x)
    with pytest.raises(Exception, match="not factor of input size"):
        _export(lambda t: F.adaptive_max_pool1d(t, 4), torch.randn(1, 2, 6))
    v = torch.randn(1, 1, 2, 2)
    i = torch.tensor([[[[0, 3], [9, 15]]]])
    with pytest.raises(Exception, match="max_unpool2d' to ONNX opset version 18 is not supported"):
        _export(lambda a, b: F.max_unpool2d(a, b, (2, 2), (2, 2), output_size=(4, 4)), v, i)


def _items() -> list[tuple[Any, np.ndarray, np.ndarray | None]]:
    rng = np.random.default_rng(5)
    x4 = rng.standard_normal((2, 3, 6, 4)).astype(np.float32)
    x3 = rng.standard_normal((1, 2, 6)).astype(np.float32)
    return [
        (parse("LpPool-22", {"kernel_shape": [2, 3], "p": 2, "strides": [2, 1]}), x4, None),
        (parse("LpPool-11", {"kernel_shape": [3]}), x3, None),
        (parse("GlobalAveragePool-22", {}), x4, None),
        (parse("GlobalMaxPool-1", {}), x3, None),
        (parse("GlobalLpPool-2", {"p": 2}), x4, None),
        (parse("AdaptiveAvgPool-8", {"output_shape": [3, 2]}), x4, None),
        (parse("AdaptiveMaxPool-8", {"output_shape": [2]}), x3, None),
    ]


def test_the_chain_runs_the_family_and_agrees() -> None:
    peer = resolve_peer("torch-onnx")
    items = _items()
    for (spec, x, ind), result in zip(items, call_peer_family(peer, items, isolated=False)):
        assert result.status == "ok", (spec.describe(), result.verdict)
        values, indices = run_family(spec, x, indices=ind)
        got = result.output.values
        assert got.shape == values.shape and got.dtype == values.dtype, spec.describe()
        tol = family_tolerance(spec, x, values, numpy_engine, family_numpy)
        assert np.all(close_values(values, got, tol)), spec.describe()
        if indices is not None:
            assert np.array_equal(result.output.indices, indices), spec.describe()
        assert result.output.notes and result.output.notes[0].startswith("exported as "), result.output.notes


def test_what_the_exporter_cannot_write_is_declined_saying_why() -> None:
    peer = resolve_peer("torch-onnx")
    x = np.zeros((1, 2, 6), dtype=np.float32)
    unpool = parse("MaxUnpool-22", {"kernel_shape": [2], "strides": [2]})
    i = np.array([[[0, 2, 5], [7, 9, 10]]])
    declined = call_peer_family(peer, [(unpool, x[:, :, :3], i),
                                       (parse("AdaptiveAvgPool-8", {"output_shape": [4]}), x, None),
                                       (parse("LpPool-22", {"kernel_shape": [2]}), x.astype(np.float16), None)],
                                isolated=False)
    assert [r.status for r in declined] == ["declined"] * 3
    assert "no ONNX form of max_unpool" in declined[0].message
    assert "every output size divides its input size" in declined[1].message and "[6] to [4]" in declined[1].message
    assert "float32, float64 only" in declined[2].message


def test_run_takes_family_cases_to_the_chain() -> None:
    """``run --peers torch-onnx`` on the edge cases: before, every family case was declined
    without a call ('does not take ...')."""
    import json

    proc = cli("run", str(CORPUS / "edge" / "family.yaml"), "--peers", "torch-onnx", "--json")
    assert proc.returncode in (0, 1), proc.stderr
    checks = {c["case_id"]: next(k for k in c["checks"] if k["kind"] == "peer") for c in json.loads(proc.stdout)["cases"]}
    assert checks["edge-onnx-globallppool2"]["verdict"] == "pass"
    assert checks["edge-onnx-lppool11-default-strides"]["verdict"] == "pass"
    assert checks["edge-onnx-globalmaxpool1"]["verdict"] == "pass"
    assert checks["edge-maxunpool-collision"]["verdict"] == "skip"
    assert "no ONNX form of max_unpool" in checks["edge-maxunpool-collision"]["message"]
    # torch's lp_pool sums x^p, not |x|^p: the chain inherits it, and it is named
    assert checks["edge-globallppool-p1"]["verdict"] == "fail"
    assert checks["edge-globallppool-p1"]["diagnosis"].startswith("lp:no-abs")


def test_a_chain_reproducer_calls_it_plainly(tmp_path: Path) -> None:
    """The script for a torch-onnx family divergence (GlobalLpPool p 1 on negative values: the
    signed sum) exits 1 with the chain called plainly, 0 on |x|."""
    from poolcheck.cases.load import load_file
    from poolcheck.repro import reproducer

    [case] = [c for c in load_file(CORPUS / "edge" / "family.yaml") if c.id == "edge-globallppool-p1"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = reproducer(case, "torch-onnx").write(tmp_path / "neg")[0]
    done = subprocess.run([sys.executable, str(script)], cwd=script.parent, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 1, done.stdout[-1500:] + done.stderr[-1500:]
    case.input = np.abs(case.input)
    script = reproducer(case, "torch-onnx").write(tmp_path / "abs")[0]
    done = subprocess.run([sys.executable, str(script)], cwd=script.parent, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr[-1500:]
