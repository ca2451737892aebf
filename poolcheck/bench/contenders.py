"""Everything ``poolcheck bench`` times: poolcheck's own engines and the runtimes, each set to
one thread.

A contender is prepared once per workload (model built, session compiled, geometry resolved),
outside the timing; what is timed is one call on an input that is already in the contender's
own form (an ONNX Runtime feed, an OpenVINO tensor, a torch tensor in its memory format).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from poolcheck.bench.workloads import Workload
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.indices import IndexLayout
from poolcheck.spec.policy import SPEC

#: How a contender numbers the elements its indices point at.
INDEX_GLOBAL = "global"  # flat over (N, C, *spatial): ONNX MaxPool Indices, OpenVINO axis=0
INDEX_PLANE = "plane"  # flat within each (n, c) plane: torch return_indices, OpenVINO axis=2


class Unsupported(Exception):
    """The contender cannot express this workload (shown as n/a, not as a failure)."""


@dataclass
class Prepared:
    """A contender ready to run one workload: ``call`` is what is timed; ``outputs`` runs once
    and returns NumPy values (and indices) for the correctness check."""

    call: Callable[[], object]
    outputs: Callable[[], tuple[np.ndarray, np.ndarray | None]]
    index_kind: str = INDEX_GLOBAL
    close: Callable[[], None] | None = None


@dataclass
class Contender:
    """One implementation under test. ``memory_format`` is "NCHW" or "channels_last";
    ``max_reps`` caps slow baselines; ``only`` restricts it to some workloads."""

    key: str
    label: str
    memory_format: str
    module: str | None
    prepare: Callable[[Workload, np.ndarray], Prepared]
    max_reps: int | None = None
    only: tuple[str, ...] | None = None
    is_poolcheck: bool = False

    def available(self) -> tuple[bool, str]:
        if self.key == "c":
            from poolcheck.engines import c_engine_status

            module, reason = c_engine_status()
            return (module is not None, reason)
        if self.module is None:
            return True, ""
        try:
            importlib.import_module(self.module)
        except Exception as exc:  # an absent or broken install: shown as absent, with why
            return False, f"{self.module} is not importable ({type(exc).__name__}: {exc})"
        return True, ""

    def version(self) -> str | None:
        dist = {"onnxruntime": "onnxruntime", "openvino": "openvino", "torch": "torch", "onnx.reference": "onnx"}
        name = "poolcheck" if self.is_poolcheck else dist.get(self.module or "")
        if name is None:
            return None
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None


# --------------------------------------------------------------------------- poolcheck engines


def _poolcheck(engine_name: str) -> Callable[[Workload, np.ndarray], Prepared]:
    def prepare(w: Workload, x: np.ndarray) -> Prepared:
        from poolcheck import spec as S
        from poolcheck.engines import get_engine

        eng = get_engine(engine_name)
        geom = w.geometry
        if w.spec.op == "avg":
            exclude = w.spec.exclude_pad

            def call() -> object:
                return eng.avg_pool(x, geom, exclude, SPEC)

            return Prepared(call, lambda: (eng.avg_pool(x, geom, exclude, SPEC), None))
        layout = S.index_layout(w.spec, w.shape) if w.with_indices else None

        def call_max() -> object:
            return eng.max_pool(x, geom, layout, SPEC)

        return Prepared(call_max, lambda: eng.max_pool(x, geom, layout, SPEC))

    return prepare


# --------------------------------------------------------------------------- ONNX


def _check_simple(spec: PoolSpec, who: str) -> None:
    """The runtimes' adapters here cover explicit pads with floor rounding (all the workloads)."""
    if spec.auto_pad != "explicit" or spec.rounding_type != "floor":
        raise Unsupported(f"{who}: only explicit pads with floor rounding are set up for benchmarking")


def onnx_model(w: Workload) -> Any:
    """A one-node ONNX model (opset 22) for the workload: input X, output Y (and Indices)."""
    from onnx import TensorProto, helper

    spec = w.spec
    _check_simple(spec, "onnx")
    attrs: dict[str, Any] = {
        "kernel_shape": list(spec.kernel),
        "strides": list(spec.strides),
        # "pads ... format should be as follow [x1_begin, x2_begin...x1_end, x2_end,...]"
        "pads": list(spec.pads_begin) + list(spec.pads_end),
    }
    outputs = ["Y"]
    if spec.op == "max":
        op = "MaxPool"
        attrs["dilations"] = list(spec.dilations)
        if w.with_indices:
            outputs.append("Indices")
    else:
        op = "AveragePool"
        attrs["count_include_pad"] = 0 if spec.exclude_pad else 1
    node = helper.make_node(op, ["X"], outputs, **attrs)
    out_info = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(w.geometry.output_shape))]
    if len(outputs) == 2:
        out_info.append(helper.make_tensor_value_info("Indices", TensorProto.INT64, list(w.geometry.output_shape)))
    graph = helper.make_graph([node], w.name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(w.shape))],
                              out_info)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    return model


def _onnxruntime(w: Workload, x: np.ndarray) -> Prepared:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(onnx_model(w).SerializeToString(), so, providers=["CPUExecutionProvider"])
    feed = {"X": x}

    def outputs() -> tuple[np.ndarray, np.ndarray | None]:
        res = session.run(None, feed)
        return res[0], (res[1] if len(res) > 1 else None)

    return Prepared(lambda: session.run(None, feed), outputs)


def _onnx_reference(w: Workload, x: np.ndarray) -> Prepared:
    from onnx.reference import ReferenceEvaluator

    ev = ReferenceEvaluator(onnx_model(w))
    feed = {"X": x}

    def outputs() -> tuple[np.ndarray, np.ndarray | None]:
        res = ev.run(None, feed)
        return np.asarray(res[0]), (np.asarray(res[1]) if len(res) > 1 else None)

    return Prepared(lambda: ev.run(None, feed), outputs)


# --------------------------------------------------------------------------- OpenVINO


def _openvino(w: Workload, x: np.ndarray) -> Prepared:
    import openvino as ov
    import openvino.opset14 as ops

    spec = w.spec
    _check_simple(spec, "openvino")
    param = ops.parameter(list(w.shape), ov.Type.f32, name="X")
    if spec.op == "max":
        node = ops.max_pool(param, list(spec.strides), list(spec.dilations), list(spec.pads_begin),
                            list(spec.pads_end), list(spec.kernel), rounding_type="floor", auto_pad="explicit",
                            index_element_type="i64", axis=0)
        results = [node.output(0), node.output(1)] if w.with_indices else [node.output(0)]
    else:
        node = ops.avg_pool(param, list(spec.strides), list(spec.pads_begin), list(spec.pads_end),
                            list(spec.kernel), spec.exclude_pad, rounding_type="floor", auto_pad="explicit")
        results = [node.output(0)]
    model = ov.Model(results, [param], w.name)
    config = {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": 1,
              "PERFORMANCE_HINT": "LATENCY"}
    compiled = ov.Core().compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    tensor = ov.Tensor(x, shared_memory=True)

    def call() -> object:
        return request.infer({0: tensor}, share_inputs=True, share_outputs=True)

    def outputs() -> tuple[np.ndarray, np.ndarray | None]:
        res = request.infer({0: tensor})
        values = np.array(res[0], copy=True)
        return values, (np.array(res[1], copy=True) if w.with_indices else None)

    return Prepared(call, outputs)


# --------------------------------------------------------------------------- torch


def _torch(channels_last: bool) -> Callable[[Workload, np.ndarray], Prepared]:
    def prepare(w: Workload, x: np.ndarray) -> Prepared:
        import torch
        import torch.nn.functional as F

        spec = w.spec
        _check_simple(spec, "torch")
        r = spec.spatial_rank
        if spec.pads_begin != spec.pads_end:
            raise Unsupported("torch: pooling pads are symmetric only")
        t = torch.from_numpy(x)
        if channels_last:
            if r == 1:
                raise Unsupported("torch: no channels_last memory format for 1-D (3-D tensor) inputs")
            t = t.contiguous(memory_format=torch.channels_last if r == 2 else torch.channels_last_3d)
        kw: dict[str, Any] = {"kernel_size": spec.kernel, "stride": spec.strides, "padding": spec.pads_begin}
        pre_pad: list[int] | None = None
        if any(2 * p > k for p, k in zip(spec.pads_begin, spec.kernel)):
            # torch rejects "pad should be smaller than or equal to half of kernel size"; for max
            # pooling the pads are -inf, so pad explicitly first (inside the timed call).
            if spec.op != "max" or w.with_indices:
                raise Unsupported("torch: pads larger than half the kernel are not expressible")
            pre_pad = [v for p in reversed(spec.pads_begin) for v in (p, p)]
            kw["padding"] = 0
        if spec.op == "max":
            fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[r - 1]
            kw.update(dilation=spec.dilations, return_indices=w.with_indices)
        else:
            fn = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[r - 1]
            kw.update(count_include_pad=not spec.exclude_pad)

        def call() -> object:
            with torch.no_grad():
                if pre_pad is not None:
                    return fn(F.pad(t, pre_pad, value=float("-inf")), **kw)
                return fn(t, **kw)

        def outputs() -> tuple[np.ndarray, np.ndarray | None]:
            res = call()
            if isinstance(res, tuple):
                return res[0].contiguous().numpy().copy(), res[1].contiguous().numpy().copy()
            return res.contiguous().numpy().copy(), None  # type: ignore[union-attr]

        return Prepared(call, outputs, index_kind=INDEX_PLANE)

    return prepare


def all_contenders() -> list[Contender]:
    """Every contender, in table order."""
    return [
        Contender("c", "poolcheck c", "NCHW", None, _poolcheck("c"), is_poolcheck=True),
        Contender("numpy", "poolcheck numpy", "NCHW", None, _poolcheck("numpy"), is_poolcheck=True),
        Contender("onnxruntime", "onnxruntime", "NCHW", "onnxruntime", _onnxruntime),
        Contender("openvino", "openvino", "NCHW", "openvino", _openvino),
        Contender("torch", "torch", "NCHW", "torch", _torch(False)),
        Contender("torch-cl", "torch channels_last", "channels_last", "torch", _torch(True)),
        Contender("onnx-reference", "onnx.reference", "NCHW", "onnx.reference", _onnx_reference, max_reps=3,
                  only=("W1",)),
    ]


def reference_layout(w: Workload, index_kind: str) -> IndexLayout:
    """The poolcheck index layout that means what a contender's indices mean."""
    from poolcheck.spec.indices import index_layout

    layout = index_layout(w.spec, w.shape)
    if index_kind == INDEX_PLANE:
        return IndexLayout("C", int(np.prod(w.shape[2:])), np.dtype(np.int64))
    return IndexLayout(layout.order, layout.modulus, np.dtype(np.int64))


class SingleThread:
    """Context manager: torch at one thread for the run (restored afterwards)."""

    def __enter__(self) -> SingleThread:
        self._torch_threads: int | None = None
        try:
            import torch
        except Exception:  # torch absent: nothing to set
            return self
        self._torch_threads = torch.get_num_threads()
        torch.set_num_threads(1)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._torch_threads is not None:
            import torch

            torch.set_num_threads(self._torch_threads)
