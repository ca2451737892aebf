"""OpenVINO (CPU plugin) as a peer: opset14 MaxPool / AvgPool.

Compiled with ``INFERENCE_PRECISION_HINT=f32`` (no silent bf16/f16 downcast on CPUs that have
it) and ``INFERENCE_NUM_THREADS=1``. :meth:`OpenVinoPeer.run_many` packs many configurations
into one model (a Parameter and a pooling node per configuration) so a batch pays for one
compile; compiled models are cached by their nodes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from poolcheck.peers._convert import PeerDeclined, convert_flat_indices
from poolcheck.peers.base import BatchItem, PeerOutput
from poolcheck.spec.attributes import PoolSpec

#: Compile configuration: f32 inference precision forced, one thread.
COMPILE_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}


@dataclass(frozen=True)
class OvNode:
    """One opset14 pooling node: its keyword arguments, input shape and type."""

    op: str
    kwargs: tuple[tuple[str, Any], ...]
    shape: tuple[int, ...]
    dtype: str


def to_openvino(spec: PoolSpec, shape: Sequence[int], dtype: np.dtype, peer: str = "openvino") -> OvNode:
    """Translate ``spec`` into opset14 keywords, or raise :class:`PeerDeclined`."""
    shape = tuple(int(v) for v in shape)
    dt = np.dtype(dtype)
    common: dict[str, Any] = {
        "kernel_shape": list(spec.kernel),
        "strides": list(spec.strides),
        # ONNX "pads [x1_begin, x2_begin...x1_end, x2_end,...]" are already split in PoolSpec.
        "pads_begin": list(spec.pads_begin),
        "pads_end": list(spec.pads_end),
        # ONNX ceil_mode=1 is canonically ceil_torch (OpenVINO-14's name for it).
        "rounding_type": spec.rounding_type,
        "auto_pad": spec.auto_pad,
    }
    if spec.op == "avg":
        if any(d != 1 for d in spec.dilations):
            raise PeerDeclined(peer, f"OpenVINO AvgPool-14 has no dilations (got {list(spec.dilations)})")
        # ONNX count_include_pad=1 is exclude_pad=false.
        common["exclude_pad"] = bool(spec.exclude_pad)
    else:
        common["dilations"] = list(spec.dilations)
        common["axis"] = spec.axis
        common["index_element_type"] = spec.index_element_type
    return OvNode(spec.op, tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in common.items())),
                  shape, dt.str)


class OpenVinoPeer:
    """OpenVINO CPU, opset14 pooling, f32 inference precision, one thread."""

    name = "openvino"
    ref = "openvino"

    def __init__(self, *, cache_size: int = 64, batch_limit: int = 32) -> None:
        self.cache_size = cache_size
        self.batch_limit = batch_limit
        self._compiled: OrderedDict[tuple[OvNode, ...], Any] = OrderedDict()
        self._core: Any = None

    def available(self) -> tuple[bool, str]:
        try:
            import openvino
            import openvino.opset14  # noqa: F401
        except ImportError as exc:
            return False, f"openvino is not installed (pip install 'poolcheck[openvino]'): {exc}"
        except Exception as exc:
            return False, f"openvino cannot be imported: {type(exc).__name__}: {exc}"
        return True, ""

    def version(self) -> str | None:
        try:
            import openvino
        except Exception:
            return None
        return str(openvino.__version__).split("-")[0]

    def supports(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        try:
            to_openvino(spec, shape, dtype, self.name)
        except PeerDeclined as exc:
            return False, exc.reason
        return True, ""

    def run(self, spec: PoolSpec, x: np.ndarray) -> PeerOutput:
        result = self.run_many([(spec, x)])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def run_many(self, items: Sequence[BatchItem]) -> list[PeerOutput | Exception]:
        """Compute every item, up to ``batch_limit`` of them per compiled model."""
        results: list[PeerOutput | Exception | None] = [None] * len(items)
        todo: list[tuple[int, OvNode, np.ndarray]] = []
        for i, (spec, x) in enumerate(items):
            arr = np.ascontiguousarray(x)
            try:
                todo.append((i, to_openvino(spec, arr.shape, arr.dtype, self.name), arr))
            except PeerDeclined as exc:
                results[i] = exc
        for start in range(0, len(todo), self.batch_limit):
            self._run_group(todo[start : start + self.batch_limit], items, results)
        return [r if r is not None else RuntimeError("internal: no result") for r in results]

    # ------------------------------------------------------------------ internals

    def _compile(self, nodes: tuple[OvNode, ...]) -> Any:
        cached = self._compiled.get(nodes)
        if cached is not None:
            self._compiled.move_to_end(nodes)
            return cached
        import openvino as ov
        import openvino.opset14 as ops

        if self._core is None:
            self._core = ov.Core()
        params = []
        outputs = []
        for k, node in enumerate(nodes):
            param = ops.parameter(list(node.shape), np.dtype(node.dtype), name=f"x{k}")
            kw = {key: list(v) if isinstance(v, tuple) else v for key, v in node.kwargs}
            if node.op == "max":
                pool = ops.max_pool(param, **kw)
                outputs += [pool.output(0), pool.output(1)]
            else:
                pool = ops.avg_pool(param, **kw)
                outputs.append(pool.output(0))
            params.append(param)
        model = ov.Model(outputs, params, "poolcheck")
        compiled = self._core.compile_model(model, "CPU", COMPILE_CONFIG)
        entry = (compiled, compiled.create_infer_request())
        self._compiled[nodes] = entry
        while len(self._compiled) > self.cache_size:
            self._compiled.popitem(last=False)
        return entry

    def _run_group(
        self,
        group: list[tuple[int, OvNode, np.ndarray]],
        items: Sequence[BatchItem],
        results: list[PeerOutput | Exception | None],
    ) -> None:
        """Run ``group`` as one compiled model; split it on failure until each failing
        configuration carries its own error."""
        if not group:
            return
        nodes = tuple(node for _, node, _ in group)
        try:
            _, request = self._compile(nodes)
            request.infer([arr for _, _, arr in group])
            raw = [request.get_output_tensor(k).data.copy() for k in range(len(request.model_outputs))]
        except Exception as exc:
            if len(group) == 1:
                results[group[0][0]] = exc
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
            if node.op == "max":
                spec = items[i][0]
                if spec.convention == "onnx":
                    # OpenVINO (axis 0) reports row-major flat indices; storage_order=1 wants
                    # column-major ones.
                    indices, notes = convert_flat_indices(raw[pos], spec, arr.shape, source_order="C")
                else:
                    indices = raw[pos]
                pos += 1
            results[i] = PeerOutput(values, indices, notes)
