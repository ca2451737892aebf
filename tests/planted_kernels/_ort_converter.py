"""A converter in front of ONNX Runtime, as users write them: the plugin keywords (OpenVINO
MaxPool-14 / AvgPool-14 words) become one ONNX MaxPool-22 / AveragePool-22 node that ONNX Runtime
runs. ``make(write_pads)`` builds the plugin functions; ``write_pads`` turns (pads_begin,
pads_end) into the ONNX ``pads`` list, which is where the planted converter goes wrong.

A converter stays out of ONNX Runtime's own recorded divergences (NaN scans, pads >= kernel,
dilations, no float64 average, the average summed in the input type): it declines those
configurations, as a converter declines what its runtime cannot do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

P = __import__("runpy").run_path(str(Path(__file__).with_name("_planted.py")))

PadsWriter = Callable[[Sequence[int], Sequence[int]], list[int]]


def onnx_pads(begin: Sequence[int], end: Sequence[int]) -> list[int]:
    """ONNX order: [x1_begin, x2_begin, ..., x1_end, x2_end, ...]."""
    return [*begin, *end]


def _declined(why: str) -> Exception:
    try:
        from poolcheck.peers.base import PeerDeclined
    except ImportError:
        from poolcheck.peers.base import PeerDeclined
    return PeerDeclined("ort-converter", why)


def make(write_pads: PadsWriter) -> tuple[Callable[..., Any], Callable[..., Any]]:
    sessions: dict[tuple[Any, ...], Any] = {}

    def run(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
        import onnxruntime as ort
        from onnx import TensorProto, helper

        s = P["spec"](op, kw)
        g = P["geometry"](op, x, kw)
        if s.rounding_type == "ceil":
            raise _declined("OpenVINO ceil keeps a last window starting in the padding: ONNX ceil_mode does not")
        if any(d > 1 for d in s.dilations):
            raise _declined("dilations")
        if any(p >= k for p, k in zip(g.pads_begin + g.pads_end, s.kernel + s.kernel)):
            raise _declined("a pad >= the kernel")
        allowed = ("float16", "float32", "float64", "int8", "uint8") if op == "max" else ("float32",)
        if x.dtype.name not in allowed:
            raise _declined(f"{x.dtype.name}")
        if x.dtype.kind == "f" and np.isnan(x).any() and op == "max":
            raise _declined("NaN")
        if op == "avg" and x.size and float(np.nanmax(np.abs(x.astype(np.float64)))) * np.prod(s.kernel) > 1e37:
            raise _declined("a sum that may overflow float32")
        ceil_mode = int(s.auto_pad in ("explicit", "valid") and s.applied_rounding == "ceil_torch")
        attrs: dict[str, Any] = {"kernel_shape": list(s.kernel), "strides": list(s.strides),
                                 "pads": write_pads(g.pads_begin, g.pads_end), "ceil_mode": ceil_mode}
        if op == "avg":
            attrs["count_include_pad"] = 0 if s.exclude_pad else 1
        key = (op, repr(sorted(attrs.items())), x.shape, x.dtype.str)
        session = sessions.get(key)
        if session is None:
            elem = helper.np_dtype_to_tensor_dtype(x.dtype)
            outs = [helper.make_tensor_value_info("y", elem, None)]
            names = ["y"]
            if op == "max":
                outs.append(helper.make_tensor_value_info("i", TensorProto.INT64, None))
                names.append("i")
            node = helper.make_node("MaxPool" if op == "max" else "AveragePool", ["x"], names, **attrs)
            graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, list(x.shape))], outs)
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
            model.ir_version = 10
            so = ort.SessionOptions()
            so.intra_op_num_threads = so.inter_op_num_threads = 1
            so.log_severity_level = 4
            session = sessions[key] = ort.InferenceSession(model.SerializeToString(), so,
                                                           providers=["CPUExecutionProvider"])
        raw = session.run(None, {"x": x})
        if op == "avg":
            return raw[0]
        axis = s.axis + x.ndim if s.axis < 0 else s.axis
        indices = np.asarray(raw[1]) % int(np.prod(x.shape[axis:]))  # ONNX counts the whole tensor
        return raw[0], indices.astype(np.int32 if s.index_element_type == "i32" else np.int64)

    def max_pool(x: Any, **kw: Any) -> Any:
        return run("max", np.asarray(x), kw)

    def avg_pool(x: Any, **kw: Any) -> Any:
        return run("avg", np.asarray(x), kw)

    return max_pool, avg_pool
