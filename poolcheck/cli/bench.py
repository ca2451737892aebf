"""``poolcheck bench``: the named workloads, every contender single-threaded, side by side."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from poolcheck.bench import run_bench, select
from poolcheck.bench.contenders import all_contenders
from poolcheck.bench.render import renderable, to_json, to_markdown
from poolcheck.bench.summary import read_build_time, read_setup_time
from poolcheck.cli.common import EXIT_OK, console, err_console, fail, parse_duration, safe, user_errors, writable_dir
from poolcheck.engines import c_engine
from poolcheck.files import write_text_atomic

DEFAULT_DOCS = "docs/benchmarks.md"


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)


def docs_target(text: str) -> Path:
    """The --write-docs path, checked before anything is measured: a regular file (or nothing
    yet) in a folder that exists or can be created, and that is writable."""
    if not text.strip():
        raise fail("--write-docs: expected a file path, got an empty string")
    path = Path(text)
    if path.is_dir():
        raise fail(f"--write-docs: {text!r} is a folder; expected a file path such as {DEFAULT_DOCS}")
    if path.exists() and not path.is_file():
        raise fail(f"--write-docs: {text!r} exists and is not a regular file")
    if path.is_symlink() and not path.exists():
        raise fail(f"--write-docs: {text!r} is a dangling symbolic link")
    writable_dir("--write-docs", path.resolve().parent)
    return path


#: Every instruction-set path the C engine has, on any CPU.
ISA_NAMES = ("portable", "avx2", "avx512")


def isa_paths(text: str) -> list[str]:
    """The --isa list: path names (or ``all``: every path this CPU and build run), each one this
    CPU and build can run, in the order given."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise fail(f"--isa: expected {', '.join(ISA_NAMES)} or all, got {text!r}")
    runs = c_engine.available_isas()
    if not runs:
        raise fail(f"--isa: the C engine is not available here ({c_engine.UNAVAILABLE_REASON})")
    if names == ["all"]:
        return list(runs)
    for name in names:
        if name not in ISA_NAMES:
            raise fail(f"--isa: unknown instruction-set path {name!r}; expected {', '.join(ISA_NAMES)} or all")
        if name not in runs:
            raise fail(f"--isa: this CPU and build cannot run the {name} path (they run: {', '.join(runs)})")
    return list(dict.fromkeys(names))


def bench(
    workloads: Annotated[str | None, typer.Option(
        "--workloads", "-w", help="Comma-separated workload names (W1,W1i,W2,W3,W4,W5,W6; the rest of the family: F1,F2,F3); default: W1 to W6.")] = None,
    reps: Annotated[int, typer.Option("--reps", min=3, help="Timed calls per contender and workload.")] = 200,
    time_budget: Annotated[str, typer.Option(
        "--time-budget", metavar="DURATION",
        help="Timed calls per contender and workload stop early after this long (e.g. 3s).")] = "3s",
    budget_alias: Annotated[str | None, typer.Option("--budget", hidden=True)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON (schema poolcheck.bench/1).")] = False,
    write_docs: Annotated[str | None, typer.Option(
        "--write-docs", metavar="PATH",
        help=f"Also write the Markdown report to PATH (the repository keeps it in {DEFAULT_DOCS}). Nothing is "
             "written without it.")] = None,
    isa: Annotated[str | None, typer.Option(
        "--isa", metavar="PATHS",
        help="Also time the C engine on these instruction-set paths, side by side in the same run "
             "(portable,avx2,avx512; all: every path this CPU runs), each over ONNX Runtime.")] = None,
) -> None:
    """Time poolcheck's engines against ONNX Runtime, OpenVINO and PyTorch on named pooling
    workloads, one thread each. Every contender's output is checked against poolcheck's engine
    before it is timed; a wrong one is shown as wrong, an absent one as absent. The headline
    ratios (C / ORT, NumPy / ORT, C / fastest NCHW contender) come side by side from this one run,
    with the set-up time of the last fresh `make install` where it was recorded."""

    with user_errors():
        names = [n for n in workloads.split(",") if n.strip()] if workloads else None
        chosen = select(names)
        budget = parse_duration("--time-budget", budget_alias if budget_alias is not None else time_budget)
        docs_path = None if write_docs is None else docs_target(write_docs)
        paths = [] if isa is None else isa_paths(isa)
        with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), TimeElapsedColumn(),
                      console=err_console, transient=True, disable=not err_console.is_terminal) as progress:
            task = progress.add_task("preparing", total=None)

            def on_progress(message: str, step: int, total: int) -> None:
                progress.update(task, description=message, completed=step, total=total)

            run = run_bench(chosen, reps=reps, budget_s=budget, progress=on_progress, contenders=all_contenders(paths))
        run.machine.update(read_setup_time().machine_fields())
        run.machine.update(read_build_time().machine_fields())
        if as_json:
            sys.stdout.write(to_json(run) + "\n")
        else:
            console.print(renderable(run))
        if docs_path is not None:
            command = "poolcheck bench" + (f" --workloads {workloads}" if workloads else "") + \
                (f" --reps {reps}" if reps != 200 else "") + \
                (f" --isa {isa}" if isa is not None else "") + \
                f" --write-docs {docs_path}"
            try:
                written = write_text_atomic(docs_path, to_markdown(run, command))
            except OSError as exc:
                raise fail(f"--write-docs: cannot write {docs_path}: {exc}") from None
            err_console.print(f"wrote {safe(str(written))}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_OK)
