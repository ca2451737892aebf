"""The headline ratios of a benchmark run, side by side, and the recorded set-up and build times.

Per workload, from the medians of one run: the C engine over ONNX Runtime, the NumPy engine
over ONNX Runtime, and the C engine over the fastest NCHW contender that is not one of
poolcheck's engines. The set-up time is the wall time of the last fresh ``make install`` (from
the virtual environment's creation to the end of the install), which the Makefile records in
the environment as ``.install-seconds``; it is unknown where no such record exists. The build
time is the wall time setup.py took to compile and link the loaded C extension, which it
records beside it (``poolcheck.engines.c_engine.build_record_path``).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from poolcheck.bench.contenders import C_PATH_PREFIX, is_poolcheck_key
from poolcheck.bench.measure import BenchRun, Result, WorkloadResult
from poolcheck.engines import c_engine

ORT_KEY = "onnxruntime"
#: Where ``make install`` records the wall time of a fresh install, inside the environment.
INSTALL_RECORD = ".install-seconds"
#: The targets: C at most ONNX Runtime's time, NumPy within 3x of it, and C at most 10% behind
#: the fastest NCHW contender.
C_VS_ORT = 1.0
NUMPY_VS_ORT = 3.0
C_VS_FASTEST_NCHW = 1.10
#: The C extension's build (compile and link) takes at most this long, in seconds, on 2 cores.
BUILD_LIMIT_S = 20.0
#: The C engine against ONNX Runtime per instruction-set path: C_VS_ORT, except the portable
#: path (SSE2 on x86-64, NEON on AArch64), which stays within 2x of ONNX Runtime.
PATH_VS_ORT = {"portable": 2.0}


@dataclass(frozen=True)
class Ratios:
    """Ratios of median times on one workload (lower is faster); None where a side was not timed."""

    workload: str
    c_ort: float | None
    numpy_ort: float | None
    c_fastest_nchw: float | None
    fastest_nchw: str | None  # label of the fastest NCHW contender other than poolcheck's engines

    def met(self) -> dict[str, bool | None]:
        """Whether each ratio meets its target (None where it was not measured)."""
        def ok(v: float | None, limit: float) -> bool | None:
            return None if v is None else v <= limit
        return {"c_ort": ok(self.c_ort, C_VS_ORT), "numpy_ort": ok(self.numpy_ort, NUMPY_VS_ORT),
                "c_fastest_nchw": ok(self.c_fastest_nchw, C_VS_FASTEST_NCHW)}


def _median(r: Result | None) -> float | None:
    return r.timing.median_ms if r is not None and r.timing is not None and r.status == "ok" else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def workload_ratios(w: WorkloadResult) -> Ratios:
    c, numpy, ort = (_median(w.result(k)) for k in ("c", "numpy", ORT_KEY))
    nchw = [(m, r.label) for r in w.results
            if r.memory_format == "NCHW" and not is_poolcheck_key(r.key) and (m := _median(r)) is not None]
    fastest = min(nchw) if nchw else None
    return Ratios(w.name, _ratio(c, ort), _ratio(numpy, ort), _ratio(c, fastest[0] if fastest else None),
                  fastest[1] if fastest else None)


def ratios(run: BenchRun) -> list[Ratios]:
    """The headline ratios of every workload of ``run``, in its order."""
    return [workload_ratios(w) for w in run.workloads]


@dataclass(frozen=True)
class PathRatio:
    """The C engine on one instruction-set path over ONNX Runtime on one workload, in one run
    (ONNX Runtime runs its own best kernels for the CPU on every path's row)."""

    workload: str
    path: str
    c_ort: float | None
    target: float

    def met(self) -> bool | None:
        return None if self.c_ort is None else self.c_ort <= self.target


def paths_timed(run: BenchRun) -> list[str]:
    """The C engine's paths timed side by side in ``run``, narrowest first; empty when only one."""
    timed = [str(p) for p in run.machine.get("c_engine_paths_timed") or []]
    order = [str(p) for p in run.machine.get("c_engine_isas") or []]
    timed.sort(key=lambda p: order.index(p) if p in order else len(order))
    return timed if len(timed) > 1 else []


def path_ratios(run: BenchRun) -> list[PathRatio]:
    """Per workload and timed path, the C engine over ONNX Runtime (none when one path ran).
    The default path's numbers are the ``c`` contender's, the others' ``c@<path>``."""
    paths = paths_timed(run)
    default = run.machine.get("c_engine_isa")
    out = []
    for w in run.workloads:
        ort = _median(w.result(ORT_KEY))
        for path in paths:
            c = _median(w.result("c" if path == default else C_PATH_PREFIX + path))
            out.append(PathRatio(w.name, path, _ratio(c, ort), PATH_VS_ORT.get(path, C_VS_ORT)))
    return out


@dataclass(frozen=True)
class SetupTime:
    """The wall time of the last fresh install, when recorded."""

    seconds: float | None
    recorded: str | None  # UTC date and time of the record
    note: str  # where it came from, or why it is unknown

    def text(self) -> str:
        if self.seconds is None:
            return f"unknown ({self.note})"
        return f"{self.seconds:.0f} s ({self.note}, recorded {self.recorded})"

    def machine_fields(self) -> dict[str, object]:
        """The record as fields of a run's ``machine`` section (and so of its JSON)."""
        return {"setup_seconds": self.seconds, "setup_recorded": self.recorded, "setup_note": self.note}


def read_setup_time(environment: Path | None = None) -> SetupTime:
    """The set-up time ``make install`` recorded in ``environment`` (default: the running
    Python's environment, ``sys.prefix``). A missing or unreadable record is "unknown"."""
    record = Path(sys.prefix if environment is None else environment) / INSTALL_RECORD
    try:
        text = record.read_text(encoding="utf-8").strip()
        stamp = record.stat().st_mtime
    except OSError:
        return SetupTime(None, None, "no fresh `make install` recorded in this environment")
    try:
        seconds = float(text.split()[0])
    except (ValueError, IndexError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        return SetupTime(None, None, f"unreadable install record {text[:40]!r}")
    when = _dt.datetime.fromtimestamp(stamp, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return SetupTime(seconds, when, "fresh `make install`")


def setup_time_of(run: BenchRun) -> SetupTime:
    """The set-up time stored in ``run.machine`` by ``poolcheck bench`` (unknown if absent)."""
    m = run.machine
    if "setup_note" not in m:
        return SetupTime(None, None, "not read in this run")
    seconds = m.get("setup_seconds")
    return SetupTime(None if seconds is None else float(seconds), m.get("setup_recorded"), str(m["setup_note"]))


@dataclass(frozen=True)
class BuildTime:
    """The wall time setup.py took to build the loaded C extension, when recorded."""

    seconds: float | None
    cpus: int | None
    recorded: str | None
    note: str  # where it came from, or why it is unknown

    def met(self) -> bool | None:
        """Whether the build kept to :data:`BUILD_LIMIT_S` (None: unknown, or not on 2 cores)."""
        if self.seconds is None or self.cpus != 2:
            return None
        return self.seconds <= BUILD_LIMIT_S

    def text(self) -> str:
        if self.seconds is None:
            return f"unknown ({self.note})"
        met = self.met()
        target = "" if met is None else f"; target at most {BUILD_LIMIT_S:g} s on 2 cores: {'met' if met else 'missed'}"
        return f"{self.seconds:.1f} s on {self.cpus} CPUs ({self.note}, recorded {self.recorded}{target})"

    def machine_fields(self) -> dict[str, object]:
        """The record as fields of a run's ``machine`` section (and so of its JSON)."""
        return {"build_seconds": self.seconds, "build_cpus": self.cpus, "build_recorded": self.recorded,
                "build_note": self.note}


def read_build_time(record: Path | None = None) -> BuildTime:
    """The build time setup.py recorded beside the loaded C extension (or in ``record``). A
    missing or unreadable record is "unknown"."""
    path = c_engine.build_record_path() if record is None else record
    if path is None:
        return BuildTime(None, None, None, f"C engine not loaded: {c_engine.UNAVAILABLE_REASON}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        return BuildTime(None, None, None, "no build record beside the extension (built before setup.py kept one)")
    except ValueError:
        return BuildTime(None, None, None, "unreadable build record")
    seconds, cpus, when = (data.get(k) if isinstance(data, dict) else None for k in ("seconds", "cpus", "recorded"))
    if not (isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
            and seconds >= 0 and isinstance(cpus, int) and not isinstance(cpus, bool) and cpus > 0
            and isinstance(when, str) and _RECORDED.fullmatch(when)):
        return BuildTime(None, None, None, "unreadable build record")
    return BuildTime(float(seconds), cpus, when, "setup.py")


#: The time format setup.py records (``%Y-%m-%d %H:%M UTC``): nothing else from the file is shown.
_RECORDED = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")


def build_time_of(run: BenchRun) -> BuildTime:
    """The build time stored in ``run.machine`` by ``poolcheck bench`` (unknown if absent)."""
    m = run.machine
    if "build_note" not in m:
        return BuildTime(None, None, None, "not read in this run")
    seconds, cpus = m.get("build_seconds"), m.get("build_cpus")
    return BuildTime(None if seconds is None else float(seconds), None if cpus is None else int(cpus),
                     m.get("build_recorded"), str(m["build_note"]))
