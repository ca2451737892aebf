"""What one diagnosis keeps to save work changes no diagnosis: a replay made once per diagnosis
(``replays_kept``) hands out copies and is keyed by everything it reads, and a geometry variant's
placement is built once (``built_placement``).

The equivalence cases are outputs of runners behaving as named variants (``predict``), on
seeded inputs with NaN, padding-only windows and ties: each is diagnosed with the replays kept
(``diagnose_output``) and with none kept (``search._diagnose_output`` outside any scope)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from poolcheck.engines import get_engine
from poolcheck.fuzz.diagnosis import diagnose_output, predict, replay, search
from poolcheck.fuzz.diagnosis.replay import replays_kept
from poolcheck.fuzz.diagnosis.variants import GEOMETRY_VARIANTS, built_placement
from poolcheck.spec import attributes as A
from poolcheck.spec.shape import resolve

ENGINE = get_engine("auto")

SPECS = [
    A.openvino_max_pool([3], [2], [1], [2], rounding_type="ceil"),
    A.openvino_max_pool([2, 2], [2, 1], [1, 0], [1, 1], dilations=[1, 2]),
    A.openvino_max_pool([3], [1], auto_pad="same_lower", dilations=[2]),
    A.onnx_max_pool([2, 3], strides=[1, 2], pads=[1, 0, 0, 1], storage_order=1),
    A.openvino_avg_pool([3], [2], [2], [2], exclude_pad=True, rounding_type="ceil"),
    A.openvino_avg_pool([2, 2], [1, 2], [1, 1], [0, 1], exclude_pad=False),
    A.onnx_average_pool([3], strides=[2], auto_pad="SAME_UPPER", dilations=[2]),
]

#: Runners that differ from the spec by these variants (one or two at a time).
KEYS = [
    (), ("nan=ignore",), ("empty_max=lowest",), ("max=seeded-scan",), ("divisor=valid",), ("divisor=padded",),
    ("empty_avg=nan",), ("same:swapped",), ("dilations:ignored",), ("pads:swapped",), ("rounding:ceil->floor",),
    ("pads:swapped", "nan=ignore"), ("dilations:ignored", "divisor=valid"), ("precision:float32",),
]


def _inputs(spec: A.PoolSpec, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    rank = len(spec.kernel)
    shape = (2, 2, *([7] if rank == 1 else [5, 6]))
    ties = rng.integers(-3, 4, size=shape).astype(np.float32)
    nans = rng.standard_normal(shape).astype(np.float32)
    nans[rng.random(shape) < 0.2] = np.nan
    half = rng.standard_normal(shape).astype(np.float16)
    return [ties, nans, half]


def _cases() -> list[tuple[A.PoolSpec, np.ndarray, np.ndarray, np.ndarray | None]]:
    cases = []
    for (i, spec), keys in itertools.product(enumerate(SPECS), KEYS):
        for x in _inputs(spec, i):
            out = predict(ENGINE, spec, x, keys)
            if out is None:
                continue
            values, indices = out
            if indices is not None and spec.storage_order == 1 and indices.ndim >= 4:
                indices = np.transpose(indices, (0, 1, *range(indices.ndim - 1, 1, -1)))  # as OpenVINO's frontend
            cases.append((spec, x, values, indices))
    return cases


def test_kept_replays_change_no_diagnosis() -> None:
    cases = _cases()
    assert len(cases) > 150
    named = set()
    for spec, x, values, indices in cases:
        kept = diagnose_output(ENGINE, spec, x, values, indices, {})
        fresh = search._diagnose_output(ENGINE, spec, x, values, indices, {}, transposed_retry=True)
        assert kept == fresh, (spec, x.dtype)
        named.add(kept.klass)
    assert len(named) > 10  # the cases reach many names, alternatives and retries, not one path


def test_a_kept_replay_is_handed_out_as_a_copy() -> None:
    spec = SPECS[0]
    x = _inputs(spec, 0)[1]
    values, indices = predict(ENGINE, spec, x, ("nan=ignore",))  # type: ignore[misc]
    outside = replay(ENGINE, spec, x, ["nan=ignore"], values, indices)
    assert outside is not None
    with replays_kept():
        first = replay(ENGINE, spec, x, ["nan=ignore"], values, indices)
        assert first is not None
        first.value_ok[...] = False  # a caller changing what it was handed ...
        first.values[...] = 0
        assert first.index_ok is not None
        first.index_ok[...] = False
        again = replay(ENGINE, spec, x, ["nan=ignore"], values, indices)
    assert again is not None and again.index_ok is not None and outside.index_ok is not None
    # ... changes nothing another caller reads
    assert again.value_ok.all() and again.index_ok.all()
    np.testing.assert_array_equal(again.values, outside.values)


@pytest.mark.parametrize("what", ["values", "indices"])
def test_a_kept_replay_is_keyed_by_the_peer_output(what: str) -> None:
    """Within one diagnosis the same keys are replayed against other peer outputs (the transposed
    index retry diagnoses the indices turned back): each gets its own comparison."""
    spec = SPECS[0]
    x = _inputs(spec, 0)[0]
    values, indices = predict(ENGINE, spec, x, ())  # type: ignore[misc]
    assert indices is not None
    other_values, other_indices = values.copy(), indices.copy()
    if what == "values":
        other_values[0, 0, 0] += 1
    else:
        other_indices[0, 0, 0] += 1
    with replays_kept():
        exact = replay(ENGINE, spec, x, [], values, indices)
        off = replay(ENGINE, spec, x, [], other_values, other_indices)
    assert exact is not None and exact.exact
    assert off is not None and not off.exact


def test_a_built_placement_is_the_variant_build() -> None:
    for spec, gv in itertools.product(SPECS, GEOMETRY_VARIANTS):
        shape = tuple(_inputs(spec, 0)[0].shape)
        try:
            want = gv.build(spec, shape)
        except (ValueError, ZeroDivisionError):  # AttributeValueError is a ValueError
            want = None
        assert built_placement(gv.key, spec, shape) == want, gv.key
    spec = SPECS[1]
    shape = tuple(_inputs(spec, 0)[0].shape)
    assert built_placement("pads:swapped", spec, shape) != built_placement("pads:ignored", spec, shape)
    assert built_placement("pads:swapped", spec, shape).geom != resolve(spec, shape)  # type: ignore[union-attr]
