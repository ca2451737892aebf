"""The standing targets beyond the headline ratios, evaluated on a measured run (never asserted
in tests): the C engine within 2x of the bandwidth bound, W1i under 1.5 ms, and the NumPy engine
far ahead of onnx.reference. The ratio targets (C and NumPy against ONNX Runtime, C against the
fastest NCHW contender) live with the ratios, in :mod:`poolcheck.bench.summary`."""

from __future__ import annotations

from dataclasses import dataclass

from poolcheck.bench.measure import BenchRun, Result, WorkloadResult

#: Workloads whose C time must be within 2x of the bandwidth bound.
BOUND_WORKLOADS = ("W1", "W3", "W4", "W5", "W6")
BOUND_FACTOR = 2.0
#: W1i (MaxPool with int64 indices) must take less than this, in ms.
W1I_LIMIT_MS = 1.5
#: The NumPy engine at least this much faster than onnx.reference (on W1).
NUMPY_VS_REFERENCE = 200.0


@dataclass(frozen=True)
class Target:
    """One target on one workload: ``met`` is None when it could not be measured here."""

    workload: str
    text: str
    met: bool | None
    detail: str


def _med(r: Result | None) -> float | None:
    return r.timing.median_ms if r is not None and r.timing is not None else None


def _missing(r: Result | None, who: str) -> str:
    if r is None:
        return f"{who} not in this run"
    return f"{who} {r.status}" + (f": {r.message}" if r.message else "")


def _targets_for(w: WorkloadResult) -> list[Target]:
    out: list[Target] = []
    c, numpy = w.result("c"), w.result("numpy")
    cm, nm = _med(c), _med(numpy)

    if w.name in BOUND_WORKLOADS:
        text = f"C engine within {BOUND_FACTOR:g}x of the bandwidth bound"
        if cm is None or not w.bound_ms:
            out.append(Target(w.name, text, None, "not measured"))
        else:
            ratio = cm / w.bound_ms
            out.append(Target(w.name, text, ratio <= BOUND_FACTOR,
                              f"{ratio:.2f}x of {w.bound_ms:.4g} ms ({w.copy_gbps:.0f} GB/s copy)"))
    if w.name == "W1i":
        text = f"C engine under {W1I_LIMIT_MS:g} ms"
        out.append(Target(w.name, text, None if cm is None else cm < W1I_LIMIT_MS,
                          "not measured" if cm is None else f"{cm:.4g} ms"))
    ref = w.result("onnx-reference")
    if _med(ref) is not None:
        text = f"NumPy engine at least {NUMPY_VS_REFERENCE:g}x faster than onnx.reference"
        rm = _med(ref)
        assert rm is not None
        out.append(Target(w.name, text, None if nm is None else rm >= NUMPY_VS_REFERENCE * nm,
                          "not measured" if nm is None else f"{rm / nm:.0f}x"))
    return out


def evaluate(run: BenchRun) -> list[Target]:
    """Every target that applies to the workloads of ``run``."""
    return [t for w in run.workloads for t in _targets_for(w)]
