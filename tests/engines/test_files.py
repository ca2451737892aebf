"""poolcheck/files.py: atomic file and folder writes, and stream redirection that survives a
process without a standard output."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from poolcheck import files


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_atomic_text_write_gives_the_usual_permissions(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        written = files.write_text_atomic(tmp_path / "a" / "b.txt", "hello")
    finally:
        os.umask(old)
    assert written.read_text() == "hello"
    assert _mode(written) == 0o640  # 0o666 under the umask, not mkstemp's private 0o600
    assert [p.name for p in written.parent.iterdir()] == ["b.txt"]  # no temp file left


def test_a_failed_atomic_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "t.txt"
    target.write_text("old")

    def no_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", no_replace)
    with pytest.raises(OSError, match="No space"):
        files.write_text_atomic(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["t.txt"]


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_folder_write_replaces_the_whole_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool) -> None:
    if not exchange:
        monkeypatch.setattr(files, "_exchange", lambda a, b: False)
    target = tmp_path / "set"
    files.write_folder_atomic(target, {"a.txt": "1", "gone.txt": "x"})
    old = os.umask(0o022)
    try:
        paths = files.write_folder_atomic(target, {"a.txt": "2", "b.txt": "3"})
    finally:
        os.umask(old)
    assert paths == [target / "a.txt", target / "b.txt"]
    assert {p.name: p.read_text() for p in target.iterdir()} == {"a.txt": "2", "b.txt": "3"}
    assert _mode(target) == 0o755  # mkdtemp's 0o700 widened to what mkdir gives
    assert [p.name for p in tmp_path.iterdir()] == ["set"]  # no staging or old folder left


def test_stdout_to_stderr_moves_python_and_native_writes(capfd: pytest.CaptureFixture[str]) -> None:
    with files.stdout_to_stderr():
        print("from python")
        os.write(1, b"from fd 1\n")
    print("after")
    out, err = capfd.readouterr()
    assert out == "after\n"
    assert "from python" in err and "from fd 1" in err


def test_inactive_stdout_to_stderr_changes_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    with files.stdout_to_stderr(active=False):
        print("stays")
    assert capfd.readouterr().out == "stays\n"


def test_stdout_to_stderr_without_a_standard_output(tmp_path: Path) -> None:
    """A process started with fd 1 closed (``poolcheck run --json >&-``): the redirection falls
    back to Python's sys.stdout and the block still runs."""
    script = textwrap.dedent("""
        import os, sys
        os.close(1)
        from poolcheck.files import stdout_to_stderr
        with stdout_to_stderr():
            print("chatter")
        sys.stderr.write("done\\n")
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(files.__file__).resolve().parent.parent)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert "chatter" in out.stderr and "done" in out.stderr


def test_native_stderr_is_silenced_and_restored(capfd: pytest.CaptureFixture[str]) -> None:
    with files.native_stderr_silenced():
        os.write(2, b"native noise\n")
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"
