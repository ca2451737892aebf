"""Divergences as data: finds written as replayable case files, and the known-divergence registry.

A find becomes a YAML case (schema poolcheck.case/1) whose ``expected`` output is the ENGINE's
output, so ``poolcheck run`` replays it (and ``--peers`` shows the peer's divergence again). The
peer, its version, the signature and the upstream issue (when one matches) are tags; the
diagnosis and the peer's output are in ``notes``. A document-vs-runtime shape finding becomes an
erratum case: ``expected.shape`` is what the written rule says, ``erratum.correct`` the runtime.

The known-divergence registry (``cases/known/``) holds such cases. Every fuzz run re-checks each
entry against its peer: one that no longer reproduces is reported (fixed upstream), one that
reproduces differently is a new divergence.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from poolcheck.cases import Case, load_paths, write_cases
from poolcheck.errors import CaseFileError
from poolcheck.fuzz.oracles import Finding
from poolcheck.fuzz.strategies import FuzzCase
from poolcheck.results import SIGNATURE_TAG, FindingKind, Signature
from poolcheck.spec.severity import rules_citing
from poolcheck.spec.sources import quote

#: Upstream reports (from the project's notes on known divergences) matched by peer and class.
#: Each entry: (peer, substring of the class, reference, what the report is about).
UPSTREAM: tuple[tuple[str, str, str, str], ...] = (
    ("onnxruntime", "rejects: pads >= kernel", "microsoft/onnxruntime#801",
     "ONNX Runtime rejects pads >= kernel, which the ONNX spec does not forbid"),
    ("onnxruntime", "same:negative-pads", "microsoft/onnxruntime#495", "SAME_UPPER with stride > 1 in pooling"),
    ("onnxruntime", "nan=", "pytorch/pytorch#7645", "max pooling and NaN: ignored, propagated, or -FLT_MAX"),
    ("torch", "nan=", "pytorch/pytorch#7645", "max pooling and NaN: ignored, propagated, or -FLT_MAX"),
    ("openvino", "max=seeded-scan", "pytorch/pytorch#7645", "max pooling and NaN: ignored, propagated, or -FLT_MAX"),
    ("openvino", "max=seeded-scan", "webmachinelearning/webnn#935",
     "value of a window made only of padding: 0 in one backend, -inf in another"),
    ("openvino", "divisor=full", "pytorch/xla#746",
     "count_include_pad with ceil_mode: whether the extra padding added by ceil is counted"),
    ("onnxruntime", "divisor=", "microsoft/onnxruntime#16203",
     "count_include_pad divisor for the rightmost window under ceil_mode"),
    ("onnx_reference", "nan=", "onnx/onnx#1384", "the reference pads with NaN as a sentinel, so NaN inputs are dropped"),
    ("onnx_reference", "empty_avg=nan", "onnx/onnx#4958",
     "ceil_mode + count_include_pad=0: NaN rows (AveragePool), FLT_MIN rows (MaxPool)"),
    ("onnx_reference", "empty_max=", "onnx/onnx#4958",
     "ceil_mode + count_include_pad=0: NaN rows (AveragePool), FLT_MIN rows (MaxPool)"),
    ("onnx_reference", "dilations", "onnx/onnx#4849", "output shape with dilations in the reference"),
    ("onnx_reference", "undilated-kernel-zero-tail", "onnx/onnx#4849", "output shape with dilations in the reference"),
    # the converter chains run the same runtimes: their runtime-step classes share the reports
    ("openvino-onnx", "max=seeded-scan", "pytorch/pytorch#7645", "max pooling and NaN: ignored, propagated, or -FLT_MAX"),
    ("openvino-onnx", "divisor=full", "pytorch/xla#746",
     "count_include_pad with ceil_mode: whether the extra padding added by ceil is counted"),
    ("openvino-onnx", "rounding:ceil_torch->ceil", "openvinotoolkit/openvino#2965",
     "the pull request that mapped ONNX ceil_mode=1 to OpenVINO's ceil rounding (2020, before ceil_torch)"),
    ("torch-onnx", "nan=", "pytorch/pytorch#7645", "max pooling and NaN: ignored, propagated, or -FLT_MAX"),
    ("tract", "max=seeded-scan", "pytorch/pytorch#7645", "max pooling and NaN: ignored, propagated, or -FLT_MAX"),
)

KNOWN_TAG_PEER = "peer:"
KNOWN_TAG_CPU = "cpu:"
KNOWN_TAG_SIGNATURE = SIGNATURE_TAG


def upstream_for(peer: str, klass: str) -> list[tuple[str, str]]:
    return [(ref, about) for p, key, ref, about in UPSTREAM if p == peer and key in klass]


def slug(text: str, limit: int = 48) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:limit].strip("-") or "x"


def case_id(finding: Finding) -> str:
    digest = hashlib.sha1(finding.signature.encode()).hexdigest()[:6]
    return f"fuzz-{slug(finding.subject, 24)}-{finding.op}-{slug(finding.klass, 40)}-{digest}"


def _plain_array(a: np.ndarray | None) -> Any:
    if a is None:
        return None
    return np.asarray(a).tolist()


def _recipe_text(case: FuzzCase) -> str:
    r = case.recipe
    if not r:
        return ""
    return f"input recipe: pattern {r.get('pattern')}, seed {r.get('seed')}, specials {r.get('specials')}"


def finding_case(finding: Finding, expected: dict[str, Any], *, command: str = "", seed: int | None = None,
                 versions: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The case-file mapping for a find, or None when it cannot be written as a case (an invalid
    configuration: the loader rightly refuses it)."""
    if finding.kind == "invalid":
        return None
    case = finding.case
    tags = ["fuzz", finding.kind.value]
    if finding.kind == "peer":
        tags.append(f"{KNOWN_TAG_PEER}{finding.subject}")
        if finding.version and finding.version != "unknown":
            tags.append(f"version:{finding.subject}={finding.version}")
    tags.append(f"{KNOWN_TAG_SIGNATURE}{finding.signature}")
    refs = upstream_for(finding.subject, finding.klass)
    tags += [f"upstream:{ref}" for ref, _ in refs]
    lines = [f"{finding.subject}: {finding.text}", f"first difference: {finding.detail}"]
    if finding.actual.get("values") is not None:
        lines.append(f"{finding.subject} values: {_plain_array(finding.actual['values'])}")
    if finding.actual.get("indices") is not None:
        lines.append(f"{finding.subject} indices: {_plain_array(finding.actual['indices'])}")
    lines += [f"upstream: {ref} ({about})" for ref, about in refs]
    lines += severity_lines(finding)
    if versions:
        lines.append("versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    recipe = _recipe_text(case)
    if recipe:
        lines.append(recipe)
    source: dict[str, Any] = {"document": "poolcheck fuzz", "signature": finding.signature}
    if command:
        source["command"] = command
    if seed is not None:
        source["seed"] = seed
    data: dict[str, Any] = {
        "id": case_id(finding),
        "title": f"{finding.subject}: {finding.text}"[:160],
        "source": source,
        "op": case.op_name,
        "attributes": case.attributes,
        "dtype": case.x.dtype.name,
        "input": case.x.tolist(),
        "expected": {k: v for k, v in expected.items() if v is not None},
    }
    indices = getattr(case, "indices", None)  # a family case: MaxUnpool's second input
    if indices is not None:
        data["inputs"] = {"I": np.asarray(indices).tolist()}
    if finding.kind == "document":
        extra = finding.extra
        data["expected"] = {"shape": extra["written_shape"]}
        data["erratum"] = {
            "says": f"output shape {extra['written_shape']} ({extra['working']})",
            "correct": {"shape": extra["runtime_shape"]},
            "why": finding.text,
        }
    data["notes"] = "\n".join(lines)
    data["tags"] = tags
    return data


def severity_lines(finding: Finding) -> list[str]:
    """``severity: unspecified -- nan=first: <why> [ONNX-MAX]`` and the cited sentences' words:
    the weight of a find and the text it rests on (poolcheck/spec/severity.py)."""
    atoms = [a for a in (finding.atoms or (finding.klass,)) if a]
    rules = rules_citing(atoms, finding.case.spec)
    why = "; ".join(f"{r.key}: {r.why}" + (f" [{', '.join(r.sentences)}]" if r.sentences else "") for r in rules)
    lines = [f"severity: {finding.weight.value}" + (f" -- {why}" if why else "")]
    cited = dict.fromkeys(sid for r in rules for sid in r.sentences)
    lines += [f"[{sid}] {quote(sid)}" for sid in cited]
    return lines


def write_finding(directory: str | Path, data: dict[str, Any]) -> Path:
    """Write one case (one file per find: ``<id>.yaml``)."""
    path = Path(directory) / f"{data['id']}.yaml"
    return write_cases(path, [data])


# --------------------------------------------------------------------------- the registry


@dataclass
class KnownEntry:
    """One known divergence: its case and the signature recorded for it."""

    case: Case
    signature: str
    peer: str | None

    @property
    def sig(self) -> Signature:
        return Signature.parse(self.signature)

    @property
    def kind(self) -> FindingKind:
        return self.sig.kind

    @property
    def cpu(self) -> tuple[str, ...]:
        """The CPU the divergence needs, as ``cpu:FEATURE`` tags (a ``/proc/cpuinfo`` flag or an
        ISA level, :func:`poolcheck.fingerprint.cpu_features`) and ``cpu:!FEATURE`` (recorded on a
        CPU without it): the runtime picks kernels by CPU; re-checked only on such a CPU."""
        return tuple(t[len(KNOWN_TAG_CPU):] for t in self.case.tags if t.startswith(KNOWN_TAG_CPU))

    def cpu_unmet(self, have: set[str]) -> list[str]:
        """The :attr:`cpu` conditions a CPU with the features ``have`` does not meet, worded
        ("with avx512_core", "without avx512_core"); empty where the entry applies."""
        unmet = []
        for feature in self.cpu:
            if feature.startswith("!") and feature[1:] in have:
                unmet.append(f"without {feature[1:]}")
            elif not feature.startswith("!") and feature not in have:
                unmet.append(f"with {feature}")
        return unmet


def known_entries(paths: list[str | Path]) -> tuple[list[KnownEntry], list[CaseFileError]]:
    """Load the registry (missing folders are simply empty)."""
    existing = [p for p in paths if Path(p).exists()]
    cases, errors = load_paths(existing)
    entries = []
    for c in cases:
        sig = next((t[len(KNOWN_TAG_SIGNATURE):] for t in c.tags if t.startswith(KNOWN_TAG_SIGNATURE)), None)
        if sig is None:
            errors.append(CaseFileError(f"a known divergence needs a '{KNOWN_TAG_SIGNATURE}...' tag",
                                        path=c.path, line=c.line, case_id=c.id, field="tags"))
            continue
        try:
            Signature.parse(sig)
        except ValueError as exc:
            errors.append(CaseFileError(str(exc), path=c.path, line=c.line, case_id=c.id, field="tags"))
            continue
        peer = next((t[len(KNOWN_TAG_PEER):] for t in c.tags if t.startswith(KNOWN_TAG_PEER)), None)
        bad_cpu = next((t for t in c.tags if t.startswith(KNOWN_TAG_CPU) and not t[len(KNOWN_TAG_CPU):].lstrip("!")), None)
        if bad_cpu is not None:
            errors.append(CaseFileError(f"tag {bad_cpu!r} names no CPU feature (cpu:FEATURE or cpu:!FEATURE)",
                                        path=c.path, line=c.line, case_id=c.id, field="tags"))
            continue
        entries.append(KnownEntry(c, sig, peer))
    return entries, errors


def fuzz_case_from(case: Case) -> FuzzCase:
    return FuzzCase(case.op, dict(case.attributes), case.pool_spec, case.input, {})
