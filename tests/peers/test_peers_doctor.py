"""``poolcheck doctor`` through the real CLI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from poolcheck.cli import app
from poolcheck.engines import c_engine_status
from poolcheck.peers import BUILTIN_PEERS, resolve_peer
from poolcheck.peers.registry import TAKES_ARGUMENT

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
    plain = [name for name in BUILTIN_PEERS if name not in TAKES_ARGUMENT]  # onnx-backend is listed with its argument
    assert set(plain) <= set(peers)
    for name in plain:
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


def test_doctor_says_why_a_plugin_is_unavailable(tmp_path, monkeypatch) -> None:
    dist = tmp_path / "broken_accel-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-accel\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[poolcheck.peers]\nbroken_accel = broken_accel_missing.peer\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = runner.invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    row = {p["name"]: p for p in json.loads(result.stdout)["peers"]}["broken_accel"]
    assert row["kind"] == "plugin" and not row["available"]
    assert "failed to load" in row["reason"] and "broken_accel_missing" in row["reason"]
    table = runner.invoke(app, ["doctor"], terminal_width=250)
    assert table.exit_code == 0 and "broken_accel" in table.output and "unavailable" in table.output
