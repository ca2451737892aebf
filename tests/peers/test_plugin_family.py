"""A plugin module takes the rest of the family by defining the public function of each op's name
(``onnx_lp_pool``, ``onnx_max_unpool``, ``adaptive_max_pool`` ...; docs/peers.md): poolcheck
calls it with that function's keywords, MaxUnpool's I as its second argument, and a family fuzz
campaign finds a planted kernel's bug through it (tests/planted_kernels/k18, k19)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support import KERNELS, cli

from poolcheck.api_family import run_family
from poolcheck.peers import resolve_peer
from poolcheck.peers.isolation import call_peer_family
from poolcheck.results import Signature
from poolcheck.spec.operators import parse

FAITHFUL = KERNELS / "faithful_family.py"
K18 = KERNELS / "k18_lp_pads_ignored_rank4.py"
K19 = KERNELS / "k19_unpool_first_write_wins.py"
ALL_OPS = ("lp", "global_avg", "global_max", "global_lp", "unpool", "adaptive_avg", "adaptive_max")


def _items() -> list[tuple[object, np.ndarray, np.ndarray | None]]:
    rng = np.random.default_rng(3)
    x4 = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    x3 = rng.standard_normal((1, 2, 3)).astype(np.float32)
    unpool_i = np.array([[[0, 3, 5], [1, 2, 4]]], dtype=np.int64) + np.array([0, 6]).reshape(1, 2, 1)
    return [
        (parse("LpPool-22", {"kernel_shape": [2, 3], "p": 3, "pads": [1, 0, 1, 2], "ceil_mode": 1}), x4, None),
        (parse("LpPool-11", {"kernel_shape": [2, 2], "strides": [2, 1]}), x4, None),  # an older version too
        (parse("GlobalAveragePool-22", {}), x4, None),
        (parse("GlobalMaxPool-1", {}), x4, None),
        (parse("GlobalLpPool-2", {"p": 1}), x4, None),
        (parse("MaxUnpool-22", {"kernel_shape": [2], "strides": [2]}), x3, unpool_i),
        (parse("MaxUnpool-22", {"kernel_shape": [2], "strides": [2], "output_shape": [1, 2, 7]}), x3, unpool_i),
        (parse("AdaptiveAvgPool-8", {"output_shape": [3, 3]}), x4, None),
        (parse("AdaptiveMaxPool-8", {"output_shape": [2, 3], "index_element_type": "i32"}), x4, None),
    ]


@pytest.mark.parametrize("isolated", [False, True], ids=["in-process", "isolated"])
def test_a_faithful_family_plugin_agrees_bit_for_bit(isolated: bool) -> None:
    peer = resolve_peer(str(FAITHFUL))
    assert set(peer.family_ops) == set(ALL_OPS)
    items = _items()
    results = call_peer_family(peer, items, isolated=isolated, timeout=60)  # type: ignore[arg-type]
    for (spec, x, ind), result in zip(items, results):
        assert result.status == "ok", (spec.describe(), result.verdict)  # type: ignore[attr-defined]
        values, indices = run_family(spec, x, indices=ind)  # type: ignore[arg-type]
        assert np.array_equal(result.output.values, values), spec.describe()  # type: ignore[attr-defined]
        if indices is not None:
            assert np.array_equal(result.output.indices, indices) and result.output.indices.dtype == np.int32


def test_an_op_without_its_function_is_declined_naming_the_function() -> None:
    peer = resolve_peer(str(K19))  # onnx_max_unpool only
    assert peer.family_ops == ("unpool",)
    spec, x, _ = _items()[0]
    assert peer.supports(spec, x.shape, x.dtype) == (False, f"module {peer.module.__name__} defines no onnx_lp_pool")
    [result] = call_peer_family(peer, [(spec, x, None)], isolated=False)  # type: ignore[list-item]
    assert result.status == "declined" and "does not take LpPool" in result.message
    lp_only = resolve_peer(str(K18))
    assert lp_only.family_ops == ("lp", "global_lp")
    [result] = call_peer_family(lp_only, [(parse("GlobalMaxPool-22", {}), x, None)], isolated=False)
    assert result.status == "declined"


def test_a_planted_family_kernel_is_found_by_a_family_campaign(tmp_path: Path) -> None:
    """``fuzz --ops lp`` on k18 (LpPool pads dropped on rank-4 inputs): one new divergence, named."""
    report = tmp_path / "report"
    proc = cli("fuzz", "--no-progress", "--ops", "lp", "--peers", str(K18), "--oracles", "peers", "--seed", "1",
               "--no-isolation", "--no-bundled-known", "--exit-first", "--time-budget", "60s",
               "--save-cases", str(tmp_path / "finds"), "--database", str(tmp_path / "db"), "--report-dir", str(report))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    new = json.loads((report / "result.json").read_text())["fuzz"]["new"]
    assert len(new) == 1, new
    assert Signature.parse(new[0]).detail == "pads:ignored", new


def test_a_faithful_family_plugin_stays_silent_in_a_family_campaign(tmp_path: Path) -> None:
    report = tmp_path / "report"
    proc = cli("fuzz", "--no-progress", "--ops", ",".join(ALL_OPS), "--peers", str(FAITHFUL), "--oracles", "peers",
               "--seed", "1", "--no-isolation", "--no-bundled-known", "--max-examples", "150",
               "--save-cases", str(tmp_path / "finds"), "--database", str(tmp_path / "db"), "--report-dir", str(report))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((report / "result.json").read_text())
    assert doc["fuzz"]["new"] == []


def test_a_family_function_that_raises_or_answers_nonsense(tmp_path: Path) -> None:
    """Raising is the plugin's refusal (rejects); strings are no pooling output (invalid); an
    AdaptiveMaxPool answer without indices is judged as one (a note says so)."""
    plugin = tmp_path / "odd_family.py"
    plugin.write_text(
        "import numpy as np\n"
        "def onnx_global_max_pool(x):\n    raise ValueError('no global max here')\n"
        "def onnx_global_average_pool(x):\n    return [['a']]\n"
        "def adaptive_max_pool(x, output_shape, index_element_type='i64'):\n"
        "    return np.zeros(x.shape[:2] + tuple(output_shape), x.dtype)\n")
    peer = resolve_peer(str(plugin))
    x = np.ones((1, 1, 4, 4), dtype=np.float32)
    results = call_peer_family(peer, [(parse("GlobalMaxPool-22", {}), x, None), (parse("GlobalAveragePool-22", {}), x, None),
                                      (parse("AdaptiveMaxPool-8", {"output_shape": [2, 2]}), x, None)], isolated=True)
    assert results[0].status == "rejects" and "no global max here" in results[0].message
    assert results[1].status == "invalid"
    assert results[2].status == "ok" and results[2].output.indices is None
    assert results[2].output.notes == ["adaptive_max_pool returned no indices"]
