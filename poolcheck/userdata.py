"""Where poolcheck keeps what the user did not ask to put elsewhere.

Fuzz finds and the hypothesis example database default to a per-user data folder (platformdirs'
``user_data_dir("poolcheck")``, e.g. ``~/.local/share/poolcheck`` on Linux), never the current
working directory. ``POOLCHECK_DATA_DIR`` overrides it (tests, CI sandboxes). Commands print the
folder they wrote to.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from poolcheck.errors import PoolcheckError

DATA_ENV = "POOLCHECK_DATA_DIR"


class DataDirError(PoolcheckError, OSError):
    """The per-user data folder cannot be used (one line naming it, exit 2)."""


def data_dir() -> Path:
    """The per-user data folder (not created here)."""
    override = os.environ.get(DATA_ENV, "").strip()
    return Path(override) if override else Path(platformdirs.user_data_dir("poolcheck", appauthor=False))


def _folder(sub: str) -> Path:
    """``data_dir() / sub``, created (with its parents) if needed; raises :class:`DataDirError`
    naming the folder (and ``POOLCHECK_DATA_DIR`` when it is set) when it cannot be."""
    root = data_dir()
    path = root / sub
    where = f"{DATA_ENV}={os.environ[DATA_ENV].strip()}" if os.environ.get(DATA_ENV, "").strip() else "the data folder"
    if root.is_symlink() and not root.exists():
        raise DataDirError(f"{where}: {root} is a link to {os.readlink(root)!r}, which does not exist")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        pass  # a file where the folder goes: said below
    except OSError as exc:
        raise DataDirError(f"{where}: cannot create {path}: {exc.strerror or exc}") from None
    if not path.is_dir():
        raise DataDirError(f"{where}: {path} exists and is not a folder")
    return path


def finds_dir() -> Path:
    """Default folder of the fuzzer's case files (one YAML per new divergence), created if needed."""
    return _folder("finds")


def examples_dir() -> Path:
    """Default hypothesis example database of the fuzzer, created if needed."""
    return _folder("examples")


def hypothesis_home() -> Path:
    """Hypothesis' own storage folder (so no ``.hypothesis/`` appears in the working directory)."""
    return data_dir() / "hypothesis"
