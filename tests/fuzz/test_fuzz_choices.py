"""Examples expanded from seeds (poolcheck.fuzz.choices, poolcheck.fuzz.shrinking): the same seed
gives the same batch; every configuration's recorded choices make it again, without Hypothesis and
through Hypothesis' example database (which is how a divergence is shrunk); shrinking reaches the
simplest configuration that still fails; the example database keeps and replays shrunk finds."""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.database import DirectoryBasedExampleDatabase, InMemoryExampleDatabase

from poolcheck.fuzz import family
from poolcheck.fuzz.choices import ReplayedChoices, SeededChoices, as_example, from_example, generated
from poolcheck.fuzz.hypothesis_compat import set_test_database_key, unshrunk_key
from poolcheck.fuzz.shrinking import example_seed, expand_batch, save_example, saved_examples, shrink
from poolcheck.fuzz.strategies import ALL_DTYPES, CONVENTIONS, configs, fuzz_config
from poolcheck.spec.family import FAMILY_OPS

POOLING = functools.partial(fuzz_config, ops=("max", "avg"), ranks=(3, 4, 5), dtypes=ALL_DTYPES,
                            conventions=CONVENTIONS, invalid=True)
FAMILY = family.generator(FAMILY_OPS, (3, 4, 5), ("float32", "float16", "float64"))


def same(a: Any, b: Any) -> bool:
    """Two generated cases are one configuration: description, input bits and type, indices."""
    ia, ib = getattr(a, "indices", None), getattr(b, "indices", None)
    return (a.describe() == b.describe() and a.x.dtype == b.x.dtype and a.x.tobytes() == b.x.tobytes()
            and (ia is None) == (ib is None) and (ia is None or np.array_equal(ia, ib)))


@pytest.mark.parametrize("generate", [POOLING, FAMILY], ids=["pooling", "family"])
def test_a_seed_gives_the_same_batch_and_each_record_makes_its_case_again(generate: Any) -> None:
    first = expand_batch(generate, example_seed(1, 0, 0), 16)
    again = expand_batch(generate, example_seed(1, 0, 0), 16)
    other = expand_batch(generate, example_seed(1, 0, 1), 16)
    assert len(first) == 16 and all(same(a, b) for a, b in zip(first, again))
    assert not all(same(a, b) for a, b in zip(first, other))
    for case in first:
        assert case.choices and all(isinstance(c, int) for c in case.choices)
        assert same(generated(generate, ReplayedChoices(case.choices)), case)


@pytest.mark.parametrize("generate", [POOLING, FAMILY], ids=["pooling", "family"])
def test_hypothesis_replays_a_seeded_record_to_the_same_configuration(generate: Any) -> None:
    """The path a divergence takes to be shrunk: its choices saved as an unshrunk example, the
    test drawing through ``configs(generate)`` sees that very configuration first."""
    seen: list[Any] = []

    def body(drawn: Any) -> None:
        seen.append(drawn)

    for case in expand_batch(generate, example_seed(2, 0, 0), 24):
        seen.clear()
        database = InMemoryExampleDatabase()
        database.save(unshrunk_key(b"k"), as_example(case.choices))
        test = settings(database=database, phases=[Phase.reuse], max_examples=1, deadline=None,
                        suppress_health_check=list(HealthCheck))(given(configs(generate))(body))
        set_test_database_key(test, b"k")
        test()
        assert seen and same(seen[0], case), (case.describe(), [s.describe() for s in seen[:1]])
        assert seen[0].choices == case.choices


def test_a_replayed_choice_out_of_its_bounds_or_past_the_end_is_the_simplest() -> None:
    src = ReplayedChoices([7, 99])
    assert src.integer(0, 9, "a") == 7
    assert src.integer(0, 9, "b") == 0  # 99 no longer fits: the lower bound
    assert src.integer(3, 9, "c") == 3  # past the end
    assert src.record == [7, 0, 3]


def test_seeded_choices_are_spread_over_their_range() -> None:
    src = SeededChoices(5)
    counts = Counter(src.integer(0, 5, "x") for _ in range(6000))
    assert set(counts) == set(range(6)) and min(counts.values()) > 850
    assert src.integer(4, 4, "one value") == 4


def test_shrinking_reaches_the_simplest_configuration_that_still_fails() -> None:
    """A planted failure (a max over a kernel of 2 or more on any axis): the shrunk case has one
    plane, the smallest kernel that fails, and nothing else drawn away from its simplest."""
    start = next(c for c in expand_batch(POOLING, example_seed(3, 0, 0), 64)
                 if c.mutation is None and c.spec.op == "max" and max(c.spec.kernel) >= 2 and c.x.size > 20)

    def body(batch: list[Any]) -> None:
        (case,) = batch
        assert not (case.mutation is None and case.spec.op == "max" and max(case.spec.kernel) >= 2)

    failure = shrink(body, configs(POOLING), start.choices, seed=1, seconds=30)
    assert isinstance(failure, AssertionError)
    tb = failure.__traceback__
    while tb is not None and tb.tb_frame.f_code is not body.__code__:
        tb = tb.tb_next
    assert tb is not None
    shrunk = tb.tb_frame.f_locals["case"]
    assert shrunk.x.shape[:2] == (1, 1) and sorted(shrunk.spec.kernel)[-1] == 2 and shrunk.x.size <= 4
    assert not shrunk.recipe["specials"] and shrunk.recipe["pattern"] == "arange"


def test_a_replay_that_does_not_fail_is_no_failure() -> None:
    case = expand_batch(POOLING, example_seed(4, 0, 0), 1)[0]
    assert shrink(lambda batch: None, configs(POOLING), case.choices, seed=1, seconds=5) is None


def test_the_database_keeps_shrunk_finds_and_gives_them_back_smallest_first(tmp_path: Path) -> None:
    database = DirectoryBasedExampleDatabase(str(tmp_path / "db"))
    cases = expand_batch(POOLING, example_seed(6, 0, 0), 3)
    for case in cases:
        save_example(database, b"campaign", case.choices)
    database.save(b"campaign", b"\xff not a choice sequence")
    back = saved_examples(database, b"campaign", POOLING)
    assert len(back) == 3
    assert {c.describe() for c in back} == {c.describe() for c in cases}
    assert [len(as_example(c.choices)) for c in back] == sorted(len(as_example(c.choices)) for c in cases)
    assert from_example(as_example((1, 2, 3))) == [1, 2, 3]
