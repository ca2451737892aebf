"""``poolcheck shape``: output-shape arithmetic with the working, and where conventions disagree."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from poolcheck.cli.common import EXIT_OK, console, fail, parse_int_list, user_errors
from poolcheck.errors import AttributeValueError
from poolcheck.spec import attributes as A
from poolcheck.spec.limits import MAX_EXTENT
from poolcheck.spec.shape import axis_rules, resolve

CONVENTIONS = ("openvino", "all")
AXIS_NAMES = {1: ["H"], 2: ["H", "W"], 3: ["D", "H", "W"]}


def register(app: typer.Typer) -> None:
    app.command("shape")(shape)


def shape_report(
    input_shape: list[int], kernel: list[int], strides: list[int], dilations: list[int] | None,
    pads_begin: list[int] | None, pads_end: list[int] | None, rounding_type: str, auto_pad: str,
) -> dict[str, Any]:
    """Compute the engine's output shape plus every convention's rule per spatial axis."""
    spec = A.openvino_max_pool(kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad)
    n = spec.spatial_rank
    if len(input_shape) == n:
        full = [1, 1, *input_shape]
        spatial_only = True
    elif len(input_shape) == n + 2:
        full = list(input_shape)
        spatial_only = False
    else:
        raise AttributeValueError(
            "input", f"expected {n} spatial dims or a full shape of rank {n + 2} for a {n}-D kernel, got {input_shape}")
    if any(v < 1 for v in full):
        raise AttributeValueError("input", f"every dimension must be >= 1, got {input_shape}")
    if any(v > MAX_EXTENT for v in full):
        raise AttributeValueError("input", f"every dimension must be <= {MAX_EXTENT} (2^31 - 1), got {input_shape}")
    geom = resolve(spec, full)
    axes = []
    for i, a in enumerate(geom.axes):
        rules = axis_rules(a.size, spec.kernel[i], spec.strides[i], spec.dilations[i], spec.pads_begin[i],
                           spec.pads_end[i], rounding_type, auto_pad)
        outs = {r.out for r in rules if r.out is not None}
        axes.append({
            "axis": AXIS_NAMES[n][i],
            "size": a.size,
            "out": a.out,
            "pads_applied": [a.pad_begin, a.pad_end],
            "rules": [{"convention": r.convention, "out": r.out, "working": r.working,
                       "pads": list(r.pads) if r.pads else None} for r in rules],
            "agree": len(outs) <= 1,
        })
    out_shape = list(geom.output_shape[2:] if spatial_only else geom.output_shape)
    return {"input": list(input_shape), "output": out_shape, "rounding_type": rounding_type,
            "auto_pad": auto_pad, "axes": axes}


def symbolic_report(
    kernel: list[int], strides: list[int], dilations: list[int] | None, pads_begin: list[int] | None,
    pads_end: list[int] | None, rounding_type: str, auto_pad: str,
) -> dict[str, Any]:
    """The per-axis formula with the attributes filled in and the input size left symbolic."""
    spec = A.openvino_max_pool(kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad)
    n = spec.spatial_rank
    axes = []
    for i in range(n):
        name = AXIS_NAMES[n][i]
        k, s, d = spec.kernel[i], spec.strides[i], spec.dilations[i]
        pb, pe = spec.pads_begin[i], spec.pads_end[i]
        dk = (k - 1) * d + 1
        fn = "floor" if rounding_type == "floor" else "ceil"
        if auto_pad in ("same_upper", "same_lower"):
            odd = "end" if auto_pad == "same_upper" else "beginning"
            total = f"({name}_out - 1) * {s} + {dk} - {name}"
            rules = {
                "openvino-runtime": f"{name}_out = ceil({name} / {s}); pads = max(0, {total}), the odd one at the {odd}",
                "onnx": f"{name}_out = ceil({name} / {s}); pad_shape = {total} (may be negative: windows then start "
                        f"inside the input), the odd one at the {odd}",
            }
        elif auto_pad == "valid":
            rules = {
                "openvino-runtime": f"{name}_out = {fn}(({name} - {dk}) / {s} + 1)  (pads 0)",
                "onnx": f"{name}_out = floor(({name} - {dk}) / {s}) + 1  (VALID; ceil_mode has no effect)",
            }
        else:
            text = f"{name}_out = {fn}(({name} + {pb} + {pe} - {dk}) / {s} + 1)"
            if rounding_type == "ceil_torch":
                text += f"; minus 1 if the last window starts at or past {name} + {pb}"
            rules = {"openvino-runtime": text,
                     "onnx": f"{name}_out = {fn}(({name} + {pb} + {pe} - {dk}) / {s} + 1)"
                             + (f"; minus 1 if the last window starts at or past {name} + {pb}"
                                if rounding_type != "floor" else "")}
        axes.append({"axis": name, "kernel": k, "stride": s, "dilation": d, "dilated_kernel": dk,
                     "pads": [pb, pe], "formula": rules["openvino-runtime"],
                     "rules": [{"convention": c, "formula": f} for c, f in rules.items()]})
    return {"input": None, "output": None, "rounding_type": rounding_type, "auto_pad": auto_pad, "axes": axes}


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
            if convention != "all":
                for ax in sym["axes"]:
                    ax["rules"] = [r for r in ax["rules"] if r["convention"] == "openvino-runtime"]
            console.print_json(json.dumps(sym))
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
        if convention != "all":
            for ax in report["axes"]:
                ax["rules"] = [r for r in ax["rules"] if r["convention"] == "openvino-runtime"]
        console.print_json(json.dumps(report))
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
