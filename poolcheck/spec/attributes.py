"""Operator attributes: one canonical description of a pooling configuration.

Every convention (OpenVINO MaxPool-8/14 and AvgPool-14, ONNX MaxPool-22 and AveragePool-19/22)
is parsed and validated here into a :class:`PoolSpec`. Engines, peers, case files and the fuzzer
all speak ``PoolSpec``; only this module knows how each convention spells its attributes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from poolcheck.errors import AttributeValueError
from poolcheck.spec.limits import MAX_EXTENT

Op = Literal["max", "avg"]
Rounding = Literal["floor", "ceil", "ceil_torch"]
AutoPad = Literal["explicit", "valid", "same_upper", "same_lower"]
Convention = Literal["openvino", "onnx"]

ROUNDING_TYPES: tuple[str, ...] = ("floor", "ceil", "ceil_torch")
AUTO_PADS: tuple[str, ...] = ("explicit", "valid", "same_upper", "same_lower")
ONNX_AUTO_PADS: dict[str, str] = {
    "NOTSET": "explicit",
    "VALID": "valid",
    "SAME_UPPER": "same_upper",
    "SAME_LOWER": "same_lower",
}
INDEX_ELEMENT_TYPES: dict[str, type[np.integer]] = {"i32": np.int32, "i64": np.int64}

#: OpenVINO MaxPool-8: "rounding_type ... Range of values: ceil, floor". MaxPool-14 and
#: AvgPool-14 add ``ceil_torch``.
OPENVINO_ROUNDING_BY_VERSION: dict[int, tuple[str, ...]] = {
    8: ("floor", "ceil"),
    14: ("floor", "ceil", "ceil_torch"),
}

FLOAT_DTYPES: tuple[str, ...] = ("float16", "float32", "float64")
INT_DTYPES: tuple[str, ...] = (
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
)
#: OpenVINO MaxPool "T: floating point or integer type".
OPENVINO_MAX_DTYPES = FLOAT_DTYPES + INT_DTYPES
#: ONNX MaxPool-22 T: double, float, float16, int8, uint8 (and bfloat16, which NumPy lacks).
ONNX_MAX_DTYPES = FLOAT_DTYPES + ("int8", "uint8")
#: ONNX AveragePool "T: ... Allowed types: tensor(double), tensor(float), tensor(float16)".
#: Averages are computed for floating-point inputs only, in both conventions.
AVG_DTYPES = FLOAT_DTYPES


@dataclass(frozen=True)
class PoolSpec:
    """A pooling configuration in poolcheck's canonical (OpenVINO-shaped) vocabulary.

    ``pads_begin``/``pads_end`` are the explicit pads as given; ``auto_pad`` other than
    ``explicit`` overrides them when the geometry is resolved against an input shape.
    """

    op: Op
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    dilations: tuple[int, ...]
    rounding_type: Rounding = "floor"
    auto_pad: AutoPad = "explicit"
    exclude_pad: bool = False
    axis: int = 0
    index_element_type: str = "i64"
    storage_order: int = 0
    convention: Convention = "openvino"
    #: ONNX ``ceil_mode`` exactly as written (ONNX convention only). ``rounding_type`` holds its
    #: meaning; this keeps what the user wrote so peers receive the original attributes.
    ceil_mode: int = 0

    @property
    def spatial_rank(self) -> int:
        return len(self.kernel)

    @property
    def rank(self) -> int:
        return len(self.kernel) + 2

    def replace(self, **changes: Any) -> PoolSpec:
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        """A one-line label, e.g. ``MaxPool(kernel=[2, 2], strides=[2, 2], ceil)``."""
        name = "MaxPool" if self.op == "max" else "AvgPool"
        parts = [f"kernel={list(self.kernel)}", f"strides={list(self.strides)}"]
        if any(d != 1 for d in self.dilations):
            parts.append(f"dilations={list(self.dilations)}")
        if self.auto_pad == "explicit":
            if any(self.pads_begin) or any(self.pads_end):
                parts.append(f"pads={list(self.pads_begin)}/{list(self.pads_end)}")
        else:
            parts.append(self.auto_pad)
        if self.rounding_type != "floor":
            parts.append(self.rounding_type)
        if self.op == "avg":
            parts.append("exclude_pad" if self.exclude_pad else "include_pad")
        else:
            if self.axis:
                parts.append(f"axis={self.axis}")
            if self.storage_order:
                parts.append("storage_order=1")
        return f"{name}({', '.join(parts)})"


# --------------------------------------------------------------------------- validation helpers


def _short_int(v: Any) -> str:
    """An integer for a message: a 400-digit value is shown by its size, not spelled out."""
    text = str(int(v))
    return text if len(text) <= 24 else f"{text[:6]}...({len(text)} digits)"


def _short_list(value: Any) -> str:
    items = [_short_int(x) if isinstance(x, (int, np.integer)) and not isinstance(x, bool) else repr(x)
             for x in list(value)[:8]]
    return "[" + ", ".join(items) + (", ...]" if len(value) > 8 else "]")


def _int_list(name: str, value: Any, *, minimum: int, length: int | None) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence | np.ndarray):
        raise AttributeValueError(name, f"expected a list of integers, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise AttributeValueError(name, f"expected integers, got {v!r} in {list(value)!r}")
        if v < minimum:
            raise AttributeValueError(
                name, f"every value must be >= {minimum}, got {_short_int(v)} in {_short_list(value)}"
            )
        if v > MAX_EXTENT:
            raise AttributeValueError(
                name, f"every value must be <= {MAX_EXTENT} (2^31 - 1), got {_short_int(v)} in {_short_list(value)}"
            )
        out.append(int(v))
    if length is not None and len(out) != length:
        raise AttributeValueError(
            name,
            f"expected {length} value(s), one per spatial axis of kernel, got {len(out)} ({out})",
        )
    return tuple(out)


def _kernel(name: str, value: Any) -> tuple[int, ...]:
    # "kernel ... Range of values: integer values starting from 1"
    kernel = _int_list(name, value, minimum=1, length=None)
    if not 1 <= len(kernel) <= 3:
        raise AttributeValueError(
            name,
            f"expected 1, 2 or 3 spatial values (inputs of rank 3, 4 or 5), got {len(kernel)}",
        )
    return kernel


def _choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise AttributeValueError(
            name, f"expected one of {', '.join(repr(a) for a in allowed)}, got {value!r}"
        )
    return value


def _flag(name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return int(value)
    raise AttributeValueError(name, f"expected 0 or 1, got {value!r}")


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise AttributeValueError(name, f"expected true or false, got {value!r}")


def _axis(value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise AttributeValueError("axis", f"expected an integer, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------- constructors


def openvino_max_pool(
    kernel: Any,
    strides: Any,
    pads_begin: Any = None,
    pads_end: Any = None,
    dilations: Any = None,
    rounding_type: Any = "floor",
    auto_pad: Any = "explicit",
    axis: Any = 0,
    index_element_type: Any = "i64",
    version: int = 14,
) -> PoolSpec:
    """Validate OpenVINO MaxPool-8/MaxPool-14 attributes."""
    k = _kernel("kernel", kernel)
    n = len(k)
    # "strides ... Range of values: integer values starting from 0" -- a zero stride has no
    # meaning (the shape formula divides by it); poolcheck requires >= 1 and records the
    # documentation defect as an erratum of the MaxPool-8 page.
    s = _int_list("strides", strides, minimum=1, length=n)
    pb = _int_list("pads_begin", pads_begin if pads_begin is not None else [0] * n, minimum=0, length=n)
    pe = _int_list("pads_end", pads_end if pads_end is not None else [0] * n, minimum=0, length=n)
    d = _int_list("dilations", dilations if dilations is not None else [1] * n, minimum=1, length=n)
    if version not in OPENVINO_ROUNDING_BY_VERSION:
        raise AttributeValueError("version", f"OpenVINO MaxPool versions are 8 and 14, got {version!r}")
    r = _choice("rounding_type", rounding_type, OPENVINO_ROUNDING_BY_VERSION[version])
    a = _choice("auto_pad", auto_pad, AUTO_PADS)
    ax = _axis(axis)
    it = _choice("index_element_type", index_element_type, tuple(INDEX_ELEMENT_TYPES))
    return PoolSpec("max", k, s, pb, pe, d, r, a, False, ax, it, 0, "openvino")  # type: ignore[arg-type]


def openvino_avg_pool(
    kernel: Any,
    strides: Any,
    pads_begin: Any = None,
    pads_end: Any = None,
    exclude_pad: Any = False,
    rounding_type: Any = "floor",
    auto_pad: Any = "explicit",
) -> PoolSpec:
    """Validate OpenVINO AvgPool-14 attributes (AvgPool has no dilations)."""
    k = _kernel("kernel", kernel)
    n = len(k)
    s = _int_list("strides", strides, minimum=1, length=n)
    pb = _int_list("pads_begin", pads_begin if pads_begin is not None else [0] * n, minimum=0, length=n)
    pe = _int_list("pads_end", pads_end if pads_end is not None else [0] * n, minimum=0, length=n)
    r = _choice("rounding_type", rounding_type, ROUNDING_TYPES)
    a = _choice("auto_pad", auto_pad, AUTO_PADS)
    ex = _bool("exclude_pad", exclude_pad)
    return PoolSpec("avg", k, s, pb, pe, (1,) * n, r, a, ex, 0, "i64", 0, "openvino")  # type: ignore[arg-type]


def _onnx_common(
    kernel_shape: Any, strides: Any, pads: Any, dilations: Any, ceil_mode: Any, auto_pad: Any
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], str, str]:
    k = _kernel("kernel_shape", kernel_shape)
    n = len(k)
    s = _int_list("strides", strides if strides is not None else [1] * n, minimum=1, length=n)
    # "pads ... format should be as follow [x1_begin, x2_begin...x1_end, x2_end,...]"
    p = _int_list("pads", pads if pads is not None else [0] * (2 * n), minimum=0, length=None)
    if len(p) != 2 * n:
        raise AttributeValueError(
            "pads",
            f"expected {2 * n} values (all begins, then all ends) for {n} spatial axes, got {len(p)} ({list(p)})",
        )
    d = _int_list("dilations", dilations if dilations is not None else [1] * n, minimum=1, length=n)
    cm = _flag("ceil_mode", ceil_mode)
    ap = _choice("auto_pad", auto_pad, tuple(ONNX_AUTO_PADS))
    canonical_pad = ONNX_AUTO_PADS[ap]
    if cm == 0:
        rounding = "floor"
    elif canonical_pad == "valid":
        # "VALID: output_spatial_shape[i] = ceil((input_spatial_shape[i] - ((kernel_spatial_shape[i]
        #  - 1) * dilations[i] + 1) + 1) / strides_spatial_shape[i])" -- with ceil_mode enabled the
        # written VALID rule equals the floor rule, so ceil_mode has no effect under VALID.
        rounding = "floor"
    else:
        # ceil_mode rounds up, and (onnx reference, test_maxpool_2d_ceil_output_size_reduce_by_one)
        # drops a last window that would start past the input and the begin padding: exactly
        # OpenVINO's ceil_torch.
        rounding = "ceil_torch"
    return k, s, p[:n], p[n:], d, rounding, canonical_pad


def onnx_max_pool(
    kernel_shape: Any,
    strides: Any = None,
    pads: Any = None,
    dilations: Any = None,
    ceil_mode: Any = 0,
    auto_pad: Any = "NOTSET",
    storage_order: Any = 0,
) -> PoolSpec:
    """Validate ONNX MaxPool-22 attributes."""
    k, s, pb, pe, d, r, a = _onnx_common(kernel_shape, strides, pads, dilations, ceil_mode, auto_pad)
    so = _flag("storage_order", storage_order)
    return PoolSpec("max", k, s, pb, pe, d, r, a, False, 0, "i64", so, "onnx", _flag("ceil_mode", ceil_mode))  # type: ignore[arg-type]


def onnx_average_pool(
    kernel_shape: Any,
    strides: Any = None,
    pads: Any = None,
    dilations: Any = None,
    ceil_mode: Any = 0,
    count_include_pad: Any = 0,
    auto_pad: Any = "NOTSET",
) -> PoolSpec:
    """Validate ONNX AveragePool-19/22 attributes."""
    k, s, pb, pe, d, r, a = _onnx_common(kernel_shape, strides, pads, dilations, ceil_mode, auto_pad)
    cip = _flag("count_include_pad", count_include_pad)
    return PoolSpec("avg", k, s, pb, pe, d, r, a, not cip, 0, "i64", 0, "onnx", _flag("ceil_mode", ceil_mode))  # type: ignore[arg-type]


def check_input(spec: PoolSpec, shape: Sequence[int], dtype: Any) -> np.dtype:
    """Validate an input's rank, dimensions and element type against ``spec``."""
    shape = tuple(int(v) for v in shape)
    if len(shape) != spec.rank:
        raise AttributeValueError(
            "kernel",
            f"{spec.spatial_rank} spatial value(s) need an input of rank {spec.rank}, "
            f"got rank {len(shape)} (shape {shape})",
        )
    if any(v < 1 for v in shape):
        raise AttributeValueError("input", f"every dimension must be >= 1, got shape {shape}")
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise AttributeValueError("dtype", f"not a NumPy dtype: {dtype!r}") from exc
    if spec.op == "avg":
        allowed = AVG_DTYPES
    elif spec.convention == "onnx":
        allowed = ONNX_MAX_DTYPES
    else:
        allowed = OPENVINO_MAX_DTYPES
    if dt.name not in allowed:
        op = {"max": "MaxPool", "avg": "AvgPool"}[spec.op]
        raise AttributeValueError(
            "dtype", f"{op} ({spec.convention}) does not allow {dt.name}; allowed: {', '.join(allowed)}"
        )
    if spec.op == "max" and spec.convention == "openvino":
        # "The range is [-R, R - 1], where R is the rank of the input tensor."
        if not -spec.rank <= spec.axis <= spec.rank - 1:
            raise AttributeValueError(
                "axis", f"must lie in [-{spec.rank}, {spec.rank - 1}] for a rank-{spec.rank} input, got {spec.axis}"
            )
    return dt
