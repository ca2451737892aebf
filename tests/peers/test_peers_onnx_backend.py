"""``onnx-backend:MODULE``: any ONNX backend API implementation as a peer. Against
onnxruntime.backend (the worked example: it must agree with the onnxruntime peer on the seed and
edge cases) and against tiny fake backends written to tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import CORPUS, ROOT, cli

from poolcheck.api import run_spec
from poolcheck.cases import load_paths
from poolcheck.peers import call_peer_many, resolve_peer, resolve_peers
from poolcheck.spec import attributes as A
from poolcheck.spec.family import FamilySpec

#: A backend module in the style of onnxruntime.backend: module-level prepare / supports_device,
#: running models with onnx.reference. ``MUTATE`` plants a bug (for the planted-bug check).
FAKE_MODULE = """
import numpy as np
from onnx.reference import ReferenceEvaluator

__version__ = "0.0.1"
MUTATE = {mutate}

class Rep:
    def __init__(self, model):
        self.ev = ReferenceEvaluator(model)
        self.names = [i.name for i in model.graph.input]
    def run(self, inputs, **kwargs):
        outs = self.ev.run(None, dict(zip(self.names, inputs)))
        return [o + 1 if MUTATE and o.dtype.kind == "f" else o for o in outs]

def supports_device(device):
    return device == "CPU"

def prepare(model, device="CPU", **kwargs):
    return Rep(model)
"""

#: The same as a subclass of onnx.backend.base.Backend (classmethods), as the ONNX docs show it.
FAKE_CLASS = """
from onnx.backend.base import Backend, BackendRep
from onnx.reference import ReferenceEvaluator

class RefRep(BackendRep):
    def __init__(self, model):
        self.ev = ReferenceEvaluator(model)
        self.names = [i.name for i in model.graph.input]
    def run(self, inputs, **kwargs):
        return self.ev.run(None, dict(zip(self.names, inputs)))

class RefBackend(Backend):
    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        return RefRep(model)
"""


def _ort_backend():
    peer = resolve_peer("onnx-backend:onnxruntime.backend")
    ok, why = peer.available()
    if not ok:
        pytest.skip(f"onnxruntime.backend is not available: {why}")
    return peer


def test_onnxruntime_backend_agrees_with_the_onnxruntime_peer_on_the_corpus() -> None:
    backend = _ort_backend()
    ort = resolve_peer("onnxruntime")
    cases, errors = load_paths([CORPUS / "seeds", CORPUS / "edge"])
    assert cases and not errors
    items = [(c.spec, c.input, c.inputs.get("I")) for c in cases]  # the family's too (MaxUnpool's I)
    assert any(isinstance(c.spec, FamilySpec) for c in cases)
    mine = call_peer_many(backend, items, isolated=False)
    theirs = call_peer_many(ort, items, isolated=False)
    compared = 0
    for case, a, b in zip(cases, mine, theirs):
        assert a.status == b.status, (case.id, a.verdict, b.verdict)
        if a.status == "ok":
            np.testing.assert_array_equal(a.output.values, b.output.values, err_msg=case.id)
            if b.output.indices is not None:
                np.testing.assert_array_equal(a.output.indices, b.output.indices, err_msg=case.id)
            compared += 1
    assert compared >= len(cases) // 2


def test_onnxruntime_backend_isolated_and_named_by_its_module() -> None:
    backend = _ort_backend()
    assert backend.name == "onnx-backend:onnxruntime.backend"
    import onnxruntime

    assert backend.version() == onnxruntime.__version__
    x = np.random.default_rng(1).standard_normal((2, 3, 7)).astype(np.float32)
    spec = A.onnx_max_pool([3], [2], [1, 1], [2], ceil_mode=1)
    (res,) = call_peer_many(backend, [(spec, x)], isolated=True, timeout=120)
    assert res.status == "ok", res.verdict
    values, indices = run_spec(spec, x)
    np.testing.assert_array_equal(res.output.values, values)
    np.testing.assert_array_equal(res.output.indices, indices)
    # A device the backend does not support: every configuration declined, no fallback.
    (gpu,) = resolve_peers("onnx-backend:onnxruntime.backend,device=NOSUCH")
    (res,) = call_peer_many(gpu, [(spec, x)], isolated=False)
    assert res.status == "declined" and "does not support device NOSUCH" in res.message


@pytest.mark.parametrize("source", [FAKE_MODULE.format(mutate=False), FAKE_CLASS], ids=["module", "class"])
def test_a_fake_backend_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    (tmp_path / "fake_backend.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    (peer,) = resolve_peers("onnx-backend:fake_backend")
    assert peer.available() == (True, "")
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 6)).astype(np.float32)
    items = [(A.onnx_average_pool([2, 3], [2, 1], [1, 0, 1, 2], count_include_pad=1), x),
             (A.onnx_max_pool([2, 2], [1, 2], [0, 1, 1, 0], [2, 1]), x)]
    for res, (spec, arr) in zip(call_peer_many(peer, items, isolated=False), items):
        assert res.status == "ok", res.verdict
        values, indices = run_spec(spec, arr)
        # onnx.reference sums float32 windows in another order than the engine: a few ulps apart.
        np.testing.assert_allclose(res.output.values, values, rtol=1e-5, atol=1e-6)
        if indices is not None:
            np.testing.assert_array_equal(res.output.indices, indices)


def _poolcheck(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The real command, with ``cwd`` on the module path (where the tests write backend modules)."""
    path = os.pathsep.join(p for p in (str(cwd), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return cli(*args, cwd=cwd, env={"PYTHONPATH": path}, plain=False, timeout=timeout)


SEED = str(CORPUS / "seeds" / "onnx-averagepool19.yaml")


@pytest.mark.parametrize(("module", "message"), [
    ("no_such_backend_module", "onnx-backend:no_such_backend_module: there is no module named 'no_such_backend_module'"),
    ("os", "onnx-backend:os: module os is not an ONNX backend: it has no prepare()"),
    ("not_a_backend", "module not_a_backend is not an ONNX backend"),
])
def test_a_module_that_is_no_backend_is_a_usage_error(tmp_path: Path, module: str, message: str) -> None:
    (tmp_path / "not_a_backend.py").write_text("x = 1\n")
    proc = _poolcheck("run", SEED, "--peers", f"onnx-backend:{module}", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


#: Modules that take their process with them while importing, and the status each is recorded as.
HOSTILE = {
    "exits_zero": ("raise SystemExit(0)\n", "crash", "sys.exit(0)"),
    "kills_itself": ("import os\nos._exit(9)\n", "crash", "exited with code 9"),
    "hangs": ("import time\ntime.sleep(600)\n", "timeout", "within 3 s"),
    "raises": ("raise ValueError('no backend for you')\n", "crash", "ValueError: no backend for you"),
}


@pytest.mark.parametrize("module", sorted(HOSTILE))
def test_a_module_that_exits_crashes_or_hangs_at_import_is_contained(tmp_path: Path, module: str) -> None:
    """The module is loaded in a worker first, under --peer-timeout: poolcheck lives on, writes
    its JSON, records every check of the peer as the crash/timeout, and exits 1 (not 0)."""
    source, status, reason = HOSTILE[module]
    (tmp_path / f"{module}.py").write_text(source)
    proc = _poolcheck("run", SEED, "--json", "--peer-timeout", "3s", "--peers", f"onnx-backend:{module}",
                      cwd=tmp_path, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    checks = [c for case in doc["cases"] for c in case["checks"] if c["runner"] == f"onnx-backend:{module}"]
    assert checks and all(c["verdict"] == status for c in checks), {c["verdict"] for c in checks}
    assert all(reason in c["message"] for c in checks), checks[0]["message"]


def test_a_planted_backend_bug_is_a_failure_through_run(tmp_path: Path) -> None:
    (tmp_path / "planted_backend.py").write_text(FAKE_MODULE.format(mutate=True))
    env = {**__import__("os").environ}
    env["PYTHONPATH"] = f"{tmp_path}:{env.get('PYTHONPATH', '')}"
    proc = subprocess.run([sys.executable, "-m", "poolcheck", "run", str(CORPUS / "seeds" / "onnx-averagepool19.yaml"),
                           "--json", "--peers", "onnx-backend:planted_backend"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    doc = json.loads(proc.stdout)
    checks = [c for case in doc["cases"] for c in case["checks"] if c["runner"] == "onnx-backend:planted_backend"]
    assert checks and any(c["verdict"] == "fail" for c in checks)
    assert proc.returncode == 1
    assert doc["versions"]["onnx-backend:planted_backend"] == "0.0.1"
