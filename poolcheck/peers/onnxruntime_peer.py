"""ONNX Runtime (CPU execution provider) as a peer: MaxPool-22 / AveragePool-22 models.

Sessions are cached by their nodes (operator, attributes, input shape and type) and
:meth:`OnnxRuntimePeer.run_many` packs many configurations into ONE model with one node, one
input and one or two outputs per configuration, so a batch pays for a single session.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from poolcheck.peers.adapter import RuntimePeer, Translated
from poolcheck.peers.base import BatchItem, PeerOption, PeerOutput
from poolcheck.peers.family_onnx import FamilyNode, OnnxFamily, family_model
from poolcheck.peers.onnx_model import OnnxNode, build_model, onnx_outputs, to_onnx
from poolcheck.spec.poolspec import PoolSpec


class OnnxRuntimePeer(OnnxFamily, RuntimePeer):
    """ONNX Runtime, single-threaded (intra/inter op threads 1), default graph optimizations.

    ``optimization`` is ORT's graph optimization level: ``"all"`` (the default users get, which
    may swap in ORT's own layout-transformed kernels), ``"basic"`` or ``"none"``.
    """

    operator_conventions = ("onnx",)

    name = "onnxruntime"
    ref = "onnxruntime"
    module = "onnxruntime"
    accepted_options = (
        PeerOption("opt", "all", "graph optimization level (disable = ORT_DISABLE_ALL)",
                   ("disable", "basic", "extended", "all")),
        PeerOption("ep", "CPU", "execution provider, e.g. CUDA for CUDAExecutionProvider; no fallback to CPU",
                   examples=("CPU", "CUDA", "TensorRT")),
    )

    def __init__(self, *, optimization: str = "all", cache_size: int = 256, batch_limit: int = 64) -> None:
        if optimization not in ("all", "extended", "basic", "none"):
            raise ValueError(f"optimization: expected all, extended, basic or none, got {optimization!r}")
        self.optimization = optimization
        self.cache_size = cache_size
        self.batch_limit = batch_limit
        self._sessions: OrderedDict[tuple[OnnxNode, ...], Any] = OrderedDict()
        # Kernels ORT lacks, e.g. ("AveragePool", "<f8", False): the session error, so later
        # items fail at once (with the same error) instead of breaking a whole packed model.
        self._missing_kernels: dict[tuple[str, str, bool], Exception] = {}
        self._options: Any = None
        self.options: dict[str, str] = {}

    def configure(self, options: dict[str, str]) -> None:
        super().configure(options)
        level = self.option("opt")
        self.optimization = "none" if level == "disable" else level
        self._options = None
        self._sessions.clear()

    @property
    def provider(self) -> str:
        """The execution provider's full name, e.g. ``CUDAExecutionProvider``."""
        ep = self.option("ep")
        return ep if ep.endswith("ExecutionProvider") else f"{ep}ExecutionProvider"

    def unusable(self) -> str | None:
        import onnxruntime as ort

        available = ort.get_available_providers()
        if self.provider not in available:
            return (f"execution provider {self.provider} is not available here "
                    f"(this onnxruntime has: {', '.join(available)})")
        return None

    def translate(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> OnnxNode:
        return to_onnx(spec, shape, dtype, self.name)

    def known_refusal(self, node: OnnxNode) -> Exception | None:
        return self._missing_kernels.get((node.op_type, node.dtype, node.with_indices))

    def refused(self, node: OnnxNode, exc: Exception) -> None:
        if "NOT_IMPLEMENTED" in str(exc):
            self._missing_kernels[(node.op_type, node.dtype, node.with_indices)] = exc

    def execute(self, group: Sequence[Translated], items: Sequence[BatchItem]) -> list[PeerOutput]:
        session = self._session(tuple(node for _, node, _ in group))
        raw = session.run(None, {f"x{k}": arr for k, (_, _, arr) in enumerate(group)})
        return onnx_outputs(group, items, raw)

    def without_indices(self, node: OnnxNode) -> OnnxNode:
        return dataclasses.replace(node, with_indices=False)

    def warm(self, node: OnnxNode) -> None:
        self._session((node,))

    def bind(self, node: OnnxNode, spec: PoolSpec, arr: np.ndarray) -> Callable[[], object]:
        session, feed = self._session((node,)), {"x0": arr}
        return lambda: session.run(None, feed)

    # ------------------------------------------------------------------ internals

    def _session_options(self) -> Any:
        if self._options is None:
            import onnxruntime as ort

            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            so.inter_op_num_threads = 1
            so.log_severity_level = 4  # fatal only: rejections are reported, not logged
            # Never let a node fall back to the CPU provider when another one was asked for.
            if self.provider != "CPUExecutionProvider":
                so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
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
            model.SerializeToString(), self._session_options(), providers=[self.provider]
        )
        self._sessions[nodes] = session
        while len(self._sessions) > self.cache_size:
            self._sessions.popitem(last=False)
        return session

    # ------------------------------------------------------------------ the rest of the family

    def run_family_model(self, node: FamilyNode, feeds: dict[str, np.ndarray]) -> np.ndarray:
        import onnxruntime as ort

        session = self.family_cached(node, lambda n: ort.InferenceSession(
            family_model(n).SerializeToString(), self._session_options(), providers=[self.provider]))
        return session.run(["y"], feeds)[0]
