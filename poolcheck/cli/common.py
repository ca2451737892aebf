"""Shared CLI plumbing: the console, exit codes, error-to-exit mapping, and option parsers used
by several commands (durations, severities)."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.text import Text

from poolcheck.errors import AttributeValueError, PoolcheckError
from poolcheck.report.model import DEFAULT_FAIL_ON, Severity
from poolcheck.report.text import safe

EXIT_OK = 0
EXIT_FAILURES = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

__all__ = ["ENGINE_HELP", "EXIT_FAILURES", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "console", "engines_for", "err_console", "fail",
           "parse_duration", "parse_fail_on", "parse_int_list", "safe", "user_errors"]


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print a one-line error to stderr and return the Exit to raise. ``message`` is shown as
    text (never as markup; control characters escaped)."""
    line = Text("error:", style="bold red")
    line.append(" " + safe(message))
    err_console.print(line, soft_wrap=True)
    return typer.Exit(code=code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn poolcheck's own errors (bad attributes, bad case files, missing engines) into exit 2."""
    try:
        yield
    except PoolcheckError as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)


def parse_int_list(option: str, text: str | None) -> list[int] | None:
    """Parse "2,2" into [2, 2]; a bad value is a usage error naming the option."""
    if text is None:
        return None
    try:
        return [int(part) for part in text.replace(" ", "").split(",") if part != ""]
    except ValueError:
        raise fail(f"{option}: expected comma-separated integers, got {text!r}") from None


DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s|m|min|h)?\s*$")
DURATION_UNITS = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(text: str, option: str = "--time-budget") -> float:
    """``"500ms"``, ``"20s"``, ``"2m"``, ``"1h"`` or a plain number of seconds -> seconds.
    Bad, negative, zero, NaN or infinite values are an AttributeValueError naming ``option``."""
    m = DURATION.match(str(text))
    if not m:
        raise AttributeValueError(option, f"expected a duration like 500ms, 20s, 2m, 1h or 90, got {text!r}")
    seconds = float(m.group(1)) * DURATION_UNITS[m.group(2)]
    if not math.isfinite(seconds) or seconds <= 0:
        raise AttributeValueError(option, f"must be a positive, finite duration, got {text!r}")
    return seconds


def parse_fail_on(text: str, option: str = "--fail-on") -> frozenset[str]:
    """``"violation,limitation"`` or ``"all"`` -> severity values; unknown names are usage errors."""
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    if not names:
        return frozenset(s.value for s in DEFAULT_FAIL_ON)
    if names == ["all"]:
        return frozenset(s.value for s in Severity)
    known = {s.value for s in Severity}
    bad = [n for n in names if n not in known]
    if bad:
        raise AttributeValueError(option, f"expected some of {', '.join(sorted(known))} (or all), got {bad[0]!r}")
    return frozenset(names)


#: ``--engine`` help, shared by every command that takes it (help and error say the same).
ENGINE_HELP = "Reference engine: numpy, c, or all (every engine built here)."


def engines_for(engine: str) -> list[str]:
    """``--engine``: numpy, c, or all (every engine built here); anything else is a usage error
    worded as the help."""
    from poolcheck.engines import available_engines, get_engine

    if engine == "all":
        return available_engines()
    if engine not in ("numpy", "c"):
        raise AttributeValueError("--engine", f"expected numpy, c or all, got {engine!r}")
    get_engine(engine)  # a clear error when the C engine is not built here
    return [engine]
