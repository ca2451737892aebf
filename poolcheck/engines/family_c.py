"""The C engine for the rest of the family (``_cpool_src/family.c``), with the contract of
:mod:`poolcheck.engines.family_numpy`, bit for bit. Inputs are widened to float64 (exact for
every float type) before the kernels run; results are rounded once to the input type."""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import ModuleType

import numpy as np

from poolcheck.engines import c_engine
from poolcheck.errors import EngineUnavailableError
from poolcheck.spec.shape import Geometry

NAME = "c"


def _lib() -> ModuleType:
    lib = c_engine._cpool
    if lib is None or not hasattr(lib, "lp_sums"):
        raise EngineUnavailableError(f"engine 'c' is not available: {c_engine.UNAVAILABLE_REASON or 'rebuild it'}")
    return lib


def _f64(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64)


def _geometry(geom: Geometry) -> tuple[int, ...]:
    args = [geom.batch * geom.channels]
    for a in geom.axes:
        args += [a.size, a.kernel, a.stride, a.dilation, a.pad_begin, a.pad_end, a.out]
    return tuple(args)


def lp_sums(x: np.ndarray, geom: Geometry, p: int) -> np.ndarray:
    out = np.empty(geom.output_shape, dtype=np.float64)
    _lib().lp_sums(_f64(x), out, _geometry(geom), int(p))
    return out


def adaptive_avg(x: np.ndarray, outs: Sequence[int]) -> np.ndarray:
    out = np.empty((*x.shape[:2], *outs), dtype=np.float64)
    _lib().adaptive(_f64(x), out, None, math.prod(x.shape[:2]), tuple(x.shape[2:]), tuple(outs))
    return out.astype(x.dtype)


def adaptive_max(x: np.ndarray, outs: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    out = np.empty((*x.shape[:2], *outs), dtype=np.float64)
    idx = np.empty(out.shape, dtype=np.int64)
    _lib().adaptive(_f64(x), out, idx, math.prod(x.shape[:2]), tuple(x.shape[2:]), tuple(outs))
    return out.astype(x.dtype), idx  # exact: every value is an input element


def max_unpool(x: np.ndarray, indices: np.ndarray, out_shape: Sequence[int]) -> np.ndarray:
    out = np.empty(tuple(out_shape), dtype=np.float64)
    _lib().max_unpool(_f64(x), np.ascontiguousarray(indices, dtype=np.int64), out)
    return out.astype(x.dtype)  # exact: every value is an input element or zero
