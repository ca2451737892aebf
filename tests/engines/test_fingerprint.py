"""The machine fingerprint: read from /proc/cpuinfo (or numpy's CPU table), stable id, ISA levels,
and the "only on avx512_core" reasoning over several machines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from poolcheck import fingerprint as F

SKYLAKE = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx fma avx2 avx512f avx512cd avx512bw avx512dq avx512vl"
HASWELL = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx fma avx2"


def test_cpuinfo_parsed(tmp_path: Path) -> None:
    p = tmp_path / "cpuinfo"
    p.write_text(f"processor\t: 0\nmodel name\t: Test CPU @ 2GHz\nflags\t\t: {SKYLAKE}\n\n"
                 f"processor\t: 1\nmodel name\t: Test CPU @ 2GHz\nflags\t\t: {SKYLAKE}\n")
    model, flags = F._cpuinfo(str(p))
    assert model == "Test CPU @ 2GHz"
    assert {"avx512f", "avx2"} <= flags
    assert F.isa_levels(flags) == ["sse4_2", "avx", "avx2", "avx512_core"]
    assert F.isa_levels(HASWELL.split()) == ["sse4_2", "avx", "avx2"]
    assert F.isa_levels(["asimd", "sve"]) == ["neon", "sve"]
    assert F._cpuinfo(str(tmp_path / "missing")) == ("", set())


def test_this_machine() -> None:
    fp = F.machine_fingerprint({"onnxruntime": "1.0"}, {"onnxruntime": "onnxruntime"})
    assert fp.host and fp.cpu and fp.os and fp.cores >= 1
    assert fp.packages["onnxruntime"] == "1.0" and "numpy" in fp.packages
    data = json.loads(json.dumps(fp.to_dict()))  # JSON-safe
    assert data["id"] == fp.id == F.fingerprint_id(data)
    assert F.Fingerprint.from_dict(data) == fp
    # the id changes with anything recorded, and only then
    assert F.machine_fingerprint({"onnxruntime": "1.0"}, {"onnxruntime": "onnxruntime"}).id == fp.id
    assert F.machine_fingerprint({"onnxruntime": "1.1"}, {"onnxruntime": "onnxruntime"}).id != fp.id
    assert len(fp.id) == 12


def test_numpy_fallback_agrees_with_cpuinfo() -> None:
    _model, flags = F._cpuinfo()
    if not flags:
        pytest.skip("no /proc/cpuinfo flags on this machine")
    via_numpy = F._numpy_flags()
    # both sources name the same instruction sets wherever numpy knows the feature
    for flag in via_numpy:
        assert flag in flags, flag


def _fp(host: str, flags: str) -> dict[str, object]:
    return {"host": host, "isa": F.isa_levels(flags.split())}


@pytest.mark.parametrize(("seen", "unseen", "expected"), [
    ([_fp("a", SKYLAKE)], [_fp("b", HASWELL)], "openvino: only on avx512_core"),
    ([_fp("a", SKYLAKE), _fp("c", SKYLAKE)], [_fp("b", HASWELL)], "openvino: only on avx512_core"),
    ([_fp("b", HASWELL)], [_fp("a", SKYLAKE)], "openvino: only on b (1 of 2 machines)"),  # ISA cannot explain it
    ([_fp("a", SKYLAKE), _fp("b", HASWELL)], [], None),  # everywhere
])
def test_only_on(seen: list, unseen: list, expected: str | None) -> None:
    assert F.only_on("openvino", seen, unseen) == expected
