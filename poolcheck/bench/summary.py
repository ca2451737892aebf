"""The headline ratios of a benchmark run, side by side, and the recorded set-up time.

Per workload, from the medians of one run: the C engine over ONNX Runtime, the NumPy engine
over ONNX Runtime, and the C engine over the fastest NCHW contender that is not one of
poolcheck's engines. The set-up time is the wall time of the last fresh ``make install`` (from
the virtual environment's creation to the end of the install), which the Makefile records in
the environment as ``.install-seconds``; it is unknown where no such record exists.
"""

from __future__ import annotations

import datetime as _dt
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from poolcheck.bench.measure import BenchRun, Result, WorkloadResult

#: poolcheck's own engines: never "the fastest contender" they are compared with.
POOLCHECK_KEYS = ("c", "numpy")
ORT_KEY = "onnxruntime"
#: Where ``make install`` records the wall time of a fresh install, inside the environment.
INSTALL_RECORD = ".install-seconds"
#: The targets: C at most ONNX Runtime's time, NumPy within 3x of it, and C at most 10% behind
#: the fastest NCHW contender.
C_VS_ORT = 1.0
NUMPY_VS_ORT = 3.0
C_VS_FASTEST_NCHW = 1.10


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
            if r.memory_format == "NCHW" and r.key not in POOLCHECK_KEYS and (m := _median(r)) is not None]
    fastest = min(nchw) if nchw else None
    return Ratios(w.name, _ratio(c, ort), _ratio(numpy, ort), _ratio(c, fastest[0] if fastest else None),
                  fastest[1] if fastest else None)


def ratios(run: BenchRun) -> list[Ratios]:
    """The headline ratios of every workload of ``run``, in its order."""
    return [workload_ratios(w) for w in run.workloads]


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
