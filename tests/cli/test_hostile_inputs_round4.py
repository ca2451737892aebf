"""A fourth round of hostile inputs, through the real commands: each bad input is one line naming
what is wrong and exit 2 (never a traceback, never a verdict for something the user did not ask)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import invoke

HEAD = "schema: poolcheck.case/1\ncases:\n"
GOOD = """\
  - id: ok-case
    op: MaxPool-22
    attributes: {kernel_shape: [2]}
    input: [[[1, 2, 3]]]
    expected: {values: [[[2, 3]]]}
"""


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_a_file_id_target_naming_no_case_is_an_error_beside_other_targets(tmp_path: Path) -> None:
    """`poolcheck run a.yaml::typo b.yaml` ran b.yaml and exited 0: a mistyped replay target was
    dropped without a word as soon as another target selected something (and `a.yaml::typo
    a.yaml::ok-case` judged ok-case alone). Each such target is now an error line naming the file
    and the id, exit 2; the other targets still run."""
    (tmp_path / "a.yaml").write_text(HEAD + GOOD)
    (tmp_path / "b.yaml").write_text(HEAD + GOOD.replace("ok-case", "b-case"))
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for targets in ([f"{a}::typo", str(b)], [f"{a}::typo", f"{a}::ok-case"], [f"{a}::", str(b)]):
        r = invoke("run", "-q", "--engine", "numpy", *targets)
        assert r.returncode == 2, (targets, r.stdout + r.stderr)
        [line] = error_lines(r.stderr)
        wanted = targets[0].rpartition("::")[2]
        if wanted:
            assert line.startswith(f"error: {a}: case {wanted!r}: no case has this id"), line
        else:
            assert line.startswith(f"error: {a}: FILE::ID: expected a case id") and "empty string" in line, line
        assert "pass" in r.stdout  # the target beside it still ran
    r = invoke("run", "-q", "--engine", "numpy", f"{a}::typo")
    assert r.returncode == 2 and "no case has this id" in " ".join(error_lines(r.stderr)), r.stderr


@pytest.mark.parametrize("command", ["run", "explain", "repro"])
@pytest.mark.parametrize("value", ["", " ", ","])
def test_an_empty_k_is_a_usage_error(tmp_path: Path, command: str, value: str) -> None:
    """`-k ""` (an unset shell variable) selected every case in `run` and, in `explain`, the one
    case of a file or the first substring match (every id holds ""); `FILE::` (an empty id) in
    `explain` likewise."""
    (tmp_path / "c.yaml").write_text(HEAD + GOOD)
    args = [command, str(tmp_path / "c.yaml"), "-k", value]
    if command == "repro":
        args += ["-o", str(tmp_path / "out")]
    r = invoke(*args)
    assert r.returncode == 2, (command, value, r.stdout + r.stderr)
    line = one_error_line(r.stderr)
    assert line.startswith("error: -k: expected a case id") and "empty" in line, line
    assert not (tmp_path / "out").exists()


def test_explain_of_an_empty_case_id_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(HEAD + GOOD)
    r = invoke("explain", f"{tmp_path / 'c.yaml'}::")
    assert r.returncode == 2, r.stdout + r.stderr
    line = one_error_line(r.stderr)
    assert "expected a case id" in line and "empty" in line, line
