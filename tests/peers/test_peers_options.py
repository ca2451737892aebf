"""Peer options in the peer name (``onnxruntime:opt=disable``): the grammar, validation before
any work, canonical names, and declining (never falling back) when a device is absent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import SEED_FILE, cli, invoke

from poolcheck.api import run_spec
from poolcheck.peers import call_peer_many
from poolcheck.peers.base import PeerSpecError
from poolcheck.peers.registry import PeerRef, parse_peer_list, resolve_peer, resolve_peers
from poolcheck.spec import attributes as A

SEEDS = SEED_FILE


def _available(name: str) -> None:
    ok, why = resolve_peer(name).available()
    if not ok:
        pytest.skip(f"{name} is not available: {why}")


def test_grammar_commas_between_peers_and_between_options() -> None:
    refs = parse_peer_list("onnxruntime:opt=disable, openvino:device=CPU,precision=bf16,torch,my/peer.py")
    assert refs == [
        PeerRef("onnxruntime", (("opt", "disable"),)),
        PeerRef("openvino", (("device", "CPU"), ("precision", "bf16"))),
        PeerRef("torch"),
        PeerRef("my/peer.py"),
    ]
    assert [str(r) for r in refs] == ["onnxruntime:opt=disable", "openvino:device=CPU,precision=bf16", "torch",
                                      "my/peer.py"]
    # Options are sorted, so the canonical form does not depend on the order they were written in.
    assert str(parse_peer_list("openvino:precision=f16,device=GPU")[0]) == "openvino:device=GPU,precision=f16"
    (backend,) = parse_peer_list("onnx-backend:onnxruntime.backend,device=CPU")
    assert backend == PeerRef("onnx-backend", (("device", "CPU"),), "onnxruntime.backend")
    assert str(backend) == "onnx-backend:onnxruntime.backend,device=CPU"


@pytest.mark.parametrize(("text", "message"), [
    ("precision=bf16", "comes before any peer name"),
    ("openvino:", "nothing after ':'"),
    (":opt=all", "no peer name"),
    ("onnxruntime:opt=", "bad option"),
    ("onnxruntime:opt=all,opt=basic", "given twice"),
    ("onnxruntime:1x=2", "bad option"),
    ("onnxruntime:opt=a b", "bad option"),
])
def test_grammar_errors_are_one_line(text: str, message: str) -> None:
    with pytest.raises(PeerSpecError, match=message) as info:
        parse_peer_list(text)
    assert "\n" not in str(info.value)


_names = st.sampled_from(["onnxruntime", "openvino", "torch", "acme.pool", "a/b.py", "onnx-backend:m.x"])
_opts = st.dictionaries(st.sampled_from(["opt", "ep", "device", "precision"]),
                        st.from_regex(r"[A-Za-z0-9_.-]{1,6}", fullmatch=True), max_size=3)


@given(st.lists(st.tuples(_names, _opts), min_size=1, max_size=4))
def test_canonical_form_parses_back_to_itself(entries: list[tuple[str, dict[str, str]]]) -> None:
    texts = []
    for name, opts in entries:
        items = ",".join(f"{k}={v}" for k, v in opts.items())
        texts.append(name + ((":" if ":" not in name else ",") + items if items else ""))
    refs = parse_peer_list(",".join(texts))
    assert len(refs) == len(entries)
    assert parse_peer_list(",".join(map(str, refs))) == refs
    # A list split on commas (as older callers do) resolves to the same entries.
    assert parse_peer_list(",".join(t for text in texts for t in text.split(","))) == refs


def test_unknown_options_and_values_are_usage_errors() -> None:
    with pytest.raises(PeerSpecError, match=r"peer 'onnxruntime' has no option 'device' \(it accepts: opt="):
        resolve_peers("onnxruntime:device=CPU")
    with pytest.raises(PeerSpecError, match="expected one of disable, basic, extended, all"):
        resolve_peers("onnxruntime:opt=fast")
    with pytest.raises(PeerSpecError, match="torch:layout=nchw: expected one of contiguous, channels_last"):
        resolve_peers("torch:layout=nchw")
    with pytest.raises(PeerSpecError, match="peer 'onnx_reference' has no option 'opt' \\(it accepts: none\\)"):
        resolve_peers("onnx_reference:opt=all")
    with pytest.raises(PeerSpecError, match="takes no argument"):
        resolve_peers("torch:cuda")
    with pytest.raises(PeerSpecError, match="onnx-backend needs a module"):
        resolve_peers("onnx-backend")


def test_canonical_names_drop_defaults_and_spell_values_as_declared() -> None:
    peers = resolve_peers(["onnxruntime:opt=DISABLE", "onnxruntime:opt=all", "openvino:device=CPU,precision=f32",
                           "openvino:precision=BF16"])
    assert [p.name for p in peers] == ["onnxruntime:opt=disable", "onnxruntime", "openvino",
                                       "openvino:precision=bf16"]
    assert all(p.ref == p.name for p in peers)  # the worker rebuilds the same configured peer
    # onnxruntime and onnxruntime:opt=all are one peer.
    assert [p.name for p in resolve_peers("onnxruntime,onnxruntime:opt=all")] == ["onnxruntime"]


def _items() -> list:
    x = np.random.default_rng(3).standard_normal((2, 3, 6, 5)).astype(np.float32)
    return [(A.openvino_max_pool([2, 2], [2, 1], [1, 0], [1, 0], rounding_type="ceil_torch", axis=1), x),
            (A.onnx_average_pool([3, 2], [1, 2], [1, 1, 1, 1], count_include_pad=1), x),
            (A.onnx_max_pool([3, 3], [2, 1], [1, 1, 1, 1], [1, 1], ceil_mode=1), x)]


@pytest.mark.parametrize("name", ["onnxruntime:opt=disable", "onnxruntime:opt=basic", "openvino:precision=f32",
                                  "torch:layout=channels_last"])
def test_configured_peers_agree_with_the_engine(name: str) -> None:
    _available(name.partition(":")[0])
    (peer,) = resolve_peers(name)
    for isolated in (False, True):
        for (spec, x), res in zip(_items(), call_peer_many(peer, _items(), isolated=isolated, timeout=120)):
            assert res.status == "ok", res.verdict
            values, indices = run_spec(spec, x)
            np.testing.assert_allclose(res.output.values, values, rtol=1e-6)
            if indices is not None:
                np.testing.assert_array_equal(res.output.indices, indices)


def test_an_absent_provider_or_device_declines_everything_with_the_reason() -> None:
    _available("onnxruntime")
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("CUDA is present here")
    (peer,) = resolve_peers("onnxruntime:ep=CUDA")
    results = call_peer_many(peer, _items(), isolated=False)
    assert all(r.status == "declined" and "CUDAExecutionProvider is not available here" in r.message
               for r in results), [r.verdict for r in results]
    _available("openvino")
    (ov,) = resolve_peers("openvino:device=NOSUCHDEVICE")
    results = call_peer_many(ov, _items(), isolated=False)
    assert all(r.status == "declined" and "device NOSUCHDEVICE is not available" in r.message for r in results)


@pytest.mark.parametrize(("spec", "message"), [
    ("onnxruntime:bogus=1", "has no option 'bogus'"),
    ("onnxruntime,precision=bf16", "has no option 'precision'"),
    ("precision=bf16", "comes before any peer name"),
    ("openvino:precision=f8", "expected one of f32, bf16, f16"),
])
def test_run_rejects_a_bad_peer_spec_in_one_line(spec: str, message: str) -> None:
    # in-process: test_peers_onnx_backend.py rejects bad --peers through the real command
    proc = invoke("run", str(SEEDS), "--peers", spec)
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_run_reports_the_canonical_name(tmp_path: Path) -> None:
    _available("onnxruntime")
    proc = cli("run", str(SEEDS), "--json", "--peers", "onnxruntime:opt=DISABLE", cwd=tmp_path)
    doc = json.loads(proc.stdout)
    runners = {c["runner"] for case in doc["cases"] for c in case["checks"] if c["kind"] == "peer"}
    assert runners == {"onnxruntime:opt=disable"} and "onnxruntime:opt=disable" in doc["versions"]


def test_doctor_lists_options(tmp_path: Path) -> None:
    proc = cli("doctor", "--json", cwd=tmp_path)
    peers = {p["name"]: p for p in json.loads(proc.stdout)["peers"]}
    assert "opt=disable|basic|extended|all (default all)" in peers["onnxruntime"]["options"]
    assert "precision=f32|bf16|f16 (default f32)" in peers["openvino"]["options"]
    assert peers["torch"]["options"] == ["layout=contiguous|channels_last (default contiguous)"]
    assert peers["onnx_reference"]["options"] == []
    example = peers["onnx-backend:onnxruntime.backend"]
    assert example["kind"] == "built-in" and any(o.startswith("device=") for o in example["options"])
