"""One result model. ``poolcheck run`` and ``poolcheck fuzz`` produce it; every renderer only
reads it. ``to_dict``/``from_dict`` round-trip through JSON (schema: docs/report-format.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

SCHEMA = "poolcheck.result/1"

#: Verdicts, most severe first. A case's verdict is the most severe of its checks.
VERDICTS: tuple[str, ...] = ("error", "fail", "crash", "timeout", "rejects", "erratum", "skip", "pass")
#: Verdicts that make ``poolcheck run`` exit 1.
FAILING: frozenset[str] = frozenset({"fail", "crash", "timeout"})


class Severity(str, Enum):
    """How much a divergence weighs (issue 9). Every non-passing check of a peer, an engine or a
    document carries one; ``--fail-on`` chooses which severities make exit 1.

    - ``violation``: the runner contradicts the spec text;
    - ``unspecified``: the spec is silent (NaN, accumulation type, empty windows): a policy point;
    - ``limitation``: the runner rejects or cannot express a valid configuration;
    - ``erratum``: the document contradicts itself or the runtimes.
    """

    VIOLATION = "violation"
    UNSPECIFIED = "unspecified"
    LIMITATION = "limitation"
    ERRATUM = "erratum"


#: Default ``--fail-on``: only violations make exit 1.
DEFAULT_FAIL_ON: frozenset[Severity] = frozenset({Severity.VIOLATION})


def machine_label(result: RunResult) -> str | None:
    """``host (cpu model, top ISA level)`` of the machine a result was made on, when it says
    (``extra["fingerprint"]``, written by poolcheck/fingerprint.py); merged results list several."""
    prints = result.extra.get("fingerprints") or ([result.extra["fingerprint"]] if "fingerprint" in result.extra else [])
    labels = []
    for fp in prints:
        if isinstance(fp, dict) and fp.get("host"):
            isa = fp.get("isa") or []
            labels.append(f"{fp['host']} ({fp.get('cpu', '?')}, {isa[-1] if isa else fp.get('machine', '?')})")
    return "; ".join(labels) or None


def worst(verdicts: list[str]) -> str:
    if not verdicts:
        return "skip"
    return min(verdicts, key=VERDICTS.index)


@dataclass
class WindowCell:
    """One tap of a pooling window: input coordinates (spatial, may be negative or past the end),
    whether it lies in padding (``pad``) or past the padded input (``overhang``), and its value."""

    coords: list[int]
    kind: str  # "input" | "pad" | "overhang"
    value: Any = None
    chosen: bool = False


@dataclass
class Diff:
    """One differing output element (or a shape mismatch when ``output == "shape"``)."""

    output: str  # "values" | "indices" | "shape"
    position: list[int] | None
    expected: Any
    actual: Any
    window: list[WindowCell] | None = None


@dataclass
class Check:
    """One runner (engine or peer) on one case."""

    runner: str
    kind: str  # "engine" | "peer" | "document"
    verdict: str
    message: str = ""
    diffs: list[Diff] = field(default_factory=list)
    n_diffs: int = 0  # total differing elements (``diffs`` may hold only the first few)
    diagnosis: str | None = None
    version: str | None = None
    # Full outputs for small tensors (renderers show expected/actual side by side).
    expected: dict[str, Any] | None = None
    actual: dict[str, Any] | None = None
    # Added compatibly within poolcheck.result/1: the weight of a non-passing check (a
    # :class:`Severity` value); None for a pass or a skip.
    severity: str | None = None


@dataclass
class CaseResult:
    case_id: str
    verdict: str
    title: str = ""
    source: str = ""  # "cases/seeds/foo.yaml:12"
    convention: str = ""
    op: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    input_shape: list[int] | None = None
    dtype: str = ""
    checks: list[Check] = field(default_factory=list)
    erratum: dict[str, Any] | None = None
    tags: list[str] = field(default_factory=list)
    replay: str = ""
    message: str = ""
    # Added compatibly within poolcheck.result/1 (optional; absent in older documents):
    # the resolved per-axis geometry (size, kernel, stride, dilation, pad_begin, pad_end, out,
    # overhang) and the whole input when small, so a report can draw any output element's window.
    geometry: list[dict[str, int]] | None = None
    input: Any = None


@dataclass
class RunResult:
    command: str
    cases: list[CaseResult] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    created: str = ""
    tool_version: str = ""
    kind: str = "run"  # "run" | "fuzz"
    interrupted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        out = {v: 0 for v in VERDICTS}
        for c in self.cases:
            out[c.verdict] = out.get(c.verdict, 0) + 1
        return out

    @property
    def failed(self) -> bool:
        return any(c.verdict in FAILING for c in self.cases)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["schema"] = SCHEMA
        data["counts"] = self.counts()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        """Rebuild a result; keys this version does not know are ignored (readers of
        ``poolcheck.result/1`` must accept fields added later within the same version)."""
        if data.get("schema") != SCHEMA:
            raise ValueError(f"not a {SCHEMA} document (schema={data.get('schema')!r})")
        cases = []
        for c in data.get("cases", []):
            checks = []
            for k in c.get("checks", []):
                diffs = []
                for d in k.get("diffs", []):
                    window = d.get("window")
                    cells = [_known(WindowCell, w) for w in window] if window else None
                    diffs.append(_known(Diff, {**d, "window": cells}))
                checks.append(_known(Check, {**k, "diffs": diffs}))
            cases.append(_known(CaseResult, {**c, "checks": checks}))
        rest = {k: v for k, v in data.items() if k != "cases"}
        return _known(cls, {**rest, "cases": cases})


def _known(kind: Any, data: dict[str, Any]) -> Any:
    """``kind(**data)`` without the keys ``kind`` does not have."""
    names = {f.name for f in dataclasses.fields(kind)}
    return kind(**{k: v for k, v in data.items() if k in names})
