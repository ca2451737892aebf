"""Reference runs and output comparison for the fuzzer.

Max pooling must match bit for bit (values, NaN where NaN, indices). Averages are compared with
an error bound derived from the arithmetic, not a fixed tolerance: summing ``t`` terms in a
type with machine epsilon ``eps`` errs by at most about ``t * eps * sum|x|``; divided by the
divisor that is ``t * eps * mean|x|`` per window, plus one unit in the last place of the result
for the final rounding. ``mean|x|`` is the reference's own average of ``|x|`` over each window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from poolcheck.engines import get_engine, numpy_engine
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.indices import IndexLayout, index_layout
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import Geometry, resolve

#: Summation-error allowance per tap, in machine epsilons of the compared type.
ULPS_PER_TAP = 1.0


@dataclass
class Outputs:
    """A reference result: values, and (max pooling) indices in the spec's layout."""

    values: np.ndarray
    indices: np.ndarray | None = None


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


def same_values(expected: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """Element-wise exact agreement (NaN equals NaN; -0.0 equals 0.0)."""
    if expected.dtype.kind in "iu" and actual.dtype.kind in "iu":
        return np.asarray(expected == actual)
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    return (e == a) | (np.isnan(e) & np.isnan(a))


def avg_tolerance(x: np.ndarray, geom: Geometry, exclude_pad: bool, policy: Policy,
                  expected: np.ndarray, engine: ModuleType, dtype: np.dtype | None = None) -> np.ndarray:
    """Per-element bound on a correct average's deviation from the float64 reference, for a
    peer computing in ``dtype`` (default: the input type)."""
    dt = np.dtype(dtype or x.dtype)
    eps = float(np.finfo(dt).eps)
    taps = math.prod(a.kernel for a in geom.axes)
    with np.errstate(all="ignore"):
        mean_abs = engine.avg_pool(np.abs(x.astype(np.float64)), geom, exclude_pad, policy)
        e = np.abs(expected.astype(np.float64))
        ulp = np.spacing(np.where(np.isfinite(e), e, 0).astype(dt)).astype(np.float64)
        tol = (taps + 1) * ULPS_PER_TAP * eps * mean_abs + ulp
    # |x| summing past the float64 range: no useful bound (any finite result is as good)
    return np.where(np.isnan(tol), 0.0, tol)


def close_values(expected: np.ndarray, actual: np.ndarray, tol: np.ndarray | None) -> np.ndarray:
    """Agreement within ``tol`` (exact where ``tol`` is None); NaN equals NaN, inf equals inf."""
    same = same_values(expected, actual)
    if tol is None:
        return same
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    with np.errstate(all="ignore"):
        near = np.abs(e - a) <= tol
    return same | (near & np.isfinite(e) & np.isfinite(a))


@dataclass
class Mismatch:
    """How a subject's outputs differ from the reference: a shape message, or masks."""

    shape: str = ""
    values: np.ndarray | None = None  # bool mask of differing values
    indices: np.ndarray | None = None  # bool mask of differing indices (where values agree)

    @property
    def count(self) -> int:
        if self.shape:
            return 1
        n = 0
        if self.values is not None:
            n += int(self.values.sum())
        if self.indices is not None:
            n += int(self.indices.sum())
        return n

    def __bool__(self) -> bool:
        return self.count > 0

    def what(self) -> str:
        """``shape``, ``values``, ``indices`` or ``values+indices``."""
        if self.shape:
            return "shape"
        parts = []
        if self.values is not None and self.values.any():
            parts.append("values")
        if self.indices is not None and self.indices.any():
            parts.append("indices")
        return "+".join(parts)


def mismatch(expected: Outputs, values: np.ndarray, indices: np.ndarray | None,
             tol: np.ndarray | None = None) -> Mismatch:
    """Compare a subject's outputs with ``expected``. Indices are compared only where both
    sides report them and the values agree (a different value makes a different index)."""
    if tuple(values.shape) != tuple(expected.values.shape):
        return Mismatch(shape=f"output shape {list(values.shape)}, expected {list(expected.values.shape)}")
    vmask = ~close_values(expected.values, values, tol)
    imask = None
    if expected.indices is not None and indices is not None:
        if tuple(indices.shape) != tuple(expected.indices.shape):
            return Mismatch(shape=f"indices shape {list(indices.shape)}, expected {list(expected.indices.shape)}")
        imask = (expected.indices.astype(np.int64) != np.asarray(indices).astype(np.int64)) & ~vmask
    return Mismatch(values=vmask, indices=imask)


def first_difference(expected: Outputs, values: np.ndarray, indices: np.ndarray | None, mm: Mismatch) -> str:
    """A one-line description of the first differing element."""
    if mm.shape:
        return mm.shape
    for name, mask, exp, act in (("values", mm.values, expected.values, values),
                                 ("indices", mm.indices, expected.indices, indices)):
        if mask is not None and mask.any() and exp is not None and act is not None:
            pos = tuple(int(i) for i in np.argwhere(mask)[0])
            n = int(mask.sum())
            return (f"{name}: {n} of {mask.size} differ; first at {list(pos)}: "
                    f"expected {exp[pos].item()!r}, got {np.asarray(act)[pos].item()!r}")
    return "no difference"
