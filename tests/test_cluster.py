"""``poolcheck fuzz --cluster``: a real Dask scheduler and workers (the ``dask`` CLI) on loopback.

A planted-bug peer is found through the cluster, shrunk and saved once; a worker killed in the
middle of a campaign loses no finding it had already reported, and the report names it and when.
Every server listens on 127.0.0.1 on a free port, every campaign has a time budget, and every
process is ended by the fixture that started it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="needs Dask distributed (pip install 'poolcheck[cluster]')")

from poolcheck.fuzz.cluster import ClusterDriver, check_address  # noqa: E402
from poolcheck.fuzz.runner import FuzzOptions, merge_results  # noqa: E402

PLANTED = Path(__file__).parent / "planted_peers"
DASK = Path(sys.executable).parent / "dask"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A ``dask scheduler`` and ``dask worker`` processes on loopback."""

    def __init__(self, workers: int, tmp: Path) -> None:
        if not DASK.exists():
            pytest.skip(f"the dask command is not installed beside {sys.executable}")
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.log = tmp / "dask.log"
        self._log = self.log.open("wb")
        self._start([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"])
        self.workers = [self._start([str(DASK), "worker", self.address, "--host", "127.0.0.1", "--nthreads", "1",
                                     "--no-nanny", "--no-dashboard", "--name", f"w{i}", "--death-timeout", "60"])
                        for i in range(workers)]
        with distributed.Client(self.address, timeout=60, set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=90)
            self.pids = client.run(os.getpid)  # worker address -> pid

    def _start(self, cmd: list[str]) -> subprocess.Popen[bytes]:
        p = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        return p

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        self._log.close()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Callable[[int], Cluster]]:
    made: list[Cluster] = []

    def make(workers: int = 2) -> Cluster:
        c = Cluster(workers, tmp_path)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def test_address_checked() -> None:
    assert check_address(" tcp://127.0.0.1:8786 ") == "tcp://127.0.0.1:8786"
    for bad in ("127.0.0.1:8786", "http://x:1", "tcp://"):
        with pytest.raises(Exception, match="--cluster"):
            check_address(bad)


def test_bad_cluster_address_is_usage_error(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "poolcheck", "fuzz", "--cluster", "localhost:8786", "--peers", "none",
                          "--time-budget", "1s", "--no-progress", "--save-cases", str(tmp_path / "c")],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "--cluster" in out.stderr and "Traceback" not in out.stderr


def test_planted_peer_found_through_the_cluster(cluster: Callable[[int], Cluster], tmp_path: Path) -> None:
    c = cluster(2)
    peer = str(PLANTED / "pads_swapped.py")
    out = subprocess.run(
        [sys.executable, "-m", "poolcheck", "fuzz", "--cluster", c.address, "--peers", peer, "--ops", "maxpool",
         "--oracles", "peers", "--time-budget", "12s", "--seed", "3", "--no-progress", "--known", str(tmp_path / "none"),
         "--save-cases", str(tmp_path / "cases"), "--report", str(tmp_path / "rep")],
        capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads((tmp_path / "rep" / "result.json").read_text())
    fz, cl = result["extra"]["fuzz"], result["extra"]["cluster"]
    sig = "peer|max|planted-pads-swapped|pads:swapped"
    assert sig in fz["new"] and sig not in fz["unshrunk"]
    # both workers fuzzed, each with its own fingerprint record; the find names its worker
    assert [s["state"] for s in cl["shards"]] == ["done", "done"]
    assert all(s["examples"] > 0 and s["fingerprint"] in result["extra"]["fingerprints"] for s in cl["shards"])
    assert cl["findings"][sig]["worker"] in {s["worker"] for s in cl["shards"]}
    case = next(k for k in result["cases"] if f"signature:{sig}" in k["tags"])
    assert any(t.startswith("fingerprint:") for t in case["tags"]) and any(t.startswith("worker:") for t in case["tags"])
    # saved once, and the saved case replays the divergence on one machine
    saved = list((tmp_path / "cases").rglob("*.yaml"))
    assert len(saved) == len(fz["new"]) == len(set(fz["new"]))
    path = fz["saved"][sig]
    replay = subprocess.run([sys.executable, "-m", "poolcheck", "run", path, "--peers", peer, "--quiet"],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert replay.returncode == 1, replay.stdout[-2000:] + replay.stderr[-2000:]
    # the replay of the exploration is the same shards as --jobs 2 on one machine
    assert "--jobs 2" in fz["replay"] and "--seed 3" in fz["replay"]


def test_killed_worker_loses_no_reported_finding(cluster: Callable[[int], Cluster]) -> None:
    c = cluster(2)
    # two planted bugs (avg: pads swapped; max: pads swapped) give both shards something to report
    options = FuzzOptions(peers=(str(PLANTED / "pads_swapped.py"),), ops=("max", "avg"), seed=5, isolated=False,
                          oracles=frozenset({"peers"}), time_budget=20.0)
    events: list[str] = []
    driver = ClusterDriver(c.address, on_event=events.append)
    reported: dict[str, set[str]] = {}
    killed: list[str] = []

    def killer() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            shards = driver.run.shards
            if shards and any(s.found for s in shards):
                victim = next(s for s in shards if s.found)
                reported.update({s.worker: set(s.found) for s in shards})
                killed.append(victim.worker)
                os.kill(c.pids[victim.worker], signal.SIGKILL)
                return
            time.sleep(0.05)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    results = driver.sessions(options)
    t.join(5)
    assert killed, "no finding was reported in time"
    merged = merge_results(results)
    for worker, sigs in reported.items():
        assert sigs <= set(merged.findings), (worker, sigs, sorted(merged.findings))
    summary = driver.summary()
    lost = summary["lost"]
    assert [x["worker"] for x in lost] == killed
    assert lost[0]["at_s"] >= 0 and lost[0]["at"] and lost[0]["name"] in ("w0", "w1")
    states = {s["worker"]: s["state"] for s in summary["shards"]}
    assert [w for w, st in states.items() if st == "done"] == [w for w in states if w not in killed]
    assert any(killed[0] in w and "lost" in w for w in merged.warnings)
    assert any("lost worker" in e for e in events)
