"""The search for an explanation of a differing output: greedy cover by variants, then bounded
combinations, each full explanation verified by replay; what none reproduces is unexplained."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.engines import numpy_engine as _NUMPY
from poolcheck.errors import PoolcheckError
from poolcheck.fuzz.diagnosis.indices import (
    DEPTHLESS_TAIL,
    _spec_order_modulus,
    depthless_tail_applies,
    depthless_tail_start,
    encode_indices,
    encode_with_fill,
    renumber_planes,
)
from poolcheck.fuzz.diagnosis.model import Diagnosis
from poolcheck.fuzz.diagnosis.replay import attribution_text, replay, replays_kept, settle
from poolcheck.fuzz.diagnosis.rerun import _crop, _narrow, _run, _tolerance, _uncrop_indices
from poolcheck.fuzz.diagnosis.severity import UNEXPLAINED_SEVERITY, severity_of
from poolcheck.fuzz.diagnosis.variants import (
    EMPTY_INDEX_VARIANTS,
    GEOMETRY_VARIANTS,
    INDEX_VARIANTS,
    NARROWER,
    PRECISION_TEXT,
    GeometryVariant,
    IndexVariant,
    Placement,
    PolicyVariant,
    applicable_policies,
    built_placement,
    placements,
    variant_text,
)
from poolcheck.fuzz.reference import Outputs, compute_expected
from poolcheck.judgement import close_values
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.dtypes import is_float
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import Geometry


@dataclass
class _Explained:
    keys: list[str]
    texts: list[str]
    value_mask: np.ndarray  # output elements whose value no chosen variant reproduces
    index_mask: np.ndarray | None  # ... whose index
    ambiguous: bool = False
    x: np.ndarray | None = None  # the input and geometry the explanation ran on
    geom: Geometry | None = None

    # counted once (the masks are not changed after): the search compares them several times
    @functools.cached_property
    def remaining_values(self) -> int:
        return int(self.value_mask.sum())

    @functools.cached_property
    def remaining_indices(self) -> int:
        return 0 if self.index_mask is None else int(self.index_mask.sum())

    @functools.cached_property
    def remaining(self) -> int:
        return self.remaining_values + self.remaining_indices


def _empty_window_rules_first(candidates: list[tuple[PolicyVariant, np.ndarray, int]], geom: Geometry,
                              shape: tuple[int, ...]) -> list[tuple[PolicyVariant, np.ndarray, int]]:
    """Drop an integer-max scan rule (seeded from 0, padding read as 0, ...) whose every fixed
    element is a window wholly in padding while an empty-window rule fixes them all: on an empty
    window a scan seeded with v and an empty fill of v (with index 0, an index rule) give the same
    output, and only the empty-window rule is confirmed by the runner's partly padded windows."""
    empty = w.empty_windows(geom)
    if empty is None:
        return candidates
    inside = np.broadcast_to(empty, shape)
    fills = [f for v, f, _sc in candidates if v.group == "empty_max"]

    def shadowed(v: PolicyVariant, f: np.ndarray) -> bool:
        return (v.group == "int_max" and bool(f.any()) and not (f & ~inside).any()
                and any(not (f & ~ef).any() for ef in fills))

    return [c for c in candidates if not shadowed(c[0], c[1])]


def _same_outputs(a: Outputs, b: Outputs) -> bool:
    """``a`` and ``b`` hold the same values and indices, bit for bit."""
    if a.values.dtype != b.values.dtype or a.values.shape != b.values.shape or a.values.tobytes() != b.values.tobytes():
        return False
    if a.indices is None or b.indices is None:
        return a.indices is None and b.indices is None
    return (a.indices.dtype == b.indices.dtype and a.indices.shape == b.indices.shape
            and a.indices.tobytes() == b.indices.tobytes())


def _explain_values(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, geom: Geometry, values: np.ndarray,
                    prefer: Mapping[str, int], out_dtype: np.dtype | None = None,
                    index_score: Callable[[Outputs], int] | None = None,
                    computed: tuple[int, ...] | None = None,
                    ) -> tuple[list[PolicyVariant], Policy, Outputs, np.ndarray, bool]:
    """Greedy cover of the differing elements by policy variants (one per group). Returns the
    chosen variants, their policy, the reference under it, the elements still differing, and
    whether another variant of a chosen group would have fixed exactly the same elements.
    Variants fixing the same values are told apart by ``index_score`` (how many of the peer's
    indices the variant's reference reproduces), then by ``prefer``, then by their order."""
    base = _run(engine_module, spec, x, geom, SPEC, out_dtype, computed)
    ok0 = close_values(base.values, values, _tolerance(engine_module, spec, x, geom, SPEC, base.values))
    base_score = index_score(base) if index_score is not None else 0
    if ok0.all() and (index_score is None or base_score == values.size):
        return [], SPEC, base, ~ok0, False
    bad0 = ~ok0
    candidates: list[tuple[PolicyVariant, np.ndarray, int]] = []
    for v in applicable_policies(spec, x, geom):
        pol = SPEC.replace(**v.change)
        ref = _run(engine_module, spec, x, geom, pol, out_dtype, computed)
        if spec.op == "max" and _same_outputs(ref, base):
            continue  # the spec's own outputs (a max is compared exactly): fixes nothing, scores the same
        ok = close_values(ref.values, values, _tolerance(engine_module, spec, x, geom, pol, ref.values))
        if (ok0 & ~ok).any():
            continue  # it breaks an element that agreed: no candidate (its index score does not matter)
        fixes = bad0 & ok
        score = index_score(ref) if index_score is not None else 0
        if fixes.any() or score > base_score:
            candidates.append((v, fixes, score))
    candidates = _empty_window_rules_first(candidates, geom, values.shape)
    chosen: list[PolicyVariant] = []
    ambiguous = False
    remaining = bad0.copy()
    while True:
        open_ = [(v, f, sc) for v, f, sc in candidates if v.group not in {c.group for c in chosen}]
        scored = [(int((f & remaining).sum()), sc, prefer.get(v.key, 0), -i, v, f)
                  for i, (v, f, sc) in enumerate(open_)]
        if not scored:
            break
        gain, score, _p, _i, v, f = max(scored, key=lambda t: t[:4])
        if gain == 0:
            break
        ambiguous |= any(o is not v and o.group == v.group and np.array_equal(of, f) and osc == score
                         for o, of, osc in open_)
        chosen.append(v)
        remaining &= ~f
    if not chosen:  # the values agree already: a variant may still account for the indices
        # (the seeded scan only when it explains more than any other: where values agree, its index
        # effect on an empty window is empty_index=0's, an index rule; on an element equal to the
        # lowest value -- which keeps index 0 -- it is its own)
        # the seeded scan only where it reproduces more indices than index 0 for empty windows
        # alone would (an element equal to the lowest value keeps index 0: its own effect)
        seeded_floor = base_score
        if w.empty_windows(geom) is not None and index_score is not None:
            seeded_floor = index_score(_run(engine_module, spec, x, geom, SPEC.replace(empty_index=0), out_dtype,
                                            computed))
        if (spec.op == "max" and depthless_tail_applies(tuple(x.shape)) and index_score is not None
                and prefer.get("max=seeded-scan", 0) <= prefer.get(DEPTHLESS_TAIL, 0)):
            # nor more than PyTorch's channels_last start index would (unless this subject showed
            # the seeded scan more often): where the start it drops the depth term from is index
            # 0 of the plane, the two give the same numbers
            assert base.indices is not None
            tail = depthless_tail_start(base.indices.astype(np.int64), tuple(x.shape), geom, x)
            seeded_floor = max(seeded_floor, index_score(Outputs(base.values, tail)))
        better = [(sc, -i, v) for i, (v, _f, sc) in enumerate(candidates)
                  if sc > base_score and (v.key != "max=seeded-scan" or sc > seeded_floor)]
        if better:
            chosen.append(max(better, key=lambda t: t[:2])[2])
    policy = SPEC
    for v in chosen:
        policy = policy.replace(**v.change)
    ref = _run(engine_module, spec, x, geom, policy, out_dtype, computed) if chosen else base
    ok = close_values(ref.values, values, _tolerance(engine_module, spec, x, geom, policy, ref.values))
    return chosen, policy, ref, ~ok, ambiguous


def _explain_indices(spec: PoolSpec, x: np.ndarray, geom: Geometry, ref: Outputs, values: np.ndarray,
                     indices: np.ndarray, crop: tuple[tuple[int, int], ...] | None = None,
                     prefer: Mapping[str, int] | None = None,
                     rule: Callable[[PoolSpec, np.ndarray, Geometry, np.ndarray], np.ndarray] | None = None,
                     ) -> tuple[list[tuple[str, str]], np.ndarray]:
    """Index variants (at most one per group) that reproduce the peer's indices where the
    values agree (none with a placement's own index ``rule``: its indices are the rule's)."""
    shape = tuple(x.shape)
    assert ref.indices is not None
    canon = ref.indices.astype(np.int64)
    peer = np.asarray(indices).astype(np.int64)
    order, modulus = _spec_order_modulus(spec, shape)
    where = close_values(ref.values, values, None)

    fill: str | None = None

    def differs(canon_: np.ndarray, order_: str, modulus_: int, pads: tuple | None,
                fill_: str | None = None) -> np.ndarray:
        return (encode_with_fill(canon_, shape, order_, modulus_, pads, fill_, geom, crop, x) != peer) & where

    if rule is not None:  # the placement's own index rule: no layout variant combines with it
        return [], (rule(spec, x, geom, canon) != peer) & where
    bad0 = differs(canon, order, modulus, None)
    if not bad0.any():
        return [], bad0
    chosen: list[tuple[str, str]] = []
    # A window wholly in padding: the spec's -1, or index 0 of the plane (OpenVINO), or the
    # coordinates -1 on every axis flattened (ONNX Runtime), or the first tap at or after
    # coordinate 0 on every axis flattened (PyTorch).
    # PyTorch's channels_last 3-D kernel: also a window whose elements all equal the lowest value
    tail = spec.op == "max" and depthless_tail_applies(shape)
    if (canon < 0).any() or tail:
        fills = []
        for rank, (key, text) in enumerate(EMPTY_INDEX_VARIANTS):
            if key == DEPTHLESS_TAIL and not tail:
                continue
            after = differs(canon, order, modulus, None, key)
            if not (after & ~bad0).any() and (bad0 & ~after).any():
                fills.append((int(after.sum()), -(prefer or {}).get(key, 0), rank, key, text, after))
        if fills:  # the rule that reproduces the most indices (two may agree on a few windows), then
            # the one this peer showed before
            _n, _p, _rank, fill, text, bad0 = min(fills, key=lambda t: t[:3])
            chosen.append((fill, text))
    if bad0.any():
        layout_order, layout_mod, layout_pads = order, modulus, None
        for group in ("index_planes", "index_scope", "index_order", "index_coords"):
            # the variant of the group that reproduces the most indices (the first of equals)
            pick: tuple[IndexVariant, tuple[str, int, tuple | None], np.ndarray, np.ndarray] | None = None
            for v in INDEX_VARIANTS:
                if v.group != group or not v.applies(spec, shape, geom):
                    continue
                o, m, p = v.layout(spec, shape, geom)
                trial = (o if group == "index_order" else layout_order,
                         m if group == "index_scope" else layout_mod,
                         p if group == "index_coords" else layout_pads)
                trial_canon = renumber_planes(canon, shape) if v.renumber else canon
                bad = differs(trial_canon, *trial, fill)
                if (int(bad.sum()) < int((bad0 if pick is None else pick[2]).sum())
                        and not (bad & ~bad0).any()):
                    pick = (v, trial, bad, trial_canon)
            if pick is not None:
                v, (layout_order, layout_mod, layout_pads), bad0, canon = pick
                chosen.append((v.key, v.text))
    return chosen, bad0


def _explain_on(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, placement: Placement, values: np.ndarray,
                indices: np.ndarray | None, prefer: Mapping[str, int], compute: np.dtype | None = None) -> _Explained:
    xc = _crop(_narrow(x, compute) if compute is not None else x, placement.crop)
    geom = placement.geom
    score = None
    if spec.op == "max" and indices is not None and tuple(np.shape(indices)) == tuple(values.shape):
        order, modulus = _spec_order_modulus(spec, tuple(x.shape))
        peer_idx = np.asarray(indices).astype(np.int64)

        def score(ref: Outputs) -> int:
            assert ref.indices is not None
            canon = _uncrop_indices(ref.indices.astype(np.int64), tuple(xc.shape), tuple(x.shape), placement.crop)
            return int((encode_indices(canon, tuple(x.shape), order, modulus) == peer_idx).sum())

    chosen, _policy, ref, value_mask, ambiguous = _explain_values(engine_module, spec, xc, geom, values, prefer,
                                                                  x.dtype, score, placement.computed)
    keys = [v.key for v in chosen]
    texts = [v.text for v in chosen]
    index_mask = None
    if spec.op == "max" and indices is not None and tuple(np.shape(indices)) == tuple(values.shape):
        assert ref.indices is not None
        ref = Outputs(ref.values, _uncrop_indices(ref.indices.astype(np.int64), tuple(xc.shape), tuple(x.shape),
                                                  placement.crop))
        idx_chosen, index_mask = _explain_indices(spec, x, geom, ref, values, indices, placement.crop, prefer,
                                                  placement.index_rule)
        keys += [k for k, _ in idx_chosen]
        texts += [t for _, t in idx_chosen]
    return _Explained(keys, texts, value_mask, index_mask, ambiguous, xc, geom)


def diagnose_output(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, values: np.ndarray,
                    indices: np.ndarray | None, prefer: Mapping[str, int] | None = None, *,
                    transposed_retry: bool = True) -> Diagnosis:
    """Name the variant(s) of the reference that reproduce a subject's output.

    Several explanations can fit one small example (NaN ignored and NaN-first agree on a window
    whose first element is a number); ``prefer`` (variant -> how often it explained this subject
    before, seeded from the registry) decides between them, so one behaviour gets one class: the
    full explanation needing the fewest variants this subject has never shown wins, then the
    one with the fewest variants, then the one most often seen. A shorter explanation through a
    behaviour never seen does not beat a longer one made of behaviours on record: on a decreasing
    input ONNX Runtime's undilated-kernel SAME windows {0, 3}, {3} plus its NaN-first scan give
    the same outputs as 'dilations ignored' ({0, 1}, {3}) alone."""
    with replays_kept():  # settling, alternatives and aliases replay the same keys: each is made once
        return _diagnose_output(engine_module, spec, x, values, indices, prefer, transposed_retry=transposed_retry)


def _diagnose_output(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, values: np.ndarray,
                     indices: np.ndarray | None, prefer: Mapping[str, int] | None, *,
                     transposed_retry: bool) -> Diagnosis:
    prefer = prefer or {}
    shape = tuple(int(v) for v in x.shape)
    values = np.asarray(values)
    if indices is not None and spec.op == "max" and tuple(np.shape(indices)) != tuple(values.shape):
        found = _transposed_retry(engine_module, spec, x, values, np.asarray(indices), prefer)
        if found is not None:
            return found
        indices = np.asarray(indices)
        if tuple(indices.shape[:2]) + tuple(indices.shape[2:])[::-1] != tuple(values.shape):
            return Diagnosis("shape: indices unexplained", f"indices shape {list(indices.shape)}, values shape "
                             f"{list(values.shape)}; no known variant gives it", False,
                             atoms=("shape: indices unexplained",), severity=UNEXPLAINED_SEVERITY)
        # transposed, and something else differs too: diagnose the rest on the indices turned back
        indices = np.transpose(indices, (0, 1, *range(indices.ndim - 1, 1, -1)))
    options = placements(spec, shape)
    base = options[0][1]
    assert base is not None
    candidates = [(gv, p) for gv, p in options if p is not None and p.output_shape == tuple(values.shape)]
    if not candidates:
        return Diagnosis(
            "shape: unexplained",
            f"output shape {list(values.shape)}, expected {list(base.output_shape)}; no known variant gives it",
            False, atoms=("shape: unexplained",), severity=UNEXPLAINED_SEVERITY,
        )
    full: list[tuple[tuple[int, int, int, int], _Explained]] = []
    best: _Explained | None = None
    narrower = NARROWER.get(x.dtype.name)
    reps: list[np.dtype | None] = [None, np.dtype(narrower)] if narrower else [None]
    trials = [(gv, p, rep) for rep in reps for gv, p in candidates]
    for order, (gv, p, rep) in enumerate(trials):
        assert p is not None
        try:
            ex = _explain_on(engine_module, spec, x, p, values, indices, prefer, rep)
        except (PoolcheckError, ValueError):  # an engine refusing a variant's geometry: not this one
            continue
        if gv is not None:
            ex.keys.insert(0, gv.key)
            ex.texts.insert(0, gv.text)
        if rep is not None:
            ex.keys.insert(0, f"precision:{rep.name}")
            ex.texts.insert(0, PRECISION_TEXT[rep.name])
        if ex.remaining == 0 and not ex.keys:
            return Diagnosis("same", "no difference", True)
        if rep is not None and ex.remaining and len(ex.keys) == 1:
            continue  # the narrower type alone explains nothing: no partial diagnosis rests on it
        if ex.remaining == 0:
            unseen = sum(1 for k in ex.keys if not prefer.get(k))
            full.append(((-unseen, -len(ex.keys), sum(prefer.get(k, 0) for k in ex.keys), -order), ex))
        if best is None or (ex.remaining_values, ex.remaining_indices) < (best.remaining_values,
                                                                          best.remaining_indices):
            best = ex
    full.sort(key=lambda t: t[0], reverse=True)
    deadline = time.monotonic() + DIAGNOSIS_SECONDS
    # every full explanation is verified by replaying the case under exactly the named variants
    verified: list[Diagnosis] = []
    for _key, ex in full[:MAX_VERIFIED]:
        found = _verified(engine_module, spec, x, ex.keys, values, indices, ambiguous=ex.ambiguous or len(full) > 1)
        if found is not None and all(found.variants != v.variants for v in verified):
            verified.append(found)
    if verified:
        # the first is the name for this example; the others reproduce it as well (a campaign
        # replays them on the subject's other examples: only a cause that fits all is named)
        alternatives = tuple(v.variants for v in verified[1:] if v.variants)
        alternatives += tuple(a for a in _geometry_aliases(engine_module, spec, x, verified[0].variants, values, indices)
                              if a not in alternatives)
        return dataclasses.replace(verified[0], alternatives=alternatives,
                                   ambiguous=verified[0].ambiguous or bool(alternatives))
    # the greedy cover found no full explanation: search combinations (cheap ones first, bounded)
    found = _combinations(engine_module, spec, x, candidates, reps, values, indices, prefer, deadline)
    if found is not None:
        return found
    if best is None:
        return Diagnosis("unexplained", "no variant could be evaluated", False, severity=UNEXPLAINED_SEVERITY)
    if transposed_retry and indices is not None:
        found = _transposed_retry(engine_module, spec, x, values, np.asarray(indices), prefer)
        if found is not None:
            return found
    return _partial(engine_module, spec, x, best, values, indices)


def _geometry_aliases(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, keys: tuple[str, ...],
                      values: np.ndarray, indices: np.ndarray | None) -> list[tuple[str, ...]]:
    """``keys`` with a geometry variant swapped for another that places the windows the same way
    on this example (``placements`` keeps only the first of such twins), verified by replay: a
    cause the campaign then tells apart on other examples."""
    shape = tuple(int(v) for v in x.shape)
    out: list[tuple[str, ...]] = []
    for i, key in enumerate(keys):
        for other in _twins(key, spec, shape):
            alt = (*keys[:i], other, *keys[i + 1:])
            if alt not in out:
                r = replay(engine_module, spec, x, alt, values, indices)
                if r is not None and r.exact:
                    out.append(alt)
    return out


@functools.lru_cache(maxsize=1024)
def _twins(key: str, spec: PoolSpec, shape: tuple[int, ...]) -> tuple[str, ...]:
    """The geometry variants other than ``key`` that place the windows as ``key`` does on
    ``spec`` and ``shape`` (none when ``key`` is no geometry variant)."""
    if not any(g.key == key for g in GEOMETRY_VARIANTS):
        return ()
    mine = built_placement(key, spec, shape)
    if mine is None:
        return ()
    return tuple(other.key for other in GEOMETRY_VARIANTS
                 if other.key != key and other.applies(spec) and built_placement(other.key, spec, shape) == mine)


def _transposed_retry(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, values: np.ndarray,
                      indices: np.ndarray, prefer: Mapping[str, int]) -> Diagnosis | None:
    """storage_order=1 honoured by transposing the index tensor (OpenVINO's ONNX frontend): the
    peer's indices with their spatial axes reversed back are diagnosed as usual; when that fully
    explains them as row-major (or as right), the transposition is named with the rest. None
    when it does not apply or explain."""
    flipped = tuple(indices.shape[:2]) + tuple(indices.shape[2:])[::-1]
    if spec.op != "max" or spec.storage_order != 1 or indices.ndim != values.ndim or indices.ndim < 4 \
            or flipped != tuple(values.shape):
        return None
    back = np.transpose(indices, (0, 1, *range(indices.ndim - 1, 1, -1)))
    if np.array_equal(back, indices):
        return None  # the transposition changes nothing here: nothing to tell apart
    inner = diagnose_output(engine_module, spec, x, values, back, prefer, transposed_retry=False)
    if not inner.explained:
        return None
    keys = tuple(k for k in inner.atoms if k != "index:storage_order-ignored") + ("index:storage_order-transposed",)
    text = "; ".join(variant_text(k) for k in keys)
    return Diagnosis("+".join(keys), text, True, keys, atoms=keys, severity=severity_of(keys, spec))


#: Bounds of the search: full explanations verified, variants combined, seconds per finding.
MAX_VERIFIED = 6
MAX_DEPTH = 3
DIAGNOSIS_SECONDS = 2.0


def _verified(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, keys: list[str], values: np.ndarray,
              indices: np.ndarray | None, ambiguous: bool = False) -> Diagnosis | None:
    """A diagnosis naming ``keys`` if replaying the case under them reproduces the peer exactly
    (averages within the tolerance), with the unneeded variants dropped; else None."""
    kept, rep, attribution = settle(engine_module, spec, x, list(keys), values, indices)
    if rep is None or not rep.exact:
        return None
    if not kept:
        return Diagnosis("same", "no difference", True)
    texts = {k: variant_text(k) for k in kept}
    text = attribution_text(attribution, texts) if len(kept) > 1 else texts[kept[0]]
    return Diagnosis("+".join(kept), text, True, tuple(kept), ambiguous=ambiguous, atoms=tuple(kept),
                     severity=severity_of(kept, spec), attribution=tuple(attribution))


def _combinations(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray,
                  candidates: Sequence[tuple[GeometryVariant | None, Placement | None]], reps: list[np.dtype | None],
                  values: np.ndarray, indices: np.ndarray | None, prefer: Mapping[str, int],
                  deadline: float) -> Diagnosis | None:
    """Combinations of 0 to :data:`MAX_DEPTH` policy variants (one per group) on every placement
    and computation type, fewest variants first; each variant must change the reference
    somewhere the peer differs (pruning), and the indices are then explained greedily. The first
    combination whose replay reproduces the peer wins."""
    for rep in reps:
        for gv, p in candidates:
            assert p is not None
            xc = _crop(_narrow(x, rep) if rep is not None else x, p.crop)
            base = [*([f"precision:{rep.name}"] if rep is not None else []), *([gv.key] if gv is not None else [])]
            start = replay(engine_module, spec, x, base, values, indices)
            if start is None:
                continue
            useful, alone = [], {}
            rest = []
            for v in applicable_policies(spec, xc, p.geom):
                r = replay(engine_module, spec, x, [*base, v.key], values, indices)
                # useful: it reproduces a value, or changes which indices agree (a scan rule whose
                # only trace is an index, seen once an index layout variant is applied)
                if r is not None and ((r.value_ok & ~start.value_ok).any() or (
                        r.index_ok is not None and start.index_ok is not None
                        and (r.value_ok == start.value_ok).all() and (r.index_ok != start.index_ok).any())):
                    useful.append(v)
                    alone[v.key] = r
                else:
                    rest.append(v)
            # a variant that matters only together with another (NaN for an empty average only once
            # the divisor ignores padding) is kept if it changes what that other one reproduces
            for v in rest:
                for u in list(useful):
                    if u.group == v.group or u.key not in alone:
                        continue
                    r = replay(engine_module, spec, x, [*base, u.key, v.key], values, indices)
                    if r is not None and (r.value_ok & ~alone[u.key].value_ok).any():
                        useful.append(v)
                        break
            useful.sort(key=lambda v: -prefer.get(v.key, 0))
            for depth in range(0, MAX_DEPTH + 1):
                for combo in itertools.combinations(useful, depth):
                    if time.monotonic() > deadline:
                        return None
                    if len({v.group for v in combo}) < depth:
                        continue
                    keys = [*base, *(v.key for v in combo)]
                    r = replay(engine_module, spec, x, keys, values, indices)
                    if r is None or not r.value_ok.all():
                        continue
                    if r.index_ok is not None and not r.index_ok.all():
                        ref = _run(engine_module, spec, r.x, r.geom, SPEC.replace(
                            **{k: val for v in combo for k, val in v.change.items()}), x.dtype, p.computed)
                        assert ref.indices is not None and indices is not None
                        ref = Outputs(ref.values, _uncrop_indices(ref.indices.astype(np.int64), tuple(r.x.shape),
                                                                  tuple(x.shape), p.crop))
                        idx, _mask = _explain_indices(spec, x, p.geom, ref, values, indices, p.crop, prefer,
                                                      p.index_rule)
                        keys += [k for k, _t in idx]
                    found = _verified(engine_module, spec, x, keys, values, indices)
                    if found is not None:
                        return found
    return None


def _partial(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, best: _Explained, values: np.ndarray,
             indices: np.ndarray | None) -> Diagnosis:
    """No verified combination reproduces the peer: the class names no variant (a partial match
    may be a coincidence, and a wrong name is worse than none), only ``unexplained values/indices``
    kept apart by the kind of window the differing elements lie in. The closest partial match,
    verified element by element, is mentioned in the text as a lead."""
    _kept, rep, attribution = settle(engine_module, spec, x, list(best.keys), values, indices)
    attribution = [a for a in attribution if a[1] or a[2]] if rep is not None else []
    raw = replay(engine_module, spec, x, [], values, indices)
    # the elements the closest match leaves over (its per-element agreement is verified; only its
    # name is withheld), else every differing element of the spec's own windows
    where = rep if rep is not None and attribution else raw if raw is not None else rep
    if where is not None:
        value_mask = ~where.value_ok
        index_mask = None if where.index_ok is None else ~where.index_ok
        ex = _Explained([], [], value_mask, index_mask, x=where.x, geom=where.geom)
    else:
        ex = _Explained([], [], best.value_mask, best.index_mask, x=best.x, geom=best.geom)
    rest = []
    if ex.remaining_values:
        rest.append("values")
    if ex.remaining_indices:
        rest.append("indices")
    unexplained = f"unexplained {'+'.join(rest) or 'output'}"
    text = f"{unexplained} ({ex.remaining} element(s) that no verified combination of known variants reproduces)"
    if attribution:
        text += "; closest, not a full explanation: " + attribution_text(
            attribution, {k: variant_text(k) for k, _v, _i in attribution})
    # what stays unexplained is kept apart by the kind of window it happens in, so one class does
    # not hide the others
    atoms = []
    for what, mask in (("values", ex.value_mask), ("indices", ex.index_mask)):
        if mask is not None and mask.any():
            atoms.append(f"unexplained {what} ({_window_kind(spec, ex, mask)})")
    return Diagnosis(unexplained, text, False, (), ambiguous=True, atoms=tuple(atoms) or (unexplained,),
                     severity=UNEXPLAINED_SEVERITY, attribution=tuple(attribution))


def _window_kind(spec: PoolSpec, ex: _Explained, mask: np.ndarray) -> str:
    """The most specific kind of window among the unexplained elements: wholly in padding, holding
    a NaN, touching padding, or inside the input."""
    x, geom = ex.x, ex.geom
    if x is None or geom is None or geom.output_shape != mask.shape:
        return "window"
    empty = w.empty_windows(geom)
    if empty is not None and (np.broadcast_to(empty, mask.shape) & mask).any():
        return "window wholly in padding"
    if is_float(x.dtype) and np.isnan(x).any() and 0 not in geom.output_shape:
        nan = compute_expected(_NUMPY, np.isnan(x).astype(np.float64), geom, "avg", policy=Policy(divisor="full")).values
        if ((nan > 0) & mask).any():
            return "window with NaN"
    n = len(geom.axes)
    padded = np.zeros((1, 1) + (1,) * n, dtype=bool)
    for i, a in enumerate(geom.axes):
        padded = padded | w.broadcast_axis(w.valid_counts(a) < a.kernel, i, n)
    if (np.broadcast_to(padded, mask.shape) & mask).any():
        return "window touching padding"
    return "window inside the input"
