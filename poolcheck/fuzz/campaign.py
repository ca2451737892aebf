"""A whole ``poolcheck fuzz`` run: re-check the known divergences, fuzz, save, build the result.

:func:`run_campaign` is what the CLI calls (and what tests call directly). It returns the one
result model (``RunResult`` with ``kind="fuzz"``) plus everything the terminal summary needs.
Exit code: 1 when a NEW divergence was found (a signature not in the registry, including a known
case that now diverges differently), 0 otherwise; a known divergence that no longer reproduces
is reported as ``pass`` with a "fixed upstream?" message.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType

import numpy as np

from poolcheck.corpus import KNOWN_DIR
from poolcheck.engines import get_engine
from poolcheck.errors import CaseFileError, PoolcheckError
from poolcheck.fingerprint import cpu_features
from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.batching import EXAMPLE_CONFIGS
from poolcheck.fuzz.family import FAMILY_FLAGS
from poolcheck.fuzz.grouping import Ask, Grouping, cause_tags, distinguish, group_all, group_finding, refutes
from poolcheck.fuzz.known import (
    KnownEntry,
    case_id,
    finding_case,
    fuzz_case_from,
    known_entries,
    write_finding,
)
from poolcheck.fuzz.known_family import is_family_entry, recheck_family
from poolcheck.fuzz.reference import expected_for
from poolcheck.fuzz.session import (
    ORACLES,
    FuzzOptions,
    Progress,
    SessionResult,
    judge_peer,
    merge_results,
    resolve_peer_list,
    run_sessions,
)
from poolcheck.fuzz.strategies import CONVENTIONS
from poolcheck.judgement import tensor
from poolcheck.peers.base import Peer, PeerResult
from poolcheck.peers.isolation import call_peer_many, peer_facts, submit_peer_many
from poolcheck.peers.registry import PeerRef, parse_peer_list
from poolcheck.results import (
    DEFAULT_FAIL_ON,
    CaseResult,
    Check,
    CheckKind,
    FindingKind,
    FuzzSummary,
    KnownState,
    PeerStatus,
    RunResult,
    Verdict,
    signature_tag,
)
from poolcheck.runner import new_result
from poolcheck.spec.family import is_family
from poolcheck.spec.shape import Geometry, resolve

OP_FLAGS = {"max": "maxpool", "avg": "avgpool", **FAMILY_FLAGS}


@dataclass
class KnownCheck:
    """A known divergence re-checked against today's peer."""

    entry: KnownEntry
    state: KnownState
    message: str
    finding: O.Finding | None = None
    version: str | None = None


@dataclass
class Campaign:
    result: RunResult
    session: SessionResult
    new: list[str]
    known_checks: list[KnownCheck]
    saved: dict[str, Path] = field(default_factory=dict)
    replay: str = ""
    known_errors: list[CaseFileError] = field(default_factory=list)
    #: Severities (values) of new divergences that make the exit code 1 (``--fail-on``).
    fail_on: frozenset[str] = frozenset(s.value for s in DEFAULT_FAIL_ON)

    def finding(self, signature: str) -> O.Finding | None:
        f = self.session.findings.get(signature)
        if f is None:
            f = next((k.finding for k in self.known_checks if k.finding and k.finding.signature == signature), None)
        return f

    @property
    def failing(self) -> list[str]:
        """New divergences whose severity is one ``fail_on`` names."""
        out = []
        for sig in self.new:
            f = self.finding(sig)
            if (f.weight.value if f is not None else "violation") in self.fail_on:
                out.append(sig)
        return out

    @property
    def exit_code(self) -> int:
        return 1 if self.failing else 0

    @property
    def fixed(self) -> list[KnownCheck]:
        return [k for k in self.known_checks if k.state == KnownState.FIXED]


# --------------------------------------------------------------------------- known divergences


def recheck_known(entries: Sequence[KnownEntry], peers: Sequence[Peer], *, isolated: bool = True,
                  timeout: float = 30.0, engine: str = "auto") -> list[KnownCheck]:
    """Run every registry entry whose peer is in this session; document entries re-check the
    written rule. One batched call per peer, judged on the fuzzer's own path
    (:func:`~poolcheck.fuzz.session.judge_peer`)."""
    eng = get_engine(engine)
    by_name = {p.name: p for p in peers}
    checks: list[KnownCheck | None] = [None] * len(entries)
    per_peer: dict[str, list[int]] = {}
    family_per_peer: dict[str, list[int]] = {}  # the rest of the family: fuzz/known_family.py
    have = cpu_features() if any(e.cpu for e in entries) else set()
    for i, e in enumerate(entries):
        unmet = e.cpu_unmet(have)
        if unmet:
            checks[i] = KnownCheck(e, KnownState.SKIPPED, f"recorded on a CPU {' and '.join(unmet)}, which this "
                                   "one is not: the runtime runs other kernels here")
        elif e.kind == "document":
            case = fuzz_case_from(e.case)
            try:
                found = O.check_shape_rules(case, resolve(case.spec, case.x.shape))
            except PoolcheckError as exc:
                checks[i] = KnownCheck(e, KnownState.CHANGED, f"the engine now rejects it: {exc}")
                continue
            focused = [ff for f in found for ff in f.focused()]
            sigs = [f.signature for f in focused]
            if e.signature in sigs:
                checks[i] = KnownCheck(e, KnownState.REPRODUCES, "the written rule still differs from the runtime",
                                       focused[sigs.index(e.signature)])
            elif sigs:
                checks[i] = KnownCheck(e, KnownState.CHANGED, f"now {sigs[0]}", focused[0])
            else:
                checks[i] = KnownCheck(e, KnownState.FIXED, "the written rule and the runtime now agree")
        elif e.peer is not None and e.peer in by_name and is_family_entry(e):
            family_per_peer.setdefault(e.peer, []).append(i)
        elif e.peer is not None and e.peer in by_name:
            per_peer.setdefault(e.peer, []).append(i)
        else:
            why = f"peer {e.peer!r} is not in this session" if e.peer else f"{e.kind} entries are not re-checked"
            checks[i] = KnownCheck(e, KnownState.SKIPPED, why)
    # every peer computes at once: handed its family entries first and the others as soon as those
    # are in, while the answers in are judged
    cases = {name: [fuzz_case_from(entries[i].case) for i in idxs] for name, idxs in per_peer.items()}
    # each says its version in its worker, before it is handed a batch (a worker holds one at a time)
    versions = {name: f.version or "unknown" for name, f in
                zip(per_peer, peer_facts([by_name[name] for name in per_peer], isolated=isolated))}

    def ask(name: str) -> Callable[[], list[PeerResult]]:
        return submit_peer_many(by_name[name], [(c.spec, c.x) for c in cases[name]], isolated=isolated,
                                timeout=timeout)

    family_states = {name: recheck_family([entries[i] for i in idxs], by_name[name], isolated=isolated,
                                          timeout=timeout) for name, idxs in family_per_peer.items()}
    answers = {name: ask(name) for name in per_peer if name not in family_states}
    for name, idxs in family_per_peer.items():
        states = family_states[name]()
        if name in per_peer:
            answers[name] = ask(name)  # a worker holds one batch at a time
        for i, (state, message) in zip(idxs, states):
            checks[i] = KnownCheck(entries[i], state, message)
    for name, idxs in per_peer.items():
        peer = by_name[name]
        version = versions[name]
        expected: list[tuple[O.Outputs, Geometry] | None] = []
        for c in cases[name]:  # None: the engine now rejects it (a peer computing an output accepts an invalid one)
            try:
                expected.append(expected_for(eng, c))
            except PoolcheckError:
                expected.append(None)
        # ties between equally good explanations go to the recorded one: the question is
        # whether the recorded behaviour still explains the peer
        prefer = [{entries[i].sig.detail: 1_000_000} for i in idxs]
        results = answers[name]()
        judged = judge_peer(peer, cases[name], expected, results, eng, version=version, prefer=prefer.__getitem__)
        for i, (_case, res, finding) in zip(idxs, judged):
            e = entries[i]
            if res.status in ("declined", "unavailable"):
                checks[i] = KnownCheck(e, KnownState.SKIPPED, f"{res.status}: {res.message}", version=version)
                continue
            focused = finding.focused() if finding is not None else []
            match = next((ff for ff in focused if ff.signature == e.signature), focused[0] if focused else None)
            recorded = next((t.split("=", 1)[1] for t in e.case.tags if t.startswith(f"version:{name}=")), None)
            if match is None:
                msg = (f"no longer reproduces: {name} {version} agrees with the reference"
                       + (f" (recorded with {recorded})" if recorded else "") + " -- fixed upstream?")
                checks[i] = KnownCheck(e, KnownState.FIXED, msg, version=version)
            elif match.signature == e.signature:
                checks[i] = KnownCheck(e, KnownState.REPRODUCES, f"reproduces with {name} {version}: {match.text}", match, version)
            else:
                checks[i] = KnownCheck(e, KnownState.CHANGED, f"diverges differently with {name} {version}: {match.klass}", match,
                                       version)
            if match is not None and match.signature == e.signature and len(focused) > 1:
                others = ", ".join(ff.atom for ff in focused if ff.signature != e.signature)
                checked = checks[i]
                assert checked is not None
                checked.message += f" (it also shows {others})"
    return [c for c in checks if c is not None]


# --------------------------------------------------------------------------- result building


def _verdict(finding: O.Finding, new: bool) -> Verdict:
    if not new:
        return Verdict.ERRATUM
    if finding.status in (PeerStatus.CRASH, PeerStatus.TIMEOUT):
        return Verdict(finding.status.value)
    return Verdict.FAIL


def finding_result(finding: O.Finding, *, new: bool, replay: str, source: str = "",
                   detected_at: float | None = None, shrunk: bool = True) -> CaseResult:
    """One signature as a ``CaseResult``: the expected outputs and the judgement the finding
    carries from where its outputs were compared (the differing elements with their windows),
    neither computed again."""
    case = finding.case
    judged = finding.judged()
    expected = finding.expected
    diffs, total = judged.diffs, judged.total
    verdict = _verdict(finding, new)
    kind = {FindingKind.PEER: CheckKind.PEER, FindingKind.INVALID: CheckKind.PEER,
            FindingKind.DOCUMENT: CheckKind.DOCUMENT}.get(finding.kind, CheckKind.ENGINE)
    message = finding.detail
    if finding.status == "rejects":
        message = f"rejects: {finding.detail}"
    check = Check(
        finding.subject, kind, verdict, message, diffs, total, finding.text, finding.version,
        expected={k: tensor(np.asarray(v)) for k, v in expected.items() if k != "shape" and v is not None},
        actual={k: tensor(np.asarray(v)) for k, v in finding.actual.items() if v is not None},
        severity=finding.weight,
    )
    tags = ["fuzz", "new" if new else "known", finding.kind.value, signature_tag(finding.sig), *cause_tags(finding)]
    if finding.extra.get("examples"):
        tags.append(f"examples:{finding.extra['examples']}")
    if not shrunk:
        tags.append("unshrunk")
    title = f"{finding.subject}: {finding.text}"
    if detected_at is not None:
        title += f" (first seen after {detected_at:.1f} s)"
    return CaseResult(
        case_id=case_id(finding), verdict=verdict, title=title[:200], source=source,
        convention=case.convention, op=case.op_name, spec={"op": case.op_name, **case.attributes},
        input_shape=list(case.x.shape), dtype=case.x.dtype.name, checks=[check], tags=tags, replay=replay,
        message=case.describe(),
    )


def known_result(k: KnownCheck) -> CaseResult:
    verdict = {KnownState.REPRODUCES: Verdict.ERRATUM, KnownState.FIXED: Verdict.PASS,
               KnownState.CHANGED: Verdict.FAIL, KnownState.SKIPPED: Verdict.SKIP}[k.state]
    c = k.entry.case
    runner = k.entry.peer or k.entry.sig.subject
    check = Check(runner, CheckKind.PEER if k.entry.peer else CheckKind.DOCUMENT, verdict, k.message,
                  diagnosis=k.finding.text if k.finding else None, version=k.version,
                  severity=k.finding.weight if k.finding is not None and verdict != Verdict.PASS else None)
    return CaseResult(
        case_id=c.id, verdict=verdict, title=c.title, source=c.location, convention=c.convention, op=c.op,
        spec={"op": c.op, **c.attributes}, input_shape=list(c.input.shape), dtype=c.dtype.name, checks=[check],
        tags=["known", k.state, *c.tags],
        replay=f"poolcheck run {shlex.quote(os.path.abspath(c.path) + '::' + c.id)}"
               + (f" --peers {shlex.quote(k.entry.peer)}" if k.entry.peer else ""),
        message=k.message,
    )


def _from_anywhere(name: str) -> str:
    """``name`` as it resolves from any folder: a plugin file's path made absolute (a replay
    line with ``./mine.py`` failed when pasted in another folder)."""
    try:
        refs = parse_peer_list(name)
    except PoolcheckError:
        return name
    return ",".join(str(PeerRef(os.path.abspath(r.name), r.options, r.arg))
                    if r.name.endswith(".py") or os.sep in r.name else str(r) for r in refs)


def replay_command(options: FuzzOptions, examples: int) -> str:
    """The command that re-runs this exploration (same seed, same rounds)."""
    parts = ["poolcheck", "fuzz", "--ops", ",".join(OP_FLAGS[o] for o in options.ops),
             "--ranks", ",".join(str(r) for r in options.ranks), "--dtypes", ",".join(options.dtypes)]
    if set(options.conventions) != set(CONVENTIONS):  # the generation depends on it
        parts += ["--conventions", ",".join(c for c in CONVENTIONS if c in options.conventions)]
    names = [_from_anywhere(p if isinstance(p, str) else getattr(p, "ref", p.name)) for p in options.peers]
    parts += ["--peers", ",".join(names) if names else "none"]
    parts += ["--seed", str(options.seed), "--max-examples", str(examples)]
    if options.jobs > 1:
        parts += ["--jobs", str(options.jobs)]
    if options.max_configs != EXAMPLE_CONFIGS:
        parts += ["--batch", str(options.max_configs)]
    if options.invalid:
        parts.append("--invalid")
    if set(options.oracles) != set(ORACLES):
        parts += ["--oracles", ",".join(o for o in ORACLES if o in options.oracles)]
    if options.engine_checks != "first":
        parts += ["--engine-checks", options.engine_checks]
    if options.database:  # a folder by absolute path: the replay reads the same saved examples from anywhere
        parts += ["--database", options.database if "://" in options.database else os.path.abspath(options.database)]
    if options.min_per_region:
        parts += ["--min-per-region", str(options.min_per_region)]
    return " ".join(shlex.quote(p) for p in parts)


def run_campaign(
    options: FuzzOptions,
    *,
    known_paths: Sequence[str | Path] = (KNOWN_DIR,),
    save_dir: str | Path | None = None,
    command: str = "poolcheck fuzz",
    on_progress: Callable[[Progress], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    fail_on: frozenset[str] | None = None,
    sessions: Callable[[FuzzOptions, Callable[[Progress], None] | None], list[SessionResult]] = run_sessions,
) -> Campaign:
    """Re-check the registry, fuzz, write a case per new divergence, and build the result."""
    phase = on_phase or (lambda _s: None)
    if fail_on is not None:
        options = replace(options, fail_on=frozenset(fail_on))
    entries, known_errors = known_entries(list(known_paths))
    peers = resolve_peer_list(options.peers)
    if options.isolated and peers:
        phase(f"loading {len(peers)} peer(s)")
    # each worker starts side by side with the others (not one after another at each first call)
    # and says whether its runtime is usable there: no runtime is imported into this process
    available = [p for p, f in zip(peers, peer_facts(peers, isolated=options.isolated)) if f.available]
    phase(f"re-checking {len(entries)} known divergence(s)")
    known_checks = recheck_known(entries, available, isolated=options.isolated, timeout=options.peer_timeout,
                                 engine=options.engine)
    known_sigs = {e.signature for e in entries}
    changed = [k for k in known_checks if k.state == KnownState.CHANGED and k.finding is not None]
    options = replace(options, known_signatures=frozenset(known_sigs))
    phase("fuzzing")
    saved: dict[str, Path] = {}

    def save_now(f: O.Finding) -> None:
        """Write a new divergence's case file as soon as it is final (atomically): a run that is
        killed later keeps it."""
        if save_dir is None or f.signature in known_sigs or f.signature in saved:
            return
        path = _save(f, save_dir, options, command, {})
        if path is not None:
            saved[f.signature] = path

    started = time.monotonic()
    if sessions is run_sessions:
        results = run_sessions(options, on_progress, on_find=save_now)
    else:  # a cluster's sessions (fuzz/cluster.py) stream and claim finds centrally
        results = sessions(options, on_progress)
    session = regroup(merge_results(results), known_sigs, options.engine,
                      ask=_asker(available, isolated=options.isolated, timeout=options.peer_timeout))
    elapsed = time.monotonic() - started
    session.progress.elapsed = elapsed
    for sig in [s for s in saved if s not in session.findings]:  # a find that joined another's group
        with contextlib.suppress(OSError):
            saved.pop(sig).unlink()

    new = [s for s in session.findings if s not in known_sigs]
    new += [k.finding.signature for k in changed if k.finding is not None and k.finding.signature not in new]
    examples = sum(n for _, n in session.rounds)
    replay = replay_command(options, examples)

    result = new_result(command, kind="fuzz")
    result.versions.update(session.versions)
    for sig in new:
        f = session.findings.get(sig) or next(k.finding for k in changed if k.finding and k.finding.signature == sig)
        path = saved.get(sig)
        if path is None and save_dir is not None:
            path = _save(f, save_dir, options, replay, {**result.versions})
        if path is not None:
            saved[sig] = path
        if path is not None:
            peer_flag = f" --peers {shlex.quote(_peer_ref(options, f.subject))}" if f.kind == "peer" else ""
            case_replay = f"poolcheck run {shlex.quote(os.path.abspath(path))}{peer_flag}"
        else:
            case_replay = replay
        result.cases.append(finding_result(f, new=True, replay=case_replay, source=str(path or ""),
                                           detected_at=session.detected_at.get(sig),
                                           shrunk=sig in session.shrunk))
    for k in known_checks:
        result.cases.append(known_result(k))

    prog = session.progress
    seen_known = {s: n for s, n in prog.divergent.items() if s in known_sigs}
    result.interrupted = session.interrupted
    result.fuzz = FuzzSummary(
        seed=options.seed,
        jobs=options.jobs,
        examples=prog.examples,
        cases=prog.cases,
        elapsed_s=round(elapsed, 3),
        cases_per_s=round(prog.cases / elapsed, 1) if elapsed > 0 else 0.0,
        compared=dict(prog.compared),
        compared_per_s={p: round(n / elapsed, 1) for p, n in prog.compared.items()} if elapsed > 0 else {},
        peer_status={p: dict(c) for p, c in prog.peer_status.items()},
        divergent_configurations=dict(prog.divergent),
        new=new,
        known_seen=seen_known,
        fixed_upstream=[k.entry.case.id for k in known_checks if k.state == KnownState.FIXED],
        detected_at_s={s: round(t, 3) for s, t in session.detected_at.items()},
        shrunk_at_s={s: round(t, 3) for s, t in session.shrunk_at.items()},
        unshrunk=[s for s in new if s in session.findings and s not in session.shrunk],
        saved={s: str(p) for s, p in saved.items()},
        unavailable_peers=session.unavailable,
        warnings=session.warnings,
        replay=replay,
        coverage=prog.coverage.as_dict(),
        coverage_declined=prog.coverage.declined_dict(),
        coverage_reachable=list(options.coverage_plan().reachable),
        coverage_unreachable=dict(options.coverage_plan().unreachable),
        min_per_region=options.min_per_region,
    )
    campaign = Campaign(result, session, new, known_checks, saved, replay, known_errors, fail_on=options.fail_on)
    result.fuzz.fail_on = sorted(campaign.fail_on)
    result.fuzz.failing = campaign.failing
    return campaign


def _asker(peers: Sequence[Peer], *, isolated: bool, timeout: float) -> Callable[[str], Ask | None]:
    """For a peer's name, how to ask it for its output on one configuration (None: not here)."""
    by_name = {p.name: p for p in peers}

    def ask_for(name: str) -> Ask | None:
        peer = by_name.get(name)
        if peer is None:
            return None

        def ask(spec: object, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None] | None:
            (res,) = call_peer_many(peer, [(spec, x)], isolated=isolated, timeout=timeout)  # type: ignore[list-item]
            if res.status != "ok" or res.output is None:
                return None
            return np.asarray(res.output.values), None if res.output.indices is None else np.asarray(res.output.indices)

        return ask

    return ask_for


def _test_names(grouping: Grouping, engine_module: ModuleType, ask_for: Callable[[str], Ask | None]) -> None:
    """The experiments a session makes when it shrinks a find (:func:`distinguish`, then
    :func:`refutes`), on every named group of the regrouped campaign: its groups are built afresh
    from the examples, and one seen while another find shrank, or after the budget ran out, was
    never tested, nor was a single name split off a combination the session refuted. A name that
    fits such examples only -- an int8 max wrapping at -128 looks like swapped pads on the one
    window it breaks -- is refuted on the neighbours and joins the peer's unexplained row,
    instead of being a row of its own."""
    for g in list(grouping.groups):
        if g.known or not g.members or not g.causes or g not in grouping.groups or g.kind != FindingKind.PEER:
            continue
        if is_family(g.members[0].case.spec):  # the family's names are tested by replay alone (fuzz/family.py)
            continue
        ask = ask_for(g.subject)
        if ask is None:
            continue
        for cause in distinguish(engine_module, g, ask):
            grouping.ruled_out.add((g.subject, g.op, cause))
        if len(g.causes) == 1 and refutes(engine_module, g, ask):
            grouping.ruled_out.add((g.subject, g.op, g.causes[0]))
            grouping.refute(g)


def regroup(session: SessionResult, known: set[str], engine: str = "auto", *,
            ask: Callable[[str], Ask | None] | None = None) -> SessionResult:
    """One finding per root cause: every example the sessions kept (and each signature's best
    reproducer) grouped once more across sessions (:mod:`poolcheck.fuzz.grouping`), each group
    reported by its smallest shrunk reproducer under the name of the explanation that reproduces
    all its examples, with the number of divergent examples seen. ``ask`` (a peer's name -> how
    to call it) lets the experiments test the names of groups no shrink tested."""
    seen = [*session.examples, *session.findings.values()]
    order = sorted(range(len(seen)), key=lambda i: session.detected_at.get(seen[i].signature, float("inf")))
    engine_module = get_engine(engine)
    grouping = group_all(engine_module, [seen[i] for i in order], known, session.ruled_out)
    if ask is not None:
        _test_names(grouping, engine_module, ask)
    findings: dict[str, O.Finding] = {}
    shrunk: set[str] = set()
    detected: dict[str, float] = {}
    shrunk_at: dict[str, float] = {}
    for g in grouping.groups:
        if g.known or not g.members:
            continue
        keys = g.signatures | {g.key}
        pool = [session.findings[k] for k in keys if k in session.findings] or g.members
        shrunk_reps = {id(session.findings[k]) for k in keys if k in session.shrunk and k in session.findings}
        rep = min(pool, key=lambda f: (id(f) not in shrunk_reps, f.size))
        examples = sum(session.progress.divergent.get(k, 0) for k in keys) or len(g.members)
        row = group_finding(g, rep, examples)
        sig = row.signature
        findings[sig] = row
        if any(k in session.shrunk for k in keys):
            shrunk.add(sig)
        times = [session.detected_at[k] for k in keys if k in session.detected_at]
        if times:
            detected[sig] = min(times)
        times = [session.shrunk_at[k] for k in keys if k in session.shrunk_at]
        if times:
            shrunk_at[sig] = min(times)
        session.progress.divergent[sig] = examples  # the row counts every example of its group
    return replace(session, findings=findings, shrunk=shrunk, detected_at={**session.detected_at, **detected},
                   shrunk_at={**session.shrunk_at, **shrunk_at})


def _save(f: O.Finding, save_dir: str | Path, options: FuzzOptions, command: str,
          versions: dict[str, str]) -> Path | None:
    """One finding as a case file in ``save_dir`` (atomic write); None when it has no case form."""
    try:
        data = finding_case(f, O.expected_outputs(f), command=command, seed=options.seed,
                            versions={**versions, **({f.subject: f.version} if f.version else {})})
    except PoolcheckError:
        return None
    return write_finding(save_dir, data) if data is not None else None


def _peer_ref(options: FuzzOptions, name: str) -> str:
    """What to pass to ``--peers`` to get the peer called ``name`` again."""
    for p in options.peers:
        if isinstance(p, str):
            try:
                if resolve_peer_list([p])[0].name == name:
                    # a plugin file by absolute path: the replay works from any folder
                    return str(Path(p).resolve()) if p.endswith(".py") and Path(p).is_file() else p
            except PoolcheckError:
                continue
        elif getattr(p, "name", None) == name:
            return str(getattr(p, "ref", name))
    return name
