"""``poolcheck run [PATH...]``: every case through the engines (and peers), with verdicts.
Parses options, calls :func:`poolcheck.runner.run_selection`, renders, maps to the exit code."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from poolcheck.cli.common import (
    ENGINE_HELP,
    console,
    engines_for,
    err_console,
    exit_code,
    load_peers,
    parse_fail_on,
    parse_peer_timeout,
    path_parser,
    safe,
    text_parser,
    user_errors,
    write_report_set,
)
from poolcheck.corpus import CORPUS_DIR
from poolcheck.files import stdout_to_stderr
from poolcheck.peers.registry import builtin_list
from poolcheck.report import console as console_report
from poolcheck.report.jsonfmt import to_json
from poolcheck.report.writers import check_report_dir
from poolcheck.runner import replay_options_for, run_selection, select


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    paths: Annotated[list[Path] | None, typer.Argument(metavar="PATH", parser=path_parser("PATH"), help="Case files or folders (searched recursively); FILE::ID selects one case. Default: the bundled corpus (seeds, edge cases, known divergences).", show_default=False)] = None,
    k: Annotated[str | None, typer.Option("-k", metavar="TEXT", parser=text_parser("-k", "a case id"), help="Select cases whose id contains any of these comma-separated substrings; 'not X' excludes.")] = None,
    engine: Annotated[str, typer.Option(metavar="ENGINE", help=ENGINE_HELP)] = "all",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON (schema poolcheck.result/2) instead of tables.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Summary table only, no per-case diffs.")] = False,
    peers: Annotated[str | None, typer.Option("--peers", metavar="PEERS", help=f"Also run every case on these peers (comma-separated): {builtin_list()}, a module (my_pkg.my_peer) or a file (path/to/peer.py).")] = None,
    peer_timeout: Annotated[str, typer.Option("--peer-timeout", metavar="DURATION", help="How long a peer may take per batch before it counts as a timeout (e.g. 500ms, 20s, 2m).")] = "60s",
    report_dir: Annotated[Path | None, typer.Option("--report-dir", metavar="DIR", parser=path_parser("--report-dir"), help="Also write result.json, junit.xml, summary.md and report.html here (replaced as a set; also after Ctrl-C).")] = None,
    fail_on: Annotated[str, typer.Option("--fail-on", metavar="SEVERITIES", help="Severities that make the exit code 1 (comma-separated: violation, unspecified, limitation, erratum; or all).")] = "violation",
) -> None:
    """Run case files through poolcheck's reference engines (and peers) and report every contradiction.

    Exit codes: 0 nothing to report, 1 a divergence of a --fail-on severity, 2 bad input or a case that
    could not be judged (verdict error), 130 interrupted.
    """
    with user_errors():
        timeout = parse_peer_timeout(peer_timeout)
        severities = parse_fail_on(fail_on)
        engines = engines_for(engine)
        if report_dir is not None:
            check_report_dir(report_dir)  # before any work: an unwritable folder is a usage error
        peer_list = load_peers(peers, timeout) if peers is not None else []
        selection = select(list(paths) if paths else [CORPUS_DIR], k)
    with stdout_to_stderr(as_json):
        result = run_selection(selection, engines, peer_list, peer_timeout=timeout,
                               replay_options=replay_options_for(engine, peers, timeout),
                               command="poolcheck " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    if report_dir is not None:
        write_report_set(result, report_dir, to_stderr=as_json)
    if as_json:
        sys.stdout.write(to_json(result))
    else:
        console_report.render(result, console, details=not quiet)
    for err in selection.errors:
        err_console.print("error: " + safe(str(err)), soft_wrap=True, markup=False, highlight=False)
    raise typer.Exit(exit_code(result, severities))
