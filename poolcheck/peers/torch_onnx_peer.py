"""PyTorch -> ONNX exporter -> ONNX Runtime as a peer (``torch-onnx``).

A torch module calling ``F.max_poolNd`` / ``F.avg_poolNd`` with the configuration (the same
keywords as the ``torch`` peer) is exported with ``torch.onnx.export`` (the TorchScript-based
exporter, ``dynamo=False``, which needs no onnxscript) and the exported model is run by ONNX
Runtime on the CPU. The chain has two steps; a divergence is attributed to the step that
introduced it where the exported model shows it: each exported pooling node's attributes are
checked against the module's, and a wrong one is reported as the exporter's, e.g.
"torch.onnx.export wrote ceil_mode=0 for ceil_mode=True".

:meth:`TorchOnnxPeer.run_many` exports one module holding many configurations (one input and
one pooling call each) and runs it in one session, so a batch pays for one export.

The rest of the family goes the same way, one configuration per exported module, through the
torch peer's own calls (:class:`~poolcheck.peers.family_torch.TorchFamily`): ``lp_poolNd``
(exported as Pow, AveragePool, Sign, Abs, Relu, Mul, Pow), ``mean``/``amax`` (ReduceMean /
ReduceMax), ``adaptive_{avg,max}_poolNd`` (an AveragePool / MaxPool of kernel = stride =
in / out). What the exporter cannot write is declined with its words (:data:`NOT_EXPORTED`,
measured with torch 2.13, ``dynamo=False``, opset 18): ``max_unpoolNd``, and an adaptive pool
whose output sizes do not divide its input sizes.
"""

from __future__ import annotations

import io
import math
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from poolcheck.peers._convert import convert_flat_indices
from poolcheck.peers.adapter import RuntimePeer, Translated
from poolcheck.peers.base import BatchItem, PeerDeclined, PeerOutput
from poolcheck.peers.family_torch import TorchFamily
from poolcheck.peers.torch_peer import _kernel_error, to_torch
from poolcheck.spec.family import FAMILY_OPS, FamilySpec
from poolcheck.spec.poolspec import PoolSpec

STEP = "torch.onnx.export"
#: The opset the exporter is asked for (AveragePool-19, MaxPool-12 semantics at 18; pinned so a
#: verdict does not move with the exporter's default).
OPSET = 18
#: Input types the chain takes (:meth:`TorchOnnxPeer.element_types`): ONNX Runtime's CPU pooling
#: kernels are floating point.
DTYPES = ("float32", "float64")
#: What ``torch.onnx.export`` (``dynamo=False``, opset 18) answers for a family call it has no
#: ONNX form of: declined with these words instead of exported.
NOT_EXPORTED = {
    "unpool": "torch.onnx.export has no ONNX form of max_unpool (given output_size it answers \"Exporting the "
              "operator 'aten::max_unpool2d' to ONNX opset version 18 is not supported\"; without, tracing fails first)",
    "adaptive": "torch.onnx.export writes an adaptive pool only where every output size divides its input size "
                "(it answers 'Unsupported: ONNX export of operator adaptive_avg_pool2d, output size that are not "
                "factor of input size')",
}


@dataclass(frozen=True)
class TorchOnnxNode:
    """One configuration of the exported module: op, rank, torch keywords, input shape and type."""

    op: str
    rank: int
    kwargs: tuple[tuple[str, Any], ...]
    shape: tuple[int, ...]
    dtype: str

    def kw(self) -> dict[str, Any]:
        return dict(self.kwargs)


def expected_onnx_attributes(node: TorchOnnxNode) -> dict[str, tuple[str, Any]]:
    """What the exporter must write: ONNX attribute -> (torch keyword and value, ONNX value)."""
    kw = node.kw()
    out: dict[str, tuple[str, Any]] = {
        "kernel_shape": (f"kernel_size={list(kw['kernel_size'])}", list(kw["kernel_size"])),
        "strides": (f"stride={list(kw['stride'])}", list(kw["stride"])),
        # "pads ... [x1_begin, x2_begin...x1_end, x2_end,...]": torch padding is symmetric.
        "pads": (f"padding={list(kw['padding'])}", list(kw["padding"]) * 2),
        "ceil_mode": (f"ceil_mode={kw['ceil_mode']}", int(kw["ceil_mode"])),
    }
    if node.op == "max":
        out["dilations"] = (f"dilation={list(kw['dilation'])}", list(kw["dilation"]))
    else:
        out["count_include_pad"] = (f"count_include_pad={kw['count_include_pad']}", int(kw["count_include_pad"]))
    return out


#: ONNX defaults of the attributes above, for an exported node that omits one.
_DEFAULTS = {"ceil_mode": 0, "count_include_pad": 0}


def attribute_mismatches(node: TorchOnnxNode, written: dict[str, Any], step: str = STEP) -> list[str]:
    """Messages for every attribute ``step`` wrote differently from the module's keyword."""
    rank = node.rank
    defaults = dict(_DEFAULTS, strides=[1] * rank, dilations=[1] * rank, pads=[0] * 2 * rank)
    msgs = []
    for key, (source, want) in expected_onnx_attributes(node).items():
        got = written.get(key, defaults.get(key))
        if got != want:
            msgs.append(f"{step} wrote {key}={got} for {source}")
    return msgs


@dataclass(frozen=True)
class TorchOnnxFamilyNode:
    """One family configuration of the exported module: the torch call (function, spatial rank,
    keywords, as the torch peer makes them), input shape and type."""

    op: str
    fn: str
    rank: int
    kwargs: tuple[tuple[str, Any], ...]
    shape: tuple[int, ...]
    dtype: str


class TorchOnnxPeer(RuntimePeer):
    """torch module -> ``torch.onnx.export(dynamo=False)`` -> ONNX Runtime CPU (one thread)."""

    name = "torch-onnx"
    ref = "torch-onnx"
    module = "torch"
    install_hint = "pip install 'poolcheck[torch]'"
    #: The step name used in attribution messages (planted chains override it).
    step = STEP
    #: Every family op is taken; MaxUnpool (and adaptive pools of sizes that do not divide) are
    #: declined with the exporter's words (:data:`NOT_EXPORTED`).
    family_ops = FAMILY_OPS

    def __init__(self, *, cache_size: int = 64, batch_limit: int = 32) -> None:
        self.cache_size = cache_size
        self.batch_limit = batch_limit
        self._sessions: OrderedDict[tuple[TorchOnnxNode, ...], Any] = OrderedDict()
        self._family_sessions: OrderedDict[TorchOnnxFamilyNode, Any] = OrderedDict()

    def available(self) -> tuple[bool, str]:
        ok, why = super().available()
        if not ok:
            return ok, why
        for mod in ("onnx", "onnxruntime"):
            try:
                __import__(mod)
            except ImportError as exc:
                return False, f"{mod} is not installed: {exc}"
        return True, ""

    def load_runtime(self) -> None:
        super().load_runtime()
        import torch.onnx  # noqa: F401  (the exporter: imported on its first use otherwise)

    def version(self) -> str | None:
        version = super().version()
        if version is None:
            return None
        try:
            import onnxruntime

            return f"{version}/ort-{onnxruntime.__version__}"
        except Exception:
            return version

    def element_types(self, op: str) -> tuple[str, ...]:
        """:data:`DTYPES` for every op but MaxUnpool, which the exporter has not (:data:`NOT_EXPORTED`)."""
        return () if op == "unpool" else DTYPES

    def translate(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> TorchOnnxNode:
        dt = np.dtype(dtype)
        kwargs = to_torch(spec, shape, self.name)
        if dt.name not in self.element_types(spec.op):
            raise PeerDeclined(self.name, f"the chain runs {', '.join(DTYPES)} only (ONNX Runtime's pooling "
                                          f"kernels are floating point), not {dt.name}")
        if spec.convention == "onnx" and spec.op == "max" and spec.storage_order:
            raise PeerDeclined(self.name, "a torch module has no storage_order")
        err = _kernel_error(spec.op, spec.spatial_rank, dt.str)
        if err is not None:
            raise PeerDeclined(self.name, f"no PyTorch CPU kernel: {err}")
        kwargs.pop("return_indices", None)
        return TorchOnnxNode(spec.op, spec.spatial_rank, tuple(sorted(kwargs.items())), tuple(shape), dt.str)

    # ------------------------------------------------------------------ the two steps

    def export(self, nodes: tuple[TorchOnnxNode, ...]) -> Any:
        """Step 1: the module for ``nodes`` exported to an ONNX ModelProto."""
        import onnx
        import torch
        import torch.nn.functional as F

        class Pools(torch.nn.Module):
            def forward(self, *xs: Any) -> Any:
                outs = []
                for x, node in zip(xs, nodes, strict=True):
                    if node.op == "max":
                        v, i = getattr(F, f"max_pool{node.rank}d")(x, return_indices=True, **node.kw())
                        outs += [v, i]
                    else:
                        outs.append(getattr(F, f"avg_pool{node.rank}d")(x, **node.kw()))
                return tuple(outs)

        args = tuple(torch.zeros(node.shape, dtype=getattr(torch, np.dtype(node.dtype).name)) for node in nodes)
        buf = io.BytesIO()
        torch.set_num_threads(1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # torch.onnx.export writes to "a file-like object (such that f.fileno() is not
            # implemented)" too; its annotation only names paths.
            torch.onnx.export(Pools(), args, buf, dynamo=False, opset_version=OPSET,  # type: ignore[arg-type]
                              input_names=[f"x{k}" for k in range(len(nodes))], do_constant_folding=True)
        return onnx.load_from_string(buf.getvalue())

    def written_attributes(self, model: Any, k: int) -> dict[str, Any] | None:
        """The attributes of the pooling node the exporter wrote for input ``x{k}`` (None when
        there is none). For max pooling with indices the exporter adds a second, 1x1 MaxPool on
        the same input (to turn ONNX flat indices into per-plane ones); the first is the pool."""
        import onnx

        pools = [n for n in model.graph.node if n.op_type in ("MaxPool", "AveragePool") and n.input[0] == f"x{k}"]
        if not pools:
            return None
        return {a.name: onnx.helper.get_attribute_value(a) for a in pools[0].attribute}

    def execute(self, group: Sequence[Translated], items: Sequence[BatchItem]) -> list[PeerOutput]:
        session, mismatches = self._session(tuple(node for _, node, _ in group))
        raw = session.run(None, {f"x{k}": arr for k, (_, _, arr) in enumerate(group)})
        outputs = []
        pos = 0
        for (i, node, arr), msgs in zip(group, mismatches, strict=True):
            values = np.asarray(raw[pos])
            pos += 1
            indices = None
            notes = list(msgs)
            if node.op == "max":
                # the exported graph turns ONNX flat indices into torch's per-plane ones by
                # subtracting each (n, c) plane's offset from EVERY index, an empty window's
                # negative one included: adding it back to all recovers ONNX Runtime's indices
                per_plane = np.asarray(raw[pos]).astype(np.int64)
                planes = np.arange(arr.shape[0] * arr.shape[1], dtype=np.int64).reshape(
                    arr.shape[:2] + (1,) * (arr.ndim - 2)) * math.prod(arr.shape[2:])
                indices, conv = convert_flat_indices(per_plane + planes, items[i][0], arr.shape)
                notes += ["indices converted from per-plane to whole-tensor flat indices", *conv]
                pos += 1
            outputs.append(PeerOutput(values, indices, notes))
        return outputs

    def _session(self, nodes: tuple[TorchOnnxNode, ...]) -> Any:
        cached = self._sessions.get(nodes)
        if cached is not None:
            self._sessions.move_to_end(nodes)
            return cached
        import onnxruntime as ort

        model = self.export(nodes)
        mismatches = []
        for k, node in enumerate(nodes):
            written = self.written_attributes(model, k)
            mismatches.append([] if written is None else attribute_mismatches(node, written, self.step))
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.log_severity_level = 4
        session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        entry = (session, mismatches)
        self._sessions[nodes] = entry
        while len(self._sessions) > self.cache_size:
            self._sessions.popitem(last=False)
        return entry

    # ------------------------------------------------------------------ the rest of the family

    def translate_family(self, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> TorchOnnxFamilyNode:
        dt = np.dtype(dtype)
        if spec.op == "unpool":
            raise PeerDeclined(self.name, NOT_EXPORTED["unpool"])
        if dt.name not in self.element_types(spec.op):
            raise PeerDeclined(self.name, f"the chain runs {', '.join(DTYPES)} only, not {dt.name}")
        if spec.op in ("adaptive_avg", "adaptive_max"):
            assert spec.output_shape is not None
            if any(size % out for size, out in zip(shape[2:], spec.output_shape)):
                raise PeerDeclined(self.name, f"{NOT_EXPORTED['adaptive']}: sizes {list(shape[2:])} to "
                                              f"{list(spec.output_shape)}")
        translator = TorchFamily()
        translator.name = self.name
        translator._setup = self._setup
        call = translator.translate_family(spec, shape, dt)
        fn, rank = call.pop("fn"), call.pop("rank")
        call.pop("out_shape", None)
        return TorchOnnxFamilyNode(spec.op, fn, rank, tuple(sorted(call.items())), tuple(shape), dt.name)

    @staticmethod
    def _setup() -> Any:
        import torch

        torch.set_num_threads(1)
        return torch

    def export_family(self, node: TorchOnnxFamilyNode) -> Any:
        """Step 1 for a family configuration: the module calling the torch function, exported."""
        import onnx
        import torch
        import torch.nn.functional as F

        kwargs = dict(node.kwargs)
        dims = tuple(range(2, 2 + node.rank))

        class Family(torch.nn.Module):
            def forward(self, x: Any) -> Any:
                if node.op in ("global_avg", "global_max"):
                    return getattr(torch, node.fn)(x, dim=dims, keepdim=True)
                return getattr(F, node.fn)(x, **kwargs)

        buf = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Family(), (torch.zeros(node.shape, dtype=getattr(torch, node.dtype)),),
                              buf, dynamo=False, opset_version=OPSET, input_names=["x"],  # type: ignore[arg-type]
                              do_constant_folding=True)
        return onnx.load_from_string(buf.getvalue())

    def execute_family(self, node: TorchOnnxFamilyNode, spec: FamilySpec, x: np.ndarray,
                       indices: np.ndarray | None) -> PeerOutput:
        session, ops = self._family_session(node)
        raw = session.run(None, {"x": np.ascontiguousarray(x)})
        notes = [f"exported as {', '.join(ops)}"]
        if spec.op == "adaptive_max":
            return PeerOutput(np.asarray(raw[0]), np.asarray(raw[1]), notes)
        return PeerOutput(np.asarray(raw[0]), None, notes)

    def _family_session(self, node: TorchOnnxFamilyNode) -> Any:
        cached = self._family_sessions.get(node)
        if cached is not None:
            self._family_sessions.move_to_end(node)
            return cached
        import onnxruntime as ort

        model = self.export_family(node)
        ops = [n.op_type for n in model.graph.node if n.op_type != "Constant"]
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.log_severity_level = 4
        entry = (ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]), ops)
        self._family_sessions[node] = entry
        while len(self._family_sessions) > self.cache_size:
            self._family_sessions.popitem(last=False)
        return entry
