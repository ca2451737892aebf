"""``poolcheck export CASES... --format onnx-tests OUT``: cases as ONNX backend test directories."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from poolcheck.cases import load_paths
from poolcheck.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    console,
    err_console,
    fail,
    path_parser,
    safe,
    user_errors,
    writable_dir,
)
from poolcheck.models.export import export_cases

FORMATS = ("onnx-tests",)


def register(app: typer.Typer) -> None:
    app.command("export")(export)


def export(
    paths: Annotated[list[Path], typer.Argument(metavar="CASES... OUT", parser=path_parser("CASES... OUT"), help="Case files or folders, then the output folder.", show_default=False)],
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT", help="onnx-tests: ONNX backend test directories (model.onnx + test_data_set_0/input_0.pb, output_0.pb).")] = "onnx-tests",
    as_json: Annotated[bool, typer.Option("--json", help="Print what was written (and what not, with the reason) as JSON.")] = False,
) -> None:
    """Write every case ONNX can express as an ONNX backend test directory holding poolcheck's
    reference outputs (numpy engine); list the others with the reason. OUT/poolcheck-export.json
    records what was written: a later export replaces only those directories, unchanged, and
    stops before writing anything when something else is in the way.

    Exit codes: 0 written (inexpressible cases are listed, not failures), 2 bad input or usage.
    """

    if fmt not in FORMATS:
        raise fail(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if len(paths) < 2:
        raise fail("expected case files or folders and then the output folder (poolcheck export CASES... OUT)")
    *sources, out = paths
    writable_dir("OUT", out)
    with user_errors():
        cases, errors = load_paths(sources)
    for err in errors:
        err_console.print("error: " + safe(str(err)), soft_wrap=True, markup=False, highlight=False)
    if errors:
        raise typer.Exit(EXIT_USAGE)
    with user_errors():
        done = export_cases(cases, out)
    written = [d for d in done if d.directory is not None]
    skipped = [d for d in done if d.directory is None]
    if as_json:
        sys.stdout.write(json.dumps({"format": fmt, "out": str(out),
                                     "written": [{"case": d.case_id, "source": d.source, "directory": str(d.directory)}
                                                 for d in written],
                                     "not_expressible": [{"case": d.case_id, "source": d.source, "reason": d.reason}
                                                         for d in skipped]}, indent=2) + "\n")
    else:
        for d in skipped:
            console.print(f"not expressible in ONNX: {safe(d.case_id)} ({safe(d.source)}): {safe(d.reason)}", markup=False,
                          highlight=False, soft_wrap=True)
        console.print(f"{len(written)} case(s) written to {safe(str(out))} as ONNX backend test directories; "
                      f"{len(skipped)} not expressible in ONNX", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_OK)
