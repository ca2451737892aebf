"""The terminal view (rich): a summary table, then a diff for every fail and erratum."""

from __future__ import annotations

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from poolcheck.report.model import CaseResult, Check, Diff, RunResult

STYLES = {
    "pass": "green",
    "erratum": "magenta",
    "fail": "bold red",
    "error": "bold yellow",
    "crash": "bold red",
    "timeout": "red",
    "rejects": "yellow",
    "skip": "dim",
}


#: Short column headers for the usual runners, so a run with every peer fits 80 columns.
HEADERS = {"onnxruntime": "ORT", "openvino": "OV", "onnx_reference": "onnx.ref"}


def verdict_text(verdict: str) -> Text:
    return Text(verdict, style=STYLES.get(verdict, ""))


def summary_table(result: RunResult, *, show_source: bool = True) -> Table:
    runners: list[str] = []
    for case in result.cases:
        for check in case.checks:
            if check.runner not in runners:
                runners.append(check.runner)
    table = Table(title=f"poolcheck {result.kind}: {len(result.cases)} case(s)", show_lines=False, expand=False,
                  box=box.SIMPLE_HEAD)
    table.add_column("case", overflow="fold", min_width=10)
    table.add_column("op", overflow="fold")
    table.add_column("result")
    for r in runners:
        table.add_column(HEADERS.get(r, r), overflow="fold")
    if show_source:
        table.add_column("source", overflow="fold", style="dim")
    for case in result.cases:
        by_runner = {c.runner: c for c in case.checks}
        cells = [verdict_text(by_runner[r].verdict) if r in by_runner else Text("-", style="dim") for r in runners]
        extra = [_short_source(case.source)] if show_source else []
        table.add_row(case.case_id, case.op, verdict_text(case.verdict), *cells, *extra)
    return table


def _short_source(source: str) -> str:
    """``cases/seeds/openvino-maxpool8.yaml:11`` -> ``openvino-maxpool8.yaml:11`` (the full path is in
    the per-case detail and the replay command)."""
    return source.rsplit("/", 1)[-1]


def counts_line(result: RunResult) -> Text:
    counts = {k: v for k, v in result.counts().items() if v}
    text = Text()
    for i, (verdict, n) in enumerate(counts.items()):
        if i:
            text.append(", ")
        text.append(f"{n} {verdict}", style=STYLES.get(verdict, ""))
    if result.interrupted:
        text.append("  (interrupted: partial result)", style="bold yellow")
    return text


def _window_text(diff: Diff) -> Text:
    text = Text()
    if not diff.window:
        return text
    for i, cell in enumerate(diff.window):
        if i:
            text.append(" ")
        coords = ",".join(str(c) for c in cell.coords)
        if cell.kind == "input":
            style = "bold underline" if cell.chosen else ""
            text.append(f"({coords})={cell.value}", style=style)
        else:
            text.append(f"({coords})*{cell.kind}", style="dim")
    return text


def diff_table(check: Check) -> Table:
    table = Table(show_header=True, header_style="bold", expand=False)
    table.add_column("output")
    table.add_column("position")
    table.add_column("expected")
    table.add_column("actual")
    table.add_column("window over the padded input (* = padding; underlined = chosen)", overflow="fold")
    for d in check.diffs:
        pos = "-" if d.position is None else "(" + ", ".join(map(str, d.position)) + ")"
        table.add_row(d.output, pos, str(d.expected), str(d.actual), _window_text(d))
    return table


def _same_finding(a: Check, b: Check) -> bool:
    """Two runners that report the same verdict, message and differing elements."""
    key = lambda c: (c.verdict, c.message.replace(f"engine={c.runner}", ""),  # noqa: E731
                     [(d.output, d.position, d.expected, d.actual) for d in c.diffs])
    return key(a) == key(b)


def case_detail(case: CaseResult) -> Panel:
    parts: list[object] = []
    if case.title:
        parts.append(Text(case.title, style="italic"))
    shown: list[Check] = []
    for check in case.checks:
        if check.verdict in ("pass", "skip"):
            continue
        twin = next((c for c in shown if _same_finding(c, check)), None)
        if twin is not None:
            parts.append(Text.assemble((f"{check.runner}: ", "bold"), verdict_text(check.verdict),
                                       f"  (same as {twin.runner})"))
            continue
        shown.append(check)
        head = Text()
        head.append(f"{check.runner}: ", style="bold")
        head.append_text(verdict_text(check.verdict))
        if check.message:
            head.append(f"  {check.message}")
        parts.append(head)
        if check.diagnosis:
            parts.append(Text(f"diagnosis: {check.diagnosis}", style="cyan"))
        if check.diffs:
            parts.append(diff_table(check))
            if check.n_diffs > len(check.diffs):
                parts.append(Text(f"... and {check.n_diffs - len(check.diffs)} more differing element(s)", style="dim"))
    if case.erratum:
        parts.append(Text(f"erratum: the document says {case.erratum.get('says')}", style="magenta"))
        parts.append(Text(f"why: {case.erratum.get('why')}", style="magenta"))
    if case.message:
        parts.append(Text(case.message))
    parts.append(Text(f"replay: {case.replay}", style="dim"))
    return Panel(Group(*parts), title=f"{case.case_id}  [{case.verdict}]", title_align="left",
                 border_style=STYLES.get(case.verdict, ""))


def render(result: RunResult, console: Console, *, details: bool = True) -> None:
    # The source column only fits a wide terminal; per-case panels and --json always carry it.
    console.print(summary_table(result, show_source=console.width >= 120))
    if details:
        for case in result.cases:
            if case.verdict not in ("pass", "skip"):
                console.print(case_detail(case))
    console.print(counts_line(result))
