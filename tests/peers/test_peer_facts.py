"""What a peer says of itself (available, version, element types) is asked where it runs: its
worker (``isolation.peer_facts``), so poolcheck's own process never imports a runtime (torch
takes seconds there; JAX hooks every garbage collection, where a Ctrl-C was lost)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from support import AvailablePeer

from poolcheck.api import run_spec
from poolcheck.peers import PeerOutput, resolve_peer
from poolcheck.peers.adapter import RuntimePeer
from poolcheck.peers.isolation import _WORKERS, _worker_for, describe_in_process, peer_facts, worker_key

ROOT = Path(__file__).resolve().parents[2]


class _WhereAmI(AvailablePeer):
    """Says the process it runs in: its version is that process's id."""

    name = "where-am-i"

    def version(self) -> str | None:
        return f"pid-{os.getpid()}"

    def element_types(self, op: str) -> tuple[str, ...]:
        return ("float32",) if op == "max" else ("float64", "int8")

    def run(self, spec: object, x: np.ndarray) -> PeerOutput:
        return PeerOutput(*run_spec(spec, x))


def test_a_peer_says_its_facts_in_its_worker_once() -> None:
    peer = _WhereAmI()
    try:
        (facts,) = peer_facts([peer], ("max", "avg", "lp"))
        worker = _worker_for(peer)
        assert facts.available and facts.why == ""
        assert facts.version == f"pid-{worker._proc.pid}" != f"pid-{os.getpid()}"
        assert facts.declared("max") == ("float32",) and facts.declared("avg") == ("float64", "int8")
        assert facts.declared("lp") == ()  # a family op it does not list (declared_types)
        assert facts.declared("unpool") is None  # not asked
        assert peer_facts([peer], ("max", "avg", "lp")) == [facts] and worker.starts == 1  # kept, not asked again
        # the same questions in this process: the same answers but the process
        here = describe_in_process(peer, ("max", "avg", "lp"))
        assert here.version == f"pid-{os.getpid()}" and here.types == facts.types
        assert peer_facts([peer], ("max", "avg", "lp"), isolated=False) == [here]
    finally:
        _worker_for(peer).stop()


class _Missing(RuntimePeer):
    name = "missing-runtime"
    ref = "missing-runtime"
    module = "poolcheck_no_such_runtime.sub"
    install_hint = "pip install nothing"


def test_a_runtime_that_is_not_installed_is_told_without_a_worker() -> None:
    peer = _Missing()
    (facts,) = peer_facts([peer])
    assert not facts.available and facts.version is None
    assert "poolcheck_no_such_runtime.sub is not installed (pip install nothing)" in facts.why
    assert worker_key(peer) not in _WORKERS


def test_a_worker_that_cannot_load_its_peer_makes_it_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "gone_peer.py"
    path.write_text("def max_pool(*a, **k):\n    raise ValueError('never called')\n")
    peer = resolve_peer(str(path))
    path.unlink()  # the worker re-imports by path, and finds nothing
    try:
        (facts,) = peer_facts([peer])
        assert not facts.available and "no such file" in facts.why and facts.version is None
    finally:
        _worker_for(peer).stop()


#: Run in a fresh interpreter: poolcheck's command, then which runtimes its process imported.
PROBE = textwrap.dedent(
    """
    import gc, json, sys
    from poolcheck.cli import main

    sys.argv = ["poolcheck", *json.loads(sys.argv[1])]
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    runtimes = ("onnxruntime", "jax", "torch", "openvino", "tract")
    print(json.dumps({"code": code, "imported": [m for m in runtimes if m in sys.modules],
                      "gc_callbacks": [getattr(c, "__name__", "?") for c in gc.callbacks]}))
    """
)


def test_run_and_fuzz_keep_the_runtimes_out_of_poolchecks_process(tmp_path: Path) -> None:
    """``poolcheck run`` and ``poolcheck fuzz`` with runtime peers: each runtime answers (and says
    its version) in its worker, and none is imported into poolcheck's own process. With JAX
    there, its garbage-collection hook is not installed either."""
    peers = ",".join(["onnxruntime", *(["jax"] if importlib.util.find_spec("jax") else [])])
    env = dict(os.environ, POOLCHECK_DATA_DIR=str(tmp_path / "data"))
    commands = {
        "run": ["run", str(ROOT / "cases" / "edge" / "ceil.yaml"), "--peers", peers, "--json"],
        "fuzz": ["fuzz", "--peers", peers, "--max-examples", "2", "--batch", "4", "--seed", "1", "--no-shrink",
                 "--ranks", "3", "--database", str(tmp_path / "db"), "--report-dir", str(tmp_path / "report")],
    }
    for name, argv in commands.items():
        done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=600)
        probe = json.loads(done.stdout.strip().splitlines()[-1])
        assert probe["code"] in (0, 1), (name, done.stderr[-2000:])
        assert probe["imported"] == [] and probe["gc_callbacks"] == [], (name, probe)
        if name == "run":
            versions = json.loads("\n".join(done.stdout.strip().splitlines()[:-1]))["versions"]
        else:
            versions = json.loads((tmp_path / "report" / "result.json").read_text())["versions"]
        import onnxruntime  # the version the worker said is the one this interpreter imports

        assert versions["onnxruntime"] == onnxruntime.__version__, (name, versions)
