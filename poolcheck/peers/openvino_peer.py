"""OpenVINO (CPU plugin) as a peer: opset14 MaxPool / AvgPool.

Compiled with ``INFERENCE_PRECISION_HINT=f32`` (no silent bf16/f16 downcast on CPUs that have
it) and ``INFERENCE_NUM_THREADS=1``. :meth:`OpenVinoPeer.run_many` packs many configurations
into one model (a Parameter and a pooling node per configuration) so a batch pays for one
compile; compiled models are cached by their nodes.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from poolcheck.peers._convert import convert_flat_indices, negative_same_pads
from poolcheck.peers.adapter import RuntimePeer, Translated
from poolcheck.peers.base import BatchItem, PeerDeclined, PeerOption, PeerOutput
from poolcheck.spec import dtypes
from poolcheck.spec.family import FAMILY_OPS, FamilySpec
from poolcheck.spec.operators import operator, spell
from poolcheck.spec.poolspec import PoolSpec

#: Compile configuration: f32 inference precision forced, one thread.
COMPILE_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}


@dataclass(frozen=True)
class OvNode:
    """One opset14 pooling node: its keyword arguments, input shape and type."""

    op: str
    kwargs: tuple[tuple[str, Any], ...]
    shape: tuple[int, ...]
    dtype: str
    #: Max pooling: whether the model outputs the indices too.
    with_indices: bool = True


def ov_input(arr: np.ndarray) -> Any:
    """An input for ``request.infer``: the array itself, or for bfloat16 an ``ov.Tensor`` of
    element type bf16 holding its bits (OpenVINO's Python API knows no ml_dtypes type, and shows
    a bf16 tensor's buffer as a float16 array: its bits are written through a uint16 view)."""
    if arr.dtype != dtypes.BFLOAT16:
        return arr
    import openvino as ov

    tensor = ov.Tensor(ov.Type.bf16, list(arr.shape))
    tensor.data.view(np.uint16)[...] = np.ascontiguousarray(arr).view(np.uint16)
    return tensor


def ov_output(tensor: Any) -> np.ndarray:
    """An output tensor's values as a fresh NumPy array (a bf16 one as ml_dtypes bfloat16, its bits
    read through a uint16 view of the float16-typed buffer OpenVINO shows)."""
    import openvino as ov

    if tensor.element_type == ov.Type.bf16:
        return tensor.data.view(np.uint16).view(dtypes.BFLOAT16).copy()
    return np.array(tensor.data, copy=True)


def ov_element_type(dtype: Any) -> Any:
    """The element type of a model parameter: NumPy's name for it, or OpenVINO's bf16."""
    import openvino as ov

    dt = np.dtype(dtype)
    return ov.Type.bf16 if dt == dtypes.BFLOAT16 else dt


def to_openvino(spec: PoolSpec, shape: Sequence[int], dtype: np.dtype, peer: str = "openvino") -> OvNode:
    """Translate ``spec`` into opset14 keywords, or raise :class:`PeerDeclined`."""
    shape = tuple(int(v) for v in shape)
    dt = np.dtype(dtype)
    why = negative_same_pads(spec, shape)
    if why:
        raise PeerDeclined(peer, why)
    if spec.op == "avg" and any(d != 1 for d in spec.dilations):
        raise PeerDeclined(peer, f"OpenVINO AvgPool-14 has no dilations (got {list(spec.dilations)})")
    # The catalogue spells it as opset14 does (an ONNX spec by its meaning: ceil_mode=1 is
    # ceil_torch, and floor under VALID, which ONNX's formula ignores it for).
    common = spell(spec, "MaxPool-14" if spec.op == "max" else "AvgPool-14")
    common["kernel_shape"] = common.pop("kernel")  # opset14's keyword for it
    return OvNode(spec.op, tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in common.items())),
                  shape, dt.name)


class OpenVinoPeer(RuntimePeer):
    """OpenVINO CPU, opset14 pooling, f32 inference precision, one thread."""

    operator_conventions = ("openvino",)

    name = "openvino"
    ref = "openvino"
    module = "openvino.opset14"
    install_hint = "pip install 'poolcheck[openvino]'"
    #: Every family op is taken, and all but the two below declined: OpenVINO's opsets have no
    #: LpPool, no global pooling and no MaxUnpool (its ONNX frontend decomposes the first two into
    #: other operations; see the openvino-onnx peer), and poolcheck composes none of them.
    family_ops = FAMILY_OPS
    accepted_options = (
        PeerOption("device", "CPU", "OpenVINO device; one absent here declines everything",
                   examples=("CPU", "GPU", "NPU")),
        PeerOption("precision", "f32", "INFERENCE_PRECISION_HINT; one the device lacks declines everything",
                   ("f32", "bf16", "f16")),
    )

    def __init__(self, *, cache_size: int = 64, batch_limit: int = 32) -> None:
        self.cache_size = cache_size
        self.batch_limit = batch_limit
        self._compiled: OrderedDict[tuple[OvNode, ...], Any] = OrderedDict()
        self._core: Any = None
        self.options: dict[str, str] = {}
        self._unusable: str | bool | None = False  # False: not checked yet

    def configure(self, options: dict[str, str]) -> None:
        super().configure(options)
        self._compiled.clear()
        self._unusable = False

    def _get_core(self) -> Any:
        if self._core is None:
            import openvino as ov

            self._core = ov.Core()
        return self._core

    def unusable(self) -> str | None:
        if self._unusable is not False:
            return self._unusable  # type: ignore[return-value]
        device, precision = self.option("device"), self.option("precision")
        why: str | None = None
        core = self._get_core()
        devices = list(core.available_devices)
        if device not in devices:
            why = f"OpenVINO device {device} is not available here (available: {', '.join(devices) or 'none'})"
        elif precision != "f32":
            try:
                caps = [str(c).upper() for c in core.get_property(device, "OPTIMIZATION_CAPABILITIES")]
            except Exception as exc:
                caps = []
                why = f"cannot read {device} OPTIMIZATION_CAPABILITIES: {exc}"
            capability = {"bf16": "BF16", "f16": "FP16"}[precision]
            if why is None and capability not in caps:
                why = (f"OpenVINO {device} has no {precision} inference precision here "
                       f"(capabilities: {', '.join(caps) or 'none'})")
        self._unusable = why
        return why

    def version(self) -> str | None:
        version = super().version()
        return version.split("-")[0] if version else None

    def translate(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> OvNode:
        return to_openvino(spec, shape, dtype, self.name)

    def execute(self, group: Sequence[Translated], items: Sequence[BatchItem]) -> list[PeerOutput]:
        _, request = self._compile(tuple(node for _, node, _ in group))
        request.infer([ov_input(arr) for _, _, arr in group])
        raw = [ov_output(request.get_output_tensor(k)) for k in range(len(request.model_outputs))]
        outputs = []
        pos = 0
        for i, node, arr in group:
            values = raw[pos]
            pos += 1
            indices = None
            notes: list[str] = []
            if node.op == "max" and node.with_indices:
                spec = items[i][0]
                if spec.convention == "onnx":
                    # OpenVINO (axis 0) reports row-major flat indices; storage_order=1 wants
                    # column-major ones.
                    indices, notes = convert_flat_indices(raw[pos], spec, arr.shape, source_order="C")
                else:
                    indices = raw[pos]
                pos += 1
            outputs.append(PeerOutput(values, indices, notes))
        return outputs

    def without_indices(self, node: OvNode) -> OvNode:
        return dataclasses.replace(node, with_indices=False)

    def warm(self, node: OvNode) -> None:
        self._compile((node,))

    def bind(self, node: OvNode, spec: PoolSpec, arr: np.ndarray) -> Callable[[], object]:
        import openvino as ov

        _, request = self._compile((node,))
        tensor = ov_input(arr) if arr.dtype == dtypes.BFLOAT16 else ov.Tensor(arr, shared_memory=True)
        return lambda: request.infer({0: tensor}, share_inputs=True, share_outputs=True)

    # ------------------------------------------------------------------ internals

    def _compile(self, nodes: tuple[OvNode, ...]) -> Any:
        cached = self._compiled.get(nodes)
        if cached is not None:
            self._compiled.move_to_end(nodes)
            return cached
        import openvino as ov
        import openvino.opset14 as ops

        core = self._get_core()
        params = []
        outputs = []
        for k, node in enumerate(nodes):
            param = ops.parameter(list(node.shape), ov_element_type(node.dtype), name=f"x{k}")
            kw = {key: list(v) if isinstance(v, tuple) else v for key, v in node.kwargs}
            if node.op == "max":
                pool = ops.max_pool(param, **kw)
                outputs += [pool.output(0), pool.output(1)] if node.with_indices else [pool.output(0)]
            else:
                pool = ops.avg_pool(param, **kw)
                outputs.append(pool.output(0))
            pool.set_friendly_name(f"pool{k}")  # named in the plugin's errors: see packs.named_position
            params.append(param)
        model = ov.Model(outputs, params, "poolcheck")
        config = dict(COMPILE_CONFIG, INFERENCE_PRECISION_HINT=self.option("precision"))
        if self.option("device") != "CPU":
            config.pop("INFERENCE_NUM_THREADS")
        compiled = core.compile_model(model, self.option("device"), config)
        entry = (compiled, compiled.create_infer_request())
        self._compiled[nodes] = entry
        while len(self._compiled) > self.cache_size:
            self._compiled.popitem(last=False)
        return entry

    # ------------------------------------------------------------------ the rest of the family

    def element_types(self, op: str) -> tuple[str, ...] | None:
        """MaxPool-14 and AvgPool-14 take every type the catalogue gives them (an ONNX
        configuration's bfloat16 too, as bf16); of the family, the adaptive pools their opset8
        rows' types, and nothing else (OpenVINO has no operator for the rest)."""
        if op in ("max", "avg"):
            return None
        row = OPENVINO_FAMILY.get(op)
        return operator(row).dtypes if row is not None else ()

    def translate_family(self, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> OvFamilyNode:
        row = OPENVINO_FAMILY.get(spec.op)
        if row is None:
            raise PeerDeclined(self.name, f"OpenVINO's opsets have no {spec.describe().split('(')[0]} operator")
        dt = np.dtype(dtype)
        if dt.name not in (self.element_types(spec.op) or ()):
            raise PeerDeclined(self.name, f"OpenVINO {row} has no {dt.name} type")
        assert spec.output_shape is not None
        return OvFamilyNode(spec.op, tuple(spec.output_shape), spec.index_element_type, tuple(shape), dt.name)

    def execute_family(self, node: OvFamilyNode, spec: FamilySpec, x: np.ndarray,
                       indices: np.ndarray | None) -> PeerOutput:
        request = self._family_request(node)
        request.infer([ov_input(x)])
        values = ov_output(request.get_output_tensor(0))
        if node.op == "adaptive_max":
            return PeerOutput(values, ov_output(request.get_output_tensor(1)))
        return PeerOutput(values)

    def _family_request(self, node: OvFamilyNode) -> Any:
        """AdaptiveAvgPool-8 / AdaptiveMaxPool-8 (``openvino.opset8``) as one compiled model, cached."""
        cache: OrderedDict[OvFamilyNode, Any] | None = getattr(self, "_family_requests", None)
        if cache is None:
            cache = OrderedDict()
            self._family_requests = cache
        if node in cache:
            cache.move_to_end(node)
            return cache[node]
        import openvino as ov
        import openvino.opset8 as ops

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
        while len(cache) > self.cache_size:
            cache.popitem(last=False)
        return cache[node]


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
