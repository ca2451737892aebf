"""Reproducer scripts for the rest of the family (LpPool, global pooling, MaxUnpool, adaptive
pooling): the runtime's plain call (:func:`family_runtime_call`, from the same translation the
family peers use) and the constants the script's loop needs (:func:`family_constants`), whose expected answer is
:mod:`poolcheck.repro.textbook_family`'s loop. Same exit statuses as every reproducer: 1 while
the divergence stands, 0 once the runtime agrees, 2 when it fails some other way.
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from poolcheck.peers.base import PeerDeclined
from poolcheck.peers.family_onnx import family_model, family_to_onnx
from poolcheck.peers.family_torch import TorchFamily
from poolcheck.peers.jax_peer import check_family_expressible
from poolcheck.peers.openvino_peer import COMPILE_CONFIG, OPENVINO_FAMILY
from poolcheck.peers.torch_onnx_peer import OPSET as TORCH_ONNX_OPSET
from poolcheck.peers.torch_onnx_peer import TorchOnnxPeer
from poolcheck.repro import textbook_family
from poolcheck.repro.runtimes import RuntimeCall, split_ref, torch_onnx_script
from poolcheck.spec.family import FamilySpec, unpool_shape
from poolcheck.spec.shape import resolve

_ONNX_FILE = 'MODEL = pathlib.Path(__file__).with_suffix(".onnx")  # the single-node model, written next to this script\n'


def _onnx(ref: str, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> RuntimeCall:
    name, _ = split_ref(ref)
    node = family_to_onnx(spec, shape, dtype, name)
    model = family_model(node).SerializeToString()
    call = f"{node.operator} {node.attrs()} (a model of opset {node.opset})"
    feeds = "{'x': x" + (", 'i': i" if node.inputs >= 2 else "") + (", 's': SHAPE" if node.inputs == 3 else "") + "}"
    ordered = "[x" + (", i" if node.inputs >= 2 else "") + (", SHAPE" if node.inputs == 3 else "") + "]"
    shape_line = (f"SHAPE = np.array({list(spec.output_shape or ())}, dtype=np.int64)  # MaxUnpool's output_shape input\n"
                  if node.inputs == 3 else "")
    plans = {
        "onnxruntime": ("onnxruntime", "import onnxruntime as ort\n", "onnxruntime.InferenceSession(MODEL).run",
                        ["session = ort.InferenceSession(str(MODEL), providers=['CPUExecutionProvider'])",
                         f"outs = session.run(None, {feeds})"]),
        "onnx_reference": ("onnx", "from onnx.reference import ReferenceEvaluator\n",
                           "onnx.reference.ReferenceEvaluator(MODEL).run",
                           [f"outs = ReferenceEvaluator(str(MODEL)).run(None, {feeds})"]),
        "tract": ("tract", "import tract\n", "tract.onnx().load(MODEL).into_model().into_runnable().run",
                  ["runnable = tract.onnx().load(str(MODEL)).into_model().into_runnable()",
                   f"outs = [t.to_numpy() for t in runnable.run({ordered})]"]),
        "openvino-onnx": ("openvino", f"import openvino as ov\n\nCONFIG = {dict(COMPILE_CONFIG)!r}  # f32, one thread\n",
                          'openvino.Core().compile_model(Core().read_model(MODEL), "CPU", CONFIG)',
                          ["core = ov.Core()",
                           "compiled = core.compile_model(core.read_model(str(MODEL)), 'CPU', CONFIG)",
                           f"result = compiled({ordered})", "outs = [result[o] for o in compiled.outputs]"]),
    }
    if name not in plans:
        raise ValueError(f"no reproducer for runtime {ref!r} on {spec.describe()}")
    package, head, shown, lines = plans[name]
    code = (f"{head}\n{_ONNX_FILE}{shape_line}CALL = {shown + ': '!r} + {call!r}\n\n\ndef actual(x, i=None):\n"
            + "".join(f"    {line}\n" for line in lines) + "    return outs[0], None\n")
    return RuntimeCall(ref, (package,), code, call, None, model)


def _torch(ref: str, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> RuntimeCall:
    translator = TorchFamily()
    translator.name = "torch"
    translator._setup = lambda: None  # the script sets nothing up: a plain call
    node = translator.translate_family(spec, shape, dtype)
    fn = node.pop("fn")
    rank = node.pop("rank")
    node.pop("out_shape", None)
    kwargs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in node.items()}
    dims = tuple(range(2, 2 + rank))
    if spec.op in ("global_avg", "global_max"):
        call = f"torch.{fn}(x, dim={dims}, keepdim=True)"
        body = f"    out = torch.{fn}(t, dim={dims}, keepdim=True)\n"
    elif spec.op == "unpool":
        call = f"torch.nn.functional.{fn}(x, indices within each (n, c) plane, **{kwargs!r})"
        body = ("    # torch's indices count within each (n, c) plane; ONNX's over the whole tensor\n"
                f"    plane = {math.prod(unpool_shape(spec, shape)[2:])}\n"
                "    base = (np.arange(x.shape[0] * x.shape[1]) * plane).reshape(x.shape[:2] + (1,) * (x.ndim - 2))\n"
                f"    out = F.{fn}(t, torch.from_numpy(i - base), **KWARGS)\n")
    else:
        call = f"torch.nn.functional.{fn}(x, **{kwargs!r})"
        body = f"    out = F.{fn}(t, **KWARGS)\n"
    ret = ("    return out[0].numpy(), out[1].numpy()\n" if spec.op == "adaptive_max" else "    return out.numpy(), None\n")
    code = ("import torch\nimport torch.nn.functional as F\n\n"
            f"KWARGS = {kwargs!r}\nCALL = {call!r}\n\n\ndef actual(x, i=None):\n    t = torch.from_numpy(x)\n"
            + body + ret)
    return RuntimeCall(ref, ("torch",), code, call, None)


def _torch_onnx(ref: str, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> RuntimeCall:
    """The torch call of :func:`_torch`, in a module exported by torch.onnx.export and run by ONNX
    Runtime (the chain the torch-onnx peer is)."""
    chain = TorchOnnxPeer()
    node = chain.translate_family(spec, shape, dtype)
    kwargs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in node.kwargs}
    dims = tuple(range(2, 2 + node.rank))
    pool = (f"torch.{node.fn}(x, dim={dims}, keepdim=True)" if spec.op in ("global_avg", "global_max")
            else f"F.{node.fn}(x, **KWARGS)")
    call = (f"torch.onnx.export(module calling {pool.replace('KWARGS', repr(kwargs))}, opset_version={TORCH_ONNX_OPSET}, "
            "dynamo=False) -> onnxruntime.InferenceSession")
    code = torch_onnx_script(repr(kwargs), call, pool, "x, i=None")
    return RuntimeCall(ref, ("torch", "onnxruntime", "onnx"), code, call, None)


def _openvino(ref: str, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> RuntimeCall:
    if spec.op not in OPENVINO_FAMILY:
        raise PeerDeclined("openvino", f"OpenVINO's opsets have no {spec.describe().split('(')[0]} operator")
    outs = list(spec.output_shape or ())
    if spec.op == "adaptive_max":
        make = f"ops.adaptive_max_pool(param, sizes, index_element_type={spec.index_element_type!r})"
    else:
        make = "ops.adaptive_avg_pool(param, sizes)"
    call = make.replace("param", "x").replace("sizes", f"{outs}")
    code = ("import openvino as ov\nimport openvino.opset8 as ops\n\n"
            f"CONFIG = {dict(COMPILE_CONFIG)!r}  # f32 precision, one thread\n"
            f"CALL = 'openvino.opset8.' + {call!r} + ', compiled for the CPU with ' + repr(CONFIG)\n\n\n"
            "def actual(x, i=None):\n"
            "    param = ops.parameter(list(x.shape), x.dtype)\n"
            f"    sizes = ops.constant(np.array({outs}, dtype=np.int64))\n"
            f"    pool = {make}\n"
            "    compiled = ov.Core().compile_model(ov.Model(pool.outputs(), [param]), 'CPU', CONFIG)\n"
            "    result = compiled([x])\n"
            "    outs = [result[o] for o in compiled.outputs]\n"
            "    return outs[0], (outs[1] if len(outs) > 1 else None)\n")
    return RuntimeCall(ref, ("openvino",), code, call, None)


def _jax(ref: str, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> RuntimeCall:
    """The jax peer's calls (:meth:`~poolcheck.peers.jax_peer.JaxPeer.execute_family`): ``jnp.mean``
    or ``jnp.max`` over the spatial axes, ``jnp.linalg.norm(ord=p)`` of each flattened plane."""
    check_family_expressible(spec)
    axes = tuple(range(2, len(shape)))
    if spec.op == "global_lp":
        call = f"jax.numpy.linalg.norm(x.reshape(N, C, -1), ord={spec.p}, axis=-1), reshaped to (N, C, 1, ...)"
        body = ("    planes = jnp.reshape(x, x.shape[:2] + (-1,))\n"
                f"    out = jnp.linalg.norm(planes, ord={spec.p}, axis=-1).reshape(x.shape[:2] + (1,) * {len(axes)})\n")
    else:
        fn = "mean" if spec.op == "global_avg" else "max"
        call = f"jax.numpy.{fn}(x, axis={axes}, keepdims=True)"
        body = f"    out = jnp.{fn}(x, axis={axes}, keepdims=True)\n"
    code = ("import jax\n\njax.config.update('jax_platforms', 'cpu')\njax.config.update('jax_enable_x64', True)\n"
            "import jax.numpy as jnp  # noqa: E402\n\n"
            f"CALL = {call!r}\n\n\ndef actual(x, i=None):\n" + body + "    return np.asarray(out), None\n")
    return RuntimeCall(ref, ("jax",), code, call, None)


def family_runtime_call(ref: str, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> RuntimeCall:
    """The script's part for runtime ``ref`` on family configuration ``spec``; PeerDeclined where
    the runtime cannot express it, ValueError for a runtime without a family reproducer."""
    name, _ = split_ref(ref)
    if name in ("onnxruntime", "onnx_reference", "tract", "openvino-onnx"):
        return _onnx(ref, spec, shape, dtype)
    if name == "torch":
        return _torch(ref, spec, shape, dtype)
    if name == "torch-onnx":
        return _torch_onnx(ref, spec, shape, dtype)
    if name == "openvino":
        return _openvino(ref, spec, shape, dtype)
    if name == "jax":
        return _jax(ref, spec, shape, dtype)
    raise ValueError(f"no reproducer for runtime {ref!r} on {spec.describe()} (family runtimes: onnxruntime, "
                     "onnx_reference, tract, openvino-onnx, openvino, torch, torch-onnx, jax)")


def family_constants(spec: FamilySpec, shape: tuple[int, ...]) -> dict[str, object]:
    """What the loop needs besides X and I: the op, LpPool's window axes, p, MaxUnpool's output
    shape, the adaptive output sizes."""
    axes = None
    if spec.op == "lp":
        assert spec.window is not None
        axes = [(a.size, a.kernel, a.stride, a.dilation, a.pad_begin, a.pad_end, a.out)
                for a in resolve(spec.window, shape).axes]
    return {"FAMILY_OP": spec.op, "AXES": axes, "P": spec.p,
            "OUT_SHAPE": unpool_shape(spec, shape) if spec.op == "unpool" else None,
            "OUTS": list(spec.output_shape) if spec.op in ("adaptive_avg", "adaptive_max") and spec.output_shape else None}


def textbook_family_source() -> str:
    src = inspect.getsource(textbook_family)
    doc_end = src.index('"""', 3) + 3
    head = ("import itertools\nimport math\n\nimport numpy as np\n\nfrom poolcheck.repro.textbook import window_taps  "
            "# a script has textbook.py copied above this file\n")
    return src[doc_end:].strip("\n").replace(head, "")


#: What a family script compares with: the loop's values, indices (AdaptiveMaxPool) and tolerance.
FAMILY_REFERENCE = '''

def reference():
    return family_reference(FAMILY_OP, X, I, AXES, P, OUT_SHAPE, OUTS)
'''
