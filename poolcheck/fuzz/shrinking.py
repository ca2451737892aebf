"""Examples expanded from seeds, and a divergent one shrunk by Hypothesis.

A campaign's example is a batch of configurations expanded from one seed
(:func:`expand_batch`: :class:`~poolcheck.fuzz.choices.SeededChoices`, no Hypothesis), so an
example costs what its configurations cost to make, not what Hypothesis' bookkeeping costs per
choice. Each configuration carries the choices that made it (``case.choices``). When one
diverges, :func:`shrink` hands those choices to Hypothesis as a saved example of a test that
draws one configuration through the same generator: Hypothesis replays them to the same
configuration (its ``reuse`` phase), sees the test fail, and shrinks it as it shrinks any failing
example (the shrink phase: fewer, smaller, simpler choices). The test fails with one exception
class per divergence group, so a second divergence met while shrinking is shrunk on its own.

The example database (``--database``) keeps each shrunk find's choices (:func:`save_example`);
the next campaign with the same search space replays them first (:func:`saved_examples`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.database import ExampleDatabase, InMemoryExampleDatabase
from hypothesis.strategies import SearchStrategy

from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.choices import (
    Choice,
    Choices,
    Rejected,
    ReplayedChoices,
    SeededChoices,
    as_example,
    from_example,
    generated,
)
from poolcheck.fuzz.hypothesis_compat import (
    keep_database,
    no_pareto_front,
    set_test_database_key,
    shrink_limit,
    unshrunk_key,
)
from poolcheck.userdata import hypothesis_home

#: The key of the one example a shrinking run starts from (its database holds nothing else).
_START = b"poolcheck: the divergent example"
#: Inputs each generated geometry is fed in a campaign's examples (:func:`expand_batch`): a
#: model compiled, a session created or an export made once serves this many configurations,
#: which differ in their values (pattern, seed, special values and where).
INPUTS_PER_GEOMETRY = 4
#: Tries to make one configuration from a seeded stream before giving up (a generator rejects
#: its choices rarely: a family window that leaves no output).
_TRIES = 100


class Divergence(Exception):
    """Raised inside a Hypothesis example to make it fail; one subclass per divergence group."""

    def __init__(self, finding: O.Finding) -> None:
        super().__init__(f"{finding.signature}: {finding.detail}")
        self.finding = finding


_DIVERGENCE_TYPES: dict[str, type[Divergence]] = {}


def divergence_type(signature: str) -> type[Divergence]:
    """The exception class of one signature: hypothesis shrinks each class separately."""
    cls = _DIVERGENCE_TYPES.get(signature)
    if cls is None:
        name = "Divergence_" + hashlib.sha1(signature.encode()).hexdigest()[:10]
        cls = type(name, (Divergence,), {"__module__": __name__, "signature": signature})
        _DIVERGENCE_TYPES[signature] = cls
    return cls


def collect_failures(exc: BaseException, found: list[Divergence], other: list[BaseException]) -> None:
    """What a shrinking run raised, split into divergences and anything else (exception groups opened)."""
    if isinstance(exc, Divergence):
        found.append(exc)
    elif isinstance(getattr(exc, "exceptions", None), tuple):  # an exception group (3.10: backport)
        for sub in exc.exceptions:  # type: ignore[attr-defined]
            collect_failures(sub, found, other)
    else:
        other.append(exc)


def example_seed(seed: int, job: int, index: int) -> int:
    """The seed of example ``index`` of job ``job`` in a campaign run with ``--seed seed``."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{job}:{index}".encode()).digest()[:8], "big")


def expand_batch(generate: Callable[[Choices], Any], seed: int, size: int,
                 inputs: int = INPUTS_PER_GEOMETRY) -> list[Any]:
    """``size`` configurations expanded from ``seed``: geometries (operator, type, shape,
    attributes), each fed ``inputs`` inputs of its own (a peer compiles the geometry once and
    runs it on each: :meth:`poolcheck.peers.adapter.RuntimePeer.run_many`). A configuration whose
    choices the generator rejects is drawn again from the same stream."""
    src = SeededChoices(seed)
    batch: list[Any] = []
    while len(batch) < size:
        first = None
        for _try in range(_TRIES):
            src.restart()
            try:
                first = generated(generate, src)
                break
            except Rejected:
                continue
        if first is None:
            break
        batch.append(first)
        geometry = first.choices[:first.input_at] if first.input_at is not None else None
        for _ in range(inputs - 1):
            if geometry is None or len(batch) >= size:
                break
            src.restart(geometry)
            try:
                batch.append(generated(generate, src))
            except Rejected:
                continue
    return batch


def shrink(body: Callable[[list[Any]], None], one: SearchStrategy[Any], choices: Sequence[Choice], *,
           seed: int, seconds: float) -> BaseException | None:
    """Shrink the failure of ``body`` on the configuration ``choices`` make through ``one`` (a
    :func:`~poolcheck.fuzz.strategies.configs` strategy): Hypothesis replays them and shrinks for
    at most ``seconds``. Returns what the shrunk run raised (one exception, or a group with one
    per failure class), or None when the replay did not fail."""
    set_hypothesis_home_dir(hypothesis_home())  # Hypothesis' own storage: not the cwd
    database = InMemoryExampleDatabase()
    database.save(unshrunk_key(_START), as_example(choices))

    def shrink_example(case: Any) -> None:
        body([case])

    test = settings(
        max_examples=1, deadline=None, database=database, phases=[Phase.reuse, Phase.shrink], derandomize=False,
        suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, print_blob=False,
        report_multiple_bugs=True,
    )(given(one)(shrink_example))
    test = hypothesis_seed(seed)(test)  # the shrinker's own random choices: the same every run
    keep_database(test, database)  # ``@seed`` switches the database off
    set_test_database_key(test, _START)
    try:
        with shrink_limit(seconds), no_pareto_front():
            test()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # Hypothesis reports failures as exceptions and groups
        return exc
    return None


def save_example(database: ExampleDatabase, key: bytes, choices: Sequence[Choice]) -> None:
    """Keep a shrunk find's choices under the campaign's key (``FuzzOptions.digest``)."""
    if choices:
        database.save(key, as_example(choices))


def saved_examples(database: ExampleDatabase, key: bytes, generate: Callable[[Choices], Any]) -> list[Any]:
    """The configurations the database keeps under ``key``, smallest first (an entry of another
    kind, or one the generator now rejects, is skipped)."""
    cases = []
    for entry in sorted(database.fetch(key), key=lambda e: (len(e), e)):
        choices = from_example(entry)
        if not choices:
            continue
        try:
            cases.append(generated(generate, ReplayedChoices(choices)))
        except Rejected:
            continue
    return cases
