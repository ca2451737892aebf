"""Options and environment that point somewhere wrong get one line and exit 2, at once: a data
folder (``POOLCHECK_DATA_DIR``) under /proc, behind a dangling link or on a file; a ``--database``
URL of another scheme; a ``--cluster`` port out of range, closed, or held by something that is
not a Dask scheduler (which Dask's own connect waits on without end)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from poolcheck.cli import app

runner = CliRunner()


def _fuzz(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["fuzz", "--no-progress", "--peers", "none", "--max-examples", "2",
                                 "--no-bundled-known", *args])
    return result.exit_code, result.output


def _one_line(code: int, output: str, message: str) -> None:
    assert code == 2, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    assert message in " ".join(output.split()), output


@pytest.mark.parametrize("kind", ["proc", "dangling", "file"])
def test_a_data_folder_that_cannot_be_one_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           kind: str) -> None:
    if kind == "proc":
        folder, message = Path("/proc/poolcheck-data-folder"), "cannot create /proc/poolcheck-data-folder/finds"
    elif kind == "dangling":
        folder, message = tmp_path / "data", "which does not exist"
        folder.symlink_to(tmp_path / "gone")
    else:
        folder, message = tmp_path / "data", "Not a directory"
        folder.write_text("my notes")
    monkeypatch.setenv("POOLCHECK_DATA_DIR", str(folder))
    code, output = _fuzz()
    _one_line(code, output, f"POOLCHECK_DATA_DIR={folder}")
    assert message in output
    assert not (tmp_path / "gone").exists()


def test_a_database_url_of_another_scheme_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = _fuzz("--database", "http://example.com/db")
    _one_line(code, output, "--database: expected a folder or redis://")
    assert list(tmp_path.iterdir()) == []  # no folder named http: was made


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port where something listens, accepts, and never says anything (as an HTTP server
    waiting for its request does)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for s in held:
        s.close()
    server.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fuzz_cluster(address: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("distributed")
    return subprocess.run([sys.executable, "-m", "poolcheck", "fuzz", "--cluster", address, "--peers", "none",
                           "--max-examples", "2", "--no-progress", "--no-bundled-known"],
                          capture_output=True, text=True, timeout=50, cwd=tmp_path, env=os.environ.copy())


@pytest.mark.parametrize("kind", ["port-out-of-range", "closed-port", "not-a-scheduler"])
def test_a_cluster_address_that_is_no_scheduler_is_one_line(tmp_path: Path, silent_port: int, kind: str) -> None:
    if kind == "port-out-of-range":
        address, message = "tcp://127.0.0.1:99999", "--cluster: the port must be a number in [1, 65535], got '99999'"
    elif kind == "closed-port":
        port = _closed_port()
        address, message = f"tcp://127.0.0.1:{port}", f"nothing answers at 127.0.0.1:{port}"
    else:
        address, message = f"tcp://127.0.0.1:{silent_port}", "not a Dask scheduler (no Dask greeting within 5 s)"
    proc = _fuzz_cluster(address, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert message in proc.stderr
