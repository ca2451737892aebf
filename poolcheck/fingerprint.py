"""The machine fingerprint: which host, CPU, instruction sets, OS, Python and peers produced a result.

Pooling kernels differ per ISA (an AVX-512 build of a runtime takes other code paths than its
AVX2 build), so a divergence is labelled with the machine that produced it, and a result merged
from several machines can say "openvino: only on avx512_core".

Ground floor: this module imports only the standard library (numpy's CPU feature table is read
when numpy is importable, as a fallback where ``/proc/cpuinfo`` does not exist).

The ISA levels use the names the runtimes use for their kernels (OpenVINO's ``avx512_core`` is
AVX-512 F + CD + BW + DQ + VL, the Skylake-server subset)::

    sse4_2 < avx < avx2 < avx512_core < avx512_core_vnni < avx512_core_bf16 < avx512_core_fp16 < avx512_core_amx
    neon (asimd) < sve < sve2   on ARM
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import platform
import socket
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

#: ISA levels, each with the Linux ``/proc/cpuinfo`` flags it needs (all of them).
ISA_LEVELS: tuple[tuple[str, frozenset[str]], ...] = (
    ("sse4_2", frozenset({"sse4_2"})),
    ("avx", frozenset({"avx"})),
    ("avx2", frozenset({"avx2", "fma"})),
    ("avx512_core", frozenset({"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"})),
    ("avx512_core_vnni", frozenset({"avx512f", "avx512bw", "avx512vl", "avx512_vnni"})),
    ("avx512_core_bf16", frozenset({"avx512f", "avx512bw", "avx512vl", "avx512_bf16"})),
    ("avx512_core_fp16", frozenset({"avx512f", "avx512bw", "avx512vl", "avx512_fp16"})),
    ("avx512_core_amx", frozenset({"avx512f", "amx_tile", "amx_bf16"})),
    ("neon", frozenset({"asimd"})),
    ("sve", frozenset({"sve"})),
    ("sve2", frozenset({"sve2"})),
)

#: numpy's CPU feature names -> the Linux flag names above (where ``/proc/cpuinfo`` is missing).
_NUMPY_FLAGS: dict[str, str] = {
    "SSE42": "sse4_2", "AVX": "avx", "AVX2": "avx2", "FMA3": "fma", "AVX512F": "avx512f", "AVX512CD": "avx512cd",
    "AVX512BW": "avx512bw", "AVX512DQ": "avx512dq", "AVX512VL": "avx512vl", "AVX512VNNI": "avx512_vnni",
    "AVX512BF16": "avx512_bf16", "AVX512FP16": "avx512_fp16", "ASIMD": "asimd", "SVE": "sve",
}

#: Flags kept in the fingerprint (the rest of ``/proc/cpuinfo``'s list says nothing about kernels).
_KEEP_PREFIXES = ("sse", "ssse", "avx", "fma", "f16c", "amx", "asimd", "sve", "neon", "fp16", "bf16", "vnni")


@dataclass
class Fingerprint:
    """One machine as far as a pooling result can depend on it."""

    host: str
    cpu: str
    isa: list[str]  # ISA levels present (ISA_LEVELS order)
    flags: list[str]  # the kernel-relevant CPU flags, sorted
    os: str
    machine: str  # uname -m
    python: str
    cores: int
    packages: dict[str, str] = field(default_factory=dict)  # poolcheck, numpy, peer versions
    peers: dict[str, str] = field(default_factory=dict)  # peer name -> how it was named (options included)

    @property
    def id(self) -> str:
        """A short stable identifier (12 hex digits) of everything above."""
        return fingerprint_id(asdict(self))

    @property
    def top_isa(self) -> str:
        return self.isa[-1] if self.isa else self.machine

    def label(self) -> str:
        """``host (cpu model, top ISA level)`` for people."""
        return f"{self.host} ({self.cpu}, {self.top_isa})"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fingerprint:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})


def fingerprint_id(data: Mapping[str, Any]) -> str:
    body = {k: v for k, v in data.items() if k != "id"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:12]


#: The fields that name the machine itself; ``packages`` and ``peers`` are what it ran that time.
MACHINE_FIELDS = ("host", "cpu", "isa", "flags", "os", "machine", "python", "cores")


def machine_key(data: Mapping[str, Any]) -> str:
    """What two fingerprints of one machine share (a ``poolcheck run`` records no peer versions,
    a ``poolcheck fuzz`` on the same machine does: two ids, one machine key)."""
    return fingerprint_id({k: data.get(k) for k in MACHINE_FIELDS})


def _cpuinfo(path: str = "/proc/cpuinfo") -> tuple[str, set[str]]:
    """CPU model name and flags from ``/proc/cpuinfo`` (Linux; x86 ``flags``, ARM ``Features``)."""
    model, flags = "", set[str]()
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key in ("model name", "hardware", "cpu model") and not model:
                    model = value.strip()
                elif key in ("flags", "features") and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return model, flags


def _numpy_flags() -> set[str]:
    feats: dict[str, bool] | None = None
    for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):  # numpy >= 2, 1.x
        try:
            feats = importlib.import_module(name).__cpu_features__
            break
        except (ImportError, AttributeError):
            continue
    if feats is None:
        return set()
    return {_NUMPY_FLAGS[k] for k, on in feats.items() if on and k in _NUMPY_FLAGS}


def cpu_features() -> set[str]:
    """This CPU's feature flags as ``/proc/cpuinfo`` names them (``avx2``, ``avx512_bf16``, ARM
    ``asimd``...; NumPy's view of them where that file is missing) and the :data:`ISA_LEVELS`
    they make up (``avx512_core``: oneDNN's name, which OpenVINO's kernels go by)."""
    flags = _cpuinfo()[1] or _numpy_flags()
    return flags | set(isa_levels(flags))


def isa_levels(flags: Iterable[str]) -> list[str]:
    """The ISA levels (ISA_LEVELS names, in order) whose flags are all present."""
    have = set(flags)
    return [name for name, need in ISA_LEVELS if need <= have]


def machine_fingerprint(packages: Mapping[str, str] | None = None,
                        peers: Mapping[str, str] | None = None) -> Fingerprint:
    """This machine now. ``packages``: versions to record (peer runtimes); ``peers``: peer name ->
    the reference it was resolved from (``name:key=value`` options included)."""
    model, flags = _cpuinfo()
    if not flags:
        flags = _numpy_flags()
    model = model or platform.processor() or platform.machine() or "unknown"
    kept = sorted(f for f in flags if f.startswith(_KEEP_PREFIXES))
    pkgs = {"python": sys.version.split()[0]}
    try:
        import numpy

        pkgs["numpy"] = numpy.__version__
    except ImportError:
        pass
    pkgs.update({str(k): str(v) for k, v in (packages or {}).items()})
    return Fingerprint(
        host=socket.gethostname() or platform.node() or "unknown",
        cpu=model,
        isa=isa_levels(flags),
        flags=kept,
        os=f"{platform.system()} {platform.release()}".strip(),
        machine=platform.machine(),
        python=f"{platform.python_implementation()} {sys.version.split()[0]}",
        cores=os.cpu_count() or 1,
        packages=dict(sorted(pkgs.items())),
        peers=dict(sorted((peers or {}).items())),
    )


def distinguishing_isa(seen: Iterable[Mapping[str, Any]], unseen: Iterable[Mapping[str, Any]]) -> list[str]:
    """ISA levels every fingerprint in ``seen`` has and at least one in ``unseen`` lacks, most
    specific first: why a divergence could show on some machines and not on others. Empty when
    the ISA does not separate them (then the peer versions or options might)."""
    seen = list(seen)
    unseen = list(unseen)
    if not seen or not unseen:
        return []
    common = set.intersection(*(set(f.get("isa", ())) for f in seen))
    lacking = [name for name, _ in ISA_LEVELS if name in common and any(name not in f.get("isa", ()) for f in unseen)]
    return lacking[::-1]


def only_on(subject: str, seen: Iterable[Mapping[str, Any]], unseen: Iterable[Mapping[str, Any]]) -> str | None:
    """``"openvino: only on avx512_core"``, or a host list when the ISA does not separate the
    machines; None when every machine that ran the subject showed the divergence."""
    seen = list(seen)
    unseen = list(unseen)
    if not unseen or not seen:
        return None
    isa = distinguishing_isa(seen, unseen)
    if isa:
        return f"{subject}: only on {isa[-1]}"  # the weakest level that separates them
    hosts = sorted({str(f.get("host", "?")) for f in seen})
    return f"{subject}: only on {', '.join(hosts)} ({len(seen)} of {len(seen) + len(unseen)} machines)"


__all__ = ["ISA_LEVELS", "MACHINE_FIELDS", "Fingerprint", "distinguishing_isa", "fingerprint_id", "isa_levels",
           "machine_fingerprint", "machine_key", "only_on"]
