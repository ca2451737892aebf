"""The terminal view (rich): a summary table, then a diff for every fail and erratum."""

from __future__ import annotations

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from poolcheck.report.text import safe
from poolcheck.results import VERDICTS, CaseResult, Check, Diff, RunResult

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


SEVERITY_STYLES = {"violation": "bold red", "unspecified": "cyan", "limitation": "yellow", "erratum": "magenta"}

#: Short column headers for the usual runners, so a run with every peer fits 80 columns.
HEADERS = {"onnxruntime": "ORT", "openvino": "OV", "onnx_reference": "onnx.ref"}


def verdict_text(verdict: str) -> Text:
    return Text(verdict, style=STYLES.get(verdict, ""))


def _runners(result: RunResult) -> list[str]:
    runners: list[str] = []
    for case in result.cases:
        for check in case.checks:
            if check.runner not in runners:
                runners.append(check.runner)
    return runners


def _header(runner: str) -> str:
    return safe(HEADERS.get(runner, runner))


def summary_table(result: RunResult, *, show_source: bool = True, width: int | None = None) -> Table:
    """Cases by runner. Ids, ops and headers are never broken mid-word: when one column per
    runner does not fit ``width``, the verdicts go into one column that wraps between runners."""
    runners = _runners(result)
    id_width = max([len("case"), *(len(safe(c.case_id)) for c in result.cases)])
    op_width = max([2, *(len(c.op) for c in result.cases)])
    verdict_width = max(len(v) for v in VERDICTS)
    wide = id_width + op_width + verdict_width + sum(max(len(_header(r)), verdict_width) + 2 for r in runners) + 8
    if show_source:
        wide += max([6, *(len(_short_source(c.source)) for c in result.cases)]) + 2
    compact = width is not None and wide > width
    table = Table(title=f"poolcheck {result.kind}: {len(result.cases)} case(s)", show_lines=False, expand=False,
                  box=box.SIMPLE_HEAD)
    # Narrow terminal and long ids: one column, each case's id on its own line (ids stay whole).
    stacked = compact and width is not None and id_width > width - 24
    if stacked:
        table.add_column("case\n    result, op, checks", overflow="fold")
        for case in result.cases:
            by_runner = {c.runner: c for c in case.checks}
            cell = Text(safe(case.case_id) + "\n    ")
            cell.append_text(_verdicts_cell(case, runners, by_runner))
            table.add_row(cell)
        return table
    table.add_column("case", no_wrap=True, overflow="fold")
    if compact:
        # Narrow terminal: result, op and every runner's verdict in one cell that wraps between words.
        table.add_column("result, op, checks", overflow="fold", min_width=16)
    else:
        table.add_column("op", no_wrap=True)
        table.add_column("result", no_wrap=True)
        for r in runners:
            table.add_column(Text(_header(r)), no_wrap=True, min_width=len(_header(r)))
        if show_source:
            table.add_column("source", overflow="fold", style="dim")
    for case in result.cases:
        by_runner = {c.runner: c for c in case.checks}
        if compact:
            table.add_row(Text(safe(case.case_id)), _verdicts_cell(case, runners, by_runner))
            continue
        cells = [verdict_text(by_runner[r].verdict) if r in by_runner else Text("-", style="dim") for r in runners]
        extra = [Text(safe(_short_source(case.source)))] if show_source else []
        table.add_row(Text(safe(case.case_id)), Text(safe(case.op)), verdict_text(case.verdict), *cells, *extra)
    return table


def _verdicts_cell(case: CaseResult, runners: list[str], by_runner: dict[str, Check]) -> Text:
    """``fail MaxPool-14 numpy:pass ORT:fail``: wraps between words, never inside one."""
    cell = verdict_text(case.verdict)
    if case.op:
        cell.append(f" {safe(case.op)}")
    for r in runners:
        if r in by_runner:
            cell.append(f" {_header(r)}:", style="dim")
            cell.append_text(verdict_text(by_runner[r].verdict))
    return cell


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
    by_severity = severity_counts(result)
    if by_severity:
        text.append("; severity: " + ", ".join(f"{n} {sev}" for sev, n in by_severity.items()), style="bold")
    if result.interrupted:
        text.append("  (interrupted: partial result)", style="bold yellow")
    return text


def severity_counts(result: RunResult) -> dict[str, int]:
    """Non-passing checks by severity (violation, unspecified, limitation, erratum)."""
    out: dict[str, int] = {}
    for case in result.cases:
        for check in case.checks:
            if check.severity:
                out[check.severity] = out.get(check.severity, 0) + 1
    return out


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
            text.append(f"({coords})={safe(cell.value)}", style=style)
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
        table.add_row(Text(safe(d.output)), pos, Text(safe(d.expected)), Text(safe(d.actual)), _window_text(d))
    return table


def _same_finding(a: Check, b: Check) -> bool:
    """Two runners that report the same verdict, message and differing elements."""
    key = lambda c: (c.verdict, c.message.replace(f"engine={c.runner}", ""),  # noqa: E731
                     [(d.output, d.position, d.expected, d.actual) for d in c.diffs])
    return key(a) == key(b)


def case_detail(case: CaseResult, *, with_replay: bool = True) -> Panel:
    parts: list[object] = []
    if case.title:
        parts.append(Text(safe(case.title), style="italic"))
    shown: list[Check] = []
    for check in case.checks:
        if check.verdict in ("pass", "skip"):
            continue
        twin = next((c for c in shown if _same_finding(c, check)), None)
        if twin is not None:
            parts.append(Text.assemble((f"{safe(check.runner)}: ", "bold"), verdict_text(check.verdict),
                                       f"  (same as {safe(twin.runner)})"))
            continue
        shown.append(check)
        head = Text()
        head.append(f"{safe(check.runner)}: ", style="bold")
        head.append_text(verdict_text(check.verdict))
        if check.severity and check.severity != check.verdict:
            head.append(f" ({safe(check.severity)})", style=SEVERITY_STYLES.get(check.severity, ""))
        if check.message:
            head.append(f"  {safe(check.message, newlines=True)}")
        parts.append(head)
        if check.diagnosis:
            parts.append(Text(f"diagnosis: {safe(check.diagnosis, newlines=True)}", style="cyan"))
        if check.diffs:
            parts.append(diff_table(check))
            if check.n_diffs > len(check.diffs):
                parts.append(Text(f"... and {check.n_diffs - len(check.diffs)} more differing element(s)", style="dim"))
    if case.erratum:
        parts.append(Text(f"erratum: the document says {safe(case.erratum.get('says'), newlines=True)}",
                          style="magenta"))
        parts.append(Text(f"why: {safe(case.erratum.get('why'), newlines=True)}", style="magenta"))
    if case.message:
        parts.append(Text(safe(case.message, newlines=True)))
    if case.source:
        parts.append(Text(f"source: {safe(case.source)}", style="dim"))
    if case.replay and with_replay:
        parts.append(Text(f"replay: {safe(case.replay)}", style="dim"))
    return Panel(Group(*parts), title=Text(f"{safe(case.case_id)}  [{case.verdict}]"), title_align="left",
                 border_style=STYLES.get(case.verdict, ""))


def render(result: RunResult, console: Console, *, details: bool = True) -> None:
    # The source column only fits a wide terminal; per-case panels and --json always carry it.
    console.print(summary_table(result, show_source=console.width >= 120, width=console.width))
    if details:
        for case in result.cases:
            if case.verdict not in ("pass", "skip"):
                try:
                    console.print(case_detail(case, with_replay=False))
                    if case.replay:
                        # One unbroken line (copy and paste it), not wrapped inside the panel.
                        console.print(Text(f"replay: {safe(case.replay)}", style="dim"), soft_wrap=True)
                except Exception as exc:  # one case's rendering never loses the others
                    console.print(Text(f"{safe(case.case_id)}: cannot render this case's details "
                                       f"({type(exc).__name__}: {safe(exc)})", style="bold yellow"))
    console.print(counts_line(result))
