"""Severity of every class the diagnosis names: the rule table lives with the spec
(:mod:`poolcheck.spec.severity`, one rule per class and convention, each citing the sentences it
rests on by id), so that a ``poolcheck run --peers`` check and the fuzzer weigh a class alike.
This module is the diagnosis's door to it."""

from __future__ import annotations

from poolcheck.spec.severity import (
    RANK,
    REJECTION_SEVERITY,
    SEVERITY_RULES,
    STATUS_SEVERITY,
    UNEXPLAINED_SEVERITY,
    SeverityRule,
    rules_citing,
    severity_of,
    severity_rule,
)

__all__ = [
    "RANK",
    "REJECTION_SEVERITY",
    "SEVERITY_RULES",
    "STATUS_SEVERITY",
    "UNEXPLAINED_SEVERITY",
    "SeverityRule",
    "rules_citing",
    "severity_of",
    "severity_rule",
]
