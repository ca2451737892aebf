"""One result model, on the ground floor: ``poolcheck run``, ``poolcheck fuzz`` and ``poolcheck
audit`` produce it; every renderer only reads it. Verdicts, severities, kinds, statuses and
divergence signatures are enums and dataclasses; ``to_dict``/``from_dict`` round-trip through
JSON (schema ``poolcheck.result/2``, docs/report-format.md). ``from_dict`` also reads version 1
(whose fuzz summary lived in ``extra["fuzz"]``).

The dataclasses' annotations are also the document's validation: :func:`RunResult.from_dict`
hands them to pydantic (``TypeAdapter``), which checks every field of a saved document (types,
enums, signatures, bounded integers, tensors) and builds the dataclasses; a malformed field is a
:class:`ResultDocumentError` naming the field (``cases[3].checks[0].verdict``). Where the
annotation a producer sees (``dict[str, Any]``) is looser than the document's rule, the rule
rides along as ``Annotated[..., validated_as(RULE)]``. pydantic is imported only when a
document is read (the annotations are strings until then; :func:`_document_adapter` defines the
rule names), so a process that only produces results does not pay for it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal

from typing_extensions import TypedDict

if TYPE_CHECKING:
    from pydantic import GetPydanticSchema, TypeAdapter, ValidationError
    from pydantic_core import PydanticCustomError

    # What the rule names are to a type checker; _document_adapter gives them their rules.
    Tensor = Any
    Scalar = Any
    Seconds = float
    Int = int
    Count = int
    Name = str
    SignatureText = str

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
    (:func:`machines`, written by poolcheck/fingerprint.py); merged results list several."""
    labels = []
    for fp in machines(result).values():
        if fp.get("host"):
            isa = fp.get("isa") or []
            labels.append(f"{fp['host']} ({fp.get('cpu', '?')}, {isa[-1] if isa else fp.get('machine', '?')})")
    return "; ".join(labels) or None


# --------------------------------------------------------------------------- document rules
# What a saved document may hold beyond its Python types. Each rule is pydantic metadata on an
# annotation below; producers see the plain type (``str``, ``dict[str, Any]``).

#: The largest magnitude an integer in a document may have: any int64/uint64 element, index or size.
INT_LIMIT = 2**64
#: Non-finite floats as a document writes them (strict JSON has no NaN/Infinity tokens).
NON_FINITE = ("nan", "inf", "-inf")


def validated_as(rule: Any) -> GetPydanticSchema:
    """Annotation metadata: pydantic checks the field against ``rule`` instead of its static type."""
    from pydantic import GetPydanticSchema

    return GetPydanticSchema(lambda _tp, handler: handler(rule))


def _problem(kind: str, text: str) -> PydanticCustomError:
    from pydantic_core import PydanticCustomError

    return PydanticCustomError(kind, text)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_tensor(value: Any, *, nested: bool = True) -> Any:
    """``None``, a scalar (a number, ``"nan"``, ``"inf"``, ``"-inf"``) or, when ``nested``,
    nested lists of scalars; integers within :data:`INT_LIMIT`. Iterative (no recursion).
    Returned unchanged."""
    if value is None:
        return value
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        v, where = stack.pop()
        if isinstance(v, list) and nested:
            stack.extend((x, f"{where}[{i}]") for i, x in enumerate(v))
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > INT_LIMIT:
            raise _problem("tensor", f"element {where or 'value'}: an integer of {len(str(abs(v)))} digits "
                                     f"(at most 2**64 in magnitude)")
        elif isinstance(v, bool) or not (isinstance(v, (int, float)) or (isinstance(v, str) and v in NON_FINITE)):
            raise _problem("tensor", f"element {where or 'value'}: expected a number or \"nan\"/\"inf\"/\"-inf\", "
                                     f"got {_shown(v)}")
    return value


def _check_scalar(value: Any) -> Any:
    return _check_tensor(value, nested=False)


def _check_signature(text: str) -> str:
    try:
        Signature.parse(text)
    except ValueError:
        raise _problem("signature", f"not a divergence signature (kind|op|subject|detail): {_shown(text)}") from None
    return text


def _rules() -> dict[str, Any]:
    """The rule names the annotations below use, as pydantic types."""
    from pydantic import AfterValidator, Field, GetPydanticSchema
    from pydantic_core import core_schema

    return {
        #: A tensor or scalar (``null`` allowed): nested lists of numbers, ``"nan"``, ``"inf"``, ``"-inf"``.
        "Tensor": Annotated[Any, GetPydanticSchema(
            lambda _tp, _handler: core_schema.no_info_plain_validator_function(_check_tensor))],
        #: One element (``null`` allowed): a number, ``"nan"``, ``"inf"``, ``"-inf"``.
        "Scalar": Annotated[Any, GetPydanticSchema(
            lambda _tp, _handler: core_schema.no_info_plain_validator_function(_check_scalar))],
        "Seconds": Annotated[float, Field(ge=0)],
        "Int": Annotated[int, Field(ge=-INT_LIMIT, le=INT_LIMIT)],
        "Count": Annotated[int, Field(ge=0, le=INT_LIMIT)],
        "Name": Annotated[str, Field(min_length=1)],
        #: A divergence signature written out (``kind|op|subject|detail``).
        "SignatureText": Annotated[str, AfterValidator(_check_signature)],
    }


#: Unknown keys of the records below are kept (pydantic's TypedDict config).
_KEEP_UNKNOWN = {"extra": "allow"}


class MachineRecord(TypedDict, total=False):
    """One machine fingerprint as a document holds it (poolcheck/fingerprint.py writes it)."""

    id: str
    host: str
    cpu: str
    isa: list[str]
    flags: list[str]
    os: str
    machine: str
    python: str
    cores: Count
    packages: dict[str, str]
    peers: dict[str, str]


class _Extra(TypedDict, total=False):
    """``extra``: producer-specific records; the machines have one shape everywhere
    (``fingerprints``: id -> fingerprint; ``fingerprint``: the producing machine's own)."""

    fingerprint: MachineRecord
    fingerprints: dict[str, MachineRecord]


class _Erratum(TypedDict):
    says: str
    why: str
    correct: dict[str, Tensor]


class _Axis(TypedDict):
    size: Count
    kernel: Count
    stride: Count
    dilation: Count
    pad_begin: Int  # negative pads crop (a case may ask for them)
    pad_end: Int
    out: Count
    overhang: Count


for _record in (MachineRecord, _Extra, _Erratum, _Axis):
    setattr(_record, "__pydantic_config__", _KEEP_UNKNOWN)  # noqa: B010 (TypedDict bodies hold fields only)


def machines(result: RunResult) -> dict[str, dict[str, Any]]:
    """The machines a result was made on, id -> fingerprint: ``extra["fingerprints"]``, else the
    one ``extra["fingerprint"]``. The one reader of that shape (the HTML page mirrors it)."""
    prints = result.extra.get("fingerprints")
    if isinstance(prints, dict) and prints:
        return {str(k): v for k, v in prints.items() if isinstance(v, dict)}
    single = result.extra.get("fingerprint")
    if isinstance(single, dict):
        return {str(single.get("id", "")): single}
    return {}


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

    coords: list[Int]
    kind: Annotated[str, validated_as(Literal["input", "pad", "overhang"])]
    value: Scalar = None
    chosen: bool = False


@dataclass
class Diff:
    """One differing output element (or a shape mismatch when ``output == "shape"``)."""

    output: Annotated[str, validated_as(Literal["values", "indices", "shape"])]
    position: list[Count] | None
    expected: Tensor
    actual: Tensor
    window: list[WindowCell] | None = None


@dataclass
class Check:
    """One runner (engine or peer) on one case."""

    runner: Name
    kind: CheckKind
    verdict: Verdict
    message: str = ""
    diffs: list[Diff] = field(default_factory=list)
    n_diffs: Count = 0  # total differing elements (``diffs`` may hold only the first few)
    diagnosis: str | None = None
    version: str | None = None
    # Full outputs for small tensors (renderers show expected/actual side by side).
    expected: Annotated[dict[str, Any] | None, validated_as(dict[str, Tensor] | None)] = None
    actual: Annotated[dict[str, Any] | None, validated_as(dict[str, Tensor] | None)] = None
    #: The weight of a non-passing check; None for a pass or a skip.
    severity: Severity | None = None

    def __post_init__(self) -> None:
        self.kind = _enum(CheckKind, self.kind)
        self.verdict = _enum(Verdict, self.verdict)
        self.severity = _enum(Severity, self.severity)


@dataclass
class CaseResult:
    case_id: Name
    verdict: Verdict
    title: str = ""
    source: str = ""  # "cases/seeds/foo.yaml:12"
    convention: str = ""
    op: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    input_shape: list[Count] | None = None
    dtype: str = ""
    checks: list[Check] = field(default_factory=list)
    erratum: Annotated[dict[str, Any] | None, validated_as(_Erratum | None)] = None
    tags: list[str] = field(default_factory=list)
    replay: str = ""
    message: str = ""
    # Added compatibly within poolcheck.result/1 (optional; absent in older documents):
    # the resolved per-axis geometry (size, kernel, stride, dilation, pad_begin, pad_end, out,
    # overhang) and the whole input when small, so a report can draw any output element's window.
    geometry: Annotated[list[dict[str, int]] | None, validated_as(list[_Axis] | None)] = None
    input: Tensor = None

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

    seed: Int | None = None
    jobs: Count = 1
    examples: Count = 0
    cases: Count = 0
    elapsed_s: Seconds = 0.0
    cases_per_s: Seconds = 0.0
    compared: dict[str, Count] = field(default_factory=dict)
    compared_per_s: dict[str, float] = field(default_factory=dict)
    peer_status: dict[str, dict[str, Count]] = field(default_factory=dict)
    divergent_configurations: dict[SignatureText, Count] = field(default_factory=dict)
    new: list[SignatureText] = field(default_factory=list)
    known_seen: dict[SignatureText, Count] = field(default_factory=dict)
    fixed_upstream: list[str] = field(default_factory=list)
    detected_at_s: dict[SignatureText, float] = field(default_factory=dict)
    shrunk_at_s: dict[SignatureText, float] = field(default_factory=dict)
    unshrunk: list[SignatureText] = field(default_factory=list)
    saved: dict[SignatureText, str] = field(default_factory=dict)
    unavailable_peers: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    replay: str = ""
    fail_on: Annotated[list[str], validated_as(list[Severity])] = field(default_factory=list)
    failing: list[SignatureText] = field(default_factory=list)

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
    kind: Annotated[str, validated_as(Literal["run", "fuzz"])] = "run"
    interrupted: bool = False
    #: Producer-specific records (cluster, merge). The machines: ``fingerprint`` (the producing
    #: machine's) and ``fingerprints`` (id -> fingerprint; every document has it, :meth:`to_dict`).
    extra: Annotated[dict[str, Any], validated_as(_Extra)] = field(default_factory=dict)
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
        if "fingerprints" not in data["extra"] and (prints := machines(self)):
            data["extra"]["fingerprints"] = prints  # one shape for the machines in every document
        data["schema"] = SCHEMA
        data["counts"] = self.counts()
        return data

    @classmethod
    def from_dict(cls, data: Any) -> RunResult:
        """Rebuild a result from a version 2 or 1 document, every field checked against the
        annotations above; keys this version does not know are ignored (readers must accept
        fields added later within the same version). Version 1 kept the fuzz summary in
        ``extra["fuzz"]``: it moves to ``fuzz``. A malformed document raises
        :class:`ResultDocumentError` naming the first bad field."""
        if not isinstance(data, dict):
            raise ResultDocumentError("", f"expected a JSON object with schema {SCHEMA!r}, got {_json_type(data)}")
        if data.get("schema") not in READABLE_SCHEMAS:
            raise ResultDocumentError("schema", f"not a {SCHEMA} (or poolcheck.result/1) document "
                                                f"(schema={_shown(data.get('schema'))})")
        data = dict(data)
        extra = data.get("extra")
        if isinstance(extra, dict) and data.get("fuzz") is None and isinstance(extra.get("fuzz"), dict):
            extra = dict(extra)
            data["fuzz"] = extra.pop("fuzz")
            data["extra"] = extra
        from pydantic import ValidationError

        try:
            result: RunResult = _document_adapter().validate_python(data)
        except ValidationError as exc:
            raise ResultDocumentError.first_of(exc) from None
        return result


class ResultDocumentError(ValueError):
    """A result document breaks the model: ``field`` (``cases[3].checks[0].verdict``) and why."""

    def __init__(self, where: str, problem: str) -> None:
        self.field = where
        self.problem = problem
        super().__init__(f"{where}: {problem}" if where else problem)

    @classmethod
    def first_of(cls, exc: ValidationError) -> ResultDocumentError:
        """The first of pydantic's errors, as one line (how many more there are, if any)."""
        errors = exc.errors(include_url=False)
        first = errors[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if str(p).isidentifier() else f"[{p!r}]")
                        for p in first["loc"]).lstrip(".")
        problem = first["msg"]
        if first["type"] not in ("tensor", "signature", "missing") and "input" in first:
            problem += f", got {_shown(first['input'])}"
        if len(errors) > 1:
            problem += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
        return cls(where, problem)


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


@cache
def _document_adapter() -> TypeAdapter[RunResult]:
    from pydantic import TypeAdapter

    globals().update(_rules())  # the string annotations' rule names resolve from here on
    return TypeAdapter(RunResult)
