"""What many test files share: the tree's folders, running the real ``poolcheck`` command (in a
subprocess or in-process), and a built-in peer or a skip.

Importable from every test folder as ``support`` (pyproject's ``pythonpath = ["tests"]``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: This folder, the repository root, and the places tests read from.
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
PLANTED = TESTS / "planted_peers"
KERNELS = TESTS / "planted_kernels"
CORPUS = ROOT / "poolcheck" / "corpus"
SEED_FILE = CORPUS / "seeds" / "openvino-maxpool8.yaml"
SCHEMA_PATH = ROOT / "docs" / "report-schema.json"

#: A plain terminal of 200 columns: tables are not wrapped, no colour, no markup codes.
PLAIN = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


def cli_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m poolcheck``."""
    script = Path(sys.executable).with_name("poolcheck")
    return [str(script)] if script.exists() else [sys.executable, "-m", "poolcheck"]


def cli(*args: str, cwd: Path = ROOT, columns: int = 200, env: dict[str, str] | None = None,
        timeout: float = 300, plain: bool = True) -> subprocess.CompletedProcess[str]:
    """``poolcheck ARGS`` as a real command in a subprocess, from ``cwd``, on a terminal of
    ``columns`` columns, plain (no colour) unless ``plain=False``, importing this tree's poolcheck
    first; ``env`` adds to or overrides the environment."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    full_env = {**os.environ, **(PLAIN if plain else {}), "COLUMNS": str(columns), "PYTHONPATH": path, **(env or {})}
    return subprocess.run([*cli_command(), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full_env, check=False)


def invoke(*args: str, cwd: Path | None = None, monkeypatch: pytest.MonkeyPatch | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``poolcheck ARGS`` run in this process (typer's CliRunner: the same code from argument
    parsing to exit code, without a new interpreter), as a CompletedProcess. ``cwd`` needs
    ``monkeypatch`` (to change and restore the working folder). An exception that escapes the
    command -- a traceback, in the real command -- fails the test here."""
    from typer.testing import CliRunner

    from poolcheck.cli import app

    if cwd is not None:
        assert monkeypatch is not None, "invoke(cwd=...) needs monkeypatch"
        monkeypatch.chdir(cwd)
    result = CliRunner().invoke(app, list(args), env={**PLAIN, **(env or {})})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"poolcheck {' '.join(args)} raised {result.exception!r}") from result.exception
    return subprocess.CompletedProcess(["poolcheck", *args], result.exit_code, result.stdout, result.stderr)


def available_peer(name: str) -> Any:
    """The built-in peer ``name``, or skip the test saying why it is not available here."""
    from poolcheck.peers import resolve_peer

    peer = resolve_peer(name)
    ok, why = peer.available()
    if not ok:
        pytest.skip(f"{name} is not available: {why}")
    return peer


def drawn(strategy: Any, condition: Callable[[Any], bool], what: str, max_examples: int = 3000) -> Any:
    """A value ``strategy`` draws that meets ``condition`` (``what``, for the failure message)
    within ``max_examples`` draws, else the test fails: ``hypothesis.find`` without its shrinking,
    which a test of what the generator reaches does not need (shrinking took 85 % of such tests' CPU)."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample

    try:
        return find(strategy, condition, settings=settings(max_examples=max_examples, database=None, deadline=None,
                                                           phases=[Phase.generate],
                                                           suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        pytest.fail(f"no draw of {max_examples} reaches {what}")


def draw_window(rng: Any) -> tuple[int, list[int], list[int], list[int], list[int]]:
    """The start of a spread's random configuration (``rng``: a NumPy Generator): rank, kernel,
    strides, dilations (dilated two times in five) and begin pads below the kernel."""
    r = int(rng.integers(1, 4))
    k = [int(v) for v in rng.integers(1, 4, r)]
    s = [int(v) for v in rng.integers(1, 4, r)]
    d = [int(v) for v in rng.integers(1, 3, r)] if rng.random() < 0.4 else [1] * r
    pb = [int(rng.integers(0, kk)) for kk in k]
    return r, k, s, d, pb
