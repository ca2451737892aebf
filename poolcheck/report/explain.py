"""``poolcheck explain``'s terminal view: :func:`explanation_view` turns an
:class:`~poolcheck.explain.Explanation` (computed by :mod:`poolcheck.explain`) into rich
renderables. Rendering only.
"""

from __future__ import annotations

import math
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from poolcheck import spec as S
from poolcheck.explain import Explanation
from poolcheck.report.text import safe

#: Padded axes longer than this are cropped to the window and a margin in the terminal grid.
MAX_SPAN = 20
MARGIN = 3



# --------------------------------------------------------------------------- terminal view


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:.6g}"
    return str(v)


def _axis_kind(a: S.AxisGeometry, p: int) -> str:
    if 0 <= p < a.size:
        return "input"
    if -a.pad_begin <= p < a.size + a.pad_end:
        return "pad"
    return "overhang"


def _span(a: S.AxisGeometry, taps: list[int]) -> tuple[int, int, bool]:
    lo, hi = -a.pad_begin, a.size + a.pad_end + a.overhang
    if hi - lo <= MAX_SPAN:
        return lo, hi, False
    nlo, nhi = max(lo, min(taps) - MARGIN), min(hi, max(taps) + 1 + MARGIN)
    return nlo, nhi, (nlo, nhi) != (lo, hi)


def window_grids(ex: Explanation) -> list[Text | Table]:
    """The window over the padded input as rich tables: one per leading coordinate the window
    touches (3-D), rows x columns over the last two spatial axes (or one row for 1-D)."""
    geom, r = ex.geometry, len(ex.geometry.axes)
    plane = ex.case.input[ex.position[0], ex.position[1]]
    taps = {tuple(c.coords): c for c in ex.cells}
    argmax = next((c.coords for c in ex.cells if c.chosen), None)
    axes = geom.axes
    col_axis = r - 1
    row_axis = r - 2 if r >= 2 else None
    leads: list[tuple[int, ...]] = [()]
    if r > 2:
        per = [sorted({c.coords[i] for c in ex.cells}) for i in range(r - 2)]
        leads = [()]
        for vals in per:
            leads = [(*p, v) for p in leads for v in vals]
    clo, chi, ccrop = _span(axes[col_axis], [c.coords[col_axis] for c in ex.cells])
    if row_axis is not None:
        rlo, rhi, rcrop = _span(axes[row_axis], [c.coords[row_axis] for c in ex.cells])
    else:
        rlo, rhi, rcrop = 0, 1, False
    tables: list[Text | Table] = []
    for lead in leads:
        lead_kinds = [_axis_kind(axes[i], p) for i, p in enumerate(lead)]
        title = ", ".join(f"axis {i} at {p} ({k})" for i, (p, k) in enumerate(zip(lead, lead_kinds)))
        if ccrop or rcrop:
            title += ("; " if title else "") + "cropped around the window"
        if title:
            tables.append(Text(safe(title), style="italic"))
        t = Table(show_header=True, header_style="dim", box=None, pad_edge=False, padding=(0, 1))
        t.add_column("", justify="right", style="dim")
        for j in range(clo, chi):
            t.add_column(str(j), justify="right", header_style="bold" if 0 <= j < axes[col_axis].size else "dim italic")
        for i in range(rlo, rhi):
            row_label = Text(str(i) if row_axis is not None else "", style="bold" if row_axis is None or 0 <= i < axes[row_axis].size else "dim italic")
            cells: list[Text] = [row_label]
            for j in range(clo, chi):
                coords = (*lead, i, j) if row_axis is not None else (j,)
                kinds = lead_kinds + [_axis_kind(axes[k], coords[k]) for k in range(len(lead), r)]
                kind = "overhang" if "overhang" in kinds else ("pad" if "pad" in kinds else "input")
                tap = coords in taps
                if kind == "input":
                    text = _fmt(plane[coords].item())
                elif kind == "pad":
                    text = "pad"
                else:
                    text = "×"
                style = {"input": "", "pad": "grey50", "overhang": "red"}[kind]
                # Colour and a mark that survives without colour: [tap], <argmax>.
                if tap:
                    style = "bold white on blue" if kind == "input" else "bold white on grey37" if kind == "pad" else "bold white on red"
                    text = f"[{text}]"
                if argmax is not None and list(coords) == list(argmax):
                    style = "bold black on yellow"
                    text = f"<{text[1:-1] if tap else text}>"
                cells.append(Text(text, style=style))
            t.add_row(*cells)
        tables.append(t)
    return tables


def explanation_view(ex: Explanation) -> Group:
    """Rich renderables for ``poolcheck explain``."""
    case, pos = ex.case, ex.position
    head = Text()
    head.append(safe(case.id), style="bold")
    head.append(f"  {case.op}  {case.spec.describe()}  input {case.dtype.name}{list(case.input.shape)}\n", style="")
    head.append(f"output element ({', '.join(map(str, pos))})  ", style="bold")
    head.append(f"n={pos[0]} c={pos[1]}; window over the padded input (pads {list(ex.geometry.pads_begin)}/"
                f"{list(ex.geometry.pads_end)}", style="dim")
    over = [a.overhang for a in ex.geometry.axes]
    head.append((f", overhang {over})" if any(over) else ")"), style="dim")
    parts: list[Any] = [head, *window_grids(ex)]
    legend = Text()
    legend.append("[1.5]", style="bold white on blue")
    legend.append(" window tap   ")
    legend.append("pad", style="grey50")
    legend.append(" padding   ")
    legend.append("×", style="red")
    legend.append(" past pads_end (overhang)   ")
    if ex.is_max:
        legend.append("<9>", style="bold black on yellow")
        legend.append(" reference argmax")
    parts.append(legend)
    reference = "x".join(map(str, ex.geometry.output_shape))
    for rv in ex.shape_mismatches:
        note = Text(f"{safe(rv.name)} gives an output of shape {'x'.join(map(str, rv.shape or ()))}, the reference "
                    f"{reference}: the shapes differ", style="bold red")
        if all(_same(r.value, rv.value) for r in ex.runners if r.kind == "engine" and r.status == "ok"):
            note.append("; this element, which both hold, agrees", style="bold red")
        parts.append(note)
    n_in = sum(c.kind == "input" for c in ex.cells)
    n_pad = sum(c.kind == "pad" for c in ex.cells)
    n_over = sum(c.kind == "overhang" for c in ex.cells)
    facts = Text(f"{len(ex.cells)} taps = {n_in} input + {n_pad} padding + {n_over} past pads_end", style="dim")
    if not ex.is_max and ex.divisor is not None:
        facts.append(f"\nreference divisor ({'exclude_pad' if case.pool_spec.exclude_pad else 'include_pad'}) = "
                     f"{ex.divisor}; sum of input taps = {_fmt(ex.tap_sum)}", style="")
    parts.append(facts)

    t = Table(show_header=True, header_style="bold", expand=False)
    t.add_column("source")
    t.add_column("kind", style="dim")
    t.add_column("value", justify="right")
    if ex.is_max:
        t.add_column("index", justify="right")
        t.add_column("argmax tap (spatial)")
    else:
        t.add_column("implied divisor (sum / value)", justify="right")
    t.add_column("status", overflow="fold")
    ref = next((r for r in ex.runners if r.kind == "engine" and r.status == "ok"), None)
    for rv in ex.runners:
        differs = ref is not None and rv is not ref and rv.value is not None and not _same(rv.value, ref.value)
        value = Text(_fmt(rv.value), style="bold red" if differs else "")
        row: list[Any] = [Text(safe(rv.name)), Text(safe(rv.kind)), value]
        if ex.is_max:
            row.append(_fmt(rv.index))
            if rv.argmax is not None:
                row.append(f"({', '.join(map(str, rv.argmax))}) from its {rv.argmax_from}")
            elif rv.value is not None:
                row.append(Text("no input tap holds this value" + (" / has this index" if rv.index is not None else ""),
                                style="yellow"))
            else:
                row.append("-")
        else:
            row.append(_fmt(rv.implied_divisor))
        row.append(Text(safe(rv.status)) if rv.status != "ok" else "")
        t.add_row(*row)
    parts.append(t)
    return Group(*parts)


def _same(a: Any, b: Any) -> bool:
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    return x == y or (math.isnan(x) and math.isnan(y))
