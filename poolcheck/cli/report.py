"""``poolcheck report FILE.json``: re-render a saved result; ``poolcheck explain CASE --at ...``:
one output element taken apart."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from poolcheck.cases import load_file
from poolcheck.cases.model import Case
from poolcheck.cli.common import (
    ENGINE_HELP,
    EXIT_OK,
    console,
    engines_for,
    err_console,
    parse_duration,
    safe,
    user_errors,
    write_report_set,
)
from poolcheck.errors import AttributeValueError, CaseFileError
from poolcheck.explain import explain_element, parse_position
from poolcheck.report import console as console_report
from poolcheck.report.explain import explanation_view
from poolcheck.report.jsonfmt import load_result
from poolcheck.report.writers import FORMATS, render, write_text

FORMAT_NAMES = (*FORMATS, "console")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
    app.command("explain")(explain)


def report(
    file: Annotated[Path, typer.Argument(help="A saved result (result.json from --report-dir, or `poolcheck run --json` output); or `merge A.json B.json ...` to merge the results of separate runs (one case per divergence, labelled with the machines that showed it).")],
    more: Annotated[list[Path] | None, typer.Argument(help="After `merge`: the result files to merge.", show_default=False)] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="html, junit, md, json, or console (the terminal view).")] = "console",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here (atomically) instead of standard output.")] = None,
    report_dir: Annotated[Path | None, typer.Option("--report-dir", help="With merge: write result.json, junit.xml, summary.md and report.html here.")] = None,
) -> None:
    """Re-render a saved result as HTML, JUnit XML, Markdown, JSON or terminal tables; `report merge
    A.json B.json ...` merges several."""
    with user_errors():
        if fmt not in FORMAT_NAMES:
            raise AttributeValueError("--format", f"expected one of {', '.join(FORMAT_NAMES)}, got {fmt!r}")
        if str(file) == "merge" or more or report_dir is not None:  # poolcheck/report/merge.py
            from poolcheck.report.merge import merge_command

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
        text = render(result, fmt)
        if output is None:
            sys.stdout.write(text)
        else:
            write_text(output, text)
            err_console.print(f"wrote {safe(str(output))}", highlight=False, markup=False)
    raise typer.Exit(EXIT_OK)


def split_case_ref(ref: str, k: str | None) -> tuple[str, str | None]:
    """``path::id`` -> (path, id); a plain path keeps ``-k``. Both at once is a usage error."""
    if "::" in ref:
        path, case_id = ref.rsplit("::", 1)
        if k is not None and k != case_id:
            raise AttributeValueError("-k", f"the case is named twice ({case_id!r} in {ref!r} and -k {k!r})")
        return path, case_id
    return ref, k


def pick_case(cases: list[Case], case_id: str | None, path: str) -> Case:
    """The case with id ``case_id`` (exact, else the only one containing it)."""
    if case_id is None:
        if len(cases) == 1:
            return cases[0]
        ids = ", ".join(c.id for c in cases[:8]) + (", ..." if len(cases) > 8 else "")
        raise AttributeValueError("-k", f"{path} holds {len(cases)} cases; name one with -k ID or {path}::ID ({ids})")
    exact = [c for c in cases if c.id == case_id]
    if exact:
        return exact[0]
    partial = [c for c in cases if case_id in c.id]
    if len(partial) == 1:
        return partial[0]
    if not partial:
        raise AttributeValueError("-k", f"no case in {path} has the id {case_id!r}")
    raise AttributeValueError("-k", f"{case_id!r} matches {len(partial)} cases in {path}: "
                                    + ", ".join(c.id for c in partial[:8]))


def explain(
    case_ref: Annotated[str, typer.Argument(metavar="CASE", help="A case file (with -k ID) or FILE::ID.")],
    k: Annotated[str | None, typer.Option("-k", help="The case id (exact, or a substring matching one case).")] = None,
    at: Annotated[str | None, typer.Option("--at", help="The output element n,c,d1,... (default: the first element where the reference and the document differ, else all zeros).")] = None,
    engine: Annotated[str, typer.Option(metavar="ENGINE", help=ENGINE_HELP)] = "all",
    peers: Annotated[str | None, typer.Option("--peers", help="Also ask these peers (comma-separated; as in `poolcheck run --peers`).")] = None,
    peer_timeout: Annotated[str, typer.Option("--peer-timeout", metavar="DURATION", help="How long a peer may take (e.g. 500ms, 20s, 2m).")] = "60s",
) -> None:
    """Take one output element apart: its window over the padded input, every engine's and peer's
    value and index, the documented value, and the implied argmax or divisor."""
    with user_errors():
        path, case_id = split_case_ref(case_ref, k)
        if not Path(path).is_file():
            raise CaseFileError("no such case file", path=path)
        case = pick_case(load_file(path), case_id, path)
        engines = engines_for(engine)
        peer_list = []
        if peers:
            from poolcheck.peers.registry import resolve_peers

            peer_list = resolve_peers([p for p in peers.split(",") if p.strip()])
        timeout = parse_duration("--peer-timeout", peer_timeout)
        position = parse_position(at, case) if at is not None else None
        ex = explain_element(case, position, engines, peer_list, peer_timeout=timeout)
        console.print(explanation_view(ex))
    raise typer.Exit(EXIT_OK)
