"""One result model, on the ground floor: ``poolcheck run``, ``poolcheck fuzz`` and ``poolcheck
audit`` produce it; every renderer only reads it. Verdicts, severities, kinds, statuses and
divergence signatures are enums and dataclasses; ``to_dict``/``from_dict`` round-trip through
JSON (schema ``poolcheck.result/2``, docs/report-format.md). ``from_dict`` also reads version 1
(whose fuzz summary lived in ``extra["fuzz"]``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

SCHEMA = "poolcheck.result/2"
#: Earlier versions this model still reads (``poolcheck report``, ``report merge``).
READABLE_SCHEMAS = ("poolcheck.result/1", SCHEMA)


class Verdict(StrEnum):
    """A check's (and a case's) verdict; declared most severe first."""

    ERROR = "error"
    FAIL = "fail"
    CRASH = "crash"
    TIMEOUT = "timeout"
    REJECTS = "rejects"
    ERRATUM = "erratum"
    SKIP = "skip"
    PASS = "pass"


#: Verdicts, most severe first. A case's verdict is the most severe of its checks.
VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)
#: Verdicts that make ``poolcheck run`` exit 1.
FAILING: frozenset[str] = frozenset({Verdict.FAIL, Verdict.CRASH, Verdict.TIMEOUT})


class CheckKind(StrEnum):
    """Who a check judges: an engine (against the document), a peer (against the reference
    engine) or a document (a written rule against the runtimes)."""

    ENGINE = "engine"
    PEER = "peer"
    DOCUMENT = "document"


class PeerStatus(StrEnum):
    """How a peer's call ended (:class:`poolcheck.peers.base.PeerResult` ``status``)."""

    OK = "ok"
    REJECTS = "rejects"
    CRASH = "crash"
    TIMEOUT = "timeout"
    DECLINED = "declined"
    UNAVAILABLE = "unavailable"
    INVALID = "invalid"


class FindingKind(StrEnum):
    """Which oracle found a divergence (the first part of its signature)."""

    PEER = "peer"
    ENGINE = "engine"
    DOCUMENT = "document"
    METAMORPHIC = "metamorphic"
    INVALID = "invalid"


class KnownState(StrEnum):
    """A known divergence re-checked today."""

    REPRODUCES = "reproduces"
    FIXED = "fixed"
    CHANGED = "changed"
    SKIPPED = "skipped"


@dataclass(frozen=True, order=True)
class Signature:
    """What deduplicates divergences: the oracle, the operator, the subject (a peer, ``numpy vs
    c``, a written rule, an engine) and the one behaviour (the diagnosis class or atom). Written
    as ``kind|op|subject|detail`` (case tags ``signature:...``, the fuzz summary's keys, case
    files); :meth:`parse` is the only reader of that text."""

    kind: FindingKind
    op: str
    subject: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind.value}|{self.op}|{self.subject}|{self.detail}"

    @property
    def key(self) -> str:
        return str(self)

    @classmethod
    def parse(cls, text: str) -> Signature:
        """``kind|op|subject|detail`` (the detail may itself hold ``|``); ValueError otherwise."""
        parts = str(text).split("|", 3)
        if len(parts) != 4:
            raise ValueError(f"not a divergence signature (kind|op|subject|detail): {text!r}")
        return cls(FindingKind(parts[0]), parts[1], parts[2], parts[3])


#: The case tag that carries a divergence's signature.
SIGNATURE_TAG = "signature:"


def signature_tag(sig: Signature | str) -> str:
    return f"{SIGNATURE_TAG}{sig}"


def tagged_signature(tags: list[str]) -> Signature | None:
    """The signature a case's tags carry (``signature:kind|op|subject|detail``), if any."""
    for t in tags:
        if t.startswith(SIGNATURE_TAG):
            try:
                return Signature.parse(t[len(SIGNATURE_TAG):])
            except ValueError:
                return None
    return None


class Severity(StrEnum):
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


def worst(verdicts: list[str]) -> Verdict:
    """The most severe verdict (``skip`` for none)."""
    if not verdicts:
        return Verdict.SKIP
    return Verdict(min(verdicts, key=VERDICTS.index))


def _enum(kind: Any, value: Any) -> Any:
    """``value`` as the enum ``kind`` when it names a member (unknown text stays text, so a
    newer document with a new value still reads)."""
    if value is None or isinstance(value, kind):
        return value
    try:
        return kind(value)
    except ValueError:
        return value


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
    kind: CheckKind
    verdict: Verdict
    message: str = ""
    diffs: list[Diff] = field(default_factory=list)
    n_diffs: int = 0  # total differing elements (``diffs`` may hold only the first few)
    diagnosis: str | None = None
    version: str | None = None
    # Full outputs for small tensors (renderers show expected/actual side by side).
    expected: dict[str, Any] | None = None
    actual: dict[str, Any] | None = None
    #: The weight of a non-passing check; None for a pass or a skip.
    severity: Severity | None = None

    def __post_init__(self) -> None:
        self.kind = _enum(CheckKind, self.kind)
        self.verdict = _enum(Verdict, self.verdict)
        self.severity = _enum(Severity, self.severity)


@dataclass
class CaseResult:
    case_id: str
    verdict: Verdict
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

    def __post_init__(self) -> None:
        self.verdict = _enum(Verdict, self.verdict)

    @property
    def signature(self) -> Signature | None:
        """The divergence this case stands for (fuzz finds and known divergences), if any."""
        return tagged_signature(self.tags)


@dataclass
class FuzzSummary:
    """What a ``poolcheck fuzz`` run did beside its cases (``RunResult.fuzz``). Keys of the
    per-signature maps are signatures written out (``kind|op|subject|detail``)."""

    seed: int | None = None
    jobs: int = 1
    examples: int = 0
    cases: int = 0
    elapsed_s: float = 0.0
    cases_per_s: float = 0.0
    compared: dict[str, int] = field(default_factory=dict)
    compared_per_s: dict[str, float] = field(default_factory=dict)
    peer_status: dict[str, dict[str, int]] = field(default_factory=dict)
    divergent_configurations: dict[str, int] = field(default_factory=dict)
    new: list[str] = field(default_factory=list)
    known_seen: dict[str, int] = field(default_factory=dict)
    fixed_upstream: list[str] = field(default_factory=list)
    detected_at_s: dict[str, float] = field(default_factory=dict)
    shrunk_at_s: dict[str, float] = field(default_factory=dict)
    unshrunk: list[str] = field(default_factory=list)
    saved: dict[str, str] = field(default_factory=dict)
    unavailable_peers: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    replay: str = ""
    fail_on: list[str] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)
    #: hits per runner and spec region (poolcheck.spec.regions), the configurations of each region
    #: a peer declined, the regions the campaign's options can reach, and why the others cannot
    coverage: dict[str, dict[str, int]] = field(default_factory=dict)
    coverage_declined: dict[str, dict[str, int]] = field(default_factory=dict)
    coverage_reachable: list[str] = field(default_factory=list)
    coverage_unreachable: dict[str, str] = field(default_factory=dict)
    min_per_region: int = 0

    def coverage_gaps(self) -> dict[str, list[str]]:
        """Runner -> the reachable regions it never hit."""
        return {runner: [k for k in self.coverage_reachable if not hits.get(k)]
                for runner, hits in self.coverage.items()}

    def signatures(self, keys: Any) -> list[Signature]:
        """``keys`` (any of the maps or lists above) as typed signatures."""
        return [Signature.parse(k) for k in keys]


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
    #: A fuzz run's summary (``kind == "fuzz"``); None for other runs.
    fuzz: FuzzSummary | None = None

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
        """Rebuild a result from version 2 or 1; keys this version does not know are ignored
        (readers must accept fields added later within the same version). Version 1 kept the
        fuzz summary in ``extra["fuzz"]``: it moves to ``fuzz``."""
        if data.get("schema") not in READABLE_SCHEMAS:
            raise ValueError(f"not a {SCHEMA} (or poolcheck.result/1) document (schema={data.get('schema')!r})")
        data = dict(data)
        extra = dict(data.get("extra") or {})
        summary = data.get("fuzz")
        if summary is None and isinstance(extra.get("fuzz"), dict):
            summary = extra.pop("fuzz")
        data["extra"] = extra
        data["fuzz"] = _known(FuzzSummary, summary) if isinstance(summary, dict) else None
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
