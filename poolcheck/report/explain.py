"""``poolcheck explain``: one output element of one case, taken apart.

:func:`explain_element` computes (never prints): the element's window over the padded input,
the value (and index) every engine and peer gives, the documented value, and what each value
implies -- the argmax tap for max pooling, the divisor for average pooling.
:func:`explanation_view` turns that into rich renderables for the terminal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text

from poolcheck import spec as S
from poolcheck.api import run_spec
from poolcheck.cases.model import Case
from poolcheck.engines.numpy_engine import divisor
from poolcheck.errors import AttributeValueError, PoolcheckError
from poolcheck.results import WindowCell
from poolcheck.report.text import safe
from poolcheck.runner import compare, window_cells

#: Padded axes longer than this are cropped to the window and a margin in the terminal grid.
MAX_SPAN = 20
MARGIN = 3


@dataclass
class RunnerValue:
    """What one engine, peer or the document says about the element."""

    name: str
    kind: str  # "document" | "erratum" | "engine" | "peer"
    value: Any = None
    index: int | None = None
    status: str = "ok"  # "ok", or a peer's rejects/crash/timeout/declined/unavailable (+ message)
    argmax: list[int] | None = None  # spatial coords of the tap the index (or value) points to
    argmax_from: str = ""  # "index" | "value"
    implied_divisor: float | None = None


@dataclass
class Explanation:
    case: Case
    position: list[int]
    geometry: S.Geometry
    cells: list[WindowCell]
    runners: list[RunnerValue] = field(default_factory=list)
    divisor: int | None = None  # the reference divisor (average pooling)
    tap_sum: float | None = None  # sum of the input taps (average pooling), float64

    @property
    def is_max(self) -> bool:
        return self.case.spec.op == "max"


def parse_position(text: str, case: Case) -> list[int]:
    """``"n,c,d1,..."`` -> a position inside the case's output; errors name ``--at``."""
    try:
        pos = [int(p) for p in text.replace(" ", "").replace("(", "").replace(")", "").split(",") if p != ""]
    except ValueError:
        raise AttributeValueError("at", f"expected comma-separated integers n,c,d1,..., got {text!r}") from None
    shape = S.resolve(case.spec, case.input.shape).output_shape
    if len(pos) != len(shape):
        raise AttributeValueError("at", f"expected {len(shape)} coordinates (n, c and {len(shape) - 2} spatial) "
                                        f"for output shape {shape}, got {len(pos)}")
    for i, (p, n) in enumerate(zip(pos, shape)):
        if not 0 <= p < n:
            raise AttributeValueError("at", f"coordinate {i} is {p}, outside the output shape {shape}")
    return pos


def first_disagreement(case: Case) -> list[int]:
    """The first position where the reference engine and the document differ, else all zeros."""
    values, _ = run_spec(case.spec, case.input, engine="numpy", with_indices=False)
    exp = case.expected.get("values")
    if exp is not None:
        positions, shape_msg = compare("values", np.asarray(exp), values, rtol=case.rtol, atol=case.atol)
        if positions and not shape_msg:
            return list(positions[0])
    return [0] * values.ndim


def _at(arr: Any, pos: Sequence[int]) -> Any:
    a = np.asarray(arr)
    if a.ndim != len(pos) or any(not 0 <= p < n for p, n in zip(pos, a.shape)):
        return None
    v = a[tuple(pos)]
    return v.item() if isinstance(v, np.generic) else v


def _index_tap(cells: list[WindowCell], index: int, case: Case, geom: S.Geometry, pos: Sequence[int]) -> list[int] | None:
    """The input tap whose encoded index equals ``index`` (same encoding as the engines)."""
    if case.spec.op != "max":
        return None
    layout = S.index_layout(case.spec, case.input.shape)
    sizes = [a.size for a in geom.axes]
    plane = math.prod(sizes)
    nc = pos[0] * geom.channels + pos[1]
    for cell in cells:
        if cell.kind != "input":
            continue
        flat = int(np.ravel_multi_index(cell.coords, sizes, order=layout.order))
        if (nc * plane + flat) % layout.modulus == index:
            return list(cell.coords)
    return None


def _value_tap(cells: list[WindowCell], value: Any) -> list[int] | None:
    """The first input tap (row-major window order, the engines' tie rule) holding ``value``."""
    if value is None:
        return None
    v = float(value)
    for cell in cells:
        if cell.kind == "input" and cell.value is not None:
            c = float(cell.value)  # non-finite values are stored as 'nan'/'inf' strings
            if c == v or (math.isnan(c) and math.isnan(v)):
                return list(cell.coords)
    return None


def _describe(ex: Explanation, rv: RunnerValue) -> None:
    """Fill the implied argmax / divisor of one runner's value."""
    if rv.value is None:
        return
    if ex.is_max:
        if rv.index is not None:
            rv.argmax = _index_tap(ex.cells, rv.index, ex.case, ex.geometry, ex.position)
            rv.argmax_from = "index"
        if rv.argmax is None:
            rv.argmax = _value_tap(ex.cells, rv.value)
            rv.argmax_from = "value" if rv.argmax is not None else rv.argmax_from
    elif ex.tap_sum is not None:
        v = float(rv.value)
        if v != 0 and math.isfinite(v):
            rv.implied_divisor = ex.tap_sum / v


def explain_element(case: Case, position: Sequence[int] | None, engines: Sequence[str],
                    peers: Sequence[Any] = (), *, peer_timeout: float = 60.0) -> Explanation:
    """Take one output element of ``case`` apart (``position=None``: the first disagreement)."""
    geom = S.resolve(case.spec, case.input.shape)
    pos = list(position) if position is not None else first_disagreement(case)
    ex = Explanation(case, pos, geom, [])
    for engine in engines:
        try:
            values, indices = run_spec(case.spec, case.input, engine=engine)
        except PoolcheckError as exc:
            ex.runners.append(RunnerValue(engine, "engine", status=f"error: {exc}"))
            continue
        index = _at(indices, pos) if indices is not None else None
        ex.runners.append(RunnerValue(engine, "engine", _at(values, pos), None if index is None else int(index)))
    ref = next((r for r in ex.runners if r.status == "ok"), None)
    layout = S.index_layout(case.spec, case.input.shape) if case.spec.op == "max" else None
    chosen = ref.index if ref is not None else None
    ex.cells = window_cells(case.input, geom, pos, chosen, layout)
    if case.spec.op == "avg":
        ex.divisor = int(np.broadcast_to(divisor(geom, case.spec.exclude_pad), geom.output_shape)[tuple(pos)])
        plane = case.input[pos[0], pos[1]].astype(np.float64)
        ex.tap_sum = float(sum(plane[tuple(c.coords)] for c in ex.cells if c.kind == "input"))

    documented = [RunnerValue("document", "document", _at(case.expected["values"], pos) if "values" in case.expected else None,
                              _at(case.expected["indices"], pos) if "indices" in case.expected else None)]
    if case.erratum is not None:
        correct = case.erratum["correct"]
        documented.append(RunnerValue("erratum (corrected)", "erratum",
                                      _at(correct["values"], pos) if "values" in correct else None,
                                      _at(correct["indices"], pos) if "indices" in correct else None))
    ex.runners = documented + ex.runners

    if peers:
        from poolcheck.peers.isolation import call_peer_many

        for peer in peers:
            result = call_peer_many(peer, [(case.spec, case.input)], timeout=peer_timeout)[0]
            if result.status != "ok" or result.output is None:
                ex.runners.append(RunnerValue(peer.name, "peer", status=result.verdict))
                continue
            out = result.output
            index = _at(out.indices, pos) if out.indices is not None else None
            ex.runners.append(RunnerValue(peer.name, "peer", _at(out.values, pos), None if index is None else int(index)))
    for rv in ex.runners:
        _describe(ex, rv)
    return ex


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
    tables = []
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
                if tap:
                    style = "bold white on blue" if kind == "input" else "bold white on grey37" if kind == "pad" else "bold white on red"
                if argmax is not None and list(coords) == list(argmax):
                    style = "bold black on yellow"
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
    legend.append(" 1.5 ", style="bold white on blue")
    legend.append(" window tap   ")
    legend.append("pad", style="grey50")
    legend.append(" padding   ")
    legend.append("×", style="red")
    legend.append(" past pads_end (overhang)   ")
    if ex.is_max:
        legend.append(" 9 ", style="bold black on yellow")
        legend.append(" reference argmax")
    parts.append(legend)
    n_in = sum(c.kind == "input" for c in ex.cells)
    n_pad = sum(c.kind == "pad" for c in ex.cells)
    n_over = sum(c.kind == "overhang" for c in ex.cells)
    facts = Text(f"{len(ex.cells)} taps = {n_in} input + {n_pad} padding + {n_over} past pads_end", style="dim")
    if not ex.is_max and ex.divisor is not None:
        facts.append(f"\nreference divisor ({'exclude_pad' if case.spec.exclude_pad else 'include_pad'}) = "
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
