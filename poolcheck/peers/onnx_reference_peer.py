"""The ONNX reference implementation (``onnx.reference.ReferenceEvaluator``) as a peer, on the
same single-node MaxPool-22 / AveragePool-22 models the ONNX Runtime peer builds."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

import numpy as np

from poolcheck.peers._convert import PeerDeclined, convert_flat_indices
from poolcheck.peers.base import PeerOutput
from poolcheck.peers.onnx_model import OnnxNode, build_model, to_onnx
from poolcheck.spec.attributes import PoolSpec


class OnnxReferencePeer:
    """``onnx.reference.ReferenceEvaluator`` (pure Python/NumPy)."""

    name = "onnx_reference"
    ref = "onnx_reference"

    def __init__(self, *, cache_size: int = 256) -> None:
        self.cache_size = cache_size
        self._evaluators: OrderedDict[OnnxNode, Any] = OrderedDict()

    def available(self) -> tuple[bool, str]:
        try:
            import onnx.reference  # noqa: F401
        except Exception as exc:
            return False, f"onnx.reference cannot be imported: {type(exc).__name__}: {exc}"
        return True, ""

    def version(self) -> str | None:
        try:
            import onnx
        except Exception:
            return None
        return str(onnx.__version__)

    def supports(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        try:
            to_onnx(spec, shape, dtype, self.name)
        except PeerDeclined as exc:
            return False, exc.reason
        return True, ""

    def _evaluator(self, node: OnnxNode) -> Any:
        ev = self._evaluators.get(node)
        if ev is None:
            from onnx.reference import ReferenceEvaluator

            ev = ReferenceEvaluator(build_model([node]))
            self._evaluators[node] = ev
            while len(self._evaluators) > self.cache_size:
                self._evaluators.popitem(last=False)
        else:
            self._evaluators.move_to_end(node)
        return ev

    def run(self, spec: PoolSpec, x: np.ndarray) -> PeerOutput:
        arr = np.ascontiguousarray(x)
        node = to_onnx(spec, arr.shape, arr.dtype, self.name)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            # The reference averages empty slices (numpy warns); the result is what counts.
            warnings.simplefilter("ignore", RuntimeWarning)
            outs = self._evaluator(node).run(None, {"x0": arr})
        values = np.asarray(outs[0])
        if not node.with_indices:
            return PeerOutput(values)
        order = "F" if dict(node.attributes).get("storage_order") else "C"
        indices, notes = convert_flat_indices(np.asarray(outs[1]), spec, arr.shape, source_order=order)
        return PeerOutput(values, indices, notes)
