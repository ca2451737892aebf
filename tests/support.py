"""What many test files share: the tree's folders, running the real ``poolcheck`` command (in a
subprocess or in-process), and a built-in peer or a skip.

Importable from every test folder as ``support`` (pyproject's ``pythonpath = ["tests"]``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: This folder, the repository root, and the places tests read from.
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
PLANTED = TESTS / "planted_peers"
KERNELS = TESTS / "planted_kernels"
CORPUS = ROOT / "poolcheck" / "corpus"
SEED_FILE = CORPUS / "seeds" / "openvino-maxpool8.yaml"
SCHEMA_PATH = ROOT / "docs" / "report-schema.json"

#: A plain terminal of 200 columns: tables are not wrapped, no colour, no markup codes.
PLAIN = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


#: A case file's head and one case that passes on every engine (the hostile-input tests build
#: their bad files around them).
CASE_HEAD = "schema: poolcheck.case/1\ncases:\n"
GOOD_CASE = """\
  - id: ok-case
    op: MaxPool-22
    attributes: {kernel_shape: [2]}
    input: [[[1, 2, 3]]]
    expected: {values: [[[2, 3]]]}
"""


def one_error_line(stderr: str) -> str:
    """The only non-blank line of ``stderr`` (asserting there is one, and no traceback)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def run_case_text(tmp_path: Path, text: str) -> tuple[int, str, str]:
    """``poolcheck run`` (NumPy engine) on a case file of ``CASE_HEAD + text``: exit code, stdout, stderr."""
    (tmp_path / "c.yaml").write_text(CASE_HEAD + text)
    r = invoke("run", "-q", "--engine", "numpy", str(tmp_path / "c.yaml"))
    return r.returncode, r.stdout, r.stderr


def malformed_field_line(tmp_path: Path, text: str, field: str) -> str:
    """The one error line ``poolcheck run`` gives for a case file refused at ``field`` (exit 2)."""
    code, out, err = run_case_text(tmp_path, text)
    assert code == 2, (field, out, err)
    line = one_error_line(err)
    assert f"field '{field}'" in line, line
    return line


def cli_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m poolcheck``."""
    script = Path(sys.executable).with_name("poolcheck")
    return [str(script)] if script.exists() else [sys.executable, "-m", "poolcheck"]


def cli(*args: str, cwd: Path = ROOT, columns: int = 200, env: dict[str, str] | None = None,
        timeout: float = 300, plain: bool = True) -> subprocess.CompletedProcess[str]:
    """``poolcheck ARGS`` as a real command in a subprocess, from ``cwd``, on a terminal of
    ``columns`` columns, plain (no colour) unless ``plain=False``, importing this tree's poolcheck
    first; ``env`` adds to or overrides the environment."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    full_env = {**os.environ, **(PLAIN if plain else {}), "COLUMNS": str(columns), "PYTHONPATH": path, **(env or {})}
    return subprocess.run([*cli_command(), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full_env, check=False)


def invoke(*args: str, cwd: Path | None = None, monkeypatch: pytest.MonkeyPatch | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``poolcheck ARGS`` run in this process (typer's CliRunner: the same code from argument
    parsing to exit code, without a new interpreter), as a CompletedProcess. ``cwd`` needs
    ``monkeypatch`` (to change and restore the working folder). An exception that escapes the
    command -- a traceback, in the real command -- fails the test here."""
    from typer.testing import CliRunner

    from poolcheck.cli import app

    if cwd is not None:
        assert monkeypatch is not None, "invoke(cwd=...) needs monkeypatch"
        monkeypatch.chdir(cwd)
    result = CliRunner().invoke(app, list(args), env={**PLAIN, **(env or {})})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"poolcheck {' '.join(args)} raised {result.exception!r}") from result.exception
    return subprocess.CompletedProcess(["poolcheck", *args], result.exit_code, result.stdout, result.stderr)


class AvailablePeer:
    """The Peer protocol's bookkeeping for a planted peer that is always there: available,
    version "1", every configuration supported (subclasses add ``name`` and ``run``)."""

    def available(self) -> tuple[bool, str]:
        return True, ""

    def version(self) -> str | None:
        return "1"

    def supports(self, spec: Any, shape: tuple[int, ...], dtype: Any) -> tuple[bool, str]:
        return True, ""


def available_peer(name: str) -> Any:
    """The built-in peer ``name``, or skip the test saying why it is not available here."""
    from poolcheck.peers import resolve_peer

    peer = resolve_peer(name)
    ok, why = peer.available()
    if not ok:
        pytest.skip(f"{name} is not available: {why}")
    return peer


def drawn(strategy: Any, condition: Callable[[Any], bool], what: str, max_examples: int = 3000) -> Any:
    """A value ``strategy`` draws that meets ``condition`` (``what``, for the failure message)
    within ``max_examples`` draws, else the test fails: ``hypothesis.find`` without its shrinking,
    which a test of what the generator reaches does not need (shrinking took 85 % of such tests' CPU)."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample

    try:
        return find(strategy, condition, settings=settings(max_examples=max_examples, database=None, deadline=None,
                                                           phases=[Phase.generate],
                                                           suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        pytest.fail(f"no draw of {max_examples} reaches {what}")


def spread(seed: int, n: int, *, index_attrs: bool = True, max_dtypes: tuple[str, ...] = ("float32",),
           avg_dtypes: tuple[str, ...] = ("float32",)) -> list[tuple[Any, Any]]:
    """``n`` random (spec, x) pairs over the MaxPool/AveragePool attribute space, for checking a
    peer against the engine: ranks 1-3, kernels and strides 1-3, dilated two times in five, pads
    below the kernel (symmetric two times in five, so PyTorch can take part), every auto_pad and
    rounding, both conventions; an input of 1-2 x 1-3 x 2-7 per axis with values N(0, 10) or, for
    integer types, strictly above the type's lowest (a window of only the lowest value is an
    index-policy point). Pairs whose geometry is invalid or holds a window with no input element
    (a policy point, pinned by tests of its own) are drawn again. ``index_attrs`` also draws the
    index attributes (OpenVINO axis and index type, ONNX storage_order)."""
    import numpy as np

    from poolcheck.engines._windows import empty_windows
    from poolcheck.spec import attributes as A
    from poolcheck.spec.operators import ONNX_AUTO_PAD_NAMES
    from poolcheck.spec.shape import resolve

    rng = np.random.default_rng(seed)
    items: list[tuple[Any, Any]] = []
    while len(items) < n:
        r = int(rng.integers(1, 4))
        k = [int(v) for v in rng.integers(1, 4, r)]
        s = [int(v) for v in rng.integers(1, 4, r)]
        d = [int(v) for v in rng.integers(1, 3, r)] if rng.random() < 0.4 else [1] * r
        pb = [int(rng.integers(0, kk)) for kk in k]
        pe = list(pb) if rng.random() < 0.4 else [int(rng.integers(0, kk)) for kk in k]
        auto_pad = str(rng.choice(["explicit", "explicit", "explicit", "valid", "same_upper", "same_lower"]))
        op = "max" if rng.random() < 0.55 else "avg"
        rounding = str(rng.choice(["floor", "ceil", "ceil_torch"]))
        ceil_mode = int(rng.integers(0, 2))
        if rng.random() < 0.5:
            if op == "max" and index_attrs:
                axis = int(rng.choice([0, 0, 1, 2, -1]))
                spec = A.openvino_max_pool(k, s, pb, pe, d, rounding, auto_pad, axis, str(rng.choice(["i32", "i64"])))
            elif op == "max":
                spec = A.openvino_max_pool(k, s, pb, pe, d, rounding, auto_pad)
            else:
                spec = A.openvino_avg_pool(k, s, pb, pe, bool(rng.random() < 0.5), rounding, auto_pad)
        else:
            onnx_pad = ONNX_AUTO_PAD_NAMES[auto_pad]
            if op == "max":
                order = int(rng.integers(0, 2)) if index_attrs else 0
                spec = A.onnx_max_pool(k, s, pb + pe, d, ceil_mode, onnx_pad, order)
            else:
                spec = A.onnx_average_pool(k, s, pb + pe, d, ceil_mode, int(rng.integers(0, 2)), onnx_pad)
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *(int(v) for v in rng.integers(2, 8, r)))
        dtype = np.dtype(str(rng.choice(max_dtypes if op == "max" else avg_dtypes)))
        if dtype.kind == "f":
            x = (rng.standard_normal(shape) * 10).astype(dtype)
        else:
            info = np.iinfo(dtype)
            x = rng.integers(int(info.min) + 1, int(info.max), shape, endpoint=True).astype(dtype)
        try:
            geom = resolve(spec, x.shape)
        except ValueError:
            continue
        if empty_windows(geom) is None:
            items.append((spec, x))
    return items


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder ``build`` fills once per test session, shared by the pytest-xdist workers: a
    module-scoped fixture runs again on every worker that takes one of its module's tests (the
    HTML report's producers, 19 s of real commands, ran on both). The first worker builds under a
    lock in the session's shared temporary root; the others wait and reuse what it wrote."""
    import fcntl

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's root, shared by its workers
    folder = root / f"shared-{name}"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / ".built").touch()
    return folder


def onnx_reference_run(op: str, x: Any, *, outputs: int = 1, **attrs: Any) -> list[Any]:
    """``op`` (opset 22) run plainly by ``onnx.reference.ReferenceEvaluator`` on a model built with
    ``onnx.helper`` -- no poolcheck in between -- returning its ``outputs`` outputs (2: a MaxPool's
    values and indices); skips the test without onnx. The runtime's own exceptions propagate."""
    pytest.importorskip("onnx.reference")
    import warnings

    import numpy as np
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    names = ["y", "i"][:outputs]
    node = helper.make_node(op, ["x"], names, **attrs)
    elem = helper.np_dtype_to_tensor_dtype(np.asarray(x).dtype)  # the input's own type, bfloat16 included
    outs = [helper.make_tensor_value_info(n, TensorProto.INT64 if n == "i" else elem, None) for n in names]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, list(x.shape))], outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return list(ReferenceEvaluator(model).run(None, {"x": x}))
