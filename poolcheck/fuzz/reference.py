"""Reference runs for the fuzzer: one engine call on a resolved geometry (or a spec), with the
layout and policy a diagnosis variant asks for. Comparing outputs is :mod:`poolcheck.judgement`'s.
"""

from __future__ import annotations

import math
from types import ModuleType

import numpy as np

from poolcheck.engines import get_engine, numpy_engine
from poolcheck.judgement import Outputs
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.indices import IndexLayout, index_layout
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import Geometry, resolve

__all__ = ["Outputs", "canonical_layout", "engine_module", "reference_for", "run_reference"]


def engine_module(name: str) -> ModuleType:
    return get_engine(name)


def run_reference(
    engine: ModuleType,
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
            return _call(engine, x, geom, op, exclude_pad, layout, policy)
        except ValueError:
            if engine is numpy_engine:
                raise
            return _call(numpy_engine, x, geom, op, exclude_pad, layout, policy)


def _call(engine: ModuleType, x: np.ndarray, geom: Geometry, op: str, exclude_pad: bool,
          layout: IndexLayout | None, policy: Policy) -> Outputs:
    if op == "avg":
        return Outputs(engine.avg_pool(x, geom, exclude_pad, policy))
    values, indices = engine.max_pool(x, geom, layout, policy)
    return Outputs(values, indices)


def canonical_layout(shape: tuple[int, ...]) -> IndexLayout:
    """Whole-tensor row-major int64 indices: decodable into (n, c, spatial) for any variant."""
    return IndexLayout("C", math.prod(shape), np.dtype(np.int64))


def reference_for(engine: ModuleType, spec: PoolSpec, x: np.ndarray, policy: Policy = SPEC) -> Outputs:
    """Reference outputs for ``spec`` on ``x`` under ``policy`` (the spec's geometry and layout)."""
    geom = resolve(spec, x.shape)
    layout = index_layout(spec, x.shape) if spec.op == "max" else None
    return run_reference(engine, x, geom, spec.op, exclude_pad=spec.exclude_pad, layout=layout, policy=policy)


