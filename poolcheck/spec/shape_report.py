"""The report behind ``poolcheck shape``: the output shape with its working per axis under one
convention (OpenVINO, ONNX or PyTorch), every convention's rule side by side, the one line that
says where the others part ways, the average's divisor per window, or the formula per axis with
the input size left symbolic.

Plain data (JSON-ready dicts); the command only parses options, calls these and renders.
"""

from __future__ import annotations

from typing import Any

from poolcheck.errors import AttributeValueError
from poolcheck.spec.attributes import openvino_max_pool
from poolcheck.spec.family import FamilySpec, adaptive_bins, family_output_shape
from poolcheck.spec.limits import MAX_EXTENT
from poolcheck.spec.operators import parse
from poolcheck.spec.shape import AxisGeometry, axis_rules, resolve, resolve_axis

AXIS_NAMES = {1: ["H"], 2: ["H", "W"], 3: ["D", "H", "W"]}
#: The rule ``--convention openvino`` keeps (the one the engines apply).
RUNTIME_RULE = "openvino-runtime"
#: ``poolcheck shape --convention`` values and the rule of :func:`axis_rules` each reads.
CONVENTION_RULES = {"openvino": RUNTIME_RULE, "onnx": "onnx", "torch": "torch"}
#: How each rule is named to people.
RULE_LABELS = {"openvino-written": "OpenVINO (as written)", "openvino-runtime": "OpenVINO",
               "onnx": "ONNX", "torch": "PyTorch"}
#: auto_pad as either convention spells it, in either case -> canonical (ONNX NOTSET = explicit).
AUTO_PAD_SPELLINGS = {"explicit": "explicit", "notset": "explicit", "valid": "valid",
                      "same_upper": "same_upper", "same_lower": "same_lower"}


def canonical_auto_pad(text: str) -> str:
    """``SAME_UPPER``, ``same_upper``, ``NOTSET``, ``explicit`` ... -> the canonical value."""
    found = AUTO_PAD_SPELLINGS.get(str(text).strip().lower())
    if found is None:
        raise AttributeValueError(
            "auto_pad", "expected explicit (ONNX: NOTSET), valid, same_upper or same_lower, in either case, "
            f"got {str(text)[:40]!r}")
    return found


def split_onnx_pads(pads: list[int], spatial_rank: int) -> tuple[list[int], list[int]]:
    """ONNX ``pads`` ("[x1_begin, x2_begin...x1_end, x2_end,...]") -> (begins, ends)."""
    if len(pads) != 2 * spatial_rank:
        raise AttributeValueError(
            "pads", f"expected {2 * spatial_rank} values for a {spatial_rank}-D kernel "
            f"(x1_begin, x2_begin, ..., x1_end, x2_end), got {len(pads)}")
    return list(pads[:spatial_rank]), list(pads[spatial_rank:])


def _runs(values: list[int]) -> list[dict[str, int]]:
    """``[2, 3, 3, 3, 2]`` -> runs of equal values: first window, last window, value."""
    runs: list[dict[str, int]] = []
    for o, v in enumerate(values):
        if runs and runs[-1]["divisor"] == v:
            runs[-1]["last"] = o
        else:
            runs.append({"first": o, "last": o, "divisor": v})
    return runs


def axis_divisors(a: AxisGeometry, count_include_pad: bool) -> dict[str, Any]:
    """An average's divisor along one axis, per window: the taps inside the input
    (count_include_pad=0, OpenVINO exclude_pad=true) or inside the padded input (count_include_pad=1:
    a window reaching past the padded input under ceil rounding is clipped, not divided by the
    full kernel). The divisor of a window is the product over the axes."""
    low, high = (-a.pad_begin, a.size + a.pad_end) if count_include_pad else (0, a.size)
    per_window = [sum(1 for p in a.taps(o) if low <= p < high) for o in range(a.out)]
    return {"kernel": a.kernel, "runs": _runs(per_window),
            "overhanging": [o for o in range(a.out) if any(p >= a.size + a.pad_end for p in a.taps(o))]}


def _convention_geometry(convention: str, size: int, kernel: int, stride: int, dilation: int, pad_begin: int,
                         pad_end: int, rounding_type: str, auto_pad: str) -> AxisGeometry:
    """The windows one convention places (ONNX and PyTorch: ceil_mode = rounding != floor, which
    drops a last window starting in the padding; ONNX keeps a negative SAME pad)."""
    if convention == "openvino":
        return resolve_axis(size, kernel, stride, dilation, pad_begin, pad_end, rounding_type, auto_pad)
    rounding = "floor" if rounding_type == "floor" or auto_pad == "valid" else "ceil_torch"
    return resolve_axis(size, kernel, stride, dilation, pad_begin, pad_end, rounding, auto_pad, convention="onnx")


def disagreement(report: dict[str, Any], convention: str) -> str | None:
    """One line naming the conventions whose output differs from ``convention``'s, with why
    (e.g. ``ONNX/PyTorch: 4x4 (last window would start in padding)``), or whose windows sit
    elsewhere for the same shape (SAME: ONNX keeps a negative pad, OpenVINO clamps it to 0); None
    when they agree. OpenVINO's page as written is left to ``--convention all``."""
    mine = CONVENTION_RULES[convention]
    outs: dict[str, list[int | None]] = {}
    pads: dict[str, list[str]] = {}
    notes: dict[str, list[str]] = {}
    for ax in report["axes"]:
        for r in ax["rules"]:
            if r["convention"] in CONVENTION_RULES.values():
                outs.setdefault(r["convention"], []).append(r["out"])
                pads.setdefault(r["convention"], []).append("/".join(map(str, r["pads"])) if r["pads"] else "-")
                if r.get("note") and r["note"] not in notes.setdefault(r["convention"], []):
                    notes[r["convention"]].append(r["note"])
    groups: dict[tuple[Any, ...], list[str]] = {}
    for rule, shape in outs.items():
        if rule == mine or None in shape:
            continue
        if shape != outs.get(mine):
            groups.setdefault(("shape", *shape), []).append(rule)
        elif "-" not in pads[rule] and "-" not in pads.get(mine, ["-"]) and pads[rule] != pads[mine]:
            groups.setdefault(("pads", *pads[rule]), []).append(rule)
    if not groups:
        return None
    parts = []
    for (kind, *values), rules in groups.items():
        why = "; ".join(dict.fromkeys(n for rule in rules for n in notes.get(rule, [])))
        what = "x".join(map(str, values)) if kind == "shape" else \
            f"the same shape, pads (begin/end per axis) {', '.join(map(str, values))}"
        parts.append(f"{'/'.join(RULE_LABELS[r] for r in rules)}: {what}" + (f" ({why})" if why else ""))
    return "; ".join(parts)


def only_runtime_rule(report: dict[str, Any], rule: str = RUNTIME_RULE) -> dict[str, Any]:
    """``report`` with each axis's rules cut to one rule (default the runtime rule,
    ``--convention openvino``)."""
    for ax in report["axes"]:
        ax["rules"] = [r for r in ax["rules"] if r["convention"] == rule]
    return report


def shape_report(
    input_shape: list[int], kernel: list[int], strides: list[int], dilations: list[int] | None,
    pads_begin: list[int] | None, pads_end: list[int] | None, rounding_type: str, auto_pad: str,
    *, convention: str = "openvino", count_include_pad: bool | None = None,
) -> dict[str, Any]:
    """The output shape under ``convention`` (openvino, onnx, torch) plus every convention's rule
    per spatial axis, the line saying where the others differ, and (``count_include_pad`` given)
    an average's divisor per window. A configuration ``convention`` cannot express raises."""
    if convention not in CONVENTION_RULES:
        raise AttributeValueError("convention", f"expected one of {', '.join(CONVENTION_RULES)}, got {convention!r}")
    auto_pad = canonical_auto_pad(auto_pad)
    spec = openvino_max_pool(kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad)
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
    mine = CONVENTION_RULES[convention]
    axes = []
    for i, a in enumerate(geom.axes):
        args = (a.size, spec.kernel[i], spec.strides[i], spec.dilations[i], spec.pads_begin[i], spec.pads_end[i],
                rounding_type, auto_pad)
        rules = axis_rules(*args)
        outs = {r.out for r in rules if r.out is not None}
        primary = next(r for r in rules if r.convention == mine)
        if primary.out is None:
            raise AttributeValueError(
                "convention", f"{RULE_LABELS[mine]} cannot express this on axis {AXIS_NAMES[n][i]}: {primary.working}")
        ax: dict[str, Any] = {
            "axis": AXIS_NAMES[n][i],
            "size": a.size,
            "out": primary.out,
            "pads_applied": list(primary.pads) if primary.pads else [a.pad_begin, a.pad_end],
            "rules": [{"convention": r.convention, "out": r.out, "working": r.working,
                       "pads": list(r.pads) if r.pads else None, "note": r.note} for r in rules],
            "agree": len(outs) <= 1,
        }
        if count_include_pad is not None:
            ax["divisors"] = axis_divisors(_convention_geometry(convention, *args), count_include_pad)
        axes.append(ax)
    spatial = [ax["out"] for ax in axes]
    out_shape = spatial if spatial_only else [*full[:2], *spatial]
    report = {"input": list(input_shape), "output": out_shape, "convention": convention,
              "rounding_type": rounding_type, "auto_pad": auto_pad, "count_include_pad": count_include_pad,
              "axes": axes}
    report["disagreement"] = disagreement(report, convention)
    return report


def symbolic_report(
    kernel: list[int], strides: list[int], dilations: list[int] | None, pads_begin: list[int] | None,
    pads_end: list[int] | None, rounding_type: str, auto_pad: str,
) -> dict[str, Any]:
    """The per-axis formula with the attributes filled in and the input size left symbolic."""
    auto_pad = canonical_auto_pad(auto_pad)
    spec = openvino_max_pool(kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad)
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
                "torch": "not expressible: PyTorch pooling has no same padding",
            }
        elif auto_pad == "valid":
            rules = {
                "openvino-runtime": f"{name}_out = {fn}(({name} - {dk}) / {s} + 1)  (pads 0)",
                "onnx": f"{name}_out = floor(({name} - {dk}) / {s}) + 1  (VALID; ceil_mode has no effect)",
                "torch": f"{name}_out = {'floor' if rounding_type == 'floor' else 'ceil'}(({name} - {dk}) / {s}) + 1"
                         + ("; minus 1 if the last window starts at or past " + name if rounding_type != "floor" else ""),
            }
        else:
            text = f"{name}_out = {fn}(({name} + {pb} + {pe} - {dk}) / {s} + 1)"
            if rounding_type == "ceil_torch":
                text += f"; minus 1 if the last window starts at or past {name} + {pb}"
            drop = f"; minus 1 if the last window starts at or past {name} + {pb}" if rounding_type != "floor" else ""
            rules = {"openvino-runtime": text,
                     "onnx": f"{name}_out = {fn}(({name} + {pb} + {pe} - {dk}) / {s} + 1)" + drop,
                     "torch": (f"{name}_out = {fn}(({name} + 2 * {pb} - {dk}) / {s}) + 1" + drop) if pb == pe
                     else f"not expressible: PyTorch pads both ends alike, got {pb}/{pe}"}
        axes.append({"axis": name, "kernel": k, "stride": s, "dilation": d, "dilated_kernel": dk,
                     "pads": [pb, pe], "formula": rules["openvino-runtime"],
                     "rules": [{"convention": c, "formula": f} for c, f in rules.items()]})
    return {"input": None, "output": None, "rounding_type": rounding_type, "auto_pad": auto_pad, "axes": axes}


# --------------------------------------------------------------------------- the rest of the family

#: ``poolcheck shape --op`` values of the rest of the family and the operator versions each stands
#: for (LpPool's shape is the pooling rule: ``--op lp`` is :func:`shape_report` under ONNX's rule).
FAMILY_SHAPE_OPS = {"lp": "LpPool-22", "global": "GlobalAveragePool-22, GlobalMaxPool-22, GlobalLpPool-22",
                    "unpool": "MaxUnpool-22", "adaptive": "AdaptiveAvgPool-8, AdaptiveMaxPool-8"}


def _bins_text(size: int, out: int, limit: int = 6) -> str:
    start, end = adaptive_bins(size, out, first=limit)
    shown = " ".join(f"[{s}, {e})" for s, e in zip(start.tolist(), end.tolist()))
    return shown + (f" ... ({out} bins)" if out > limit else "")


def family_shape_report(op: str, input_shape: list[int] | None, *, kernel: list[int] | None = None,
                        strides: list[int] | None = None, pads: list[int] | None = None,
                        output_shape: list[int] | None = None) -> dict[str, Any]:
    """The output shape of global pooling (``op="global"``), MaxUnpool (``"unpool"``, with or
    without its ``output_shape``) or adaptive pooling (``"adaptive"``, ``output_shape`` = the
    spatial output sizes) on ``input_shape`` (N, C, spatial...; for unpool and adaptive also the
    spatial dims alone), with the working per axis; ``input_shape`` None: the formula per axis.
    The configuration is read by the catalogue row (bad values raise AttributeValueError naming
    the attribute), the shape by :func:`~poolcheck.spec.family.family_output_shape`."""
    full: list[int] | None
    if op == "global":
        spec = parse("GlobalAveragePool-22", {})
        if input_shape is None:
            return {"op": op, "operator": FAMILY_SHAPE_OPS[op], "input": None, "output": None,
                    "axes": [{"axis": "each spatial axis", "formula": "out = 1 (the kernel is the whole axis)"}]}
        if not 3 <= len(input_shape) <= 5:
            raise AttributeValueError("input", f"global pooling takes the whole shape N,C,spatial... (rank 3, 4 "
                                               f"or 5), got {input_shape}")
        full = list(input_shape)
    elif op == "unpool":
        attrs: dict[str, Any] = {"kernel_shape": kernel, "strides": strides, "pads": pads}
        n = len(kernel or [])
        if output_shape is not None and n and len(output_shape) == n:
            output_shape = [*(input_shape[:2] if input_shape and len(input_shape) == n + 2 else [1, 1]), *output_shape]
        if output_shape is not None:
            attrs["output_shape"] = output_shape
        spec = parse("MaxUnpool-22", {k: v for k, v in attrs.items() if v is not None})
        assert spec.window is not None
        full = _full_input(input_shape, spec.window.spatial_rank)
    elif op == "adaptive":
        if output_shape is None:
            raise AttributeValueError("output_shape", "adaptive pooling needs its spatial output sizes")
        spec = parse("AdaptiveAvgPool-8", {"output_shape": output_shape})
        assert spec.output_shape is not None
        full = _full_input(input_shape, len(spec.output_shape))
    else:
        raise AttributeValueError("op", f"expected one of {', '.join(k for k in FAMILY_SHAPE_OPS if k != 'lp')}, "
                                        f"got {op!r}")
    rank = len(full) - 2 if full else (spec.spatial_rank or 0)
    names = AXIS_NAMES.get(rank, [f"X{i + 1}" for i in range(rank)])
    if full is None:
        return {"op": op, "operator": FAMILY_SHAPE_OPS[op], "input": None, "output": None,
                "axes": [{"axis": names[i], "formula": _family_formula(spec, i, names[i])} for i in range(rank)]}
    if any(v < 1 or v > MAX_EXTENT for v in full):
        raise AttributeValueError("input", f"every dimension must lie in [1, {MAX_EXTENT}], got {input_shape}")
    out = family_output_shape(spec, full)
    axes = [{"axis": names[i], "size": full[2 + i], "out": out[2 + i],
             "working": _family_working(spec, i, full[2 + i], out[2 + i])} for i in range(rank)]
    spatial_only = input_shape is not None and len(input_shape) == rank
    return {"op": op, "operator": FAMILY_SHAPE_OPS[op], "input": list(input_shape or []),
            "output": list(out[2:]) if spatial_only else list(out), "axes": axes}


def _full_input(input_shape: list[int] | None, rank: int) -> list[int] | None:
    if input_shape is None:
        return None
    if len(input_shape) == rank:
        return [1, 1, *input_shape]
    if len(input_shape) == rank + 2:
        return list(input_shape)
    raise AttributeValueError("input", f"expected {rank} spatial dims or a full shape of rank {rank + 2}, "
                                       f"got {input_shape}")


def _family_working(spec: FamilySpec, i: int, size: int, out: int) -> str:
    if spec.op in ("global_avg", "global_max", "global_lp"):
        return f"the kernel is the whole axis ({size}): one window, {out}"
    if spec.op in ("adaptive_avg", "adaptive_max"):
        return (f"given: {out} bins [floor(j * {size} / {out}), ceil((j + 1) * {size} / {out})): "
                f"{_bins_text(size, out)}")
    w = spec.window
    assert w is not None
    inferred = (size - 1) * w.strides[i] + w.kernel[i] - w.pads_begin[i] - w.pads_end[i]
    formula = (f"({size} - 1) * {w.strides[i]} + {w.kernel[i]} - {w.pads_begin[i]} - {w.pads_end[i]} "
               f"= {inferred}")
    if spec.output_shape is not None:
        return f"given by output_shape: {out} (pads are ignored; inferred: {formula})"
    return formula


def _family_formula(spec: FamilySpec, i: int, name: str) -> str:
    if spec.op in ("adaptive_avg", "adaptive_max"):
        assert spec.output_shape is not None
        o = spec.output_shape[i]
        return f"{name}_out = {o}; bin j = [floor(j * {name} / {o}), ceil((j + 1) * {name} / {o}))"
    w = spec.window
    assert w is not None
    text = f"{name}_out = ({name} - 1) * {w.strides[i]} + {w.kernel[i]} - {w.pads_begin[i]} - {w.pads_end[i]}"
    if spec.output_shape is not None:
        return f"{name}_out = {spec.output_shape[2 + i]} (given by output_shape; else {text.split(' = ', 1)[1]})"
    return text
