"""The family peers (LpPool, global pooling, MaxUnpool, adaptive pooling) through poolcheck's peer
interface: each runtime adapter against both engines, what each declines and why, the Lp rule's
bound, and ``poolcheck run --peers`` on family cases.

The adapters are checked against the runtimes called plainly in test_family_runtimes.py; here the
point is that the interface carries each configuration (and MaxUnpool's indices) to the runtime
unchanged, and that the runner judges the answer with the right rule."""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar

import numpy as np
import pytest

from poolcheck.api_family import run_family
from poolcheck.engines import family_numpy, numpy_engine
from poolcheck.judgement import close_values, family_tolerance
from poolcheck.peers.base import PeerOutput
from poolcheck.peers.isolation import call_peer_family
from poolcheck.spec import operators
from tests.support import available_peer, cli

ENGINES = ("numpy", "c")


def _x(seed: int, shape: tuple[int, ...] = (2, 3, 5, 6), positive: bool = False) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return np.abs(x) + 0.1 if positive else x


def _unpool_indices(seed: int, x_shape: tuple[int, ...], out_shape: tuple[int, ...], per_plane: bool) -> np.ndarray:
    """Distinct flat indices into the output; ``per_plane``: each stays in its own (n, c) plane."""
    rng = np.random.default_rng(seed)
    n, c = x_shape[:2]
    plane, count = int(np.prod(out_shape[2:])), int(np.prod(x_shape[2:]))
    if not per_plane:
        return rng.permutation(int(np.prod(out_shape)))[:n * c * count].reshape(x_shape).astype(np.int64)
    rows = [rng.permutation(plane)[:count] + k * plane for k in range(n * c)]
    return np.stack(rows).reshape(x_shape).astype(np.int64)


#: (operator version, attributes, input shape, positive input); each runs on the peers listed.
CONFIGS: dict[str, tuple[str, dict[str, Any], tuple[int, ...], bool]] = {
    "lp-p2-pads": ("LpPool-22", {"kernel_shape": [2, 3], "p": 2, "pads": [1, 0, 1, 1]}, (2, 3, 5, 6), False),
    "lp-p3-strides": ("LpPool-22", {"kernel_shape": [2, 2], "p": 3, "strides": [2, 1]}, (2, 3, 5, 6), True),
    "lp-1d-p1": ("LpPool-22", {"kernel_shape": [3], "p": 1}, (2, 3, 7), True),
    "global-avg-3d": ("GlobalAveragePool-22", {}, (2, 3, 4, 3, 5), False),
    "global-max-2d": ("GlobalMaxPool-22", {}, (2, 3, 5, 6), False),
    "global-lp-p2": ("GlobalLpPool-22", {"p": 2}, (2, 3, 5, 6), False),
    "unpool": ("MaxUnpool-22", {"kernel_shape": [2, 2], "strides": [2, 2]}, (1, 2, 3, 3), False),
    "unpool-output-shape": ("MaxUnpool-22", {"kernel_shape": [2, 2], "strides": [2, 2], "output_shape": [1, 2, 7, 7]},
                            (1, 2, 3, 3), False),
    "adaptive-avg": ("AdaptiveAvgPool-8", {"output_shape": [3, 4]}, (2, 3, 7, 5), False),
    "adaptive-max-i64": ("AdaptiveMaxPool-8", {"output_shape": [3, 4]}, (2, 3, 7, 5), False),
    "adaptive-max-i32": ("AdaptiveMaxPool-8", {"output_shape": [4, 2, 3], "index_element_type": "i32"},
                         (1, 2, 7, 5, 4), False),
}

#: What each peer computes as the text says (the rest it declines or diverges on; see below).
AGREES = {
    "onnxruntime": ["lp-p2-pads", "lp-p3-strides", "lp-1d-p1", "global-avg-3d", "global-max-2d", "unpool",
                    "unpool-output-shape"],
    "onnx_reference": ["lp-p2-pads", "lp-p3-strides", "lp-1d-p1", "global-max-2d", "global-avg-3d", "unpool"],
    "openvino-onnx": ["lp-p2-pads", "lp-p3-strides", "lp-1d-p1", "global-avg-3d", "global-max-2d", "global-lp-p2"],
    "tract": ["global-avg-3d", "global-max-2d"],
    "torch": ["lp-p3-strides", "lp-1d-p1", "global-avg-3d", "global-max-2d", "global-lp-p2", "unpool",
              "unpool-output-shape", "adaptive-avg", "adaptive-max-i64"],
    "openvino": ["adaptive-avg", "adaptive-max-i32"],
    "jax": ["global-avg-3d", "global-max-2d", "global-lp-p2"],
}


def _item(key: str, seed: int = 0, per_plane: bool = True) -> tuple[Any, np.ndarray, np.ndarray | None]:
    name, attrs, shape, positive = CONFIGS[key]
    spec = operators.parse(name, attrs)
    x = _x(seed, shape, positive)
    indices = None
    if spec.op == "unpool":
        out = run_family(spec, x, indices=np.zeros(shape, np.int64))[0].shape
        indices = _unpool_indices(seed, shape, out, per_plane)
    return spec, x, indices


def _agrees(spec: Any, x: np.ndarray, indices: np.ndarray | None, out: PeerOutput, engine: str) -> None:
    values, where = run_family(spec, x, engine=engine, indices=indices)
    assert out.values.shape == values.shape and out.values.dtype == values.dtype
    tol = family_tolerance(spec, x, values, numpy_engine, family_numpy)
    assert close_values(values, out.values, tol).all(), (values, out.values)
    if where is not None:
        assert out.indices is not None and out.indices.dtype == where.dtype
        assert np.array_equal(out.indices, where)


@pytest.mark.parametrize(("peer_name", "key"), [(p, k) for p, keys in AGREES.items() for k in keys])
def test_each_peer_agrees_with_both_engines_where_the_runtime_follows_the_text(peer_name: str, key: str) -> None:
    peer = available_peer(peer_name)
    spec, x, indices = _item(key)
    (result,) = call_peer_family(peer, [(spec, x, indices)], isolated=False)
    assert result.status == "ok", result.message
    assert result.output is not None
    for engine in ENGINES:
        _agrees(spec, x, indices, result.output, engine)


@pytest.mark.parametrize(("peer_name", "key", "reason"), [
    ("openvino", "lp-p2-pads", "OpenVINO's opsets have no LpPool"),
    ("openvino", "global-avg-3d", "no GlobalAveragePool"),
    ("openvino", "unpool", "no MaxUnpool"),
    ("tract", "lp-p2-pads", "tract has no LpPool"),
    ("tract", "unpool", "tract has no MaxUnpool"),
    ("openvino-onnx", "unpool", "frontend has no MaxUnpool"),
    ("onnxruntime", "adaptive-avg", "does not take AdaptiveAvgPool"),
    ("torch", "lp-p2-pads", "torch lp_pool has no padding"),
    ("torch", "adaptive-max-i32", "int64 indices only"),
    ("jax", "lp-p2-pads", "jax has no LpPool"),
    ("jax", "unpool", "jax has no MaxUnpool"),
    ("jax", "adaptive-max-i64", "jax has no AdaptiveMaxPool"),
])
def test_a_peer_declines_what_its_runtime_cannot_express(peer_name: str, key: str, reason: str) -> None:
    peer = available_peer(peer_name)
    spec, x, indices = _item(key)
    (result,) = call_peer_family(peer, [(spec, x, indices)], isolated=False)
    assert result.status == "declined" and reason in result.message, result


def test_torch_declines_an_index_that_leaves_its_plane() -> None:
    peer = available_peer("torch")
    spec, x, indices = _item("unpool", per_plane=False)
    (result,) = call_peer_family(peer, [(spec, x, indices)], isolated=False)
    assert result.status == "declined" and "own (n, c) plane" in result.message


def test_torch_runs_the_family_in_bfloat16() -> None:
    """The torch peer hands bfloat16 to PyTorch through its bits (torch.from_numpy cannot read
    ml_dtypes): before, every bfloat16 family configuration came back as a torch 'rejection'
    (TypeError: can't convert np.ndarray of type ml_dtypes.bfloat16). Values: the reference's."""
    import ml_dtypes

    peer = available_peer("torch")
    x = np.array([[[1.0, 2.5, -3.0, 4.0], [0.5, -0.25, 8.0, 1.0]]], dtype=ml_dtypes.bfloat16)
    pooled = np.array([[[2.5, 4.0], [0.5, 8.0]]], dtype=ml_dtypes.bfloat16)
    items = [(operators.parse("GlobalAveragePool-22", {}), x, None), (operators.parse("GlobalMaxPool-22", {}), x, None),
             (operators.parse("LpPool-22", {"kernel_shape": [2], "p": 2}), x, None),
             (operators.parse("MaxUnpool-22", {"kernel_shape": [2], "strides": [2]}), pooled,
              np.array([[[1, 3], [4, 6]]]))]
    for (spec, arr, indices), result in zip(items, call_peer_family(peer, items, isolated=False), strict=True):
        assert result.status == "ok", (spec.op, result.message)
        expected = run_family(spec, arr, indices=indices)[0]
        assert result.output.values.dtype == expected.dtype
        tol = family_tolerance(spec, arr, expected, numpy_engine, family_numpy)
        assert close_values(expected, result.output.values, tol).all(), (spec.op, result.output.values, expected)


def test_runtime_gaps_are_rejections_at_opset_22() -> None:
    spec, x, _ = _item("global-lp-p2")
    for name, says in (("onnxruntime", "GlobalLpPool(22)"), ("onnx_reference", "GlobalLpPool")):
        (result,) = call_peer_family(available_peer(name), [(spec, x, None)], isolated=False)
        assert result.status == "rejects" and says in result.message
    spec, x, _ = _item("adaptive-max-i64")
    (result,) = call_peer_family(available_peer("openvino"), [(spec, x, None)], isolated=False)
    assert result.status == "rejects"  # OpenVINO CPU refuses i64 AdaptiveMaxPool indices


class _PoolingOnly:
    """A plugin written for MaxPool/AveragePool: it must never be handed a family configuration."""

    name = "pooling-only"
    calls = 0

    def available(self) -> tuple[bool, str]:
        return True, ""

    def version(self) -> str | None:
        return None

    def supports(self, spec: Any, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        type(self).calls += 1
        return True, ""

    def run(self, spec: Any, x: np.ndarray) -> PeerOutput:
        type(self).calls += 1
        return PeerOutput(x)


class _Unpooler(_PoolingOnly):
    """Opts in to MaxUnpool; records the indices it is handed."""

    name = "unpooler"
    family_ops = ("unpool",)
    seen: ClassVar[list[Any]] = []

    def run(self, spec: Any, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:  # type: ignore[override]
        type(self).seen.append(indices)
        return PeerOutput(run_family(spec, x, indices=indices)[0])


@pytest.mark.parametrize("isolated", [False, True])
def test_a_peer_without_family_ops_is_never_called_and_indices_reach_an_opted_in_peer(isolated: bool) -> None:
    spec, x, indices = _item("unpool")
    _PoolingOnly.calls = 0
    (result,) = call_peer_family(_PoolingOnly(), [(spec, x, indices)], isolated=isolated)
    assert result.status == "declined" and "family_ops" in result.message and _PoolingOnly.calls == 0
    _Unpooler.seen = []
    (result,) = call_peer_family(_Unpooler(), [(spec, x, indices)], isolated=False)
    assert result.status == "ok" and np.array_equal(_Unpooler.seen[0], indices)
    gspec, gx, _ = _item("global-max-2d")
    (result,) = call_peer_family(_Unpooler(), [(gspec, gx, None)], isolated=False)
    assert result.status == "declined"


@pytest.mark.parametrize("p", [1, 2, 3, 4])
def test_the_lp_rule_holds_a_float32_runtime_and_catches_a_missing_root(p: int) -> None:
    """A float32 subject (|x|^p and its sum in float32, the root in float32) lies within the Lp
    rule; the sum without the root, or one float32 step too coarse, does not."""
    spec = operators.parse("LpPool-22", {"kernel_shape": [3, 3], "p": p, "pads": [1, 1, 1, 1]})
    x = _x(p, (2, 2, 9, 8)) * 3
    expected = run_family(spec, x)[0]
    tol = family_tolerance(spec, x, expected, numpy_engine, family_numpy)
    assert tol is not None
    padded = np.pad(np.abs(x), [(0, 0), (0, 0), (1, 1), (1, 1)])
    sums = np.zeros(expected.shape, np.float32)
    for i in range(3):
        for j in range(3):
            sums += padded[:, :, i:i + expected.shape[2], j:j + expected.shape[3]] ** np.float32(p)
    subject = (sums ** np.float32(1.0 / p)).astype(np.float32)
    assert close_values(expected, subject, tol).all()
    if p > 1:
        assert not close_values(expected, sums, tol).all()  # p-th power without the root
    coarse = (subject.astype(np.float64) * (1 + 40 * np.finfo(np.float32).eps)).astype(np.float32)
    assert not close_values(expected, coarse, tol).all()


def test_exact_family_ops_get_no_tolerance() -> None:
    for key in ("global-max-2d", "adaptive-max-i64", "unpool"):
        spec, x, indices = _item(key)
        values = run_family(spec, x, indices=indices)[0]
        assert family_tolerance(spec, x, values, numpy_engine, family_numpy) is None


def test_run_judges_family_cases_on_peers_through_the_cli(tmp_path: Any) -> None:
    case_file = tmp_path / "family.yaml"
    case_file.write_text("""schema: poolcheck.case/1
cases:
- id: lp-odd-negative
  op: LpPool-22
  attributes: {kernel_shape: [2], p: 3}
  dtype: float32
  input: [[[-1.0, 2.0, -3.0]]]
  expected: {values: [[[2.0800838, 3.2710664]]]}
  tolerance: {rtol: 1.0e-6, atol: 0}
- id: adaptive-avg
  op: AdaptiveAvgPool-8
  attributes: {output_shape: [2]}
  dtype: float32
  input: [[[1.0, 2.0, 4.0]]]
  expected: {values: [[[1.5, 3.0]]]}
""")
    done = cli("run", str(case_file), "--peers", "onnxruntime,torch,openvino", "--json")
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    checks = {(c["case_id"], k["runner"]): k for c in result["cases"] for k in c["checks"]}
    assert checks[("lp-odd-negative", "onnxruntime")]["verdict"] == "pass"
    # torch raises x, not |x|, to the p-th power: (-1)^3 + 2^3 = 7, 7^(1/3) = 1.913
    assert checks[("lp-odd-negative", "torch")]["verdict"] == "fail"
    assert checks[("lp-odd-negative", "openvino")]["verdict"] == "skip"
    assert checks[("adaptive-avg", "openvino")]["verdict"] == "pass"
    assert checks[("adaptive-avg", "torch")]["verdict"] == "pass"
    assert checks[("adaptive-avg", "onnxruntime")]["verdict"] == "skip"


class _Crashes(_PoolingOnly):
    """Opts in to GlobalMaxPool and kills its process when asked for it."""

    name = "family-crashes"
    family_ops = ("global_max",)

    def run(self, spec: Any, x: np.ndarray) -> PeerOutput:
        os._exit(3)


def test_a_family_call_that_kills_its_worker_is_a_crash_and_the_next_call_runs() -> None:
    spec, x, _ = _item("global-max-2d")
    (result,) = call_peer_family(_Crashes(), [(spec, x, None)], isolated=True, timeout=120)
    assert result.status == "crash", result
    peer = _Unpooler()  # a fresh worker for the next peer: the run goes on
    uspec, ux, uind = _item("unpool")
    (again,) = call_peer_family(peer, [(uspec, ux, uind)], isolated=True, timeout=120)
    assert again.status == "ok", again


def test_a_family_configuration_in_a_pooling_batch_takes_the_family_path() -> None:
    """``call_peer_many`` with ``(FamilySpec, x)``: run as a family item (never handed to run_many),
    declined for a peer without the op, run for one that has it."""
    from poolcheck.peers.isolation import call_peer_many

    spec, x, _ = _item("global-avg-3d")
    ort = available_peer("onnxruntime")
    pooled, declined = call_peer_many(ort, [(spec, x), (spec, x)], isolated=False), \
        call_peer_many(_PoolingOnly(), [(spec, x)], isolated=False)
    assert [r.status for r in pooled] == ["ok", "ok"] and declined[0].status == "declined"
