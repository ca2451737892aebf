"""A runtime peer prepares a configuration once and runs it on many inputs (PreparedConfig)."""

from __future__ import annotations

import numpy as np
import pytest
from support import available_peer

from poolcheck.api import run_spec
from poolcheck.peers import PeerDeclined
from poolcheck.peers.adapter import RuntimePeer
from poolcheck.spec import attributes as A

RUNTIMES = ["onnxruntime", "openvino", "torch", "torch:layout=channels_last", "onnx_reference"]


def _peer(name: str) -> RuntimePeer:
    peer = available_peer(name)
    assert isinstance(peer, RuntimePeer)
    return peer


SPECS = {
    "max": A.openvino_max_pool([3, 3], [2, 2], [1, 1], [1, 1]),
    "avg": A.onnx_average_pool([2, 3], [1, 2], pads=[1, 0, 1, 0], count_include_pad=1),
}


@pytest.mark.parametrize("name", RUNTIMES)
@pytest.mark.parametrize("op", ["max", "avg"])
def test_prepared_once_runs_many_inputs(name: str, op: str) -> None:
    peer = _peer(name)
    spec, shape = SPECS[op], (2, 3, 6, 7)
    session = peer.prepare(spec, shape, np.float32)
    rng = np.random.default_rng(7)
    for _ in range(3):
        x = rng.standard_normal(shape).astype(np.float32)
        out = session.run(x)
        values, indices = run_spec(spec, x)
        np.testing.assert_allclose(out.values, values, rtol=1e-6, atol=1e-6)
        if op == "max":
            assert out.indices is not None and np.array_equal(out.indices, indices)
        # the prepared session answers as the one-off call does
        np.testing.assert_array_equal(out.values, peer.run(spec, x).values)
        # and its bare call (what the benchmark times) runs on the bound input
        session.bind(x)()


@pytest.mark.parametrize("name", RUNTIMES)
def test_values_only_session_and_wrong_input(name: str) -> None:
    peer = _peer(name)
    spec, shape = SPECS["max"], (1, 2, 5, 5)
    session = peer.prepare(spec, shape, "float32", indices=False)
    x = np.arange(50, dtype=np.float32).reshape(shape)
    out = session.run(x)
    assert out.indices is None
    np.testing.assert_array_equal(out.values, run_spec(spec, x)[0])
    with pytest.raises(ValueError, match="prepared for float32"):
        session.run(x.astype(np.float64))
    with pytest.raises(ValueError, match="prepared for float32"):
        session.run(np.zeros((1, 2, 6, 6), np.float32))


@pytest.mark.parametrize("name", ["onnxruntime", "torch"])
def test_prepare_declines_what_the_peer_cannot_express(name: str) -> None:
    peer = _peer(name)
    ceil = A.openvino_max_pool([1], [3], rounding_type="ceil")  # size 5: ceil keeps a window ceil_mode drops
    with pytest.raises(PeerDeclined, match="rounding_type=ceil keeps a last window"):
        peer.prepare(ceil, (1, 1, 5), np.float32)
