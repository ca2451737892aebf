"""The fuzzer's reach and its coverage map (poolcheck.spec.regions, poolcheck.fuzz.coverage).

- Every structural region agrees with a brute-force reading of the same condition over the loop
  oracle's axes (tests/oracle.py: its own shape rules, every window enumerated).
- The generator reaches every region each operator can reach (``hypothesis.find``), and the
  regions it cannot reach are exactly the ones the table says why.
- A campaign counts hits per region and runner, shows them, and ``--min-per-region`` ends a
  campaign once every reachable region has its hits.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import oracle
import pytest
from hypothesis import HealthCheck, given, settings
from support import drawn
from typer.testing import CliRunner

from poolcheck.cli import app
from poolcheck.fuzz import strategies as S
from poolcheck.fuzz.coverage import Coverage, plan
from poolcheck.spec import regions
from poolcheck.spec.dtypes import is_float


def oracle_axes(case: S.FuzzCase) -> list[oracle.Axis]:
    a = case.attributes
    spatial = case.x.shape[2:]
    if "kernel_shape" in a:
        return oracle.onnx_axes(spatial, a["kernel_shape"], a.get("strides") or [1] * len(spatial),
                                a.get("pads") or [0] * 2 * len(spatial), a.get("dilations") or
                                [1] * len(spatial), a.get("ceil_mode", 0), a.get("auto_pad", "NOTSET"))
    return oracle.openvino_axes(spatial, a["kernel"], a["strides"], a["pads_begin"], a["pads_end"],
                                a.get("dilations") or [1] * len(spatial), a["rounding_type"], a["auto_pad"])


def brute_force(case: S.FuzzCase) -> set[str]:
    """The structural regions, read off every window of the full output grid."""
    axes = oracle_axes(case)
    a = case.attributes
    auto_pad = str(a["auto_pad"]).lower()
    same = auto_pad.startswith("same")
    hits: set[str] = set()
    windows = [[ax.window(o) for o in range(ax.out)] for ax in axes]
    for combo in itertools.product(*windows):
        inside = [[0 <= t < ax.size for t in taps] for taps, ax in zip(combo, axes)]
        taps_inside = [all(ins[j] for ins, j in zip(inside, idx)) for idx in itertools.product(*(range(len(i)) for i in inside))]
        if not any(taps_inside):
            hits.add("window-in-padding")
        elif not all(taps_inside):
            if case.op == "avg":
                hits.add("avg-partial-window")
            for ax, ins in zip(axes, inside):
                if ax.dilation > 1 and any(ins) and not all(ins):
                    hits.add("dilated-crosses-padding")
    for ax in axes:
        dk = (ax.kernel - 1) * ax.dilation + 1
        padded = ax.size + ax.pad_begin + ax.pad_end
        last_end = (ax.out - 1) * ax.stride - ax.pad_begin + dk
        if last_end > ax.size + ax.pad_end:
            hits.add("ceil-overhang")
        rounding = a.get("rounding_type") or oracle.onnx_rounding(a.get("ceil_mode", 0), a["auto_pad"])
        if rounding == "ceil_torch" and not same and ax.out < math.ceil((padded - dk) / ax.stride) + 1:
            hits.add("ceil-drop")
        if same and (ax.pad_begin + ax.pad_end) % 2:
            hits.add("same-odd-split")
        if same and min(ax.pad_begin, ax.pad_end) < 0:
            hits.add("same-negative-total")
        if auto_pad in ("explicit", "notset") and max(ax.pad_begin, ax.pad_end) >= dk:
            hits.add("pads-ge-kernel")
        if ax.kernel >= regions.LARGE_KERNEL:
            hits.add("large-kernel")
        if ax.size > 1 and ax.out == 1 and dk >= padded:
            hits.add("global-window")
        if ax.size >= regions.LONG_AXIS:
            hits.add("long-axis")
        if ax.stride > dk:
            hits.add("stride-above-kernel")
        if ax.dilation >= 4:
            hits.add("dilation-4")
    return hits


STRUCTURAL = {"window-in-padding", "avg-partial-window", "dilated-crosses-padding", "ceil-overhang", "ceil-drop",
              "same-odd-split", "same-negative-total", "pads-ge-kernel", "large-kernel", "global-window",
              "long-axis", "stride-above-kernel", "dilation-4"}


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(case=S.pool_configs())
def test_structural_regions_agree_with_a_brute_force_reading(case: S.FuzzCase) -> None:
    assert regions.regions_of(case.spec, case.x) & STRUCTURAL == brute_force(case)


def _values_read(case: S.FuzzCase) -> np.ndarray:
    axes = oracle_axes(case)
    read = [sorted({t for o in range(ax.out) for t in ax.window(o) if 0 <= t < ax.size}) for ax in axes]
    return case.x[(slice(None), slice(None), *np.ix_(*read))] if all(read) else np.empty(0, case.x.dtype)


@settings(max_examples=200, suppress_health_check=list(HealthCheck), deadline=None)
@given(case=S.pool_configs())
def test_value_regions_count_only_values_a_window_reads(case: S.FuzzCase) -> None:
    got = regions.regions_of(case.spec, case.x)
    v = _values_read(case)
    if is_float(v.dtype):  # bfloat16 too (ml_dtypes: NumPy kind "V")
        assert ("nan-in-window" in got) == bool(np.isnan(v).any())
        assert ("inf-in-window" in got) == bool(np.isinf(v).any())
        assert ("neg-zero-in-window" in got) == bool(((v == 0) & np.signbit(v)).any())
    else:
        info = np.iinfo(v.dtype)
        assert ("int-extreme" in got) == bool(((v == info.min) | (v == info.max)).any())
    assert f"dtype-{case.x.dtype.name}" in got


def test_a_hand_made_ceil_torch_drop() -> None:
    # 1-D, size 5, kernel 2, stride 2, pads 1/1, ceil_torch: ceil gives 4 windows; the 4th would
    # start at padded position 6 >= 5 + 1 (in the end padding), so it is dropped.
    from poolcheck.spec import operators

    spec = operators.parse("MaxPool-14", {"kernel": [2], "strides": [2], "pads_begin": [1], "pads_end": [1],
                                          "rounding_type": "ceil_torch"})
    got = regions.regions_of(spec, np.zeros((1, 1, 5), np.float32))
    assert "ceil-drop" in got and "ceil-overhang" not in got
    spec = spec.replace(rounding_type="ceil")
    got = regions.regions_of(spec, np.zeros((1, 1, 5), np.float32))
    assert "ceil-drop" not in got and "window-in-padding" in got


@pytest.mark.parametrize(("op", "convention"), [("max", "openvino"), ("avg", "openvino"), ("max", "onnx"),
                                                 ("avg", "onnx")])
def test_every_reachable_region_is_drawn(op: str, convention: str) -> None:
    p = plan((op,), (convention,), (3, 4, 5), S.ALL_DTYPES)
    strategy = S.pool_configs(ops=(op,), conventions=(convention,))
    for key in p.reachable:  # each within 3000 draws
        drawn(strategy, lambda c, key=key: key in regions.regions_of(c.spec, c.x), key)
    # what cannot be reached says why
    assert set(p.reachable).isdisjoint(p.unreachable)
    assert all(p.unreachable.values())
    if convention == "openvino":
        assert "same-negative-total" in p.unreachable
    if op == "avg":
        assert "index-i32" in p.unreachable and "int-extreme" in p.unreachable


def test_plan_follows_the_options() -> None:
    p = plan(("max",), ("onnx",), (3, 4), ("float32",))
    assert "rank-5" not in p.reachable and "rank 5" in p.unreachable["rank-5"]
    assert [k for k in p.reachable if k.startswith("dtype-")] == ["dtype-float32"]
    assert "int-extreme" not in p.reachable


def test_coverage_merges_and_reports_the_least_hit() -> None:
    a, b = Coverage(), Coverage()
    a.record("c", ["rank-5", "large-kernel"])
    b.record("c", ["rank-5"])
    b.record_declined("onnxruntime", ["dtype-int16"])
    a.merge(b)
    assert a.as_dict() == {"c": {"large-kernel": 1, "rank-5": 2}}
    assert a.least("c", ["rank-5", "large-kernel"]) == 1
    assert a.least("onnxruntime", ["rank-5"]) == 0
    assert a.declined_dict() == {"onnxruntime": {"dtype-int16": 1}}


@pytest.mark.slow
def test_a_campaign_counts_regions_and_min_per_region_ends_it(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "rep"
    res = runner.invoke(app, ["fuzz", "--ops", "maxpool", "--ranks", "3", "--dtypes", "float32", "--conventions",
                              "onnx", "--peers", "none", "--seed", "3", "--min-per-region", "2", "--time-budget",
                              "120s", "--no-progress", "--save-cases", str(tmp_path / "finds"), "--database",
                              str(tmp_path / "db"), "--report-dir", str(out)],
                        env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    assert "spec regions reached" in res.output
    data = json.loads((out / "result.json").read_text())
    fz = data["fuzz"]
    reachable = fz["coverage_reachable"]
    assert "rank-5" not in reachable and "rank-5" in fz["coverage_unreachable"]
    hits = fz["coverage"]["numpy"] if "numpy" in fz["coverage"] else next(iter(fz["coverage"].values()))
    assert all(hits.get(k, 0) >= 2 for k in reachable), {k: hits.get(k, 0) for k in reachable}
    assert "--min-per-region 2" in fz["replay"]
    assert fz["elapsed_s"] < 120  # ended by coverage, not by the budget


def _campaign_with_a_peer_declining_rank_5(**options: Any) -> tuple[Any, Coverage, str]:
    """An in-process campaign (``options`` for :class:`FuzzOptions`) with a planted peer that
    declines every 3-D configuration: its session result, coverage and the peer's name."""
    from planted_peers.region_bugs import RegionBug

    from poolcheck.fuzz.session import FuzzOptions, run_sessions

    class NoRank5(RegionBug):
        def supports(self, spec, shape, dtype):  # type: ignore[no-untyped-def]
            return (False, "no 3-D pooling") if len(shape) == 5 else super().supports(spec, shape, dtype)

    peer = NoRank5(None)
    (result,) = run_sessions(FuzzOptions(peers=(peer,), seed=0, isolated=False, oracles=frozenset({"peers"}),
                                         shrink=False, **options))
    cov = result.progress.coverage
    assert cov.hits[peer.name]["rank-5"] == 0 < cov.declined[peer.name]["rank-5"]
    return result, cov, peer.name


def test_a_peer_that_declines_a_region_is_counted_apart() -> None:
    _result, cov, _peer = _campaign_with_a_peer_declining_rank_5(max_examples=30, time_budget=600.0)
    assert cov.hits["numpy" if "numpy" in cov.hits else next(iter(cov.hits))]["rank-5"] > 0


def test_covers_leaves_out_the_regions_a_peer_declined_without_one_answer() -> None:
    cov = Coverage()
    cov.record("torch", ["rank-5", "rank-5", "large-kernel"])
    cov.record_declined("torch", ["window-in-padding", "window-in-padding", "large-kernel"])
    keys = ["rank-5", "large-kernel", "window-in-padding"]
    # window-in-padding: declined twice, never answered: it cannot express it; large-kernel has 1 hit
    assert cov.covers("torch", keys, 1)
    assert not cov.covers("torch", keys, 2)  # large-kernel has 1 hit of 2 (a hit: it can express it)
    cov.record("torch", ["large-kernel"])
    assert cov.covers("torch", keys, 2)
    assert not cov.covers("torch", keys, 3)  # and window-in-padding was declined only twice of 3
    assert not cov.covers("onnxruntime", keys, 1)  # a runner never recorded covers nothing
    assert cov.covers("onnxruntime", [], 1)


def test_min_per_region_ends_with_a_peer_that_cannot_express_a_region() -> None:
    """A peer that declines every 3-D configuration: before, the campaign drew until its budget
    (with --max-examples and no --time-budget: forever), since rank-5 never got a hit there."""
    result, cov, _peer = _campaign_with_a_peer_declining_rank_5(min_per_region=1, time_budget=120.0)
    assert result.progress.elapsed < 120  # ended by coverage, not by the budget
    reachable = plan(("max", "avg"), ("openvino", "onnx"), (3, 4, 5), S.ALL_DTYPES).reachable
    assert all(cov.covers(r, reachable, 1) for r in cov.hits)


@pytest.mark.parametrize(("budget", "max_examples", "min_per_region", "seconds"), [
    ("90s", None, 0, 90.0), ("90s", 5, 3, 90.0),  # an explicit budget
    (None, None, 0, 60.0), (None, 5, 0, None),  # --max-examples bounds the campaign by itself
    (None, 5, 1, 60.0), (None, None, 1, 60.0),  # --min-per-region draws past it: a budget always
])
def test_min_per_region_always_has_a_time_budget(budget: str | None, max_examples: int | None, min_per_region: int,
                                                  seconds: float | None) -> None:
    from poolcheck.cli.fuzz import time_budget_of

    assert time_budget_of(budget, max_examples, min_per_region) == seconds


def _coverage_result() -> object:
    from poolcheck.results import FuzzSummary, RunResult

    fz = FuzzSummary(coverage={"numpy": {"rank-5": 7, "dtype-int16": 3}, "onnxruntime": {"rank-5": 5}},
                     coverage_declined={"onnxruntime": {"dtype-int16": 3}},
                     coverage_reachable=["rank-5", "dilation-4", "dtype-int16"],
                     coverage_unreachable={"same-negative-total": "MaxPool-14: never negative"})
    return RunResult(command="poolcheck fuzz", kind="fuzz", fuzz=fz)


def test_every_format_shows_the_coverage() -> None:
    import xml.etree.ElementTree as ET

    from rich.console import Console

    from poolcheck.report import console as console_report
    from poolcheck.report.jsonfmt import to_json
    from poolcheck.report.junit import to_junit
    from poolcheck.report.markdown import to_markdown
    from poolcheck.results import RunResult

    result = _coverage_result()
    md = to_markdown(result)  # type: ignore[arg-type]
    assert "| dilation-4 | 0 | numpy (0), onnxruntime (0) |" in md
    assert "| dtype-int16 | 3 | onnxruntime (0; declined 3: cannot express) |" in md
    assert "unreachable: MaxPool-14: never negative" in md
    back = RunResult.from_dict(json.loads(to_json(result)))  # type: ignore[arg-type]
    assert back.fuzz is not None and back.fuzz.coverage_declined == {"onnxruntime": {"dtype-int16": 3}}
    assert back.fuzz.coverage_gaps() == {"numpy": ["dilation-4"], "onnxruntime": ["dilation-4", "dtype-int16"]}
    console = Console(width=80, record=True)
    console_report.render(result, console)  # type: ignore[arg-type]
    text = console.export_text()
    assert "spec regions reached" in text and "dilation-4" in text and "unreachable" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    ET.fromstring(to_junit(result))  # type: ignore[arg-type]


def test_report_merge_sums_the_coverage_of_its_campaigns(tmp_path: Path) -> None:
    from poolcheck.report.jsonfmt import to_json
    from poolcheck.results import FuzzSummary, RunResult

    a = RunResult(command="a", kind="fuzz", fuzz=FuzzSummary(
        coverage={"numpy": {"rank-5": 2}}, coverage_reachable=["rank-5", "dtype-float32"],
        coverage_unreachable={"same-negative-total": "never negative"}))
    b = RunResult(command="b", kind="fuzz", fuzz=FuzzSummary(
        coverage={"numpy": {"rank-5": 3, "same-negative-total": 4}}, coverage_declined={"t": {"rank-5": 1}},
        coverage_reachable=["rank-5", "same-negative-total"]))
    for name, r in (("a.json", a), ("b.json", b)):
        (tmp_path / name).write_text(to_json(r))
    out = tmp_path / "m.json"
    res = CliRunner().invoke(app, ["report", "merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-f", "json",
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    fz = json.loads(out.read_text())["fuzz"]
    assert fz["coverage"] == {"numpy": {"rank-5": 5, "same-negative-total": 4}}
    assert fz["coverage_declined"] == {"t": {"rank-5": 1}}
    assert fz["coverage_reachable"] == ["rank-5", "dtype-float32", "same-negative-total"]
    assert fz["coverage_unreachable"] == {}


def test_value_regions_are_read_from_each_input_of_a_geometry_seen_before() -> None:
    # The value-free regions are kept per (spec, shape, type); the value ones must be read from
    # every input again: a NaN, an infinity, a -0.0 then none, on one geometry, and an unread NaN
    # (outside every window) counts for nothing.
    from poolcheck.spec import operators

    spec = operators.parse("MaxPool-14", {"kernel": [2], "strides": [3], "pads_begin": [0], "pads_end": [0]})
    plain = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)  # windows {0, 1} and {3, 4}; 2, 5, 6 unread
    value_keys = {"nan-in-window", "inf-in-window", "neg-zero-in-window"}
    for position, value, key in ((0, np.nan, "nan-in-window"), (4, np.inf, "inf-in-window"),
                                 (1, -0.0, "neg-zero-in-window"), (2, np.nan, None), (6, np.inf, None)):
        x = plain.copy()
        x[0, 0, position] = value
        got = regions.regions_of(spec, x)
        assert got & value_keys == ({key} if key else set()), (position, value)
        assert regions.regions_of(spec, plain) & value_keys == set()
    ints = operators.parse("MaxPool-14", {"kernel": [2], "strides": [3], "pads_begin": [0], "pads_end": [0]})
    x = np.array([[[1, 2, -128, 4, 5, 127, 7]]], dtype=np.int8)  # the extremes sit where no window reads
    assert "int-extreme" not in regions.regions_of(ints, x)
    x[0, 0, 3] = 127
    assert "int-extreme" in regions.regions_of(ints, x)
    # past regions.KEPT_INDEX_POSITIONS the read index is made for each input instead
    long = np.ones((1, 1, regions.KEPT_INDEX_POSITIONS + 3), dtype=np.float32)
    long[0, 0, 2] = np.nan  # unread: positions 3k + 2 are skipped by kernel 2, stride 3
    assert "nan-in-window" not in regions.regions_of(spec, long)
    long[0, 0, 4] = np.nan
    assert "nan-in-window" in regions.regions_of(spec, long)
