"""``poolcheck report merge A.json B.json ...``: one report from the results of separate runs.

A CI matrix over machines (AVX2, AVX-512, ARM) produces one result per machine. Merging keeps one
case per divergence, deduplicated as the fuzzer deduplicates (by signature; a ``poolcheck run``
case by its id and file), the most severe verdict, the smallest reproducer, and the machines that
showed it. Where a divergence shows on some of the machines that ran the same runner and not on
the others, the merged case says so: ``openvino: only on avx512_core`` when an ISA level separates
them, else the hosts.

Every input's machine fingerprint is carried over (``extra["fingerprints"]``), one per machine:
a ``poolcheck run`` and a ``poolcheck fuzz`` of the same machine record different package lists
(so different ids), and become one record listing both. A result written before fingerprints
existed counts as one machine of its own, named after its file. Registry entries a fuzz run did
not re-check because their peer never ran there (``known``, ``skipped``) are left out.
"""

from __future__ import annotations

import copy
import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from poolcheck.errors import AttributeValueError
from poolcheck.fingerprint import fingerprint_id, machine_key, only_on
from poolcheck.fuzz.grouping import join_by_cause
from poolcheck.report.jsonfmt import load_result
from poolcheck.results import (
    FAILING,
    VERDICTS,
    CaseResult,
    KnownState,
    RunResult,
    Signature,
    Verdict,
    machines,
    worst,
)

#: Verdicts that count as "the divergence showed here" (an erratum is a known divergence seen).
SHOWN: frozenset[str] = frozenset(FAILING | {"error", "rejects", "erratum"})


@dataclass
class _Input:
    name: str
    result: RunResult
    fingerprints: dict[str, dict[str, Any]]  # id -> fingerprint (usually one)
    ran: set[str] = field(default_factory=set)  # runners (peers, engines) this run exercised
    alias: dict[str, str] = field(default_factory=dict)  # an id this input recorded -> its machine's in the merge


def _fingerprints(name: str, result: RunResult) -> dict[str, dict[str, Any]]:
    fps = {fid: fp for fid, fp in machines(result).items() if fid}
    if not fps:  # an older result: one unknown machine, named after the file
        fp: dict[str, Any] = {"host": name, "isa": [], "cpu": "unknown", "packages": dict(result.versions)}
        fid = fingerprint_id(fp)
        fps[fid] = {"id": fid, **fp}
    return fps


def _one_per_machine(inputs: Sequence[_Input]) -> dict[str, dict[str, Any]]:
    """Every machine once (poolcheck/fingerprint.py ``machine_key``): the fingerprints one machine
    left in several inputs become one record whose packages and peers are all of theirs (a
    package seen at two versions lists both), and each input's ids point to it."""
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for inp in inputs:
        for fid, fp in inp.fingerprints.items():
            groups.setdefault(machine_key(fp), {})[fid] = fp
    merged: dict[str, dict[str, Any]] = {}
    alias: dict[str, str] = {}
    for members in groups.values():
        if len(members) == 1:
            ((one_id, one),) = members.items()
        else:
            one = {k: v for k, v in next(iter(members.values())).items() if k != "id"}
            for key in ("packages", "peers"):
                one[key] = dict(sorted(_versions(fp.get(key) or {} for fp in members.values()).items()))
            one_id = fingerprint_id(one)
            one = {"id": one_id, **one}
        merged[one_id] = one
        alias.update(dict.fromkeys(members, one_id))
    for inp in inputs:
        inp.alias = {fid: alias[fid] for fid in inp.fingerprints}
        inp.fingerprints = {alias[fid]: merged[alias[fid]] for fid in inp.fingerprints}
    return merged


def _not_run_here(case: CaseResult, inp: _Input) -> bool:
    """A registry entry the run did not re-check because its runner never ran there."""
    return ("known" in case.tags and KnownState.SKIPPED in case.tags
            and not any(k.runner in inp.ran for k in case.checks))


def _key(case: CaseResult) -> str:
    sig = case.signature
    if sig is not None:
        return sig.key
    source = case.source.rsplit(":", 1)[0] if case.source else ""  # the line may move between versions
    return f"case|{source}|{case.case_id}"


def _subject(key: str, case: CaseResult) -> str:
    if not key.startswith("case|"):
        return Signature.parse(key).subject
    runners = [k.runner for k in case.checks if k.verdict in SHOWN]
    return runners[0] if runners else (case.checks[0].runner if case.checks else "")


def _case_fingerprints(case: CaseResult, inp: _Input) -> list[str]:
    tagged = [inp.alias.get(t.split(":", 1)[1]) for t in case.tags if t.startswith("fingerprint:")]
    return sorted({f for f in tagged if f in inp.fingerprints}) or sorted(inp.fingerprints)


def _ran(result: RunResult) -> set[str]:
    fz = result.fuzz
    ran = set(fz.compared) | set(fz.peer_status) if fz is not None else set()
    for case in result.cases:  # a runner that only skipped never judged anything here
        ran.update(k.runner for k in case.checks if k.verdict != Verdict.SKIP)
    return ran


def _size(case: CaseResult) -> tuple[bool, int]:
    shape = case.input_shape or []
    return "unshrunk" in case.tags, math.prod(shape) if shape else 0


def merge_results(results: Sequence[tuple[str, RunResult]], command: str = "poolcheck report merge") -> RunResult:
    """Merge ``(name, result)`` pairs (name: the file, for messages) into one result."""
    if not results:
        raise ValueError("nothing to merge")
    inputs = [_Input(name, r, _fingerprints(name, r), _ran(r)) for name, r in results]
    all_fps = _one_per_machine(inputs)
    by_key: dict[str, list[tuple[_Input, CaseResult]]] = {}
    left_out = 0
    for inp in inputs:
        for case in inp.result.cases:
            if _not_run_here(case, inp):
                left_out += 1
                continue
            by_key.setdefault(_key(case), []).append((inp, case))
    # one root cause, one case: rows of a runner that share an explanation are grouped as the
    # fuzzer groups them (fuzz.grouping.join_by_cause)
    alias = join_by_cause({k: (_subject(k, m[0][1]), [t for _, c in m for t in c.tags]) for k, m in by_key.items()})
    groups: dict[str, list[tuple[_Input, CaseResult]]] = {}
    for key, members in by_key.items():
        groups.setdefault(alias[key], []).extend(members)
    # signatures seen by the fuzzer without a case of their own (known divergences re-found)
    seen_extra: dict[str, set[str]] = {}
    for inp in inputs:
        for sig in (inp.result.fuzz.divergent_configurations if inp.result.fuzz is not None else {}):
            seen_extra.setdefault(sig, set()).update(inp.fingerprints)

    kinds = {inp.result.kind for inp in inputs}
    merged = RunResult(
        command=command,
        versions=_versions(inp.result.versions for inp in inputs),
        created=max((inp.result.created for inp in inputs), default=""),
        tool_version=", ".join(sorted({inp.result.tool_version for inp in inputs if inp.result.tool_version})),
        kind=kinds.pop() if len(kinds) == 1 else "run",
        interrupted=any(inp.result.interrupted for inp in inputs),
    )
    notes: dict[str, str] = {}
    seen_on: dict[str, list[str]] = {}
    for key, members in groups.items():
        shown = [(inp, c) for inp, c in members if c.verdict in SHOWN]
        pool = shown or members
        _, rep = min(pool, key=lambda m: (_size(m[1]), VERDICTS.index(m[1].verdict)
                                          if m[1].verdict in VERDICTS else 99))
        case = copy.deepcopy(rep)
        case.verdict = worst([c.verdict for _, c in members])
        fps_seen: set[str] = set(seen_extra.get(key, set()))
        for inp, c in shown:
            fps_seen.update(_case_fingerprints(c, inp))
        subject = _subject(key, rep)
        fps_ran: set[str] = set()
        for inp in inputs:
            if subject in inp.ran or any(i is inp for i, _ in members):
                fps_ran.update(inp.fingerprints)
        tags = [t for t in case.tags if not t.startswith(("fingerprint:", "only-on:", "worker:"))]
        for _, c in members:
            tags += [t for t in c.tags if t.startswith("worker:") and t not in tags]
        tags += [f"fingerprint:{f}" for f in sorted(fps_seen)]
        if shown:
            note = only_on(subject, [all_fps[f] for f in sorted(fps_seen)],
                           [all_fps[f] for f in sorted(fps_ran - fps_seen)])
            if note:
                notes[key] = note
                tags.append(f"only-on:{note}")
                case.message = f"{case.message} ({note})" if case.message else note
            seen_on[key] = sorted(fps_seen)
        case.tags = tags
        merged.cases.append(case)
    merged.extra["fingerprints"] = all_fps
    merged.extra["merge"] = {
        "inputs": [{"file": inp.name, "command": inp.result.command, "created": inp.result.created,
                    "kind": inp.result.kind, "cases": len(inp.result.cases),
                    "fingerprints": sorted(inp.fingerprints)} for inp in inputs],
        "seen_on": seen_on,
        "only_on": notes,
        "merged_cases": sum(len(m) for m in groups.values()) - len(groups),
        "registry_entries_not_run": left_out,
    }
    return merged


def _versions(all_versions: Any) -> dict[str, str]:
    """Per package, every distinct version across the inputs (``1.17.0, 1.18.1`` when they differ)."""
    seen: dict[str, list[str]] = {}
    for versions in all_versions:
        for name, v in versions.items():
            if str(v) not in seen.setdefault(name, []):
                seen[name].append(str(v))
    return {name: ", ".join(vs) for name, vs in seen.items()}


__all__ = ["SHOWN", "merge_command", "merge_results"]


def merge_command(files: Sequence[Path]) -> RunResult:
    """``poolcheck report merge``: load the files and merge them."""
    if len(files) < 2:
        raise AttributeValueError("merge", f"expected two or more result files, got {len(files)}")
    command = "poolcheck report merge " + " ".join(shlex.quote(str(f)) for f in files)
    return merge_results([(str(f), load_result(f)) for f in files], command)
