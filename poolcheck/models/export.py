"""Cases as ONNX backend test directories (``model.onnx`` + ``test_data_set_0/input_0.pb``,
``output_0.pb``) holding poolcheck's reference outputs (numpy engine), so a runtime's own
harness runs the corpus without Python."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from poolcheck.api import run_spec
from poolcheck.api_family import run_family
from poolcheck.cases.model import Case
from poolcheck.errors import PoolcheckError
from poolcheck.files import write_text_atomic
from poolcheck.peers.onnx_model import IR_VERSION, OPSET, build_model, to_onnx
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.operators import OPERATORS, onnx_opset, parse, spell

#: Operator of each exported node, as poolcheck's case format names it (MaxPool-22 / AveragePool-22).
EXPORT_OPS = {"MaxPool": f"MaxPool-{OPSET}", "AveragePool": f"AveragePool-{OPSET}"}
#: The record, in OUT, of every directory export wrote there with each file's SHA-256: the only
#: directories a later export replaces are these, unchanged since.
MANIFEST = "poolcheck-export.json"
MANIFEST_FORMAT = "poolcheck.export/1"


class ExportError(PoolcheckError, OSError):
    """OUT cannot receive the export (exit 2, one line naming the path)."""


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


def _case_files(case: Case) -> dict[str, bytes]:
    """The files of one case's backend test directory, by relative path; raises
    :class:`PoolcheckError` (or ``PeerDeclined``) with the reason when ONNX cannot express it exactly."""
    from onnx import helper, numpy_helper

    if isinstance(case.spec, FamilySpec):
        return _family_case_files(case)
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
    model = build_model([node])
    # The output's type with its shape (ONNX's checker requires the shape field on graph outputs).
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info(
        "y0", helper.np_dtype_to_tensor_dtype(values.dtype), list(values.shape)))
    return {
        "model.onnx": model.SerializeToString(),
        "test_data_set_0/input_0.pb": numpy_helper.from_array(np.ascontiguousarray(case.input), "x0")
        .SerializeToString(),
        "test_data_set_0/output_0.pb": numpy_helper.from_array(np.ascontiguousarray(values), "y0")
        .SerializeToString(),
    }


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(out: Path) -> dict[str, dict[str, str]]:
    """What earlier exports wrote into ``out``: directory -> {relative path: sha256} ({} when
    there is no manifest). Raises :class:`ExportError` when a file of that name is not one
    (export will not overwrite it)."""
    path = out / MANIFEST
    if not os.path.lexists(path):
        return {}
    dirs: object = None
    if not path.is_symlink() and path.is_file():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            dirs = doc.get("directories") if isinstance(doc, dict) and doc.get("format") == MANIFEST_FORMAT else None
        except (OSError, ValueError, RecursionError):
            pass
    if not isinstance(dirs, dict):
        raise ExportError(f"{path}: is not the manifest poolcheck export writes; move it away or choose another OUT")
    return {name: files for name, files in dirs.items()
            if isinstance(name, str) and isinstance(files, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())}


def _tree(directory: Path) -> dict[str, str] | None:
    """Every entry under ``directory`` as {relative path: sha256}; None when anything there is
    not a plain folder or regular file (a link, a FIFO ...) or cannot be read."""
    found: dict[str, str] = {}
    try:
        for entry in sorted(directory.rglob("*")):
            rel = entry.relative_to(directory).as_posix()
            if entry.is_symlink():
                return None
            if entry.is_dir():
                continue
            if not entry.is_file():
                return None
            found[rel] = _digest(entry.read_bytes())
    except OSError:
        return None
    return found


def _owned(target: Path, recorded: dict[str, str] | None) -> bool:
    """Whether ``target`` is a folder an earlier export wrote and nobody changed since: a real
    folder (not a link) holding exactly the files the manifest records, with their contents."""
    if recorded is None or target.is_symlink() or not target.is_dir():
        return False
    return _tree(target) == recorded


def _family_case_files(case: Case) -> dict[str, bytes]:
    """An ONNX family case (LpPool, Global*Pool, MaxUnpool) as the files of a backend test
    directory at an opset where the case's own row is in force (:func:`onnx_opset`: GlobalLpPool-2
    at 21, LpPool-2 at 10, the -22 rows at 22):
    the node in that row's words (MaxUnpool's I and output_shape as its second and third inputs),
    the reference output of the NumPy engine. OpenVINO's adaptive pools have no ONNX operator."""
    from onnx import helper, numpy_helper

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
    graph = helper.make_graph([node], case.id, inputs, [helper.make_tensor_value_info(
        "y0", helper.np_dtype_to_tensor_dtype(values.dtype), list(values.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", onnx_opset(row))],
                              producer_name="poolcheck")
    model.ir_version = IR_VERSION
    files = {"model.onnx": model.SerializeToString()}
    for k, (key, arr) in enumerate(feeds.items()):
        files[f"test_data_set_0/input_{k}.pb"] = numpy_helper.from_array(arr, key).SerializeToString()
    files["test_data_set_0/output_0.pb"] = numpy_helper.from_array(np.ascontiguousarray(values), "y0").SerializeToString()
    return files


def export_cases(cases: Sequence[Case], out: Path) -> list[Exported]:
    """Every case as a directory under ``out`` (created), or the reason it is not expressible.

    Never deletes what it did not write: an existing ``test_poolcheck_*`` entry is replaced only
    when the manifest (:data:`MANIFEST`) records it as an earlier export's, unchanged since; any
    other entry in the way (a file, a link, a folder with the user's files) refuses the whole
    export before anything is written. Every directory is built in a staging folder inside
    ``out`` first and moved into place by rename. Raises :class:`ExportError` (one line)."""
    out = Path(out)
    if out.is_symlink() and not out.exists():
        raise ExportError(f"{out}: is a link to {os.readlink(out)!r}, which does not exist")
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out}: exists and is not a folder")
    taken: set[str] = set()
    done: list[Exported] = []
    files: dict[str, dict[str, bytes]] = {}
    for case in cases:
        name = dir_name(case.id, taken)
        try:
            files[name] = _case_files(case)
        except PoolcheckError as exc:
            taken.discard(name)
            done.append(Exported(case.id, case.location, reason=str(getattr(exc, "reason", "") or exc)))
            continue
        done.append(Exported(case.id, case.location, out / name))
    try:
        out.mkdir(parents=True, exist_ok=True)
        manifest = _read_manifest(out)
        for name in files:  # every conflict is found before anything is written
            target = out / name
            if os.path.lexists(target) and not _owned(target, manifest.get(name)):
                kind = "a link" if target.is_symlink() else "a folder" if target.is_dir() else "a file"
                raise ExportError(f"{target}: {kind} poolcheck export did not write (or that was changed since) "
                                  "is where this test directory goes; move it away or choose another OUT")
        _write(out, files, manifest)
    except ExportError:
        raise
    except OSError as exc:
        where = exc.filename if isinstance(exc.filename, str) else out
        raise ExportError(f"{where}: cannot write: {exc.strerror or exc}") from None
    return done


def _write(out: Path, files: dict[str, dict[str, bytes]], manifest: dict[str, dict[str, str]]) -> None:
    """Build every directory in a staging folder inside ``out``, then move each into place
    (an earlier export's copy is moved aside into the staging folder first), then record them."""
    staging = Path(tempfile.mkdtemp(prefix=".poolcheck-export-", suffix=".tmp", dir=out))
    try:
        (staging / "new").mkdir()
        (staging / "old").mkdir()
        for name, tree in files.items():
            for rel, data in tree.items():
                path = staging / "new" / name / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        for name in files:
            target = out / name
            if os.path.lexists(target):
                os.rename(target, staging / "old" / name)  # ours (checked): kept until the new one is in
            os.rename(staging / "new" / name, target)
            manifest[name] = {rel: _digest(data) for rel, data in files[name].items()}
    finally:
        present = {name: tree for name, tree in manifest.items() if (out / name).is_dir()}
        try:
            write_text_atomic(out / MANIFEST, json.dumps({"format": MANIFEST_FORMAT, "directories": present},
                                                         indent=1, sort_keys=True) + "\n")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
