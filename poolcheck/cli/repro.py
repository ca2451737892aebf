"""``poolcheck repro [CASES...] -o DIR``: a standalone reproducer script per finding."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from poolcheck.cli.common import (
    EXIT_OK,
    console,
    err_console,
    fail,
    path_parser,
    safe,
    text_parser,
    user_errors,
    writable_dir,
)
from poolcheck.repro import write_reproducers


def register(app: typer.Typer) -> None:
    app.command("repro")(repro)


def repro(
    paths: Annotated[list[Path] | None, typer.Argument(metavar="CASES", parser=path_parser("CASES"), help="Case files or folders: saved fuzz finds, registry entries (default: the bundled known-divergence registry).", show_default=False)] = None,
    output: Annotated[Path, typer.Option("--output", "-o", parser=path_parser("--output"), help="Folder to write the scripts (and the .onnx models they read) into.")] = Path("repro"),
    k: Annotated[str | None, typer.Option("-k", parser=text_parser("-k", "a case id"), help="Only cases whose id contains this.")] = None,
    runtime: Annotated[str | None, typer.Option("--runtime", help="The runtime to call: a built-in peer name (onnxruntime, torch:layout=channels_last, ...) or a plugin (a .py file or a module name); default: the one each case's divergence was found on.")] = None,
) -> None:
    """Write, for each finding, a self-contained Python script that needs only NumPy and the
    runtime: it builds the input, calls the runtime's public API plainly, computes what the text
    requires with its own loop, prints both with the spec sentences, and exits 1 while the
    divergence stands (0 once fixed)."""
    with user_errors():
        writable_dir("--output", output)
        try:
            run = write_reproducers(paths or [], output, k=k, runtime=runtime)
        except OSError as exc:  # a folder that cannot be made (/proc/x), a full disk
            raise fail(f"--output: cannot write {output}: {exc.strerror or exc}") from None
    for case_id, files in run.written:
        console.print(f"{safe(case_id)}: " + ", ".join(safe(str(f)) for f in files), highlight=False, markup=False)
    for case_id, why in run.skipped:
        err_console.print(f"skipped {safe(case_id)}: {safe(why)}", highlight=False, markup=False)
    err_console.print(f"{len(run.written)} script(s) in {safe(str(output))}; {len(run.skipped)} skipped",
                      highlight=False, markup=False)
    raise typer.Exit(EXIT_OK)
