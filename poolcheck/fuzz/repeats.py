"""Configurations a session has seen before: hypothesis repeats configurations (its mutations
copy one within and across examples, shrinking replays them), so a session keeps the engine-side
verdicts per configuration and a repeatable peer's outputs per input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.strategies import FuzzCase
from poolcheck.judgement import Outputs
from poolcheck.spec.shape import Geometry

#: Configurations whose engine-side verdicts a session keeps. Hypothesis repeats configurations
#: (its mutations copy one within and across examples, shrinking replays them): in a fuzz run
#: against ONNX Runtime about two in three configurations were seen before.
ENGINE_SIDE_CACHE = 4096


def config_key(case: FuzzCase) -> tuple[Any, ...]:
    """Everything a configuration's verdicts depend on: the spelling, the spec peers receive,
    the mutation, and the input (type, shape, bytes)."""
    x = case.x
    return case.op_name, repr(case.attributes), case.spec, case.mutation, x.dtype.str, x.shape, x.tobytes()


#: Results a session keeps per repeatable peer (see :attr:`RuntimePeer.repeatable`).
PEER_RESULTS_CACHE = 4096


def peer_key(case: FuzzCase) -> tuple[Any, ...]:
    """What a peer receives of a configuration: the spec and the input (type, shape, bytes)."""
    x = case.x
    return case.spec, x.dtype.str, x.shape, x.tobytes()


@dataclass
class EngineSide:
    """What the engines said about one configuration: the expected outputs (None: poolcheck rejects
    it), findings against poolcheck itself, the engine comparison and metamorphic findings
    (None until they ran), and the spec regions the configuration reaches. Findings are rebound
    to each repeat's own case."""

    expected: tuple[Outputs, Geometry] | None
    findings: list[O.Finding]
    checks: list[O.Finding] | None = None
    regions: frozenset[str] | None = None  # the spec regions it reaches (None until counted)
