"""``poolcheck audit MODEL``: the pooling nodes of an ONNX or OpenVINO IR model, their risk
classes, and their exact configurations run on the engines and peers."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from poolcheck.cases.onnx_import import parse_input_shapes
from poolcheck.cli.common import (
    ENGINE_HELP,
    EXIT_OK,
    console,
    engines_for,
    err_console,
    exit_code,
    fail,
    load_peers,
    parse_fail_on,
    parse_peer_timeout,
    path_parser,
    safe,
    user_errors,
    write_report_set,
)
from poolcheck.files import resolve_path, stdout_to_stderr
from poolcheck.models.audit import POOLING_NODE_TYPES, NodeAudit, ProgressFn, audit_model
from poolcheck.peers.isolation import peer_facts
from poolcheck.report.writers import check_report_dir
from poolcheck.runner import replay_options_for

#: Peers ``audit`` runs by default (those installed here).
DEFAULT_PEERS = ("onnxruntime", "openvino")


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)


def audit(
    model: Annotated[Path, typer.Argument(metavar="MODEL", parser=path_parser("MODEL"), help="An ONNX model (.onnx) or OpenVINO IR (.xml).", show_default=False)],
    input_shape: Annotated[list[str] | None, typer.Option("--input-shape", metavar="NAME=DIMS", help="Shape of a dynamic model input, e.g. data=1,3,224,224 (repeatable).")] = None,
    peers: Annotated[str | None, typer.Option("--peers", metavar="PEERS", help="Peers to run every pooling node on (comma-separated; none: the engines alone). Default: onnxruntime and openvino where installed.")] = None,
    engine: Annotated[str, typer.Option(metavar="ENGINE", help=ENGINE_HELP)] = "all",
    as_json: Annotated[bool, typer.Option("--json", help="Print the audit as JSON.")] = False,
    report_dir: Annotated[Path | None, typer.Option("--report-dir", metavar="DIR", parser=path_parser("--report-dir"), help="Also write result.json, junit.xml, summary.md and report.html here.")] = None,
    fail_on: Annotated[str, typer.Option("--fail-on", metavar="SEVERITIES", help="Severities that make the exit code 1 (comma-separated: violation, unspecified, limitation, erratum; or all).")] = "violation",
    peer_timeout: Annotated[str, typer.Option("--peer-timeout", metavar="DURATION", help="How long a peer may take per batch (e.g. 500ms, 20s, 2m).")] = "60s",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the nodes that diverge or cannot be judged, and no progress bar.")] = False,
) -> None:
    """Audit every pooling node of a model: canonical attributes, output shape under each
    convention, risk classes (and the known divergences they point at), and a run of the node's
    exact configuration with random and adversarial inputs on the engines and peers.

    Nodes inside If, Loop and Scan subgraphs are audited too; nodes with the same configuration
    run once. Each divergence is named by the fuzzer's diagnosis.

    Exit codes: 0 no node diverges, 1 a node diverges on a peer (per --fail-on), 2 unreadable
    model, shapes not inferable (give --input-shape), a node that cannot be judged, or bad
    options.
    """

    with user_errors():
        timeout = parse_peer_timeout(peer_timeout)
        severities = parse_fail_on(fail_on)
        engines = engines_for(engine)
        if report_dir is not None:
            check_report_dir(report_dir)
        shapes = parse_input_shapes(list(input_shape or []))
        no_peers = peers is not None and peers.strip() == "none"  # the engines alone, as fuzz --peers none
        if no_peers:
            peer_list = []
        elif peers is not None:
            peer_list = load_peers(peers, timeout)
        else:
            defaults = load_peers(",".join(DEFAULT_PEERS), timeout)  # those available, as their workers say
            peer_list = [p for p, f in zip(defaults, peer_facts(defaults)) if f.available]
    try:
        where = resolve_path(model)
    except OSError as exc:  # a loop of symbolic links
        raise fail(f"{model}: cannot read: {exc.strerror}") from None
    # the options as `poolcheck run` repeats them: plugin files by absolute path, --engine, --peer-timeout
    options = replay_options_for(engine, None if no_peers else peers or ",".join(p.name for p in peer_list) or None,
                                 timeout) + (["--peers", "none"] if no_peers else [])
    replay = " ".join(["poolcheck", "audit", shlex.quote(str(where)),
                       *(f"--input-shape={shlex.quote(s)}" for s in input_shape or []),
                       *(shlex.quote(o) for o in options)])
    with user_errors(), stdout_to_stderr(as_json), _progress(enabled=not quiet) as progress:
        run = audit_model(model, shapes, peer_list, engines, timeout=timeout, replay=replay, progress=progress,
                          command="poolcheck " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    result, audits = run.result, run.audits
    if report_dir is not None:
        write_report_set(result, report_dir, to_stderr=as_json)
    if as_json:
        sys.stdout.write(json.dumps(run.to_dict(), indent=2, default=str) + "\n")
    else:
        _render(model, audits, run.peers, quiet=quiet, configurations=run.configurations,
                interrupted=result.interrupted)
    for a in audits:
        if a.problem:
            err_console.print(f"error: {safe(str(model))}: node {safe(repr(a.node.name))}: {safe(a.problem)}",
                              soft_wrap=True, markup=False, highlight=False)
    if not audits:
        raise typer.Exit(EXIT_OK)
    raise typer.Exit(exit_code(result, severities))


@contextmanager
def _progress(*, enabled: bool) -> Iterator[ProgressFn | None]:
    """A progress bar on stderr while the audit runs (only on a terminal, and not with -q)."""
    if not enabled or not err_console.is_terminal:
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as bar:
        task = bar.add_task("reading the model", total=None)

        def update(phase: str, done: int, total: int) -> None:
            bar.update(task, description=safe(phase), completed=done, total=total)

        yield update


def _groups(audits: list[NodeAudit]) -> list[list[NodeAudit]]:
    """Nodes that ran as one configuration on the same input shape (their rows would be the
    same), in model order; a node that cannot be judged stands alone."""
    groups: dict[object, list[NodeAudit]] = {}
    for i, a in enumerate(audits):
        key = (a.config, tuple(a.node.input_shape or ())) if a.config is not None and not a.problem else i
        groups.setdefault(key, []).append(a)
    return list(groups.values())


def _names(group: list[NodeAudit]) -> str:
    more = f" (+{len(group) - 1} alike)" if len(group) > 1 else ""
    return safe(group[0].node.name) + more


def _render(model: Path, audits: list[NodeAudit], peer_names: list[str], *, quiet: bool = False,
            configurations: int = 0, interrupted: bool = False) -> None:
    if not audits:
        console.print(f"{safe(str(model))}: no pooling node ({', '.join(POOLING_NODE_TYPES)})", markup=False)
        return
    groups = _groups(audits)
    if quiet:
        groups = [g for g in groups if g[0].problem or g[0].peer_severities()]
    title = f"{safe(model.name)}: {len(audits)} pooling node(s)"
    if quiet:
        title += f", {sum(map(len, groups))} diverging or not judged"
    table = Table(title=Text(title), show_lines=True)
    table.add_column("node / op", overflow="fold")
    table.add_column("shape", overflow="fold")
    table.add_column("config", overflow="fold")
    table.add_column("risk classes", overflow="fold")
    table.add_column("differs", overflow="fold")
    for group in groups:
        a = group[0]
        n = a.node
        out = a.output_shape
        shape = f"{'x'.join(map(str, n.input_shape or []))}\n-> {'x'.join(map(str, out)) if out else '?'}"
        differs = a.peer_severities()
        known_peers = sorted({k.peer for k in a.known if k.peer in peer_names})
        risk_text = Text(", ".join(r.value for r in a.risks) or "-")
        if known_peers:
            risk_text.append(f"\n{len(a.known)} known ({', '.join(safe(p) for p in known_peers)})", style="dim")
        config = Text(n.spec.describe()) if n.spec and not a.problem else Text(safe(a.problem), style="red")
        if differs:
            verdict = Text("\n".join(f"{safe(p)}:\n {s}" for p, s in differs.items()),
                           style="bold red" if "violation" in differs.values() else "yellow")
        elif interrupted and not a.results and not a.problem:  # stopped before this node was judged
            verdict = Text("not run (interrupted)", style="bold yellow")
        else:
            verdict = Text("none", style="green")
        table.add_row(Text(f"{_names(group)}\n{safe(a.operator)}"), shape, config, risk_text, verdict)
    if groups:
        console.print(table)
    diverging = [g for g in _groups(audits) if g[0].diagnoses()]
    if diverging:
        console.print(Text("divergences:", style="bold"))
        for group in diverging:
            a = group[0]
            severities = a.peer_severities()
            for peer, texts in a.diagnoses().items():
                line = Text(f"  {_names(group)} ({safe(a.operator)}), {safe(peer)} "
                            f"({severities.get(peer, 'violation')}): ", style="bold")
                line.append(" | ".join(safe(t) for t in texts) or "not diagnosed", style="")
                console.print(line)
    disagree = [_names(g) for g in _groups(audits)
                if len({tuple(v) for v in g[0].output_shapes.values() if None not in v}) > 1]
    if disagree and not quiet:
        console.print(Text(f"output shape differs between conventions for: {', '.join(disagree)}", style="yellow"))
    judged = sum(1 for a in audits if not a.problem and (a.results or not interrupted))
    unjudged = sum(1 for a in audits if a.problem)
    # an interrupted audit says how far it got: the nodes it had not judged show "not run"
    count = f"{judged} of {len(audits) - unjudged} node(s) judged (interrupted)" if interrupted else \
        f"{judged} node(s) judged"
    summary = (f"peers: {', '.join(safe(p) for p in peer_names) or 'none'}; {count}"
               + (f", {unjudged} not (errors on stderr)" if unjudged else "")
               + (f" in {configurations} distinct configuration(s)" if configurations and configurations < judged else "")
               + ("" if interrupted else "; each ran with a random and an adversarial input (NaN, ties, -inf/+inf, "
                                         "extremes)"))
    console.print(Text(summary))
