"""``poolcheck audit``: every pooling node of a model, its canonical configuration, its output
shape under each convention, its risk classes (with the known divergences they point at), and
its exact configuration run on the engines and peers with random and adversarial inputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from poolcheck.cases.model import Case
from poolcheck.cases.onnx_import import PoolNode, model_pool_nodes
from poolcheck.corpus import KNOWN_DIR
from poolcheck.fuzz.known import known_entries
from poolcheck.models.risk import KnownMatch, Risk, known_matches, risk_classes
from poolcheck.peers.base import Peer
from poolcheck.results import CaseResult, RunResult, Verdict
from poolcheck.runner import POLICY_SEARCH_LIMIT, new_result, peer_checks, record_peer_versions, run_case
from poolcheck.spec import dtypes
from poolcheck.spec.operators import operator
from poolcheck.spec.shape import axis_rules, resolve

#: Seed of the audit inputs: the same model gives the same inputs (and verdicts) everywhere.
AUDIT_SEED = 20240601
#: Input kinds each node runs with.
INPUT_KINDS = ("random", "adversarial")


@dataclass
class NodeAudit:
    """What the audit found for one pooling node."""

    node: PoolNode
    output_shapes: dict[str, list[int | None]] = field(default_factory=dict)  # convention -> output shape
    risks: list[Risk] = field(default_factory=list)
    known: list[KnownMatch] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    results: list[CaseResult] = field(default_factory=list)

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
        return {"node": n.name, "op_type": n.op_type, "op": n.case_op, "attributes": n.attributes,
                "input": n.input_name, "input_shape": list(n.input_shape or []), "dtype": n.dtype,
                "config": n.spec.describe() if n.spec else None, "problem": n.problem or None,
                "output_shapes": self.output_shapes, "risks": [r.value for r in self.risks],
                "known_divergences": [{"risk": k.risk.value, "case": k.case_id, "signature": k.signature,
                                       "peer": k.peer} for k in self.known],
                "affected_peers": sorted({k.peer for k in self.known if k.peer}),
                "differing_peers": self.peer_severities(),
                "cases": [{"id": r.case_id, "verdict": r.verdict,
                           "checks": {c.runner: c.verdict for c in r.checks}} for r in self.results]}


def convention_shapes(node: PoolNode) -> dict[str, list[int | None]]:
    """The output shape under each convention's rule (as ``poolcheck shape --convention all``)."""
    spec, shape = node.spec, node.input_shape
    assert spec is not None and shape is not None
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


def audit_inputs(node: PoolNode, seed: int = AUDIT_SEED) -> dict[str, np.ndarray]:
    """A random input and an adversarial one (NaN, ties, -inf/+inf, extremes) of the node's shape
    (batch and channels cut to :func:`audit_shape`)."""
    assert node.input_shape is not None
    dtype = np.dtype(node.dtype)
    rng = np.random.default_rng(seed)
    shape = audit_shape(node.input_shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        rnd = rng.integers(info.min, int(info.max) + 1, size=shape).astype(dtype)
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
    big = dtypes.finfo(dtype).max if node.spec is not None and node.spec.op == "max" else dtype.type(1e4)
    specials = [np.nan, -np.inf, np.inf, big, -big] if node.spec is not None and node.spec.op == "max" \
        else [np.nan, big, -big]
    for j, v in enumerate(specials):
        flat[picks[j * k:(j + 1) * k]] = v
    return {"random": rnd, "adversarial": adv}


def node_cases(node: PoolNode, model: Path) -> list[Case]:
    """The node's exact configuration as cases, one per input kind (no documented outputs: the
    engines and peers are judged against the reference)."""
    if node.spec is None or node.input_shape is None:
        return []
    convention = operator(node.case_op).convention
    out = []
    for kind, x in audit_inputs(node).items():
        out.append(Case(id=f"{node.name}/{kind}", op=node.case_op, convention=convention, spec=node.spec,
                        attributes=dict(node.attributes), dtype=x.dtype, input=x, expected={},
                        title=f"{model.name}: {node.op_type} {node.name} ({kind} input)",
                        source={"model": str(model), "node": node.name}, tags=["audit", kind]))
    return out


def audit_nodes(nodes: Sequence[PoolNode], model: Path, entries: Sequence[object]) -> list[NodeAudit]:
    """Shapes, risks, known matches and cases for every node (running them is the caller's)."""
    audits = []
    for node in nodes:
        a = NodeAudit(node)
        if node.spec is not None and node.input_shape is not None:
            a.output_shapes = convention_shapes(node)
            a.risks = risk_classes(node.spec, node.input_shape, node.dtype)
            a.known = known_matches(node.spec.op, a.risks, entries)
            a.cases = node_cases(node, model)
        audits.append(a)
    return audits


@dataclass
class ModelAudit:
    """A whole ``poolcheck audit``: the per-node findings and the run result they make."""

    model: Path
    audits: list[NodeAudit]
    result: RunResult
    peers: list[str]

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document (schema ``poolcheck.audit/1``)."""
        return {"schema": "poolcheck.audit/1", "model": str(self.model), "peers": self.peers,
                "nodes": [a.to_dict() for a in self.audits]}


def audit_model(model: Path, input_shapes: dict[str, tuple[int, ...]], peers: Sequence[Peer], engines: Sequence[str],
                *, timeout: float, command: str, replay: str) -> ModelAudit:
    """Read every pooling node of ``model`` (raises PoolcheckError for an unreadable model or
    shapes that cannot be inferred), then run each node's exact configuration on ``engines``
    and ``peers``. A node poolcheck cannot model becomes an error verdict; an interrupt keeps
    what ran (``result.interrupted``)."""
    nodes = model_pool_nodes(model, input_shapes)
    entries, _ = known_entries([KNOWN_DIR])
    audits = audit_nodes(nodes, model, entries)
    result = new_result(command, kind="run")
    cases = [c for a in audits for c in a.cases]
    try:
        by_case = peer_checks(cases, list(peers), timeout=timeout) if peers and cases else {}
        for a in audits:
            if a.node.problem:  # a node poolcheck cannot model is not judged: an error verdict (exit 2)
                result.cases.append(CaseResult(case_id=a.node.name, verdict=Verdict.ERROR, source=f"{model}:{a.node.name}",
                                               op=a.node.op_type, message=f"{model}: node {a.node.name!r}: {a.node.problem}"))
            for case in a.cases:
                r = run_case(case, list(engines), by_case.get(case.id, []))
                r.replay = replay
                r.source = f"{model}:{a.node.name}"
                a.results.append(r)
                result.cases.append(r)
        record_peer_versions(result, list(peers))
    except KeyboardInterrupt:
        result.interrupted = True
    return ModelAudit(model, audits, result, [p.name for p in peers])
