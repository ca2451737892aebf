"""Plugins: a user's module named by file path, dotted module path or entry point; the worked
example in examples/my_peer.py; unknown and broken names."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from support import ROOT

from poolcheck.api import run_spec
from poolcheck.errors import AttributeValueError, PoolcheckError
from poolcheck.peers import (
    PeerLoadError,
    PeerNotFoundError,
    PeerSpecError,
    all_peers,
    call_peer,
    call_peer_many,
    resolve_peer,
    resolve_peers,
)
from poolcheck.peers.plugin import ModulePeer
from poolcheck.spec import attributes as A

EXAMPLE = ROOT / "examples" / "my_peer.py"

# A plugin that delegates to poolcheck's own API (so it agrees with the engine by design),
# with a max_pool only.
MAX_ONLY = textwrap.dedent(
    """
    import poolcheck
    __version__ = "0.3"

    def max_pool(x, kernel, strides, pads_begin=None, pads_end=None, dilations=None,
                 rounding_type="floor", auto_pad="explicit", axis=0, index_element_type="i64"):
        return poolcheck.max_pool(x, kernel, strides, pads_begin, pads_end, dilations,
                                  rounding_type, auto_pad, axis, index_element_type)
    """
)


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on sys.path holding a package ``acme_kernels`` with a plugin module."""
    pkg = tmp_path / "acme_kernels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "pool.py").write_text(MAX_ONLY)
    (pkg / "empty.py").write_text("X = 1\n")
    (pkg / "broken.py").write_text("import acme_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("acme_kernels")]:
        del sys.modules[name]


def _spec_and_input() -> tuple[A.PoolSpec, np.ndarray]:
    spec = A.openvino_max_pool([2, 2], [1, 2], [1, 0], [0, 1], rounding_type="ceil_torch", axis=1)
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4)).astype(np.float32)
    return spec, x


def test_dotted_module_path(plugin_dir: Path) -> None:
    (peer,) = resolve_peers(["acme_kernels.pool"])
    assert isinstance(peer, ModulePeer)
    assert peer.name == "acme_kernels.pool" and peer.version() == "0.3" and peer.ref == "acme_kernels.pool"
    spec, x = _spec_and_input()
    result = call_peer(peer, spec, x, isolated=False)
    assert result.status == "ok", result.verdict
    values, indices = run_spec(spec, x)
    np.testing.assert_array_equal(result.output.values, values)
    np.testing.assert_array_equal(result.output.indices, indices)
    # A max-only module declines averages, naming what it lacks.
    avg = A.openvino_avg_pool([2, 2], [1, 1])
    declined = call_peer(peer, avg, x, isolated=False)
    assert declined.status == "declined" and "defines no avg_pool" in declined.message


def test_file_path_and_isolated_worker(tmp_path: Path) -> None:
    path = tmp_path / "team_peer.py"
    path.write_text(MAX_ONLY)
    (peer,) = resolve_peers([str(path)])
    assert peer.name == "team_peer" and peer.ref == str(path)
    spec, x = _spec_and_input()
    # The worker re-imports the file by its path.
    result = call_peer(peer, spec, x, isolated=True, timeout=60)
    assert result.status == "ok", result.verdict
    np.testing.assert_array_equal(result.output.values, run_spec(spec, x)[0])


def test_onnx_specs_the_keywords_cannot_express_are_declined(plugin_dir: Path) -> None:
    peer = resolve_peer("acme_kernels.pool")
    x = np.zeros((1, 1, 4, 4), np.float32)
    ok, why = peer.supports(A.onnx_max_pool([2, 2], storage_order=1), x.shape, x.dtype)
    assert not ok and "storage_order=1" in why
    ok, why = peer.supports(A.onnx_max_pool([2, 2], pads=[1, 0, 0, 1], ceil_mode=1), x.shape, x.dtype)
    assert ok, why
    example = resolve_peer(str(EXAMPLE))
    ok, why = example.supports(A.onnx_average_pool([2, 2], dilations=[2, 1]), x.shape, x.dtype)
    assert not ok and "dilations" in why


def test_unknown_names_raise_clear_errors(plugin_dir: Path) -> None:
    with pytest.raises(PeerNotFoundError, match=r"unknown peer 'no_such_runtime'.*onnxruntime, openvino"):
        resolve_peers(["no_such_runtime"])
    with pytest.raises(PeerNotFoundError, match="no such file"):
        resolve_peers(["missing/dir/peer.py"])
    with pytest.raises(PeerLoadError, match="defines neither max_pool nor avg_pool"):
        resolve_peer("acme_kernels.empty")
    # A missing dependency inside an existing module is a load error, not "unknown peer".
    with pytest.raises(PeerLoadError, match="acme_missing_dependency"):
        resolve_peer("acme_kernels.broken")
    # In a list, a plugin that fails to load becomes that peer's crash; the others still run.
    (empty, broken, ort) = resolve_peers(["acme_kernels.empty", "acme_kernels.broken", "onnxruntime"])
    assert empty.status == "crash" and "defines neither" in empty.reason
    assert broken.status == "crash" and "acme_missing_dependency" in broken.reason
    assert ort.name == "onnxruntime"
    assert issubclass(PeerNotFoundError, PoolcheckError) and issubclass(PeerLoadError, PoolcheckError)


def test_names_are_deduplicated_and_must_be_unique(tmp_path: Path) -> None:
    peers = resolve_peers(["onnxruntime", " onnxruntime ", "", "onnx_reference"])
    assert [p.name for p in peers] == ["onnxruntime", "onnx_reference"]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "twin.py").write_text(MAX_ONLY)
    with pytest.raises(PeerLoadError, match="two peers are named 'twin'"):
        resolve_peers([str(tmp_path / "a" / "twin.py"), str(tmp_path / "b" / "twin.py")])
    clash = tmp_path / "onnxruntime.py"  # a plugin is never reported under a built-in peer's name
    clash.write_text(MAX_ONLY)
    with pytest.raises(PeerSpecError, match="the name 'onnxruntime' is a built-in peer's"):
        resolve_peers([str(clash)])


def test_entry_point_plugins(plugin_dir: Path) -> None:
    dist = plugin_dir / "acme_kernels-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-kernels\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[poolcheck.peers]\nacme = acme_kernels.pool\nacme_broken = acme_kernels.broken\n"
    )
    (peer,) = resolve_peers(["acme"])
    assert peer.name == "acme" and peer.ref == "acme"
    spec, x = _spec_and_input()
    assert call_peer(peer, spec, x, isolated=False).status == "ok"
    listed = {p.name: p for p in all_peers()}
    assert {"onnxruntime", "openvino", "torch", "onnx_reference", "acme", "acme_broken"} <= set(listed)
    ok, why = listed["acme_broken"].available()
    assert not ok and "acme_missing_dependency" in why
    with pytest.raises(PeerLoadError, match="failed to load"):
        resolve_peer("acme_broken")
    (failed,) = resolve_peers(["acme_broken"])
    assert failed.status == "crash" and "failed to load" in failed.reason


def test_worked_example_agrees_with_engine() -> None:
    """examples/my_peer.py is an independent loop implementation: it must match the engine on
    every configuration both accept, and reject where the engine rejects."""
    (peer,) = resolve_peers([str(EXAMPLE)])
    assert peer.name == "my_peer" and peer.version() == "1.0"
    rng = np.random.default_rng(7)
    items = []
    for _ in range(150):
        r = int(rng.integers(1, 4))
        k = [int(v) for v in rng.integers(1, 4, r)]
        s = [int(v) for v in rng.integers(1, 4, r)]
        pb = [int(rng.integers(0, kk + 2)) for kk in k]
        pe = [int(rng.integers(0, kk + 2)) for kk in k]
        auto_pad = str(rng.choice(["explicit", "valid", "same_upper", "same_lower"]))
        rounding = str(rng.choice(["floor", "ceil", "ceil_torch"]))
        if rng.random() < 0.5:
            d = [int(v) for v in rng.integers(1, 3, r)]
            spec = A.openvino_max_pool(k, s, pb, pe, d, rounding, auto_pad, int(rng.integers(-1, 3)),
                                       str(rng.choice(["i32", "i64"])))
        else:
            spec = A.openvino_avg_pool(k, s, pb, pe, bool(rng.random() < 0.5), rounding, auto_pad)
        x = rng.standard_normal((1, 2, *(int(v) for v in rng.integers(1, 6, r)))).astype(np.float32)
        if rng.random() < 0.3:
            x.flat[int(rng.integers(0, x.size))] = np.nan
        items.append((spec, x))
    compared = rejected = 0
    for (spec, x), res in zip(items, call_peer_many(peer, items, isolated=False)):
        try:
            values, indices = run_spec(spec, x)
        except AttributeValueError:
            assert res.status == "rejects", f"{spec.describe()}: engine rejects, example {res.verdict}"
            rejected += 1
            continue
        assert res.status == "ok", f"{spec.describe()}: {res.verdict}"
        np.testing.assert_allclose(res.output.values, values, rtol=1e-6, atol=1e-6, err_msg=spec.describe())
        if indices is not None:
            assert res.output.indices.dtype == indices.dtype
            np.testing.assert_array_equal(res.output.indices, indices, err_msg=spec.describe())
        compared += 1
    assert compared >= 100 and rejected >= 5
