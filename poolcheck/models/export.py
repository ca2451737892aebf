"""Cases as ONNX backend test directories (``model.onnx`` + ``test_data_set_0/input_0.pb``,
``output_0.pb``) holding poolcheck's reference outputs (numpy engine), so a runtime's own
harness runs the corpus without Python."""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from poolcheck.api import run_spec
from poolcheck.api_family import run_family
from poolcheck.cases.model import Case
from poolcheck.errors import PoolcheckError
from poolcheck.peers.onnx_model import IR_VERSION, OPSET, build_model, to_onnx
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.operators import OPERATORS, parse, spell

#: Operator of each exported node, as poolcheck's case format names it (MaxPool-22 / AveragePool-22).
EXPORT_OPS = {"MaxPool": f"MaxPool-{OPSET}", "AveragePool": f"AveragePool-{OPSET}"}


@dataclass(frozen=True)
class Exported:
    """One case written (``directory``) or not (``reason``)."""

    case_id: str
    source: str
    directory: Path | None = None
    reason: str = ""


def dir_name(case_id: str, taken: set[str]) -> str:
    """``test_poolcheck_<id>`` with anything but letters, digits, ``-`` and ``_`` as ``_``; unique."""
    base = "test_poolcheck_" + re.sub(r"[^A-Za-z0-9_-]+", "_", case_id).strip("_")[:100]
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


def export_case(case: Case, out: Path, name: str) -> Path:
    """Write one case as a backend test directory; raises :class:`PoolcheckError` (or
    ``PeerDeclined``) with the reason when ONNX cannot express it exactly."""
    from onnx import helper, numpy_helper, save

    if isinstance(case.spec, FamilySpec):
        return export_family_case(case, out, name)
    node = to_onnx(case.pool_spec, case.input.shape, case.dtype, peer="onnx-tests")
    # Values only: poolcheck's indices follow its own layout, ONNX's Indices another; a stored
    # Indices output would be a second document to keep in step.
    node = dataclasses.replace(node, with_indices=False)
    values, _ = run_spec(case.pool_spec, case.input, engine="numpy")
    # The written attributes must mean the same configuration: judge them by ONNX's own rules.
    onnx_spec = parse(EXPORT_OPS[node.op_type], node.attrs())
    again, _ = run_spec(onnx_spec, case.input, engine="numpy")
    if again.shape != values.shape or not np.array_equal(again, values, equal_nan=True):
        what = f"shape {again.shape}, not {values.shape}" if again.shape != values.shape else "different values"
        raise PoolcheckError(f"written as ONNX {node.op_type} {node.attrs()}, ONNX's own rules give {what}; "
                             "ONNX has no exact spelling")
    target = out / name
    if target.exists():
        shutil.rmtree(target)
    data = target / "test_data_set_0"
    data.mkdir(parents=True)
    model = build_model([node])
    # The output's type with its shape (ONNX's checker requires the shape field on graph outputs).
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info(
        "y0", helper.np_dtype_to_tensor_dtype(values.dtype), list(values.shape)))
    save(model, str(target / "model.onnx"))
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(np.ascontiguousarray(case.input), "x0")
                                      .SerializeToString())
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(np.ascontiguousarray(values), "y0")
                                       .SerializeToString())
    return target


def export_family_case(case: Case, out: Path, name: str) -> Path:
    """An ONNX family case (LpPool, Global*Pool, MaxUnpool) as a backend test directory at opset
    22: the node in the case's own row's words (MaxUnpool's I and output_shape as its second and
    third inputs), the reference output of the NumPy engine. OpenVINO's adaptive pools have no
    ONNX operator."""
    from onnx import helper, numpy_helper, save

    assert isinstance(case.spec, FamilySpec)
    row = OPERATORS[case.op]
    if row.convention != "onnx":
        raise PoolcheckError(f"{row.title} is an OpenVINO operator; ONNX has no operator for it")
    values, _ = run_family(case.spec, case.input, engine="numpy", indices=case.inputs.get("I"), row=row)
    attrs = spell(case.spec, case.op)
    feeds = {"x0": np.ascontiguousarray(case.input)}
    if "I" in case.inputs:
        feeds["i0"] = case.inputs["I"].astype(np.int64)
    output_shape = attrs.pop("output_shape", None)
    if output_shape is not None:
        feeds["s0"] = np.array(output_shape, dtype=np.int64)
    op_type = row.title.rsplit("-", 1)[0]
    node = helper.make_node(op_type, list(feeds), ["y0"], **attrs)
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
              for k, v in feeds.items()]
    graph = helper.make_graph([node], name, inputs, [helper.make_tensor_value_info(
        "y0", helper.np_dtype_to_tensor_dtype(values.dtype), list(values.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="poolcheck")
    model.ir_version = IR_VERSION
    target = out / name
    if target.exists():
        shutil.rmtree(target)
    data = target / "test_data_set_0"
    data.mkdir(parents=True)
    save(model, str(target / "model.onnx"))
    for k, (key, arr) in enumerate(feeds.items()):
        (data / f"input_{k}.pb").write_bytes(numpy_helper.from_array(arr, key).SerializeToString())
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(np.ascontiguousarray(values), "y0").SerializeToString())
    return target


def export_cases(cases: Sequence[Case], out: Path) -> list[Exported]:
    """Every case as a directory under ``out`` (created), or the reason it is not expressible."""
    out.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    done = []
    for case in cases:
        name = dir_name(case.id, taken)
        try:
            done.append(Exported(case.id, case.location, export_case(case, out, name)))
        except PoolcheckError as exc:
            taken.discard(name)
            done.append(Exported(case.id, case.location, reason=str(getattr(exc, "reason", "") or exc)))
    return done
