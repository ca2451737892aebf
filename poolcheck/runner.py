"""Run cases through the reference engines (and peers) and build the result model.

Verdicts per engine check:
- ``pass``    the engine reproduces every documented output;
- ``erratum`` the documented output differs, the case records an erratum, and the engine
  reproduces the erratum's corrected output (the document is wrong, as recorded);
- ``fail``    any other disagreement (including an erratum the document no longer contradicts);
- ``error``   the case itself cannot run (an invalid configuration that slipped past loading).
"""

from __future__ import annotations

import datetime as _dt
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import poolcheck
from poolcheck import spec as S
from poolcheck.api import run_spec
from poolcheck.api_family import run_family
from poolcheck.cases import load_paths
from poolcheck.cases.load import split_target
from poolcheck.cases.model import Case
from poolcheck.engines import family_numpy, numpy_engine
from poolcheck.errors import CaseFileError, PoolcheckError
from poolcheck.files import resolve_path
from poolcheck.fingerprint import machine_fingerprint
from poolcheck.fuzz.diagnosis.family import diagnose_family, family_variant_text
from poolcheck.fuzz.diagnosis.search import diagnose_output
from poolcheck.judgement import (
    Judgement,
    contract_message,
    family_tolerance,
    judge,
    label,
    should_be,
    tensor,
    tolerance_for,
    within_accumulation,
)
from poolcheck.judgement import output_contract as judge_contract
from poolcheck.peers.isolation import peer_facts, submit_peer_family, submit_peer_many, worker_key
from poolcheck.results import (
    SIGNATURE_TAG,
    CaseResult,
    Check,
    CheckKind,
    Diff,
    PeerStatus,
    RunResult,
    Severity,
    Signature,
    Verdict,
    worst,
)
from poolcheck.spec.family import FamilySpec, is_family
from poolcheck.spec.operators import OPERATORS
from poolcheck.spec.severity import UNEXPLAINED_SEVERITY, rules_citing, severity_of


def _against(case: Case, target: dict[str, Any], values: np.ndarray, indices: np.ndarray | None,
             geom: S.Geometry | None, layout: S.IndexLayout | None) -> Judgement:
    """Engine outputs against a set of documented outputs (values / indices / shape), under the
    case's own tolerance for numbers written by hand."""
    pre = Judgement()
    if "shape" in target and tuple(target["shape"]) != tuple(values.shape):
        pre.diffs.append(Diff("shape", None, list(target["shape"]), list(values.shape)))
        pre.total += 1
        pre.messages.append(should_be("out.shape", tuple(values.shape), tuple(target["shape"])))
    outputs = [(name, np.asarray(target[name]), actual, None) for name, actual in (("values", values), ("indices", indices))
               if name in target and actual is not None]
    j = judge(case.input, geom, layout, outputs, rtol=case.rtol, atol=case.atol, chosen=indices)
    return Judgement(pre.diffs + j.diffs, pre.total + j.total, pre.messages + j.messages)


def check_engine(case: Case, engine: str) -> Check:
    """Run ``case`` on one engine and judge it against the document (and its erratum)."""
    try:
        return _check_engine(case, engine)
    except Exception as exc:  # the per-case boundary: the reason is kept, the run goes on
        return Check(engine, CheckKind.ENGINE, Verdict.ERROR, f"{_reason(exc)} [engine={engine}]")


def _reason(exc: BaseException) -> str:
    """One line saying why: poolcheck's own errors as they are, anything else with its type."""
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return text if isinstance(exc, PoolcheckError) else f"{type(exc).__name__}: {text}".rstrip(": ")


def output_contract(case: Case, values: Any, indices: Any, *, peer: bool) -> str:
    """What is wrong with an output's types and shape, or "" (:func:`poolcheck.judgement.output_contract`)."""
    return contract_message(judge_contract(case.pool_spec, case.input.shape, case.dtype, values, indices))


def _check_engine(case: Case, engine: str) -> Check:
    where = label(case.spec, f"engine={engine}")
    geom: S.Geometry | None = None
    layout: S.IndexLayout | None = None
    try:
        if isinstance(case.spec, FamilySpec):
            values, indices = run_family(case.spec, case.input, engine=engine, indices=case.inputs.get("I"),
                                         row=OPERATORS[case.op])
        else:
            values, indices = run_spec(case.pool_spec, case.input, engine=engine)
            geom = S.resolve(case.pool_spec, case.input.shape)
    except PoolcheckError as exc:
        return Check(engine, CheckKind.ENGINE, Verdict.ERROR, f"{exc} {where}")
    if geom is not None:
        contract = output_contract(case, values, indices, peer=False)
        if contract:
            return Check(engine, CheckKind.ENGINE, Verdict.FAIL, f"{contract} {where}", severity=Severity.VIOLATION,
                         diagnosis="output contract")
        layout = S.index_layout(case.pool_spec, case.input.shape) if case.pool_spec.op == "max" else None
    if indices is not None:
        indices = indices.astype(np.int64)
    expected = {k: tensor(np.asarray(v)) for k, v in case.expected.items() if k != "shape"}
    actual = {"values": tensor(values)}
    if indices is not None:
        actual["indices"] = tensor(indices)
    judged = _against(case, case.expected, values, indices, geom, layout)
    diffs, total, messages = judged.diffs, judged.total, judged.messages
    if not diffs:
        if case.erratum is not None:
            return Check(engine, CheckKind.ENGINE, Verdict.FAIL,
                         "the case records an erratum, but the document agrees with the engine (stale erratum?)",
                         expected=expected, actual=actual, severity=Severity.VIOLATION)
        return Check(engine, CheckKind.ENGINE, Verdict.PASS, expected=expected, actual=actual)
    if case.erratum is not None:
        # Outputs the erratum corrects must match its correction; the rest must match the document.
        corrected = {**case.expected, **case.erratum["correct"]}
        again = _against(case, corrected, values, indices, geom, layout)
        still, still_total, still_msgs = again.diffs, again.total, again.messages
        if not still:
            return Check(engine, CheckKind.ENGINE, Verdict.ERRATUM, "; ".join(messages) + " (the document is wrong as the case's erratum records)",
                         diffs, total, expected=expected, actual=actual, severity=Severity.ERRATUM)
        return Check(engine, CheckKind.ENGINE, Verdict.FAIL,
                     "differs from the document and from the recorded erratum: " + "; ".join(still_msgs)
                     + f" {where}", still, still_total, expected=expected, actual=actual,
                     severity=Severity.VIOLATION)
    return Check(engine, CheckKind.ENGINE, Verdict.FAIL, "; ".join(messages) + f" {where}", diffs, total,
                 expected=expected, actual=actual, severity=Severity.VIOLATION)


def spec_dict(case: Case) -> dict[str, Any]:
    return {"op": case.op, **case.attributes}


def replay_command(case: Case, options: Sequence[str] = ()) -> str:
    """The command that re-runs exactly this case with the same options (engine, peers ...),
    pasteable from any working directory: the file by absolute path, the case by exact id."""
    target = f"{Path(case.path).resolve()}::{case.id}" if case.path != "<memory>" else case.id
    return " ".join(["poolcheck", "run", shlex.quote(target), *(shlex.quote(o) for o in options)])


def error_result(case: Case, reason: str, replay: str = "") -> CaseResult:
    """A case that could not be judged: verdict ``error`` with where and why."""
    return CaseResult(case_id=case.id, verdict=Verdict.ERROR, title=case.title, source=case.location,
                      convention=case.convention, op=case.op, dtype=getattr(case.dtype, "name", ""),
                      tags=list(case.tags), replay=replay, message=f"{case.location}: {reason}")


def run_case(case: Case, engines: Sequence[str], extra_checks: Iterable[Check] = (),
             replay_options: Sequence[str] = ()) -> CaseResult:
    """Judge ``case`` on every engine (plus checks already made, e.g. by peers). Never raises:
    anything that goes wrong inside the case becomes its ``error`` verdict, naming file, line and
    reason."""
    replay = ""
    try:
        replay = replay_command(case, replay_options)
        return _run_case(case, engines, list(extra_checks), replay)
    except Exception as exc:
        return error_result(case, _reason(exc), replay)


def _run_case(case: Case, engines: Sequence[str], extra_checks: list[Check], replay: str) -> CaseResult:
    checks = [check_engine(case, e) for e in engines]
    checks.extend(extra_checks)
    erratum = None
    if case.erratum is not None:
        erratum = {k: (_plain(v) if k == "correct" else v) for k, v in case.erratum.items()}
    verdict = worst([c.verdict for c in checks])
    # A case that could not be judged says where it is and why, whichever check failed.
    message = ""
    if verdict == "error":
        first = next(c for c in checks if c.verdict == "error")
        message = f"{case.location}: {first.runner}: {first.message}"
    return CaseResult(
        case_id=case.id,
        verdict=verdict,
        message=message,
        title=case.title,
        source=case.location,
        convention=case.convention,
        op=case.op,
        spec=spec_dict(case),
        input_shape=list(case.input.shape),
        dtype=case.dtype.name,
        checks=checks,
        erratum=erratum,
        tags=list(case.tags),
        replay=replay,
        geometry=geometry_dicts(case),
        input=tensor(case.input),
    )


def geometry_dicts(case: Case) -> list[dict[str, int]] | None:
    """The resolved per-axis geometry of ``case`` (None when its configuration cannot resolve)."""
    try:
        geom = S.resolve(case.pool_spec, case.input.shape)
    except Exception:
        return None
    return [{"size": a.size, "kernel": a.kernel, "stride": a.stride, "dilation": a.dilation,
             "pad_begin": a.pad_begin, "pad_end": a.pad_end, "out": a.out, "overhang": a.overhang}
            for a in geom.axes]


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, np.ndarray):
        return tensor(v)
    if isinstance(v, tuple):
        return list(v)
    return v


def record_peer_versions(result: RunResult, peers: Sequence[Any], *, isolated: bool = True) -> None:
    """Each peer's version in ``result.versions``, as it says where it runs ("unavailable" when
    it cannot say; :func:`~poolcheck.peers.isolation.peer_facts`)."""
    for peer, facts in zip(peers, peer_facts(peers, isolated=isolated)):
        result.versions[peer.name] = facts.version or "unavailable"


def environment_versions() -> dict[str, str]:
    return {"poolcheck": poolcheck.__version__, "python": sys.version.split()[0], "numpy": np.__version__}


def new_result(command: str, kind: str = "run") -> RunResult:
    return RunResult(
        command=command,
        versions=environment_versions(),
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        tool_version=poolcheck.__version__,
        kind=kind,
        extra={"fingerprint": machine_fingerprint().to_dict()},  # the machine (poolcheck/fingerprint.py)
    )


def select_cases(cases: list[Case], pattern: str | None) -> list[Case]:
    """``-k``: keep cases whose id contains any comma-separated substring (``not X`` excludes)."""
    if not pattern:
        return cases
    include = [p.strip() for p in pattern.split(",") if p.strip() and not p.strip().startswith("not ")]
    exclude = [p.strip()[4:].strip() for p in pattern.split(",") if p.strip().startswith("not ")]
    out = []
    for c in cases:
        if include and not any(p in c.id for p in include):
            continue
        if any(p in c.id for p in exclude):
            continue
        out.append(c)
    return out


# --------------------------------------------------------------------------- peers

STATUS_VERDICT = {PeerStatus.REJECTS: Verdict.REJECTS, PeerStatus.CRASH: Verdict.CRASH,
                  PeerStatus.TIMEOUT: Verdict.TIMEOUT, PeerStatus.DECLINED: Verdict.SKIP,
                  PeerStatus.UNAVAILABLE: Verdict.SKIP, PeerStatus.INVALID: Verdict.FAIL}


def check_peer_output(case: Case, peer_name: str, version: str | None, result: Any) -> Check:
    """Judge one peer's :class:`~poolcheck.peers.base.PeerResult` against the reference engine."""
    try:
        return _check_peer_output(case, peer_name, version, result)
    except Exception as exc:  # the per-case boundary: a peer's oddity never ends the run
        return Check(peer_name, CheckKind.PEER, Verdict.ERROR, f"{_reason(exc)} [peer={peer_name}]", version=version)


#: Peer statuses and the severity of the verdict they give: refusing a valid configuration is a
#: limitation; crashing or hanging on one is a violation (the spec promises an output).
STATUS_SEVERITY = {"rejects": Severity.LIMITATION, "crash": Severity.VIOLATION, "timeout": Severity.VIOLATION,
                   "invalid": Severity.VIOLATION}


def _as_output_array(value: Any) -> Any:
    """An ndarray as the peer gave it; other sequences through NumPy; anything else unchanged."""
    if value is None or isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value)
    except Exception:
        return value


def _outputs(values: np.ndarray, indices: np.ndarray | None) -> dict[str, Any]:
    """Outputs as a check stores them (values, and indices when there are some)."""
    return {"values": tensor(values), **({"indices": tensor(indices)} if indices is not None else {})}


def _status_check(peer_name: str, version: str | None, result: Any) -> Check:
    """The check of a peer call that gave no output (declined, rejects, crash, timeout, ...)."""
    verdict = STATUS_VERDICT.get(result.status, Verdict.REJECTS)
    sev = STATUS_SEVERITY.get(result.status)
    return Check(peer_name, CheckKind.PEER, verdict, f"{result.status}: {result.message}".rstrip(": "),
                 version=version, severity=sev if sev and verdict != Verdict.SKIP else None)


def _check_peer_output(case: Case, peer_name: str, version: str | None, result: Any) -> Check:
    if result.status != "ok":
        return _status_check(peer_name, version, result)
    ref_values, ref_indices = run_spec(case.pool_spec, case.input, engine="numpy")
    geom = S.resolve(case.pool_spec, case.input.shape)
    layout = S.index_layout(case.pool_spec, case.input.shape) if case.pool_spec.op == "max" else None
    out = result.output
    raw_values = _as_output_array(getattr(out, "values", None))
    raw_indices = _as_output_array(getattr(out, "indices", None))
    contract = output_contract(case, raw_values, raw_indices, peer=True) if raw_values is not None else \
        "values: the peer returned no values"
    if contract:
        # Validated before any comparison: a complex, string or record array never reaches it.
        shape_diffs = []
        if isinstance(raw_values, np.ndarray) and raw_values.shape != ref_values.shape:
            shape_diffs.append(Diff("shape", None, list(ref_values.shape), list(raw_values.shape)))
        notes = "; ".join(str(n) for n in (getattr(out, "notes", []) or []))
        severity, why = Severity.VIOLATION, "output contract"
        breaches = judge_contract(case.pool_spec, case.input.shape, case.dtype, raw_values, raw_indices) \
            if raw_values is not None else []
        if breaches and all(b.what == "shape" for b in breaches) and isinstance(raw_values, np.ndarray):
            # only the shape differs: a geometry the diagnosis can name (and the table weigh)
            severity, named = peer_severity(case, raw_values, None if raw_indices is None else
                                            np.asarray(raw_indices).astype(np.int64), peer_name)
            why = f"output shape: {named}" if named else "output contract"
        return Check(peer_name, CheckKind.PEER, Verdict.FAIL, contract + (f" ({notes})" if notes else ""), shape_diffs,
                     len(shape_diffs), version=version, severity=severity, diagnosis=why)
    values = raw_values
    indices = None if raw_indices is None else raw_indices.astype(np.int64)
    # the average rule of poolcheck/judgement.py (a runtime accumulates in the input type)
    tol = tolerance_for(case.pool_spec, case.input, geom, ref_values, numpy_engine) \
        if values.shape == ref_values.shape else None
    outputs = [("values", ref_values, values, tol)]
    if ref_indices is not None and indices is not None:
        outputs.append(("indices", ref_indices.astype(np.int64), indices, None))
    judged = judge(case.input, geom, layout, outputs, chosen=indices, against="the reference", stop_at_shape=True)
    diffs, total, messages = judged.diffs, judged.total, judged.messages
    expected, actual = _outputs(ref_values, ref_indices), _outputs(values, indices)
    notes = "; ".join(str(n) for n in (getattr(out, "notes", []) or []))
    if not diffs:
        return Check(peer_name, CheckKind.PEER, Verdict.PASS, notes, version=version, expected=expected, actual=actual)
    weight, diagnosis = peer_severity(case, values, indices, peer_name)
    return Check(peer_name, CheckKind.PEER, Verdict.FAIL, "; ".join(messages) + (f" ({notes})" if notes else ""), diffs, total,
                 version=version, expected=expected, actual=actual, severity=weight, diagnosis=diagnosis)


#: Largest input the diagnosis re-runs to name and weigh a peer's divergence.
POLICY_SEARCH_LIMIT = 1_000_000


def _weigh(keys: Sequence[str], spec: S.PoolSpec, what: str) -> tuple[Severity, str]:
    rules = rules_citing(keys, spec)
    cites = "; ".join(f"{r.key}: {r.why}" + (f" [{', '.join(r.sentences)}]" if r.sentences else "") for r in rules)
    return severity_of(keys, spec), f"{what} ({cites})" if cites else what


def _registered_class(case: Case, peer: str | None) -> str | None:
    """The class a known-divergence entry records for ``peer`` (its ``signature:`` tag, when its
    ``peer:`` tag names that peer), else None."""
    if peer is None or f"peer:{peer}" not in case.tags:
        return None
    tag = next((t for t in case.tags if t.startswith(SIGNATURE_TAG)), None)
    if tag is None:
        return None
    try:
        return Signature.parse(tag[len(SIGNATURE_TAG):]).detail
    except ValueError:
        return None


def _tagged_unspecified(case: Case) -> bool:
    return "unspecified" in case.tags or any(t.startswith("severity:unspecified") for t in case.tags)


def peer_severity(case: Case, values: np.ndarray, indices: np.ndarray | None,
                  peer: str | None = None) -> tuple[Severity, str | None]:
    """How much a peer's divergence weighs: the class the fuzzer's diagnosis names (every named
    behaviour -- geometry, NaN, empty windows, divisor, accumulation, indices -- verified by
    replay) weighed by the severity table for the case's convention, exactly as the fuzzer weighs
    it; else ``unspecified`` within the accumulation precision of an average; for a
    known-divergence entry re-run on its own peer, the class its diagnosis recorded; ``unspecified``
    when the case is tagged so; otherwise (nothing explains it) a ``violation``."""
    if _tagged_unspecified(case):
        return Severity.UNSPECIFIED, "the case is tagged unspecified"
    if case.input.size > POLICY_SEARCH_LIMIT:
        return Severity.VIOLATION, f"input too large to diagnose (> {POLICY_SEARCH_LIMIT:,} elements)"
    registered = _registered_class(case, peer)
    # a registry entry on its own peer: its recorded class breaks ties, as the fuzzer's re-check does
    prefer = {a: 1_000_000 for a in registered.split("+") if a} if registered else None
    try:
        d = diagnose_output(numpy_engine, case.pool_spec, case.input, values, indices, prefer)
    except (PoolcheckError, ArithmeticError, ValueError, IndexError):
        d = None
    if d is not None and d.explained and d.severity is not None:
        return d.severity, _weigh(d.atoms or (d.klass,), case.pool_spec, f"{d.klass}: {d.text}")[1]
    if case.pool_spec.op == "avg" and values.shape == S.resolve(case.pool_spec, case.input.shape).output_shape:
        ref, _ = run_spec(case.pool_spec, case.input, engine="numpy")
        rtol = within_accumulation(case.dtype, ref, values)
        if rtol is not None:
            return _weigh(("avg=input-type-sum",), case.pool_spec,
                          f"within accumulation precision of {case.dtype.name} (rtol {rtol:g})")
    if registered is not None:
        return _weigh([a for a in registered.split("+") if a], case.pool_spec,
                      f"the class the registry records for {peer}: {registered}")
    return UNEXPLAINED_SEVERITY, None if d is None else f"{d.klass}: {d.text}"


def _read_only(x: np.ndarray) -> np.ndarray:
    """A read-only copy: a peer that writes into its input fails loudly instead of changing the
    input every later check (and the report) sees."""
    y = np.array(x, copy=True)
    y.flags.writeable = False
    return y


def peer_checks(cases: Sequence[Case], peers: Sequence[Any], *, isolated: bool = True,
                timeout: float = 30.0,
                on_output: Callable[[Case, str, Any, Check], None] | None = None) -> dict[str, list[Check]]:
    """Run every case on every peer (one batched call per peer for the family cases, one for the
    rest); checks keyed by case id. ``on_output(case, peer name, PeerResult, check)`` sees each
    peer's raw result beside its check (``poolcheck audit`` diagnoses the differing outputs from it).

    Family cases (LpPool, global pooling, MaxUnpool, adaptive pooling) go to a peer as
    ``(FamilySpec, x, I)`` items (declined, without a call, where its ``family_ops`` lacks the
    op) and are judged by :func:`check_family_peer_output`; the others by :func:`check_peer_output`.
    Isolated, every peer computes at once: each is handed its family batch, then its other batch
    as soon as the first is collected, while the answers already in are judged, peer by peer, in
    the order of ``peers`` (the checks and their order are those of one call after another). A
    peer named twice (one worker) is asked once at a time."""
    out: dict[str, list[Check]] = {c.id: [] for c in cases}
    family = [c for c in cases if is_family(c.spec)]
    pooling = [c for c in cases if not is_family(c.spec)]
    family_items = [(c.spec, _read_only(c.input),
                     None if c.inputs.get("I") is None else _read_only(np.asarray(c.inputs["I"]))) for c in family]
    items = [(c.pool_spec, _read_only(c.input)) for c in pooling]
    # the workers start side by side (not one after another at each first call), and each says
    # its runtime's version there: the runtimes stay out of this process
    versions = [f.version for f in peer_facts(peers, isolated=isolated)] if cases else [None] * len(peers)

    def ask_family(peer: Any) -> Callable[[], list[Any]]:
        return _asked(lambda: submit_peer_family(peer, family_items, isolated=isolated,  # type: ignore[arg-type]
                                                 timeout=timeout)) if family else list

    def ask(peer: Any) -> Callable[[], list[Any]]:
        return _asked(lambda: submit_peer_many(peer, items, isolated=isolated, timeout=timeout)) if pooling else list

    # a worker holds one batch at a time: with a peer named twice, each batch is asked when it is read
    at_once = len({worker_key(peer) for peer in peers}) == len(peers)
    family_answers = [ask_family(peer) if at_once else None for peer in peers]
    answers: list[Callable[[], list[Any]] | None] = []
    for peer, version, family_answer in zip(peers, versions, family_answers):
        results = _collected(family_answer or ask_family(peer))
        answers.append(ask(peer) if at_once else None)  # out before these are judged
        _check_on_peer(family, peer, version, out, results, check_family_peer_output, on_output)
    for peer, version, answer in zip(peers, versions, answers):
        _check_on_peer(pooling, peer, version, out, _collected(answer or ask(peer)), check_peer_output, on_output)
    return out


def _asked(submit: Callable[[], Callable[[], list[Any]]]) -> Callable[[], list[Any]]:
    """``submit()``; where handing the batch over fails, the failure is raised when the answer
    is read, as a call's would have been."""
    try:
        return submit()
    except Exception as exc:
        failure = exc

        def failed() -> list[Any]:
            raise failure

        return failed


def _collected(answer: Callable[[], list[Any]]) -> list[Any] | Exception:
    """The results of a batch, or the exception that reading them raised (a peer layer failure:
    every case's error on this peer, not the run's end)."""
    try:
        return answer()
    except Exception as exc:
        return exc


def _check_on_peer(cases: Sequence[Case], peer: Any, version: str | None, out: dict[str, list[Check]],
                   results: list[Any] | Exception,
                   check: Callable[[Case, str, str | None, Any], Check],
                   on_output: Callable[[Case, str, Any, Check], None] | None) -> None:
    """Each case's result on ``peer`` (or the exception that gave none) judged by ``check`` into ``out``."""
    if not cases:
        return
    if isinstance(results, Exception):
        for case in cases:
            out[case.id].append(Check(peer.name, CheckKind.PEER, Verdict.ERROR,
                                      f"{_reason(results)} [peer={peer.name}]", version=version))
        return
    for case, result in zip(cases, results):
        checked = check(case, peer.name, version, result)
        if on_output is not None:
            on_output(case, peer.name, result, checked)
        out[case.id].append(checked)


def check_family_peer_output(case: Case, peer_name: str, version: str | None, result: Any) -> Check:
    """Judge one peer's result on a family case against the reference engine (``run_family``):
    exact for the max pools and MaxUnpool, the average rule and the Lp rule of
    :mod:`poolcheck.judgement` (:func:`~poolcheck.judgement.family_tolerance`) otherwise."""
    try:
        return _check_family_peer_output(case, peer_name, version, result)
    except Exception as exc:  # the per-case boundary
        return Check(peer_name, CheckKind.PEER, Verdict.ERROR, f"{_reason(exc)} [peer={peer_name}]", version=version)


def _check_family_peer_output(case: Case, peer_name: str, version: str | None, result: Any) -> Check:
    if result.status != "ok":
        return _status_check(peer_name, version, result)
    spec = case.spec
    assert isinstance(spec, FamilySpec)
    ref_values, ref_indices = run_family(spec, case.input, indices=case.inputs.get("I"), row=OPERATORS[case.op])
    values = np.asarray(result.output.values)
    indices = None if result.output.indices is None else np.asarray(result.output.indices)
    where = label(spec, f"peer={peer_name}")
    contract = []
    if values.dtype != ref_values.dtype:
        contract.append(should_be("values.dtype", values.dtype.name, ref_values.dtype.name))
    if ref_indices is not None and indices is None:
        contract.append("indices: the peer returned none")
    elif ref_indices is not None and indices is not None and indices.dtype != ref_indices.dtype:
        contract.append(should_be("indices.dtype", indices.dtype.name, ref_indices.dtype.name))
    if contract:
        return Check(peer_name, CheckKind.PEER, Verdict.FAIL, "; ".join(contract) + f" {where}", version=version,
                     severity=Severity.VIOLATION, diagnosis="output contract")
    tol = family_tolerance(spec, case.input, ref_values, numpy_engine, family_numpy) \
        if values.shape == ref_values.shape else None
    outputs = [("values", ref_values, values, tol)]
    if ref_indices is not None and indices is not None:
        outputs.append(("indices", ref_indices.astype(np.int64), indices.astype(np.int64), None))
    judged = judge(case.input, None, None, outputs, against="the reference", stop_at_shape=True)
    expected, actual = _outputs(ref_values, ref_indices), _outputs(values, indices)
    notes = "; ".join(str(n) for n in (getattr(result.output, "notes", []) or []))
    if not judged.diffs:
        return Check(peer_name, CheckKind.PEER, Verdict.PASS, notes, version=version, expected=expected, actual=actual)
    severity, diagnosis = family_peer_severity(case, values, indices, peer_name)
    return Check(peer_name, CheckKind.PEER, Verdict.FAIL, judged.message() + f" {where}" + (f" ({notes})" if notes else ""),
                 judged.diffs, judged.total, version=version, expected=expected, actual=actual, severity=severity,
                 diagnosis=diagnosis)


def family_peer_severity(case: Case, values: np.ndarray, indices: np.ndarray | None,
                         peer: str | None = None) -> tuple[Severity, str | None]:
    """:func:`peer_severity` for a family case: the first family variant that reproduces the
    peer's output (:func:`~poolcheck.fuzz.diagnosis.family.diagnose_family`, the registry's class
    first when it is among them) weighed by the severity table; for a registry entry whose class
    no variant reproduces here, its recorded class; else ``violation``, unexplained."""
    if _tagged_unspecified(case):
        return Severity.UNSPECIFIED, "the case is tagged unspecified"
    spec = case.spec
    assert isinstance(spec, FamilySpec)
    registered = _registered_class(case, peer)
    if case.input.size <= POLICY_SEARCH_LIMIT:
        unpool_indices = case.inputs.get("I")
        expected = run_family(spec, case.input, indices=unpool_indices, row=OPERATORS[case.op])
        keys = diagnose_family(spec, case.input, unpool_indices, expected, (values, indices))
        if registered in keys:
            keys = [registered]
        if keys:  # weighed by its atoms, as the fuzzer weighs a family class
            return _weigh(keys[0].split("+"), spec, f"{keys[0]}: {family_variant_text(keys[0])}")  # type: ignore[arg-type]
    if registered is not None:
        return _weigh([a for a in registered.split("+") if a], spec,  # type: ignore[arg-type]
                      f"the class the registry records for {peer}: {registered}")
    return UNEXPLAINED_SEVERITY, None


# --------------------------------------------------------------------------- a whole run

#: Default per-batch peer timeout (the same on every command).
DEFAULT_PEER_TIMEOUT = 60.0


def split_targets(paths: Sequence[Path]) -> tuple[list[Path], dict[Path, set[str] | None]]:
    """``FILE::ID`` selects one case of FILE by exact id (as printed in replay commands). Returns
    the paths to load (each once) and, per resolved file, the ids wanted (None: every case)."""
    files: list[Path] = []
    wanted: dict[Path, set[str] | None] = {}
    for p in paths:
        head, case_id = split_target(str(p))
        file = Path(head)
        try:
            key = resolve_path(file)
        except OSError:  # a loop of symbolic links: loading it reports why
            key = file.absolute()
        if key not in wanted:
            files.append(file)
            wanted[key] = set() if case_id is not None else None
        if case_id is None:
            wanted[key] = None
        elif wanted[key] is not None:
            wanted[key].add(case_id)  # type: ignore[union-attr]
    return files, wanted


def _selected_by_target(case_path: str, case_id: str, wanted: dict[Path, set[str] | None]) -> bool:
    resolved = Path(case_path).resolve()
    for key in (resolved, *resolved.parents):
        if key in wanted:
            ids = wanted[key]
            return ids is None or case_id in ids
    return True


def peer_replay_items(peers: str) -> list[str]:
    """The ``--peers`` items with plugin files made absolute, so a replay works from anywhere."""
    items = []
    for item in (p.strip() for p in peers.split(",")):
        if not item:
            continue
        head, sep, rest = item.partition(":")
        if head.endswith(".py") and Path(head).is_file():
            head = str(Path(head).resolve())
        items.append(head + sep + rest)
    return items


def _unmatched_targets(files: list[Path], wanted: dict[Path, set[str] | None], cases: list[Case],
                       errors: list[CaseFileError]) -> list[CaseFileError]:
    """An error per ``FILE::ID`` whose FILE holds no case ID (a mistyped replay target must not
    pass unseen beside targets that select something). A file that did not load is its own error."""
    def under(path: str | None, key: Path) -> bool:
        if path is None:
            return False
        try:
            resolved = resolve_path(path)
        except OSError:  # a loop of symbolic links (as split_targets keys it)
            resolved = Path(path).absolute()
        return resolved == key or key in resolved.parents

    out = []
    for file, (key, ids) in zip(files, wanted.items()):
        if not ids or any(under(e.path, key) and e.case_id is None for e in errors):
            continue
        found = {c.id for c in cases if under(c.path, key)} | {e.case_id for e in errors if under(e.path, key)}
        out += [CaseFileError("no case has this id" if case_id else "FILE::ID: expected a case id after '::', "
                              "got an empty string", path=str(file), case_id=case_id)
                for case_id in sorted(ids - found)]
    return out


class SelectionError(PoolcheckError):
    """``-k`` or ``FILE::ID`` selects no case (a usage error)."""


@dataclass
class Selection:
    """The cases a run will judge, and the case files that could not be loaded."""

    cases: list[Case]
    errors: list[CaseFileError]


def select(paths: Sequence[Path], pattern: str | None = None) -> Selection:
    """Load ``paths`` (``FILE::ID`` picks one case) and keep the cases ``pattern`` (``-k``)
    selects. Selecting nothing from files that loaded is a usage error (AttributeValueError)."""
    files, wanted = split_targets(paths)
    cases, errors = load_paths(files)
    errors += _unmatched_targets(files, wanted, cases, errors)
    selected = select_cases(cases, pattern)
    exact_ids = sorted({i for ids in wanted.values() if ids for i in ids})
    if exact_ids:
        selected = [c for c in selected if _selected_by_target(c.path, c.id, wanted)]
    if (pattern or exact_ids) and not selected and not errors:
        what = f"-k {pattern!r}" if pattern else ", ".join(exact_ids)
        raise SelectionError(f"{what} selects none of the {len(cases)} case(s)")
    return Selection(selected, errors)


def replay_options_for(engine: str, peers: str | None, peer_timeout: float) -> list[str]:
    """The options a case's replay command repeats (engine, peers, a non-default timeout)."""
    options: list[str] = []
    if engine != "all":
        options += ["--engine", engine]
    if peers:
        options += ["--peers", ",".join(peer_replay_items(peers))]
        if peer_timeout != DEFAULT_PEER_TIMEOUT:
            # exact: the shortest text that reads back as this number (never rounded to six digits)
            seconds = f"{int(peer_timeout)}" if peer_timeout == int(peer_timeout) else repr(peer_timeout)
            options += ["--peer-timeout", f"{seconds}s"]
    return options


def run_selection(selection: Selection, engines: Sequence[str], peers: Sequence[Any] = (), *,
                  peer_timeout: float = DEFAULT_PEER_TIMEOUT, replay_options: Sequence[str] = (),
                  command: str = "poolcheck run") -> RunResult:
    """``poolcheck run``: every selected case on every engine and peer. A case file that did not
    load is an ``error`` case; Ctrl-C ends the run with the cases judged so far (``interrupted``)."""
    result = new_result(command)
    for err in selection.errors:
        result.cases.append(CaseResult(case_id=err.case_id or (err.path or "?"), verdict=Verdict.ERROR,
                                       source=f"{err.path}:{err.line}" if err.line else (err.path or ""),
                                       message=str(err)))
    try:
        by_case = peer_checks(selection.cases, peers, timeout=peer_timeout) if peers else {}
        for case in selection.cases:
            result.cases.append(run_case(case, engines, by_case.get(case.id, []), replay_options))
        record_peer_versions(result, peers)
    except KeyboardInterrupt:
        result.interrupted = True
    return result
