"""The Hypothesis private attributes poolcheck relies on (poolcheck/fuzz/hypothesis_compat.py)
still exist and still do what the fuzzer needs: an upgrade that drops one fails here, not in a
campaign."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase
from hypothesis.internal.conjecture import engine as conjecture_engine
from hypothesis.internal.reflection import function_digest

from poolcheck.fuzz import hypothesis_compat as H


def test_the_shrink_limit_constant_exists_and_is_restored() -> None:
    before = conjecture_engine.MAX_SHRINKING_SECONDS
    with H.shrink_limit(1.5):
        assert conjecture_engine.MAX_SHRINKING_SECONDS == 1.5
    assert conjecture_engine.MAX_SHRINKING_SECONDS == before


def test_a_seeded_test_keeps_its_database_and_its_key() -> None:
    db = InMemoryExampleDatabase()

    def body(n: int) -> None:
        assert n < 5

    plain = function_digest(body)
    H.set_database_key(body, b"poolcheck-test-digest")
    assert function_digest(body) != plain  # the digest is part of the database key
    test = hypothesis_seed(1)(settings(database=db, max_examples=50)(given(st.integers(0, 10))(body)))
    H.keep_database(test, db)
    assert getattr(test, H.SETTINGS_ATTRIBUTE).database is db
    try:
        test()
    except AssertionError:
        pass
    # the failing example was saved under the digest's key: the database kept it despite @seed
    assert any(db.fetch(k) for k in db.data), "the seeded test saved nothing"


def _pareto_entries(front_off: bool) -> int:
    """Database entries a 60-example run that reports a falling ``target`` score leaves under its
    pareto key."""
    from hypothesis import Phase, target

    db = InMemoryExampleDatabase()
    scores = iter(range(1000, 0, -1))

    def body(n: list[int]) -> None:
        target(float(next(scores)), label="falling")

    H.set_database_key(body, b"poolcheck-pareto-test")
    test = settings(database=db, max_examples=60, phases=[Phase.generate])(given(st.lists(st.integers()))(body))
    if front_off:
        with H.no_pareto_front():
            test()
    else:
        test()
    return sum(len(v) for k, v in db.data.items() if k.endswith(b".pareto"))


def test_no_pareto_front_keeps_none_and_is_restored() -> None:
    before = conjecture_engine.ParetoFront
    assert _pareto_entries(front_off=False) > 0  # hypothesis keeps a front when a database is set
    assert _pareto_entries(front_off=True) == 0
    assert conjecture_engine.ParetoFront is before
