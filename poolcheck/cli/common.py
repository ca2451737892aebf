"""Shared CLI plumbing: the console, exit codes, and error-to-exit mapping."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console

from poolcheck.errors import PoolcheckError

EXIT_OK = 0
EXIT_FAILURES = 1
EXIT_USAGE = 2

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print a one-line error to stderr and return the Exit to raise."""
    err_console.print(f"[bold red]error:[/] {message}", markup=True, soft_wrap=True)
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
        sys.exit(130)


def parse_int_list(option: str, text: str | None) -> list[int] | None:
    """Parse "2,2" into [2, 2]; a bad value is a usage error naming the option."""
    if text is None:
        return None
    try:
        return [int(part) for part in text.replace(" ", "").split(",") if part != ""]
    except ValueError:
        raise fail(f"{option}: expected comma-separated integers, got {text!r}") from None
