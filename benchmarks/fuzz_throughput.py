"""Fuzz throughput of two checkouts side by side (issue 22's "Done when"): ``poolcheck fuzz`` runs.

    python benchmarks/fuzz_throughput.py --base /tmp/base62 [--head .] [--peers onnxruntime,openvino]
        [--jobs 1,2] [--seeds 2] [--budget 30] [--reps 1] [--extra ARGS]

``--base`` and ``--head`` are checkouts (a ``git worktree add --detach DIR REF`` with its C
extension built in place: ``python setup.py build_ext --inplace``). Each run is
``poolcheck fuzz --peers P --time-budget B --seed S --jobs J --no-shrink`` with a fresh data
folder and example database, the interpreter running this script, and ``PYTHONPATH`` at the
checkout; base and head run back to back for each setting, their order alternating from one
setting to the next, so a drift in the machine's load reaches both. A peer list joined with ``+``
(``onnxruntime+openvino``) is one campaign with those peers; ``all`` is every built-in runtime peer.

Printed per run: the configurations/s the campaign itself reports, and the *distinct*
configurations/s: configurations counted once by spec, input type, shape and input bytes (a
``sitecustomize`` on the runs' ``PYTHONPATH`` wraps ``Session.check_batch`` in every fuzzing
process, ``--jobs`` workers included, and each process writes the digests it saw; a fuzzer whose
examples repeat configurations checks fewer distinct ones than it counts). Then per setting the
ratio head / base of both. The CPU model, its ISA path and the load average are
printed first; the rates are only comparable within one invocation.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from poolcheck.bench.measure import machine_info

#: Every built-in runtime peer (``--peers all``).
ALL_PEERS = "onnxruntime,openvino,torch,onnx_reference,tract,jax,openvino-onnx,torch-onnx"

#: Wraps ``Session.check_batch`` in each fuzzing process (the parent and every ``--jobs`` worker
#: inherit ``PYTHONPATH``) and writes the digests of the configurations it saw at exit.
SITECUSTOMIZE = textwrap.dedent('''
    import os
    if os.environ.get("FUZZ_THROUGHPUT_DIR"):
        import atexit, hashlib
        import poolcheck.fuzz.session as _session
        _seen = set()
        _checked = [0]
        _original = _session.Session.check_batch

        def _counting(self, batch, *args, **kwargs):
            for case in batch:
                _checked[0] += 1
                digest = hashlib.blake2b(digest_size=16)
                digest.update(repr((case.spec, case.x.dtype.str, case.x.shape)).encode())
                digest.update(case.x.tobytes())
                _seen.add(digest.digest())
            return _original(self, batch, *args, **kwargs)

        _session.Session.check_batch = _counting

        def _write():
            path = os.path.join(os.environ["FUZZ_THROUGHPUT_DIR"], f"seen-{os.getpid()}.bin")
            with open(path, "wb") as f:
                f.write(b"".join(sorted(_seen)))

        atexit.register(_write)
''')

#: The campaign's own summary line: "E examples, C configurations in T s (R configurations/s".
SUMMARY = re.compile(r"([\d,]+) examples, ([\d,]+) configurations in ([\d.]+) s \(([\d,]+) configurations/s")


@dataclass
class Run:
    tree: str
    peers: str
    jobs: int
    seed: int
    configs: int
    seconds: float
    rate: float  # configurations/s, as the campaign reports it
    distinct: int
    load: float
    status: int

    @property
    def distinct_rate(self) -> float:
        """The campaign's own rate times its share of distinct configurations (the printed
        seconds have one decimal: a short run's would say 0.0)."""
        return self.rate * self.distinct / self.configs if self.configs else 0.0


def cpu_line() -> str:
    """The CPU model, the C engine's instruction-set path and the logical CPUs, as ``poolcheck
    bench`` names them (:func:`poolcheck.bench.measure.machine_info`)."""
    info = machine_info()
    isa = info["c_engine_isa"] or "no C engine"
    return f"{info['cpu'] or 'unknown CPU'}, C engine ISA path {isa}, {info['logical_cpus']} logical CPUs"


def run_one(tree: Path, peers: str, jobs: int, seed: int, budget: float, extra: list[str]) -> Run:
    with tempfile.TemporaryDirectory(prefix="fuzz-throughput-") as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        seen_dir = Path(tmp) / "seen"
        seen_dir.mkdir()
        env = dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{tree}", POOLCHECK_DATA_DIR=str(Path(tmp) / "data"),
                   FUZZ_THROUGHPUT_DIR=str(seen_dir), COLUMNS="200")
        cmd = [sys.executable, "-m", "poolcheck", "fuzz", "--peers", ALL_PEERS if peers == "all" else
               peers.replace("+", ","), "--time-budget", f"{budget:g}s", "--seed", str(seed), "--jobs", str(jobs),
               "--no-shrink", "--database", str(Path(tmp) / "db"), *extra]
        load = os.getloadavg()[0]
        done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        text = " ".join(done.stdout.split())
        match = SUMMARY.search(text)
        seen: set[bytes] = set()
        for path in seen_dir.glob("seen-*.bin"):
            data = path.read_bytes()
            seen.update(data[i:i + 16] for i in range(0, len(data), 16))
        if match is None:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            print(f"  {tree}: no summary line (exit {done.returncode}): {' | '.join(tail)}", file=sys.stderr)
            return Run(str(tree), peers, jobs, seed, 0, 0.0, 0.0, len(seen), load, done.returncode)
        configs, seconds, rate = int(match[2].replace(",", "")), float(match[3]), float(match[4].replace(",", ""))
        return Run(str(tree), peers, jobs, seed, configs, seconds, rate, len(seen), load, done.returncode)


def _counts(text: str) -> list[int]:
    """A comma-separated list of positive integers (argparse turns a ValueError into one line)."""
    values = [int(v) for v in text.split(",")]
    if not values or min(values) < 1:
        raise ValueError(text)
    return values


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the checkout to compare against")
    ap.add_argument("--head", default=".", help="the checkout measured (default: this one)")
    ap.add_argument("--peers", default="onnxruntime,openvino,openvino-onnx,torch-onnx,all",
                    help="campaigns, comma-separated; peers of one campaign joined with '+'; 'all'")
    ap.add_argument("--jobs", type=_counts, default=[1], help="--jobs values, comma-separated")
    ap.add_argument("--seeds", type=_counts, default=[2], help="--seed values, comma-separated")
    ap.add_argument("--budget", type=float, default=30.0, help="--time-budget of each run, in seconds")
    ap.add_argument("--reps", type=int, default=1, help="runs per setting and checkout (the median is kept)")
    ap.add_argument("--extra", default="", help="more poolcheck fuzz options, as one string")
    args = ap.parse_args(argv)
    if not args.budget > 0 or args.reps < 1:
        ap.error("--budget must be positive and --reps at least 1")
    trees = {"base": Path(args.base).resolve(), "head": Path(args.head).resolve()}
    for name, tree in trees.items():
        if not (tree / "poolcheck").is_dir():
            ap.error(f"--{name} {tree}: not a poolcheck checkout")
        if not any((tree / "poolcheck" / "engines").glob("_cpool*")):
            print(f"# note: {tree} has no built C extension; its engine is the NumPy one", file=sys.stderr)
    extra = args.extra.split()
    print(f"# {cpu_line()}; {args.budget:g} s per run; load before {os.getloadavg()[0]:.2f}")
    print("| campaign | jobs | seed | base configs/s | head configs/s | ratio | base distinct/s | "
          "head distinct/s | ratio | load |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    flip = False
    failed = False
    for peers in args.peers.split(","):
        for jobs in args.jobs:
            for seed in args.seeds:
                runs: dict[str, list[Run]] = {"base": [], "head": []}
                for _ in range(args.reps):
                    order = ["head", "base"] if flip else ["base", "head"]
                    flip = not flip
                    for name in order:
                        runs[name].append(run_one(trees[name], peers, jobs, seed, args.budget, extra))
                if any(r.configs == 0 for rs in runs.values() for r in rs):
                    failed = True  # said on stderr; no rate to compare
                    print(f"| {peers} | {jobs} | {seed} | failed | | | | | | |", flush=True)
                    continue
                rate = {n: statistics.median(r.rate for r in rs) for n, rs in runs.items()}
                distinct = {n: statistics.median(r.distinct_rate for r in rs) for n, rs in runs.items()}
                loads = [r.load for rs in runs.values() for r in rs]
                ratio = rate["head"] / rate["base"] if rate["base"] else float("nan")
                dratio = distinct["head"] / distinct["base"] if distinct["base"] else float("nan")
                print(f"| {peers} | {jobs} | {seed} | {rate['base']:,.0f} | {rate['head']:,.0f} | {ratio:.2f}x | "
                      f"{distinct['base']:,.0f} | {distinct['head']:,.0f} | {dratio:.2f}x | "
                      f"{min(loads):.1f}-{max(loads):.1f} |", flush=True)
    print(f"# load after {os.getloadavg()[0]:.2f}")
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
