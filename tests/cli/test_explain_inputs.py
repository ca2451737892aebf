"""``poolcheck explain`` on inputs it once got wrong: a bare case id (searched in the shipped
corpus), a document whose output shape differs from the reference's (it showed an element where
everyone agrees, without a word on the shapes), and a window grid that must read without colour."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import yaml
from typer.testing import CliRunner

from poolcheck.cli import app

runner = CliRunner()


def _explain(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, ["explain", *args], env={"COLUMNS": "200", "NO_COLOR": "1"})
    return r.exit_code, r.stdout, r.stderr


def test_a_bare_case_id_is_found_in_the_shipped_corpus() -> None:
    code, out, err = _explain("onnx-averagepool19-2d-ceil")
    assert code == 0, out + err
    assert out.startswith("onnx-averagepool19-2d-ceil  AveragePool-19")
    code, out, err = _explain("no-case-has-this-id")
    assert code == 2 and "no case of the shipped corpus" in err and "Traceback" not in out + err


def _shape_case(tmp_path: Path, expected: np.ndarray) -> Path:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    case = {"id": "shape", "op": "MaxPool-22", "attributes": {"kernel_shape": [2, 2], "strides": [2, 2]},
            "input": x.tolist(), "expected": {"values": expected.tolist()}}
    path = tmp_path / "shape.yaml"
    path.write_text(yaml.safe_dump({"schema": "poolcheck.case/1", "cases": [case]}))
    return path


def test_a_shape_mismatch_is_said_and_the_element_shown_is_a_disagreement_when_there_is_one(tmp_path: Path) -> None:
    right = np.array([[[[5, 7], [13, 15]]]], np.float32)  # 2x2 blocks of arange(16), by hand
    extra = np.concatenate([right, np.zeros((1, 1, 2, 1), np.float32)], axis=3)  # ceil-like 2x3
    code, out, _ = _explain(f"{_shape_case(tmp_path, extra)}::shape")
    assert code == 0, out
    flat = " ".join(out.split())
    assert ("document gives an output of shape 1x1x2x3, the reference 1x1x2x2: the shapes differ; "
            "this element, which both hold, agrees") in flat
    wrong = extra.copy()
    wrong[0, 0, 1, 0] = 99  # and one shared element differs: that one is shown
    code, out, _ = _explain(f"{_shape_case(tmp_path, wrong)}::shape")
    assert code == 0, out
    flat = " ".join(out.split())  # the console may wrap (its width is fixed once per process)
    assert "output element (0, 0, 1, 0)" in flat
    assert "the shapes differ" in flat and "which both hold, agrees" not in flat


def test_the_window_grid_marks_taps_and_argmax_without_colour(tmp_path: Path) -> None:
    right = np.array([[[[5, 7], [13, 15]]]], np.float32)
    code, out, _ = _explain(f"{_shape_case(tmp_path, right)}::shape", "--at", "0,0,1,0")
    assert code == 0, out
    rows = {int(line.split()[0]): line.split()[1:] for line in out.splitlines() if re.match(r"^\s*[0-3]\s", line)}
    # Output (1, 0) of a 2x2/stride-2 max pool: input rows 2-3, columns 0-1; the max is 13 at (3, 1).
    assert rows[2] == ["[8]", "[9]", "10", "11"] and rows[3] == ["[12]", "<13>", "14", "15"], out
    assert rows[0] == ["0", "1", "2", "3"]
    flat = " ".join(out.split())
    assert "[1.5] window tap" in flat and "<9> reference argmax" in flat
