"""``poolcheck fuzz``: hypothesis-driven differential fuzzing of the peers, with diagnosis.

Parses options, shows a live progress display, delegates to
:func:`poolcheck.fuzz.campaign.run_campaign`, prints the summary and maps the outcome to the
exit code (1: new divergences, 0: none, 2: bad usage).
"""

from __future__ import annotations

import contextlib
import gc
import os
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
from rich.live import Live
from rich.text import Text

from poolcheck.cli.common import (
    EXIT_FAILURES,
    EXIT_INTERRUPTED,
    EXIT_OK,
    check_jobs,
    console,
    err_console,
    fail,
    parse_duration,
    parse_fail_on,
    parse_peer_timeout,
    path_parser,
    safe,
    user_errors,
    writable_dir,
)
from poolcheck.corpus import KNOWN_DIR
from poolcheck.errors import AttributeValueError
from poolcheck.fuzz.batching import default_batch
from poolcheck.fuzz.campaign_types import campaign_types
from poolcheck.fuzz.cluster import check_address, run_fuzz
from poolcheck.fuzz.database import check_database
from poolcheck.fuzz.family import FAMILY_FLAGS, check_family_arguments, is_family_ops
from poolcheck.fuzz.session import ORACLES, FuzzOptions, Progress, request_stop, unique_peers
from poolcheck.fuzz.strategies import ALL_DTYPES, CONVENTIONS, OP_NAMES, check_arguments
from poolcheck.peers.isolation import peer_facts
from poolcheck.peers.registry import builtin_list, builtin_peer, parse_peer_list
from poolcheck.report import console as console_report
from poolcheck.report.writers import write_reports
from poolcheck.spec.poolspec import comma_ints
from poolcheck.userdata import examples_dir, finds_dir


def register(app: typer.Typer) -> None:
    app.command("fuzz")(fuzz)


def _in_gc_callback(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside one of the garbage collector's callbacks (hypothesis
    installs one)."""
    codes = {getattr(getattr(cb, "__func__", cb), "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C and SIGTERM: record the stop, which sessions check at every example and the parent
    at every wait, and raise KeyboardInterrupt to cut a long wait short -- except inside a gc
    callback, where Python would drop the exception and print "Exception ignored in: ..." with a
    traceback; the recorded stop ends the campaign at the next example instead."""
    request_stop()
    if not _in_gc_callback(frame):
        raise KeyboardInterrupt


@contextlib.contextmanager
def _stops_on_signals() -> Iterator[None]:
    """SIGTERM, and Ctrl-C where it is not ignored, call :func:`_interrupt` while the command
    runs; the handlers before are back afterwards (a script or test that runs the command in its
    own process keeps its own)."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, _interrupt)
    if before[signal.SIGINT] is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)
    try:
        yield
    finally:
        for sig, handler in before.items():
            if handler is not None:
                signal.signal(sig, handler)


def _comma_list(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


#: The peers ``fuzz`` runs when ``--peers`` is not given (those available here): the fast runtime
#: peers. The converter chains, tract and JAX are opt-in: JAX compiles every configuration.
DEFAULT_FUZZ_PEERS = ("onnxruntime", "openvino", "torch", "onnx_reference")


def default_peers(isolated: bool = True) -> list[str]:
    """Every default peer that is available here (as its worker says, when ``isolated``)."""
    facts = peer_facts([builtin_peer(name) for name in DEFAULT_FUZZ_PEERS], isolated=isolated)
    return [name for name, f in zip(DEFAULT_FUZZ_PEERS, facts) if f.available]



#: The time budget of a campaign given neither --time-budget nor --max-examples (or --min-per-region).
DEFAULT_BUDGET_S = 60.0


def time_budget_of(time_budget: str | None, max_examples: int | None, min_per_region: int) -> float | None:
    """The campaign's time budget in seconds: --time-budget, else none when --max-examples bounds
    the campaign, else :data:`DEFAULT_BUDGET_S`. --min-per-region draws past --max-examples, so it
    always has a time budget."""
    if time_budget:
        return parse_duration("--time-budget", time_budget)
    return None if max_examples and not min_per_region else DEFAULT_BUDGET_S

def fuzz(
    ops: Annotated[str, typer.Option("--ops", help="Operators (comma-separated): maxpool, avgpool; or the rest of the family, fuzzed on its own: lp, global_avg, global_max, global_lp, unpool, adaptive_avg, adaptive_max.")] = "maxpool,avgpool",
    ranks: Annotated[str, typer.Option("--ranks", help="Input ranks (3, 4, 5), comma-separated.")] = "3,4,5",
    dtypes: Annotated[str | None, typer.Option("--dtypes", help=f"Element types, comma-separated, or 'all' ({', '.join(ALL_DTYPES)}). Default: the types some peer of the campaign takes for the fuzzed operators (all without peers).")] = None,
    conventions: Annotated[str, typer.Option("--conventions", help="Attribute conventions: openvino, onnx.")] = "openvino,onnx",
    peers: Annotated[str | None, typer.Option("--peers", help=f"Peers (comma-separated): built-ins ({builtin_list()}), a module or a .py file; 'none' for engine oracles only. Default: every available built-in.")] = None,
    max_examples: Annotated[int | None, typer.Option("--max-examples", help="Stop after this many hypothesis examples (each a list of configurations).")] = None,
    time_budget: Annotated[str | None, typer.Option("--time-budget", help="Stop after this long, e.g. 60s, 5m (default 60s when --max-examples is not given, or with --min-per-region).")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the exploration (default: random, printed for replay).")] = None,
    batch: Annotated[int | None, typer.Option("--batch", help="Most configurations in one example, the length spread over 1..N (one batched call per peer: one model, session, export or compile; shrinking reduces it to one). Default: the smallest the peers ask for (64 for every built-in peer and adapter, 8 for a plugin that does not say, for the rest of the family and with no peer).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", help="Fuzzing processes (each with its own peer workers).")] = 1,
    database: Annotated[str | None, typer.Option("--database", metavar="DIR|URL", help="Hypothesis example database: a folder, or redis://HOST:6379/0 shared by every worker and machine. Default: a folder in the per-user data folder.")] = None,
    cluster: Annotated[str | None, typer.Option("--cluster", metavar="URL", help="Run on a Dask scheduler, e.g. tcp://HOST:8786: one shard per worker (--jobs N: at most N workers). See docs/distributed.md.")] = None,
    save_cases: Annotated[Path | None, typer.Option("--save-cases", metavar="DIR", parser=path_parser("--save-cases"), help="Write one YAML case per new divergence here. Default: the per-user data folder (printed).")] = None,
    report_dir: Annotated[Path | None, typer.Option("--report-dir", metavar="DIR", parser=path_parser("--report-dir"), help="Write result.json, junit.xml, summary.md and report.html here.")] = None,
    report_alias: Annotated[Path | None, typer.Option("--report", hidden=True, parser=path_parser("--report"))] = None,
    invalid: Annotated[bool, typer.Option("--invalid", help="Also generate invalid configurations and check that engine and peers reject them alike.")] = False,
    known: Annotated[list[Path] | None, typer.Option("--known", metavar="DIR", parser=path_parser("--known"), help="More known-divergence registry folders, added to the registry that ships with poolcheck.")] = None,
    bundled_known: Annotated[bool, typer.Option("--bundled-known/--no-bundled-known", help="Use the known-divergence registry that ships with poolcheck (--no-bundled-known: only the --known folders).")] = True,
    engine_checks: Annotated[str, typer.Option("--engine-checks", help="Engine comparison and metamorphic properties on every fourth configuration of each example from the first (first) or on all (all).")] = "first",
    isolation: Annotated[bool, typer.Option("--isolation/--no-isolation", help="Run peers in warm worker processes (a crash or hang is recorded, not fatal).")] = True,
    peer_timeout: Annotated[str, typer.Option("--peer-timeout", metavar="DURATION", help="How long a peer may take per batch before it counts as a timeout (e.g. 60s).")] = "60s",
    oracles: Annotated[str, typer.Option("--oracles", help="Oracles to run (comma-separated): engines, peers, shapes, metamorphic.")] = ",".join(ORACLES),
    exit_first: Annotated[bool, typer.Option("--exit-first", help="Stop as soon as the first new divergence of a --fail-on severity is shrunk (other finds are kept and the exploration goes on).")] = False,
    shrink: Annotated[bool, typer.Option("--shrink/--no-shrink", help="Shrink each new divergence to a minimal case (--no-shrink: explore only, keep first reproducers).")] = True,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Live progress display.")] = True,
    min_per_region: Annotated[int, typer.Option("--min-per-region", metavar="N", help="Draw (past --max-examples) until every spec region the options can reach has N hits on every runner that can express it (a region a peer declined N times without one answer counts as one it cannot), or the time budget ends; 0: off.")] = 0,
    fail_on: Annotated[str, typer.Option("--fail-on", metavar="SEVERITIES", help="Severities of new divergences that make the exit code 1 (comma-separated: violation, unspecified, limitation, erratum; or all).")] = "violation",
) -> None:
    """Fuzz pooling configurations against the peers; shrink, diagnose and save each new divergence."""
    with user_errors():
        if cluster is not None:  # "" (an unset variable) is no address: it must not fuzz here instead
            cluster = check_address(cluster)
        op_list = []
        words = {**OP_NAMES, **{flag: op for op, flag in FAMILY_FLAGS.items()}}
        for o in _comma_list(ops):
            if o not in words:
                raise AttributeValueError("--ops", f"expected maxpool, avgpool or a family operator "
                                                   f"({', '.join(FAMILY_FLAGS.values())}), got {o!r}")
            op_list.append(words[o])
        if is_family_ops(op_list) and invalid:
            raise AttributeValueError("--invalid", "family operators are fuzzed with valid configurations only")
        if not is_family_ops(op_list) and any(op in FAMILY_FLAGS for op in op_list):
            raise AttributeValueError("--ops", "the family operators fuzz on their own: give them without maxpool/avgpool")
        try:
            rank_list = comma_ints(",".join(_comma_list(ranks)))
        except ValueError:
            raise AttributeValueError("--ranks", f"expected comma-separated integers, got {ranks!r}") from None
        dtype_list = list(ALL_DTYPES) if dtypes is None or dtypes.strip() == "all" else _comma_list(dtypes)
        conv_list = _comma_list(conventions)
        bad = [c for c in conv_list if c not in CONVENTIONS]
        if bad:
            raise AttributeValueError("--conventions", f"expected openvino and/or onnx, got {bad[0]!r}")
        if is_family_ops(op_list):
            check_family_arguments(op_list, rank_list, dtype_list, conv_list)
        else:
            check_arguments(op_list, rank_list, dtype_list, conv_list)
        oracle_set = frozenset(_comma_list(oracles))
        bad = sorted(oracle_set - set(ORACLES))
        if bad or not oracle_set:
            raise AttributeValueError("--oracles", f"expected some of {', '.join(ORACLES)}, got {oracles!r}")
        if engine_checks not in ("first", "all"):
            raise AttributeValueError("--engine-checks", f"expected first or all, got {engine_checks!r}")
        check_jobs(jobs)
        severities = parse_fail_on(fail_on)
        timeout_s = parse_peer_timeout(peer_timeout)
        if batch is not None and not 1 <= batch <= 256:
            raise AttributeValueError("--batch", f"must lie in [1, 256], got {batch}")
        if min_per_region < 0:
            raise AttributeValueError("--min-per-region", f"must be >= 0, got {min_per_region}")
        if max_examples is not None and max_examples < 1:
            raise AttributeValueError("--max-examples", f"must be >= 1, got {max_examples}")
        budget = time_budget_of(time_budget, max_examples, min_per_region)
        report = report_dir if report_dir is not None else report_alias
        save_dir = writable_dir("--save-cases", save_cases if save_cases is not None else finds_dir())
        if database is not None and not database.strip():  # an unset shell variable: not the current folder
            raise fail("--database: expected a folder or redis://HOST:6379/0, got an empty string")
        if database is None:
            database = str(writable_dir("--database", examples_dir()))
        elif "://" not in database:
            writable_dir("--database", Path(database))
        else:
            check_database(database)
        if report is not None:
            writable_dir("--report-dir", report)
        for k in known or []:
            if not k.is_dir():
                raise fail(f"--known: {str(k)!r} is not a folder")
        known_paths = ([str(KNOWN_DIR)] if bundled_known else []) + [str(p) for p in known or []]
        if peers is None:
            peer_names = default_peers(isolation)
        elif peers.strip() == "none":
            peer_names = []
        elif not peers.replace(",", "").strip():  # an unset variable is not 'none'
            raise fail(f"--peers: expected peer names (comma-separated) or none, got {peers!r}")
        else:
            # name:key=value options may hold commas; each peer by its canonical name
            peer_names = [str(r) for r in parse_peer_list(peers)]
        # unknown names are usage errors, before anything runs; a repeat is dropped (and from the replay)
        peer_names, resolved = unique_peers(peer_names)
        drawn = campaign_types(op_list, conv_list, resolved, None if dtypes is None else dtype_list,
                               isolated=isolation)
        if drawn.warning:
            err_console.print(Text.assemble(("warning:", "bold yellow"), f" {safe(drawn.warning)}"), soft_wrap=True)
        dtype_list = list(drawn.dtypes)
        if batch is None:  # the rest of the family: not measured with long examples, 8
            batch = default_batch([] if is_family_ops(op_list) else resolved)
        if seed is None:
            seed = int.from_bytes(os.urandom(4), "big") % 1_000_000
        options = FuzzOptions(
            ops=tuple(op_list), ranks=tuple(rank_list), dtypes=tuple(dtype_list), conventions=tuple(conv_list),
            peers=tuple(peer_names), max_examples=max_examples, time_budget=budget, seed=seed, jobs=jobs,
            database=str(database) if database else None, invalid=invalid, engine_checks=engine_checks,
            isolated=isolation, peer_timeout=timeout_s, shrink=shrink, oracles=oracle_set,
            exit_first=exit_first, fail_on=severities, max_configs=batch, min_per_region=min_per_region,
        )
        if cluster:
            options.jobs = 1  # one shard per Dask worker instead
    command = "poolcheck " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    live: Live | None = None

    def on_progress(p: Progress) -> None:
        if live is not None:
            live.update(console_report.fuzz_progress_view(p, budget, max_examples))

    def on_phase(text: str) -> None:
        if progress and live is None:
            err_console.print(Text(safe(text), style="dim"))

    # SIGTERM (a CI job cancelled, `kill PID`) ends the campaign like Ctrl-C: what was found is
    # already saved, and the summary and reports are still written.
    with _stops_on_signals():
        with user_errors():
            if progress and console.is_terminal:
                live = Live(Text("starting ..."), console=console, refresh_per_second=4, transient=False)
                live.start()
            try:
                campaign = run_fuzz(options, cluster=cluster, max_workers=jobs, known_paths=known_paths,
                                    save_dir=save_dir, command=command, on_progress=on_progress, on_phase=on_phase,
                                    fail_on=severities)
            finally:
                if live is not None:
                    live.stop()
            if report is not None:
                write_reports(campaign.result, report)

        for err in campaign.known_errors:
            err_console.print(Text.assemble(("warning:", "bold yellow"), f" known-divergence registry: {safe(str(err))}"),
                              soft_wrap=True)
        console_report.render_fuzz(campaign.result, console, saved_to=str(save_dir),
                                   reports_to=str(report) if report is not None else None)
        if campaign.result.interrupted and not campaign.new:
            raise typer.Exit(EXIT_INTERRUPTED)
        raise typer.Exit(EXIT_FAILURES if campaign.exit_code else EXIT_OK)
