"""Planted-bug kernels (tests/planted_kernels/) through ``poolcheck fuzz --exit-first``: each is a
spec violation under one condition (rank 5 only, dilation with ceil, float16, int8 extremes, batch
and channels > 1, same_lower with an odd total, ...), including issue 20's three: ceil_torch's
last-window test made against H, integer max padded with 0, and a converter in front of ONNX
Runtime writing the pads interleaved. Each must come out as at most two NEW rows (one root cause,
one finding), the first carrying the kernel's expected name or an honest "unexplained". A faithful
kernel and a faithful ONNX Runtime converter stay silent.

No timing is asserted; docs/fuzzing.md gives the measured detection times.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest
from support import KERNELS
from typer.testing import CliRunner

from poolcheck.cli import app
from poolcheck.results import Signature

KERNELS_DIR = KERNELS
KERNELS = sorted(p.stem for p in KERNELS_DIR.glob("k*.py"))
#: Issue 20's own three bugs run in every suite run; the others are marked slow.
ISSUE_BUGS = {"k01_ceil_torch_last_window_vs_h", "k02_int_max_pad_zero", "k03_ort_pads_interleaved"}
runner = CliRunner()


def fuzz(path: Path, tmp_path: Path, *args: str) -> tuple[int, list[str], str]:
    report = tmp_path / "report"
    result = runner.invoke(app, ["fuzz", "--no-progress", "--peers", str(path), "--oracles", "peers", "--seed", "1",
                                 "--no-isolation", "--no-bundled-known", "--save-cases", str(tmp_path / "finds"),
                                 "--database", str(tmp_path / "db"), "--report-dir", str(report), *args])
    new = json.loads((report / "result.json").read_text())["fuzz"]["new"] if (report / "result.json").exists() else []
    return result.exit_code, new, result.output


@pytest.mark.parametrize("kernel", [pytest.param(k, marks=() if k in ISSUE_BUGS else pytest.mark.slow)
                                    for k in KERNELS])
def test_a_planted_kernel_is_one_finding_with_the_right_name(kernel: str, tmp_path: Path) -> None:
    path = KERNELS_DIR / f"{kernel}.py"
    module = runpy.run_path(str(path))
    expected = tuple(module["EXPECTED"])
    # FUZZ_ARGS: a kernel whose bug is a violation under one convention only is fuzzed under it
    code, new, out = fuzz(path, tmp_path, "--exit-first", "--time-budget", "60s", *module.get("FUZZ_ARGS", ()))
    assert code == 1, out
    assert 1 <= len(new) <= 2, new
    details = [Signature.parse(s).detail for s in new]
    if expected == ("unexplained",):
        assert all(d.startswith(("unexplained", "shape:")) for d in details), details
    else:
        assert details[0] in expected, details


@pytest.mark.parametrize("control", ["faithful", "faithful_ort"])
def test_faithful_kernels_stay_silent(control: str, tmp_path: Path) -> None:
    code, new, out = fuzz(KERNELS_DIR / f"{control}.py", tmp_path, "--max-examples", "300")
    assert code == 0, out
    assert new == []


@pytest.mark.slow
def test_jobs_group_as_one_process_does(tmp_path: Path) -> None:
    """Two processes find the same bug on their own seeds; the campaign regroups their examples:
    still one row, under the same name as one process gives."""
    path = KERNELS_DIR / "k01_ceil_torch_last_window_vs_h.py"
    code, new, out = fuzz(path, tmp_path, "--jobs", "2", "--max-examples", "400")
    assert code == 1, out
    assert [Signature.parse(s).detail for s in new] == ["rounding:ceil_torch-last-window-vs-H"], new
