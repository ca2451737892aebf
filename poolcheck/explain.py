"""``poolcheck explain``'s computation: one output element of one case, taken apart.

:func:`explain_element` computes (never prints): the element's window over the padded input,
the value (and index) every engine and peer gives, the documented value, and what each value
implies -- the argmax tap for max pooling, the divisor for average pooling. The terminal view is
:mod:`poolcheck.report.explain`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from poolcheck import spec as S
from poolcheck.api import run_spec
from poolcheck.cases import load_file, load_paths
from poolcheck.cases.load import split_target
from poolcheck.cases.model import Case
from poolcheck.corpus import CORPUS_DIR, EDGE_DIR, KNOWN_DIR, SEEDS_DIR
from poolcheck.engines.numpy_engine import divisor
from poolcheck.errors import AttributeValueError, CaseFileError, PoolcheckError
from poolcheck.judgement import differing, window_cells
from poolcheck.peers.isolation import call_peer_many
from poolcheck.results import WindowCell
from poolcheck.spec.poolspec import comma_ints


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
    shape: tuple[int, ...] | None = None  # the whole output's shape, when the runner gave one


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
        return self.case.pool_spec.op == "max"

    @property
    def shape_mismatches(self) -> list[RunnerValue]:
        """The runners whose whole output has another shape than the reference's: for them no
        element tells the difference (the element shown lies in both shapes)."""
        return [r for r in self.runners if r.shape is not None and r.shape != tuple(self.geometry.output_shape)]


def split_case_ref(ref: str, k: str | None) -> tuple[str, str | None]:
    """``path::id`` -> (path, id); a plain path keeps ``-k``. Both at once is a usage error."""
    path, case_id = split_target(ref)
    if case_id is None:
        return ref, k
    if not case_id.strip():  # every id holds "": it would pick whichever case comes first
        raise AttributeValueError("CASE", f"expected a case id after '::', got an empty string in {ref!r}")
    if k is not None and k != case_id:
        raise AttributeValueError("-k", f"the case is named twice ({case_id!r} in {ref!r} and -k {k!r})")
    return path, case_id


def pick_case(cases: list[Case], case_id: str | None, path: str) -> Case:
    """The case with id ``case_id`` (exact, else the only one containing it)."""
    if case_id is None:
        if len(cases) == 1:
            return cases[0]
        ids = ", ".join(c.id for c in cases[:8]) + (", ..." if len(cases) > 8 else "")
        raise AttributeValueError("-k", f"{path} holds {len(cases)} cases; name one with -k ID or {path}::ID ({ids})")
    exact = [c for c in cases if c.id == case_id]
    if exact:
        return exact[0]
    partial = [c for c in cases if case_id in c.id]
    if len(partial) == 1:
        return partial[0]
    if not partial:
        raise AttributeValueError("-k", f"no case in {path} has the id {case_id!r}")
    raise AttributeValueError("-k", f"{case_id!r} matches {len(partial)} cases in {path}: "
                                    + ", ".join(c.id for c in partial[:8]))


def find_case(ref: str, k: str | None = None) -> Case:
    """``FILE::ID``, ``FILE`` with ``-k ID``, or a bare case ID of the shipped corpus: the one
    case to explain (errors name ``-k``)."""
    path, case_id = split_case_ref(ref, k)
    if not Path(path).is_file():
        if "::" not in ref and k is None and not Path(path).exists():
            found = corpus_case(ref)
            if found is not None:
                return found
            raise CaseFileError(f"no such case file, and no case of the shipped corpus ({CORPUS_DIR}) has this id",
                                path=path)
        raise CaseFileError("no such case file", path=path)
    return pick_case(load_file(path), case_id, path)


def corpus_case(case_id: str) -> Case | None:
    """The case of the shipped corpus (seeds, edge cases, known divergences) with id ``case_id``."""
    cases, _ = load_paths([SEEDS_DIR, EDGE_DIR, KNOWN_DIR])
    return next((c for c in cases if c.id == case_id), None)


def parse_position(text: str, case: Case) -> list[int]:
    """``"n,c,d1,..."`` -> a position inside the case's output; errors name ``--at``."""
    try:
        pos = comma_ints(text.replace("(", "").replace(")", ""))
    except ValueError:
        raise AttributeValueError("at", f"expected comma-separated integers n,c,d1,..., got {text!r}") from None
    shape = S.resolve(case.pool_spec, case.input.shape).output_shape
    if len(pos) != len(shape):
        raise AttributeValueError("at", f"expected {len(shape)} coordinates (n, c and {len(shape) - 2} spatial) "
                                        f"for output shape {shape}, got {len(pos)}")
    for i, (p, n) in enumerate(zip(pos, shape)):
        if not 0 <= p < n:
            raise AttributeValueError("at", f"coordinate {i} is {p}, outside the output shape {shape}")
    return pos


def first_disagreement(case: Case) -> list[int]:
    """The first position where the reference engine and the document differ, else all zeros.
    When their shapes differ, the first differing position of the part both shapes hold."""
    values, _ = run_spec(case.pool_spec, case.input, engine="numpy", with_indices=False)
    exp = case.expected.get("values")
    if exp is not None:
        doc = np.asarray(exp)
        if doc.ndim == values.ndim and doc.shape != values.shape:
            common = tuple(slice(0, min(a, b)) for a, b in zip(doc.shape, values.shape))
            doc, values = doc[common], values[common]
        positions, shape_msg = differing("values", doc, values, rtol=case.rtol, atol=case.atol)
        if positions and not shape_msg:
            return list(positions[0])
    return [0] * values.ndim


def _shape(arr: Any) -> tuple[int, ...] | None:
    return None if arr is None else tuple(int(n) for n in np.shape(arr))


def _at(arr: Any, pos: Sequence[int]) -> Any:
    a = np.asarray(arr)
    if a.ndim != len(pos) or any(not 0 <= p < n for p, n in zip(pos, a.shape)):
        return None
    v = a[tuple(pos)]
    return v.item() if isinstance(v, np.generic) else v


def _index_tap(cells: list[WindowCell], index: int, case: Case, geom: S.Geometry, pos: Sequence[int]) -> list[int] | None:
    """The input tap whose encoded index equals ``index`` (same encoding as the engines)."""
    if case.pool_spec.op != "max":
        return None
    layout = S.index_layout(case.pool_spec, case.input.shape)
    sizes = [a.size for a in geom.axes]
    plane = math.prod(sizes)
    nc = pos[0] * geom.channels + pos[1]
    for cell in cells:
        if cell.kind != "input":
            continue
        flat = int(np.ravel_multi_index(cell.coords, sizes, order=layout.order))  # type: ignore[call-overload]
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
    geom = S.resolve(case.pool_spec, case.input.shape)
    pos = list(position) if position is not None else first_disagreement(case)
    ex = Explanation(case, pos, geom, [])
    for engine in engines:
        try:
            values, indices = run_spec(case.pool_spec, case.input, engine=engine)
        except PoolcheckError as exc:
            ex.runners.append(RunnerValue(engine, "engine", status=f"error: {exc}"))
            continue
        index = _at(indices, pos) if indices is not None else None
        ex.runners.append(RunnerValue(engine, "engine", _at(values, pos), None if index is None else int(index),
                                      shape=_shape(values)))
    ref = next((r for r in ex.runners if r.status == "ok"), None)
    layout = S.index_layout(case.pool_spec, case.input.shape) if case.pool_spec.op == "max" else None
    chosen = ref.index if ref is not None else None
    ex.cells = window_cells(case.input, geom, pos, chosen, layout)
    if case.pool_spec.op == "avg":
        ex.divisor = int(np.broadcast_to(divisor(geom, case.pool_spec.exclude_pad), geom.output_shape)[tuple(pos)])
        plane = case.input[pos[0], pos[1]].astype(np.float64)
        ex.tap_sum = float(sum(plane[tuple(c.coords)] for c in ex.cells if c.kind == "input"))

    documented = [RunnerValue("document", "document", _at(case.expected["values"], pos) if "values" in case.expected else None,
                              _at(case.expected["indices"], pos) if "indices" in case.expected else None,
                              shape=_shape(case.expected.get("values")))]
    if case.erratum is not None:
        correct = case.erratum["correct"]
        documented.append(RunnerValue("erratum (corrected)", "erratum",
                                      _at(correct["values"], pos) if "values" in correct else None,
                                      _at(correct["indices"], pos) if "indices" in correct else None,
                                      shape=_shape(correct.get("values"))))
    ex.runners = documented + ex.runners

    if peers:
        for peer in peers:
            result = call_peer_many(peer, [(case.pool_spec, case.input)], timeout=peer_timeout)[0]
            if result.status != "ok" or result.output is None:
                ex.runners.append(RunnerValue(peer.name, "peer", status=result.verdict))
                continue
            out = result.output
            index = _at(out.indices, pos) if out.indices is not None else None
            ex.runners.append(RunnerValue(peer.name, "peer", _at(out.values, pos), None if index is None else int(index),
                                          shape=_shape(out.values)))
    for rv in ex.runners:
        _describe(ex, rv)
    return ex
