"""The result model, re-exported for the renderers: it lives on the ground floor
(:mod:`poolcheck.results`) below everything that produces it."""

from poolcheck.results import (
    DEFAULT_FAIL_ON,
    FAILING,
    SCHEMA,
    VERDICTS,
    CaseResult,
    Check,
    Diff,
    RunResult,
    Severity,
    WindowCell,
    machine_label,
    worst,
)

__all__ = ["DEFAULT_FAIL_ON", "FAILING", "SCHEMA", "VERDICTS", "CaseResult", "Check", "Diff", "RunResult",
           "Severity", "WindowCell", "machine_label", "worst"]
