"""The replay line ``poolcheck fuzz`` prints reproduces when pasted in another folder: a plugin
given by a relative path is named by its absolute path there."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

from support import PLANTED, cli


def _fuzz(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return cli("fuzz", *args, cwd=cwd, columns=400)


def test_the_replay_line_of_a_relative_plugin_path_works_from_another_folder(tmp_path: Path) -> None:
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    shutil.copy(PLANTED / "correct.py", here / "mine.py")
    args = ["--no-progress", "--no-bundled-known", "--peers", "./mine.py", "--max-examples", "3",
            "--ops", "maxpool", "--ranks", "3", "--dtypes", "float32", "--save-cases", str(tmp_path / "finds")]
    first = _fuzz(args, here)
    assert first.returncode == 0, first.stdout + first.stderr
    (line,) = [line for line in first.stdout.splitlines() if line.startswith("replay: poolcheck fuzz ")]
    replay = shlex.split(line[len("replay: "):])
    assert replay[replay.index("--peers") + 1] == str(here / "mine.py")
    again = _fuzz([*replay[2:], "--no-progress", "--no-bundled-known", "--save-cases", str(tmp_path / "finds")],
                  elsewhere)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "planted-correct" in again.stdout
