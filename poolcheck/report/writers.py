"""Write every report format for one result into a folder, as a set.

Every file is rendered in memory first (a renderer error leaves the old set untouched), then
written as one folder by :func:`poolcheck.files.write_folder_atomic` (staged beside the target,
swapped in by rename): a killed run leaves either the previous set or the new one, never a mix. A target
that holds other files than a report set is updated file by file (each file atomically), so
``--report-dir .`` never moves anything else.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from poolcheck.errors import PoolcheckError
from poolcheck.files import resolve_path, write_folder_atomic, write_text_atomic
from poolcheck.report.html import to_html
from poolcheck.report.jsonfmt import to_json
from poolcheck.report.junit import to_junit
from poolcheck.report.markdown import to_markdown
from poolcheck.results import RunResult

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


def check_report_dir(directory: Path) -> Path:
    """Fail early (before any work) when ``directory`` cannot receive a report set: it is not a
    folder, or the folder that would hold it cannot be written."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ReportWriteError(f"{directory}: not a folder")
    try:
        parent = resolve_path(directory).parent
    except OSError as exc:  # a loop of symbolic links
        raise ReportWriteError(f"{directory}: cannot write reports here ({exc.strerror})") from None
    probe = parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ReportWriteError(f"{directory}: cannot write reports here ({probe} is not a folder)")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ReportWriteError(f"{directory}: cannot write reports here ({probe} is not writable)")
    if directory.exists() and not os.access(directory, os.W_OK | os.X_OK):
        raise ReportWriteError(f"{directory}: cannot write reports here (the folder is not writable)")
    return directory


def _is_report_set(directory: Path) -> bool:
    """Whether ``directory`` holds nothing but report files (safe to replace as a whole)."""
    return all(p.name in REPORT_FILES for p in directory.iterdir())


def write_reports(result: RunResult, directory: Path) -> list[Path]:
    """Write result.json, junit.xml, summary.md and report.html into ``directory`` as one set
    (created if needed); returns the paths written."""
    texts = {name: fn(result) for name, fn in REPORT_FILES.items()}
    directory = Path(directory)
    check_report_dir(directory)
    if directory.is_symlink():
        directory = directory.resolve()  # replace the folder it points to, keep the link
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        if directory.exists() and not _is_report_set(directory):
            return [write_text(directory / name, text) for name, text in texts.items()]
        return write_folder_atomic(directory, texts)
    except OSError as exc:
        raise ReportWriteError(f"{directory}: cannot write reports: {exc.strerror or exc}") from None
