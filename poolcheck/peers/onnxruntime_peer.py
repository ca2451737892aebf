"""ONNX Runtime (CPU execution provider) as a peer: MaxPool-22 / AveragePool-22 models.

Sessions are cached by their nodes (operator, attributes, input shape and type) and
:meth:`OnnxRuntimePeer.run_many` packs many configurations into ONE model with one node, one
input and one or two outputs per configuration, so a batch pays for a single session.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from poolcheck.peers._convert import PeerDeclined, convert_flat_indices
from poolcheck.peers.base import BatchItem, PeerOutput
from poolcheck.peers.onnx_model import OnnxNode, build_model, to_onnx
from poolcheck.spec.attributes import PoolSpec


class OnnxRuntimePeer:
    """ONNX Runtime, single-threaded (intra/inter op threads 1), default graph optimizations.

    ``optimization`` is ORT's graph optimization level: ``"all"`` (the default users get, which
    may swap in ORT's own layout-transformed kernels), ``"basic"`` or ``"none"``.
    """

    name = "onnxruntime"
    ref = "onnxruntime"

    def __init__(self, *, optimization: str = "all", cache_size: int = 256, batch_limit: int = 64) -> None:
        if optimization not in ("all", "extended", "basic", "none"):
            raise ValueError(f"optimization: expected all, extended, basic or none, got {optimization!r}")
        self.optimization = optimization
        self.cache_size = cache_size
        self.batch_limit = batch_limit
        self._sessions: OrderedDict[tuple[OnnxNode, ...], Any] = OrderedDict()
        # Kernels ORT lacks, e.g. ("AveragePool", "<f8", False): the session error, so later
        # items fail at once instead of breaking a whole packed model.
        self._missing_kernels: dict[tuple[str, str, bool], str] = {}
        self._options: Any = None

    # ------------------------------------------------------------------ Peer protocol

    def available(self) -> tuple[bool, str]:
        try:
            import onnxruntime  # noqa: F401
        except Exception as exc:  # ImportError, or a broken install
            return False, f"onnxruntime cannot be imported: {exc}"
        return True, ""

    def version(self) -> str | None:
        try:
            import onnxruntime
        except Exception:
            return None
        return str(onnxruntime.__version__)

    def supports(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        try:
            to_onnx(spec, shape, dtype, self.name)
        except PeerDeclined as exc:
            return False, exc.reason
        return True, ""

    def run(self, spec: PoolSpec, x: np.ndarray) -> PeerOutput:
        result = self.run_many([(spec, x)])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def run_many(self, items: Sequence[BatchItem]) -> list[PeerOutput | Exception]:
        """Compute every item, packing up to ``batch_limit`` of them per model."""
        results: list[PeerOutput | Exception | None] = [None] * len(items)
        todo: list[tuple[int, OnnxNode, np.ndarray]] = []
        for i, (spec, x) in enumerate(items):
            arr = np.ascontiguousarray(x)
            try:
                node = to_onnx(spec, arr.shape, arr.dtype, self.name)
            except PeerDeclined as exc:
                results[i] = exc
                continue
            missing = self._missing_kernels.get((node.op_type, node.dtype, node.with_indices))
            if missing is not None:
                results[i] = RuntimeError(missing)
                continue
            todo.append((i, node, arr))
        for start in range(0, len(todo), self.batch_limit):
            self._run_group(todo[start : start + self.batch_limit], items, results)
        return [r if r is not None else RuntimeError("internal: no result") for r in results]

    # ------------------------------------------------------------------ internals

    def _session_options(self) -> Any:
        if self._options is None:
            import onnxruntime as ort

            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            so.inter_op_num_threads = 1
            so.log_severity_level = 4  # fatal only: rejections are reported, not logged
            so.graph_optimization_level = {
                "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
                "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            }[self.optimization]
            self._options = so
        return self._options

    def _session(self, nodes: tuple[OnnxNode, ...]) -> Any:
        session = self._sessions.get(nodes)
        if session is not None:
            self._sessions.move_to_end(nodes)
            return session
        import onnxruntime as ort

        model = build_model(nodes)
        session = ort.InferenceSession(
            model.SerializeToString(), self._session_options(), providers=["CPUExecutionProvider"]
        )
        self._sessions[nodes] = session
        while len(self._sessions) > self.cache_size:
            self._sessions.popitem(last=False)
        return session

    def _run_group(
        self,
        group: list[tuple[int, OnnxNode, np.ndarray]],
        items: Sequence[BatchItem],
        results: list[PeerOutput | Exception | None],
    ) -> None:
        """Run ``group`` as one model; if ORT refuses it, split it in halves until each failing
        configuration stands alone and carries its own error."""
        if not group:
            return
        nodes = tuple(node for _, node, _ in group)
        try:
            session = self._session(nodes)
            raw = session.run(None, {f"x{k}": arr for k, (_, _, arr) in enumerate(group)})
        except Exception as exc:
            if len(group) == 1:
                i, node, _ = group[0]
                if "NOT_IMPLEMENTED" in str(exc):
                    self._missing_kernels[(node.op_type, node.dtype, node.with_indices)] = str(exc)
                results[i] = exc
                return
            half = len(group) // 2
            self._run_group(group[:half], items, results)
            self._run_group(group[half:], items, results)
            return
        pos = 0
        for i, node, arr in group:
            values = raw[pos]
            pos += 1
            indices = None
            notes: list[str] = []
            if node.with_indices:
                spec = items[i][0]
                order = "F" if dict(node.attributes).get("storage_order") else "C"
                indices, notes = convert_flat_indices(raw[pos], spec, arr.shape, source_order=order)
                pos += 1
            results[i] = PeerOutput(values, indices, notes)
