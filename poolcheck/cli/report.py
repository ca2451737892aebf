"""``poolcheck report FILE.json``: re-render a saved result; ``poolcheck explain CASE --at ...``:
one output element taken apart."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from poolcheck.cli.common import (
    ENGINE_HELP,
    EXIT_OK,
    console,
    engines_for,
    err_console,
    load_peers,
    parse_peer_timeout,
    path_parser,
    safe,
    text_parser,
    user_errors,
    writable_dir,
    write_report_set,
)
from poolcheck.errors import AttributeValueError
from poolcheck.explain import explain_element, find_case, parse_position
from poolcheck.report import console as console_report
from poolcheck.report.explain import explanation_view
from poolcheck.report.jsonfmt import load_result
from poolcheck.report.merge import merge_command
from poolcheck.report.writers import FORMATS, render, write_text

FORMAT_NAMES = (*FORMATS, "console")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
    app.command("explain")(explain)


def report(
    file: Annotated[Path, typer.Argument(parser=path_parser("FILE"), help="A saved result (result.json from --report-dir, or `poolcheck run --json` output); or `merge A.json B.json ...` to merge the results of separate runs (one case per divergence, labelled with the machines that showed it).")],
    more: Annotated[list[Path] | None, typer.Argument(parser=path_parser("FILE"), help="After `merge`: the result files to merge.", show_default=False)] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="html, junit, md, json, or console (the terminal view).")] = "console",
    output: Annotated[Path | None, typer.Option("--output", "-o", parser=path_parser("--output"), help="Write here (atomically) instead of standard output.")] = None,
    report_dir: Annotated[Path | None, typer.Option("--report-dir", parser=path_parser("--report-dir"), help="With merge: write result.json, junit.xml, summary.md and report.html here.")] = None,
) -> None:
    """Re-render a saved result as HTML, JUnit XML, Markdown, JSON or terminal tables; `report merge
    A.json B.json ...` merges several."""
    with user_errors():
        if fmt not in FORMAT_NAMES:
            raise AttributeValueError("--format", f"expected one of {', '.join(FORMAT_NAMES)}, got {fmt!r}")
        if str(file) == "merge" or more or report_dir is not None:  # poolcheck/report/merge.py

            if str(file) != "merge" and more:
                raise AttributeValueError("FILE", f"one result file at a time, or `poolcheck report merge {file} ...`")
            if str(file) != "merge":
                raise AttributeValueError("--report-dir", "is for `poolcheck report merge A.json B.json ...`; "
                                                          "re-render one result with --format and --output")
            result = merge_command(more or [])
            if report_dir is not None:
                write_report_set(result, report_dir, to_stderr=True)
        else:
            result = load_result(file)
        if fmt == "console":
            if output is not None:
                raise AttributeValueError("--output", "the console format prints to the terminal; choose html, junit, md or json")
            console_report.render(result, console)
            raise typer.Exit(EXIT_OK)
        if output is not None:  # before rendering: a folder that is a file, or not writable, is one line
            writable_dir("--output", output.parent)
        text = render(result, fmt)
        if output is None:
            sys.stdout.write(text)
        else:
            write_text(output, text)
            err_console.print(f"wrote {safe(str(output))}", highlight=False, markup=False)
    raise typer.Exit(EXIT_OK)


def explain(
    case_ref: Annotated[str, typer.Argument(metavar="CASE", help="A case file (with -k ID), FILE::ID, or the ID of a case shipped with poolcheck.")],
    k: Annotated[str | None, typer.Option("-k", parser=text_parser("-k", "a case id"), help="The case id (exact, or a substring matching one case).")] = None,
    at: Annotated[str | None, typer.Option("--at", help="The output element n,c,d1,... (default: the first element where the reference and the document differ, else all zeros).")] = None,
    engine: Annotated[str, typer.Option(metavar="ENGINE", help=ENGINE_HELP)] = "all",
    peers: Annotated[str | None, typer.Option("--peers", help="Also ask these peers (comma-separated; as in `poolcheck run --peers`).")] = None,
    peer_timeout: Annotated[str, typer.Option("--peer-timeout", metavar="DURATION", help="How long a peer may take (e.g. 500ms, 20s, 2m).")] = "60s",
) -> None:
    """Take one output element apart: its window over the padded input, every engine's and peer's
    value and index, the documented value, and the implied argmax or divisor."""
    with user_errors():
        case = find_case(case_ref, k)
        engines = engines_for(engine)
        timeout = parse_peer_timeout(peer_timeout)
        peer_list = load_peers(peers, timeout) if peers is not None else []
        position = parse_position(at, case) if at is not None else None
        ex = explain_element(case, position, engines, peer_list, peer_timeout=timeout)
        console.print(explanation_view(ex))
    raise typer.Exit(EXIT_OK)
