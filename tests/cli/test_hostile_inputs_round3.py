"""A third round of hostile inputs, through the real commands: each bad input is one line naming
what is wrong and exit 2 (never a traceback, never a verdict), and text from files and models
stays inert on the terminal."""

from __future__ import annotations

from pathlib import Path

from support import invoke

HEAD = "schema: poolcheck.case/1\ncases:\n"
GOOD = """\
  - id: ok-case
    op: MaxPool-22
    attributes: {kernel_shape: [2]}
    input: [[[1, 2, 3]]]
    expected: {values: [[[2, 3]]]}
"""


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_a_symlink_loop_is_one_error_line(tmp_path: Path) -> None:
    """A loop of symbolic links as a case file, a report folder or a model (Path.resolve raises
    RuntimeError there on Python 3.11/3.12: it was a traceback)."""
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    (tmp_path / "ok.yaml").write_text(HEAD + GOOD)
    loop = str(tmp_path / "a.yaml")
    for args in (["run", "-q", loop], ["run", "-q", loop + "::some-id"],
                 ["run", "-q", str(tmp_path / "ok.yaml"), "--report-dir", loop],
                 ["audit", loop]):
        r = invoke(*args)
        assert r.returncode == 2, (args, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert "a.yaml" in line and "symbolic links" in line, (args, line)
