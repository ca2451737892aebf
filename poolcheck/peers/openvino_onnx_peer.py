"""OpenVINO's ONNX frontend as a peer: the ONNX model of the ONNX Runtime peer, read by
``Core.read_model`` (the ONNX frontend), compiled for the CPU and run.

This is not the native opset path of the ``openvino`` peer: the frontend has its own mapping of
``ceil_mode``, ``count_include_pad``, ``auto_pad`` and ``storage_order`` to OpenVINO's pooling
operators. The chain has two steps, and a divergence is attributed to the step that introduced
it where the intermediate model shows it: after reading, each pooling node's OpenVINO attributes
are checked against the ONNX node's, and a wrong one is reported as the frontend's, e.g.
"OpenVINO ONNX frontend wrote rounding_type=ceil for ceil_mode=1".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from poolcheck.peers.adapter import RuntimePeer, Translated
from poolcheck.peers.base import BatchItem, PeerOutput
from poolcheck.peers.family_onnx import FamilyNode, OnnxFamily, family_model
from poolcheck.peers.onnx_model import OnnxNode, build_model, onnx_outputs, to_onnx
from poolcheck.peers.openvino_peer import COMPILE_CONFIG, ov_input, ov_output
from poolcheck.spec.poolspec import PoolSpec

STEP = "OpenVINO ONNX frontend"



def expected_openvino_attributes(node: OnnxNode) -> dict[str, tuple[str, Any]]:
    """What the frontend must write for ``node``: OpenVINO attribute -> (ONNX source, value)."""
    a = node.attrs()
    n = len(a["kernel_shape"])
    out: dict[str, tuple[str, Any]] = {
        "kernel": ("kernel_shape", list(a["kernel_shape"])),
        "strides": ("strides", list(a["strides"])),
        "dilations": ("dilations", list(a["dilations"])),
    }
    auto_pad = a.get("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = list(a.get("pads", [0] * 2 * n))
        out["pads_begin"] = ("pads", pads[:n])
        out["pads_end"] = ("pads", pads[n:])
        # ONNX ceil_mode=1: "the last pooling window ... is dropped if it starts in the end
        # padding" -- OpenVINO's ceil_torch; ceil_mode=0 is floor.
        out["rounding_type"] = ("ceil_mode", "ceil_torch" if a.get("ceil_mode", 0) else "floor")
    if node.op_type == "AveragePool":
        out["exclude-pad"] = ("count_include_pad", not a.get("count_include_pad", 0))
    return out


def attribute_mismatches(node: OnnxNode, ov_attrs: dict[str, Any]) -> list[str]:
    """The attributes the frontend wrote wrongly for ``node``, as messages naming the step."""
    msgs = []
    onnx_attrs = node.attrs()
    for key, (source, want) in expected_openvino_attributes(node).items():
        if key not in ov_attrs:
            continue
        got = ov_attrs[key]
        got = list(got) if isinstance(got, (list, tuple, np.ndarray)) else got
        if key == "rounding_type" and str(got).lower() == "ceil" and want == "ceil_torch":
            got = "ceil"
        if (str(got).lower() if isinstance(got, str) else got) != want:
            src = onnx_attrs.get(source, "(default)")
            msgs.append(f"{STEP} wrote {key}={got} for {source}={src}")
    return msgs


class OpenVinoOnnxPeer(OnnxFamily, RuntimePeer):
    """ONNX model -> OpenVINO ONNX frontend -> OpenVINO CPU (f32 inference precision, one thread)."""

    operator_conventions = ("onnx",)

    name = "openvino-onnx"
    ref = "openvino-onnx"
    module = "openvino"
    install_hint = "pip install 'poolcheck[openvino]'"
    family_missing = (("unpool", "OpenVINO's ONNX frontend has no MaxUnpool (read_model: 'No conversion rule "
                                 "found for operations: MaxUnpool-22')"),)

    def __init__(self, *, cache_size: int = 64, batch_limit: int = 32) -> None:
        self.cache_size = cache_size
        self.batch_limit = batch_limit
        self._compiled: OrderedDict[tuple[OnnxNode, ...], Any] = OrderedDict()
        self._core: Any = None

    def available(self) -> tuple[bool, str]:
        ok, why = super().available()
        if not ok:
            return ok, why
        try:
            import onnx  # noqa: F401
        except ImportError as exc:
            return False, f"onnx is not installed: {exc}"
        return True, ""

    def version(self) -> str | None:
        version = super().version()
        return version.split("-")[0] if version else None

    def translate(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> OnnxNode:
        return to_onnx(spec, shape, dtype, self.name)

    def execute(self, group: Sequence[Translated], items: Sequence[BatchItem]) -> list[PeerOutput]:
        request, mismatches, n_out = self._compile(tuple(node for _, node, _ in group))
        request.infer([ov_input(arr) for _, _, arr in group])
        raw = [ov_output(request.get_output_tensor(k)) for k in range(n_out)]
        outputs = onnx_outputs(group, items, raw)
        for out, msgs in zip(outputs, mismatches, strict=True):
            out.notes[:0] = msgs
        return outputs

    def _compile(self, nodes: tuple[OnnxNode, ...]) -> Any:
        cached = self._compiled.get(nodes)
        if cached is not None:
            self._compiled.move_to_end(nodes)
            return cached
        import openvino as ov

        if self._core is None:
            self._core = ov.Core()
        model = self._core.read_model(build_model(nodes).SerializeToString())
        mismatches = [self._step_check(model, k, node) for k, node in enumerate(nodes)]
        compiled = self._core.compile_model(model, "CPU", COMPILE_CONFIG)
        entry = (compiled.create_infer_request(), mismatches, len(compiled.outputs))
        self._compiled[nodes] = entry
        while len(self._compiled) > self.cache_size:
            self._compiled.popitem(last=False)
        return entry

    @staticmethod
    def _step_check(model: Any, k: int, node: OnnxNode) -> list[str]:
        """Check the pooling node the frontend made for input ``x{k}`` against the ONNX node."""
        param = model.inputs[k].get_node()
        pools = [t.get_node() for t in param.output(0).get_target_inputs()]
        pools = [p for p in pools if p.get_type_name() in ("MaxPool", "AvgPool")]
        if len(pools) != 1:
            return []  # the frontend decomposed the node: only its values can be judged
        msgs = attribute_mismatches(node, pools[0].get_attributes())
        if node.attrs().get("storage_order", 0) == 1 and len(pools[0].outputs()) > 1:
            # ONNX: "storage_order ... 1 is column major" -- the indices themselves must count
            # column-major; a Transpose after the pool reorders the tensor, not the numbers
            after = [t.get_node().get_type_name() for t in pools[0].output(1).get_target_inputs()]
            if "Transpose" in after:
                msgs.append(f"{STEP} wrote a Transpose of the row-major index tensor for storage_order=1 "
                            "(column-major indices asked)")
        return msgs

    # ------------------------------------------------------------------ the rest of the family

    def run_family_model(self, node: FamilyNode, feeds: dict[str, np.ndarray]) -> np.ndarray:
        import openvino as ov

        def compile_node(n: FamilyNode) -> Any:
            if self._core is None:
                self._core = ov.Core()
            model = self._core.read_model(family_model(n).SerializeToString())
            return self._core.compile_model(model, "CPU", COMPILE_CONFIG).create_infer_request()

        request = self.family_cached(node, compile_node)
        request.infer([ov_input(feeds[k]) if k == "x" else ov.Tensor(feeds[k]) for k in ("x", "i", "s") if k in feeds])
        return ov_output(request.get_output_tensor(0))
