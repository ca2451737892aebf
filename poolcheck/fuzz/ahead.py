"""The engine side ahead: the next examples made, and each configuration's engine side computed,
in a helper process while the session judges the peers' answers to the example before.

A session's own work on an example splits in two. The *engine side* reads the configuration
alone: the example is expanded from its seed (:func:`~poolcheck.fuzz.shrinking.expand_batch`),
and for each configuration the reference engine computes the expected outputs, poolcheck's own
validation speaks, the engine comparison and the metamorphic properties run (on the
configurations :func:`~poolcheck.fuzz.batching.engine_checked` names) and the spec regions it
reaches are counted (:class:`~poolcheck.fuzz.repeats.EngineSide`). The *peer side* reads the
peers' answers and the session's history: judging, diagnosing, grouping, shrinking. Both ran in
one process, which bounded a campaign: against ONNX Runtime its worker waited on the session
most of the time, and a second CPU sat idle.

:class:`Ahead` keeps a helper process :data:`DEPTH` examples ahead on the engine side. Nothing
judged changes: an example is a pure function of its seed, an engine side a pure function of its
configuration, and the session takes them only in the order it would have made them. It never
waits for the helper either: an example that is not ready (the helper still starting, or slower
than the session) is made in the session as before, and the helper's copy is dropped when it
comes; a helper that fails or dies leaves the session making every example itself.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from poolcheck.engines import available_engines, get_engine
from poolcheck.errors import PoolcheckError
from poolcheck.fuzz import coverage as cov
from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.batching import engine_checked
from poolcheck.fuzz.choices import Choices
from poolcheck.fuzz.reference import expected_for
from poolcheck.fuzz.repeats import EngineSide
from poolcheck.fuzz.shrinking import example_seed, expand_batch
from poolcheck.fuzz.strategies import FuzzCase, fuzz_config
from poolcheck.judgement import Outputs
from poolcheck.results import FindingKind
from poolcheck.spec.shape import Geometry

__all__ = ["DEPTH", "MIN_EXAMPLES", "MIN_SECONDS", "Ahead", "Plan", "engine_checks", "engine_side",
           "reference_engines"]

#: Examples the helper computes ahead of the one the session takes.
DEPTH = 4
#: The shortest explorations a session starts the helper for: a time budget in seconds, or a
#: number of examples (a shorter one is over before the helper has imported what it runs).
MIN_SECONDS = 10.0
MIN_EXAMPLES = 200
#: How much lower the helper's scheduling priority is than the session's (``nice``).
NICENESS = 10


# --------------------------------------------------------------------------- the engine side


def engine_side(case: FuzzCase, engine_module: ModuleType) -> EngineSide:
    """What the reference engine says about ``case``: its outputs and geometry (None where
    poolcheck rejects the configuration), the findings against poolcheck itself (it accepts an
    invalid configuration, or its engine raises) and the spec regions it reaches (none for an
    invalid one). The engine comparison and metamorphic checks are :func:`engine_checks`'."""
    regions = cov.regions_of(case.spec, case.x) if case.mutation is None else frozenset()
    ok, _why = O.engine_accepts(case)
    if case.mutation and ok:
        return EngineSide(None, [O.Finding(kind=FindingKind.ENGINE, op=case.op, subject="validation",
                                           klass=f"accepts invalid: {case.mutation}",
                                           text="poolcheck accepts a configuration it should reject",
                                           detail=case.describe(), case=case, explained=False)], regions=regions)
    if not ok:
        return EngineSide(None, [], regions=regions)
    try:
        return EngineSide(expected_for(engine_module, case), [], regions=regions)
    except PoolcheckError as exc:
        return EngineSide(None, [O.Finding(kind=FindingKind.ENGINE, op=case.op, subject=engine_module.NAME,
                                           klass="error", text="the engine raised", detail=str(exc), case=case,
                                           explained=False)], regions=regions)


def engine_checks(case: FuzzCase, expected: tuple[Outputs, Geometry], engine_module: ModuleType,
                  engines: dict[str, ModuleType], oracles: frozenset[str]) -> list[O.Finding]:
    """The other engines against the reference (``engines`` holds it first) and the reference
    engine's metamorphic properties on ``case``, as far as ``oracles`` asks for them."""
    found: list[O.Finding] = []
    if len(engines) > 1 and "engines" in oracles:
        found += O.check_engines(case, engines, expected[0], expected[1])
    if "metamorphic" in oracles:
        found += O.check_metamorphic(case, engine_module, engine_module.NAME, expected[0], expected[1])
    return found


def reference_engines(name: str) -> tuple[ModuleType, dict[str, ModuleType]]:
    """The reference engine ``name`` names, and every available engine with it first."""
    engine_module = get_engine(name)
    engines = {engine_module.NAME: engine_module}
    engines.update({n: get_engine(n) for n in available_engines() if n != engine_module.NAME})
    return engine_module, engines


# --------------------------------------------------------------------------- the helper


@dataclass(frozen=True)
class Plan:
    """What the helper needs to make a session's examples and their engine sides (picklable)."""

    ops: tuple[str, ...]
    ranks: tuple[int, ...]
    dtypes: tuple[str, ...]
    conventions: tuple[str, ...]
    invalid: bool
    seed: int
    job: int
    max_configs: int
    engine: str
    engine_checks: str
    oracles: frozenset[str]

    def generator(self) -> Callable[[Choices], Any]:
        """One configuration from a source of choices: the session's own generator."""
        return functools.partial(fuzz_config, ops=self.ops, ranks=self.ranks, dtypes=self.dtypes,
                                 conventions=self.conventions, invalid=self.invalid)

    def example(self, generate: Callable[[Choices], Any], index: int) -> list[FuzzCase]:
        """Example ``index`` of the session, expanded from its seed."""
        return expand_batch(generate, example_seed(self.seed, self.job, index), self.max_configs)

    def sides(self, batch: Sequence[FuzzCase], engine_module: ModuleType,
              engines: dict[str, ModuleType]) -> list[EngineSide]:
        """The engine side of each configuration of ``batch``, its checks run where the session
        runs them (the first configuration of every :data:`~poolcheck.fuzz.batching.ENGINE_CHECK_EVERY`)."""
        out = []
        for index, case in enumerate(batch):
            side = engine_side(case, engine_module)
            if side.expected is not None and engine_checked(index, self.engine_checks):
                side.checks = engine_checks(case, side.expected, engine_module, engines, self.oracles)
            out.append(side)
        return out


def _helper_main(conn: Any, plan: Plan) -> None:
    """The helper process: example after example from 0, one for each credit the session sends
    (None ends it); a failure is sent as ``("error", text)`` and ends it."""
    with contextlib.suppress(AttributeError, OSError):  # a spare CPU's time only: never the session's or a peer's
        os.nice(NICENESS)
    try:
        engine_module, engines = reference_engines(plan.engine)
        generate = plan.generator()
        index = 0
        while conn.recv() is not None:
            batch = plan.example(generate, index)
            conn.send((index, batch, plan.sides(batch, engine_module, engines)))
            index += 1
    except (EOFError, OSError, KeyboardInterrupt):  # the session is gone or stopping
        return
    except BaseException:
        with contextlib.suppress(Exception):
            conn.send(("error", traceback.format_exc(limit=8)))


class Ahead:
    """A helper process making the examples of ``plan`` and their engine sides ahead of the
    session (module docstring). :meth:`take` hands over example ``index`` if it is ready."""

    def __init__(self, plan: Plan, depth: int = DEPTH) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_helper_main, args=(child, plan), name="poolcheck-ahead", daemon=True)
        self._proc.start()
        child.close()
        #: Why the helper stopped helping (None while it helps).
        self.failure: str | None = None
        self.taken = 0  #: examples the session took from the helper
        try:
            for _ in range(depth):
                self._conn.send(True)
        except OSError as exc:
            self.failure = f"the helper process could not be reached: {exc}"

    def take(self, index: int) -> tuple[list[FuzzCase], list[EngineSide]] | None:
        """Example ``index`` and its engine sides, if the helper has made it; None if not (the
        session makes it itself). Examples before ``index`` that arrive now are dropped. Never
        waits."""
        while self.failure is None:
            try:
                if not self._conn.poll(0):
                    if not self._proc.is_alive() and not self._conn.poll(0):
                        self.failure = f"the helper process ended (exit code {self._proc.exitcode})"
                    return None
                message = self._conn.recv()
            except (EOFError, OSError) as exc:
                self.failure = f"the helper process is gone: {type(exc).__name__}"
                return None
            if message[0] == "error":  # its traceback's last line says what failed
                self.failure = f"the helper process failed: {message[1].strip().splitlines()[-1]}"
                return None
            got, batch, sides = message
            try:
                self._conn.send(True)  # one more example ahead
            except OSError:
                self.failure = "the helper process is gone"
            if got == index:
                self.taken += 1
                return batch, sides
            if got > index:  # cannot happen (the session asks in order): be safe
                self.failure = f"the helper sent example {got} when {index} was due"
                return None
        return None

    def close(self) -> None:
        """End the helper (it computes nothing more)."""
        with contextlib.suppress(OSError):
            self._conn.send(None)
        self._proc.join(1.0)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(1.0)
        self._conn.close()
