"""The ONNX reference implementation (``onnx.reference.ReferenceEvaluator``) as a peer, on the
same single-node MaxPool-22 / AveragePool-22 models the ONNX Runtime peer builds."""

from __future__ import annotations

import dataclasses
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from poolcheck.peers.adapter import RuntimePeer, Translated
from poolcheck.peers.base import BatchItem, PeerOutput
from poolcheck.peers.family_onnx import FamilyNode, OnnxFamily, family_model
from poolcheck.peers.onnx_model import OnnxNode, build_model, onnx_outputs, to_onnx
from poolcheck.spec.poolspec import PoolSpec


class OnnxReferencePeer(OnnxFamily, RuntimePeer):
    """``onnx.reference.ReferenceEvaluator`` (pure Python/NumPy), one model per configuration."""

    operator_conventions = ("onnx",)

    name = "onnx_reference"
    ref = "onnx_reference"
    module = "onnx.reference"

    def __init__(self, *, cache_size: int = 256) -> None:
        self.cache_size = cache_size
        self._evaluators: OrderedDict[OnnxNode, Any] = OrderedDict()

    def translate(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> OnnxNode:
        return to_onnx(spec, shape, dtype, self.name)

    def execute(self, group: Sequence[Translated], items: Sequence[BatchItem]) -> list[PeerOutput]:
        ((_, node, arr),) = group  # batch_limit 1: the reference evaluates one node at a time
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            # The reference averages empty slices (numpy warns); the result is what counts.
            warnings.simplefilter("ignore", RuntimeWarning)
            raw = self._evaluator(node).run(None, {"x0": arr})
        return onnx_outputs(group, items, raw)

    def without_indices(self, node: OnnxNode) -> OnnxNode:
        return dataclasses.replace(node, with_indices=False)

    def warm(self, node: OnnxNode) -> None:
        self._evaluator(node)

    def bind(self, node: OnnxNode, spec: PoolSpec, arr: np.ndarray) -> Callable[[], object]:
        evaluator, feed = self._evaluator(node), {"x0": arr}
        return lambda: evaluator.run(None, feed)

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

    def run_family_model(self, node: FamilyNode, feeds: dict[str, np.ndarray]) -> np.ndarray:
        from onnx.reference import ReferenceEvaluator

        evaluator = self.family_cached(node, lambda n: ReferenceEvaluator(family_model(n)))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return evaluator.run(None, feeds)[0]
