"""``poolcheck shape``: output-shape arithmetic with the working, and where conventions disagree."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from poolcheck.cli.common import EXIT_OK, console, fail, parse_int_list, user_errors
from poolcheck.spec.shape_report import (
    CONVENTION_RULES,
    FAMILY_SHAPE_OPS,
    RULE_LABELS,
    family_shape_report,
    only_runtime_rule,
    shape_report,
    split_onnx_pads,
    symbolic_report,
)

CONVENTIONS = (*CONVENTION_RULES, "all")
#: ``--op`` values: MaxPool/AveragePool (``pool``) and the rest of the family.
OPS = ("pool", *FAMILY_SHAPE_OPS)
#: The ops without a sliding window of their own: the window options do not apply.
NO_WINDOW_OPS = ("global", "adaptive")


def register(app: typer.Typer) -> None:
    app.command("shape")(shape)


def shape(
    kernel: Annotated[str | None, typer.Option(
        help="Kernel, one value per spatial axis, e.g. 2,2 (--op pool, lp, unpool).")] = None,
    op: Annotated[str, typer.Option(
        "--op", help="pool (MaxPool/AveragePool, default), lp (LpPool: the ONNX rule), global (Global*Pool), "
                     "unpool (MaxUnpool) or adaptive (AdaptiveAvg/MaxPool).")] = "pool",
    output_shape: Annotated[str | None, typer.Option(
        "--output-shape", help="--op unpool: MaxUnpool's optional output_shape (N,C,spatial... or the spatial "
                               "dims; pads are then ignored); --op adaptive: the spatial output sizes.")] = None,
    input: Annotated[str | None, typer.Option(
        "--input", help="Input shape: N,C,spatial... or just the spatial dims. Omit it to see the formula per axis.",
    )] = None,
    strides: Annotated[str | None, typer.Option(help="Strides (default 1 per axis).")] = None,
    dilations: Annotated[str | None, typer.Option(help="Dilations (default 1 per axis).")] = None,
    pads: Annotated[str | None, typer.Option(
        "--pads", help="ONNX pads: x1_begin,x2_begin,...,x1_end,x2_end.")] = None,
    pads_begin: Annotated[str | None, typer.Option("--pads-begin", help="Pads at the start of each axis.")] = None,
    pads_end: Annotated[str | None, typer.Option("--pads-end", help="Pads at the end of each axis.")] = None,
    rounding_type: Annotated[str | None, typer.Option(
        "--rounding-type", help="OpenVINO rounding: floor (default), ceil or ceil_torch.")] = None,
    ceil_mode: Annotated[bool, typer.Option(
        "--ceil-mode", help="ONNX/PyTorch ceil_mode=1 (OpenVINO: rounding_type ceil_torch).")] = False,
    auto_pad: Annotated[str, typer.Option(
        "--auto-pad", help="explicit (NOTSET), valid, same_upper or same_lower, in either case.")] = "explicit",
    count_include_pad: Annotated[bool | None, typer.Option(
        "--count-include-pad/--exclude-pad",
        help="For an average: show the divisor per window, counting the padding or not.")] = None,
    convention: Annotated[str | None, typer.Option(
        help="openvino, onnx, torch, or all (side by side). Default: onnx when --pads, --ceil-mode or "
             "--count-include-pad is given, else openvino.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Output-shape arithmetic: the result, the working per axis, and where conventions disagree.

    --op covers the whole family: LpPool follows the ONNX pooling rule; global pooling keeps N
    and C and gives 1 per spatial axis; MaxUnpool inverts the MaxPool rule (or takes
    --output-shape); adaptive pooling gives --output-shape, with its bins per axis."""
    if op not in OPS:
        raise fail(f"--op: expected one of {', '.join(OPS)}, got {op!r}")
    given = {"--kernel": kernel, "--strides": strides, "--dilations": dilations, "--pads": pads,
             "--pads-begin": pads_begin, "--pads-end": pads_end, "--rounding-type": rounding_type,
             "--ceil-mode": ceil_mode or None, "--auto-pad": None if auto_pad == "explicit" else auto_pad,
             "--count-include-pad/--exclude-pad": count_include_pad, "--convention": convention,
             "--output-shape": output_shape}
    takes = {"global": (), "adaptive": ("--output-shape",), "unpool": ("--kernel", "--strides", "--pads",
             "--output-shape"), "lp": tuple(k for k in given if k not in ("--output-shape", "--rounding-type", "--convention",
                                                                        "--count-include-pad/--exclude-pad"))}
    if op != "pool":
        refused = next((k for k, v in given.items() if v is not None and k not in takes[op]), None)
        if refused is not None:
            raise fail(f"{refused}: --op {op} does not take it")
    elif output_shape is not None:
        raise fail("--output-shape: only --op unpool and --op adaptive take it")
    if op == "adaptive" and output_shape is None:
        raise fail("--output-shape: required for --op adaptive (the spatial output sizes)")
    if op in ("global", "unpool", "adaptive"):
        with user_errors():
            family = family_shape_report(op, parse_int_list("--input", input), kernel=parse_int_list("--kernel", kernel),
                                         strides=parse_int_list("--strides", strides),
                                         pads=parse_int_list("--pads", pads),
                                         output_shape=parse_int_list("--output-shape", output_shape))
        _render_family(family, as_json)
        raise typer.Exit(EXIT_OK)
    if kernel is None:
        raise fail(f"--kernel: required for --op {op}")
    if op == "lp":
        convention = "onnx"  # LpPool is ONNX's operator: its rule is ONNX's pooling rule
    onnx_words = pads is not None or ceil_mode or count_include_pad is True  # --exclude-pad is OpenVINO's word
    conv = convention if convention is not None else ("onnx" if onnx_words else "openvino")
    if conv not in CONVENTIONS:
        raise fail(f"--convention: expected one of {', '.join(CONVENTIONS)}, got {conv!r}")
    if ceil_mode and rounding_type is not None:
        raise fail("--ceil-mode and --rounding-type: give one (--ceil-mode is rounding_type ceil_torch)")
    if pads is not None and (pads_begin is not None or pads_end is not None):
        raise fail("--pads and --pads-begin/--pads-end: give one (--pads holds the begins, then the ends)")
    rounding = "ceil_torch" if ceil_mode else (rounding_type or "floor")
    k = parse_int_list("--kernel", kernel) or []
    s = parse_int_list("--strides", strides) if strides is not None else [1] * len(k)
    d = parse_int_list("--dilations", dilations)
    begin: list[int] | None
    end: list[int] | None
    with user_errors():
        if pads is not None:
            begin, end = split_onnx_pads(parse_int_list("--pads", pads) or [], len(k))
        else:
            begin, end = parse_int_list("--pads-begin", pads_begin), parse_int_list("--pads-end", pads_end)
        if input is None:
            sym = symbolic_report(k, s or [], d, begin, end, rounding, auto_pad)
        else:
            in_shape = parse_int_list("--input", input) or []
            report = shape_report(in_shape, k, s or [], d, begin, end, rounding, auto_pad,
                                  convention="openvino" if conv == "all" else conv,
                                  count_include_pad=count_include_pad)
            if op == "lp":
                report["operator"] = FAMILY_SHAPE_OPS["lp"]
    if input is None:
        _render_symbolic(sym, conv, as_json)
    elif as_json:
        console.print_json(json.dumps(report if conv == "all" else only_runtime_rule(report, CONVENTION_RULES[conv])))
    else:
        _render(report, conv)
    raise typer.Exit(EXIT_OK)


def _render_family(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        console.print_json(json.dumps(report))
        return
    if report["output"] is None:
        console.print(Text(f"no --input: the formula per axis ({report['operator']}; give --input to evaluate it)",
                           style="bold"))
        for ax in report["axes"]:
            console.print(Text(f"  {ax['axis']}: {ax['formula']}"))
        return
    console.print(Text.assemble(("output shape", "bold"), f" ({report['operator']}): ",
                                (str(tuple(report["output"])), "bold green")))
    for ax in report["axes"]:
        console.print(Text(f"  {ax['axis']}: {ax['working']}"))


def _render_symbolic(sym: dict[str, Any], conv: str, as_json: bool) -> None:
    if conv != "all":
        sym = only_runtime_rule(sym, CONVENTION_RULES[conv])
    if as_json:
        console.print_json(json.dumps(sym))
        return
    console.print(Text("no --input: the formula per axis (give --input to evaluate it)", style="bold"))
    for ax in sym["axes"]:
        for r in ax["rules"]:
            console.print(Text(f"  {ax['axis']} ({RULE_LABELS[r['convention']]}): {r['formula']}"))


def _render(report: dict[str, Any], conv: str) -> None:
    rule = CONVENTION_RULES["openvino" if conv == "all" else conv]
    label = f"{report['operator']}, {RULE_LABELS[rule]} rule" if "operator" in report else RULE_LABELS[rule]
    console.print(Text.assemble(("output shape", "bold"), f" ({label}): ",
                                (str(tuple(report["output"])), "bold green")))
    for ax in report["axes"]:
        mine = next(r for r in ax["rules"] if r["convention"] == rule)
        console.print(Text(f"  {ax['axis']}: {mine['working']}"))
    if report.get("count_include_pad") is not None:
        _render_divisors(report)
    if conv != "all":
        if report["disagreement"]:
            console.print(Text(f"differs: {report['disagreement']}", style="yellow"))
        return
    table = Table(title="conventions side by side", show_lines=True)
    table.add_column("axis")
    labels = {"openvino-written": "OpenVINO (as written)", "openvino-runtime": "OpenVINO runtime / poolcheck",
              "onnx": "ONNX (ceil_mode = rounding != floor)", "torch": "PyTorch (ceil_mode)"}
    for label in labels.values():
        table.add_column(label, overflow="fold")
    for ax in report["axes"]:
        engine_out = ax["out"]
        cells = []
        for name in labels:
            r = next(r for r in ax["rules"] if r["convention"] == name)
            if r["out"] is None:
                cells.append(Text(f"n/a: {r['working']}", style="dim"))
            else:
                style = "bold red" if r["out"] != engine_out else "green"
                mark = "" if r["out"] == engine_out else " (differs)"
                pads = f"\npads applied: begin {r['pads'][0]}, end {r['pads'][1]}" if r["pads"] else ""
                cells.append(Text.assemble((f"{r['out']}{mark}", style), "\n", (r["working"] + pads, "dim")))
        table.add_row(ax["axis"], *cells)
    console.print(table)
    disagreements = [ax["axis"] for ax in report["axes"] if not ax["agree"]]
    if disagreements:
        console.print(Text(f"conventions disagree on axis {', '.join(disagreements)} "
                           "(marked 'differs': not the OpenVINO runtime's answer)", style="bold red"))
    else:
        console.print(Text("all expressible conventions agree", style="green"))


def _render_divisors(report: dict[str, Any]) -> None:
    include = report["count_include_pad"]
    console.print(Text(
        "average divisor per window (the product over the axes): "
        + ("taps inside the padded input (count_include_pad=1, exclude_pad=false)" if include
           else "taps inside the input (count_include_pad=0, exclude_pad=true)"), style="bold"))
    for ax in report["axes"]:
        dv = ax["divisors"]
        runs = dv["runs"]
        text = "; ".join((f"window {r['first']}" if r["first"] == r["last"] else f"windows {r['first']}-{r['last']}")
                         + f": {r['divisor']}" for r in runs[:6])
        if len(runs) > 6:
            text += f"; ... ({len(runs)} runs)"
        line = f"  {ax['axis']}: {text}"
        if dv["overhanging"]:
            line += (f" (window {', '.join(map(str, dv['overhanging']))} reaches past the padded input: "
                     f"clipped, not the full kernel {dv['kernel']})")
        console.print(Text(line))
