"""The report behind ``poolcheck shape``: the output shape with its working per axis, every
convention's rule side by side, or the formula per axis with the input size left symbolic.

Plain data (JSON-ready dicts); the command only parses options, calls these and renders.
"""

from __future__ import annotations

from typing import Any

from poolcheck.errors import AttributeValueError
from poolcheck.spec.attributes import openvino_max_pool
from poolcheck.spec.limits import MAX_EXTENT
from poolcheck.spec.shape import axis_rules, resolve

AXIS_NAMES = {1: ["H"], 2: ["H", "W"], 3: ["D", "H", "W"]}
#: The rule ``--convention openvino`` keeps (the one the engines apply).
RUNTIME_RULE = "openvino-runtime"


def only_runtime_rule(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with each axis's rules cut to the runtime rule (``--convention openvino``)."""
    for ax in report["axes"]:
        ax["rules"] = [r for r in ax["rules"] if r["convention"] == RUNTIME_RULE]
    return report


def shape_report(
    input_shape: list[int], kernel: list[int], strides: list[int], dilations: list[int] | None,
    pads_begin: list[int] | None, pads_end: list[int] | None, rounding_type: str, auto_pad: str,
) -> dict[str, Any]:
    """Compute the engine's output shape plus every convention's rule per spatial axis."""
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
