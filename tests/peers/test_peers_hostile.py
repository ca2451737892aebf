"""Hostile plugins through the real ``poolcheck run --peers PLUGIN --json`` command: a peer that
prints, returns garbage, writes into its input, or exits / crashes / raises / hangs while it is
imported never corrupts the JSON, never ends the run, and never turns it into exit 0."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from support import SEED_FILE, cli

from poolcheck.peers import call_peer, call_peer_many, resolve_peers
from poolcheck.peers.base import PeerOutput, validate_output
from poolcheck.spec import attributes as A

SEEDS = SEED_FILE

GOOD_MAX = """
import numpy as np
import poolcheck
def max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad, axis,
             index_element_type):
    return poolcheck.max_pool(np.array(x), kernel, strides, pads_begin, pads_end, dilations, rounding_type,
                              auto_pad, axis, index_element_type)
"""

CHATTY = """
import os
print("chatter at import")
os.write(1, b"fd1 chatter at import\\n")
""" + GOOD_MAX.replace("    return poolcheck", "    print('chatter in call'); os.write(1, b'fd1 in call\\\\n')\n    return poolcheck")

#: A max_pool whose answer is ``BODY`` (given ``v, i`` the correct values and indices).
BAD_OUTPUT = GOOD_MAX.replace("    return poolcheck.max_pool(", "    v, i = poolcheck.max_pool(") + "    return {body}\n"

WRITES_INPUT = GOOD_MAX.replace("    return poolcheck", "    x[...] = 0\n    return poolcheck")


def _run(tmp_path: Path, *peers: str, timeout: str = "20") -> tuple[subprocess.CompletedProcess[str], dict]:
    proc = cli("run", str(SEEDS), "--json", "--peers", ",".join(peers), "--peer-timeout", timeout, cwd=tmp_path,
               plain=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, json.loads(proc.stdout)  # stdout is exactly the JSON document


def _peer_checks(result: dict, runner: str) -> list[dict]:
    checks = [c for case in result["cases"] for c in case["checks"] if c["runner"] == runner]
    assert checks, f"no checks for {runner}"
    return checks


def _plugin(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return str(path)


def test_a_chatty_plugin_never_reaches_stdout(tmp_path: Path) -> None:
    proc, result = _run(tmp_path, _plugin(tmp_path, "chatty", CHATTY))
    assert all(c["verdict"] == "pass" for c in _peer_checks(result, "chatty"))
    assert "chatter at import" in proc.stderr and "fd1 in call" in proc.stderr
    assert "chatter" not in proc.stdout


MALFORMED = [
    ("v.astype(np.complex64), i", "dtype complex64, not a real numeric dtype"),
    ("v.astype(str), i", "not a real numeric dtype"),
    ("np.zeros(v.shape, dtype=[('a', 'f4'), ('b', 'i4')]), i", "a structured array"),
    ("v.astype(object), i", "dtype object"),
    ("v.reshape(-1), i", "rank 1"),
    ("v, i.astype(np.float32)", "indices has dtype float32, not an integer dtype"),
]


@pytest.mark.parametrize(("body", "why"), MALFORMED)
def test_malformed_output_is_an_invalid_peer_result(tmp_path: Path, body: str, why: str) -> None:
    """Through the API, in-process (the command below runs each in an isolated worker)."""
    path = _plugin(tmp_path, "garbage", BAD_OUTPUT.format(body=body))
    (peer,) = resolve_peers([path])
    spec = A.openvino_max_pool([2, 2], [1, 1])
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    result = call_peer(peer, spec, x, isolated=False)
    assert result.status == "invalid" and why in result.message, result.verdict


def test_malformed_outputs_are_invalid_peer_results_through_the_command(tmp_path: Path) -> None:
    """Every malformed answer above in one real command (one worker per peer): each peer's
    checks fail as invalid, saying why, and the run exits 1."""
    paths = [_plugin(tmp_path, f"garbage{k}", BAD_OUTPUT.format(body=body)) for k, (body, _) in enumerate(MALFORMED)]
    proc, doc = _run(tmp_path, *paths, timeout="60")
    for k, (body, why) in enumerate(MALFORMED):
        checks = _peer_checks(doc, f"garbage{k}")
        assert all(c["verdict"] == "fail" and "invalid" in c["message"] and why in c["message"] for c in checks), \
            (body, checks)
    assert proc.returncode == 1


def test_validate_output_accepts_lists_and_matches_rank() -> None:
    x = np.zeros((1, 1, 3), np.float32)
    out = validate_output(PeerOutput([[[1.0, 2.0]]], [[[0, 1]]]), x)
    assert isinstance(out.values, np.ndarray) and out.values.dtype == np.float64 and out.indices.dtype.kind == "i"


def test_a_plugin_that_writes_into_its_input_is_reported(tmp_path: Path) -> None:
    path = _plugin(tmp_path, "scribbler", WRITES_INPUT)
    (peer,) = resolve_peers([path])
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    before = x.copy()
    for isolated in (False, True):
        (res,) = call_peer_many(peer, [(A.openvino_max_pool([2, 2], [1, 1]), x)], isolated=isolated, timeout=60)
        assert res.status == "rejects" and "read-only" in res.message, res.verdict
    np.testing.assert_array_equal(x, before)  # the caller's array is untouched
    _, doc = _run(tmp_path, path)
    assert all(c["verdict"] == "rejects" and "read-only" in c["message"] for c in _peer_checks(doc, "scribbler"))


def test_in_process_calls_send_peer_stdout_to_stderr(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (peer,) = resolve_peers([_plugin(tmp_path, "chatty2", CHATTY)])
    res = call_peer(peer, A.openvino_max_pool([2, 2], [1, 1]), np.ones((1, 1, 3, 3), np.float32), isolated=False)
    assert res.status == "ok", res.verdict
    out, err = capfd.readouterr()
    assert out == "" and "chatter in call" in err and "fd1 in call" in err


LOAD_FAILURES = {
    "exits0": ("import sys\nsys.exit(0)\n", "crash", "sys.exit(0)"),
    "osexit": ("import os\nos._exit(3)\n", "crash", "exited with code 3"),
    "raises": ("raise RuntimeError('no licence server')\n", "crash", "no licence server"),
    "hangs": ("import time\ntime.sleep(600)\n", "timeout", "did not load it within 3 s"),
}


def test_plugins_that_exit_crash_raise_or_hang_at_import(tmp_path: Path) -> None:
    paths = [_plugin(tmp_path, name, text + GOOD_MAX) for name, (text, _, _) in LOAD_FAILURES.items()]
    good = _plugin(tmp_path, "good", GOOD_MAX)
    proc, doc = _run(tmp_path, *paths, good, timeout="3")
    for name, (_, verdict, why) in LOAD_FAILURES.items():
        checks = _peer_checks(doc, name)
        assert all(c["verdict"] == verdict and why in c["message"] for c in checks), (name, checks)
    assert all(c["verdict"] == "pass" for c in _peer_checks(doc, "good"))  # the run went on
    assert proc.returncode == 1  # crash and timeout are failures: never exit 0
