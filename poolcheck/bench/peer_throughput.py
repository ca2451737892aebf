"""Throughput of the batched peers: ``python -m poolcheck.bench.peer_throughput [--peers ...] [--cases N]``.

Draws random, distinct, valid configurations (ranks 3-5, both ops, every rounding and auto_pad
mode, dilations, asymmetric pads below the kernel) with small float32 inputs, and reports
cases/s for each peer alone and for the differential loop (peer + NumPy engine), in process
and through the isolated worker. Sessions are never reused across rounds: every configuration
is new, so the numbers include model building and session creation.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np

from poolcheck.api import run_spec
from poolcheck.errors import AttributeValueError
from poolcheck.peers.base import BatchItem, PeerSpecError
from poolcheck.peers.isolation import call_peer_many, close_workers
from poolcheck.peers.registry import parse_peer_list, resolve_peers
from poolcheck.spec.attributes import openvino_avg_pool, openvino_max_pool
from poolcheck.spec.poolspec import PoolSpec
from poolcheck.spec.shape import resolve


def random_items(n: int, seed: int) -> list[BatchItem]:
    """``n`` distinct valid (spec, input) pairs that ONNX and OpenVINO can both express."""
    rng = np.random.default_rng(seed)
    items: list[BatchItem] = []
    seen: set[tuple[PoolSpec, tuple[int, ...]]] = set()
    while len(items) < n:
        r = int(rng.integers(1, 4))
        k = [int(v) for v in rng.integers(1, 4, r)]
        s = [int(v) for v in rng.integers(1, 4, r)]
        pb = [int(rng.integers(0, kk)) for kk in k]
        pe = [int(rng.integers(0, kk)) for kk in k]
        auto_pad = str(rng.choice(["explicit", "explicit", "valid", "same_upper", "same_lower"]))
        rounding = str(rng.choice(["floor", "ceil_torch"]))
        if rng.random() < 0.5:
            d = [int(v) for v in rng.integers(1, 3, r)]
            spec = openvino_max_pool(k, s, pb, pe, d, rounding, auto_pad)
        else:
            spec = openvino_avg_pool(k, s, pb, pe, bool(rng.random() < 0.5), rounding, auto_pad)
        shape = (1, int(rng.integers(1, 4)), *(int(v) for v in rng.integers(3, 9, r)))
        if (spec, shape) in seen:
            continue
        try:
            resolve(spec, shape)
        except AttributeValueError:
            continue
        seen.add((spec, shape))
        items.append((spec, rng.standard_normal(shape).astype(np.float32)))
    return items


@dataclass
class Measurement:
    cases: int
    seconds: float
    statuses: dict[str, int] = field(default_factory=dict)
    rejections: dict[str, str] = field(default_factory=dict)  # message -> an example config

    @property
    def rate(self) -> float:
        return self.cases / self.seconds


def measure(peer_name: str, cases: int, batch: int, isolated: bool, with_engine: bool, seed: int) -> Measurement:
    """Time ``cases`` new configurations through ``peer_name`` in batches of ``batch``."""
    (peer,) = resolve_peers([peer_name])
    # Warm up (imports, worker start) on other configurations.
    call_peer_many(peer, random_items(batch, seed + 1000), isolated=isolated, timeout=120)
    items = random_items(cases, seed)
    m = Measurement(len(items), 0.0)
    start = time.perf_counter()
    for lo in range(0, len(items), batch):
        chunk = items[lo : lo + batch]
        results = call_peer_many(peer, chunk, isolated=isolated, timeout=120)
        for (spec, x), res in zip(chunk, results):
            m.statuses[res.status] = m.statuses.get(res.status, 0) + 1
            if res.status == "rejects":
                m.rejections.setdefault(res.message[:120], spec.describe())
            if with_engine:
                run_spec(spec, x)
    m.seconds = time.perf_counter() - start
    return m


MODES = [(False, False), (False, True), (True, False), (True, True)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", default="onnxruntime", help="peers as in poolcheck --peers (options allowed)")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        names = [str(ref) for ref in parse_peer_list(args.peers)]
    except PeerSpecError as exc:
        parser.error(str(exc))
    for name in names:
        for mode_no, (isolated, with_engine) in enumerate(MODES):
            # A new seed per mode: the isolated worker outlives a mode and must not meet a
            # configuration it has already cached.
            m = measure(name, args.cases, args.batch, isolated, with_engine, args.seed + 7919 * mode_no)
            mode = ("isolated" if isolated else "in-process") + (", + numpy engine" if with_engine else "")
            counts = ", ".join(f"{k}={v}" for k, v in sorted(m.statuses.items()))
            print(f"{name:15s} batch={args.batch:<4d} {mode:28s} {m.cases} cases in {m.seconds:.2f} s "
                  f"= {m.rate:.0f} cases/s  ({counts})")
            for message, example in m.rejections.items():
                print(f"    rejects, e.g. {example}: {message}")
    close_workers()


if __name__ == "__main__":
    main()
