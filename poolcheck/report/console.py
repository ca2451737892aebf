"""The terminal view (rich): a summary table, then a diff for every fail and erratum; for
``poolcheck fuzz`` the live progress view and the divergence table."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from poolcheck.report.text import safe
from poolcheck.results import VERDICTS, CaseResult, Check, Diff, FuzzSummary, KnownState, RunResult, Signature

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
    parts: list[RenderableType] = []
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


# --------------------------------------------------------------------------- poolcheck fuzz


def _short(sig: Signature) -> str:
    return f"{sig.subject} {sig.op}: {sig.detail}"


def fuzz_progress_view(p: Any, budget: float | None, max_examples: int | None) -> Group:
    """The live view of a running campaign (``p``: a :class:`poolcheck.fuzz.session.Progress`)."""
    head = Text()
    head.append("poolcheck fuzz  ", style="bold")
    limit = [f"{p.elapsed:5.1f} / {budget:g} s" if budget else f"{p.elapsed:5.1f} s"]
    limit.append(f"{p.examples} / {max_examples} examples" if max_examples else f"{p.examples} examples")
    head.append("  ".join(limit))
    rate = p.cases / p.elapsed if p.elapsed > 0 else 0.0
    head.append(f"   {p.cases} configurations ({rate:,.0f}/s)", style="cyan")
    head.append(f"   {p.phase}", style="dim")
    statuses = ("ok", "rejects", "declined", "crash", "timeout")
    peers = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    peers.add_column("peer")
    peers.add_column("compared/s", justify="right")
    for status in statuses:
        peers.add_column(status, justify="right")
    for name, counts in sorted(p.peer_status.items()):
        r = p.compared.get(name, 0) / p.elapsed if p.elapsed > 0 else 0.0
        peers.add_row(safe(name), f"{r:,.0f}", *(str(counts.get(s, 0)) for s in statuses))
    classes = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    classes.add_column("divergence class", overflow="fold")
    classes.add_column("configs", justify="right")
    classes.add_column("", justify="left")
    for sig, n in sorted(p.divergent.items(), key=lambda t: (-t[1], t[0]))[:14]:
        mark = Text("known", style="dim") if sig in p.known else (
            Text("new, shrunk", style="bold red") if sig in p.new else Text("new", style="red"))
        classes.add_row(safe(_short(Signature.parse(sig))), str(n), mark)
    if len(p.divergent) > 14:
        classes.add_row(Text(f"... {len(p.divergent) - 14} more", style="dim"), "", "")
    return Group(head, peers, classes)


def fuzz_table(result: RunResult) -> Table:
    """One row per divergence class seen; readable at 80 columns (the diagnosis and the case file
    of each new one follow in its panel)."""
    fz = result.fuzz or FuzzSummary()
    table = Table(title="poolcheck fuzz: divergences", show_lines=False)
    table.add_column("status", no_wrap=True)
    table.add_column("subject", overflow="fold", max_width=16)  # folded, never cut: the name is the finding
    table.add_column("op", no_wrap=True)
    table.add_column("class", overflow="fold", min_width=16, ratio=1)
    table.add_column("configs", justify="right", no_wrap=True)
    table.add_column("first", justify="right", no_wrap=True)
    for case in result.cases:
        sig = case.signature
        if "new" not in case.tags or sig is None:
            continue  # the registry's own re-checks are summarised below the table
        check = case.checks[0]
        status = Text("NEW", style="bold red" if sig.key in fz.failing else "bold yellow")
        if check.severity:
            status.append(f"\n{check.severity}", style="")
        first = fz.detected_at_s.get(sig.key)
        table.add_row(status, Text(safe(sig.subject)), Text(sig.op), Text(safe(sig.detail), style="bold"),
                      str(fz.divergent_configurations.get(sig.key, 1)), f"{first:.1f} s" if first is not None else "-")
    for key, n in sorted(fz.known_seen.items()):
        sig = Signature.parse(key)
        first = fz.detected_at_s.get(key)
        table.add_row(Text("known", style="dim"), Text(safe(sig.subject)), Text(sig.op), Text(safe(sig.detail)), str(n),
                      f"{first:.1f} s" if first is not None else "-")
    return table


def fuzz_throughput(result: RunResult) -> Text:
    fz = result.fuzz or FuzzSummary()
    t = Text()
    t.append(f"{fz.examples} examples, {fz.cases} configurations in {fz.elapsed_s:.1f} s "
             f"({fz.cases_per_s:,.0f} configurations/s")
    for peer, r in sorted(fz.compared_per_s.items()):
        t.append(f"; {safe(peer)} {r:,.0f}/s")
    t.append(")")
    return t


def render_fuzz(result: RunResult, console: Console, *, saved_to: str | None = None,
                reports_to: str | None = None) -> None:
    """The end of ``poolcheck fuzz``: the divergence table, a panel per new divergence (and its
    replay command), the known divergences that changed, throughput and the closing line."""
    fz = result.fuzz or FuzzSummary()
    console.print(fuzz_table(result))
    for case in result.cases:
        if "new" in case.tags:
            console.print(case_detail(case, with_replay=False))
            if case.replay:  # outside the panel, never wrapped: it pastes as one command
                console.print(Text(f"replay: {safe(case.replay)}", style="dim"), soft_wrap=True)
    known = [c for c in result.cases if "known" in c.tags]
    for case in known:
        if KnownState.FIXED in case.tags or KnownState.CHANGED in case.tags:
            style = "bold green" if KnownState.FIXED in case.tags else "bold red"
            console.print(Text(f"known {safe(case.case_id)}: {safe(case.message)}", style=style))
    reproduced = sum(1 for c in known if KnownState.REPRODUCES in c.tags)
    skipped = sum(1 for c in known if KnownState.SKIPPED in c.tags)
    fixed = sum(1 for c in known if KnownState.FIXED in c.tags)
    console.print(fuzz_throughput(result))
    for peer, why in fz.unavailable_peers.items():
        console.print(Text(f"peer {safe(peer)} unavailable: {safe(why)}", style="yellow"))
    for w in fz.warnings:
        console.print(Text(f"warning: {safe(w)}", style="yellow"))
    line = Text()
    line.append(f"{len(fz.new)} new divergence(s)", style="bold red" if fz.failing else "bold green")
    if fz.new:
        line.append(f" ({len(fz.failing)} of a --fail-on severity: {', '.join(sorted(fz.fail_on))})")
    line.append(f", {len(fz.known_seen)} known class(es) seen; registry: {reproduced} reproduce, "
                f"{fixed} fixed upstream, {skipped} not re-checked")
    if result.interrupted:
        line.append("  (interrupted: partial result)", style="bold yellow")
    console.print(line)
    if fz.saved and saved_to:
        console.print(f"case files written to {safe(saved_to)}", soft_wrap=True, markup=False)
    if reports_to:
        console.print(f"reports written to {safe(reports_to)}", soft_wrap=True, markup=False)
    console.print(Text(f"replay: {safe(fz.replay)}", style="dim"), soft_wrap=True)
