"""The C engine for the rest of the family (``_cpool_src/family.c``), with the contract of
:mod:`poolcheck.engines.family_numpy`, bit for bit. Inputs are widened to float64 (exact for
every number of every float type) before the kernels run; results are rounded once to the input
type. AdaptiveMaxPool's and MaxUnpool's values are input elements: they are copied from the
input by the positions the kernels chose, so they keep their bits (the widening quiets a
signalling NaN, 0x7F800001 -> 0x7FC00001 in float32, and a NumPy scan copies it as it is)."""

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
    with np.errstate(invalid="ignore"):  # widening a signalling NaN quiets it, and says so
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
    planes = math.prod(x.shape[:2])
    _lib().adaptive(_f64(x), out, idx, planes, tuple(x.shape[2:]), tuple(outs))
    # each value is the element at its index in its plane, copied with its bits
    values = np.take_along_axis(x.reshape(planes, math.prod(x.shape[2:])), idx.reshape(planes, math.prod(outs)), 1)
    return values.reshape(out.shape), idx


def max_unpool(x: np.ndarray, indices: np.ndarray, out_shape: Sequence[int]) -> np.ndarray:
    # the kernel scatters each element's ordinal + 1 (exact in float64 below 2^53), so the result
    # says which element stays at each position (0: none, the output's zero)
    out = np.empty(tuple(out_shape), dtype=np.float64)
    ordinals = np.arange(1, x.size + 1, dtype=np.float64).reshape(x.shape)
    _lib().max_unpool(ordinals, np.ascontiguousarray(indices, dtype=np.int64), out)
    which = out.reshape(-1).astype(np.int64)
    values = np.zeros(which.shape, dtype=x.dtype)
    kept = which > 0
    values[kept] = x.reshape(-1)[which[kept] - 1]
    return values.reshape(tuple(out_shape))
