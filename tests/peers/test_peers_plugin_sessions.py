"""A plugin peer prepares a configuration once and runs it on many inputs, with the same
interface as the runtime peers' PreparedConfig (run, bind, shape/dtype guard, declines)."""

from __future__ import annotations

import types

import numpy as np
import pytest

import poolcheck
from poolcheck.peers.base import PeerDeclined
from poolcheck.peers.plugin import ModulePeer
from poolcheck.spec.operators import parse


def _plugin(with_avg: bool = True) -> types.ModuleType:
    module = types.ModuleType("my_pool")
    module.max_pool = poolcheck.max_pool  # type: ignore[attr-defined]
    if with_avg:
        module.avg_pool = poolcheck.avg_pool  # type: ignore[attr-defined]
    return module


MAX = parse("MaxPool-14", {"kernel": [2, 2], "strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0],
                           "dilations": [1, 1]})
AVG = parse("AvgPool-14", {"kernel": [3], "strides": [2], "pads_begin": [1], "pads_end": [1],
                           "exclude_pad": True, "rounding_type": "ceil"})


@pytest.mark.parametrize("spec, shape", [(MAX, (1, 2, 4, 5)), (AVG, (2, 1, 7))])
def test_prepared_once_answers_as_the_one_off_call(spec, shape) -> None:
    peer = ModulePeer(_plugin(), name="mine", ref="my_pool")
    session = peer.prepare(spec, shape, np.float32)
    rng = np.random.default_rng(7)
    for _ in range(3):
        x = rng.standard_normal(shape).astype(np.float32)
        got = session.run(x)
        once = peer.run(spec, x)
        expected, expected_idx = poolcheck.run_spec(spec, x, engine="numpy")
        np.testing.assert_array_equal(got.values, once.values)
        np.testing.assert_array_equal(got.values, expected)
        if spec.op == "max":
            np.testing.assert_array_equal(got.indices, expected_idx)
        # bind gives the plugin's bare call, the same values
        bare = session.bind(x)()
        np.testing.assert_array_equal(bare[0] if isinstance(bare, tuple) else bare, expected)


def test_values_only_and_input_guard() -> None:
    peer = ModulePeer(_plugin(), name="mine", ref="my_pool")
    session = peer.prepare(MAX, (1, 1, 3, 3), "float32", indices=False)
    out = session.run(np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3))
    assert out.indices is None and out.values.shape == (1, 1, 2, 2)
    with pytest.raises(ValueError, match="prepared for float32"):
        session.run(np.zeros((1, 1, 3, 3), np.float64))
    with pytest.raises(ValueError, match="prepared for float32"):
        session.run(np.zeros((1, 1, 4, 4), np.float32))


def test_prepare_declines_what_the_plugin_cannot_express() -> None:
    peer = ModulePeer(_plugin(with_avg=False), name="mine", ref="my_pool")
    with pytest.raises(PeerDeclined, match="defines no avg_pool"):
        peer.prepare(AVG, (1, 1, 7), np.float32)
