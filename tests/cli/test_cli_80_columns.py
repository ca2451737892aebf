"""Every command's output is readable at 80 columns (tables fold, never cut a name with an
ellipsis; only pasteable replay commands and one-line errors run longer), and nothing poolcheck
prints refers to project-internal material (issue numbers, "standing targets"). ``bench`` is
covered by its own tests."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest
from support import cli as real_command

import poolcheck

PACKAGE = Path(poolcheck.__file__).resolve().parent
ROOT = PACKAGE.parent
INTERNAL = re.compile(r"\bissues? #?\d+|standing target|\bthe lead\b", re.IGNORECASE)


def cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return real_command(*args, cwd=tmp_path, columns=80, env={"POOLCHECK_DATA_DIR": str(tmp_path / "data")},
                        timeout=600)


def long_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > 80 and not line.startswith(("replay:", "error:"))]


def test_fuzz_table_folds_subjects_instead_of_cutting_them(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    proc = cli("fuzz", "--max-examples", "30", "--seed", "718888", "--peers", "onnxruntime", "--no-progress",
               tmp_path=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert "…" not in proc.stdout, proc.stdout
    assert long_lines(proc.stdout) == []
    # the document oracle's subject is longer than the column: it is folded, whole
    assert "openvino-written" in proc.stdout and "rule" in proc.stdout


@pytest.mark.parametrize("args", [("run", "-q"), ("run", "-k", "ov-shape-rules-ex1"),
                                  ("shape", "--input", "1,64,112,112", "--kernel", "3,3", "--strides", "2,2",
                                   "--pads", "1,1,1,1", "--ceil-mode", "--count-include-pad", "--convention", "all")])
def test_run_and_shape_fit_80_columns(args: tuple[str, ...], tmp_path: Path) -> None:
    proc = cli(*args, tmp_path=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert "…" not in proc.stdout and long_lines(proc.stdout) == [], proc.stdout


def _string_constants(path: Path) -> list[tuple[int, str]]:
    """Every string constant of a module except docstrings (they are not printed; the commands'
    docstrings are checked through --help)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def test_no_string_poolcheck_prints_refers_to_project_internal_material() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "bench" in path.relative_to(PACKAGE).parts:
            continue
        found += [f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}" for line, text in _string_constants(path)
                  if INTERNAL.search(text)]
    assert found == []


def test_help_texts_fit_80_columns_and_stay_external(tmp_path: Path) -> None:
    for command in ("", "run", "shape", "audit", "fuzz", "explain", "export", "report", "doctor"):
        proc = cli(*([command] if command else []), "--help", tmp_path=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert long_lines(proc.stdout) == [], proc.stdout
        assert not INTERNAL.search(proc.stdout), proc.stdout
