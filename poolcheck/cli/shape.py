"""``poolcheck shape``: output-shape arithmetic with the working, and where conventions disagree."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from poolcheck.cli.common import EXIT_OK, console, fail, parse_int_list, user_errors
from poolcheck.spec.shape_report import only_runtime_rule, shape_report, symbolic_report

CONVENTIONS = ("openvino", "all")


def register(app: typer.Typer) -> None:
    app.command("shape")(shape)


def shape(
    kernel: Annotated[str, typer.Option(help="Kernel, one value per spatial axis, e.g. 2,2.")],
    input: Annotated[str | None, typer.Option(
        "--input", help="Input shape: N,C,spatial... or just the spatial dims. Omit it to see the formula per axis.",
    )] = None,
    strides: Annotated[str | None, typer.Option(help="Strides (default 1 per axis).")] = None,
    dilations: Annotated[str | None, typer.Option(help="Dilations (default 1 per axis).")] = None,
    pads_begin: Annotated[str | None, typer.Option("--pads-begin", help="Pads at the start of each axis.")] = None,
    pads_end: Annotated[str | None, typer.Option("--pads-end", help="Pads at the end of each axis.")] = None,
    rounding_type: Annotated[str, typer.Option("--rounding-type", help="floor, ceil or ceil_torch.")] = "floor",
    auto_pad: Annotated[str, typer.Option("--auto-pad", help="explicit, valid, same_upper or same_lower.")] = "explicit",
    convention: Annotated[str, typer.Option(help="openvino (the rule the engine applies) or all (every convention side by side).")] = "openvino",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Output-shape arithmetic: the result, the working per axis, and where conventions disagree."""
    if convention not in CONVENTIONS:
        raise fail(f"--convention: expected one of {', '.join(CONVENTIONS)}, got {convention!r}")
    k = parse_int_list("--kernel", kernel) or []
    s = parse_int_list("--strides", strides) if strides is not None else [1] * len(k)
    if input is None:
        with user_errors():
            sym = symbolic_report(k, s or [], parse_int_list("--dilations", dilations),
                                  parse_int_list("--pads-begin", pads_begin), parse_int_list("--pads-end", pads_end),
                                  rounding_type, auto_pad)
        if as_json:
            console.print_json(json.dumps(sym if convention == "all" else only_runtime_rule(sym)))
            raise typer.Exit(EXIT_OK)
        console.print(Text("no --input: the formula per axis (give --input to evaluate it)", style="bold"))
        for ax in sym["axes"]:
            rows = ax["rules"] if convention == "all" else ax["rules"][:1]
            for r in rows:
                label = {"openvino-runtime": "OpenVINO runtime / poolcheck", "onnx": "ONNX"}[r["convention"]]
                console.print(Text(f"  {ax['axis']} ({label}): {r['formula']}"))
        raise typer.Exit(EXIT_OK)
    in_shape = parse_int_list("--input", input) or []
    with user_errors():
        report = shape_report(in_shape, k, s or [], parse_int_list("--dilations", dilations),
                              parse_int_list("--pads-begin", pads_begin), parse_int_list("--pads-end", pads_end),
                              rounding_type, auto_pad)
    if as_json:
        console.print_json(json.dumps(report if convention == "all" else only_runtime_rule(report)))
        raise typer.Exit(EXIT_OK)

    console.print(Text.assemble(("output shape: ", "bold"), (str(tuple(report["output"])), "bold green")))
    for ax in report["axes"]:
        runtime = next(r for r in ax["rules"] if r["convention"] == "openvino-runtime")
        console.print(Text(f"  {ax['axis']}: {runtime['working']}"))
    if convention == "all":
        table = Table(title="conventions side by side", show_lines=True)
        table.add_column("axis")
        labels = {"openvino-written": "OpenVINO (as written)", "openvino-runtime": "OpenVINO runtime / poolcheck",
                  "onnx": "ONNX (ceil_mode = rounding != floor)", "torch": "PyTorch (ceil_mode)"}
        for label in labels.values():
            table.add_column(label, overflow="fold")
        for ax in report["axes"]:
            engine_out = ax["out"]
            cells = []
            for conv in labels:
                r = next(r for r in ax["rules"] if r["convention"] == conv)
                if r["out"] is None:
                    cells.append(Text(f"n/a: {r['working']}", style="dim"))
                else:
                    style = "bold red" if r["out"] != engine_out else "green"
                    pads = f"\npads applied: begin {r['pads'][0]}, end {r['pads'][1]}" if r["pads"] else ""
                    cells.append(Text.assemble((str(r["out"]), style), "\n", (r["working"] + pads, "dim")))
            table.add_row(ax["axis"], *cells)
        console.print(table)
        disagreements = [ax["axis"] for ax in report["axes"] if not ax["agree"]]
        if disagreements:
            console.print(Text(f"conventions disagree on axis {', '.join(disagreements)} (red = differs from the runtime rule)",
                               style="bold red"))
        else:
            console.print(Text("all expressible conventions agree", style="green"))
