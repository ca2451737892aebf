"""Writing files and redirecting streams, written once for every floor.

- :func:`write_text_atomic`: one file, all or nothing (a temp file beside it, fsync, rename).
- :func:`write_folder_atomic`: a set of files as one folder, all or nothing (a staged folder
  beside it, each file fsynced, then swapped in by rename).
- :func:`stdout_to_stderr`: everything printed to standard output -- by Python or by native code
  on file descriptor 1 -- goes to standard error meanwhile; works where fd 1 is missing.
- :func:`native_stderr_silenced`: native code's own logging on file descriptor 2 is dropped.
- :func:`resolve_path`: ``Path.resolve`` with a loop of symbolic links as the OSError it is.

Files and folders get the permissions a plain ``open``/``mkdir`` would give under the current
umask (``mkstemp``/``mkdtemp`` make them private).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path


def resolve_path(path: str | Path) -> Path:
    """``path`` made absolute with its symbolic links followed (``Path.resolve``). A loop of links
    raises OSError (ELOOP, "Too many levels of symbolic links") like any other unreadable path:
    Python 3.11 and 3.12 raise RuntimeError there, which no caller's ``except OSError`` catches."""
    try:
        return Path(path).resolve()
    except RuntimeError:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path)) from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temp file in the same folder, then rename); the
    parent folders are created. A reader sees the old file or the new one, never a part.

    A symbolic link stays: the file it points at is written. A pipe or character device
    (``/dev/null``, ``/dev/stdout``, a FIFO) is written in place -- a rename would replace the
    device itself; any other kind of file (block device, socket) is an OSError."""
    target = Path(path)
    if target.is_symlink():
        target = resolve_path(target)
    with contextlib.suppress(FileNotFoundError):
        mode = target.stat().st_mode
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(text)
            return target
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # a folder: the rename says so
            raise OSError(errno.EINVAL, "not a regular file", str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


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


def write_folder_atomic(directory: str | Path, texts: Mapping[str, str]) -> list[Path]:
    """Make ``directory`` hold exactly the files ``texts`` names (name -> text), as one set.

    The files are written (and fsynced) into a fresh folder beside ``directory``, which is then
    swapped in by rename: an atomic exchange where the system has one, else two renames (the
    previous folder is put back if the second fails). A killed process leaves the previous set
    or the new one, never a mix, and no temporary file inside ``directory``. Whatever else
    ``directory`` held is replaced with it: callers check it holds nothing else first. Raises
    OSError."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".new", dir=directory.parent))
    try:
        for name, text in texts.items():
            with open(staging / name, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(staging, 0o777 & ~_umask())
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
    return [directory / name for name in texts]


@contextlib.contextmanager
def stdout_to_stderr(active: bool = True) -> Iterator[None]:
    """Send everything written to stdout -- ``print`` and native code writing to fd 1 alike --
    to stderr while the block runs, so chatter (a peer's, a plugin's) never mixes with
    machine-readable output. Without an fd 1 or fd 2 (embedded interpreters, a closed stdout)
    only Python's ``sys.stdout`` is redirected. ``active=False`` changes nothing."""
    if not active:
        yield
        return
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    saved: int | None = None
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        if saved is not None:
            os.close(saved)
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


@contextlib.contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """Native code's own logging on file descriptor 2 goes to the null device while the block
    runs (Python's ``sys.stderr`` is left alone). Without an fd 2 nothing changes."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
