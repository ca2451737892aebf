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

DATA_ENV = "POOLCHECK_DATA_DIR"


def data_dir() -> Path:
    """The per-user data folder (not created here)."""
    override = os.environ.get(DATA_ENV, "").strip()
    return Path(override) if override else Path(platformdirs.user_data_dir("poolcheck", appauthor=False))


def finds_dir() -> Path:
    """Default folder of the fuzzer's case files (one YAML per new divergence)."""
    return data_dir() / "finds"


def examples_dir() -> Path:
    """Default hypothesis example database of the fuzzer."""
    return data_dir() / "examples"


def hypothesis_home() -> Path:
    """Hypothesis' own storage folder (so no ``.hypothesis/`` appears in the working directory)."""
    return data_dir() / "hypothesis"
