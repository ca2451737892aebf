"""The public functions of the rest of the pooling family (LpPool, global pooling, MaxUnpool,
adaptive pooling), over the same catalogue rows a case file uses, and :func:`run_family`, the one
path from a :class:`~poolcheck.spec.family.FamilySpec` to its outputs."""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from typing import Any

import numpy as np

from poolcheck import spec as S
from poolcheck.api import _as_array, run_spec
from poolcheck.engines import get_engine, get_family_engine
from poolcheck.errors import AttributeValueError
from poolcheck.spec import dtypes, operators
from poolcheck.spec.family import (
    FamilySpec,
    check_unpool_indices,
    global_window,
    unpool_shape,
)
from poolcheck.spec.poolspec import INDEX_ELEMENT_TYPES


def lp_root(sums: np.ndarray, p: int, dtype: np.dtype) -> np.ndarray:
    """The Lp norm from the sums of ``|x|^p``: the 1/p-th root correctly rounded to float64 (p = 1:
    the sum; p = 2: the square root; p >= 3: :func:`nearest_root`), rounded once to ``dtype``
    (bfloat16 too: :func:`poolcheck.spec.dtypes.cast`). Both engines finish here."""
    with np.errstate(over="ignore", invalid="ignore"):
        if p == 1:
            root = sums
        elif p == 2:
            root = np.sqrt(sums)
        else:
            root = nearest_root(sums, p)
        return dtypes.cast(root, dtype)


def nearest_root(sums: np.ndarray, p: int) -> np.ndarray:
    """``s ** (1/p)`` for each float64 sum, with the exponent ``1/p`` rounded to float64 as every
    ``pow(s, 1.0 / p)`` has it, and the power itself rounded correctly (:func:`nearest_power`)."""
    return nearest_power(sums, 1.0 / p)


def nearest_power(sums: np.ndarray, exponent: float) -> np.ndarray:
    """``s ** exponent`` for each float64 ``s``, rounded correctly: the float64 nearest the exact
    value (0, inf and NaN as ``np.power`` gives them).

    ``np.power`` is not the same function on every machine: NumPy runs a SIMD ``pow`` on CPUs with
    AVX-512 and the C library's elsewhere, and they round differently (a float64 LpPool with
    p = 3 differed in the last bit in 3 of 84 outputs between an AVX-512 and an AVX2 machine). So
    the power is taken in long double (x86's 64-bit significand: 11 bits more than float64) and
    rounded to float64, which is the correctly rounded power wherever the long double result lies
    farther than :data:`ROOT_MARGIN` (relative) from a float64 midpoint: far more than the long
    double ``pow``'s own error. The few that lie closer (about 1 in 100), and every one where long
    double is no wider than float64, are taken with :mod:`decimal` at 36 significant digits, whose
    ln and exp are correctly rounded in software. The same bits on every CPU and C library."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = np.array(np.power(sums, exponent), dtype=np.float64)
    flat_sums, flat_out = np.ravel(sums), out.reshape(-1)
    where = np.flatnonzero(np.isfinite(flat_sums) & (flat_sums > 0))
    if not where.size:
        return out
    values = flat_sums[where].astype(np.float64)
    if np.finfo(np.longdouble).nmant >= 63:
        wide = np.power(values.astype(np.longdouble), np.longdouble(exponent))
        rounded = wide.astype(np.float64)
        up = np.nextafter(rounded, np.inf).astype(np.longdouble)
        down = np.nextafter(rounded, 0.0).astype(np.longdouble)
        here = rounded.astype(np.longdouble)
        # the midpoints next to the rounded value, exact in long double (54 significant bits)
        near = np.minimum(np.abs(wide - (here + up) / 2), np.abs(wide - (here + down) / 2))
        unsure = np.flatnonzero(near <= wide * ROOT_MARGIN)
    else:
        rounded, unsure = np.empty_like(values), np.arange(values.size)
    exact = decimal.Decimal(exponent)  # exact: the float64 exponent
    for i in unsure:
        rounded[i] = float(_ROOT.exp(_ROOT.multiply(_ROOT.ln(decimal.Decimal(float(values[i]))), exact)))
    flat_out[where] = rounded
    return out


#: How close (relative) a long double power may come to a float64 midpoint before
#: :func:`nearest_power` asks :mod:`decimal`: 2^-60, 16 times x86 long double's unit roundoff
#: (2^-64), past the few units in the last place its ``powl`` may err by.
ROOT_MARGIN = np.longdouble(2.0) ** -60

#: The context of :func:`nearest_power`'s decimal powers: 36 digits, twice float64's 17, so
#: rounding the decimal result to float64 is the exact power's rounding.
_ROOT = decimal.Context(prec=36)


def run_family(spec: FamilySpec, x: Any, *, engine: str = "numpy", indices: Any = None,
               row: operators.OperatorVersion | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Run ``spec`` on ``x`` (and MaxUnpool's ``indices``); returns ``(values, indices or None)``.
    ``row`` (default: the newest version of the op) decides the element types allowed."""
    arr = _as_array(x)
    operators.check_input(spec, arr.shape, arr.dtype, row)
    kernels = get_family_engine(engine)
    if spec.op in ("global_avg", "global_max"):
        return run_spec(global_window(spec, arr.shape), arr, engine=engine, with_indices=False)[0], None
    if spec.op in ("lp", "global_lp"):
        window = spec.window if spec.op == "lp" else global_window(spec, arr.shape)
        assert window is not None
        geom = S.resolve(window, arr.shape)
        return lp_root(kernels.lp_sums(arr, geom, spec.p), spec.p, arr.dtype), None
    if spec.op == "adaptive_avg":
        assert spec.output_shape is not None
        return kernels.adaptive_avg(arr, spec.output_shape), None
    if spec.op == "adaptive_max":
        assert spec.output_shape is not None
        values, where = kernels.adaptive_max(arr, spec.output_shape)
        return values, where.astype(INDEX_ELEMENT_TYPES[spec.index_element_type])
    # MaxUnpool
    if indices is None:
        raise AttributeValueError("indices", "MaxUnpool needs its second input I (the MaxPool indices)")
    out_shape = unpool_shape(spec, arr.shape)
    ind = check_unpool_indices(indices, arr.shape, out_shape)
    return kernels.max_unpool(arr, ind, out_shape), None


def _parse(name: str, attrs: dict[str, Any]) -> FamilySpec:
    spec = operators.parse(name, {k: v for k, v in attrs.items() if v is not None})
    assert isinstance(spec, FamilySpec)
    return spec


def _engine(engine: str) -> str:
    get_engine(engine)  # an unknown engine name raises ValueError naming "engine"
    return engine


def onnx_lp_pool(
    x: Any,
    kernel_shape: Sequence[int],
    p: int = 2,
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    ceil_mode: int = 0,
    auto_pad: str = "NOTSET",
    engine: str = "numpy",
) -> np.ndarray:
    """ONNX LpPool-22 (= 18): ``(sum |x|^p over each window) ** (1/p)``; padding counts zero."""
    spec = _parse("LpPool-22", {"kernel_shape": kernel_shape, "p": p, "strides": strides, "pads": pads,
                                "dilations": dilations, "ceil_mode": ceil_mode, "auto_pad": auto_pad})
    return run_family(spec, x, engine=_engine(engine))[0]


def onnx_global_average_pool(x: Any, engine: str = "numpy") -> np.ndarray:
    """ONNX GlobalAveragePool-22: the mean of each (n, c) plane, shape ``(N, C, 1, ...)``."""
    return run_family(_parse("GlobalAveragePool-22", {}), x, engine=_engine(engine))[0]


def onnx_global_max_pool(x: Any, engine: str = "numpy") -> np.ndarray:
    """ONNX GlobalMaxPool-22: the maximum of each (n, c) plane, shape ``(N, C, 1, ...)``."""
    return run_family(_parse("GlobalMaxPool-22", {}), x, engine=_engine(engine))[0]


def onnx_global_lp_pool(x: Any, p: int = 2, engine: str = "numpy") -> np.ndarray:
    """ONNX GlobalLpPool-22: the Lp norm of each (n, c) plane, shape ``(N, C, 1, ...)``."""
    return run_family(_parse("GlobalLpPool-22", {"p": p}), x, engine=_engine(engine))[0]


def onnx_max_unpool(
    x: Any,
    indices: Any,
    kernel_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    output_shape: Sequence[int] | None = None,
    engine: str = "numpy",
) -> np.ndarray:
    """ONNX MaxUnpool-22: ``x`` scattered to the flat positions ``indices`` (int64, the shape of
    ``x``) of a zero output; ``output_shape`` (the whole shape) is the optional third input."""
    spec = _parse("MaxUnpool-22", {"kernel_shape": kernel_shape, "strides": strides, "pads": pads,
                                   "output_shape": output_shape})
    return run_family(spec, x, engine=_engine(engine), indices=indices)[0]


def adaptive_max_pool(x: Any, output_shape: Sequence[int], index_element_type: str = "i64",
                      engine: str = "numpy") -> tuple[np.ndarray, np.ndarray]:
    """OpenVINO AdaptiveMaxPool-8: ``(values, indices)``; ``output_shape`` = the spatial sizes."""
    spec = _parse("AdaptiveMaxPool-8", {"output_shape": output_shape, "index_element_type": index_element_type})
    values, indices = run_family(spec, x, engine=_engine(engine))
    assert indices is not None
    return values, indices


def adaptive_avg_pool(x: Any, output_shape: Sequence[int], engine: str = "numpy") -> np.ndarray:
    """OpenVINO AdaptiveAvgPool-8; ``output_shape`` = the spatial sizes."""
    return run_family(_parse("AdaptiveAvgPool-8", {"output_shape": output_shape}), x, engine=_engine(engine))[0]
