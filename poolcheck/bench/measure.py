"""Running the benchmark: correctness first, then interleaved timing, then derived ratios.

Method (also written into docs/benchmarks.md):

- Every contender's output is compared with poolcheck's engine (the C engine when built,
  else the NumPy engine) before it is timed. Max values and indices must be equal; averages
  may differ by the float32 summation error of the runtimes, at most
  ``taps * 2^-23 * max|x| + ulp(result)``. A contender that differs is shown as wrong and not
  timed.
- Timing: ``perf_counter`` around single calls, garbage collector off. After a warm-up, the
  contenders (and a plain copy of the input, for the bandwidth bound) take turns in rounds of
  a few calls each, so that a burst of load on the machine hits all of them alike; each gets
  ``reps`` timed calls or stops at its time budget (at least 3 calls).
- Bandwidth bound: the bytes any implementation must move (input once, outputs once, int64
  indices when asked for) over the single-thread copy bandwidth measured on a buffer of the
  input's size in the same run (a copy reads and writes, so bandwidth = 2 * bytes / time).
"""

from __future__ import annotations

import functools
import gc
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from poolcheck.api_family import run_family
from poolcheck.bench.contenders import (
    Contender,
    KeepPath,
    Prepared,
    SingleThread,
    Unsupported,
    all_contenders,
    reference_layout,
)
from poolcheck.bench.workloads import Workload
from poolcheck.engines import c_engine_status, family_numpy, get_engine, numpy_engine
from poolcheck.judgement import close_values, family_tolerance
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.policy import SPEC

SCHEMA = "poolcheck.bench/1"
#: Statuses, in the order the table explains them.
STATUSES = ("ok", "wrong", "error", "n/a", "absent")

ProgressFn = Callable[[str, int, int], None]


@dataclass
class Timing:
    median_ms: float
    min_ms: float
    max_ms: float
    reps: int


@dataclass
class Result:
    """One contender on one workload. Ratios are None where they cannot be computed."""

    key: str
    label: str
    memory_format: str
    version: str | None
    status: str
    message: str = ""
    timing: Timing | None = None
    ratio_ort: float | None = None
    ratio_fastest: float | None = None
    gbps: float | None = None
    ratio_bound: float | None = None


@dataclass
class WorkloadResult:
    name: str
    title: str
    shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    op: str
    with_indices: bool
    bytes_moved: int
    copy_gbps: float | None
    bound_ms: float | None
    results: list[Result] = field(default_factory=list)

    def result(self, key: str) -> Result | None:
        return next((r for r in self.results if r.key == key), None)


@dataclass
class BenchRun:
    workloads: list[WorkloadResult]
    machine: dict[str, Any]
    settings: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        def res(r: Result) -> dict[str, Any]:
            d: dict[str, Any] = {
                "contender": r.key, "label": r.label, "memory_format": r.memory_format, "version": r.version,
                "status": r.status, "message": r.message,
            }
            if r.timing is not None:
                d.update(median_ms=r.timing.median_ms, min_ms=r.timing.min_ms, max_ms=r.timing.max_ms,
                         reps=r.timing.reps)
            d.update(ratio_ort=r.ratio_ort, ratio_fastest=r.ratio_fastest, gbps=r.gbps, ratio_bound=r.ratio_bound)
            return d

        return {
            "schema": SCHEMA,
            "machine": self.machine,
            "settings": self.settings,
            "workloads": [
                {
                    "name": w.name, "title": w.title, "shape": list(w.shape), "output_shape": list(w.output_shape),
                    "op": w.op, "with_indices": w.with_indices, "bytes_moved": w.bytes_moved,
                    "copy_gbps": w.copy_gbps, "bound_ms": w.bound_ms, "results": [res(r) for r in w.results],
                }
                for w in self.workloads
            ],
        }


# --------------------------------------------------------------------------- checking


def check_outputs(w: Workload, x: np.ndarray, got: tuple[np.ndarray, np.ndarray | None],
                  reference: Callable[[str], tuple[np.ndarray, np.ndarray | None]], index_kind: str) -> str:
    """"" when the contender's outputs agree with poolcheck's engine, else what differs."""
    values, indices = got
    ref_values, ref_indices = reference(index_kind)
    values = np.asarray(values)
    if values.shape != ref_values.shape:
        return f"output shape {values.shape}, expected {ref_values.shape}"
    if values.dtype != ref_values.dtype:
        return f"output type {values.dtype}, expected {ref_values.dtype}"
    if isinstance(w.spec, FamilySpec):  # the judgement's family rule (average, Lp; exact for max)
        tol = family_tolerance(w.spec, x, ref_values, numpy_engine, family_numpy)
        bad = ~close_values(ref_values, values, tol)
        what = "values"
    elif w.spec.op == "max":
        bad = ~((values == ref_values) | (np.isnan(values) & np.isnan(ref_values)))
        what = "values"
    else:
        # A float32 sum of m terms errs by at most (m - 1) 2^-24 sum|x| <= m 2^-23 max|x| / 2.
        tol = w.window_size * 2.0**-23 * float(np.max(np.abs(x))) + np.spacing(np.abs(ref_values))
        bad = ~(np.abs(values.astype(np.float64) - ref_values.astype(np.float64)) <= tol)
        what = "averages"
    if bad.any():
        first = tuple(int(v) for v in np.argwhere(bad)[0])
        return (f"{int(bad.sum())} {what} differ from poolcheck's engine, first at {first}: "
                f"{values[first]!r} vs {ref_values[first]!r}")
    if w.with_indices:
        if indices is None:
            return "no indices returned"
        assert ref_indices is not None
        if indices.shape != ref_indices.shape or not np.array_equal(indices.astype(np.int64), ref_indices):
            diff = int(np.sum(indices.astype(np.int64) != ref_indices)) if indices.shape == ref_indices.shape else -1
            return f"indices differ from poolcheck's engine ({diff} element(s))"
    return ""


def _reference(w: Workload, x: np.ndarray) -> tuple[str, Callable[[str], tuple[np.ndarray, np.ndarray | None]]]:
    """poolcheck's engine (C when built) as the reference, per index convention, cached."""

    eng = get_engine("auto")
    cache: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}

    def ref(kind: str) -> tuple[np.ndarray, np.ndarray | None]:
        if kind not in cache:
            if isinstance(w.spec, FamilySpec):
                cache[kind] = run_family(w.spec, x, engine=str(eng.NAME))
            elif w.spec.op == "avg":
                cache[kind] = (eng.avg_pool(x, w.geometry, w.spec.exclude_pad, SPEC), None)
            else:
                layout = reference_layout(w, kind) if w.with_indices else None
                cache[kind] = eng.max_pool(x, w.geometry, layout, SPEC)
        return cache[kind]

    return str(eng.NAME), ref


# --------------------------------------------------------------------------- timing


@dataclass
class _Timed:
    key: str
    call: Callable[[], object]
    target: int
    budget_s: float
    samples: list[float] = field(default_factory=list)
    spent_s: float = 0.0
    enter: Callable[[], object] | None = None  #: run untimed before the warm-up and each block

    def done(self) -> bool:
        if len(self.samples) >= self.target:
            return True
        return self.spent_s >= self.budget_s and len(self.samples) >= min(3, self.target)


def time_interleaved(items: list[_Timed], warmup: int, block: int, tick: Callable[[], None] | None = None) -> None:
    """Warm every callable up, then let them take turns in blocks of ``block`` timed calls."""
    for it in items:
        if it.enter is not None:
            it.enter()
        for _ in range(warmup):
            it.call()
    rounds = 0
    gc_was = gc.isenabled()
    gc.disable()
    try:
        while not all(it.done() for it in items):
            order = items[rounds % len(items):] + items[: rounds % len(items)]
            for it in order:
                if it.done():
                    continue
                if it.enter is not None:
                    it.enter()
                it.call()  # re-warm after the others ran (not timed)
                for _ in range(min(block, it.target - len(it.samples))):
                    t0 = time.perf_counter_ns()
                    it.call()
                    dt = (time.perf_counter_ns() - t0) * 1e-9
                    it.samples.append(dt)
                    it.spent_s += dt
                    if it.done():
                        break
                if tick is not None:
                    tick()
            rounds += 1
    finally:
        if gc_was:
            gc.enable()


def _timing(samples: list[float]) -> Timing:
    ms = np.array(samples) * 1e3
    return Timing(float(np.median(ms)), float(ms.min()), float(ms.max()), len(samples))


# --------------------------------------------------------------------------- the run


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info: dict[str, Any] = {
        "cpu": cpu, "logical_cpus": os.cpu_count(), "platform": platform.platform(),
        "python": sys.version.split()[0], "numpy": np.__version__,
    }
    c_engine, _ = c_engine_status()  # the C extension is optional
    # The instruction-set path the C engine ran on (POOLCHECK_ISA forces one), and every path
    # this CPU and build offer.
    info["c_engine_isa"] = None if c_engine is None else c_engine.active_isa()
    info["c_engine_isas"] = [] if c_engine is None else list(c_engine.available_isas())
    return info


def run_bench(
    workloads: list[Workload],
    *,
    reps: int = 200,
    budget_s: float = 3.0,
    warmup: int = 3,
    block: int = 10,
    contenders: list[Contender] | None = None,
    progress: ProgressFn | None = None,
    seed: int = 0,
) -> BenchRun:
    """Check and time every contender on every workload, single-threaded."""
    contenders = all_contenders() if contenders is None else contenders
    load_start = _load()
    steps = len(workloads) * (len(contenders) + 1)
    step = 0

    def report(msg: str) -> None:
        if progress is not None:
            progress(msg, step, steps)

    out: list[WorkloadResult] = []
    with SingleThread(), KeepPath() as default_path:
        for w in workloads:
            x = w.make_input(seed)
            ref_name, reference = _reference(w, x)
            wr = WorkloadResult(w.name, w.title, w.shape, w.output_shape, w.spec.op, w.with_indices,
                                w.bytes_moved, None, None)
            out.append(wr)
            timed: list[_Timed] = []
            prepared: list[Prepared] = []
            for c in contenders:
                step += 1
                report(f"{w.name}: checking {c.label}")
                r = Result(c.key, c.label, c.memory_format, c.version(), "ok")
                wr.results.append(r)
                ok, why = c.available()
                if not ok:
                    r.status, r.message = "absent", why
                    continue
                if c.only is not None and w.name not in c.only:
                    r.status, r.message = "n/a", f"run on {', '.join(c.only)} only (slow baseline)"
                    continue
                try:
                    prep = c.prepare(w, x)
                except Unsupported as exc:
                    r.status, r.message = "n/a", str(exc)
                    continue
                except Exception as exc:  # a runtime rejecting the model: shown, not fatal
                    r.status, r.message = "error", f"{type(exc).__name__}: {exc}"
                    continue
                try:
                    got = prep.outputs()
                    default_path.restore()  # the reference runs on the default path
                    problem = check_outputs(w, x, got, reference, prep.index_kind)
                except Exception as exc:
                    problem = f"failed to run: {type(exc).__name__}: {exc}"
                    r.status = "error"
                finally:
                    default_path.restore()
                if problem:
                    r.status = r.status if r.status == "error" else "wrong"
                    r.message = problem
                    continue
                prepared.append(prep)
                timed.append(_Timed(c.key, prep.call, min(reps, c.max_reps or reps), budget_s, enter=prep.enter))
            # The plain copy that sets the bandwidth bound, timed among the others.
            src, dst = w.make_input(seed + 1), np.empty(w.shape, np.float32)
            timed.append(_Timed("copy", functools.partial(np.copyto, dst, src), reps, budget_s))
            step += 1
            total_calls = sum(t.target for t in timed)

            def tick(ws: str = w.name, tt: list[_Timed] = timed, total: int = total_calls) -> None:
                done = sum(len(t.samples) for t in tt)
                report(f"{ws}: timing ({done}/{total} calls)")

            time_interleaved(timed, warmup, block, tick)
            default_path.restore()
            for p in prepared:
                if p.close is not None:
                    p.close()
            times = {t.key: _timing(t.samples) for t in timed}
            copy = times.pop("copy")
            wr.copy_gbps = 2 * w.input_bytes / (copy.median_ms * 1e-3) / 1e9
            wr.bound_ms = w.bytes_moved / (wr.copy_gbps * 1e9) * 1e3
            for r in wr.results:
                if r.key in times:
                    r.timing = times[r.key]
            _derive(wr)
            report(f"{w.name}: done (reference: poolcheck {ref_name})")
    settings = {"reps": reps, "budget_s": budget_s, "warmup": warmup, "block": block, "seed": seed,
                "threads": 1, "reference_engine": _reference_engine_name()}
    machine = machine_info()
    machine.update(load_start=load_start, load_end=_load())
    # Every instruction-set path the C engine was timed on, the default one first.
    machine["c_engine_paths_timed"] = [c.isa for c in contenders if c.isa is not None]
    return BenchRun(out, machine, settings)


def _load() -> float | None:
    """The 1-minute load average, where the system reports one."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _reference_engine_name() -> str:

    return str(get_engine("auto").NAME)


def _derive(wr: WorkloadResult) -> None:
    timed = [r for r in wr.results if r.timing is not None]
    if not timed:
        return
    fastest = min(r.timing.median_ms for r in timed if r.timing is not None)
    ort = wr.result("onnxruntime")
    ort_ms = ort.timing.median_ms if ort is not None and ort.timing is not None else None
    for r in timed:
        assert r.timing is not None
        med = r.timing.median_ms
        r.ratio_fastest = med / fastest
        r.ratio_ort = med / ort_ms if ort_ms else None
        r.gbps = wr.bytes_moved / (med * 1e-3) / 1e9
        r.ratio_bound = med / wr.bound_ms if wr.bound_ms else None
