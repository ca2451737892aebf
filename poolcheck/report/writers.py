"""Write every report format for one result into a folder, as a set.

Every file is rendered in memory first (a renderer error leaves the old set untouched), written
into a fresh temporary folder beside the target, and the folder is then swapped in by rename
(an atomic exchange where the system has one, else two renames). A killed run leaves either the
previous set or the new one, never a mix, and no temporary file inside the target. A target
that holds other files than a report set is updated file by file (each file atomically), so
``--report-dir .`` never moves anything else.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from poolcheck.cases.dump import write_text_atomic
from poolcheck.errors import PoolcheckError
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
    parent = directory.resolve().parent
    probe = parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ReportWriteError(f"{directory}: cannot write reports here ({probe} is not writable)")
    if directory.exists() and not os.access(directory, os.W_OK | os.X_OK):
        raise ReportWriteError(f"{directory}: cannot write reports here (the folder is not writable)")
    return directory


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE); False when unsupported."""
    if not hasattr(os, "uname") or os.uname().sysname != "Linux":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


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
        staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".new", dir=directory.parent))
        try:
            for name, text in texts.items():
                with open(staging / name, "w", encoding="utf-8") as fh:
                    fh.write(text)
                    fh.flush()
                    os.fsync(fh.fileno())
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(staging, 0o777 & ~umask)  # mkdtemp folders are private; give the usual permissions
            if not directory.exists():
                os.rename(staging, directory)
            elif _exchange(staging, directory):
                shutil.rmtree(staging, ignore_errors=True)  # now holds the previous set
            else:
                old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".old", dir=directory.parent))
                try:
                    os.rename(directory, old / "set")
                    try:
                        os.rename(staging, directory)
                    except OSError:
                        os.rename(old / "set", directory)  # put the previous set back
                        raise
                finally:
                    shutil.rmtree(old, ignore_errors=True)
        finally:
            if staging.exists() and staging != directory:
                shutil.rmtree(staging, ignore_errors=True)
    except OSError as exc:
        raise ReportWriteError(f"{directory}: cannot write reports: {exc.strerror or exc}") from None
    return [directory / name for name in texts]
