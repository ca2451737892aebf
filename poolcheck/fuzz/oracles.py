"""Oracles: what the fuzzer checks on every generated configuration.

- **engines**: the NumPy engine against the C engine (bit-exact max, ULP-bound average);
- **peers**: the reference engine against each peer, with a diagnosis of every difference;
- **shape rules**: output shapes against the *written* shape rules (a document-vs-runtime
  divergence is a finding of its own class, reported once);
- **metamorphic** properties that need no second runtime: indices gather back to the values,
  identity for kernel 1 stride 1, flipping a spatial axis swaps pads_begin/pads_end (and
  same_upper/same_lower), explicit padding + no padding equals padded pooling, shift invariance
  of max, the average (and max) of a constant.

Each oracle returns :class:`Finding` objects; a finding's *signature* (kind, op, subject, class)
deduplicates divergences.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.engines import get_engine
from poolcheck.errors import PoolcheckError
from poolcheck.fuzz.diagnosis import STATUS_SEVERITY, Diagnosis, diagnose_output, diagnose_rejection, severity_of
from poolcheck.fuzz.diagnosis.replay import array_key
from poolcheck.fuzz.reference import compute_expected, expected_for
from poolcheck.fuzz.strategies import FuzzCase
from poolcheck.judgement import (
    Judgement,
    Mismatch,
    Outputs,
    avg_tolerance,
    close_values,
    first_difference,
    judgement_of,
    mismatch,
    tolerance_for,
)
from poolcheck.judgement import output_contract as judge_contract
from poolcheck.peers.base import PeerResult
from poolcheck.results import FindingKind, PeerStatus, Severity, Signature
from poolcheck.spec import attributes as A
from poolcheck.spec import dtypes
from poolcheck.spec.indices import index_layout
from poolcheck.spec.operators import parse
from poolcheck.spec.policy import SPEC
from poolcheck.spec.shape import Geometry, axis_rules, resolve

KINDS = tuple(k.value for k in FindingKind)


@dataclass
class Finding:
    """One divergence on one configuration."""

    kind: FindingKind
    op: str  # "max" | "avg"
    subject: str  # peer name, "numpy vs c", "openvino-written", engine name
    klass: str  # diagnosis class (stable; part of the signature)
    text: str  # the diagnosis for people
    detail: str  # the first difference, or the peer's message
    case: FuzzCase
    explained: bool = True
    status: PeerStatus = PeerStatus.OK  # the peer's status
    version: str | None = None
    actual: dict[str, Any] = field(default_factory=dict)  # the subject's outputs (arrays)
    extra: dict[str, Any] = field(default_factory=dict)
    atoms: tuple[str, ...] = ()  # the separate behaviours the diagnosis names (default: the class)
    atom: str = ""  # the one behaviour this copy stands for (see :meth:`focused`)
    #: The weight of this divergence (set by the diagnosis; None until classified).
    severity: Severity | None = None
    #: What the reference gives here (values, indices, shape), kept from where the divergence was
    #: found (a document finding: the shape the written rule gives).
    expected: dict[str, Any] = field(default_factory=dict)
    #: The judgement of ``actual`` against ``expected``, made once where the outputs were compared
    #: (None where no output was compared: a rejection, a crash, a broken property, a shape rule).
    mismatch: Mismatch | None = None
    #: That judgement described for a report (the differing elements with their windows), made
    #: from ``mismatch`` when first asked for -- never by comparing again: most divergences are
    #: known ones or repeats and are never reported.
    judgement: Judgement | None = None

    def judged(self) -> Judgement:
        if self.judgement is None:
            self.judgement = describe(self)
        return self.judgement

    @property
    def weight(self) -> Severity:
        """The severity: the diagnosis's, else by kind (a written shape rule that the runtimes
        contradict is an erratum; engines disagreeing or a broken metamorphic property is a
        violation; so is a peer accepting an invalid configuration)."""
        if self.severity is not None:
            return self.severity
        return Severity.ERRATUM if self.kind == "document" else Severity.VIOLATION

    def __post_init__(self) -> None:
        self.kind = FindingKind(self.kind)
        self.status = PeerStatus(self.status)

    @property
    def sig(self) -> Signature:
        """What deduplicates this divergence (kind, op, subject, the one behaviour)."""
        return Signature(self.kind, self.op, self.subject, self.atom or self.klass)

    @property
    def signature(self) -> str:
        """:attr:`sig` written out (``kind|op|subject|detail``): the key of maps and tags."""
        return self.sig.key

    def focused(self) -> list[Finding]:
        """One copy per behaviour named by the diagnosis: an example where a peer both ignores NaN
        and gives -FLT_MAX for an empty window evidences two divergences, each deduplicated and
        shrunk on its own."""
        def weight(atom: str) -> Severity | None:  # each behaviour keeps its own severity
            return severity_of((atom,), self.case.spec) if self.status == "ok" and self.severity else self.severity

        return [dataclasses.replace(self, atom=a, severity=weight(a)) for a in (self.atoms or (self.klass,))]

    @property
    def size(self) -> tuple[int, int]:
        """For keeping the smaller of two reproducers: input elements, then spatial rank."""
        return int(self.case.x.size), int(self.case.x.ndim) - 2


# --------------------------------------------------------------------------- helpers


def engine_accepts(case: FuzzCase) -> tuple[bool, str]:
    """Whether poolcheck's validation accepts the case (attributes, input, geometry). A generated
    valid case was built through the validating constructors already; only a deliberately broken
    one is parsed again from its attributes."""
    try:
        spec = parse(case.op_name, case.attributes) if case.mutation else case.spec
        A.check_input(spec, case.x.shape, case.x.dtype)
        resolve(spec, case.x.shape)
    except PoolcheckError as exc:
        return False, str(exc)
    return True, ""


def outputs_dict(base: Outputs, geom: Geometry) -> dict[str, Any]:
    """The reference's outputs as a finding (and its case file) keeps them."""
    out: dict[str, Any] = {"values": base.values, "shape": list(geom.output_shape)}
    if base.indices is not None:
        out["indices"] = base.indices
    return out


def expected_outputs(finding: Finding, engine: str = "auto") -> dict[str, Any]:
    """What a find's case file expects: what the finding carries, or -- for one made where no
    output was computed (poolcheck accepting a configuration it should reject) -- the engine's
    outputs for its configuration. An invalid configuration has none."""
    if finding.expected or finding.kind == "invalid":
        return dict(finding.expected)
    return outputs_dict(*expected_for(get_engine(engine), finding.case))


def describe(finding: Finding) -> Judgement:
    """A finding's judgement (its :attr:`~Finding.mismatch`) described for a report: the differing
    elements with their windows, and how many differ. Nothing is compared again: a finding whose
    outputs were not compared (a rejection, a broken property) has no differing elements."""
    mm, expected, actual, case = finding.mismatch, finding.expected, finding.actual, finding.case
    if mm is None or expected.get("values") is None or actual.get("values") is None:
        return Judgement()
    geom = resolve(case.spec, case.x.shape)
    layout = index_layout(case.spec, case.x.shape) if case.op == "max" else None
    base = Outputs(np.asarray(expected["values"]),
                   None if expected.get("indices") is None else np.asarray(expected["indices"]))
    indices = None if actual.get("indices") is None else np.asarray(actual["indices"])
    return judgement_of(case.x, geom, layout, base, np.asarray(actual["values"]), indices, mm)


# --------------------------------------------------------------------------- engines


def check_engines(case: FuzzCase, engines: dict[str, ModuleType], base: Outputs, geom: Geometry) -> list[Finding]:
    """Every other engine against the reference engine under the average rule of
    :mod:`poolcheck.judgement` (max bit-exact; both engines sum in float64 and round once into
    the result type, so both sides err: the float64 bound counts twice)."""
    names = list(engines)
    findings = []
    for name in names[1:]:
        other, _ = expected_for(engines[name], case)
        tol = None
        if case.op == "avg" and dtypes.is_float(case.x.dtype):
            tol = avg_tolerance(case.x, geom, case.spec.exclude_pad, SPEC, base.values, engines[names[0]],
                                np.dtype(np.float64), result=case.x.dtype, both_float64=True)
        mm = mismatch(base, other.values, other.indices, tol)
        if mm:
            findings.append(Finding(kind=FindingKind.ENGINE, op=case.op, subject=f"{names[0]} vs {name}",
                                    klass=mm.what(),
                                    text=f"the {name} engine differs from the {names[0]} engine ({mm.what()})",
                                    detail=first_difference(base, other.values, other.indices, mm), case=case,
                                    explained=False, actual={"values": other.values, "indices": other.indices},
                                    expected=outputs_dict(base, geom), mismatch=mm))
    return findings


def geom_kernel(geom: Geometry) -> list[int]:
    return [a.kernel for a in geom.axes]


# --------------------------------------------------------------------------- shape rules

#: The written rules depend on eight small integers/strings; configurations repeat them often.
_axis_rules = functools.lru_cache(maxsize=65536)(axis_rules)


def check_shape_rules(case: FuzzCase, geom: Geometry) -> list[Finding]:
    """Output size per axis against the written rule of the case's convention."""
    spec = case.spec
    rule_name = "openvino-written" if spec.convention == "openvino" else "onnx"
    for i, a in enumerate(geom.axes):
        rules = _axis_rules(a.size, spec.kernel[i], spec.strides[i], spec.dilations[i], spec.pads_begin[i],
                            spec.pads_end[i], spec.applied_rounding, spec.auto_pad)
        written = next((r for r in rules if r.convention == rule_name), None)
        if written is None or written.out == a.out:
            continue
        family = "same_*" if spec.auto_pad.startswith("same") else spec.auto_pad
        rounding = "any rounding" if family == "same_*" else spec.applied_rounding
        klass = f"{family}, {rounding}"
        written_shape = list(geom.output_shape)
        written_shape[2 + i] = written.out if written.out is not None else -1
        return [Finding(kind=FindingKind.DOCUMENT, op=spec.op, subject=f"{rule_name} rule", klass=klass,
                        text=f"the written {spec.convention} shape rule ({family}, {rounding}) gives {written.out} on axis {i}, " f"the runtimes and the engine {a.out}",
                        detail=f"axis {i}: written: {written.working}; runtime: {a.out}", case=case,
                        extra={"axis": i, "written_shape": written_shape, "runtime_shape": list(geom.output_shape), "working": written.working},
                        expected={"shape": written_shape})]
    return []


# --------------------------------------------------------------------------- metamorphic


def _violation(case: FuzzCase, engine_name: str, prop: str, text: str, detail: str) -> Finding:
    return Finding(kind=FindingKind.METAMORPHIC, op=case.op, subject=engine_name, klass=prop, text=text,
                   detail=detail, case=case, explained=False)


def _gather_back(case: FuzzCase, engine_name: str, base: Outputs, geom: Geometry) -> Finding | None:
    """Each index names an input element inside its own window whose value is the output
    ("indices ... of the selected elements"); empty windows are skipped."""
    if base.indices is None:
        return None
    spec, x = case.spec, case.x
    lay = index_layout(spec, x.shape)
    shape = tuple(x.shape)
    axis = spec.axis + len(shape) if spec.axis < 0 else spec.axis
    if axis > 2:
        return None  # the index no longer names the element (spatial coordinates before axis dropped)
    plane = math.prod(shape[2:])
    idx = base.indices.astype(np.int64)
    grid = np.indices(idx.shape)
    chosen = idx >= 0
    safe = np.where(chosen, idx, 0)
    if axis == 0:
        nc, sp = np.divmod(safe, plane)
    elif axis == 1:
        ch, sp = np.divmod(safe, plane)
        nc = grid[0] * shape[1] + ch
    else:
        nc, sp = grid[0] * shape[1] + grid[1], safe
    n, c = np.divmod(nc, shape[1])
    coords = np.unravel_index(sp, shape[2:], order=lay.order)  # type: ignore[call-overload]
    good = (n == grid[0]) & (c == grid[1])
    for i, a in enumerate(geom.axes):
        off = coords[i] + a.pad_begin - grid[2 + i] * a.stride
        good &= (off >= 0) & (off % a.dilation == 0) & (off // a.dilation < a.kernel)
    bad = chosen & ~good
    if bad.any():
        pos = tuple(int(v) for v in np.argwhere(bad)[0])
        where = [int(n[pos]), int(c[pos]), *(int(k[pos]) for k in coords)]
        return _violation(case, engine_name, "indices gather back", "an index names an element outside its window",
                          f"output {list(pos)}: index {int(idx[pos])} -> element {where}")
    gathered = x[(np.clip(n, 0, shape[0] - 1), np.clip(c, 0, shape[1] - 1), *coords)]
    bad = chosen & ~close_values(base.values, gathered, None)
    if bad.any():
        pos = tuple(int(v) for v in np.argwhere(bad)[0])
        return _violation(case, engine_name, "indices gather back",
                          "the value at the reported index is not the output value",
                          f"output {list(pos)}: value {base.values[pos]!r}, element value {gathered[pos]!r}")
    return None


def _identity(case: FuzzCase, engine_module: ModuleType, engine_name: str) -> Finding | None:
    """Kernel 1, stride 1, no padding: the output is the input (and each index its position)."""
    spec, x = case.spec, case.x
    n = spec.spatial_rank
    one = spec.replace(kernel=(1,) * n, strides=(1,) * n, pads_begin=(0,) * n, pads_end=(0,) * n,
                       auto_pad="explicit", rounding_type="floor")
    geom = resolve(one, x.shape)
    lay = index_layout(one, x.shape) if spec.op == "max" else None
    out = compute_expected(engine_module, x, geom, spec.op, exclude_pad=spec.exclude_pad, layout=lay)
    if not close_values(x, out.values, None).all():
        return _violation(case, engine_name, "identity", "kernel 1 stride 1 does not return the input",
                          first_difference(Outputs(x), out.values, None, mismatch(Outputs(x), out.values, None)))
    if out.indices is not None and lay is not None:
        flat = np.arange(x.size, dtype=np.int64).reshape(x.shape)
        if lay.order == "F":
            plane = math.prod(x.shape[2:])
            nc, sp = np.divmod(flat, plane)
            coords = np.unravel_index(sp, x.shape[2:])
            flat = nc * plane + np.ravel_multi_index(coords, x.shape[2:], order="F")
        want = flat % lay.modulus
        if not (want == out.indices.astype(np.int64)).all():
            pos = tuple(int(v) for v in np.argwhere(want != out.indices)[0])
            return _violation(case, engine_name, "identity", "kernel 1 stride 1 indices are not the positions",
                              f"at {list(pos)}: index {int(out.indices[pos])}, position {int(want[pos])}")
    return None


def _flip(case: FuzzCase, engine_module: ModuleType, engine_name: str, base: Outputs, geom: Geometry) -> Finding | None:
    """Flipping a spatial axis whose windows tile the padded axis exactly mirrors the output,
    with pads_begin/pads_end (or same_upper/same_lower) swapped. Values only: with ties the
    first-wins index becomes the last one."""
    spec, x = case.spec, case.x
    for i, a in enumerate(geom.axes):
        if (a.out - 1) * a.stride + a.dilated_kernel != a.size + a.pad_begin + a.pad_end:
            continue
        if spec.auto_pad in ("same_upper", "same_lower"):
            flipped = spec.replace(auto_pad="same_lower" if spec.auto_pad == "same_upper" else "same_upper")
        elif spec.auto_pad == "explicit":
            pb, pe = list(spec.pads_begin), list(spec.pads_end)
            pb[i], pe[i] = pe[i], pb[i]
            flipped = spec.replace(pads_begin=tuple(pb), pads_end=tuple(pe))
        else:
            flipped = spec
        g2 = resolve(flipped, x.shape)
        b = g2.axes[i]
        if (b.pad_begin, b.pad_end, b.out) != (a.pad_end, a.pad_begin, a.out):
            continue
        if any(g2.axes[j] != geom.axes[j] for j in range(len(geom.axes)) if j != i):
            continue
        xf = np.flip(x, axis=2 + i).copy()
        out = compute_expected(engine_module, xf, g2, spec.op, exclude_pad=spec.exclude_pad)
        want = np.flip(base.values, axis=2 + i)
        tol = None
        if spec.op == "avg":
            tol = avg_tolerance(x, geom, spec.exclude_pad, SPEC, base.values, engine_module, np.dtype(np.float64),
                                result=x.dtype, both_float64=True)
            tol = np.flip(tol, axis=2 + i)
        if not close_values(want, out.values, tol).all():
            return _violation(case, engine_name, "flip symmetry",
                              f"flipping spatial axis {i} (pads swapped) does not mirror the output",
                              first_difference(Outputs(want), out.values, None,
                                               mismatch(Outputs(want), out.values, None, tol)))
        return None
    return None


def _explicit_padding(case: FuzzCase, engine_module: ModuleType, engine_name: str, base: Outputs,
                      geom: Geometry) -> Finding | None:
    """Padding the input by hand (-inf for max, 0 for an average that counts padding) and
    pooling without padding gives the padded pooling's output."""
    spec, x = case.spec, case.x
    if spec.op == "avg" and spec.exclude_pad:
        return None
    if spec.rounding_type == "ceil_torch" or not (any(geom.pads_begin) or any(geom.pads_end)):
        return None  # ceil_torch depends on where the padding is; nothing to pad
    fill: float | int
    if spec.op == "max":
        fill = float("-inf") if dtypes.is_float(x.dtype) else int(np.iinfo(x.dtype).min)
    else:
        fill = 0
    # Positive pads are added by hand; a negative pad (ONNX SAME past the dilated kernel) crops.
    widths = [(0, 0), (0, 0)] + [(max(0, a.pad_begin), max(0, a.pad_end)) for a in geom.axes]
    xp = np.pad(x, widths, mode="constant", constant_values=fill)
    crop = (slice(None), slice(None)) + tuple(
        slice(max(0, -a.pad_begin), xp.shape[2 + i] - max(0, -a.pad_end)) for i, a in enumerate(geom.axes))
    xp = xp[crop]
    n = spec.spatial_rank
    plain = spec.replace(pads_begin=(0,) * n, pads_end=(0,) * n, auto_pad="explicit")
    try:
        g2 = resolve(plain, xp.shape)
    except PoolcheckError:
        return None
    if g2.output_shape != geom.output_shape:
        return None
    out = compute_expected(engine_module, xp, g2, spec.op, exclude_pad=False)
    tol = None
    if spec.op == "avg":
        tol = avg_tolerance(x, geom, False, SPEC, base.values, engine_module, np.dtype(np.float64),
                            result=x.dtype, both_float64=True)
    if not close_values(base.values, out.values, tol).all():
        return _violation(case, engine_name, "explicit padding",
                          "padding by hand and pooling without padding differs from padded pooling",
                          first_difference(base, out.values, None, mismatch(base, out.values, None, tol)))
    return None


def _shift(case: FuzzCase, engine_module: ModuleType, engine_name: str, base: Outputs, geom: Geometry) -> Finding | None:
    """max(x + c) = max(x) + c (rounding is monotone), with the same indices when x + c is exact."""
    spec, x = case.spec, case.x
    if spec.op != "max":
        return None
    c = 3
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        if x.size and int(x.max()) > int(info.max) - c:
            return None
        xs = (x.astype(np.int64) + c).astype(x.dtype)
        exact = True
    else:
        with np.errstate(all="ignore"):
            xs = (x + x.dtype.type(c)).astype(x.dtype)
            finite = np.isfinite(x)
            exact = bool(np.all((xs[finite].astype(np.float64) - c) == x[finite].astype(np.float64)))
    lay = index_layout(spec, x.shape) if exact else None
    out = compute_expected(engine_module, xs, geom, "max", layout=lay)
    with np.errstate(all="ignore"):
        if x.dtype.kind in "iu":
            want = (base.values.astype(np.int64) + c).astype(x.dtype)
        else:
            want = (base.values + x.dtype.type(c)).astype(x.dtype)
    empty = w.empty_windows(geom)
    ok = close_values(want, out.values, None)
    if empty is not None:
        ok |= np.broadcast_to(empty, ok.shape)
    if not ok.all():
        return _violation(case, engine_name, "shift invariance", f"max(x + {c}) != max(x) + {c}",
                          first_difference(Outputs(want), out.values, None, mismatch(Outputs(want), out.values, None)))
    if exact and base.indices is not None and out.indices is not None and not (base.indices == out.indices).all():
        return _violation(case, engine_name, "shift invariance", f"adding {c} moved an index",
                          first_difference(base, base.values, out.indices, mismatch(base, base.values, out.indices)))
    return None


def _constant(case: FuzzCase, engine_module: ModuleType, engine_name: str, geom: Geometry) -> Finding | None:
    """The average of a constant is the constant where the divisor counts exactly the elements
    summed (exclude_pad: every window holding an input element; include_pad: windows with no
    padding); the max of a constant is the constant in every window holding an element."""
    spec, x = case.spec, case.x
    v = 3
    xc = np.full(x.shape, v, dtype=x.dtype)
    out = compute_expected(engine_module, xc, geom, spec.op, exclude_pad=spec.exclude_pad)
    n = len(geom.axes)
    mask = np.ones(out.values.shape, dtype=bool)
    for i, a in enumerate(geom.axes):
        if spec.op == "avg" and not spec.exclude_pad:
            inside = w.valid_counts(a) == a.kernel  # no padding or overhang tap
        else:
            inside = w.valid_counts(a) > 0
        mask = mask & w.broadcast_axis(inside, i, n)
    bad = mask & (out.values != v)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        return _violation(case, engine_name, f"{'average' if spec.op == 'avg' else 'max'} of a constant",
                          f"pooling a constant {v} does not give {v}",
                          f"at {list(pos)}: {out.values[pos]!r}")
    return None


def check_metamorphic(case: FuzzCase, engine_module: ModuleType, engine_name: str, base: Outputs,
                      geom: Geometry) -> list[Finding]:
    """Every metamorphic property on one engine (a violation is a bug in that engine)."""
    found = [
        _gather_back(case, engine_name, base, geom),
        _identity(case, engine_module, engine_name),
        _flip(case, engine_module, engine_name, base, geom),
        _explicit_padding(case, engine_module, engine_name, base, geom),
        _shift(case, engine_module, engine_name, base, geom),
        _constant(case, engine_module, engine_name, geom),
    ]
    # the engine's own outputs are what the case file of a broken property expects
    return [dataclasses.replace(f, expected=outputs_dict(base, geom)) for f in found if f is not None]


# --------------------------------------------------------------------------- peers


def output_contract(case: FuzzCase, values: Any, indices: Any) -> tuple[str, str] | None:
    """The output's element types against the attributes (:func:`poolcheck.judgement.output_contract`;
    the shape is judged with the values): (class, text) of the first breach, or None."""
    breaches = judge_contract(case.spec, case.x.shape, case.x.dtype, values, indices, check_shape=False)
    return (breaches[0].klass, breaches[0].message) if breaches else None


class DiagnosisMemo:
    """:func:`~poolcheck.fuzz.diagnosis.diagnose_output` kept by everything it reads: the engine,
    the configuration, the input, the output and the tie-breaking history. Hypothesis repeats
    configurations and a peer repeats its output on them; where the history has not moved since,
    the diagnosis is the one already made."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._kept: dict[tuple[Any, ...], Diagnosis] = {}

    def __call__(self, engine_module: ModuleType, spec: Any, x: np.ndarray, values: np.ndarray,
                 indices: np.ndarray | None, prefer: Mapping[str, int] | None = None) -> Diagnosis:
        key = (engine_module.__name__, spec, array_key(x), array_key(values),
               None if indices is None else array_key(indices), tuple(sorted((prefer or {}).items())))
        found = self._kept.get(key)
        if found is None:
            found = self._kept[key] = diagnose_output(engine_module, spec, x, values, indices, prefer)
            if len(self._kept) > self.size:
                del self._kept[next(iter(self._kept))]  # the oldest
        return found


def check_peer(case: FuzzCase, peer: str, result: PeerResult, engine_module: ModuleType, base: Outputs | None,
               geom: Geometry | None, version: str | None = None,
               prefer: Mapping[str, int] | None = None, *, memo: DiagnosisMemo | None = None) -> Finding | None:
    """Judge one peer result against the reference (``base`` is None when the engine rejects
    the case, i.e. a deliberately invalid configuration). ``prefer`` counts how often each
    variant alone explained this peer so far (it breaks ties between explanations); a difference
    is named by :func:`~poolcheck.fuzz.diagnosis.diagnose_output` (through ``memo`` when given)."""
    if result.status in ("declined", "unavailable"):
        return None
    if base is None or geom is None:  # the engine rejects this configuration
        if result.status == "rejects":
            return None
        klass = f"{'accepts' if result.status == 'ok' else result.status} invalid: {case.mutation or 'configuration'}"
        text = {
            "ok": "computes an output for a configuration the specification forbids",
            "crash": "crashes on an invalid configuration",
            "timeout": "hangs on an invalid configuration",
        }.get(result.status, result.status)
        actual = {}
        if result.output is not None:
            actual = {"values": result.output.values, "indices": result.output.indices}
        return Finding(kind=FindingKind.INVALID, op=case.op, subject=peer, klass=klass,
                       text=f"{text} ({case.mutation})", detail=result.message or text, case=case, explained=False,
                       status=PeerStatus(result.status), version=version, actual=actual)
    if result.status in ("crash", "timeout", "invalid"):
        return Finding(kind=FindingKind.PEER, op=case.op, subject=peer, klass=result.status,
                       text=f"{result.status}: {result.message}", detail=result.message, case=case, explained=False,
                       status=PeerStatus(result.status), version=version, severity=STATUS_SEVERITY.get(result.status))
    if result.status == "rejects":
        rejection = diagnose_rejection(case.spec, case.x, result.message)
        return Finding(kind=FindingKind.PEER, op=case.op, subject=peer, klass=rejection.klass, text=rejection.text,
                       detail=result.message, case=case, explained=rejection.explained, status=PeerStatus.REJECTS,
                       version=version, atoms=rejection.atoms, severity=rejection.severity)
    out = result.output
    assert out is not None
    contract = output_contract(case, out.values, out.indices)
    if contract is not None:
        klass, text = contract
        return Finding(kind=FindingKind.PEER, op=case.op, subject=peer, klass=klass, text=text, detail=text,
                       case=case, explained=True, status=PeerStatus.OK, version=version,
                       actual={"values": out.values if isinstance(out.values, np.ndarray)
                               and dtypes.is_numeric(out.values.dtype) else None},
                       severity=Severity.VIOLATION)
    values = np.asarray(out.values)
    indices = None if out.indices is None else np.asarray(out.indices)
    tol = tolerance_for(case.spec, case.x, geom, base.values, engine_module) if values.shape == base.values.shape else None
    mm = mismatch(base, values, indices, tol)
    if not mm:
        return None
    d = (memo or diagnose_output)(engine_module, case.spec, case.x, values, indices, prefer)
    if d.klass == "same":  # the diagnosis tolerance is the comparison's: cannot happen, but be safe
        return None
    actual = {"values": values, "indices": indices}
    return Finding(kind=FindingKind.PEER, op=case.op, subject=peer, klass=d.klass, text=d.text,
                   detail=first_difference(base, values, indices, mm), case=case, explained=d.explained,
                   status=PeerStatus.OK, version=version, actual=actual,
                   extra={"variants": d.variants, "ambiguous": d.ambiguous, "attribution": d.attribution,
                          "alternatives": d.alternatives},
                   atoms=d.atoms, severity=d.severity, expected=outputs_dict(base, geom), mismatch=mm)
