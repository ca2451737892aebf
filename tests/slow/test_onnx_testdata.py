"""ONNX backend test directories both ways: ``poolcheck run DIR`` judges them (the onnx package's
own pytorch-converted pooling data, and directories built here), and ``poolcheck export`` writes
the corpus as such directories that ONNX Runtime loads and that round-trip through ``run``.

Runs are real commands (a hostile folder's FIFO must not hang the test process); the export's
refusals and usage errors come from the command in-process (``invoke``: one-line errors, never
wrapped; a real command cost ~1 s CPU of start-up each), its exports from the real command."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from support import ROOT, invoke  # noqa: E402
from support import cli as _cli  # noqa: E402

cli = functools.partial(_cli, timeout=500)

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
PYTORCH = DATA / "pytorch-converted"


def run_json(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = cli("run", *args, "--json")
    return proc, json.loads(proc.stdout)


def write_pb(path: Path, arr: np.ndarray) -> None:
    path.write_bytes(numpy_helper.from_array(arr).SerializeToString())


def read_pb(path: Path) -> np.ndarray:
    t = TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def backend_dir(root: Path, name: str, node: Any, x: np.ndarray, y: np.ndarray) -> Path:
    d = root / name
    (d / "test_data_set_0").mkdir(parents=True)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    onnx.save(model, str(d / "model.onnx"))
    write_pb(d / "test_data_set_0" / "input_0.pb", x)
    write_pb(d / "test_data_set_0" / "output_0.pb", y)
    return d


@pytest.mark.skipif(not PYTORCH.is_dir(), reason="the onnx package ships no pytorch-converted data here")
def test_onnx_pytorch_converted_pooling_data_is_judged() -> None:
    wanted = sorted(p.name for p in PYTORCH.iterdir() if p.name.startswith(("test_MaxPool", "test_AvgPool")))
    proc, doc = run_json(str(PYTORCH))
    judged = sorted({Path(c["source"]).name for c in doc["cases"]})
    assert judged == wanted  # every pooling directory, nothing else (the folder holds other ops)
    assert proc.returncode == 0, proc.stderr
    assert all(c["verdict"] == "pass" for c in doc["cases"])
    assert not any("note:stored-output-rounded" in c["tags"] for c in doc["cases"])  # measured: none rounded
    assert all({ch["runner"] for ch in c["checks"]} >= {"numpy"} for c in doc["cases"])


def test_built_directories_pass_fail_and_tolerance(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 0, 0])
    # Independent oracle: count_include_pad=0 averages the real elements of each window.
    y = np.zeros((1, 2, 3, 3), np.float32)
    for c in range(2):
        for i in range(3):
            for j in range(3):
                rows = [r for r in (2 * i - 1, 2 * i) if 0 <= r < 5]
                cols = [q for q in (2 * j - 1, 2 * j) if 0 <= q < 5]
                y[0, c, i, j] = np.mean(x[0, c][np.ix_(rows, cols)], dtype=np.float64)
    backend_dir(tmp_path / "ok", "test_avg_exact", node, x, y)
    backend_dir(tmp_path / "ok", "test_avg_rounded", node, x, (y * (1 + 5e-4)).astype(np.float32))
    proc, doc = run_json(str(tmp_path / "ok"))
    assert proc.returncode == 0, proc.stdout
    assert {c["case_id"]: c["verdict"] for c in doc["cases"]} == {
        "test_avg_exact/test_data_set_0": "pass", "test_avg_rounded/test_data_set_0": "pass"}
    notes = {c["case_id"]: "note:stored-output-rounded" in c["tags"] for c in doc["cases"]}
    assert notes == {"test_avg_exact/test_data_set_0": False, "test_avg_rounded/test_data_set_0": True}
    rounded = next(c for c in doc["cases"] if c["case_id"].startswith("test_avg_rounded"))
    assert "within the backend test's rtol 0.001" in rounded["title"]
    wrong = y.copy()
    wrong[0, 1, 2, 2] += 1.0
    d = backend_dir(tmp_path / "bad", "test_avg_wrong", node, x, wrong)
    proc, doc = run_json(str(d))
    assert proc.returncode == 1
    (case,) = doc["cases"]
    assert case["verdict"] == "fail" and case["source"] == str(d)
    assert [df["position"] for df in case["checks"][0]["diffs"]] == [[0, 1, 2, 2]]


def test_bad_directories_are_errors(tmp_path: Path) -> None:
    x = np.ones((1, 1, 2, 2), np.float32)
    relu = backend_dir(tmp_path, "test_relu", helper.make_node("Relu", ["x"], ["y"]), x, x)
    proc = cli("run", str(relu))
    assert proc.returncode == 2 and "single pooling node" in proc.stderr
    d = backend_dir(tmp_path, "test_cut", helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2]), x,
                    np.ones((1, 1, 1, 1), np.float32))
    (d / "test_data_set_0" / "input_0.pb").write_bytes(b"\xff\xff\xff")
    proc = cli("run", str(d))
    assert proc.returncode == 2 and "input_0.pb" in proc.stderr and "Traceback" not in proc.stderr


def _hostile(d: Path, kind: str, outside: Path) -> str:
    """Plant one hostile entry in backend test folder ``d``; what the error line must say."""
    ds = d / "test_data_set_0"
    if kind == "fifo-input":
        (ds / "input_0.pb").unlink()
        os.mkfifo(ds / "input_0.pb")
        return "input_0.pb: is not a regular file (a FIFO)"
    if kind == "dev-zero-input":
        (ds / "input_0.pb").unlink()
        (ds / "input_0.pb").symlink_to("/dev/zero")
        return "input_0.pb: leads outside"
    if kind == "link-out-input":
        (ds / "input_0.pb").unlink()
        (ds / "input_0.pb").symlink_to(outside)
        return "input_0.pb: leads outside"
    if kind == "link-out-data-set":
        other = outside.parent / "elsewhere"
        ds.rename(other)
        ds.symlink_to(other, target_is_directory=True)
        return "input_0.pb: leads outside"
    if kind == "link-out-model":
        (d / "model.onnx").rename(outside.parent / "model.onnx")
        (d / "model.onnx").symlink_to(outside.parent / "model.onnx")
        return "model.onnx: leads outside"
    if kind == "string-input":
        t = helper.make_tensor("x", TensorProto.STRING, [1, 1, 2, 2], [b"a"] * 4)
        (ds / "input_0.pb").write_bytes(t.SerializeToString())
        return "input_0.pb: field 'data_type': element type STRING where"
    assert kind == "int64-output"
    write_pb(ds / "output_0.pb", np.ones((1, 1, 1, 1), np.int64))
    return "output_0.pb: field 'data_type': element type INT64 where FLOAT is expected"


@pytest.mark.parametrize("kind", ["fifo-input", "dev-zero-input", "link-out-input", "link-out-data-set",
                                  "link-out-model", "string-input", "int64-output"])
def test_test_folders_are_read_only_through_regular_files_inside_them(tmp_path: Path, kind: str) -> None:
    """A FIFO is never opened (it hung run), /dev/zero never read (MemoryError), a link out of
    the folder never followed (it read /etc/passwd): one line naming the file, exit 2."""
    x = np.ones((1, 1, 2, 2), np.float32)
    d = backend_dir(tmp_path / "tests", "test_max", helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2]), x,
                    np.ones((1, 1, 1, 1), np.float32))
    outside = tmp_path / "secret.pb"
    write_pb(outside, x)  # a readable tensor: following the link would pass silently
    message = _hostile(d, kind, outside)
    proc = cli("run", str(d), cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr and "AttributeError" not in proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("export") / "onnx-tests"
    proc = cli("export", "cases/", "--format", "onnx-tests", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(proc.stdout)


def test_export_round_trips_through_run(exported: tuple[Path, dict[str, Any]]) -> None:
    out, doc = exported
    written = {Path(w["directory"]).name for w in doc["written"]}
    assert written == {p.name for p in out.iterdir() if p.is_dir()} and len(written) > 100
    assert {p.name for p in out.iterdir() if not p.is_dir()} == {"poolcheck-export.json"}
    assert all(r["reason"] for r in doc["not_expressible"])
    proc, result = run_json(str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(result["cases"]) == len(written)
    assert all(c["verdict"] == "pass" for c in result["cases"])


def test_export_stores_reference_outputs(exported: tuple[Path, dict[str, Any]]) -> None:
    from poolcheck.api import run_spec
    from poolcheck.api_family import run_family
    from poolcheck.cases import load_paths
    from poolcheck.spec.family import FamilySpec

    _, doc = exported
    cases, _ = load_paths([ROOT / "cases"])
    by_id = {c.id: c for c in cases}
    for w in doc["written"][:60]:
        case = by_id[w["case"]]
        stored = read_pb(Path(w["directory"]) / "test_data_set_0" / "output_0.pb")
        if isinstance(case.spec, FamilySpec):
            ref, _ = run_family(case.spec, case.input, engine="numpy", indices=case.inputs.get("I"))
        else:
            ref, _ = run_spec(case.spec, case.input, engine="numpy")
        assert stored.dtype == ref.dtype and np.array_equal(stored, ref, equal_nan=True), w["case"]


def test_onnxruntime_reads_every_exported_directory(exported: tuple[Path, dict[str, Any]]) -> None:
    ort = pytest.importorskip("onnxruntime")
    _, doc = exported
    loaded = refused = agree = 0
    for w in doc["written"]:
        d = Path(w["directory"])
        onnx.checker.check_model(str(d / "model.onnx"))  # a valid model for ONNX's own checker
        try:
            session = ort.InferenceSession(str(d / "model.onnx"), providers=["CPUExecutionProvider"])
        except Exception as exc:
            # ORT refuses some valid configurations at load time; the refusal must say why. It has
            # no GlobalLpPool-22 kernel (tests/peers/test_family_runtimes.py), and the family's -22
            # kernels only for some types (bfloat16 cases; the registry's onnxruntime entries).
            missing = re.search(r"(Could not find an implementation|Failed to find kernel) for "
                                r"(Global)?(Max|Average|Lp)Pool\(|MaxUnpool\(", str(exc))
            assert "AveragePool" in str(exc) or "MaxPool" in str(exc) or "Pad should be smaller" in str(exc) \
                or missing, exc
            refused += 1
            continue
        loaded += 1
        feeds = {meta.name: read_pb(d / "test_data_set_0" / f"input_{k}.pb")
                 for k, meta in enumerate(session.get_inputs())}  # MaxUnpool: I and output_shape too
        y = read_pb(d / "test_data_set_0" / "output_0.pb")
        try:
            got = session.run(None, feeds)[0]
        except Exception:
            continue
        if got.shape == y.shape and np.allclose(got.astype(np.float64), y.astype(np.float64), rtol=1e-3, atol=1e-7,
                                                equal_nan=True):
            agree += 1
    assert loaded > refused and agree > len(doc["written"]) // 2


def test_export_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    for args in (["cases/seeds", str(tmp_path / "o"), "--format", "tflite"], ["cases/seeds"],
                 [str(tmp_path / "missing.yaml"), str(tmp_path / "o")]):
        proc = invoke("export", *args)
        assert proc.returncode == 2, args
        assert proc.stderr.strip().startswith("error:") and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


SEED = ROOT / "poolcheck" / "corpus" / "seeds" / "onnx-averagepool19.yaml"
THREE_D = "test_poolcheck_onnx-averagepool19-3d-default"


def _one_error(proc: subprocess.CompletedProcess[str], message: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("error: ") and message in proc.stderr, proc.stderr


@pytest.mark.parametrize("kind", ["notes-in-folder", "file", "link", "changed-file"])
def test_export_never_deletes_what_it_did_not_write(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    assert invoke("export", str(SEED), str(out)).returncode == 0
    assert invoke("export", str(SEED), str(out)).returncode == 0  # its own folders: replaced
    target = out / THREE_D
    mine = tmp_path / "mine"
    mine.mkdir()
    if kind == "notes-in-folder":
        (target / "notes.txt").write_text("my notes")
        kept = target / "notes.txt"
    elif kind == "changed-file":
        (target / "model.onnx").write_bytes(b"my own model")
        kept = target / "model.onnx"
    else:
        shutil.rmtree(target)
        if kind == "file":
            target.write_text("my notes")
            kept = target
        else:
            (mine / "notes.txt").write_text("my notes")
            target.symlink_to(mine, target_is_directory=True)
            kept = mine / "notes.txt"
    before = kept.read_bytes()
    stamp = (out / "test_poolcheck_onnx-averagepool19-1d-default" / "model.onnx").stat().st_mtime_ns
    _one_error(invoke("export", str(SEED), str(out)), f"{target}: ")
    assert kept.read_bytes() == before
    # Refused before anything was written: no other folder was touched, nothing staged is left.
    assert (out / "test_poolcheck_onnx-averagepool19-1d-default" / "model.onnx").stat().st_mtime_ns == stamp
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_export_to_a_bad_out_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    _one_error(invoke("export", str(SEED), str(tmp_path / "dangling")), "is a link to")
    assert not (tmp_path / "nowhere").exists()
    _one_error(invoke("export", str(SEED), "/proc/poolcheck-export-out"), "/proc/poolcheck-export-out")
    out = tmp_path / "out"
    out.mkdir()
    (out / "poolcheck-export.json").write_text("my own notes")
    _one_error(invoke("export", str(SEED), str(out)), "is not the manifest poolcheck export writes")
    assert (out / "poolcheck-export.json").read_text() == "my own notes"
    assert [p.name for p in out.iterdir()] == ["poolcheck-export.json"]


def test_replay_of_a_backend_case_reruns_exactly_it(tmp_path: Path) -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    y = x.reshape(1, 1, 2, 2, 2, 2).max(axis=(3, 5))  # by hand: 2x2 blocks
    backend_dir(tmp_path, "test_a", node, x, y)
    backend_dir(tmp_path, "test_b", node, x, y)
    _, doc = run_json(str(tmp_path))
    assert [c["verdict"] for c in doc["cases"]] == ["pass", "pass"]
    replay = doc["cases"][1]["replay"].split()
    assert replay[:2] == ["poolcheck", "run"]
    proc, again = run_json(*replay[2:])
    assert proc.returncode == 0 and [c["case_id"] for c in again["cases"]] == ["test_b/test_data_set_0"]
