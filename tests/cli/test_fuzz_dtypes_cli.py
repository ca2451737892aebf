"""``poolcheck fuzz`` without --dtypes draws only the element types some peer of the campaign
takes (a plugin declaring float32 only: float32 alone), its replay line names that list and
reproduces the campaign; an explicit --dtypes is kept as given, with one warning line when no peer
takes any of it."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from support import PLANTED, cli

FLOAT32_ONLY = str(PLANTED / "float32_only.py")


def _fuzz(tmp_path: Path, name: str, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """A campaign (the bundled registry knows the document errata it meets: a new find would be
    saved in the example database and replayed first by the next run, which then differs)."""
    report = tmp_path / name
    run = cli("fuzz", "--no-progress", "--no-isolation", "--save-cases", str(tmp_path / "finds"),
              "--report-dir", str(report), *args, columns=400)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return run, json.loads((report / "result.json").read_text())["fuzz"]


def _drawn_types(fz: dict[str, Any]) -> set[str]:
    """The element types the engine judged (its coverage of the dtype-* regions)."""
    return {region.removeprefix("dtype-") for region in fz["coverage"]["c"] if region.startswith("dtype-")}


def test_a_campaign_draws_what_its_peer_takes_and_the_replay_says_so(tmp_path: Path) -> None:
    run, fz = _fuzz(tmp_path, "first", "--peers", FLOAT32_ONLY, "--max-examples", "12", "--seed", "4",
                    "--database", str(tmp_path / "db"))
    assert _drawn_types(fz) == {"float32"}
    assert "warning" not in run.stderr
    replay = shlex.split(fz["replay"])
    assert replay[replay.index("--dtypes") + 1] == "float32"
    # the replay line, pasted, runs the same campaign
    _, again = _fuzz(tmp_path, "again", *replay[2:])
    assert (again["examples"], again["cases"], again["coverage"]) == (fz["examples"], fz["cases"], fz["coverage"])


def test_an_explicit_dtypes_is_kept_and_one_warning_says_no_peer_takes_it(tmp_path: Path) -> None:
    run, fz = _fuzz(tmp_path, "kept", "--peers", FLOAT32_ONLY, "--dtypes", "int8,float32", "--ops", "maxpool",
                    "--max-examples", "30", "--seed", "4")
    assert _drawn_types(fz) == {"int8", "float32"}
    replay = shlex.split(fz["replay"])
    assert replay[replay.index("--dtypes") + 1] == "int8,float32"
    assert "warning" not in run.stderr
    run, fz = _fuzz(tmp_path, "warned", "--peers", FLOAT32_ONLY, "--dtypes", "int8,float16", "--max-examples", "3",
                    "--seed", "4")
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "planted-float32-only" in warnings[0] and "int8, float16" in warnings[0], run.stderr
    assert "--dtypes int8,float16" in fz["replay"] and fz["cases"] > 0  # the engines are still fuzzed


def test_dtypes_all_and_no_peers_draw_every_type(tmp_path: Path) -> None:
    _, fz = _fuzz(tmp_path, "all", "--peers", FLOAT32_ONLY, "--dtypes", "all", "--max-examples", "1", "--seed", "4")
    assert "--dtypes float32,float16,float64,bfloat16,int8," in fz["replay"]
    _, fz = _fuzz(tmp_path, "none", "--peers", "none", "--max-examples", "1", "--seed", "4")
    assert "--dtypes float32,float16,float64,bfloat16,int8," in fz["replay"]


def test_every_job_draws_the_narrowed_list(tmp_path: Path) -> None:
    """--jobs shards get the campaign's list: what every job judged is float32."""
    _, fz = _fuzz(tmp_path, "jobs", "--peers", FLOAT32_ONLY, "--jobs", "2", "--max-examples", "8", "--seed", "4")
    assert fz["jobs"] == 2 and _drawn_types(fz) == {"float32"}
    assert "--dtypes float32 " in fz["replay"] and "--jobs 2" in fz["replay"]
