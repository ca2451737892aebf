"""How each runtime is called in a reproducer script: its public API in its plainest form.

A :class:`RuntimeCall` holds the Python source of the script's ``actual(x)`` (returning values
and indices, or None for indices), the packages it needs, the model file it reads (ONNX runtimes
and converter chains read a ``.onnx`` written next to the script), and the convention of the
indices the runtime returns. The attributes come from the same translation the poolcheck peer
uses (``to_onnx``, ``to_openvino``, ``to_torch``, ``to_jax``), written out as literals, so the
script makes the very call the peer makes -- minus the peer's batching, packing and re-layout.
When the plain call does not reproduce a registered divergence, the peer's extra machinery is
to blame, not the runtime.

bfloat16, which NumPy has no type for: the script holds the input in float32 and the runtime
converts it to bfloat16 in front of the pool and the values back to float32 behind it (an ONNX
Cast, an OpenVINO Convert, ``tensor.to``), so the pool itself runs on bfloat16. Such a script
also defines ``casts_only(x)``, the same conversions without the pool: a refusal counts as the
pool's only when the conversions alone run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from poolcheck.peers.base import PeerDeclined
from poolcheck.peers.jax_peer import divisor_per_axis, to_jax
from poolcheck.peers.onnx_model import OPSET as ONNX_OPSET
from poolcheck.peers.onnx_model import build_model, to_onnx
from poolcheck.peers.openvino_peer import COMPILE_CONFIG, to_openvino
from poolcheck.peers.plugin import ModulePeer
from poolcheck.peers.torch_onnx_peer import OPSET as TORCH_ONNX_OPSET
from poolcheck.peers.torch_peer import to_torch
from poolcheck.spec.indices import index_layout
from poolcheck.spec.operators import spell
from poolcheck.spec.poolspec import PoolSpec


@dataclass(frozen=True)
class RuntimeCall:
    """One runtime's part of a reproducer script."""

    runtime: str  # the peer name, as poolcheck spells it (options included)
    needs: tuple[str, ...]  # pip packages besides numpy
    code: str  # imports and ``def actual(x): -> (values, indices | None)``
    call: str  # one line for people: the API called, with its attributes
    #: The indices the runtime returns: (order within a plane, modulus or None) -- or None when it
    #: returns none (or the comparison leaves them out).
    index: tuple[str, int | None] | None
    model: bytes | None = None  # the .onnx file the script reads, when it reads one


def split_ref(ref: str) -> tuple[str, dict[str, str]]:
    """``torch:layout=channels_last`` -> ("torch", {"layout": "channels_last"})."""
    name, _, rest = ref.partition(":")
    options = dict(part.split("=", 1) for part in rest.split(",") if "=" in part) if rest else {}
    return name, options


def _onnx_index(spec: PoolSpec, shape: Sequence[int], storage_order: int) -> tuple[str, int | None] | None:
    if spec.op != "max":
        return None
    return ("F" if storage_order else "C", None)


def _literal(kwargs: dict[str, object]) -> str:
    return "{" + ", ".join(f"{k!r}: {list(v) if isinstance(v, tuple) else v!r}" for k, v in kwargs.items()) + "}"


_ONNX_FILE = 'MODEL = pathlib.Path(__file__).with_suffix(".onnx")  # the single-node model, written next to this script\n'


def is_bfloat16(dtype: np.dtype) -> bool:
    """Whether the script converts its float32 input to bfloat16 inside the runtime."""
    return np.dtype(dtype).name == "bfloat16"


def _bfloat16_casts(model: object, *, pool: bool = True) -> object:
    """``model`` (one node from :func:`build_model`) with a float32 input Cast to bfloat16 in
    front of the pool and its values Cast back to float32 behind it; ``pool=False``: the two
    Casts alone."""
    from onnx import TensorProto, helper

    graph = model.graph  # type: ignore[attr-defined]
    node = graph.node[0]
    node.input[0] = "x0_bfloat16"
    node.output[0] = "y0_bfloat16"
    cast_in = helper.make_node("Cast", ["x0"], ["x0_bfloat16"], name="to_bfloat16", to=TensorProto.BFLOAT16)
    cast_out = helper.make_node("Cast", ["y0_bfloat16" if pool else "x0_bfloat16"], ["y0"], name="to_float32",
                                to=TensorProto.FLOAT)
    kept = [node] if pool else []
    del graph.node[:]
    graph.node.extend([cast_in, *kept, cast_out])
    graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT
    graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT
    if not pool:
        del graph.output[1:]
    return model


def _onnx_runtime(ref: str, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> RuntimeCall:
    name, _ = split_ref(ref)
    node = to_onnx(spec, shape, dtype, name)
    bf16 = is_bfloat16(dtype)
    model = build_model([node])
    attrs = node.attrs()
    call = f"{node.op_type}-{ONNX_OPSET} {attrs}"
    casts = ""
    if bf16:
        model = _bfloat16_casts(model)
        call = f"Cast(to=BFLOAT16) -> {call} -> Cast(to=FLOAT)"
        only = _bfloat16_casts(build_model([node]), pool=False).SerializeToString()  # type: ignore[attr-defined]
        casts = ("\n\n# the same two Casts without the pool: float32 -> bfloat16 -> float32\n"
                 f"CASTS_ONLY = bytes.fromhex({only.hex()!r})\n\n\n"
                 "def casts_only(x):\n"
                 "    with tempfile.TemporaryDirectory() as folder:\n"
                 "        path = pathlib.Path(folder) / 'casts.onnx'\n"
                 "        path.write_bytes(CASTS_ONLY)\n"
                 "        return run(path, x)[0]\n")
    index = _onnx_index(spec, shape, int(attrs.get("storage_order", 0)))
    # per runtime: the package, the import (and settings), how the call is shown, the lines that
    # run the model file ``model``
    plans = {
        "onnxruntime": ("onnxruntime", "import onnxruntime as ort\n", "onnxruntime.InferenceSession(MODEL).run",
                        ["session = ort.InferenceSession(str(model), providers=['CPUExecutionProvider'])",
                         "return session.run(None, {'x0': x})"]),
        "onnx_reference": ("onnx", "from onnx.reference import ReferenceEvaluator\n",
                           "onnx.reference.ReferenceEvaluator(MODEL).run",
                           ["return ReferenceEvaluator(str(model)).run(None, {'x0': x})"]),
        "tract": ("tract", "import tract\n", "tract.onnx().load(MODEL).into_model().into_runnable().run",
                  ["runnable = tract.onnx().load(str(model)).into_model().into_runnable()",
                   "return [t.to_numpy() for t in runnable.run([x])]"]),
        # OpenVINO's ONNX frontend reads the same file
        "openvino-onnx": ("openvino", f"import openvino as ov\n\nCONFIG = {dict(COMPILE_CONFIG)!r}  # f32, one thread\n",
                          'openvino.Core().compile_model(Core().read_model(MODEL), "CPU", CONFIG)',
                          ["core = ov.Core()",
                           "compiled = core.compile_model(core.read_model(str(model)), 'CPU', CONFIG)",
                           "result = compiled([x])", "return [result[o] for o in compiled.outputs]"]),
    }
    package, head, shown, lines = plans[name]
    head = ("import tempfile\n\n" if bf16 else "") + head
    code = (f"{head}\n{_ONNX_FILE}CALL = {shown + ': '!r} + {call!r}\n\n\ndef run(model, x):\n"
            + "".join(f"    {line}\n" for line in lines)
            + "\n\ndef actual(x):\n    outs = run(MODEL, x)\n"
            + "    return outs[0], (outs[1] if len(outs) > 1 else None)\n" + casts)
    return RuntimeCall(ref, (package,), code, call, index, model.SerializeToString())


def _openvino(ref: str, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> RuntimeCall:
    node = to_openvino(spec, shape, dtype)
    kwargs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in node.kwargs}
    fn = "max_pool" if spec.op == "max" else "avg_pool"
    axis = int(dict(node.kwargs).get("axis", 0))
    axis = axis + len(shape) if axis < 0 else axis
    index = ("C", math.prod(shape[axis:])) if spec.op == "max" else None
    call = f"openvino.opset14.{fn}(x, **{_literal(kwargs)})"
    if is_bfloat16(dtype):
        call = f"openvino.opset14.{fn}(convert(x, 'bf16'), **{_literal(kwargs)}), values convert(..., 'f32')"
        build = ("    param = ops.parameter(list(x.shape), x.dtype)\n"
                 f"    pool = ops.{fn}(ops.convert(param, 'bf16'), **KWARGS)\n"
                 "    outputs = [ops.convert(pool.output(0), 'f32').output(0), *pool.outputs()[1:]]\n"
                 "    return run(ov.Model(outputs, [param]), x)\n\n\n"
                 "def casts_only(x):\n"
                 "    param = ops.parameter(list(x.shape), x.dtype)\n"
                 "    back = ops.convert(ops.convert(param, 'bf16'), 'f32')\n"
                 "    return run(ov.Model([back.output(0)], [param]), x)[0]\n")
    else:
        build = ("    param = ops.parameter(list(x.shape), x.dtype)\n"
                 f"    pool = ops.{fn}(param, **KWARGS)\n"
                 "    return run(ov.Model(pool.outputs(), [param]), x)\n")
    code = ("import openvino as ov\nimport openvino.opset14 as ops\n\n"
            f"KWARGS = {_literal(kwargs)}\nCONFIG = {dict(COMPILE_CONFIG)!r}  # f32 precision, one thread\n"
            f"CALL = {call!r} + ', compiled for the CPU with ' + repr(CONFIG)\n\n\n"
            "def run(model, x):\n"
            "    compiled = ov.Core().compile_model(model, 'CPU', CONFIG)\n"
            "    result = compiled([x])\n"
            "    outs = [result[o] for o in compiled.outputs]\n"
            "    return outs[0], (outs[1] if len(outs) > 1 else None)\n\n\n"
            "def actual(x):\n" + build)
    return RuntimeCall(ref, ("openvino",), code, call, index)


def _torch(ref: str, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> RuntimeCall:
    name, options = split_ref(ref)
    kwargs = to_torch(spec, shape, name)
    rank = spec.spatial_rank
    fn = f"{'max' if spec.op == 'max' else 'avg'}_pool{rank}d"
    plane = math.prod(shape[2:])
    bf16 = is_bfloat16(dtype)
    if bf16 and name != "torch":
        raise PeerDeclined(ref, "the torch-onnx chain runs float32 and float64 only (ONNX Runtime's pooling kernels)")
    layout = ""
    if options.get("layout") == "channels_last":
        fmt = "torch.channels_last" if rank == 2 else "torch.channels_last_3d"
        layout = f"    t = t.contiguous(memory_format={fmt})\n"
    if name == "torch":
        call = f"torch.nn.functional.{fn}(x, **{_literal(kwargs)})" + (" on a channels_last tensor" if layout else "")
        back = ".float()" if bf16 else ""
        ret = (f"    values, indices = out\n    return values{back}.numpy(), indices.numpy()\n" if spec.op == "max"
               else f"    return out{back}.numpy(), None\n")
        if bf16:
            call = call.replace("(x, ", "(x.to(torch.bfloat16), ", 1) + ", values .float()"
        code = ("import torch\nimport torch.nn.functional as F\n\n"
                f"KWARGS = {_literal(kwargs)}\nCALL = {call!r}\n\n\n"
                "def actual(x):\n    t = torch.from_numpy(x)" + (".to(torch.bfloat16)" if bf16 else "") + "\n" + layout +
                f"    out = F.{fn}(t, **KWARGS)\n" + ret)
        if bf16:
            code += "\n\ndef casts_only(x):\n    return torch.from_numpy(x).to(torch.bfloat16).float().numpy()\n"
        return RuntimeCall(ref, ("torch",), code, call, ("C", plane) if spec.op == "max" else None)
    # torch-onnx: the module exported by torch.onnx.export, run by ONNX Runtime
    kwargs.pop("return_indices", None)
    call = (f"torch.onnx.export(module calling F.{fn}(x, **{_literal(kwargs)}), opset_version={TORCH_ONNX_OPSET}, "
            "dynamo=False) -> onnxruntime.InferenceSession")
    pool_call = (f"F.{fn}(x, return_indices=True, **KWARGS)" if spec.op == "max" else f"F.{fn}(x, **KWARGS)")
    code = torch_onnx_script(_literal(kwargs), call, pool_call)
    return RuntimeCall(ref, ("torch", "onnxruntime", "onnx"), code, call, ("C", plane) if spec.op == "max" else None)


def torch_onnx_script(kwargs: str, call: str, pool: str, params: str = "x") -> str:
    """A torch-onnx script's runtime part: a module ``Pool`` returning ``pool`` (``KWARGS`` is
    ``kwargs``, a literal), exported by torch.onnx.export and run by ONNX Runtime in
    ``actual(params)``, which returns the first output and the second (or None)."""
    return ("import io\n\nimport onnxruntime as ort\nimport torch\nimport torch.nn.functional as F\n\n"
            f"KWARGS = {kwargs}\nCALL = {call!r}\n\n\n"
            "class Pool(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            f"        return {pool}\n\n\n"
            f"def actual({params}):\n"
            "    buf = io.BytesIO()\n"
            f"    torch.onnx.export(Pool(), (torch.from_numpy(x),), buf, dynamo=False, opset_version={TORCH_ONNX_OPSET},\n"
            "                      input_names=['x'])\n"
            "    session = ort.InferenceSession(buf.getvalue(), providers=['CPUExecutionProvider'])\n"
            "    outs = session.run(None, {'x': x})\n"
            "    return outs[0], (outs[1] if len(outs) > 1 else None)\n")


def _jax(ref: str, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> RuntimeCall:
    node = to_jax(spec, shape, dtype)
    if node.invalid is not None:
        raise ValueError(f"jax cannot express it: {node.invalid}")
    n_sp = len(node.window)
    start = node.start or (0,) * n_sp
    crop = ", ".join(f"{s}:{s + k}" for s, k in zip(start, node.keep))
    dims, strides, dil = (1, 1) + node.window, (1, 1) + node.strides, (1, 1) + node.dilations
    padding = ((0, 0), (0, 0)) + node.padding
    call = (f"jax.lax.reduce_window(x[:, :, {crop}], init, lax.{'max' if spec.op == 'max' else 'add'}, "
            f"{dims}, {strides}, {padding}, window_dilation={dil})")
    bf16 = is_bfloat16(dtype)
    if bf16:
        call = call.replace("(x[", "(bfloat16(x[", 1).replace("], init", "]), init", 1) + ", in float32"
    head = ("import jax\n\njax.config.update('jax_platforms', 'cpu')\njax.config.update('jax_enable_x64', True)\n"
            "from jax import lax  # noqa: E402\n" + ("import jax.numpy as jnp  # noqa: E402\n" if bf16 else "") + "\n"
            f"DIMS, STRIDES, DILATIONS = {dims}, {strides}, {dil}\nPADDING = {padding}\n"
            f"CALL = {call!r}\n\n\n"
            + ("def casts_only(x):\n    return np.asarray(jnp.asarray(x, dtype=jnp.bfloat16).astype(jnp.float32))\n\n\n"
               if bf16 else "")
            + f"def actual(x):\n    x = x[:, :, {crop}]\n"
            + ("    x = np.asarray(jnp.asarray(x, dtype=jnp.bfloat16))  # bfloat16, as jax's NumPy type\n" if bf16 else ""))
    result = "np.asarray(jnp.asarray({}, dtype=jnp.float32))" if bf16 else "np.asarray({})"
    if spec.op == "max":
        body = ("    init = np.array(-np.inf if x.dtype.kind in 'fV' else np.iinfo(x.dtype).min, dtype=x.dtype)\n"
                "    out = lax.reduce_window(x, init, lax.max, DIMS, STRIDES, PADDING, window_dilation=DILATIONS)\n"
                f"    return {result.format('out')}, None\n")
    else:
        counted = node.counted or tuple((0, 0) for _ in node.keep)
        per_axis = divisor_per_axis(node)
        rounded = ("np.asarray(jnp.asarray((total / count).astype(np.float32), dtype=jnp.bfloat16).astype(jnp.float32))"
                   if bf16 else "(total / count).astype(x.dtype)")
        body = ("    zero = np.array(0, dtype=x.dtype)\n"
                "    total = lax.reduce_window(x, zero, lax.add, DIMS, STRIDES, PADDING, window_dilation=DILATIONS)\n"
                f"    # the divisor: per axis, the window's taps on the input or on the counted padding {counted}\n"
                f"    count = np.ones(())\n    for taps in {per_axis}:\n        count = np.multiply.outer(count, taps)\n"
                "    total = np.asarray(total).astype(np.float64)\n"
                f"    return {rounded}, None\n")
    return RuntimeCall(ref, ("jax",), head + body, call, None)


#: The runtimes a reproducer can call (built-in peers).
RUNTIMES = ("onnxruntime", "onnx_reference", "tract", "openvino", "openvino-onnx", "torch", "torch-onnx", "jax")


def is_plugin(ref: str) -> bool:
    """A plugin reference: a ``.py`` file, or a module name that is no built-in runtime."""
    return split_ref(ref)[0] not in RUNTIMES


def _plugin(ref: str, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> RuntimeCall:
    """A user's plugin module (``max_pool`` / ``avg_pool`` with OpenVINO keywords, see
    :mod:`poolcheck.peers.plugin`): the script imports it -- by path for a file, by name for a
    module -- and calls its function with the keywords poolcheck's plugin peer passes."""
    declined = ModulePeer(SimpleNamespace(__name__=ref, max_pool=print, avg_pool=print),  # type: ignore[arg-type]
                          name=ref, ref=ref).supports(spec, shape, dtype)
    if not declined[0]:
        raise PeerDeclined(ref, declined[1])
    keywords = spell(spec, "AvgPool-14" if spec.op == "avg" else "MaxPool-14")
    fn = "avg_pool" if spec.op == "avg" else "max_pool"
    where = str(Path(ref).resolve()) if ref.endswith(".py") else ref
    axis = int(keywords.get("axis", 0))
    axis = axis + len(shape) if axis < 0 else axis
    call = f"{Path(where).name if ref.endswith('.py') else where}.{fn}(x, **{_literal(keywords)})"
    code = ("import importlib\nimport importlib.util\n\n"
            f"PLUGIN = {where!r}  # the plugin: a file (imported by path) or a module name\n"
            f"KEYWORDS = {_literal(keywords)}\nCALL = {call!r}\n\n\n"
            "def plugin():\n"
            "    if PLUGIN.endswith('.py'):\n"
            "        spec = importlib.util.spec_from_file_location('plugin', PLUGIN)\n"
            "        module = importlib.util.module_from_spec(spec)\n"
            "        spec.loader.exec_module(module)\n"
            "        return module\n"
            "    return importlib.import_module(PLUGIN)\n\n\n"
            "def actual(x):\n"
            f"    out = plugin().{fn}(x, **KEYWORDS)\n"
            "    if isinstance(out, (tuple, list)) and len(out) == 2:\n"
            "        return np.asarray(out[0]), np.asarray(out[1])\n"
            "    return np.asarray(out), None\n")
    return RuntimeCall(ref, (), code, call, ("C", math.prod(shape[axis:])) if spec.op == "max" else None)


def runtime_call(ref: str, spec: PoolSpec, shape: Sequence[int], dtype: np.dtype) -> RuntimeCall:
    """The script's part for runtime ``ref`` (a built-in peer name with its options). Raises
    ``PeerDeclined`` when the runtime cannot express the configuration, ValueError for a runtime
    the reproducer does not know."""
    shape = tuple(int(v) for v in shape)
    dt = np.dtype(dtype)
    name, _ = split_ref(ref)
    if name in ("onnxruntime", "onnx_reference", "tract", "openvino-onnx"):
        return _onnx_runtime(ref, spec, shape, dt)
    if name == "openvino":
        return _openvino(ref, spec, shape, dt)
    if name in ("torch", "torch-onnx"):
        return _torch(ref, spec, shape, dt)
    if name == "jax":
        return _jax(ref, spec, shape, dt)
    if is_plugin(ref):
        return _plugin(ref, spec, shape, dt)
    raise ValueError(f"no reproducer for runtime {ref!r} (built-in runtimes: {', '.join(RUNTIMES)})")


def spec_index(spec: PoolSpec, shape: Sequence[int]) -> tuple[str, int]:
    """The text's own index convention for ``spec`` (order within a plane, modulus)."""
    layout = index_layout(spec, shape)
    return layout.order, int(layout.modulus)
