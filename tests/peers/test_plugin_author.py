"""Issue 9's user story, through the real command: a plugin author in an empty folder fuzzes a
faithful implementation (exit 0, nothing written beside it) and one with a one-line bug (exit 1,
exactly that bug, classified, with a replay that reproduces it when pasted)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import PLANTED


def _fuzz(cwd: Path, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "POOLCHECK_DATA_DIR": str(data), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "poolcheck", "fuzz", "--no-progress", "--seed", "1",
                           "--max-examples", "600", *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


@pytest.mark.slow
def test_faithful_plugin_in_an_empty_folder_passes_and_writes_nothing_there(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    shutil.copy(PLANTED / "correct.py", work / "my_pool.py")
    proc = _fuzz(work, tmp_path / "data", "--peers", "my_pool.py")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 new divergence(s)" in " ".join(proc.stdout.split())
    assert sorted(p.name for p in work.iterdir()) == ["my_pool.py"]  # no fuzz-cases/, no .hypothesis/


@pytest.mark.slow
def test_a_one_line_bug_is_found_alone_classified_and_replayed(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    shutil.copy(PLANTED / "divisor_counts_padding.py", work / "my_pool.py")
    proc = _fuzz(work, tmp_path / "data", "--peers", "my_pool.py", "--ops", "avgpool")
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-2000:]
    assert "1 new divergence(s)" in " ".join(out.split())
    assert "divisor=padded" in out and "violation" in out
    replays = re.findall(r"^replay: (poolcheck run .*)$", out, flags=re.M)
    assert len(replays) == 1
    # pasted from another folder, the replay reproduces the verdict: a failure of the plugin
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    argv = shlex.split(replays[0])
    run = subprocess.run([sys.executable, "-m", "poolcheck", *argv[1:]], capture_output=True, text=True,
                         cwd=elsewhere, timeout=300)
    assert run.returncode == 1, run.stdout[-3000:]
    assert "1 fail" in run.stdout and "violation" in run.stdout
    assert sorted(p.name for p in work.iterdir()) == ["my_pool.py"]
