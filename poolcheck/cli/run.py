"""``poolcheck run PATH...``: every case through the engines (and peers), with verdicts."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from poolcheck.cases import load_paths
from poolcheck.cli.common import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, console, err_console, fail, user_errors
from poolcheck.engines import available_engines, get_engine
from poolcheck.peers.registry import resolve_peers
from poolcheck.report import console as console_report
from poolcheck.report.jsonfmt import to_json
from poolcheck.report.model import CaseResult
from poolcheck.report.writers import write_reports
from poolcheck.runner import new_result, peer_checks, run_case, select_cases


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    paths: Annotated[list[Path], typer.Argument(help="Case files or folders (searched recursively).")],
    k: Annotated[str | None, typer.Option("-k", help="Select cases whose id contains any of these comma-separated substrings; 'not X' excludes.")] = None,
    engine: Annotated[str, typer.Option(help="numpy, c or all (every engine built here).")] = "all",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON (schema poolcheck.result/1) instead of tables.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Summary table only, no per-case diffs.")] = False,
    peers: Annotated[str | None, typer.Option("--peers", help="Also run every case on these peers (comma-separated): onnxruntime, openvino, torch, onnx_reference, a module (my_pkg.my_peer) or a file (path/to/peer.py).")] = None,
    peer_timeout: Annotated[float, typer.Option("--peer-timeout", help="Seconds a peer may take per batch before it counts as a timeout.")] = 60.0,
    report_dir: Annotated[Path | None, typer.Option("--report-dir", help="Also write result.json, junit.xml, summary.md and report.html here (atomically; also after Ctrl-C).")] = None,
) -> None:
    """Run case files through poolcheck's reference engines and report every contradiction."""
    with user_errors():
        if engine == "all":
            engines = available_engines()
        else:
            get_engine(engine)  # raises a clear error for unknown / unavailable engines
            engines = [engine]
        peer_list = resolve_peers(peers, load_timeout=peer_timeout) if peers else []
        cases, errors = load_paths(paths)
    selected = select_cases(cases, k)
    if k and not selected and not errors:
        raise fail(f"-k {k!r} selects none of the {len(cases)} case(s)")
    result = new_result("poolcheck " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    for err in errors:
        result.cases.append(CaseResult(case_id=err.case_id or (err.path or "?"), verdict="error",
                                       source=f"{err.path}:{err.line}" if err.line else (err.path or ""),
                                       message=str(err)))
    try:
        by_case = peer_checks(selected, peer_list, timeout=peer_timeout) if peer_list else {}
        for case in selected:
            result.cases.append(run_case(case, engines, by_case.get(case.id, [])))
        for peer in peer_list:
            result.versions[peer.name] = peer.version() or "unavailable"
    except KeyboardInterrupt:
        result.interrupted = True
    if report_dir is not None:
        with user_errors():
            write_reports(result, report_dir)

    if as_json:
        sys.stdout.write(to_json(result))
    else:
        console_report.render(result, console, details=not quiet)
    if errors:
        for err in errors:
            err_console.print(f"[bold yellow]error:[/] {err}", soft_wrap=True, markup=True)
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(EXIT_FAILURES if result.failed or result.interrupted else EXIT_OK)
