"""Fuzzing in batches: how many configurations one hypothesis example holds, and which of them
the engine-side oracles check.

A peer pays for a model, a session, an export or a compile per call, and every peer already packs
the configurations of one call into one model (:meth:`poolcheck.peers.adapter.RuntimePeer.run_many`:
one node, one input and its own outputs per configuration; a model the runtime refuses is split in
halves until each failing configuration stands alone and carries its own error). What decides the
batch is therefore the length of an example's configuration list: a campaign expands ``--batch``
configurations from each example's seed (:func:`poolcheck.fuzz.shrinking.expand_batch`), and
shrinks a divergent one alone. :func:`example_lists` is the Hypothesis strategy of such lists for
tests (its length drawn first, spread over the whole range: ``st.lists(..., max_size=64)`` draws
about six elements whatever the bound).

Nothing about a verdict changes with the length: every configuration has its own input and
outputs in a batched model, a configuration the runtime refuses alone is refused inside a batch
(and bisected back to it), and the judgement of each result is the one of an unbatched call
(``tests/fuzz/test_fuzz_batching.py`` checks both on every installed runtime peer).

The engine-side oracles (the other engines against the reference, the metamorphic properties)
cost several engine calls per configuration; ``--engine-checks first`` runs them on the first
configuration of each example and of every :data:`ENGINE_CHECK_EVERY` after it, so a long example
is checked as densely as the short ones of the unbatched fuzzer were (``all``: on every one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from hypothesis import strategies as st

T = TypeVar("T")

#: The most configurations of one example (``--batch``) for a peer that does not say (a plugin not
#: built on :class:`~poolcheck.peers.adapter.RuntimePeer`, whose ``fuzz_batch`` is 64) and with no
#: peer: 8; see :func:`default_batch`.
EXAMPLE_CONFIGS = 8


def default_batch(peers: Sequence[object]) -> int:
    """``--batch`` when not given: the smallest ``fuzz_batch`` among ``peers`` (a peer without
    one counts as :data:`EXAMPLE_CONFIGS`; no peer: :data:`EXAMPLE_CONFIGS`)."""
    return min((int(getattr(p, "fuzz_batch", EXAMPLE_CONFIGS)) for p in peers), default=EXAMPLE_CONFIGS)


#: ``--engine-checks first``: the engine-side oracles run on configurations 0, 4, 8, ... of an
#: example (an unbatched example held four configurations on average).
ENGINE_CHECK_EVERY = 4


def example_lists(one: st.SearchStrategy[T], max_configs: int) -> st.SearchStrategy[list[T]]:
    """Lists of 1..``max_configs`` draws of ``one``, the length drawn first and spread over the
    range (a batch is as long as the bound allows), shrinking towards a single element."""
    if max_configs <= 1:
        return st.lists(one, min_size=1, max_size=1)

    @st.composite
    def lists(draw: st.DrawFn) -> list[T]:
        n = draw(st.integers(1, max_configs), label="configurations in this example")
        return [draw(one) for _ in range(n)]

    return lists()


def engine_checked(index: int, mode: str) -> bool:
    """Whether the engine-side oracles check configuration ``index`` of an example under
    ``--engine-checks mode`` (``first`` or ``all``)."""
    return mode == "all" or index % ENGINE_CHECK_EVERY == 0
