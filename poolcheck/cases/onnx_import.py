"""Reading models: the pooling nodes of an ONNX model (with their inferred input shapes), the
pooling ops of an OpenVINO IR model, and ONNX backend test directories as cases.

The backend test layout: a folder holding ``model.onnx`` and ``test_data_set_N/input_K.pb``,
``output_K.pb`` (serialized ``TensorProto``), one data set per input/output example.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from poolcheck.api import run_spec
from poolcheck.cases.model import Case
from poolcheck.errors import CaseFileError, PoolcheckError
from poolcheck.files import native_stderr_silenced
from poolcheck.spec import dtypes
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.limits import MAX_EXTENT
from poolcheck.spec.operators import OPERATORS, Attribute, OperatorVersion, onnx_version, operator, parse
from poolcheck.spec.poolspec import PoolSpec, comma_ints
from poolcheck.spec.shape import resolve

#: ONNX pooling operators of a backend test directory and the row each is read as (Global* are the
#: degenerate case: "GlobalMaxPool consumes an input tensor X and applies max pooling across the
#: values in the same channel. This is equivalent to MaxPool with kernel size equal to the spatial
#: dimension").
ONNX_POOL_OPS = {"MaxPool": "MaxPool-22", "AveragePool": "AveragePool-22",
                 "GlobalMaxPool": "MaxPool-22", "GlobalAveragePool": "AveragePool-22"}
#: ONNX operators of the rest of the family read from backend test directories (their catalogue
#: row is the version in force at the model's opset, :func:`~poolcheck.spec.operators.onnx_version`).
ONNX_FAMILY_OPS = ("LpPool", "GlobalLpPool", "MaxUnpool")
#: Every ONNX pooling operator a model's node is judged as (``poolcheck audit``): each by its own
#: catalogue row, the version in force at the model's opset.
ONNX_NODE_OPS = (*ONNX_POOL_OPS, *ONNX_FAMILY_OPS)
#: OpenVINO IR pooling ops; each node is read as the row of its own version (``MaxPool`` of
#: ``opset8`` is ``MaxPool-8``).
OV_NODE_OPS = ("MaxPool", "AvgPool", "AdaptiveAvgPool", "AdaptiveMaxPool")
#: ONNX pooling operators whose kernel is the whole spatial extent (read as their row with
#: kernel_shape = the input's spatial dims).
WHOLE_EXTENT_OPS = frozenset({"GlobalMaxPool", "GlobalAveragePool"})
#: Attributes of an ONNX pooling node poolcheck models, from its catalogue row (anything else is
#: reported, not judged). A new operator is a row in ONNX_POOL_OPS, not a branch here.
ONNX_ATTRS = {op_type: set(operator(case_op).attribute_names) for op_type, case_op in ONNX_POOL_OPS.items()}
#: The onnx backend test runner's own tolerance (onnx/backend/test/runner: rtol=1e-3, atol=1e-7).
BACKEND_RTOL = 1e-3
BACKEND_ATOL = 1e-7
#: The largest model or tensor file read: protobuf's own limit on one serialized message (2 GiB).
MAX_PROTO_BYTES = 2**31 - 1
#: Tight tolerance a stored output must meet before it is called exact (float32 rounding).
TIGHT_RTOL = 1e-6
TIGHT_ATOL = 1e-7


class ModelError(PoolcheckError):
    """A model poolcheck cannot read or resolve (exit 2, one line)."""


@dataclass
class PoolNode:
    """One pooling node of a model, resolved against its inferred input shape."""

    name: str
    op_type: str  # as in the model: MaxPool, AveragePool, GlobalMaxPool, AvgPool ...
    case_op: str  # its catalogue row: onnx:MaxPool-8, AveragePool-7, GlobalAveragePool-1, MaxPool-14 ...
    attributes: dict[str, Any]  # as the catalogue row spells them (for operators.parse)
    input_name: str
    input_shape: tuple[int, ...] | None
    dtype: str
    spec: PoolSpec | FamilySpec | None = None
    problem: str = ""  # why the node cannot be judged (unknown attribute, shape not inferable ...)
    extra: dict[str, Any] = field(default_factory=dict)


class Unreadable(Exception):
    """Internal: why :func:`read_regular` refused a file (the caller names the file)."""


def read_regular(path: Path, inside: Path | None = None) -> bytes:
    """The bytes of ``path``, read only when it is a regular file (symlinks followed) of at most
    :data:`MAX_PROTO_BYTES`: a FIFO, a device (``/dev/zero``) or a folder is refused without
    blocking or reading. With ``inside``, the file must also resolve to a path inside that folder
    (a symlink out of a test folder is refused, never followed). Raises :class:`Unreadable`."""
    if inside is not None:
        real, root = path.resolve(), inside.resolve()
        if not real.is_relative_to(root):
            raise Unreadable(f"leads outside {inside} (a link to {real}); only files inside it are read")
    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):  # stat first: a FIFO is never opened (opening one may block)
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        else:
            fd = -1
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror or exc}") from None
    if fd < 0:
        raise Unreadable(f"is not a regular file ({_file_kind(st.st_mode)})")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)  # the file opened, which may have been swapped since the stat
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(f"is not a regular file ({_file_kind(st.st_mode)})")
        if st.st_size > MAX_PROTO_BYTES:
            raise Unreadable(f"is {st.st_size} bytes, more than a protobuf message can hold ({MAX_PROTO_BYTES})")
        data = f.read(MAX_PROTO_BYTES + 1)
    if len(data) > MAX_PROTO_BYTES:
        raise Unreadable(f"grew beyond {MAX_PROTO_BYTES} bytes while being read")
    return data


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a plain file"


def _load_onnx(path: Path, inside: Path | None = None) -> Any:
    import onnx

    if not os.path.lexists(path):
        raise ModelError(f"{path}: no such file")
    if path.is_dir():
        raise ModelError(f"{path}: is a folder, not a model file")
    try:
        data = read_regular(path, inside)
    except Unreadable as exc:
        raise ModelError(f"{path}: {exc}") from None
    try:
        # From bytes: external weights are not loaded (only attributes and shapes matter here).
        model = onnx.load_model_from_string(data)
    except Exception as exc:
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise ModelError(f"{path}: not a readable ONNX model ({reason})") from None
    if not model.HasField("graph"):  # an empty file, or bytes protobuf reads as a bare ModelProto
        raise ModelError(f"{path}: not an ONNX model (it holds no graph{'; the file is empty' if not data else ''})")
    return model


def _dims(value_type: Any) -> tuple[int | str, ...] | None:
    tt = value_type.tensor_type
    if not tt.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim)


def parse_input_shapes(items: list[str]) -> dict[str, tuple[int, ...]]:
    """``["data=1,3,224,224"]`` -> ``{"data": (1, 3, 224, 224)}``; a bad item is an error."""
    out: dict[str, tuple[int, ...]] = {}
    for item in items:
        name, sep, dims = item.partition("=")
        try:
            shape = tuple(comma_ints(dims))
        except ValueError:
            shape = ()
        if not sep or not name or not shape or any(v < 1 for v in shape):
            raise ModelError(f"--input-shape: expected NAME=D1,D2,... with positive dims, got {item!r}")
        if any(v > MAX_EXTENT for v in shape):
            raise ModelError(f"--input-shape: every dimension must be <= {MAX_EXTENT} (2^31 - 1), got {item!r}")
        if name in out:
            raise ModelError(f"--input-shape: {name!r} given twice ({','.join(map(str, out[name]))} and "
                             f"{','.join(map(str, shape))})")
        out[name] = shape
    return out


def _attr_dict(node: Any) -> dict[str, Any]:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        # a string attribute is bytes: one that is not UTF-8 is shown escaped (and then refused by name)
        out[a.name] = (v.decode("utf-8", errors="backslashreplace") if isinstance(v, bytes)
                       else (list(v) if isinstance(v, (list, tuple)) else v))
    return out


def _np_dtype_name(elem: int) -> str:
    """The NumPy name of an ONNX element type (``bfloat16``, ``float8_e4m3fn``, ``bool``, ``str``
    for strings), or ``onnx type N`` for one NumPy cannot hold: shown, never judged."""
    from onnx import helper

    try:
        dt = helper.tensor_dtype_to_np_dtype(elem)
    except Exception:
        return f"onnx type {elem}"
    return "string" if dt.kind == "O" else dt.name


def _subgraphs(node: Any) -> Iterator[tuple[str, Any]]:
    """Each graph attribute of ``node`` (If's branches, Loop's and Scan's bodies) with its name."""
    from onnx import AttributeProto

    for a in node.attribute:
        if a.type == AttributeProto.GRAPH:
            yield a.name, a.g
        elif a.type == AttributeProto.GRAPHS:
            for j, g in enumerate(a.graphs):
                yield f"{a.name}[{j}]", g


def _scope_types(graph: Any, outer: dict[str, Any]) -> dict[str, Any]:
    """The value types visible inside ``graph``: the enclosing graphs' and its own."""
    from onnx import helper

    types = dict(outer)
    for v in list(graph.input) + list(graph.value_info) + list(graph.output):
        types[v.name] = v.type
    for init in graph.initializer:
        types.setdefault(init.name, helper.make_tensor_type_proto(init.data_type, list(init.dims)))
    return types


def _walk_pool_nodes(graph: Any, outer: dict[str, Any], ops: tuple[str, ...],
                     prefix: str = "") -> Iterator[tuple[str, Any, dict[str, Any], bool]]:
    """Every node of ``graph`` whose type is one of ``ops``, and of the graphs nested in its
    nodes (If, Loop, Scan): (display name, node, the types in its scope, whether it sits in a
    subgraph). A nested node's name is its path: ``outer_node/then_branch/inner_node``."""
    types = _scope_types(graph, outer)
    for i, node in enumerate(graph.node):
        name = prefix + (node.name or f"{node.op_type}#{i}")
        if node.op_type in ops and node.domain in ("", "ai.onnx"):
            yield name, node, types, bool(prefix)
        for attr, sub in _subgraphs(node):
            yield from _walk_pool_nodes(sub, types, ops, f"{name}/{attr}/")


def _holds_pool(graph: Any, ops: tuple[str, ...]) -> bool:
    return any((n.op_type in ops and n.domain in ("", "ai.onnx"))
               or any(_holds_pool(g, ops) for _, g in _subgraphs(n)) for n in graph.node)


def model_opset(model: Any) -> int:
    """The default-domain opset a model imports (1 when it names none)."""
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


def _rows_of(op_type: str) -> list[OperatorVersion]:
    """The catalogue rows of ONNX ``op_type``, oldest first."""
    return [r for r in OPERATORS.values() if r.convention == "onnx" and r.title.rpartition("-")[0] == op_type]


def _versioned_row(op_type: str, opset: int, attrs: dict[str, Any]) -> tuple[str, str]:
    """(catalogue row, problem) of an ONNX node at ``opset``: the version in force there; an
    attribute that version lacks is the model's error (naming the version that has it)."""
    row = onnx_version(op_type, opset)
    if row is None:
        return "", (f"{op_type} at opset {opset}: poolcheck has no row for it "
                    f"(its versions: {', '.join(r.title for r in _rows_of(op_type))})")
    for name in sorted(set(attrs) - set(row.attribute_names)):
        later = [r.title for r in _rows_of(op_type) if name in r.attribute_names]
        if later:
            return row.name, (f"attribute {name!r} is not an attribute of {row.title}, the version in force at the "
                              f"model's opset {opset} ({later[0]} has it)")
        return row.name, f"attribute {name!r} is not modelled"
    return row.name, ""


def _constant_ints(graph: Any, name: str) -> list[int] | None:
    """The integers of tensor ``name`` when it is an initializer or a Constant's output."""
    from onnx import numpy_helper

    for init in graph.initializer:
        if init.name == name:
            return [int(v) for v in numpy_helper.to_array(init).reshape(-1)]
    for node in graph.node:
        if node.op_type == "Constant" and list(node.output) == [name]:
            for a in node.attribute:
                if a.name == "value":
                    return [int(v) for v in numpy_helper.to_array(a.t).reshape(-1)]
    return None


def onnx_pool_nodes(path: Path, input_shapes: dict[str, tuple[int, ...]] | None = None, *,
                    model: Any = None, versions: bool = True) -> list[PoolNode]:
    """Every pooling node of the ONNX model at ``path``, including those inside If/Loop/Scan
    subgraphs, with its inferred input shape (``model``: the model already read from ``path``).

    With ``versions`` (``poolcheck audit``) every node of :data:`ONNX_NODE_OPS` is read as the
    catalogue row of its version at the model's opset (an opset-9 MaxPool is MaxPool-8, a
    GlobalAveragePool is GlobalAveragePool-1); without it (backend test directories) MaxPool,
    AveragePool and their Global forms are read as :data:`ONNX_POOL_OPS` says.

    Raises :class:`ModelError` for an unreadable model or a top-level pooling input whose shape
    stays unknown (naming the model input to give with ``--input-shape``); a node that cannot be
    judged (a nested node whose shape is unknown, an element type poolcheck does not model, an
    attribute its version does not have) carries its ``problem`` and the other nodes are still read."""
    import onnx

    if model is None:
        model = _load_onnx(path)
    input_shapes = dict(input_shapes or {})
    graph_inputs = {i.name: i for i in model.graph.input}
    for name, shape in input_shapes.items():
        if name not in graph_inputs:
            raise ModelError(f"--input-shape: the model has no input {name!r} (inputs: {', '.join(graph_inputs)})")
        tt = graph_inputs[name].type.tensor_type
        tt.shape.ClearField("dim")
        for v in shape:
            tt.shape.dim.add().dim_value = v
    ops = ONNX_NODE_OPS if versions else tuple(ONNX_POOL_OPS)
    if not _holds_pool(model.graph, ops):
        return []
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as exc:
        raise ModelError(f"{path}: shape inference failed ({' '.join(str(exc).split())[:200]})") from None
    initializers = {i.name for i in inferred.graph.initializer}
    dynamic = [i.name for i in inferred.graph.input if i.name not in initializers and _dims(i.type) is not None
               and any(not isinstance(d, int) or d == 0 for d in _dims(i.type) or ())]
    opset = model_opset(model)
    nodes = []
    for name, node, types, nested in _walk_pool_nodes(inferred.graph, {}, ops):
        vtype = types.get(node.input[0]) if node.input else None
        dims = _dims(vtype) if vtype is not None else None
        elem = vtype.tensor_type.elem_type if vtype is not None else 0
        # UNDEFINED (0) is no element type: shown as "onnx type 0", never judged as some other type
        dtype = _np_dtype_name(elem) if vtype is not None else "float32"
        attrs = _attr_dict(node)
        if versions:
            case_op, problem = _versioned_row(node.op_type, opset, attrs)
        else:
            case_op = ONNX_POOL_OPS[node.op_type]
            unknown = sorted(set(attrs) - ONNX_ATTRS[node.op_type])
            problem = f"attribute {unknown[0]!r} is not modelled" if unknown else ""
        names = [a.name for a in node.attribute]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:  # the checker and the runtimes refuse such a node; only one of the values was read
            problem = f"attribute {twice[0]!r} is given twice"
        if dims is None or any(not isinstance(d, int) or d < 1 for d in dims):
            hint = f" (give --input-shape for {', '.join(dynamic)})" if dynamic else ""
            reason = (f"the shape of its input {(node.input or [''])[0]!r} cannot be inferred"
                      f"{' inside its subgraph' if nested else ''}{hint}")
            if not nested:
                raise ModelError(f"{path}: node {name!r} ({node.op_type}): {reason}")
            nodes.append(PoolNode(name=name, op_type=node.op_type, case_op=case_op, attributes=attrs,
                                  input_name=node.input[0] if node.input else "", input_shape=None, dtype=dtype,
                                  problem=reason))
            continue
        shape = tuple(int(d) for d in dims)
        if node.op_type in WHOLE_EXTENT_OPS and not versions:
            attrs = {"kernel_shape": list(shape[2:])}
        pn = PoolNode(name, node.op_type, case_op, attrs, node.input[0], shape, dtype, problem=problem)
        pn.extra["opset"] = opset
        if len(node.output) > 1 and node.output[1]:
            pn.extra["indices"] = True
            if case_op and not operator(case_op).indices_output and not pn.problem:
                pn.problem = f"{operator(case_op).title} has one output, the node has {len(node.output)}"
        if len(node.output) > 2 and case_op and not pn.problem:  # no pooling operator has a third
            pn.problem = f"{operator(case_op).title} has at most two outputs, the node has {len(node.output)}"
        if node.op_type == "MaxUnpool" and len(node.input) > 2 and node.input[2] and not pn.problem:
            # output_shape is MaxUnpool's third input; poolcheck's row holds it as an attribute.
            given = _constant_ints(inferred.graph, node.input[2])
            if given is None:
                out_type = types.get(node.output[0])
                out_dims = _dims(out_type) if out_type is not None else None
                given = [int(d) for d in out_dims] if out_dims and all(isinstance(d, int) and d > 0
                                                                         for d in out_dims) else None
            if given is None:
                pn.problem = f"its output_shape input {node.input[2]!r} is neither a constant nor inferable"
            else:
                pn.attributes = attrs = {**attrs, "output_shape": given}
        if not pn.problem:
            try:
                pn.spec = parse(case_op, attrs)
            except PoolcheckError as exc:
                pn.problem = str(exc)
        nodes.append(pn)
    return nodes


def openvino_pool_nodes(path: Path, input_shapes: dict[str, tuple[int, ...]] | None = None) -> list[PoolNode]:
    """The MaxPool, AvgPool, AdaptiveAvgPool and AdaptiveMaxPool ops of an OpenVINO IR model
    (``.xml`` + ``.bin``), each read as the catalogue row of its own version (``MaxPool`` of
    ``opset8`` is ``MaxPool-8``)."""
    if not path.exists():
        raise ModelError(f"{path}: no such file")
    try:
        import openvino as ov
    except ImportError:
        raise ModelError(f"{path}: reading OpenVINO IR needs the openvino package (pip install openvino)") from None
    try:
        with native_stderr_silenced():  # the IR reader logs to fd 2; the reason comes back in the exception
            model = ov.Core().read_model(str(path))
    except Exception as exc:
        raise ModelError(f"{path}: not a readable OpenVINO IR model ({' '.join(str(exc).split())[:200]})") from None
    if input_shapes:
        try:
            model.reshape({k: ov.PartialShape(list(v)) for k, v in input_shapes.items()})
        except Exception as exc:
            raise ModelError(f"--input-shape: {' '.join(str(exc).split())[:200]}") from None
    nodes = []
    for op in model.get_ordered_ops():
        kind = op.get_type_name()
        if kind not in OV_NODE_OPS:
            continue
        version = "".join(ch for ch in str(op.get_type_info().version_id) if ch.isdigit())
        case_op = f"{kind}-{version}"
        name = op.get_friendly_name()
        ps = op.input(0).get_partial_shape()
        if ps.is_dynamic:
            raise ModelError(f"{path}: node {name!r} ({kind}): its input shape {ps} is dynamic (give --input-shape)")
        shape = tuple(int(d) for d in ps.to_shape())
        dtype = _ov_dtype_name(op.input(0).get_element_type())
        source = op.input(0).get_source_output()
        pn = PoolNode(name, kind, case_op, {}, source.get_any_name() if source.get_names() else "", shape, dtype)
        pn.extra["opset"] = version
        if case_op not in OPERATORS:
            pn.problem = f"{kind} of opset{version}: poolcheck has no row for it"
            nodes.append(pn)
            continue
        a = op.get_attributes()
        # The IR spells attributes as the catalogue row does (AvgPool's "exclude-pad" with a dash).
        attrs = {at.name: _ir_value(at, a[key]) for at in operator(case_op).attributes
                 for key in (at.name, at.name.replace("_", "-")) if key in a}
        if attrs.get("auto_pad") == "notset":
            attrs["auto_pad"] = "explicit"
        if kind.startswith("Adaptive"):
            # output_shape is the adaptive pools' second input; poolcheck's row holds it as an attribute.
            out = op.output(0).get_partial_shape()
            given = op.input(1).get_source_output().get_node()
            if given.get_type_name() == "Constant":
                attrs["output_shape"] = [int(v) for v in np.asarray(given.get_data()).reshape(-1)]
            elif not out.is_dynamic:
                attrs["output_shape"] = [int(d) for d in out.to_shape()][2:]
        pn.attributes = attrs
        try:
            pn.spec = parse(case_op, attrs)
        except PoolcheckError as exc:
            pn.problem = str(exc)
        nodes.append(pn)
    return nodes


def _ov_dtype_name(element_type: Any) -> str:
    """The NumPy name of an OpenVINO element type, or OpenVINO's own name (bf16, string ...)
    for one NumPy cannot hold."""
    try:
        return np.dtype(element_type.to_dtype()).name
    except Exception:
        return str(element_type.get_type_name())


def _ir_value(attribute: Attribute, raw: Any) -> Any:
    """An OpenVINO IR attribute value in the case-file form of its catalogue type."""
    if attribute.type == "ints":
        return [int(v) for v in raw]
    if attribute.type == "bool":
        return bool(raw)
    if attribute.type == "int":
        return int(raw)
    return str(raw).lower()


def model_pool_nodes(path: Path, input_shapes: dict[str, tuple[int, ...]] | None = None) -> list[PoolNode]:
    """Pooling nodes of an ONNX (``.onnx``) or OpenVINO IR (``.xml``) model."""
    if path.suffix.lower() == ".xml":
        return openvino_pool_nodes(path, input_shapes)
    return onnx_pool_nodes(path, input_shapes)


# --------------------------------------------------------------------------- backend test dirs


def is_backend_dir(path: Path) -> bool:
    """A folder holding ``model.onnx`` and at least one ``test_data_set_*`` folder."""
    return path.is_dir() and (path / "model.onnx").is_file() and any(path.glob("test_data_set_*"))


def holds_pooling(path: Path) -> bool:
    """Whether the backend test directory's model has a pooling node (cheap: no inference)."""
    try:
        model = _load_onnx(path / "model.onnx", inside=path)
    except ModelError:
        return True  # let the loader report it
    return any(n.op_type in ONNX_POOL_OPS or n.op_type in ONNX_FAMILY_OPS for n in model.graph.node)


def find_backend_dirs(root: Path) -> list[Path]:
    """Backend test directories under ``root`` (itself included) whose model has a pooling node."""
    if is_backend_dir(root):
        return [root]
    return sorted(m.parent for m in root.rglob("model.onnx") if is_backend_dir(m.parent) and holds_pooling(m.parent))


def _read_tensor(path: Path, folder: Path, data_types: tuple[str, ...]) -> np.ndarray:
    """The tensor stored in ``path`` (a regular file inside the test ``folder``) whose element
    type is one of ``data_types`` (TensorProto names: FLOAT, INT64 ...); anything else is a
    :class:`CaseFileError` naming the file (and the ``data_type`` field)."""
    from onnx import TensorProto, numpy_helper

    try:
        data = read_regular(path, folder)
    except Unreadable as exc:
        raise CaseFileError(str(exc), path=str(path)) from None
    t = TensorProto()
    try:
        t.ParseFromString(data)
    except Exception as exc:
        raise CaseFileError(f"not a readable TensorProto ({' '.join(str(exc).split())[:120]})", path=str(path)) from None
    name = TensorProto.DataType.Name(t.data_type) if t.data_type in TensorProto.DataType.values() else str(t.data_type)
    if name not in data_types:
        raise CaseFileError(f"element type {name} where {' or '.join(data_types)} is expected", path=str(path),
                            field="data_type")
    try:
        return numpy_helper.to_array(t)
    except Exception as exc:
        raise CaseFileError(f"not a readable TensorProto ({' '.join(str(exc).split())[:120]})", path=str(path)) from None


def _proto_type(dtype: str) -> str:
    """The TensorProto element type name of numpy dtype ``dtype`` (float32 -> FLOAT)."""
    from onnx import TensorProto, helper

    return str(TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(np.dtype(dtype))))


def rounding_note(spec: PoolSpec, x: np.ndarray, stored: np.ndarray) -> str:
    """A note when the stored output differs from the reference beyond a tight tolerance but
    within the onnx backend runner's own (rtol 1e-3, atol 1e-7): rounded, not wrong."""
    if not dtypes.is_float(stored.dtype):
        return ""
    try:

        ref, _ = run_spec(spec, x, engine="numpy")
    except Exception:
        return ""  # the engine check reports it
    if ref.shape != stored.shape:
        return ""
    r, v = ref.astype(np.float64), stored.astype(np.float64)
    if np.allclose(v, r, rtol=TIGHT_RTOL, atol=TIGHT_ATOL, equal_nan=True):
        return ""
    if not np.allclose(v, r, rtol=BACKEND_RTOL, atol=BACKEND_ATOL, equal_nan=True):
        return ""
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.nanmax(np.where(r != 0, np.abs(v - r) / np.abs(r), 0.0))
    return (f"stored outputs rounded (largest relative error {rel:.2g}, beyond rtol {TIGHT_RTOL:g}, within the "
            f"backend test's rtol {BACKEND_RTOL:g})")


def load_backend_dir(path: Path) -> tuple[list[Case], list[CaseFileError]]:
    """The cases of one backend test directory: one per ``test_data_set_N``; the stored outputs
    are the documented expectation, judged within the onnx backend runner's own tolerance."""
    model_path = path / "model.onnx"
    try:
        model = _load_onnx(model_path, inside=path)
        graph = model.graph
        family = [n for n in graph.node if n.op_type in ONNX_FAMILY_OPS]
        if family and len(graph.node) == 1:
            return _family_backend_cases(path, family[0], model_opset(model))
        nodes = onnx_pool_nodes(model_path, model=model, versions=False)
    except (ModelError, PoolcheckError) as exc:
        return [], [CaseFileError(str(exc), path=str(path))]
    # Reshaping wrappers (pytorch's 1-D pools are exported as Unsqueeze -> pool -> Squeeze) only
    # move unit axes: the pool sees the same elements, so the data is reshaped to its shapes.
    real = [n for n in graph.node if n.op_type not in ("Constant", "Identity", "Unsqueeze", "Squeeze", "Reshape")]
    if len(nodes) != 1 or len(real) != 1:
        return [], [CaseFileError(f"holds {len(real)} node(s) ({', '.join(n.op_type for n in real[:4])}); "
                                  "poolcheck judges a single pooling node", path=str(path))]
    node = nodes[0]
    if node.spec is None:
        return [], [CaseFileError(f"node {node.name!r}: {node.problem}", path=str(path))]
    assert isinstance(node.spec, PoolSpec)  # read without versions: MaxPool/AveragePool rows only
    spec = node.spec
    convention = operator(node.case_op).convention
    element_types = tuple(_proto_type(d) for d in operator(node.case_op).dtypes)
    cases, errors = [], []
    for ds in sorted(path.glob("test_data_set_*")):
        try:
            x = _read_tensor(ds / "input_0.pb", path, element_types)
            same = (_proto_type(x.dtype.name),)  # the output's element type is the input's (T)
            expected: dict[str, Any] = {"values": _read_tensor(ds / "output_0.pb", path, same)}
            if os.path.lexists(ds / "output_1.pb"):
                expected["indices"] = _read_tensor(ds / "output_1.pb", path, ("INT64",))
            if node.input_shape is not None and x.shape != node.input_shape and x.size == int(np.prod(node.input_shape)):
                x = x.reshape(node.input_shape)
                out_shape = (*x.shape[:2], *(a.out for a in resolve(spec, x.shape).axes))
                expected = {k: v.reshape(out_shape) if v.size == int(np.prod(out_shape)) else v
                            for k, v in expected.items()}
        except CaseFileError as exc:
            errors.append(exc)
            continue
        except OSError as exc:
            errors.append(CaseFileError(f"cannot read: {exc.strerror or exc}", path=str(ds)))
            continue
        cid = f"{path.name}/{ds.name}"
        title = f"onnx backend test {path.name} ({node.op_type})"
        tags = ["onnx-backend-test"]
        rounded = rounding_note(spec, x, expected["values"])
        if rounded:
            title += f"; note: {rounded}"
            tags.append("note:stored-output-rounded")
        cases.append(Case(id=cid, op=node.case_op, convention=convention, spec=spec,
                          attributes=dict(node.attributes), dtype=x.dtype, input=x, expected=expected,
                          path=str(path), title=title, notes=rounded,
                          source={"document": "onnx backend test data", "path": str(path)},
                          rtol=BACKEND_RTOL, atol=BACKEND_ATOL, tags=tags))
    return cases, errors


def _family_backend_cases(path: Path, node: Any, opset: int) -> tuple[list[Case], list[CaseFileError]]:
    """The cases of a backend test directory holding one LpPool, GlobalLpPool or MaxUnpool node:
    its row is the version in force at the model's opset; MaxUnpool's second input is the case's
    ``I`` and its optional third (output_shape) becomes the attribute of that name."""
    from onnx import helper

    row = onnx_version(node.op_type, opset)
    if row is None:
        return [], [CaseFileError(f"no catalogue row for {node.op_type} at opset {opset}", path=str(path))]
    attrs: dict[str, Any] = {}
    for a in node.attribute:
        value = helper.get_attribute_value(a)
        attrs[a.name] = value.decode() if isinstance(value, bytes) else (list(value) if isinstance(value, list) else value)
    element_types = tuple(_proto_type(d) for d in row.dtypes)
    cases, errors = [], []
    for ds in sorted(path.glob("test_data_set_*")):
        try:
            x = _read_tensor(ds / "input_0.pb", path, element_types)
            inputs = ({"I": _read_tensor(ds / "input_1.pb", path, ("INT64",))} if node.op_type == "MaxUnpool"
                      else {})
            written = dict(attrs)
            if node.op_type == "MaxUnpool" and len(node.input) > 2 and node.input[2] and (ds / "input_2.pb").exists():
                written["output_shape"] = [int(v) for v in _read_tensor(ds / "input_2.pb", path, ("INT64",))]
            spec = parse(row.name, written)
            # the output's element type is the input's (T)
            expected = {"values": _read_tensor(ds / "output_0.pb", path, (_proto_type(x.dtype.name),))}
        except CaseFileError as exc:
            errors.append(exc)
            continue
        except PoolcheckError as exc:
            errors.append(CaseFileError(str(exc), path=str(ds)))
            continue
        except OSError as exc:
            errors.append(CaseFileError(f"cannot read: {exc.strerror or exc}", path=str(ds)))
            continue
        cases.append(Case(id=f"{path.name}/{ds.name}", op=row.name, convention="onnx", spec=spec, attributes=written,
                          dtype=x.dtype, input=x, expected=expected, path=str(path), inputs=inputs,
                          title=f"onnx backend test {path.name} ({node.op_type}, as {row.name})",
                          source={"document": "onnx backend test data", "path": str(path)},
                          rtol=BACKEND_RTOL, atol=BACKEND_ATOL, tags=["onnx-backend-test"]))
    return cases, errors
