"""Write every report format for one result into a folder, atomically.

Each file is rendered in memory first and then written through a temporary file in the same
folder and renamed over the target (:func:`poolcheck.cases.dump.write_text_atomic`), so a
killed or interrupted run leaves either the previous report or the new one, never a truncated
file. Rendering everything before writing anything also means a renderer error leaves the old
set untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from poolcheck.cases.dump import write_text_atomic
from poolcheck.errors import PoolcheckError
from poolcheck.report.html import to_html
from poolcheck.report.jsonfmt import to_json
from poolcheck.report.junit import to_junit
from poolcheck.report.markdown import to_markdown
from poolcheck.report.model import RunResult

#: File name -> renderer, in the order they are written.
REPORT_FILES: dict[str, Callable[[RunResult], str]] = {
    "result.json": to_json,
    "junit.xml": to_junit,
    "summary.md": to_markdown,
    "report.html": to_html,
}

#: ``poolcheck report --format`` names -> renderer.
FORMATS: dict[str, Callable[[RunResult], str]] = {
    "json": to_json,
    "junit": to_junit,
    "md": to_markdown,
    "html": to_html,
}


class ReportWriteError(PoolcheckError, OSError):
    """A report folder or file cannot be written."""


def render(result: RunResult, fmt: str) -> str:
    """Render ``result`` in one of :data:`FORMATS`."""
    try:
        return FORMATS[fmt](result)
    except KeyError:
        raise PoolcheckError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}") from None


def write_text(path: Path, text: str) -> Path:
    """Atomic write with a poolcheck error (naming the file) instead of a bare OSError."""
    try:
        written = write_text_atomic(path, text)
    except OSError as exc:
        raise ReportWriteError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return written


def write_reports(result: RunResult, directory: Path) -> list[Path]:
    """Write result.json, junit.xml, summary.md and report.html into ``directory`` (created if
    needed); returns the paths written."""
    texts = {name: fn(result) for name, fn in REPORT_FILES.items()}
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ReportWriteError(f"{directory}: not a folder")
    return [write_text(directory / name, text) for name, text in texts.items()]
