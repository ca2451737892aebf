"""Shared CLI plumbing: the console, exit codes (the one place a result or an error becomes
one), option parsing shared by several commands, and loading ``--peers``."""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from poolcheck.engines import available_engines, get_engine
from poolcheck.errors import AttributeValueError, PoolcheckError
from poolcheck.files import stdout_to_stderr
from poolcheck.peers.base import PeerLoadError
from poolcheck.peers.registry import resolve_peers
from poolcheck.report.text import safe
from poolcheck.report.writers import write_reports
from poolcheck.results import FAILING, RunResult, Severity, Verdict
from poolcheck.spec.poolspec import comma_ints

EXIT_OK = 0
EXIT_FAILURES = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: rich takes COLUMNS=0 as a console zero columns wide and prints nothing at all: a width of 0 is
#: taken as 80 columns.
_WIDTH = 80 if os.environ.get("COLUMNS", "").strip().isdigit() and int(os.environ["COLUMNS"]) == 0 else None
console = Console(highlight=False, width=_WIDTH)
err_console = Console(stderr=True, highlight=False, width=_WIDTH)


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
    except OSError as exc:
        if exc.filename is None:  # not about a path the user gave: a real failure, shown whole
            raise
        # a path no file system can hold (ENAMETOOLONG: Path.exists() raises it), or one that
        # cannot be read or made; the option's own checks name the ordinary cases first
        raise fail(f"{exc.filename}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)


def path_parser(option: str) -> Callable[[str], Path]:
    """A typer ``parser`` for a path option or argument: an empty string (an unset shell variable)
    is a usage error naming ``option`` -- as a Path it would be ".", the current folder."""
    def parse(text: str | Path) -> Path:
        if isinstance(text, Path):
            return text
        if not text.strip():
            raise fail(f"{option}: expected a path, got an empty string")
        return Path(text)
    return parse


def text_parser(option: str, what: str) -> Callable[[str], str]:
    """A typer ``parser`` for a text option: nothing but spaces and commas (an unset shell
    variable, ``-k "$ID"``) is a usage error naming ``option`` -- it would select everything."""
    def parse(text: str) -> str:
        if not text.replace(",", "").strip():
            got = "an empty string" if not text.strip() else f"{text!r} (only empty items)"
            raise fail(f"{option}: expected {what}, got {got}")
        return text
    return parse


def parse_int_list(option: str, text: str | None) -> list[int] | None:
    """Parse "2,2" into [2, 2] ("" into [], a trailing comma allowed); a bad or empty item
    (``1,,7``) is a usage error naming the option."""
    if text is None:
        return None
    try:
        return comma_ints(text)
    except ValueError:
        raise fail(f"{option}: expected comma-separated integers, got {text!r}") from None


DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(ms|s|m|min|h)?\s*$")
#: The longest duration any option accepts (a week): beyond it a typo is likelier than intent.
MAX_DURATION = 7 * 24 * 3600.0


def parse_duration(option: str, text: str | float) -> float:
    """``"500ms"``, ``"60s"``, ``"2m"``, ``"1.5h"`` or ``"90"`` (seconds) -> seconds; positive and
    finite (``0``, ``-1``, ``nan``, ``inf`` are usage errors naming the option)."""
    m = DURATION.match(str(text))
    if not m:
        raise fail(f"{option}: expected a duration like 500ms, 60s, 2m or 90 (seconds), got {text!r}")
    value = float(m.group(1)) * {"ms": 0.001, "s": 1, None: 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]
    if not math.isfinite(value) or value <= 0 or value > MAX_DURATION:
        raise fail(f"{option}: must be positive and at most a week, got {text!r}")
    return value


#: The shortest ``--peer-timeout``. One call to a peer's worker process, to the answer, took
#: 0.3 ms for ONNX Runtime on an 8-element max pool it had built before and 0.8 ms with a new model
#: per call (this machine, quiet); under load it takes several times that. A limit below that calls
#: every answer a timeout, and a timeout weighs as a violation.
MIN_PEER_TIMEOUT = 0.01


def parse_peer_timeout(text: str | float) -> float:
    """``--peer-timeout``: a duration (:func:`parse_duration`) of at least :data:`MIN_PEER_TIMEOUT`."""
    value = parse_duration("--peer-timeout", text)
    if value < MIN_PEER_TIMEOUT:
        raise fail(f"--peer-timeout: must be at least {MIN_PEER_TIMEOUT * 1000:g}ms (no peer answers sooner: every "
                   f"call would count as a timeout), got {text!r}")
    return value


def writable_dir(option: str, path: Path) -> Path:
    """Check up front that ``path`` is (or can be created as) a writable folder; a usage error
    naming the option otherwise, before any work is done."""
    probe = path
    while not probe.exists() and not probe.is_symlink():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.is_symlink() and not probe.exists():  # mkdir would fail on it: "File exists"
        raise fail(f"{option}: {str(probe)!r} is a link to {os.readlink(probe)!r}, which does not exist")
    if probe.exists() and not probe.is_dir():
        raise fail(f"{option}: {str(probe)!r} exists and is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise fail(f"{option}: {str(probe)!r} is not writable")
    return path


#: The most worker processes ``--jobs`` accepts: four per core (peers wait on I/O at most).
MAX_JOBS = max(1, (os.cpu_count() or 1) * 4)


def check_jobs(jobs: int) -> int:
    if not 1 <= jobs <= MAX_JOBS:
        raise fail(f"--jobs: must lie in [1, {MAX_JOBS}] (four per core here), got {jobs}")
    return jobs


def parse_fail_on(text: str, option: str = "--fail-on") -> frozenset[str]:
    """``"violation,limitation"`` or ``"all"`` -> severity values; unknown names are usage errors."""
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    known = {s.value for s in Severity}
    if not names:  # an unset shell variable is no choice: the default would pass silently
        raise AttributeValueError(option, f"expected some of {', '.join(sorted(known))} (or all), got {text!r}")
    if names == ["all"]:
        return frozenset(s.value for s in Severity)
    bad = [n for n in names if n not in known]
    if bad:
        raise AttributeValueError(option, f"expected some of {', '.join(sorted(known))} (or all), got {bad[0]!r}")
    return frozenset(names)


#: ``--engine`` help, shared by every command that takes it (help and error say the same).
ENGINE_HELP = "Reference engine: numpy, c, or all (every engine built here)."


def engines_for(engine: str) -> list[str]:
    """``--engine``: numpy, c, or all (every engine built here); anything else is a usage error
    worded as the help."""
    if engine == "all":
        get_engine("auto")  # POOLCHECK_ISA naming a path this CPU cannot run is an error, not a NumPy-only run
        return available_engines()
    if engine not in ("numpy", "c"):
        raise AttributeValueError("--engine", f"expected numpy, c or all, got {engine!r}")
    get_engine(engine)  # a clear error when the C engine is not built here
    return [engine]


def write_report_set(result: object, report_dir: Path, *, to_stderr: bool = False) -> None:
    """Write the report set (replaced as a whole) and say where, on stderr when stdout carries JSON."""
    with user_errors():
        write_reports(result, report_dir)  # type: ignore[arg-type]
    (err_console if to_stderr else console).print(f"reports written to {safe(str(report_dir))}", markup=False,
                                                  highlight=False, soft_wrap=True)


def load_peers(peers: str, timeout: float) -> list[Any]:
    """The ``--peers`` list (``name:key=value,...`` options allowed); a plugin that exits or
    prints while it loads never ends the run nor mixes with the JSON output. A list without a
    name (an unset variable: "" or ",") is a usage error, not a run without peers."""
    if not peers.replace(",", "").strip():
        raise fail(f"--peers: expected peer names (comma-separated), got {peers!r}")
    try:
        with stdout_to_stderr():
            return resolve_peers(peers, load_timeout=timeout)
    except SystemExit as exc:
        raise PeerLoadError(f"--peers: a plugin called exit({exc.code!r}) while loading") from None


def exit_code(result: RunResult, fail_on: frozenset[str]) -> int:
    """2 when a case could not be judged (verdict error), 130 when interrupted, 1 when a check has
    a --fail-on severity, else 0."""
    if any(c.verdict == Verdict.ERROR for c in result.cases):
        return EXIT_USAGE
    if result.interrupted:
        return EXIT_INTERRUPTED
    for case in result.cases:
        for check in case.checks:
            if check.verdict in (Verdict.PASS, Verdict.SKIP):
                continue
            if check.severity in fail_on or (check.severity is None and check.verdict in FAILING
                                             and Severity.VIOLATION in fail_on):
                return EXIT_FAILURES
    return EXIT_OK
