"""What checking one DISTINCT fuzz configuration costs: ``Session.check_batch`` timed directly.

    PYTHONPATH=. python benchmarks/check_cost.py [--configs 2000] [--batch 8] [--peers none,onnxruntime]
                                                 [--profile none] [--save FILE | --load FILE]

Draws ``--configs`` distinct valid configurations once (expanded from seeds as a campaign does, so
the list depends on the seed alone; or
``--load`` a list pickled by ``--save``, for an A/B run of two checkouts on the same list), then
for each ``--peers`` entry (``none``: the engine-side oracles only) builds a fresh ``Session`` and
calls ``check_batch`` on consecutive batches of ``--batch``, each run in a fresh process
(``--repeat N``: N runs, the median printed). Before timing, a warm-up pass over
200 other configurations starts the isolated peer worker and fills the per-process caches that a
long campaign would have filled too; every timed configuration is new to the session's caches.

Printed per peer setting: microseconds per configuration of wall time, of this process' CPU time
(the main process: engines, oracles, judgement, coverage) and of the isolated peer worker's CPU
time (read from /proc; the worker runs on the other core, so throughput is bound by the larger of
the two), and the findings count (a sanity check that two checkouts judge alike).
``--profile PEER`` runs that setting under cProfile and prints the top functions by own time;
with ``--in-process`` the peer runs in this process, so its model building is profiled too.
Generation is not measured.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import os
import pickle
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Any

from poolcheck.fuzz.session import FuzzOptions, Session
from poolcheck.fuzz.shrinking import example_seed, expand_batch
from poolcheck.fuzz.strategies import ALL_DTYPES, CONVENTIONS, FuzzCase, fuzz_config
from poolcheck.peers import isolation
from poolcheck.peers.registry import resolve_peer

WARMUP = 200


def draw_configs(n: int, seed: int) -> list[FuzzCase]:
    """``n`` distinct valid configurations (by spec, input type, shape and bytes), expanded from
    seeds as a campaign expands them (``fuzz.shrinking.expand_batch``: each geometry fed
    ``INPUTS_PER_GEOMETRY`` inputs)."""
    found: dict[tuple[Any, ...], FuzzCase] = {}
    generate = functools.partial(fuzz_config, ops=("max", "avg"), ranks=(3, 4, 5), dtypes=ALL_DTYPES,
                                 conventions=CONVENTIONS)
    index = 0
    while len(found) < n and index < 4 * n:
        for case in expand_batch(generate, example_seed(seed, 0, index), 8):
            if len(found) < n:
                found.setdefault((case.spec, case.x.dtype.str, case.x.shape, case.x.tobytes()), case)
        index += 1
    if len(found) < n:
        raise SystemExit(f"only {len(found)} distinct configurations drawn")
    return list(found.values())


def _worker_cpu() -> float:
    """CPU seconds of every live isolated peer worker (user + system, from /proc)."""
    total = 0.0
    for worker in list(isolation._WORKERS.values()):
        proc = getattr(worker, "_proc", None)
        if proc is None or not proc.is_alive():
            continue
        try:
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


#: The parts of ``check_batch`` timed by ``--parts``: (label, module, attribute). ``judge`` holds
#: ``diagnosis`` (reported apart: judge minus diagnosis).
PARTS = (
    ("accepts", "poolcheck.fuzz.oracles", "engine_accepts"),
    ("reference", "poolcheck.fuzz.session", "expected_for"),
    ("regions", "poolcheck.fuzz.coverage", "regions_of"),
    ("shape rules", "poolcheck.fuzz.oracles", "check_shape_rules"),
    ("engines", "poolcheck.fuzz.oracles", "check_engines"),
    ("metamorphic", "poolcheck.fuzz.oracles", "check_metamorphic"),
    ("judge", "poolcheck.fuzz.oracles", "check_peer"),
    ("diagnosis", "poolcheck.fuzz.oracles", "diagnose_output"),
)


def _timed_parts() -> tuple[dict[str, float], list[tuple[Any, str, Any]]]:
    """Wrap each of :data:`PARTS` with a CPU-time accumulator; returns the totals and what to
    put back. (The session reads these through their modules at call time.)"""
    import importlib

    totals: dict[str, float] = {}
    undo = []
    for label, module_name, attr in PARTS:
        module = importlib.import_module(module_name)
        original = getattr(module, attr, None)
        if original is None:
            continue

        def timed(*args: Any, _f: Any = original, _label: str = label, **kwargs: Any) -> Any:
            t0 = time.process_time()
            try:
                return _f(*args, **kwargs)
            finally:
                totals[_label] = totals.get(_label, 0.0) + time.process_time() - t0

        setattr(module, attr, timed)
        undo.append((module, attr, original))
    return totals, undo


def measure(configs: list[FuzzCase], warm: list[FuzzCase], peer: str, batch: int,
            profile: bool, isolated: bool = True, parts: bool = False, freeze: bool = False) -> dict[str, Any]:
    peers = [] if peer == "none" else [resolve_peer(peer)]
    session = Session(FuzzOptions(peers=tuple(peers), isolated=isolated), peers)
    for i in range(0, len(warm), batch):
        session.check_batch(warm[i:i + batch])
    batches = [configs[i:i + batch] for i in range(0, len(configs), batch)]
    if freeze:  # what is alive now (modules, peers, caches) is never scanned by the collector again
        gc.freeze()
    prof = cProfile.Profile(time.process_time) if profile else None  # CPU: waits on the worker are not costs
    findings: Counter[str] = Counter()
    seen: list[tuple[str, ...]] = []
    totals, undo = _timed_parts() if parts else ({}, [])
    w0, c0, p0 = time.perf_counter(), time.process_time(), _worker_cpu()
    if prof is not None:
        prof.enable()
    for b in batches:
        for f in session.check_batch(b):
            findings[f.signature] += 1
            seen.append((f.signature, f.weight.value, f.text, f.detail, f.case.describe()))
    if prof is not None:
        prof.disable()
    wall, cpu, wcpu = time.perf_counter() - w0, time.process_time() - c0, _worker_cpu() - p0
    for module, attr, original in undo:
        setattr(module, attr, original)
    n = len(configs)
    if "judge" in totals:
        totals["judge"] -= totals.get("diagnosis", 0.0)
    if totals:
        totals["rest"] = cpu - sum(totals.values())
    out = {"peer": peer, "wall": 1e6 * wall / n, "main": 1e6 * cpu / n, "worker": 1e6 * wcpu / n,
           "findings": sum(findings.values()), "signatures": len(findings), "prof": prof,
           "seen": seen, "coverage": session.progress.coverage.as_dict(),
           "declined": session.progress.coverage.declined_dict(),
           "parts": {k: 1e6 * v / n for k, v in totals.items()}}
    isolation.close_workers()
    return out


HEADER = f"{'peers':<14} {'wall us/cfg':>12} {'main cpu':>10} {'worker cpu':>11} {'findings':>9} {'sigs':>5}"


def _row(peer: str, r: dict[str, Any]) -> str:
    return (f"{peer:<14} {r['wall']:>12.0f} {r['main']:>10.0f} {r['worker']:>11.0f} {r['findings']:>9} "
            f"{r['signatures']:>5}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--peers", default="none,onnxruntime,openvino")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each --peers entry (the median is printed)")
    ap.add_argument("--profile", default="", help="a --peers entry to run under cProfile")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--in-process", action="store_true",
                    help="call the peers in this process (no worker): main cpu then includes the peer's")
    ap.add_argument("--save", help="pickle the drawn configurations here")
    ap.add_argument("--load", help="time the configurations pickled here by --save")
    ap.add_argument("--dump", help="pickle every finding (signature, severity, text, detail, case) and the "
                                   "coverage counts per --peers entry here, to compare two checkouts")
    ap.add_argument("--parts", action="store_true",
                    help="also print main-process CPU us/config per part of check_batch (accepts, reference, "
                         "regions, shape rules, engines, metamorphic, judge, diagnosis, rest)")
    ap.add_argument("--gc-freeze", action="store_true",
                    help="gc.freeze() after the warm-up: the collector no longer scans what the imports and "
                         "the warm-up left alive (torch, openvino and hypothesis hold millions of objects)")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # one run, its result pickled to this file
    args = ap.parse_args(argv)
    if args.child:
        with open(args.load, "rb") as f:
            everything = pickle.load(f)
        r = measure(everything[WARMUP:WARMUP + args.configs], everything[:WARMUP], args.peers, args.batch,
                    args.peers == args.profile, not args.in_process, args.parts, args.gc_freeze)
        prof = r.pop("prof")
        if prof is not None:
            print(_row(args.peers, r))
            pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(args.top)
        with open(args.child, "wb") as f:
            pickle.dump(r, f)
        return
    with tempfile.TemporaryDirectory() as tmp:
        load = args.load
        if not load:
            load = args.save or os.path.join(tmp, "configs.pkl")
            with open(load, "wb") as f:
                pickle.dump(draw_configs(args.configs + WARMUP, args.seed), f)
        print(f"# {args.configs} distinct configurations, batches of {args.batch}, each run in a fresh process, "
              f"load {os.getloadavg()}", flush=True)
        print(HEADER)
        dumped: dict[str, Any] = {}
        for peer in args.peers.split(","):
            runs = []
            for _ in range(args.repeat):
                out = os.path.join(tmp, "result.pkl")
                # A fresh process per run: the caches of one run hold none of the next one's work.
                subprocess.run([sys.executable, __file__, "--load", load, "--configs", str(args.configs),
                                "--batch", str(args.batch), "--peers", peer, "--profile", args.profile,
                                "--top", str(args.top), "--child", out,
                                *(["--in-process"] if args.in_process else []),
                                *(["--parts"] if args.parts else []),
                                *(["--gc-freeze"] if args.gc_freeze else [])], check=True)
                with open(out, "rb") as f:
                    runs.append(pickle.load(f))
                if args.repeat > 1:
                    print("  " + _row(peer, runs[-1]), flush=True)
            median = {k: statistics.median(r[k] for r in runs) for k in ("wall", "main", "worker")}
            print(_row(peer, {**runs[0], **median}), flush=True)
            if args.parts:
                labels = [label for label, *_ in PARTS if label in runs[0]["parts"]] + ["rest"]
                print("  parts (main cpu us/config, median): " + ", ".join(
                    f"{label} {statistics.median(r['parts'].get(label, 0.0) for r in runs):.0f}" for label in labels),
                    flush=True)
            dumped[peer] = {k: runs[0][k] for k in ("seen", "coverage", "declined")}
        print(f"# load after: {os.getloadavg()}")
    if args.dump:
        with open(args.dump, "wb") as f:
            pickle.dump(dumped, f)


if __name__ == "__main__":
    main()
