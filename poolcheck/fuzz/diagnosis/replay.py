"""Replay: the reference re-run under exactly the named variants, compared element by element with
the peer; :func:`settle` drops the variants a replay does not need and attributes the elements."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from poolcheck.errors import PoolcheckError
from poolcheck.fuzz.diagnosis.indices import _spec_order_modulus, encode_with_fill, renumber_planes
from poolcheck.fuzz.diagnosis.rerun import _crop, _narrow, _run, _tolerance, _uncrop_indices, order_open
from poolcheck.fuzz.diagnosis.variants import (
    _EMPTY_INDEX_KEYS,
    _GEOMETRY_BY_KEY,
    _INDEX_BY_KEY,
    _POLICY_BY_KEY,
    Placement,
    built_placement,
)
from poolcheck.judgement import close_values
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.policy import SPEC
from poolcheck.spec.shape import Geometry, resolve


@dataclass
class Replay:
    """The reference re-run under a set of named variants, in the peer's own terms: values in the
    input type, indices in the spec's layout (the peer's), and the per-element agreement."""

    values: np.ndarray
    indices: np.ndarray | None
    value_ok: np.ndarray  # elements whose value the replay reproduces (within the average tolerance)
    index_ok: np.ndarray | None  # ... whose index (where the values agree)
    x: np.ndarray  # the input the windows ran on (narrowed, cropped)
    geom: Geometry

    @property
    def exact(self) -> bool:
        return bool(self.value_ok.all()) and (self.index_ok is None or bool(self.index_ok.all()))


#: The replays of the diagnosis in progress, by everything each read (None: no diagnosis in
#: progress, nothing kept). One diagnosis replays the same keys many times over: each full
#: explanation settled (every key dropped in turn, then each kept one again to attribute it),
#: the alternatives and aliases.
_KEPT: contextvars.ContextVar[dict[Hashable, Replay | None] | None] = contextvars.ContextVar("diagnosis_replays",
                                                                                           default=None)


@contextlib.contextmanager
def replays_kept() -> Iterator[None]:
    """Within: :func:`replay` computes each replay once and hands out copies of it after (a nested
    scope shares the outer one's: a replay is keyed by everything it reads)."""
    if _KEPT.get() is not None:
        yield
        return
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def array_key(a: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    """An array as a dictionary key: its element type, shape and bytes."""
    return a.dtype.str, a.shape, a.tobytes()


def replay(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, keys: tuple[str, ...] | list[str],
           values: np.ndarray, indices: np.ndarray | None) -> Replay | None:
    """Re-run the reference under ``keys`` (any mix of precision, geometry, policy and index
    variants) and compare with the peer's ``values``/``indices``. None: the keys give no output of
    the peer's shape (or name something unknown). Within :func:`replays_kept`, made once."""
    store = _KEPT.get()
    if store is None:
        return _replay(engine_module, spec, x, keys, values, indices)
    values = np.asarray(values)
    key = (engine_module, spec, array_key(x), tuple(keys), array_key(values),
           None if indices is None else array_key(np.asarray(indices)))
    if key not in store:
        store[key] = _replay(engine_module, spec, x, keys, values, indices)
    return _copied(store[key])


def _copied(r: Replay | None) -> Replay | None:
    """A replay a caller may change without changing what another reads."""
    if r is None:
        return None
    return Replay(r.values.copy(), None if r.indices is None else r.indices.copy(), r.value_ok.copy(),
                  None if r.index_ok is None else r.index_ok.copy(), r.x.copy(), r.geom)


def _replay(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, keys: tuple[str, ...] | list[str],
            values: np.ndarray, indices: np.ndarray | None) -> Replay | None:
    shape = tuple(int(v) for v in x.shape)
    compute: np.dtype | None = None
    placement = Placement(resolve(spec, shape))
    changes: dict[str, object] = {}
    index_keys: list[str] = []
    for key in keys:
        if key.startswith("precision:"):
            compute = np.dtype(key.split(":", 1)[1])
        elif key in _GEOMETRY_BY_KEY:
            built = built_placement(key, spec, shape)
            if built is None:
                return None
            placement = built
        elif key in _POLICY_BY_KEY:
            changes.update(_POLICY_BY_KEY[key].change)
        elif key in _INDEX_BY_KEY or key in _EMPTY_INDEX_KEYS:
            index_keys.append(key)
        else:
            return None
    values = np.asarray(values)
    if placement.output_shape != tuple(values.shape):
        return None
    policy = SPEC.replace(**changes)
    xc = _crop(_narrow(x, compute) if compute is not None else x, placement.crop)
    geom = placement.geom
    try:
        ref = _run(engine_module, spec, xc, geom, policy, x.dtype, placement.computed)
        # (the average rule runs the engine too: on a crop that leaves an axis no element, the C
        # engine refuses the geometry the run above took; the variant gives no output then)
        tolerance = _tolerance(engine_module, spec, xc, geom, policy, ref.values)
    except (PoolcheckError, ValueError):
        return None
    value_ok = close_values(ref.values, values, tolerance)
    left_open = order_open(spec, xc, geom, policy, values)
    if left_open is not None:
        value_ok = value_ok | left_open
    if spec.op != "max" or indices is None or ref.indices is None or np.shape(indices) != values.shape:
        return Replay(ref.values, None, value_ok, None, xc, geom)
    canon = _uncrop_indices(ref.indices.astype(np.int64), tuple(xc.shape), shape, placement.crop)
    order, modulus = _spec_order_modulus(spec, shape)
    pads = None
    fill = None
    if placement.index_rule is not None:  # the placement's own index rule: no index variant combines
        if index_keys:
            return None
        encoded = placement.index_rule(spec, x, geom, canon)
        where = close_values(ref.values, values, None)
        return Replay(ref.values, encoded, value_ok, (encoded == np.asarray(indices).astype(np.int64)) | ~where,
                      xc, geom)
    for key in index_keys:
        if key in _EMPTY_INDEX_KEYS:
            fill = key
            continue
        v = _INDEX_BY_KEY[key]
        if v.renumber:
            canon = renumber_planes(canon, shape)
        o, m, p = v.layout(spec, shape, geom)
        if v.group == "index_order":
            order = o
        elif v.group == "index_scope":
            modulus = m
        else:
            pads = p
    encoded = encode_with_fill(canon, shape, order, modulus, pads, fill, geom, placement.crop, x)
    where = close_values(ref.values, values, None)
    index_ok = (encoded == np.asarray(indices).astype(np.int64)) | ~where
    return Replay(ref.values, encoded, value_ok, index_ok, xc, geom)


def predict(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray,
            keys: tuple[str, ...] | list[str]) -> tuple[np.ndarray, np.ndarray | None] | None:
    """What a runner behaving as ``keys`` says gives on ``x``: values, and indices in the spec's
    layout (None: the keys give no output here, or name something unknown)."""
    shape = tuple(int(v) for v in x.shape)
    placement = Placement(resolve(spec, shape))
    for key in keys:
        if key in _GEOMETRY_BY_KEY:
            built = built_placement(key, spec, shape)
            if built is None:
                return None
            placement = built
    out = placement.output_shape
    if any(n < 1 for n in out):
        return None
    blank = np.zeros(out, dtype=x.dtype)
    try:
        r = replay(engine_module, spec, x, keys, blank, np.zeros(out, dtype=np.int64) if spec.op == "max" else None)
    except (PoolcheckError, ValueError):  # the engine refuses the variant's geometry: no output
        return None
    return None if r is None else (r.values, r.indices)


def _covers(a: Replay | None, b: Replay) -> bool:
    """``a`` reproduces at least every element ``b`` does."""
    if a is None:
        return False
    if (b.value_ok & ~a.value_ok).any():
        return False
    if b.index_ok is not None and (a.index_ok is None or (b.index_ok & ~a.index_ok).any()):
        return False
    return True


def settle(engine_module: ModuleType, spec: PoolSpec, x: np.ndarray, keys: list[str], values: np.ndarray,
           indices: np.ndarray | None) -> tuple[list[str], Replay | None, list[tuple[str, int, int]]]:
    """Verify ``keys`` by replay, drop every variant the replay does not need (one that changes
    nothing relevant), and attribute to each remaining variant the elements that stop agreeing
    without it: ``(key, values, indices)``."""
    full = replay(engine_module, spec, x, keys, values, indices)
    if full is None:
        return keys, None, []
    kept = list(keys)
    for key in list(kept):
        trial = [k for k in kept if k != key]
        if _covers(replay(engine_module, spec, x, trial, values, indices), full):
            kept = trial
    # the elements each variant is needed for; an element several are needed for goes to the most
    # specific one (the variant needed for the fewest elements), so the counts add up
    lost: list[tuple[str, np.ndarray, np.ndarray]] = []
    for key in kept:
        without = replay(engine_module, spec, x, [k for k in kept if k != key], values, indices)
        if without is None or without.value_ok.shape != full.value_ok.shape:
            lost_v = full.value_ok.copy()
            lost_i = np.zeros_like(lost_v) if full.index_ok is None else full.index_ok & ~lost_v
        else:
            lost_v = full.value_ok & ~without.value_ok
            lost_i = np.zeros_like(lost_v)
            if full.index_ok is not None and without.index_ok is not None:
                lost_i = full.index_ok & ~without.index_ok & without.value_ok
        lost.append((key, lost_v, lost_i))
    sizes = {key: int(v.sum() + i.sum()) for key, v, i in lost}
    attribution = []
    for key, lost_v, lost_i in lost:
        mine_v, mine_i = lost_v.copy(), lost_i.copy()
        for other, ov, oi in lost:
            if other != key and (sizes[other], kept.index(other)) < (sizes[key], kept.index(key)):
                mine_v &= ~ov
                mine_i &= ~oi
        attribution.append((key, int(mine_v.sum()), int(mine_i.sum())))
    return kept, full, attribution


def attribution_text(attribution: list[tuple[str, int, int]] | tuple[tuple[str, int, int], ...],
                     texts: Mapping[str, str]) -> str:
    """``values at 12 positions: <variant>; indices at 3 positions: <variant>`` (output shape:
    a geometry variant moves every window)."""
    parts = []
    for key, nv, ni in attribution:
        what = []
        if nv:
            what.append(f"values at {nv} position{'s' if nv != 1 else ''}")
        if ni:
            what.append(f"indices at {ni} position{'s' if ni != 1 else ''}")
        where = " and ".join(what) or "the output shape"
        parts.append(f"{where}: {texts.get(key, key)}")
    return "; ".join(parts)
