"""``--invalid``'s "dtype not allowed": a configuration invalid only by its operator's own type
list binds the peers that run that operator as written (an ONNX runtime for an ONNX spec,
OpenVINO's native API for an OpenVINO spec, a plugin's kernel for either), not those translating
into an API of their own. A 75 s every-peer campaign (seed 21) reported OpenVINO, PyTorch and JAX
as "accepting" ONNX MaxPool-22 on uint64, a violation, while OpenVINO's MaxPool runs uint64 as its
own spec allows: an artifact of the adapter, not the runtime. onnx.reference, which runs ONNX's
MaxPool, declines a type ONNX MaxPool-22 has not; OpenVINO is judged by its own operators."""

from __future__ import annotations

import numpy as np
from support import available_peer

from poolcheck.engines import get_engine
from poolcheck.fuzz.oracles import Finding
from poolcheck.fuzz.session import judge_peer
from poolcheck.fuzz.strategies import FuzzCase
from poolcheck.peers import call_peer_many
from poolcheck.peers.base import PeerOutput, PeerResult
from poolcheck.spec.operators import parse

ENGINE = get_engine("numpy")
ONNX_MAX = parse("MaxPool-22", {"kernel_shape": [2]})
X = np.arange(6, dtype=np.uint64).reshape(1, 1, 6)
CASE = FuzzCase("MaxPool-22", {"kernel_shape": [2]}, ONNX_MAX, X, {}, "dtype not allowed")


def judged(peer: object, case: FuzzCase = CASE, result: PeerResult | None = None) -> list[Finding | None]:
    if result is None:
        (result,) = call_peer_many(peer, [(case.spec, case.x)], isolated=False)  # type: ignore[arg-type]
    return [f for _c, _r, f in judge_peer(peer, [case], [None], [result], ENGINE, version=None,  # type: ignore[arg-type]
                                          prefer=lambda _i: {})]


def test_openvino_runs_its_own_maxpool_on_uint64_and_is_not_blamed() -> None:
    peer = available_peer("openvino")
    (result,) = call_peer_many(peer, [(ONNX_MAX, X)], isolated=False)
    assert result.status == "ok"  # OpenVINO's MaxPool takes every numeric type
    assert judged(peer) == [None]


def test_openvino_is_judged_by_its_own_operators_types() -> None:
    """OpenVINO's AvgPool-14 takes floating-point types only: its native API is judged on int32."""
    peer = available_peer("openvino")
    spec = parse("AvgPool-14", {"kernel": [2], "strides": [1], "pads_begin": [0], "pads_end": [0], "exclude_pad": False})
    x = np.arange(6, dtype=np.int32).reshape(1, 1, 6)
    case = FuzzCase("AvgPool-14", {}, spec, x, {}, "dtype not allowed")
    (result,) = call_peer_many(peer, [(spec, x)], isolated=False)
    (finding,) = judged(peer, case)
    if result.status == "ok":
        assert finding is not None and finding.klass == "accepts invalid: dtype not allowed"
    else:
        assert result.status == "rejects" and finding is None


def test_a_plugin_implements_the_spec_it_is_handed() -> None:
    """A plugin declares no operator_conventions: it runs both conventions' operators, so a
    kernel computing ONNX MaxPool-22 on uint64 is judged; a translating built-in is not."""

    class Kernel:
        name = "kernel"

    class Translating:
        name = "translating"
        operator_conventions = ("openvino",)

    output = PeerResult("ok", PeerOutput(X[..., :5].copy(), np.zeros((1, 1, 5), np.int64)))
    (finding,) = judged(Kernel(), result=output)
    assert finding is not None and finding.klass == "accepts invalid: dtype not allowed"
    assert judged(Translating(), result=output) == [None]
