"""``poolcheck run [PATH...]``: every case through the engines (and peers), with verdicts."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Annotated, Any

import typer

from poolcheck.cases import load_paths
from poolcheck.cli.common import (
    ENGINE_HELP,
    EXIT_FAILURES,
    EXIT_OK,
    EXIT_USAGE,
    console,
    engines_for,
    err_console,
    fail,
    parse_duration,
    parse_fail_on,
    safe,
    user_errors,
    write_report_set,
)
from poolcheck.corpus import CORPUS_DIR
from poolcheck.peers.registry import PeerLoadError, resolve_peers
from poolcheck.report import console as console_report
from poolcheck.report.jsonfmt import to_json
from poolcheck.report.writers import check_report_dir
from poolcheck.results import CaseResult, RunResult
from poolcheck.runner import new_result, peer_checks, record_peer_versions, run_case, select_cases

#: Default of ``--peer-timeout`` (CLI decision: 60 s on every command).
DEFAULT_PEER_TIMEOUT = 60.0


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def split_targets(paths: list[Path]) -> tuple[list[Path], dict[Path, set[str] | None]]:
    """``FILE::ID`` selects one case of FILE by exact id (as printed in replay commands). Returns
    the paths to load (each once) and, per resolved file, the ids wanted (None: every case)."""
    files: list[Path] = []
    wanted: dict[Path, set[str] | None] = {}
    for p in paths:
        text = str(p)
        file, case_id = (Path(text.rsplit("::", 1)[0]), text.rsplit("::", 1)[1]) if "::" in text else (p, None)
        key = file.resolve()
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


@contextmanager
def stdout_to_stderr(active: bool = True) -> Iterator[None]:
    """With ``--json``, standard output carries the document only: anything a peer or plugin
    prints meanwhile (Python or native code) goes to standard error."""
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)


def load_peers(peers: str, timeout: float) -> list[Any]:
    """The ``--peers`` list (``name:key=value,...`` options allowed); a plugin that exits or
    prints while it loads never ends the run nor mixes with the JSON output."""
    try:
        with stdout_to_stderr():
            return resolve_peers(peers, load_timeout=timeout)
    except SystemExit as exc:
        raise PeerLoadError(f"--peers: a plugin called exit({exc.code!r}) while loading") from None


def run(
    paths: Annotated[list[Path] | None, typer.Argument(metavar="PATH", help="Case files or folders (searched recursively); FILE::ID selects one case. Default: the bundled corpus (seeds, edge cases, known divergences).", show_default=False)] = None,
    k: Annotated[str | None, typer.Option("-k", metavar="TEXT", help="Select cases whose id contains any of these comma-separated substrings; 'not X' excludes.")] = None,
    engine: Annotated[str, typer.Option(metavar="ENGINE", help=ENGINE_HELP)] = "all",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON (schema poolcheck.result/1) instead of tables.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Summary table only, no per-case diffs.")] = False,
    peers: Annotated[str | None, typer.Option("--peers", metavar="PEERS", help="Also run every case on these peers (comma-separated): onnxruntime, openvino, torch, onnx_reference, a module (my_pkg.my_peer) or a file (path/to/peer.py).")] = None,
    peer_timeout: Annotated[str, typer.Option("--peer-timeout", metavar="DURATION", help="How long a peer may take per batch before it counts as a timeout (e.g. 500ms, 20s, 2m).")] = "60s",
    report_dir: Annotated[Path | None, typer.Option("--report-dir", metavar="DIR", help="Also write result.json, junit.xml, summary.md and report.html here (replaced as a set; also after Ctrl-C).")] = None,
    fail_on: Annotated[str, typer.Option("--fail-on", metavar="SEVERITIES", help="Severities that make the exit code 1 (comma-separated: violation, unspecified, limitation, erratum; or all).")] = "violation",
) -> None:
    """Run case files through poolcheck's reference engines (and peers) and report every contradiction.

    Exit codes: 0 nothing to report, 1 a divergence of a --fail-on severity, 2 bad input or a case that
    could not be judged (verdict error), 130 interrupted.
    """
    with user_errors():
        timeout = parse_duration("--peer-timeout", peer_timeout)
        severities = parse_fail_on(fail_on)
        engines = engines_for(engine)
        if report_dir is not None:
            check_report_dir(report_dir)  # before any work: an unwritable folder is a usage error
        peer_list = load_peers(peers, timeout) if peers else []
        files, wanted = split_targets(list(paths) if paths else [CORPUS_DIR])
        cases, errors = load_paths(files)
    selected = select_cases(cases, k)
    exact_ids = sorted({i for ids in wanted.values() if ids for i in ids})
    if exact_ids:
        selected = [c for c in selected if _selected_by_target(c.path, c.id, wanted)]
    if (k or exact_ids) and not selected and not errors:
        what = f"-k {k!r}" if k else ", ".join(exact_ids)
        raise fail(f"{what} selects none of the {len(cases)} case(s)")
    replay_options: list[str] = []
    if engine != "all":
        replay_options += ["--engine", engine]
    if peers:
        replay_options += ["--peers", ",".join(peer_replay_items(peers))]
        if timeout != DEFAULT_PEER_TIMEOUT:
            replay_options += ["--peer-timeout", f"{timeout:g}s"]
    result = new_result("poolcheck " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    for err in errors:
        result.cases.append(CaseResult(case_id=err.case_id or (err.path or "?"), verdict="error",
                                       source=f"{err.path}:{err.line}" if err.line else (err.path or ""),
                                       message=str(err)))
    try:
        with stdout_to_stderr(as_json):
            by_case = peer_checks(selected, peer_list, timeout=timeout) if peer_list else {}
            for case in selected:
                result.cases.append(run_case(case, engines, by_case.get(case.id, []), replay_options))
            record_peer_versions(result, peer_list)
    except KeyboardInterrupt:
        result.interrupted = True
    if report_dir is not None:
        write_report_set(result, report_dir, to_stderr=as_json)

    if as_json:
        sys.stdout.write(to_json(result))
    else:
        console_report.render(result, console, details=not quiet)
    for err in errors:
        err_console.print("error: " + safe(str(err)), soft_wrap=True, markup=False, highlight=False)
    raise typer.Exit(exit_code(result, severities))


def exit_code(result: RunResult, fail_on: frozenset[str]) -> int:
    """2 when a case could not be judged (verdict error), 130 when interrupted, 1 when a check has
    a --fail-on severity, else 0."""
    if any(c.verdict == "error" for c in result.cases):
        return EXIT_USAGE
    if result.interrupted:
        return 130
    for case in result.cases:
        for check in case.checks:
            if check.verdict in ("pass", "skip"):
                continue
            if check.severity in fail_on or (check.severity is None and check.verdict in ("fail", "crash", "timeout")
                                             and "violation" in fail_on):
                return EXIT_FAILURES
    return EXIT_OK
