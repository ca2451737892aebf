"""Reference runs for the fuzzer: one engine call on a resolved geometry (or a spec), with the
layout and policy a diagnosis variant asks for. Comparing outputs is :mod:`poolcheck.judgement`'s.
"""

from __future__ import annotations

import functools
import math
from types import ModuleType
from typing import Protocol

import numpy as np

from poolcheck.engines import numpy_engine
from poolcheck.judgement import Outputs
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.indices import IndexLayout, index_layout
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import Geometry, resolve

__all__ = ["Configuration", "Outputs", "canonical_layout", "compute_expected", "expected_for"]


def compute_expected(
    engine_module: ModuleType,
    x: np.ndarray,
    geom: Geometry,
    op: str,
    *,
    exclude_pad: bool = False,
    layout: IndexLayout | None = None,
    policy: Policy = SPEC,
) -> Outputs:
    """One engine call on a resolved geometry (floating-point warnings silenced: NaN and inf
    inputs are deliberate). A geometry no rule of the spec produces (a diagnosis variant's
    windows reaching past the padding without ceil rounding) may be refused by the C engine; the
    NumPy engine, which takes any window placement, computes it then."""
    with np.errstate(all="ignore"):
        try:
            return _call(engine_module, x, geom, op, exclude_pad, layout, policy)
        except ValueError:
            if engine_module is numpy_engine:
                raise
            return _call(numpy_engine, x, geom, op, exclude_pad, layout, policy)


def _call(engine_module: ModuleType, x: np.ndarray, geom: Geometry, op: str, exclude_pad: bool,
          layout: IndexLayout | None, policy: Policy) -> Outputs:
    if op == "avg":
        return Outputs(engine_module.avg_pool(x, geom, exclude_pad, policy))
    values, indices = engine_module.max_pool(x, geom, layout, policy)
    return Outputs(values, indices)


@functools.lru_cache(maxsize=1024)
def canonical_layout(shape: tuple[int, ...]) -> IndexLayout:
    """Whole-tensor row-major int64 indices: decodable into (n, c, spatial) for any variant."""
    return IndexLayout("C", math.prod(shape), np.dtype(np.int64))


class Configuration(Protocol):
    """What a reference needs of a configuration (a fuzz case, a case file's case)."""

    @property
    def spec(self) -> PoolSpec: ...

    @property
    def x(self) -> np.ndarray: ...


def expected_for(engine_module: ModuleType, case: Configuration) -> tuple[Outputs, Geometry]:
    """THE reference for a configuration: the spec's geometry and index layout, the spec's
    policy, one engine call. Every consumer in the fuzzer (the session, the registry re-check,
    the expected outputs of a case file) goes through it; a diagnosis variant's geometry or policy
    goes through :func:`compute_expected` instead. Raises :class:`~poolcheck.errors.PoolcheckError`
    when poolcheck rejects the configuration."""
    spec, x = case.spec, case.x
    geom = resolve(spec, x.shape)
    layout = index_layout(spec, x.shape) if spec.op == "max" else None
    return compute_expected(engine_module, x, geom, spec.op, exclude_pad=spec.exclude_pad, layout=layout), geom
