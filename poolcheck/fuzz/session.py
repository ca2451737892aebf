"""The fuzzing session: examples expanded from seeds, the oracles judge, Hypothesis shrinks.

How a session runs:

1. The example database's earlier finds replay first (``--database``).
2. Example ``i`` of job ``j`` is a batch of ``--batch`` configurations expanded from a seed
   derived from ``--seed``, ``j`` and ``i`` (:mod:`poolcheck.fuzz.shrinking`), until
   ``--max-examples`` or ``--time-budget`` is used up (:data:`ROUND_EXAMPLES` with neither).
   The engine computes the reference for each configuration, every peer receives the whole
   batch in one batched (and isolated) call, each peer at its own pace a few examples ahead
   (:mod:`poolcheck.fuzz.lanes`), and the oracles turn differences into
   :class:`~poolcheck.fuzz.oracles.Finding` objects with a signature, example after example.
3. A divergence whose group is neither known (``cases/known/``) nor already shrunk is shrunk at
   once: Hypothesis replays the choices that made its configuration and shrinks them
   (:func:`~poolcheck.fuzz.shrinking.shrink`), the test failing with an exception *class of its
   own* per group, so each divergence met while shrinking is shrunk separately to a minimal
   configuration and input, and reported once.
4. The shrunk reproducer of each group is kept; later examples count it and go on, so they search
   for the next divergence instead of rediscovering this one.

Domain code only: progress goes to a callback, nothing is printed. ``--jobs N`` runs N sessions
in spawned processes (different seeds, one deadline) and merges their findings.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import hashlib
import itertools
import multiprocessing
import queue as queue_mod
import signal
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from poolcheck.engines import available_engines, get_engine
from poolcheck.errors import AttributeValueError, PoolcheckError
from poolcheck.fuzz import coverage as cov
from poolcheck.fuzz import family
from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.batching import EXAMPLE_CONFIGS, engine_checked
from poolcheck.fuzz.choices import Choices
from poolcheck.fuzz.database import example_database
from poolcheck.fuzz.generation import seed_only_generation
from poolcheck.fuzz.grouping import Grouping, distinguish, group_finding, refutes
from poolcheck.fuzz.lanes import Lanes
from poolcheck.fuzz.progress import Progress, SessionResult, merge_results, merged_progress
from poolcheck.fuzz.reference import expected_for
from poolcheck.fuzz.repeats import ENGINE_SIDE_CACHE, PEER_RESULTS_CACHE, EngineSide, config_key, peer_key
from poolcheck.fuzz.shrinking import (
    Divergence,
    collect_failures,
    divergence_type,
    example_seed,
    expand_batch,
    save_example,
    saved_examples,
    shrink,
)
from poolcheck.fuzz.strategies import ALL_DTYPES, CONVENTIONS, FuzzCase, configs, fuzz_config
from poolcheck.judgement import Outputs
from poolcheck.peers.base import Peer, PeerResult, operator_conventions
from poolcheck.peers.isolation import (
    Submitted,
    call_peer_many,
    close_workers,
    peer_facts,
    start_workers,
    submit_peer_many,
)
from poolcheck.peers.registry import resolve_peer
from poolcheck.results import DEFAULT_FAIL_ON, FindingKind, PeerStatus, Signature
from poolcheck.spec.severity import RANK
from poolcheck.spec.shape import Geometry

#: Examples of a session given neither ``--max-examples`` nor ``--time-budget``. The budget is
#: checked between examples, so a session overshoots it by one example and its shrinking only.
ROUND_EXAMPLES = 100
#: The oracle families (``--oracles``): engine vs engine, engine vs peers, output shapes vs the
#: written rules, metamorphic properties of the reference engine.
ORACLES: tuple[str, ...] = ("engines", "peers", "shapes", "metamorphic")
#: Seconds between progress callbacks.
PROGRESS_INTERVAL = 0.25
#: Examples in flight in a campaign with several peers (:func:`lane_depth`).
LANE_DEPTH = 4


@dataclass
class FuzzOptions:
    """Everything that defines a fuzzing session (picklable: sent to ``--jobs`` workers)."""

    ops: tuple[str, ...] = ("max", "avg")
    ranks: tuple[int, ...] = (3, 4, 5)
    dtypes: tuple[str, ...] = ALL_DTYPES
    conventions: tuple[str, ...] = CONVENTIONS
    peers: tuple[Any, ...] = ()  # names (resolved in each process) or Peer objects
    max_examples: int | None = None
    time_budget: float | None = None
    seed: int = 0
    jobs: int = 1
    database: str | None = None
    invalid: bool = False
    engine_checks: str = "first"  # engine comparison + metamorphic: "first" of every 4 configurations | "all"
    max_configs: int = EXAMPLE_CONFIGS
    engine: str = "auto"
    isolated: bool = True
    peer_timeout: float = 30.0
    oracles: frozenset[str] = frozenset(ORACLES)  # which oracles run (see ORACLES)
    exit_first: bool = False  # stop once the first new divergence of a ``fail_on`` severity is shrunk
    #: Severities (values) of new divergences that fail the campaign (``--fail-on``); with
    #: ``exit_first`` only a find of one of them ends the exploration.
    fail_on: frozenset[str] = frozenset(s.value for s in DEFAULT_FAIL_ON)
    shrink: bool = True  # False: explore only (finds are kept as first seen, unshrunk)
    shrink_seconds: float | None = None  # per round; default: the remaining budget, within [5, 30] s
    known_signatures: frozenset[str] = frozenset()
    min_per_region: int = 0  # > 0: stop once every reachable region has this many hits on every runner

    def coverage_plan(self) -> cov.Plan:
        return cov.plan(self.ops, self.conventions, self.ranks, self.dtypes)

    def digest(self) -> bytes:
        """Keys the hypothesis database: runs with the same search space share examples."""
        # the generators' choices (fuzz/choices.py) since examples are expanded from seeds; each
        # entry is one configuration, whatever the batch
        key = repr(("one configuration's choices", self.ops, self.ranks, self.dtypes, self.conventions, self.invalid))
        return hashlib.sha256(key.encode()).digest()


_KIND_ORDER = {k: i for i, k in enumerate(O.KINDS)}

#: A peer's answers to one example, read by calling it once (``isolation.submit_peer_many``).
Answer = Callable[[], list[PeerResult]]


def _none() -> int:
    return 0


def _nothing() -> None:
    return None


def lane_depth(peers: int) -> int:
    """How many examples a session makes ahead of the one it judges
    (:class:`~poolcheck.fuzz.lanes.Lanes`): with one peer, one more, which its worker computes
    while this one is judged; with several, room for the fast ones to run ahead of the slowest
    (measured in docs/fuzzing.md, "Lanes")."""
    return 2 if peers <= 1 else LANE_DEPTH


def ends_exploration(finding: O.Finding, options: FuzzOptions) -> bool:
    """Whether ``finding`` (new and final) ends an ``--exit-first`` exploration: its severity is
    one ``--fail-on`` names. An unspecified or limitation find does not hide a violation found
    a second later."""
    return options.exit_first and finding.weight.value in options.fail_on


# --------------------------------------------------------------------------- judging a peer


def judge_peer(peer: Peer, batch: Sequence[FuzzCase], expected: Sequence[tuple[Outputs, Geometry] | None],
               results: Sequence[PeerResult], engine_module: ModuleType, *, version: str | None,
               prefer: Callable[[int], Mapping[str, int]],
               memo: O.DiagnosisMemo | None = None) -> Iterator[tuple[FuzzCase, PeerResult, O.Finding | None]]:
    """``peer``'s results on ``batch``, each judged against its reference (``None``: the engine
    rejects the configuration) by :func:`~poolcheck.fuzz.oracles.check_peer`: the one path a
    peer's output takes, for new findings and for re-checking known divergences. Lazy:
    ``prefer(i)`` (the tie-breaking history for item ``i``) is read when item ``i`` is judged, so
    a caller may update it from the items before; ``memo`` keeps diagnoses a session repeats."""
    conventions = operator_conventions(peer)
    for i, (case, exp, result) in enumerate(zip(batch, expected, results)):
        base, geom = exp if exp is not None else (None, None)
        if case.mutation == "dtype not allowed" and case.spec.convention not in conventions:
            yield case, result, None  # the type is invalid for an operator this peer does not run
            continue
        yield case, result, O.check_peer(case, peer.name, result, engine_module, base, geom, version, prefer(i), memo=memo)


# --------------------------------------------------------------------------- one session


class Session:
    """One process's fuzzing loop."""

    def __init__(self, options: FuzzOptions, peers: Sequence[Peer], *, job: int = 0,
                 on_progress: Callable[[Progress], None] | None = None, deadline: float | None = None,
                 max_examples: int | None = None, on_find: Callable[[O.Finding], None] | None = None,
                 halt: Any = None) -> None:
        self.options = options
        #: Set by the parent of ``--jobs`` workers when another job's find ends an ``--exit-first``
        #: exploration (anything with ``is_set()``).
        self.halt = halt
        #: Called with each new divergence as soon as it is final (shrunk, or found with
        #: --no-shrink), so a campaign can save it before the run ends or is killed.
        self.on_find = on_find
        self._call = call_peer_many
        self.job = job
        self.on_progress = on_progress
        self.engine_module: ModuleType = get_engine(options.engine)
        # the reference engine first: every other engine is compared with it
        self.engines: dict[str, ModuleType] = {self.engine_module.NAME: self.engine_module}
        self.engines.update({name: get_engine(name) for name in available_engines() if name != self.engine_module.NAME})
        self.versions: dict[str, str] = {}
        self.unavailable: dict[str, str] = {}
        self.peers: list[Peer] = []
        # asked of each peer's worker (a --jobs or cluster session's own, started side by side):
        # no runtime is imported into this process
        for peer, facts in zip(peers, peer_facts(peers, isolated=options.isolated)):
            if not facts.available:
                self.unavailable[peer.name] = facts.why
                continue
            self.peers.append(peer)
            self.versions[peer.name] = facts.version or "unknown"
        self.deadline = deadline
        self.max_examples = max_examples
        self._plan = options.coverage_plan()
        self.progress = Progress(peer_status={p.name: Counter() for p in self.peers},
                                 known=frozenset(options.known_signatures))
        self.settled: set[str] = set(options.known_signatures)
        self.findings: dict[str, O.Finding] = {}
        self.shrunk: set[str] = set()
        self.detected_at: dict[str, float] = {}
        self.shrunk_at: dict[str, float] = {}
        # History per peer, seeded with the registry: an example that several explanations fit
        # is named after the behaviours already on record (see diagnosis.diagnose_output).
        self.preference: dict[str, Counter[str]] = {}
        for sig in map(Signature.parse, options.known_signatures):
            if sig.kind == FindingKind.PEER:
                self.preference.setdefault(sig.subject, Counter())[sig.detail] += 1
        #: A peer's divergences that one explanation accounts for, grouped as they appear: an
        #: example a group already explains is counted, not shrunk again.
        self.grouping = Grouping(self.engine_module, options.known_signatures)
        self.started = time.monotonic()
        self._last_progress = 0.0
        #: Examples made and not yet judged (:meth:`_explore_in_lanes`): they count against
        #: ``--max-examples`` already.
        self._in_flight: Callable[[], int] = _none
        #: Called while an example is judged: the peers' answers that are in are collected and
        #: their workers given the next example (:meth:`~poolcheck.fuzz.lanes.Lanes.pump`).
        self._pump: Callable[[], None] = _nothing
        self.warnings: list[str] = []
        self.rounds: list[tuple[int, int]] = []
        #: Diagnoses of peer outputs by their arguments (a repeat with the same history reuses one).
        self._diagnose = O.DiagnosisMemo()
        #: A repeatable peer's outputs and refusals by peer (id) and :func:`peer_key`, oldest first.
        self._peer_results: dict[int, dict[tuple[Any, ...], PeerResult]] = {}
        #: Engine-side verdicts by configuration (:func:`config_key`), oldest first.
        self._engine_side: dict[tuple[Any, ...], EngineSide] = {}
        self.family = family.is_family_ops(options.ops)  # the rest of the family: fuzz/family.py
        #: One configuration from a source of choices (fuzz/choices.py): a campaign expands its
        #: examples from seeds, Hypothesis shrinks a divergent one through ``self.one``.
        self.generate: Callable[[Choices], Any] = family.generator(options.ops, options.ranks, options.dtypes) \
            if self.family else functools.partial(fuzz_config, ops=options.ops, ranks=options.ranks, dtypes=options.dtypes,
                                                  conventions=options.conventions, invalid=options.invalid)
        self.one = configs(self.generate)
        #: ``--database``: earlier finds replay first; new shrunk finds are saved for other runs.
        self.database = example_database(options.database) if options.database else None

    # ------------------------------------------------------------------ checking one example

    def _ask_peer(self, peer: Peer, batch: Sequence[FuzzCase]) -> Submitted:
        """Ask ``peer`` for ``batch`` now (an isolated peer's worker starts
        computing at once); calling the answer gives one result per configuration. A repeatable
        peer is asked only for configurations it has not answered yet: its earlier outputs and
        refusals to run (``declined``) are reused; rejections, crashes and timeouts are asked
        again."""
        kept = self._peer_results.setdefault(id(peer), {}) if getattr(peer, "repeatable", False) else None
        if kept is None:
            keys: list[Any] = list(range(len(batch)))  # every configuration asked
            todo = batch
        else:
            keys = [peer_key(case) for case in batch]
            first = {k: case for k, case in zip(keys, batch) if k not in kept}  # each new one once
            todo, keys_asked = list(first.values()), list(first)
            reused = {k: kept[k] for k in keys if k in kept}  # now: the answer may come after evictions
        items = [(case.spec, case.x) for case in todo]
        if not items:
            answer = Submitted(list)
        elif self.options.isolated and self._call is call_peer_many:
            answer = submit_peer_many(peer, items, timeout=self.options.peer_timeout)
        else:
            answer = Submitted(lambda: self._call(peer, items, isolated=self.options.isolated,
                                                  timeout=self.options.peer_timeout))
        if kept is None:
            return answer

        def results() -> list[PeerResult]:
            fresh = dict(zip(keys_asked, answer()))
            out = [fresh[k] if k in fresh else reused[k] for k in keys]
            for k, result in fresh.items():
                if result.status in ("ok", "declined"):
                    kept[k] = result
                    if len(kept) > PEER_RESULTS_CACHE:
                        del kept[next(iter(kept))]  # the oldest
            return out

        return Submitted(results, answer.connection, answer.due)

    def _ask_peers(self, batch: Sequence[FuzzCase]) -> list[Answer]:
        return [self._ask_peer(peer, batch) for peer in (self.peers if "peers" in self.options.oracles else [])]

    def _expected(self, case: FuzzCase) -> tuple[tuple[Outputs, Geometry] | None, list[O.Finding]]:
        """The reference engine's outputs and geometry for ``case`` (None where poolcheck
        rejects it) and the findings against poolcheck itself (it accepts an invalid
        configuration, or its engine raises)."""
        ok, _why = O.engine_accepts(case)
        if case.mutation and ok:
            return None, [O.Finding(kind=FindingKind.ENGINE, op=case.op, subject="validation",
                                    klass=f"accepts invalid: {case.mutation}",
                                    text="poolcheck accepts a configuration it should reject", detail=case.describe(),
                                    case=case, explained=False)]
        if not ok:
            return None, []
        try:
            return expected_for(self.engine_module, case), []
        except PoolcheckError as exc:
            return None, [O.Finding(kind=FindingKind.ENGINE, op=case.op, subject=self.engine_module.NAME, klass="error",
                                    text="the engine raised", detail=str(exc), case=case, explained=False)]

    def check_batch(self, batch: Sequence[FuzzCase], pending: Sequence[Answer] | None = None) -> list[O.Finding]:
        """Every oracle on every configuration of one example (``pending``: the peers' answers,
        asked already by :meth:`_ask_peers`)."""
        if self.family:
            return family.check_batch(self, batch)  # type: ignore[arg-type]
        findings: list[O.Finding] = []
        oracles = self.options.oracles
        peers = self.peers if "peers" in oracles else []
        # Isolated peers get the batch first: their workers compute while the engines do.
        pending = self._ask_peers(batch) if pending is None else pending
        expected: list[tuple[Outputs, Geometry] | None] = []
        sides: list[EngineSide] = []  # held here: a later configuration of the batch may evict it
        for case in batch:
            self._pump()
            key = config_key(case)
            known = self._engine_side.get(key)
            if known is None:
                known = self._engine_side[key] = EngineSide(*self._expected(case))
                if len(self._engine_side) > ENGINE_SIDE_CACHE:
                    del self._engine_side[next(iter(self._engine_side))]  # the oldest
            if known.regions is None:  # the spec regions it reaches: a repeat's are the same
                known.regions = cov.regions_of(case.spec, case.x) if case.mutation is None else frozenset()
            expected.append(known.expected)
            sides.append(known)
            findings += [dataclasses.replace(f, case=case) for f in known.findings]
            if known.expected is not None and "shapes" in oracles:
                findings += O.check_shape_rules(case, known.expected[1])
        # The engine-side oracles (the other engines against the reference engine, metamorphic
        # properties of the reference engine) run on every fourth configuration of each example
        # from the first, or on all of them: they cost several engine calls per configuration.
        for index, (case, known, exp) in enumerate(zip(batch, sides, expected)):
            self._pump()
            if exp is not None and engine_checked(index, self.options.engine_checks):
                if known.checks is None:
                    known.checks = []
                    if len(self.engines) > 1 and "engines" in oracles:
                        known.checks += O.check_engines(case, self.engines, exp[0], exp[1])
                    if "metamorphic" in oracles:
                        known.checks += O.check_metamorphic(case, self.engine_module, self.engine_module.NAME, exp[0], exp[1])
                    findings += known.checks
                else:
                    findings += [dataclasses.replace(f, case=case) for f in known.checks]
        self.progress.cases += len(batch)
        reached = {id(case): side.regions or frozenset() for case, side in zip(batch, sides)}
        for hit, exp in zip(reached.values(), expected):
            if exp is not None:
                self.progress.coverage.record(self.engine_module.NAME, hit)
        for peer, answer in zip(peers, pending):
            status = self.progress.peer_status.setdefault(peer.name, Counter())
            prefer = self.preference.setdefault(peer.name, Counter())

            def history(_i: int, p: Counter[str] = prefer) -> Mapping[str, int]:
                return p  # one history per peer, updated as its items are judged

            for _case, result, f in judge_peer(peer, batch, expected, answer(), self.engine_module,
                                               version=self.versions.get(peer.name), prefer=history,
                                               memo=self._diagnose):
                self._pump()
                status[result.status] += 1
                if result.status in ("ok", "rejects"):
                    self.progress.compared[peer.name] += 1
                    self.progress.coverage.record(peer.name, reached.get(id(_case), ()))
                elif result.status == PeerStatus.DECLINED:
                    self.progress.coverage.record_declined(peer.name, reached.get(id(_case), ()))
                if f is not None:
                    findings.append(f)
                    if f.explained and not f.extra.get("ambiguous", True):
                        prefer.update(f.extra.get("variants", ()))
        return findings

    def _judge(self, batch: Sequence[FuzzCase], pending: Sequence[Answer] | None = None) -> list[tuple[str, O.Finding]]:
        """Check one example and count what it found; return its new divergences (group key,
        example), the ones neither known nor shrunk yet."""
        findings = [ff for f in self.check_batch(batch, pending) for ff in f.focused()]
        now = time.monotonic() - self.started
        new: list[tuple[str, O.Finding]] = []  # (group key, example)
        for f in findings:
            sig = f.signature
            self.progress.divergent[sig] += 1
            if sig not in self.detected_at:
                self.detected_at[sig] = now
            if sig in self.settled:
                self._heavier_example(sig, f)
                continue
            group = self.grouping.place(f)
            if group.known or (group.key != sig and group.key in self.settled):
                self.settled.add(sig)  # one explanation already on record or shrunk accounts for it
                continue
            key = group.key
            new.append((key, f))
            best = self.findings.get(key)
            if best is None or f.size < best.size:
                self.findings[key] = f
                if not self.options.shrink:
                    self._found(f)
        self._report_progress()
        return new

    def _example(self, batch: list[FuzzCase]) -> None:
        """The Hypothesis test body while a divergence shrinks: fail with the exception class of
        the first new divergence (Hypothesis shrinks each class on its own)."""
        raise_if_stopped()
        new = self._judge(batch)
        if new:
            key, f = min(new, key=lambda t: (_KIND_ORDER.get(t[1].kind, 9), t[0]))
            raise divergence_type(key)(f)

    # ------------------------------------------------------------------ rounds

    def _out_of_budget(self) -> bool:
        if self.halt is not None and self.halt.is_set():
            return True
        if self.deadline is not None and time.time() >= self.deadline:
            return True
        if self.options.min_per_region > 0:
            return self._covered()
        return self.max_examples is not None and self.progress.examples + self._in_flight() >= self.max_examples

    def _covered(self) -> bool:
        """Every reachable region has ``min_per_region`` hits on every runner that can express it
        (:meth:`~poolcheck.fuzz.coverage.Coverage.covers`)."""
        keys = self._plan.reachable
        runners = [self.engine_module.NAME, *(p.name for p in self.peers)]
        return all(self.progress.coverage.covers(r, keys, self.options.min_per_region) for r in runners)

    def _report_progress(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if self.on_progress is None or (not force and now - self._last_progress < PROGRESS_INTERVAL):
            return
        self._last_progress = now
        self.progress.elapsed = now - self.started
        self.on_progress(self.progress)

    def _shrink_seconds(self) -> float:
        if self.options.shrink_seconds is not None:
            return self.options.shrink_seconds
        if self.deadline is None:
            return 30.0
        return min(30.0, max(5.0, self.deadline - time.time()))

    def _explore(self, batch: list[FuzzCase]) -> None:
        """One example of the exploration: judged, and each of its new divergences shrunk (or,
        with ``--no-shrink``, kept as found)."""
        raise_if_stopped()
        self.progress.examples += 1
        self._begin_example()
        try:
            self._shrink_all(self._judge(batch))
        finally:
            self._end_example()

    def _explore_in_lanes(self, batches: Iterator[list[FuzzCase]]) -> None:
        """:meth:`_explore` of each batch, with the examples in flight to the peers
        (:class:`~poolcheck.fuzz.lanes.Lanes`): each peer's workers compute the next examples
        while this one is judged, each peer at its own pace. Every answer in flight is collected
        before a new find is shrunk (shrinking asks the peers); once ``--exit-first`` ends the
        exploration, the examples still in flight are dropped, uncounted."""
        peers = self.peers if "peers" in self.options.oracles else []
        lanes: Lanes[list[FuzzCase]] = Lanes(lambda p, batch: self._ask_peer(peers[p], batch), len(peers),
                                             depth=lane_depth(len(peers)), check=raise_if_stopped)
        self._in_flight = lambda: lanes.in_flight
        self._pump = lanes.pump
        try:
            for batch, answers in lanes.run(batches):
                self.progress.examples += 1
                self._begin_example()
                try:
                    new = self._judge(batch, answers)
                    if new and self.options.shrink:
                        lanes.drain()
                    self._shrink_all(new)
                finally:
                    self._end_example()
                if self._ended() or (self.halt is not None and self.halt.is_set()):
                    return
        finally:
            self._in_flight = _none
            self._pump = _nothing

    def _shrink_all(self, new: list[tuple[str, O.Finding]]) -> None:
        for key, f in new:
            if self.options.shrink and key not in self.settled and self._claim(key):
                self._shrink(key, f)

    def _begin_example(self) -> None:
        """Called before an example is judged (a cluster shard hears from the others here)."""

    def _end_example(self) -> None:
        """Called after an example is judged and its finds shrunk (a shard reports them)."""

    def _claim(self, key: str) -> bool:
        """Whether this session shrinks the new divergence ``key`` (a cluster shard asks whether
        another shard claimed it first)."""
        return True

    def _shrink(self, key: str, f: O.Finding) -> None:
        """Shrink the divergence ``key`` from its example ``f``: Hypothesis replays the choices
        that made ``f``'s configuration and shrinks them (:func:`~poolcheck.fuzz.shrinking.shrink`).
        A divergence the replay does not reproduce (a peer that answers otherwise the second
        time) is kept as found."""
        self.progress.phase = f"shrinking {len(self.shrunk) + 1}"
        self._report_progress(force=True)
        seed = int.from_bytes(hashlib.sha256(f"{self.options.seed}:{self.job}:shrink:{key}".encode()).digest()[:8], "big")
        with seed_only_generation():
            failure = shrink(self._example, self.one, f.case.choices, seed=seed, seconds=self._shrink_seconds())
        found: list[Divergence] = []
        other: list[BaseException] = []
        if failure is not None:
            collect_failures(failure, found, other)
        if key not in self.settled and not any(str(getattr(type(d), "signature", "")) == key for d in found):
            found.append(divergence_type(key)(f))  # not reproduced: kept as found
        for d in found:
            f = d.finding
            sig = str(getattr(type(d), "signature", f.signature))  # the group's key
            if sig in self.shrunk:
                continue
            self.findings[sig] = f
            self.shrunk.add(sig)
            self.shrunk_at[sig] = time.monotonic() - self.started
            self.settled.add(sig)
            if sig not in self.progress.new:
                self.progress.new.append(sig)
            self._tell_apart(sig)
            self._found(self.as_group(sig, f))
            if self.database is not None:
                save_example(self.database, self.options.digest(), f.case.choices)
        self.progress.phase = "exploring"
        for o in other:
            if isinstance(o, PoolcheckError | AttributeValueError):
                raise o from None
            if type(o).__module__.startswith("hypothesis"):
                self.warnings.append(f"hypothesis: {type(o).__name__}: {str(o).splitlines()[0][:200]}")
                continue
            raise o from None

    def _ended(self) -> bool:
        """``--exit-first``: a shrunk new divergence of a ``--fail-on`` severity ends it."""
        return self.options.exit_first and any(ends_exploration(self.as_group(s, self.findings[s]), self.options)
                                               for s in self.shrunk if s in self.findings)

    def _replay_database(self) -> None:
        """The example database's earlier finds first, in batches, before any new example."""
        if self.database is None:
            return
        self.progress.phase = "replaying earlier finds"
        cases = saved_examples(self.database, self.options.digest(), self.generate)
        for start in range(0, len(cases), self.options.max_configs):
            if self._out_of_budget() or self._ended():
                break
            self._explore(cases[start:start + self.options.max_configs])

    def _heavier_example(self, sig: str, f: O.Finding) -> None:
        """A class weighs by the configuration's convention (spec/severity.py): an example of a
        settled class that weighs more than the one on record (rounding:ceil_torch->ceil is an
        erratum under ONNX's texts, a violation under OpenVINO's) stands for it from now on, so
        the report and ``--exit-first`` see the heavier weight."""
        group = self.grouping.by_signature.get(sig)
        key = group.key if group is not None else sig
        held = self.findings.get(key)
        if held is not None and RANK.index(f.weight) < RANK.index(held.weight):
            self.findings[key] = f

    def as_group(self, key: str, f: O.Finding) -> O.Finding:
        """``f`` (an example of the group ``key``) under its group's current name and severity."""
        group = self.grouping.by_signature.get(key)
        if group is None:
            return f
        return group_finding(group, f, sum(self.progress.divergent.get(k, 0) for k in group.signatures) or 1)

    def _tell_apart(self, key: str) -> None:
        """Several explanations reproduce every example of a group: ask its peer on nearby
        configurations where they part, and drop those it contradicts."""
        group = self.grouping.by_signature.get(key)
        peer = next((p for p in self.peers if group is not None and p.name == group.subject), None)
        if group is None or peer is None or not group.causes or self.family:
            return

        def ask(spec: Any, x: Any) -> tuple[Any, Any] | None:
            (result,) = call_peer_many(peer, [(spec, x)], isolated=self.options.isolated,
                                       timeout=self.options.peer_timeout)
            if result.status != "ok" or result.output is None:
                return None
            return result.output.values, result.output.indices

        for cause in distinguish(self.engine_module, group, ask):
            self.grouping.ruled_out.add((group.subject, group.op, cause))
        if len(group.causes) == 1 and refutes(self.engine_module, group, ask):  # a name that fits its examples only
            self.grouping.ruled_out.add((group.subject, group.op, group.causes[0]))
            self.grouping.refute(group)

    def _found(self, finding: O.Finding) -> None:
        if self.on_find is not None:
            try:
                self.on_find(finding)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as exc:  # saving must never end the exploration
                self.warnings.append(f"could not save {finding.signature}: {type(exc).__name__}: {exc}")

    def run(self) -> SessionResult:
        interrupted = False
        bound = None if self.deadline is not None or self.max_examples is not None else ROUND_EXAMPLES
        # What exists now (the runtimes' modules, the registry, the caches' seeds) lives as long
        # as the session: out of the collector's way, a full collection no longer walks it (one
        # cost 55 ms with ONNX Runtime loaded, 120 ms with torch: benchmarks/check_cost.py --gc-freeze).
        gc.freeze()
        try:
            if self.options.isolated and self._call is call_peer_many:
                start_workers(self.peers)  # restarted if one died since (started by peer_facts)
            self._replay_database()
            self.progress.phase = "exploring"
            def batches() -> Iterator[list[FuzzCase]]:
                for index in itertools.count():
                    if self._out_of_budget() or (bound is not None and index >= bound) or self._ended():
                        return
                    yield expand_batch(self.generate, example_seed(self.options.seed, self.job, index),
                                       self.options.max_configs)

            if self.family:  # family.check_batch asks its peers itself
                for batch in batches():
                    self._explore(batch)
            else:
                self._explore_in_lanes(batches())
        except KeyboardInterrupt:
            interrupted = True
        finally:
            gc.unfreeze()
        self.progress.phase = "done"
        self._report_progress(force=True)
        self.progress.elapsed = time.monotonic() - self.started
        self.rounds.insert(0, (self.options.seed, self.progress.examples))
        return SessionResult(self.findings, self.shrunk, self.detected_at, self.shrunk_at, self.progress,
                             self.versions, self.unavailable, interrupted, self.warnings, self.rounds,
                             examples=[m for g in self.grouping.groups for m in g.members],
                             ruled_out=sorted(self.grouping.ruled_out))


# --------------------------------------------------------------------------- processes


def resolve_peer_list(peers: Sequence[Any]) -> list[Peer]:
    """Names -> peers (built-ins, plugins, modules, files); Peer objects pass through; a peer
    named again is dropped (:func:`unique_peers`)."""
    return unique_peers(peers)[1]


def unique_peers(peers: Sequence[Any]) -> tuple[list[Any], list[Peer]]:
    """The entries of ``peers`` (names or Peer objects) that name a peer not named before, and
    their peers. One name is one warm worker, which holds one call at a time, and one column of
    the campaign's counts: ``--peers onnxruntime,onnxruntime`` made two lanes ask one worker at
    once, and every answer timed out."""
    entries: list[Any] = []
    out: list[Peer] = []
    for p in peers:
        peer = resolve_peer(p) if isinstance(p, str) else p
        if all(kept.name != peer.name for kept in out):
            entries.append(p)
            out.append(peer)
    return entries, out


def _job_main(options: FuzzOptions, job: int, deadline: float | None, max_examples: int | None,
              out: Any, halt: Any = None) -> None:
    """Entry point of one ``--jobs`` worker process."""
    try:
        peers = resolve_peer_list(options.peers)

        def send(p: Progress) -> None:
            with contextlib.suppress(Exception):
                out.put(("progress", job, p))

        def found(f: O.Finding) -> None:
            out.put(("find", job, f))

        # The parent handles Ctrl-C and SIGTERM for the campaign; a worker keeps exploring until
        # the parent stops it, so what it found has already been streamed.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        session = Session(options, peers, job=job, on_progress=send, deadline=deadline, max_examples=max_examples,
                          on_find=found, halt=halt)
        result = session.run()
        out.put(("done", job, result))
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):
            out.put(("error", job, "interrupted"))
    except BaseException:  # reported to the parent, which raises it
        with contextlib.suppress(Exception):  # the parent may be gone already
            out.put(("error", job, traceback.format_exc()))
    finally:
        close_workers()


#: Set when the user asked the campaign to stop (Ctrl-C, SIGTERM; see :func:`request_stop`).
#: The signal handler raises KeyboardInterrupt too, but Python drops an exception raised while a
#: gc callback runs ("Exception ignored in: ... gc_callback": hypothesis installs one), so a
#: session also checks this flag at every example and the parent at every wait.
_STOP = threading.Event()


def request_stop() -> None:
    """Ask the running campaign in this process to stop (called from a signal handler)."""
    _STOP.set()


def raise_if_stopped() -> None:
    """Raise KeyboardInterrupt when a stop was requested."""
    if _STOP.is_set():
        raise KeyboardInterrupt


def share(total: int | None, parts: int, part: int) -> int | None:
    """Part ``part``'s share of ``total`` examples split into ``parts`` near-equal parts (the
    first ``total % parts`` parts get one more); None (no limit) stays None."""
    if total is None:
        return None
    return total // parts + (1 if part < total % parts else 0)


def run_sessions(options: FuzzOptions, on_progress: Callable[[Progress], None] | None = None,
                 on_find: Callable[[O.Finding], None] | None = None) -> list[SessionResult]:
    """Run ``options.jobs`` sessions (in this process when 1) and return their results.

    ``on_find`` receives every new divergence as soon as it is final, in this process, whatever
    the number of jobs. Ctrl-C (KeyboardInterrupt) stops the workers and returns what they had
    streamed, marked interrupted."""
    _STOP.clear()  # a new campaign: an earlier campaign's stop request is spent
    deadline = time.time() + options.time_budget if options.time_budget else None
    if options.jobs <= 1:
        peers = resolve_peer_list(options.peers)
        session = Session(options, peers, on_progress=on_progress, deadline=deadline,
                          max_examples=options.max_examples, on_find=on_find)
        return [session.run()]
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    halt = ctx.Event()  # --exit-first: one job's find of a --fail-on severity winds every job down
    procs = []
    for job in range(options.jobs):
        p = ctx.Process(target=_job_main, name=f"poolcheck-fuzz-{job}",
                        args=(options, job, deadline, share(options.max_examples, options.jobs, job), out, halt))
        p.start()
        procs.append(p)
    latest: dict[int, Progress] = {}
    results: dict[int, SessionResult] = {}
    errors: list[str] = []
    streamed: dict[str, O.Finding] = {}
    interrupted = False
    try:
        while len(results) + len(errors) < len(procs):
            raise_if_stopped()
            try:
                kind, job, payload = out.get(timeout=0.5)
            except queue_mod.Empty:
                if not any(p.is_alive() for p in procs) and out.empty():
                    errors.append("a fuzz worker process died without a result")
                    break
                continue
            if kind == "progress":
                latest[job] = payload
                if on_progress is not None:
                    on_progress(merged_progress(latest.values()))
            elif kind == "find":
                if payload.signature not in streamed and on_find is not None:
                    on_find(payload)
                streamed.setdefault(payload.signature, payload)
                if ends_exploration(payload, options):
                    halt.set()
            elif kind == "done":
                results[job] = payload
                latest[job] = payload.progress
            else:
                errors.append(f"job {job}: {payload}")
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for p in procs:
            if interrupted and p.is_alive():
                p.terminate()
            p.join(5.0)
            if p.is_alive():
                p.kill()
    if interrupted:
        progress = merged_progress(p for j, p in latest.items() if j not in results)
        partial = SessionResult(dict(streamed), set(streamed), {}, {}, progress, {}, {}, True, [], [])
        return [*(results[j] for j in sorted(results)), partial]
    if errors and not results:
        raise PoolcheckError("fuzz workers failed:\n" + "\n".join(errors))
    merged = [results[j] for j in sorted(results)]
    for e in errors:
        if merged:
            merged[0].warnings.append(e)
    return merged


__all__ = [
    "Divergence", "FuzzOptions", "Progress", "Session", "SessionResult", "divergence_type",
    "merge_results", "run_sessions",
]
