"""``poolcheck audit``: every pooling node of a model (subgraphs of If, Loop and Scan included),
its canonical configuration, its output shape under each convention, its risk classes (with the
known divergences they point at), and its exact configuration run on the engines and peers with
random and adversarial inputs, each divergence named by the fuzzer's diagnosis.

Nodes with the same configuration, input shape (batch and channels cut as :func:`audit_shape`
says) and element type get the same inputs, so each distinct configuration runs once and its
verdicts are shared by its nodes. A node that cannot be judged (an element type or size poolcheck
does not model, anything that goes wrong while preparing it) becomes that node's error, naming
the model and the node; the other nodes are still judged."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from poolcheck.api import run_spec
from poolcheck.cases.model import Case
from poolcheck.cases.onnx_import import ONNX_NODE_OPS, OV_NODE_OPS, PoolNode, model_pool_nodes
from poolcheck.corpus import KNOWN_DIR
from poolcheck.engines import numpy_engine
from poolcheck.errors import PoolcheckError
from poolcheck.fuzz.diagnosis import diagnose_output
from poolcheck.fuzz.known import known_entries
from poolcheck.models.risk import KnownMatch, Risk, family_risks, known_matches, risk_classes
from poolcheck.peers.base import Peer
from poolcheck.peers.isolation import start_workers
from poolcheck.results import CaseResult, Check, FindingKind, RunResult, Verdict
from poolcheck.runner import POLICY_SEARCH_LIMIT, new_result, peer_checks, record_peer_versions, run_case
from poolcheck.spec import dtypes
from poolcheck.spec.family import FamilySpec, family_output_shape, unpool_shape
from poolcheck.spec.limits import MAX_ELEMENTS
from poolcheck.spec.operators import OPERATORS, operator
from poolcheck.spec.shape import axis_rules, resolve

#: Seed of the audit inputs: the same model gives the same inputs (and verdicts) everywhere.
AUDIT_SEED = 20240601
#: The node types ``audit`` judges: ONNX's, then OpenVINO IR's (AvgPool; Adaptive*).
POOLING_NODE_TYPES = tuple(dict.fromkeys((*ONNX_NODE_OPS, *OV_NODE_OPS)))
#: Input kinds each node runs with.
INPUT_KINDS = ("random", "adversarial")

#: ``progress(phase, done, total)``: how far the audit is (``poolcheck audit`` draws a bar).
ProgressFn = Callable[[str, int, int], None]


class NodeCannotBeJudged(PoolcheckError):
    """A node poolcheck does not model (its element type, its size): the node's error."""


@dataclass
class NodeAudit:
    """What the audit found for one pooling node."""

    node: PoolNode
    output_shapes: dict[str, list[int | None]] = field(default_factory=dict)  # convention -> output shape
    risks: list[Risk] = field(default_factory=list)
    known: list[KnownMatch] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    results: list[CaseResult] = field(default_factory=list)
    #: Why the audit could not judge this node (besides the reader's ``node.problem``).
    error: str = ""
    #: The first node with this node's configuration, input shape and type (None: this is the first).
    same_as: str | None = None
    #: Which distinct configuration this node runs as (None: not judged).
    config: int | None = None

    @property
    def problem(self) -> str:
        """Why this node is not judged, or ""."""
        return self.node.problem or self.error

    @property
    def operator(self) -> str:
        """The operator version the node is judged as (``MaxPool-8``), or its type when poolcheck
        has no row for its version."""
        return operator_title(self.node)

    @property
    def output_shape(self) -> list[int | None] | None:
        """The node's output shape under poolcheck's rule (OpenVINO's runtime rule for MaxPool
        and AveragePool, the operator's own for the rest of the family)."""
        shapes = self.output_shapes
        return shapes.get("openvino-runtime") or next(iter(shapes.values()), None)

    def diagnoses(self) -> dict[str, list[str]]:
        """Each differing peer with the diagnoses of its divergences on this node (distinct)."""
        out: dict[str, list[str]] = {}
        for r in self.results:
            for c in r.checks:
                if c.kind == "peer" and c.verdict == "fail":
                    texts = out.setdefault(c.runner, [])
                    if c.diagnosis and c.diagnosis not in texts:
                        texts.append(c.diagnosis)
        return out

    @property
    def differing_peers(self) -> list[str]:
        return sorted({c.runner for r in self.results for c in r.checks if c.kind == "peer" and c.verdict == "fail"})

    def peer_severities(self) -> dict[str, str]:
        """Each differing peer with the weightiest severity of its divergences on this node."""
        order = ["violation", "unspecified", "limitation", "erratum"]
        out: dict[str, str] = {}
        for r in self.results:
            for c in r.checks:
                if c.kind == "peer" and c.verdict not in ("pass", "skip"):
                    sev = c.severity or "violation"
                    prev = out.get(c.runner)
                    if prev is None or order.index(sev) < order.index(prev):
                        out[c.runner] = sev
        return out

    def to_dict(self) -> dict[str, Any]:
        n = self.node
        return {"node": n.name, "op_type": n.op_type, "op": n.case_op, "operator": self.operator,
                "opset": n.extra.get("opset"), "attributes": n.attributes,
                "input": n.input_name, "input_shape": list(n.input_shape or []), "dtype": n.dtype,
                "config": n.spec.describe() if n.spec else None, "problem": self.problem or None,
                "output_shapes": self.output_shapes, "risks": [r.value for r in self.risks],
                "known_divergences": [{"risk": k.risk.value, "case": k.case_id, "signature": k.signature,
                                       "peer": k.peer} for k in self.known],
                "affected_peers": sorted({k.peer for k in self.known if k.peer}),
                "differing_peers": self.peer_severities(),
                "diagnoses": self.diagnoses(),
                "same_configuration_as": self.same_as,
                "cases": [{"id": r.case_id, "verdict": r.verdict,
                           "checks": {c.runner: c.verdict for c in r.checks},
                           "diagnoses": {c.runner: c.diagnosis for c in r.checks
                                         if c.kind == "peer" and c.verdict == "fail" and c.diagnosis}}
                          for r in self.results]}


def operator_title(node: PoolNode) -> str:
    """The versioned name of the row ``node`` is judged as (``MaxPool-8``), else its op type."""
    return OPERATORS[node.case_op].title if node.case_op in OPERATORS else node.op_type


def convention_shapes(node: PoolNode) -> dict[str, list[int | None]]:
    """The output shape under each convention's rule (as ``poolcheck shape --convention all``);
    for the rest of the family but LpPool, the one shape its operator defines."""
    spec, shape = node.spec, node.input_shape
    assert spec is not None and shape is not None
    if isinstance(spec, FamilySpec):
        if spec.window is None or spec.op != "lp":
            return {spec.convention if spec.convention == "onnx" else "openvino-runtime":
                    list(family_output_shape(spec, shape))}
        spec = spec.window
    geom = resolve(spec, shape)
    out: dict[str, list[int | None]] = {}
    for i, a in enumerate(geom.axes):
        pb, pe = (spec.pads_begin[i], spec.pads_end[i])
        for r in axis_rules(a.size, spec.kernel[i], spec.strides[i], spec.dilations[i], pb, pe,
                            spec.applied_rounding, spec.auto_pad):
            out.setdefault(r.convention, list(shape[:2])).append(r.out)
    return out


def audit_shape(shape: Sequence[int], limit: int = POLICY_SEARCH_LIMIT) -> tuple[int, ...]:
    """The node's input shape with batch and channels cut so the input stays within ``limit``
    elements (every plane is pooled alone: the geometry is unchanged), so a peer's divergence can
    still be weighed under the open policies (the runner re-runs inputs up to that size)."""
    n, c, *spatial = (int(v) for v in shape)
    plane = int(np.prod(spatial))
    if n * c * plane <= limit:
        return tuple(int(v) for v in shape)
    n = 1
    c = max(1, min(c, limit // max(plane, 1)))
    return (n, c, *spatial)


def _max_like(spec: Any) -> bool:
    """Whether ``spec`` picks input elements (max pooling: NaN, -inf and +inf matter)."""
    return spec is not None and spec.op in ("max", "global_max", "adaptive_max")


def audit_inputs(node: PoolNode, seed: int = AUDIT_SEED) -> dict[str, np.ndarray]:
    """A random input and an adversarial one (NaN, ties, -inf/+inf, extremes) of the node's shape
    (batch and channels cut to :func:`audit_shape`)."""
    assert node.input_shape is not None
    dtype = dtypes.as_dtype(node.dtype)
    rng = np.random.default_rng(seed)
    shape = audit_shape(node.input_shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        rnd = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
        adv = rng.integers(-2, 3, size=shape).clip(info.min, info.max).astype(dtype)  # many ties
        flat = adv.reshape(-1)
        flat[rng.choice(flat.size, size=max(1, flat.size // 50), replace=False)] = info.max
        flat[rng.choice(flat.size, size=max(1, flat.size // 50), replace=False)] = info.min
        return {"random": rnd, "adversarial": adv}
    rnd = rng.standard_normal(shape).astype(dtype)
    adv = rng.integers(-3, 4, size=shape).astype(dtype)  # small integers: ties in almost every window
    flat = adv.reshape(-1)
    picks = rng.permutation(flat.size)
    k = max(1, flat.size // 64)
    big = dtypes.finfo(dtype).max if _max_like(node.spec) else dtype.type(1e4)
    specials = [np.nan, -np.inf, np.inf, big, -big] if _max_like(node.spec) else [np.nan, big, -big]
    for j, v in enumerate(specials):
        flat[picks[j * k:(j + 1) * k]] = v
    return {"random": rnd, "adversarial": adv}


def case_spec(node: PoolNode) -> Any:
    """The node's configuration as its cases run it: a MaxUnpool's whole ``output_shape`` takes
    the batch and channels :func:`audit_shape` cut its input to."""
    spec = node.spec
    assert node.input_shape is not None
    if isinstance(spec, FamilySpec) and spec.op == "unpool" and spec.output_shape is not None:
        return spec.replace(output_shape=(*audit_shape(node.input_shape)[:2], *spec.output_shape[2:]))
    return spec


def unpool_indices(spec: FamilySpec, x_shape: Sequence[int], kind: str, seed: int = AUDIT_SEED) -> np.ndarray:
    """MaxUnpool's I for an audit input of ``x_shape``. Random: the indices MaxPool (the window
    MaxUnpool inverts) gives on a random tensor of the output shape, where that MaxPool gives X's
    shape; otherwise a random position in each element's own (n, c) plane. Adversarial: every
    element of a plane sent to one of its first three positions (indices that collide)."""
    rng = np.random.default_rng([seed, 1])
    out_shape = unpool_shape(spec, x_shape)
    plane = int(np.prod(out_shape[2:]))
    n, c, *spatial = (int(v) for v in x_shape)
    window = spec.window
    assert window is not None
    if kind == "random" and resolve(window, out_shape).output_shape == tuple(x_shape):
        _, found = run_spec(window, rng.standard_normal(out_shape).astype(np.float32), engine="numpy")
        assert found is not None
        return np.asarray(found, dtype=np.int64)
    base = (np.arange(n * c, dtype=np.int64) * plane).reshape(n, c, *([1] * len(spatial)))
    return base + rng.integers(0, plane if kind == "random" else min(plane, 3), size=tuple(x_shape))


def node_cases(node: PoolNode, model: Path, ident: str | None = None) -> list[Case]:
    """The node's exact configuration as cases, one per input kind (no documented outputs: the
    engines and peers are judged against the reference). ``ident`` names the cases (default:
    the node's name)."""
    if node.spec is None or node.input_shape is None:
        return []
    convention = operator(node.case_op).convention
    spec = case_spec(node)
    out = []
    for kind, x in audit_inputs(node).items():
        inputs = ({"I": unpool_indices(spec, x.shape, kind)}
                  if isinstance(spec, FamilySpec) and spec.op == "unpool" else {})
        out.append(Case(id=f"{ident or node.name}/{kind}", op=node.case_op, convention=convention, spec=spec,
                        attributes=dict(node.attributes), dtype=x.dtype, input=x, expected={}, inputs=inputs,
                        title=f"{model.name}: {operator_title(node)} {node.name} ({kind} input)",
                        source={"model": str(model), "node": node.name}, tags=["audit", kind]))
    return out


def judgeable(node: PoolNode) -> None:
    """Raise :class:`NodeCannotBeJudged` for a node whose element type the operator's catalogue
    row does not take (bfloat16, float8, bool, string; uint64 where the operator excludes it) or
    whose one plane is past poolcheck's limits."""
    row = operator(node.case_op)
    if node.dtype not in row.dtypes:
        raise NodeCannotBeJudged(f"cannot judge: dtype {node.dtype} ({row.name} as poolcheck models it takes "
                                 f"{', '.join(row.dtypes)})")
    assert node.input_shape is not None
    plane = int(np.prod([int(v) for v in node.input_shape[2:]], dtype=object))
    if plane > MAX_ELEMENTS:
        raise NodeCannotBeJudged(f"cannot judge: one plane of its input ({'x'.join(map(str, node.input_shape[2:]))}) "
                                 f"holds {plane:,} elements, over the limit of {MAX_ELEMENTS:,}")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, PoolcheckError):
        text = str(exc)
    elif isinstance(exc, MemoryError):
        text = "out of memory"
    else:
        text = f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    text = text if len(text) <= 300 else text[:297] + "..."
    return text if text.startswith("cannot judge") else f"cannot judge: {text}"


def config_key(node: PoolNode) -> tuple[Any, ...]:
    """What a node's cases depend on: nodes with equal keys get equal inputs and verdicts."""
    assert node.input_shape is not None
    return (node.case_op, case_spec(node), audit_shape(node.input_shape), node.dtype)


def audit_nodes(nodes: Sequence[PoolNode], model: Path, entries: Sequence[object],
                progress: ProgressFn | None = None) -> tuple[list[NodeAudit], dict[tuple[Any, ...], list[Case]]]:
    """Shapes, risks and known matches for every node, and the cases of each distinct
    configuration (running them is the caller's). A node that cannot be judged gets its error."""
    audits = []
    configs: dict[tuple[Any, ...], list[Case]] = {}
    first: dict[tuple[Any, ...], str] = {}
    found: dict[tuple[Any, ...], tuple[dict[str, list[int | None]], list[Risk], list[KnownMatch]]] = {}
    for i, node in enumerate(nodes):
        if progress is not None:
            progress("reading nodes", i, len(nodes))
        a = NodeAudit(node)
        audits.append(a)
        if node.spec is None or node.input_shape is None:
            continue
        try:
            judgeable(node)
            seen = found.get((node.case_op, node.spec, node.input_shape, node.dtype))
            if seen is None:  # a node like an earlier one (same attributes, shape, type) has its findings
                risks = (family_risks(node.spec, node.input_shape, node.dtype) if isinstance(node.spec, FamilySpec)
                         else risk_classes(node.spec, node.input_shape, node.dtype))
                seen = found[(node.case_op, node.spec, node.input_shape, node.dtype)] = (
                    convention_shapes(node), risks, known_matches(node.spec.op, risks, entries))
            a.output_shapes, a.risks, a.known = dict(seen[0]), list(seen[1]), list(seen[2])
            key = config_key(node)
            if key not in configs:
                configs[key] = node_cases(node, model, ident=f"config-{len(configs)}")
                first[key] = node.name
            else:
                a.same_as = first[key]
            a.cases = configs[key]
            a.config = list(configs).index(key)
        except Exception as exc:  # the per-node boundary: this node's error, the others still judged
            a.error = _reason(exc)
    if progress is not None:
        progress("reading nodes", len(nodes), len(nodes))
    return audits, configs


@dataclass
class ModelAudit:
    """A whole ``poolcheck audit``: the per-node findings and the run result they make."""

    model: Path
    audits: list[NodeAudit]
    result: RunResult
    peers: list[str]
    #: How many distinct configurations ran (nodes sharing one share its verdicts).
    configurations: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document (schema ``poolcheck.audit/1``)."""
        return {"schema": "poolcheck.audit/1", "model": str(self.model), "peers": self.peers,
                "configurations": self.configurations, "interrupted": self.result.interrupted,
                "nodes": [a.to_dict() for a in self.audits]}


def registry_preference(entries: Sequence[object]) -> dict[str, Counter[str]]:
    """Per peer, how often the registry records each behaviour: the fuzzer's tie-breaking history,
    so an output several explanations fit is named as the registry names it."""
    out: dict[str, Counter[str]] = {}
    for e in entries:
        sig = e.sig  # type: ignore[attr-defined]
        if sig.kind == FindingKind.PEER:
            out.setdefault(sig.subject, Counter())[sig.detail] += 1
    return out


def diagnose_check(case: Case, check: Check, peer_result: Any, prefer: Mapping[str, int] | None = None) -> None:
    """Name what a differing peer did (the fuzzer's diagnosis: the variant of the reference that
    reproduces the peer's output, verified by replay) in ``check.diagnosis``; a reason the check
    already carries (a policy the spec leaves open) is kept after it."""
    out = getattr(peer_result, "output", None)
    if check.verdict != Verdict.FAIL or out is None or check.diagnosis == "output contract":
        return
    if isinstance(case.spec, FamilySpec):  # named already by the family variants (runner.family_peer_severity)
        check.diagnosis = check.diagnosis or f"unexplained ({OPERATORS[case.op].title})"
        return
    try:
        values = np.asarray(out.values)
        indices = None if out.indices is None else np.asarray(out.indices).astype(np.int64)
        found = diagnose_output(numpy_engine, case.pool_spec, case.input, values, indices, prefer)
    except Exception as exc:  # a diagnosis that cannot run says so; the verdict stands
        check.diagnosis = "; ".join(filter(None, [f"no diagnosis ({_reason(exc).removeprefix('cannot judge: ')})",
                                                  check.diagnosis]))
        return
    text = found.text if found.explained else f"unexplained: {found.text}"
    check.diagnosis = "; ".join(filter(None, [text, check.diagnosis]))


def _rename(r: CaseResult, node: PoolNode, model: Path, replay: str) -> CaseResult:
    kind = r.case_id.rsplit("/", 1)[-1]
    return dataclasses.replace(r, case_id=f"{node.name}/{kind}", source=f"{model}:{node.name}", replay=replay,
                               title=f"{model.name}: {operator_title(node)} {node.name} ({kind} input)")


def audit_model(model: Path, input_shapes: dict[str, tuple[int, ...]], peers: Sequence[Peer], engines: Sequence[str],
                *, timeout: float, command: str, replay: str, progress: ProgressFn | None = None) -> ModelAudit:
    """Read every pooling node of ``model`` (raises PoolcheckError for an unreadable model or
    shapes that cannot be inferred), then run each distinct configuration on ``engines`` and
    ``peers`` once, diagnose each divergence, and give every node its configuration's verdicts.
    A node poolcheck cannot judge becomes an error verdict naming model and node; an interrupt
    keeps what ran (``result.interrupted``)."""
    def tick(phase: str, done: int, total: int) -> None:
        if progress is not None:
            progress(phase, done, total)

    nodes = model_pool_nodes(model, input_shapes)
    entries, _ = known_entries([KNOWN_DIR])
    audits, configs = audit_nodes(nodes, model, entries, progress)
    prefer = registry_preference(entries)
    result = new_result(command, kind="run")
    cases = [c for cs in configs.values() for c in cs]
    ran: dict[str, CaseResult] = {}
    judged: list[str] = []

    def diagnose(case: Case, peer: str, peer_result: Any, check: Check) -> None:
        if peer not in judged:  # the peers' answers are judged in --peers order
            judged.append(peer)
            tick(f"running on {peer}", len(judged) - 1, len(peers))
        # named as it is judged, while the slower peers still compute
        diagnose_check(case, check, peer_result, prefer.get(check.runner))

    try:
        by_case: dict[str, list[Check]] = {c.id: [] for c in cases}
        if cases and peers:
            # every runtime loads, then computes, side by side (seconds each with torch, OpenVINO
            # and JAX), while the answers in are judged and diagnosed in the order of the peers
            tick(f"loading {len(peers)} peers" if len(peers) > 1 else f"running on {peers[0].name}", 0, len(peers))
            start_workers(peers)
            by_case = peer_checks(cases, peers, timeout=timeout, on_output=diagnose)
        for k, case in enumerate(cases):
            tick("judging", k, len(cases))
            ran[case.id] = run_case(case, list(engines), by_case.get(case.id, []))
        record_peer_versions(result, list(peers))
    except KeyboardInterrupt:
        result.interrupted = True
    for a in audits:
        if a.problem:  # a node poolcheck cannot judge: an error verdict (exit 2) naming model and node
            result.cases.append(CaseResult(case_id=a.node.name, verdict=Verdict.ERROR, source=f"{model}:{a.node.name}",
                                           op=a.node.op_type, message=f"{model}: node {a.node.name!r}: {a.problem}"))
            continue
        for case in a.cases:
            if case.id in ran:
                r = _rename(ran[case.id], a.node, model, replay)
                a.results.append(r)
                result.cases.append(r)
    tick("done", 1, 1)
    return ModelAudit(model, audits, result, [p.name for p in peers], configurations=len(configs))
