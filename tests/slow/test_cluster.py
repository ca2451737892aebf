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
from support import PLANTED

distributed = pytest.importorskip("distributed", reason="needs Dask distributed (pip install 'poolcheck[cluster]')")

from poolcheck.fuzz.cluster import ClusterDriver, check_address  # noqa: E402
from poolcheck.fuzz.session import FuzzOptions, merge_results  # noqa: E402

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
        try:
            self._start([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"])
            self.workers = [self._start([str(DASK), "worker", self.address, "--host", "127.0.0.1", "--nthreads", "1",
                                         "--no-nanny", "--no-dashboard", "--name", f"w{i}", "--death-timeout", "60"])
                            for i in range(workers)]
            with distributed.Client(self.address, timeout=60, set_as_default=False) as client:
                client.wait_for_workers(workers, timeout=90)
                self.pids = client.run(os.getpid)  # worker address -> pid
        except BaseException:
            self.close()
            raise

    def _start(self, cmd: list[str]) -> subprocess.Popen[bytes]:
        p = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        return p

    def close(self) -> None:
        # The workers first, while the scheduler still answers their goodbye; then the scheduler.
        # (All at once, a worker now and then outlived the whole 15 s wait and was killed.)
        workers, scheduler = self.procs[1:], self.procs[:1]
        for group in (workers, scheduler):
            for p in group:
                if p.poll() is None:
                    p.terminate()
            for p in group:
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
    # a plugin file and a database folder named relative to the client's folder (not the workers')
    peer = "pads_swapped.py"
    (tmp_path / peer).write_text((PLANTED / peer).read_text())
    out = subprocess.run(
        [sys.executable, "-m", "poolcheck", "fuzz", "--cluster", c.address, "--peers", peer, "--ops", "maxpool",
         "--database", "db", "--exit-first",
         "--oracles", "peers", "--time-budget", "60s", "--seed", "3", "--no-progress",
         "--no-bundled-known",
         "--save-cases", str(tmp_path / "cases"), "--report", str(tmp_path / "rep")],
        capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads((tmp_path / "rep" / "result.json").read_text())
    fz, cl = result["fuzz"], result["extra"]["cluster"]
    sig = "peer|max|planted-pads-swapped|pads:swapped"
    assert sig in fz["new"] and sig not in fz["unshrunk"]
    # both workers fuzzed, each with its own fingerprint record; the find names its worker;
    # --exit-first wound both shards down after the first shrunk find (not an interruption)
    assert [s["state"] for s in cl["shards"]] == ["done", "done"] and result["interrupted"] is False
    assert fz["elapsed_s"] < 45  # well before the 60 s budget
    assert all(s["examples"] > 0 and s["fingerprint"] in result["extra"]["fingerprints"] for s in cl["shards"])
    assert cl["findings"][sig]["worker"] in {s["worker"] for s in cl["shards"]}
    case = next(k for k in result["cases"] if f"signature:{sig}" in k["tags"])
    assert any(t.startswith("fingerprint:") for t in case["tags"])
    assert any(t.startswith("worker:") for t in case["tags"])
    # saved once, and the saved case replays the divergence on one machine
    saved = list((tmp_path / "cases").rglob("*.yaml"))
    assert len(saved) == len(fz["new"]) == len(set(fz["new"]))
    path = fz["saved"][sig]
    replay = subprocess.run([sys.executable, "-m", "poolcheck", "run", path, "--peers", peer, "--quiet"],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert replay.returncode == 1, replay.stdout[-2000:] + replay.stderr[-2000:]
    # the replay of the exploration is the same shards as --jobs 2 on one machine
    assert "--jobs 2" in fz["replay"] and "--seed 3" in fz["replay"]
    assert any((tmp_path / "db").iterdir()), "the workers did not use the shared database folder"


def test_killed_worker_loses_no_reported_finding(cluster: Callable[[int], Cluster]) -> None:
    c = cluster(2)
    # two planted bugs (avg: pads swapped; max: pads swapped) give both shards something to report.
    # The first find streams within the first examples; 500 examples a shard (not the 20 s budget,
    # which only caps a slow machine) then end the surviving shard in seconds, and the victim is
    # still fuzzing (or shrinking) when it is killed.
    options = FuzzOptions(peers=(str(PLANTED / "pads_swapped.py"),), ops=("max", "avg"), seed=5, isolated=False,
                          oracles=frozenset({"peers"}), time_budget=20.0, max_examples=1000)
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


# --------------------------------------------------------------------------- the shared Redis database


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    import shutil

    pytest.importorskip("redis", reason="needs the redis client (pip install 'poolcheck[cluster]')")
    import redis

    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (`make test` installs Debian's redis-server where it runs as "
                    "root with apt-get)")
    port = free_port()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis.from_url(url, socket_connect_timeout=1).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("redis-server did not start")
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _fuzz(tmp: Path, name: str, peer: str, *args: str) -> dict:
    rep = tmp / name
    out = subprocess.run([sys.executable, "-m", "poolcheck", "fuzz", "--peers", peer,
                          "--ops", "maxpool", "--oracles", "peers", "--no-progress", "--no-bundled-known",
                          "--save-cases", str(rep / "cases"), "--report", str(rep), *args],
                         capture_output=True, text=True, timeout=180, cwd=tmp)
    assert out.returncode in (0, 1), out.stdout[-3000:] + out.stderr[-3000:]
    return json.loads((rep / "result.json").read_text())


def _find(result: dict, sig: str) -> dict | None:
    case = next((k for k in result["cases"] if f"signature:{sig}" in k["tags"]), None)
    return None if case is None else {k: case[k] for k in ("spec", "input_shape", "dtype", "message")}


def test_two_clients_share_a_redis_database(redis_url: str, tmp_path: Path) -> None:
    import redis

    swapped = str(PLANTED / "pads_swapped.py")
    dilations = str(PLANTED / "dilations_ignored.py")
    s_swapped = "peer|max|planted-pads-swapped|pads:swapped"
    s_dilations = "peer|max|planted-dilations-ignored|dilations:ignored"
    db = ["--database", redis_url]
    # client A finds and shrinks one bug; the shared database keeps the reproducer
    a = _fuzz(tmp_path, "a", swapped, *db, "--seed", "1", "--exit-first", "--time-budget", "30s")
    assert s_swapped in a["fuzz"]["new"] and s_swapped not in a["fuzz"]["unshrunk"]
    assert redis.Redis.from_url(redis_url).keys(b"poolcheck-fuzz:*"), "nothing was stored in the shared database"
    # client B (another process, another seed), two examples: the first it checks is A's find
    b = _fuzz(tmp_path, "b", swapped, *db, "--seed", "2", "--max-examples", "2")
    assert _find(b, s_swapped) == _find(a, s_swapped) is not None
    # ... which the same two examples without the database do not meet
    alone = _fuzz(tmp_path, "alone", swapped, "--seed", "2", "--max-examples", "2")
    assert _find(alone, s_swapped) != _find(a, s_swapped)
    # and back: B finds another bug (replaying A's first, which that peer does not show: A's find
    # must survive it), and A's next run replays B's find
    b2 = _fuzz(tmp_path, "b2", dilations, *db, "--seed", "3", "--exit-first", "--time-budget", "30s")
    assert s_dilations in b2["fuzz"]["new"]
    a2 = _fuzz(tmp_path, "a2", dilations, *db, "--seed", "4", "--max-examples", "3")
    assert _find(a2, s_dilations) == _find(b2, s_dilations) is not None
    a3 = _fuzz(tmp_path, "a3", swapped, *db, "--seed", "5", "--max-examples", "3")
    # a stored example, replayed: A's own, or B2's when that one shows the swapped pads too (pads
    # 0/1 with dilation 2 on two elements reads the same with the pads swapped or the dilation
    # ignored; which one the database holds first depends on the draws)
    assert _find(a3, s_swapped) in (_find(a, s_swapped), _find(b2, s_dilations))


def test_unreachable_redis_is_a_usage_error(tmp_path: Path) -> None:
    pytest.importorskip("redis")
    url = f"redis://127.0.0.1:{free_port()}/0"
    out = subprocess.run([sys.executable, "-m", "poolcheck", "fuzz", "--peers", "none", "--database", url,
                          "--max-examples", "5", "--no-progress", "--save-cases", str(tmp_path / "c")],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-2000:]
    assert "--database" in out.stderr and "Traceback" not in out.stderr


def test_shared_database_keeps_other_runs_finds(tmp_path: Path) -> None:
    from poolcheck.fuzz.database import SharedDatabase, example_database

    first = example_database(tmp_path / "db")
    first.save(b"k", b"find-of-run-1")
    second = example_database(tmp_path / "db")  # another run on the same folder
    second.save(b"k", b"shrink-step")
    second.save(b"k", b"find-of-run-2")
    second.delete(b"k", b"find-of-run-1")  # replayed, did not fail here: kept for the others
    second.delete(b"k", b"shrink-step")  # its own superseded step: gone
    second.move(b"k", b"k2", b"find-of-run-1")  # copied, not taken away
    assert isinstance(second, SharedDatabase)
    assert sorted(example_database(tmp_path / "db").fetch(b"k")) == [b"find-of-run-1", b"find-of-run-2"]
    assert list(example_database(tmp_path / "db").fetch(b"k2")) == [b"find-of-run-1"]


#: The bug-free peer, marking each process that called it (and that process's parent: an isolated
#: peer runs in a child of the Dask worker) in a folder: the test sees when every shard is fuzzing.
MARKING_PEER = """\
import os
from pathlib import Path

import poolcheck

PEER_NAME = "planted-correct"
MARKS = Path({marks!r})


def _mark():
    for pid in (os.getpid(), os.getppid()):
        (MARKS / str(pid)).touch()


def max_pool(*args, **kw):
    _mark()
    return poolcheck.max_pool(*args, **kw)


def avg_pool(*args, **kw):
    _mark()
    return poolcheck.avg_pool(*args, **kw)
"""


def test_ctrl_c_stops_the_shards_and_writes_the_reports(cluster: Callable[[int], Cluster], tmp_path: Path) -> None:
    c = cluster(2)
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "marking.py").write_text(MARKING_PEER.format(marks=str(marks)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "poolcheck", "fuzz", "--cluster", c.address, "--peers", str(tmp_path / "marking.py"),
         "--oracles", "peers", "--time-budget", "300s", "--no-progress", "--no-bundled-known",
         "--save-cases", str(tmp_path / "cases"), "--report", str(tmp_path / "rep")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        with distributed.Client(c.address, timeout=30, set_as_default=False) as client:
            # Ctrl-C once both shards are fuzzing: each Dask worker (or its isolated peer's parent)
            # has called the peer, so each shard has counted an example. (A fixed 3 s wait after the
            # first task was assigned sent Ctrl-C, on a loaded machine, to a shard still starting:
            # it stopped cleanly with no example.) The time budget is only a cap.
            workers = set(c.pids.values())
            deadline = time.monotonic() + 240
            while not workers <= {int(p.name) for p in marks.iterdir()}:
                assert time.monotonic() < deadline and proc.poll() is None, "the shards never started"
                time.sleep(0.2)
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=120)
            assert proc.returncode in (1, 130), out[-3000:]
            deadline = time.monotonic() + 30
            while any(client.processing().values()):  # the workers' tasks end too
                assert time.monotonic() < deadline, client.processing()
                time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    result = json.loads((tmp_path / "rep" / "result.json").read_text())
    assert result["interrupted"] is True
    # 130 after Ctrl-C, unless something new was found (then 1, as on one machine)
    assert proc.returncode == (1 if result["fuzz"]["new"] else 130)
    shards = result["extra"]["cluster"]["shards"]
    assert [s["state"] for s in shards] == ["done", "done"] and all(s["examples"] > 0 for s in shards)


def test_summary_says_only_on_when_machines_differ() -> None:
    """A heterogeneous cluster (no second CPU here: the shards' records are built by hand): a
    divergence seen only by the AVX-512 worker is labelled so; one seen by both is not."""
    from collections import Counter

    from poolcheck.fingerprint import isa_levels
    from poolcheck.fuzz.cluster import Shard
    from poolcheck.fuzz.session import Progress

    driver = ClusterDriver("tcp://127.0.0.1:1")
    skx = {"id": "skx", "host": "skx", "isa": isa_levels("sse4_2 avx avx2 fma avx512f avx512cd avx512bw avx512dq "
                                                          "avx512vl".split())}
    hsw = {"id": "hsw", "host": "hsw", "isa": isa_levels("sse4_2 avx avx2 fma".split())}
    driver.run.fingerprints = {"skx": skx, "hsw": hsw}
    only, both = "peer|max|openvino|nan=ignore", "peer|avg|openvino|divisor=padded"
    for job, (fp, seen) in enumerate([(skx, [only, both]), (hsw, [both])]):
        shard = Shard(job, f"tcp://127.0.0.1:{40000 + job}", f"w{job}", "done", fp["id"],
                      Progress(divergent=Counter(seen), peer_status={"openvino": Counter(ok=5)}))
        driver.run.shards.append(shard)
    driver.run.owner = {only: 0, both: 1}
    findings = driver.summary()["findings"]
    assert findings[only]["only_on"] == "openvino: only on avx512_core"
    assert findings[only]["worker"] == "tcp://127.0.0.1:40000" and findings[only]["fingerprints"] == ["skx"]
    assert "only_on" not in findings[both] and findings[both]["fingerprints"] == ["hsw", "skx"]
