"""``poolcheck doctor`` through the real CLI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from poolcheck.cli import app
from poolcheck.engines import c_engine_status
from poolcheck.peers import BUILTIN_PEERS, resolve_peer

runner = CliRunner()


def test_doctor_json_lists_engines_and_peers() -> None:
    result = runner.invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    engines = {e["name"]: e for e in report["engines"]}
    assert engines["numpy"]["available"] and engines["numpy"]["version"]
    c_module, c_reason = c_engine_status()
    assert engines["c"]["available"] == (c_module is not None)
    assert engines["c"]["reason"] == c_reason
    peers = {p["name"]: p for p in report["peers"]}
    assert set(BUILTIN_PEERS) <= set(peers)
    for name in BUILTIN_PEERS:
        ok, why = resolve_peer(name).available()
        row = peers[name]
        assert row["available"] == ok and row["kind"] == "built-in"
        if ok:
            assert row["version"] == resolve_peer(name).version()
        else:
            assert row["reason"] == why and row["version"] is None


def test_doctor_table() -> None:
    result = runner.invoke(app, ["doctor"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for name in ("numpy", "onnxruntime", "openvino", "torch", "onnx_reference"):
        assert name in result.output
    import onnxruntime

    assert onnxruntime.__version__ in result.output
