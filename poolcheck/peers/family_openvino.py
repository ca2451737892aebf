"""The rest of the family on OpenVINO's own operator set (the mixin :class:`OpenVinoFamily` of
the native OpenVINO peer): AdaptiveAvgPool-8 and AdaptiveMaxPool-8 (``openvino.opset8``), the
only family operators OpenVINO has. Its opsets have no LpPool, no global pooling and no
MaxUnpool (its ONNX frontend decomposes the first two into other operations, see the
``openvino-onnx`` peer), so those are declined here rather than composed by poolcheck.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from poolcheck.peers.base import PeerDeclined, PeerOutput
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.operators import operator

#: The family ops OpenVINO's opsets hold, by the operator version that defines each.
OPENVINO_FAMILY: dict[str, str] = {"adaptive_avg": "AdaptiveAvgPool-8", "adaptive_max": "AdaptiveMaxPool-8"}


@dataclass(frozen=True)
class OvFamilyNode:
    """One opset8 adaptive pooling node: op, spatial output sizes, index type, input shape and type."""

    op: str
    output_shape: tuple[int, ...]
    index_element_type: str
    shape: tuple[int, ...]
    dtype: str


class OpenVinoFamily:
    """The family half of the native OpenVINO peer: one compiled model per node, cached."""

    name: str
    family_ops: tuple[str, ...] = ("lp", "global_avg", "global_max", "global_lp", "unpool", "adaptive_avg",
                                   "adaptive_max")

    # from the peer class (annotations only: RuntimePeer and OpenVinoPeer define them)
    option: Callable[[str], str]
    _get_core: Callable[[], Any]

    def translate_family(self, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> OvFamilyNode:
        row = OPENVINO_FAMILY.get(spec.op)
        if row is None:
            raise PeerDeclined(self.name, f"OpenVINO's opsets have no {spec.describe().split('(')[0]} operator")
        dt = np.dtype(dtype)
        if dt.name not in operator(row).dtypes:
            raise PeerDeclined(self.name, f"OpenVINO {row} has no {dt.name} type")
        assert spec.output_shape is not None
        return OvFamilyNode(spec.op, tuple(spec.output_shape), spec.index_element_type, tuple(shape), dt.name)

    def execute_family(self, node: OvFamilyNode, spec: FamilySpec, x: np.ndarray,
                       indices: np.ndarray | None) -> PeerOutput:
        from poolcheck.peers.openvino_peer import ov_input, ov_output

        request = self._family_request(node)
        request.infer([ov_input(x)])
        values = ov_output(request.get_output_tensor(0))
        if node.op == "adaptive_max":
            return PeerOutput(values, ov_output(request.get_output_tensor(1)))
        return PeerOutput(values)

    def _family_request(self, node: OvFamilyNode) -> Any:
        cache: dict[OvFamilyNode, Any] | None = getattr(self, "_family_requests", None)
        if cache is None:
            cache = {}
            self._family_requests = cache
        if node in cache:
            return cache[node]
        import openvino as ov
        import openvino.opset8 as ops

        from poolcheck.peers.openvino_peer import COMPILE_CONFIG, ov_element_type

        param = ops.parameter(list(node.shape), ov_element_type(node.dtype), name="x")
        sizes = ops.constant(np.asarray(node.output_shape, dtype=np.int64))
        if node.op == "adaptive_max":
            pool = ops.adaptive_max_pool(param, sizes, index_element_type=node.index_element_type)
            outputs = [pool.output(0), pool.output(1)]
        else:
            outputs = [ops.adaptive_avg_pool(param, sizes).output(0)]
        config = dict(COMPILE_CONFIG, INFERENCE_PRECISION_HINT=self.option("precision"))
        if self.option("device") != "CPU":
            config.pop("INFERENCE_NUM_THREADS")
        compiled = self._get_core().compile_model(ov.Model(outputs, [param], "poolcheck"), self.option("device"), config)
        cache[node] = compiled.create_infer_request()
        if len(cache) > 64:
            cache.pop(next(iter(cache)))
        return cache[node]
