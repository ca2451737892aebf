"""Fuzzing the rest of the family (``fuzz --ops lp,global_avg,...,adaptive_max``).

The same session, rounds, shrinking, grouping and campaign as MaxPool/AveragePool
(:mod:`poolcheck.fuzz.session` hands a family example to :func:`check_batch`); what differs lives
here: the strategies (each operator drawn in the regimes of :data:`~poolcheck.fuzz.strategies.REGIMES`,
spelled in its newest row's words and parsed back through the catalogue), the reference
(:func:`~poolcheck.api_family.run_family`), the engine oracle (the NumPy family engine against
the C one) and a peer's judgement with its diagnosis (:mod:`poolcheck.fuzz.diagnosis.family`).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from hypothesis import strategies as st

from poolcheck import api
from poolcheck.api_family import run_family
from poolcheck.errors import AttributeValueError, PoolcheckError
from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.choices import Choice, Choices
from poolcheck.fuzz.diagnosis.family import agrees, close, diagnose_family, family_variant_text
from poolcheck.fuzz.diagnosis.rejections import element_type_key
from poolcheck.fuzz.strategies import _REGIME_CHOICES, REGIMES, CaseText, FuzzCase, Limits, configs, draw_input
from poolcheck.judgement import Judgement
from poolcheck.peers.base import PeerResult
from poolcheck.peers.isolation import call_peer_many
from poolcheck.results import Diff, FindingKind, PeerStatus
from poolcheck.spec import operators
from poolcheck.spec.family import FAMILY_OPS, FamilySpec, family_output_shape
from poolcheck.spec.regions import family_regions_of
from poolcheck.spec.severity import STATUS_SEVERITY, severity_of

if TYPE_CHECKING:
    from poolcheck.fuzz.session import Session

#: ``--ops`` words of the family (the catalogue's op names).
FAMILY_FLAGS: dict[str, str] = {op: op for op in FAMILY_OPS}
_CONVENTION = {"adaptive_avg": "openvino", "adaptive_max": "openvino"}


def convention_of(op: str) -> str:
    return _CONVENTION.get(op, "onnx")


def is_family_ops(ops: Sequence[str]) -> bool:
    """Whether a campaign's ``ops`` are family operators (they fuzz on their own)."""
    return bool(ops) and all(op in FAMILY_OPS for op in ops)


@dataclass
class FamilyCase(CaseText):
    """One generated family configuration, its input X and (MaxUnpool) its indices I.
    ``op_name``/``attributes`` are the case-file spelling; ``spec`` what peers receive."""

    op_name: str
    attributes: dict[str, Any]
    spec: FamilySpec
    x: np.ndarray
    recipe: dict[str, Any]
    indices: np.ndarray | None = None
    mutation: str | None = None
    #: The choices that make this configuration again (:mod:`poolcheck.fuzz.choices`), and where
    #: its input's begin among them (the ones before make the geometry).
    choices: tuple[Choice, ...] = field(default=(), repr=False, compare=False)
    input_at: int | None = field(default=None, repr=False, compare=False)


def _stand_in(case: FamilyCase) -> FuzzCase:
    """A family case where a :class:`~poolcheck.fuzz.oracles.Finding` holds a case: what the
    fuzzer does with a finding's case beyond its spelling and input (grouping's replay and
    refusals, severities, symptoms) dispatches on ``is_family(case.spec)``."""
    return cast(FuzzCase, case)


# --------------------------------------------------------------------------- strategies


def _sizes(src: Choices, n: int, limits: Limits, low: int = 1) -> list[int]:
    sizes = [src.integer(low, max(low, limits.max_size[n]), f"size {i}") for i in range(n)]
    return sizes


def _planes(src: Choices, limits: Limits, sizes: list[int]) -> tuple[int, int, list[int]]:
    batch = src.integer(1, limits.max_batch, "N")
    channels = src.integer(1, limits.max_channels, "C")
    while batch * channels * math.prod(sizes) > limits.max_elements:
        i = max(range(len(sizes)), key=lambda k: sizes[k])
        sizes[i] = max(1, sizes[i] // 2)
    return batch, channels, sizes


def _window_attrs(src: Choices, n: int, sizes: list[int], limits: Limits, *, unpool: bool) -> dict[str, Any]:
    """Kernel, strides, pads (and for LpPool dilations, ceil_mode, auto_pad) that fit ``sizes``."""
    kernel, strides, pb, pe, dil = [], [], [], [], []
    for i in range(n):
        k = src.integer(1, limits.max_kernel[n], f"kernel {i}")
        d = 1 if unpool else src.pick((1, 1, 1, 2, limits.max_dilation), f"dilation {i}")
        b = src.integer(0, min(limits.max_pad, k - 1), f"pad begin {i}")
        e = src.integer(0, min(limits.max_pad, k - 1), f"pad end {i}")
        if (k - 1) * d + 1 > sizes[i] + b + e:
            d = 1
            k = max(1, min(k, sizes[i] + b + e))
            b, e = min(b, k - 1), min(e, k - 1)
        kernel.append(k)
        dil.append(d)
        pb.append(b)
        pe.append(e)
        strides.append(src.integer(1, limits.max_stride, f"stride {i}"))
    attrs: dict[str, Any] = {"kernel_shape": kernel, "strides": strides, "pads": pb + pe}
    if not unpool:
        attrs["dilations"] = dil
        attrs["ceil_mode"] = src.pick((0, 0, 1), "ceil_mode")
        auto = src.pick(("NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"), "auto_pad")
        if auto != "NOTSET":
            attrs["auto_pad"] = auto
            del attrs["pads"]
    return attrs


def family_config(src: Choices, ops: Sequence[str], ranks: Sequence[int], dtypes: Sequence[str]) -> FamilyCase:
    """One valid configuration of one of ``ops`` with its input (and MaxUnpool's indices), from
    ``src``'s choices (:mod:`poolcheck.fuzz.choices`)."""
    op = src.pick(tuple(ops), "op")
    row = operators.newest(op, convention_of(op))
    allowed = tuple(d for d in dtypes if d in row.dtypes)
    if not allowed:
        raise AttributeValueError("--dtypes", f"{row.name} takes none of {', '.join(dtypes)}")
    dtype = src.pick(allowed, "dtype")
    limits = REGIMES[src.pick(_REGIME_CHOICES, "regime")]
    n = src.pick(tuple(sorted(ranks)), "rank") - 2
    sizes = _sizes(src, n, limits)
    batch, channels, sizes = _planes(src, limits, sizes)
    attrs: dict[str, Any] = {}
    indices = None
    if op in ("lp", "global_lp"):
        attrs["p"] = src.pick((2, 1, 3, 4), "p")
    if op == "lp":
        attrs.update(_window_attrs(src, n, sizes, limits, unpool=False))
    elif op in ("adaptive_avg", "adaptive_max"):
        attrs["output_shape"] = [src.integer(1, max(1, min(2 * s + 1, limits.max_size[n])), f"bins {i}")
                                 for i, s in enumerate(sizes)]
        if op == "adaptive_max":
            attrs["index_element_type"] = src.pick(("i64", "i32"), "index_element_type")
    elif op == "unpool":
        attrs.update(_window_attrs(src, n, sizes, limits, unpool=True))
    spec = operators.parse(row.name, attrs)
    assert isinstance(spec, FamilySpec)
    if op == "unpool":
        # X and I come from a MaxPool of the same window over an input of the original shape
        pooled_from = (batch, channels, *sizes)
        original, recipe = draw_input(src, pooled_from, dtype, limits)
        try:
            pooled, indices = api.onnx_max_pool(original, attrs["kernel_shape"], strides=attrs["strides"],
                                                pads=attrs["pads"])
        except (PoolcheckError, ValueError):  # no window fits: a kernel of 1 instead
            attrs.update(kernel_shape=[1] * n, strides=[1] * n, pads=[0] * (2 * n))
            spec = operators.parse(row.name, attrs)
            assert isinstance(spec, FamilySpec)
            pooled, indices = api.onnx_max_pool(original, attrs["kernel_shape"], strides=attrs["strides"],
                                                pads=attrs["pads"])
        x = pooled
        if src.pick(("pooled", "fresh"), "X: the MaxPool values or fresh ones") == "fresh":
            x, recipe2 = draw_input(src, pooled.shape, dtype, limits)
            recipe = {**recipe, "x": recipe2}
        try:
            inferred: tuple[int, ...] = family_output_shape(spec.replace(output_shape=None), x.shape)
        except AttributeValueError:  # the pads leave no inferred output: only output_shape says it
            inferred = ()
        if tuple(inferred) != pooled_from or src.pick((False, True), "output_shape given"):
            attrs["output_shape"] = list(pooled_from)
            spec = operators.parse(row.name, attrs)
            assert isinstance(spec, FamilySpec)
        recipe = {**recipe, "indices": "MaxPool of the recipe's input"}
        return FamilyCase(row.name, attrs, spec, x, recipe, indices=np.asarray(indices, dtype=np.int64))
    x, recipe = draw_input(src, (batch, channels, *sizes), dtype, limits)
    try:
        family_output_shape(spec, x.shape)
    except AttributeValueError:
        src.reject()
    return FamilyCase(row.name, attrs, spec, x, recipe)


def generator(ops: Sequence[str], ranks: Sequence[int], dtypes: Sequence[str]) -> Callable[[Choices], FamilyCase]:
    """:func:`family_config` of these arguments, a generator of one argument (the source)."""
    return functools.partial(family_config, ops=tuple(ops), ranks=tuple(ranks), dtypes=tuple(dtypes))


def family_configs(ops: Sequence[str], ranks: Sequence[int], dtypes: Sequence[str]) -> st.SearchStrategy[FamilyCase]:
    """:func:`family_config` drawn through Hypothesis."""
    return configs(generator(ops, ranks, dtypes))


def family_batches(ops: Sequence[str], ranks: Sequence[int], dtypes: Sequence[str], *,
                   max_configs: int = 8) -> st.SearchStrategy[list[FamilyCase]]:
    """A list of 1..``max_configs`` family configurations (one example)."""
    return st.lists(family_configs(ops, ranks, dtypes), min_size=1, max_size=max_configs)


def check_family_arguments(ops: Sequence[str], ranks: Sequence[int], dtypes: Sequence[str],
                           conventions: Sequence[str] = ("openvino", "onnx")) -> None:
    """Ranks within 3..5 and every family op of ``ops`` takes one of ``dtypes`` and has one of
    ``conventions`` (each family operator has one; one line otherwise)."""
    bad = [r for r in ranks if r not in (3, 4, 5)]
    if bad or not ranks:
        raise AttributeValueError("--ranks", f"expected some of 3, 4, 5, got {bad[0] if bad else 'none'}")
    for op in ops:
        row = operators.newest(op, convention_of(op))
        if convention_of(op) not in conventions:
            raise AttributeValueError("--conventions", f"{row.name} is an {convention_of(op)} operator; --conventions "
                                                       f"{','.join(conventions) or '(empty)'} leaves it out")
        if not any(d in row.dtypes for d in dtypes):
            raise AttributeValueError("--dtypes", f"{row.name} takes {', '.join(row.dtypes)}; none is among "
                                                  f"{', '.join(dtypes)}")


# --------------------------------------------------------------------------- reference and oracles


def expected(case: FamilyCase, engine: str = "numpy") -> tuple[np.ndarray, np.ndarray | None]:
    return run_family(case.spec, case.x, engine=engine, indices=case.indices)


def _outputs(values: np.ndarray, indices: np.ndarray | None) -> dict[str, Any]:
    out: dict[str, Any] = {"values": values, "shape": list(np.shape(values))}
    if indices is not None:
        out["indices"] = indices
    return out


def judgement(case: FamilyCase, exp: tuple[np.ndarray, np.ndarray | None], values: np.ndarray | None,
              indices: np.ndarray | None) -> Judgement:
    """The differing elements of a family output (no windows: the family has no Geometry view)."""
    out = Judgement()
    if values is None:
        return out
    ev, ei = exp
    if np.shape(ev) != np.shape(values):
        out.diffs.append(Diff("shape", None, list(np.shape(ev)), list(np.shape(values))))
        out.total = 1
        return out
    bad = ~close(case.spec, case.x, ev, values)
    for pos in np.argwhere(bad)[:10]:
        p = tuple(int(v) for v in pos)
        out.diffs.append(Diff("values", list(p), ev[p].item(), np.asarray(values)[p].item()))
    out.total = int(bad.sum())
    if ei is not None and indices is not None and np.shape(ei) == np.shape(indices):
        wrong = np.asarray(ei, np.int64) != np.asarray(indices, np.int64)
        for pos in np.argwhere(wrong)[:10]:
            p = tuple(int(v) for v in pos)
            out.diffs.append(Diff("indices", list(p), int(ei[p]), int(np.asarray(indices)[p])))
        out.total += int(wrong.sum())
    return out


def _first(j: Judgement) -> str:
    if not j.diffs:
        return ""
    d = j.diffs[0]
    if d.output == "shape":
        return f"shape: expected {d.expected}, got {d.actual}"
    return f"{d.output} at {d.position}: expected {d.expected}, got {d.actual}"


def check_family_engines(case: FamilyCase, base: tuple[np.ndarray, np.ndarray | None],
                         others: Sequence[str]) -> list[O.Finding]:
    """The other family engines against the reference one: bit for bit, except the global
    average, which runs on the AveragePool kernels (the average rule)."""
    findings = []
    for name in others:
        try:
            other = expected(case, name)
        except PoolcheckError as exc:
            findings.append(O.Finding(kind=FindingKind.ENGINE, op=case.op, subject=name, klass="error",
                                      text="the engine raised", detail=str(exc), case=_stand_in(case), explained=False))
            continue
        if not agrees(case.spec, case.x, base, other, exact=case.op != "global_avg"):
            j = judgement(case, base, other[0], other[1])
            what = j.diffs[0].output if j.diffs else "values"
            findings.append(O.Finding(kind=FindingKind.ENGINE, op=case.op, subject=f"numpy vs {name}", klass=what,
                                      text=f"the {name} family engine differs from the numpy one ({what})",
                                      detail=_first(j), case=_stand_in(case), explained=False,
                                      actual={"values": other[0], "indices": other[1]},
                                      expected=_outputs(*base), judgement=j))
    return findings


def rejection_reason(message: str) -> str:
    """What a refusal says, as a class: its first line without error codes, numbers as N (a
    refusal is named by the runtime's own words; the shrunk example shows the condition)."""
    line = (message.strip().splitlines() or ["no message"])[0]
    line = re.sub(r"\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*\w+\s*:", "", line)
    line = re.sub(r"\d+", "N", line)
    line = " ".join(line.split())
    return line[:72] or "no message"


def judge_family_peer(case: FamilyCase, peer: str, result: PeerResult, exp: tuple[np.ndarray, np.ndarray | None],
                      version: str | None, prefer: Mapping[str, int] | None = None) -> O.Finding | None:
    """A peer's result on a family configuration: None when it agrees (or declines), else a
    finding named after the variant that reproduces it (``unexplained ...`` when none does;
    several: see :func:`~poolcheck.fuzz.diagnosis.family.diagnose_family`, ``prefer`` the peer's
    history)."""
    status = PeerStatus(result.status)
    common: dict[str, Any] = {"kind": FindingKind.PEER, "op": case.op, "subject": peer, "case": _stand_in(case), "version": version,
              "status": status, "expected": _outputs(*exp)}
    if status in (PeerStatus.DECLINED, PeerStatus.UNAVAILABLE):
        return None
    if status == PeerStatus.REJECTS:
        typed = element_type_key(result.message, case.x.dtype)
        klass = "rejects: " + (typed or rejection_reason(result.message))
        text = f"{peer} does not take {case.x.dtype.name} tensors at all" if typed else f"{peer} rejects a valid configuration"
        return O.Finding(klass=klass, text=text, detail=result.message[:300], explained=typed is not None,
                         severity=severity_of((klass,), case.spec), judgement=Judgement(), **common)
    if status in (PeerStatus.CRASH, PeerStatus.TIMEOUT):
        return O.Finding(klass=status.value, text=f"{peer}: {status.value}", detail=result.message[:300],
                         explained=False, severity=STATUS_SEVERITY[status.value], judgement=Judgement(), **common)
    if status != PeerStatus.OK or result.output is None:
        return O.Finding(klass="invalid output", text=f"{peer} answered with something that is not an output",
                         detail=result.message[:300], explained=False, judgement=Judgement(), **common)
    values = np.asarray(result.output.values)
    indices = None if result.output.indices is None else np.asarray(result.output.indices)
    if case.op != "adaptive_max":
        indices = None
    actual = (values, indices)
    if agrees(case.spec, case.x, exp, actual):
        return None
    j = judgement(case, exp, values, indices)
    keys = diagnose_family(case.spec, case.x, case.indices, exp, actual, prefer)
    if keys:
        klass, text, explained = keys[0], family_variant_text(keys[0]), True
        if len(keys) > 1:
            text += "; ambiguous: also consistent with " + ", ".join(keys[1:])
    else:
        shape_differs = bool(j.diffs) and j.diffs[0].output == "shape"
        what = "shape" if shape_differs else (j.diffs[0].output if j.diffs else "values")
        klass, explained = f"unexplained {what}", False
        text = f"no named variant of {case.op_name} reproduces the {what}" + (f" ({_first(j)})" if shape_differs else "")
    atoms = tuple(klass.split("+")) if explained else (klass,)
    return O.Finding(klass=klass, text=text, detail=_first(j), explained=explained,
                     actual={"values": values, "indices": indices}, atoms=atoms,
                     severity=severity_of(atoms, case.spec), judgement=j,
                     extra={"variants": list(atoms) if explained else [],
                            "alternatives": [k.split("+") for k in keys[1:]],
                            "ambiguous": len(keys) > 1, "family": True}, **common)


# --------------------------------------------------------------------------- the session's hook


def check_batch(session: Session, batch: Sequence[FamilyCase]) -> list[O.Finding]:
    """Every oracle on one family example (the session's ``check_batch`` for family ops)."""
    findings: list[O.Finding] = []
    oracles = session.options.oracles
    ref = session.engine_module.NAME
    exps: list[tuple[np.ndarray, np.ndarray | None] | None] = []
    for case in batch:
        try:
            exps.append(expected(case, ref))
        except PoolcheckError as exc:
            exps.append(None)
            findings.append(O.Finding(kind=FindingKind.ENGINE, op=case.op, subject=ref, klass="error",
                                      text="the engine raised", detail=str(exc), case=_stand_in(case), explained=False))
    if "engines" in oracles:
        others = [name for name in session.engines if name != ref]
        for case, exp in zip(batch, exps):
            if exp is not None:
                findings += check_family_engines(case, exp, others)
            if session.options.engine_checks == "first":
                break
    session.progress.cases += len(batch)
    reached = [family_regions_of(case.spec, case.x, case.indices) for case in batch]
    for hit, exp in zip(reached, exps):
        if exp is not None:
            session.progress.coverage.record(ref, hit)
    if "peers" not in oracles:
        return findings
    items = [(case.spec, case.x, case.indices) for case in batch]
    for peer in session.peers:
        status = session.progress.peer_status.setdefault(peer.name, Counter())
        prefer = session.preference.setdefault(peer.name, Counter())  # the history the core ops share
        results = call_peer_many(peer, items, isolated=session.options.isolated,
                                 timeout=session.options.peer_timeout)
        for case, exp, hit, result in zip(batch, exps, reached, results):
            status[result.status] += 1
            if result.status in ("ok", "rejects"):
                session.progress.compared[peer.name] += 1
                session.progress.coverage.record(peer.name, hit)
            elif result.status == PeerStatus.DECLINED:
                session.progress.coverage.record_declined(peer.name, hit)
            if exp is None:
                continue
            f = judge_family_peer(case, peer.name, result, exp, session.versions.get(peer.name), prefer)
            if f is not None:
                findings.append(f)
                if f.explained and not f.extra.get("ambiguous", True):
                    prefer.update(f.extra.get("variants", ()))
    return findings


def expected_outputs(case: FamilyCase) -> dict[str, Any]:
    """What a saved family case expects (its engine's outputs)."""
    values, indices = expected(case)
    return _outputs(values, indices)


__all__ = ["FAMILY_FLAGS", "FamilyCase", "check_batch", "check_family_arguments", "check_family_engines",
           "convention_of", "expected", "expected_outputs", "family_batches", "family_configs", "is_family_ops",
           "judge_family_peer"]
