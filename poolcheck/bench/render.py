"""Renderers of a :class:`~poolcheck.bench.measure.BenchRun`: rich tables for the terminal,
JSON, and the Markdown of docs/benchmarks.md. They only read the run."""

from __future__ import annotations

import datetime as _dt
import json
import math
from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from poolcheck.bench import measure
from poolcheck.bench.contenders import is_poolcheck_key
from poolcheck.bench.measure import BenchRun, Result, WorkloadResult
from poolcheck.bench.summary import (
    C_VS_FASTEST_NCHW,
    C_VS_ORT,
    NUMPY_VS_ORT,
    PATH_VS_ORT,
    PathRatio,
    Ratios,
    build_time_of,
    path_ratios,
    paths_timed,
    ratios,
    setup_time_of,
)
from poolcheck.bench.targets import Target, evaluate

STATUS_STYLE = {"ok": "green", "wrong": "bold red", "error": "red", "n/a": "dim", "absent": "yellow"}


def fmt_ms(ms: float) -> str:
    """Milliseconds to three significant digits."""
    if ms <= 0 or not math.isfinite(ms):
        return str(ms)
    if ms >= 100:
        return f"{ms:.0f}"
    return f"{ms:.{max(0, 2 - math.floor(math.log10(ms)))}f}"


def fmt_ratio(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}x"


def _cells(r: Result) -> list[str]:
    if r.timing is None:
        return [r.status, "", "", "", "", "", ""]
    t = r.timing
    return [
        r.status, fmt_ms(t.median_ms), f"{fmt_ms(t.min_ms)}–{fmt_ms(t.max_ms)}", fmt_ratio(r.ratio_ort),
        fmt_ratio(r.ratio_fastest), "" if r.gbps is None else f"{r.gbps:.1f}", fmt_ratio(r.ratio_bound),
    ]


#: Column headers of a workload table: (first line, second line); the terminal shows them on
#: two lines so that the table fits 80 columns, Markdown on one.
HEADERS = [("contender", ""), ("status", ""), ("median", "ms"), ("min–max", "ms"), ("×", "ORT"),
           ("×", "fastest"), ("GB/s", ""), ("×", "bound")]


def _header(h: tuple[str, str], sep: str) -> str:
    return h[0] + (sep + h[1] if h[1] else "")


def where(run: BenchRun) -> str:
    """The CPU a run was measured on and the instruction-set path of the C engine."""
    m = run.machine
    isa = m.get("c_engine_isa")
    path = "C engine not built" if isa is None else f"C engine path {isa}"
    return f"{m.get('cpu') or 'unknown CPU'}, {path}"


def _caption(w: WorkloadResult) -> str:
    bound = "" if w.bound_ms is None else (f"bound {fmt_ms(w.bound_ms)} ms = {w.bytes_moved / 1e6:.2f} MB at "
                                           f"{w.copy_gbps:.0f} GB/s copy")
    return f"in {list(w.shape)} -> out {list(w.output_shape)}; {bound}"


def _label(r: Result, run: BenchRun) -> str:
    if r.key == "c" and run.machine.get("c_engine_isa"):
        return f"{r.label} [{run.machine['c_engine_isa']}]"
    return r.label + (f" {r.version}" if r.version and not is_poolcheck_key(r.key) else "")


def workload_table(w: WorkloadResult, run: BenchRun) -> Table:
    """One workload's contenders; numbers and headers never cut at 80 columns (the contender
    names wrap instead)."""
    table = Table(title=f"{w.name}  {w.title}", caption=f"{_caption(w)}\non {where(run)}", title_justify="left",
                  caption_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for i, h in enumerate(HEADERS):
        table.add_column(_header(h, "\n"), justify="left" if i < 2 else "right", no_wrap=i > 0,
                         overflow="fold", min_width=len(h[0]) if i == 0 else None)
    for r in w.results:
        cells = _cells(r)
        # Text, never markup: a label holds "[avx2]" and a runtime's own version string.
        bold = "bold" if r.key == "c" and r.timing is not None else ""
        table.add_row(Text(_label(r, run), style=bold), Text(cells[0], style=STATUS_STYLE.get(r.status, "") or bold),
                      *(Text(c, style=bold) for c in cells[1:]))
    return table


def notes(run: BenchRun) -> list[str]:
    """One line per contender that was not timed, saying why."""
    lines: list[str] = []
    for w in run.workloads:
        for r in w.results:
            if r.status != "ok" and r.message:
                lines.append(f"{w.name} {r.label}: {r.status} — {r.message}")
    return lines


TARGETS_TITLE = "More targets"


def targets_table(targets: list[Target]) -> Table:
    table = Table(title=TARGETS_TITLE, title_justify="left")
    for h in ("workload", "target", "met", "measured"):
        table.add_column(h)
    for t in targets:
        met = Text("n/a", style="dim") if t.met is None else (Text("yes", style="green") if t.met else Text("no", style="red"))
        table.add_row(t.workload, t.text, met, t.detail)
    return table


RATIO_HEADERS = [("workload", ""), ("C / ORT", f"≤ {C_VS_ORT:g}"), ("NumPy / ORT", f"≤ {NUMPY_VS_ORT:g}"),
                 ("C / fastest", f"NCHW ≤ {C_VS_FASTEST_NCHW:g}"), ("fastest NCHW", "contender"), ("C engine", "path")]
RATIOS_TITLE = "Ratios of medians, this run"


def ratio_cells(r: Ratios, run: BenchRun) -> list[tuple[str, bool | None]]:
    """The cells of one row of the headline ratios, each with whether it meets its target, and
    the C engine's instruction-set path beside them."""
    met = r.met()
    return [(r.workload, None), (fmt_ratio(r.c_ort) or "n/a", met["c_ort"]),
            (fmt_ratio(r.numpy_ort) or "n/a", met["numpy_ort"]),
            (fmt_ratio(r.c_fastest_nchw) or "n/a", met["c_fastest_nchw"]), (r.fastest_nchw or "none timed", None),
            (run.machine.get("c_engine_isa") or "not built", None)]


def ratios_table(run: BenchRun) -> Table:
    """The headline ratios, side by side from this one run, the CPU and the set-up time."""
    table = Table(title=f"{RATIOS_TITLE}, on {run.machine.get('cpu') or 'unknown CPU'}", title_justify="left",
                  caption_justify="left",
                  caption=f"Set-up time of the last fresh install: {setup_time_of(run).text()}\n"
                          f"C engine build: {build_time_of(run).text()}")
    for i, h in enumerate(RATIO_HEADERS):
        table.add_column(_header(h, "\n"), justify="right" if 0 < i < 4 else "left", no_wrap=0 < i < 4,
                         overflow="fold")
    for r in ratios(run):
        table.add_row(*(Text(text, style="" if ok is None else ("green" if ok else "red"))
                        for text, ok in ratio_cells(r, run)))
    return table


PATHS_TITLE = "Each C engine path over ONNX Runtime, this run"


def path_target(path: str) -> float:
    return PATH_VS_ORT.get(path, C_VS_ORT)


def path_rows(run: BenchRun) -> list[tuple[str, list[PathRatio]]]:
    """The per-path ratios grouped by workload, paths in :func:`paths_timed` order."""
    by_workload: dict[str, list[PathRatio]] = {}
    for p in path_ratios(run):
        by_workload.setdefault(p.workload, []).append(p)
    return list(by_workload.items())


def paths_caption(run: BenchRun) -> str:
    return (f"{run.machine.get('cpu') or 'unknown CPU'}: the default path is {run.machine.get('c_engine_isa')}; "
            "ONNX Runtime runs its own kernels for this CPU on every row, so a narrower path is "
            "compared with the runtime at its widest.")


def paths_table(run: BenchRun) -> Table:
    """Per workload, the C engine on every timed path over ONNX Runtime, each against its target."""
    table = Table(title=PATHS_TITLE, title_justify="left", caption=paths_caption(run), caption_justify="left")
    table.add_column("workload")
    for path in paths_timed(run):
        table.add_column(f"{path} / ORT\n≤ {path_target(path):g}", justify="right", no_wrap=True)
    for name, row in path_rows(run):
        table.add_row(name, *(Text(fmt_ratio(p.c_ort) or "n/a",
                                   style="" if p.met() is None else ("green" if p.met() else "red")) for p in row))
    return table


def renderable(run: BenchRun) -> Group:
    parts: list[Any] = [workload_table(w, run) for w in run.workloads]
    parts.append(ratios_table(run))
    if paths_timed(run):
        parts.append(paths_table(run))
    targets = evaluate(run)
    if targets:  # no empty table: the family workloads F1-F3 have no target beyond the ratios
        parts.append(targets_table(targets))
    extra = notes(run)
    if extra:
        parts.append(Text("\n".join(extra), style="dim"))
    return Group(*parts)


def to_json(run: BenchRun) -> str:
    data = run.to_dict()
    data["ratios"] = [r.__dict__ | {"met": r.met()} for r in ratios(run)]
    data["paths"] = [p.__dict__ | {"met": p.met()} for p in path_ratios(run)]
    data["targets"] = [t.__dict__ for t in evaluate(run)]
    return json.dumps(data, indent=2)


# --------------------------------------------------------------------------- Markdown


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


ACCURACY = """\
## What the engines compute (accuracy contract)

| | NumPy engine | C engine |
| --- | --- | --- |
| Max values, all dtypes (float16/32/64, int8..uint64) | exact (an input element or the empty-window value) | identical bits |
| Max indices (int32/int64, C or F order, any `axis` modulus) | the element a row-major strict `>` scan picks | identical |
| Average, float64 input | float64 sums, last spatial axis first, taps in order; one division; result float64 | identical bits |
| Average, float32 input | the same float64 sums; one division; rounded once to float32 | identical bits |
| Average, float16 input | widened exactly; float64 sums; rounded once to float16 by NumPy | identical bits |

Averages, accumulation type and error bound per input dtype (both engines; m is the number of
elements a window sums, `sum|x|` the sum of their magnitudes, `d` the divisor). Every sum is
a float64 sum of m exactly representable terms, within `(m - 1) 2^-53 sum|x|` of the exact
sum whatever the order of the additions; the quotient is one float64 division (relative error
at most `2^-53`), then one rounding to the output type:

| input | accumulation | error of the result against the exact mean |
| --- | --- | --- |
| float64 | float64 | at most `(m - 1) 2^-53 sum|x| / d + 2^-53 |mean|` + half a float64 ULP of the result |
| float32 | float64 (inputs widened exactly) | the same float64 terms + half a float32 ULP of the result (in practice the correctly rounded float32 mean: the float64 error is 2^29 times smaller than a float32 ULP) |
| float16 | float64 (inputs widened exactly through float32) | the same float64 terms + half a float16 ULP of the result |

The speed of the C engine does not come from a weaker rule: it accumulates in float64 as the
NumPy engine does, in the same order (identical bits) except for global pooling, below. On the
paths with FMA (`avx2`, `avx512`) its float32 averages form the float64 quotient with a multiply
and two fused multiply-adds instead of a division instruction; that is the correctly rounded
quotient for every finite float32 sum (proof in `_cpool_src/simd.h`, tested against exact
arithmetic in `tests/engines/test_c_fma_quotient.py`), so the bits are those of one division.

Exceptions, both tested in `tests/engines/test_c_engine.py`:

- The NumPy engine's values-only max path (float32/float64, no indices, NaN policy
  `propagate`) reduces with `np.maximum`, whose SIMD loops return the second operand of a
  `+0.0`/`-0.0` tie and either operand's NaN payload. The C engine returns the element the
  row-major scan picks (as both engines do whenever indices are requested). Values are equal as
  numbers (`-0.0 == 0.0`; NaN where NaN).
- Where a window covers each whole plane (global pooling) the NumPy engine sums with
  `np.add.reduce` (pairwise order) and the C engine in 8 interleaved float64 partial sums
  (element i into sum i mod 8; 16 with AVX-512) combined at the end, instead of axis by axis.
  Each sum of the m elements is within `(m - 1) 2^-53 sum|x|` of the exact sum, so the two
  differ by at most `2 (m - 1) 2^-53 sum|x|` and the averages by at most that over the divisor,
  plus one unit in the last place of the output type (0 ULP in practice for float16/float32
  inputs, whose float64 sums are usually exact; a few float64 ULP for float64).
- A NaN average is NaN in both engines; its payload follows the operand order the compiler
  chose for the additions.
"""


PATHS = """\
## Instruction-set paths of the C engine

One build serves every CPU of its architecture. The kernels are one C source (templates in
`poolcheck/engines/_cpool_src/`) compiled once per path, and the extension picks the fastest
path the CPU runs when it is imported; `POOLCHECK_ISA=portable|avx2|avx512` forces one (a path
the CPU cannot run is an error, not a silent fallback). Every path gives the same bits as the
NumPy engine (tests/engines/test_c_engine.py runs the agreement tests on each path the machine runs).

| path | compiled for | chosen on |
| --- | --- | --- |
| `portable` | the architecture's baseline: SSE2 on x86-64, NEON (Advanced SIMD, 128-bit) on AArch64, vectorised by the compiler | every CPU |
| `avx2` | the same source with AVX2 + FMA (256-bit) | x86-64 CPUs with AVX2 and FMA (Haswell, Zen 1 and later) |
| `avx512` | the same source with AVX-512 F/BW/VL/DQ (512-bit) | x86-64 CPUs with those (Skylake-SP, Ice Lake, Zen 4 and later) |

An ARM machine (AArch64: Graviton, Ampere, Apple silicon under Linux) runs the `portable` path:
the compiler's NEON code for the same kernels, 128 bits wide (the fused float32 kernels' vector
layer, `_cpool_src/simd.h`, has x86 intrinsics only, so NEON runs its generic form; the other
float32 averages divide by multiply-adds, as `avx2` does, since every AArch64 CPU has FMA).
`make test-aarch64` builds the extension for AArch64 with setup.py and runs the engine tests
(tests/engines/) on an arm64 Python under qemu-user: that checks the bits, not the speed.
No table on this page was measured on ARM; on x86-64 the portable path (SSE2, also 128-bit)
is the closest measured proxy: `poolcheck bench --isa all` times every path this CPU runs side
by side in one run (`POOLCHECK_ISA=portable poolcheck bench` makes it the default path).
"""


def _paths_markdown(run: BenchRun) -> list[str]:
    """The per-path section of the Markdown (nothing when one path was timed)."""
    paths = paths_timed(run)
    if not paths:
        return []
    targets = ", ".join(f"`{p}` at most {path_target(p):g}x" for p in paths)
    lines = ["## The C engine on each instruction-set path (this run)", "",
             f"The C engine timed on every path side by side in the same run (`--isa`), each over ONNX "
             f"Runtime's median on the same workload. Targets: {targets}; a missed one is in bold. "
             f"{paths_caption(run)}", "",
             _md_row(["workload", *(f"{p} / ORT ≤ {path_target(p):g}" for p in paths)]),
             _md_row(["---"] + ["---:"] * len(paths))]
    for name, row in path_rows(run):
        cells = [fmt_ratio(p.c_ort) or "n/a" for p in row]
        lines.append(_md_row([name, *(c if p.met() is not False else f"**{c}**" for c, p in zip(cells, row))]))
    return [*lines, ""]


def _method_text() -> str:
    """The method list of poolcheck.bench.measure's docstring, as Markdown."""
    doc = measure.__doc__ or ""
    items = doc[doc.index("- "):].strip()
    return items.replace("``", "`").replace("\n- ", "\n\n- ")


def _loaded(m: dict[str, Any]) -> bool:
    """Whether the load average passed the number of logical CPUs during the run."""
    cpus = m.get("logical_cpus")
    loads = [v for v in (m.get("load_start"), m.get("load_end")) if isinstance(v, (int, float))]
    return isinstance(cpus, int) and any(v > cpus for v in loads)


def to_markdown(run: BenchRun, command: str = "poolcheck bench") -> str:
    m = run.machine
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    isas = ", ".join(m.get("c_engine_isas") or []) or "none (C engine not built)"
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `{command}` on {now}. Regenerate with the same command; do not edit by hand.",
        "",
        "## Machine and settings",
        "",
        f"- CPU: {m.get('cpu', '?')} ({m.get('logical_cpus', '?')} logical CPUs); {m.get('platform', '')}",
        f"- Python {m.get('python')}, NumPy {m.get('numpy')}; C engine instruction-set path: "
        f"{m.get('c_engine_isa') or 'none (not built)'} (this CPU and build offer: {isas}; "
        "`POOLCHECK_ISA=portable|avx2|avx512` forces one)",
        f"- Load average (1 min) at the start and end of the run: {m.get('load_start', '?')} / "
        f"{m.get('load_end', '?')} (other processes shared the cores)",
        *([f"- **Measured under load**: the load average exceeded the {m.get('logical_cpus')} logical CPUs; "
           "other processes competed for the cores, so these ratios are noisier than on a quiet machine"]
          if _loaded(m) else []),
        f"- Every contender single-threaded (ONNX Runtime intra/inter-op threads 1; OpenVINO "
        f"INFERENCE_NUM_THREADS 1, INFERENCE_PRECISION_HINT f32; torch.set_num_threads(1)); "
        f"reference engine for the checks: poolcheck {run.settings.get('reference_engine')}",
        f"- Up to {run.settings.get('reps')} timed calls per contender (time budget "
        f"{run.settings.get('budget_s')} s each, at least 3), after {run.settings.get('warmup')} warm-up calls, "
        f"interleaved in blocks of {run.settings.get('block')}",
        f"- Set-up time of the last fresh install (`make install`, from creating the virtual environment "
        f"to the end of the install): {setup_time_of(run).text()}",
        f"- C engine build (setup.py's compile and link of the loaded extension): {build_time_of(run).text()}",
        "",
        "## Ratios of medians (this run)",
        "",
        "Lower is faster. Targets: C engine at most ONNX Runtime's time, NumPy engine within "
        f"{NUMPY_VS_ORT:g}x of it, C engine at most {round((C_VS_FASTEST_NCHW - 1) * 100)}% behind the fastest "
        "NCHW contender other than poolcheck's engines; a missed target is in bold.",
        "",
        f"Measured on {where(run)}.",
        "",
        _md_row([_header(h, " ") for h in RATIO_HEADERS]),
        _md_row(["---"] + ["---:"] * 3 + ["---"] * 2),
        *(_md_row([text if ok is not False else f"**{text}**" for text, ok in ratio_cells(r, run)])
          for r in ratios(run)),
        "",
        *_paths_markdown(run),
        "## Method",
        "",
        _method_text(),
        "",
        "Columns: median and min–max of the timed calls; × ORT and × fastest are ratios of medians "
        "(lower is faster); GB/s is the bytes that must move over the median time; × bound is the "
        "median over the bandwidth bound (1.00x would be a copy's speed).",
        "",
        "## Results",
        "",
    ]
    for w in run.workloads:
        lines += [f"### {w.name} — {w.title}", "", f"{_caption(w)}; measured on {where(run)}", "",
                  _md_row([_header(h, " ") for h in HEADERS]), _md_row(["---"] * 2 + ["---:"] * (len(HEADERS) - 2))]
        for r in w.results:
            cells = _cells(r)
            if r.key == "c" and r.timing is not None:
                cells[1] = f"**{cells[1]}**"
            lines.append(_md_row([_label(r, run), *cells]))
        lines.append("")
    targets = evaluate(run)
    if targets:
        lines += [f"## {TARGETS_TITLE}", "", _md_row(["workload", "target", "met", "measured"]),
                  _md_row(["---"] * 4)]
        for t in targets:
            lines.append(_md_row([t.workload, t.text, "n/a" if t.met is None else ("yes" if t.met else "**no**"),
                                  t.detail]))
    else:
        lines.pop()  # the blank line after the last workload: the sections below start with one
    extra = notes(run)
    if extra:
        lines += ["", "## Contenders not timed", ""] + [f"- {n}" for n in extra]
    lines += ["", PATHS, ACCURACY]
    return "\n".join(lines).rstrip() + "\n"
