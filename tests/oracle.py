"""A slow, obviously-correct loop oracle for max and average pooling.

Written from the specification text (/work/shared/seeds: the OpenVINO pooling shape rules page,
MaxPool-8, ONNX AveragePool-19) and shares no code with ``poolcheck``'s engines or its shape
module: every output element is computed by enumerating its window's taps with plain Python
loops. It imports nothing from ``poolcheck``; a policy is any object with the attributes of
:class:`Choices` (``poolcheck.Policy`` qualifies).

Conventions used throughout: ``x`` has shape ``(N, C, *spatial)``; window ``o`` along an axis
covers input positions ``o * stride - pad_begin + j * dilation`` for ``j`` in ``range(kernel)``;
the taps of a window are visited in row-major order (first spatial axis outermost).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np


class OracleShapeError(ValueError):
    """The configuration has no output (the dilated kernel does not fit the padded input)."""


@dataclass(frozen=True)
class Choices:
    """The oracle's default answers where the specs are silent (poolcheck's default policy)."""

    empty_max: str = "-inf"  # "-inf" | "lowest" | "zero"
    empty_index: int = -1
    nan: str = "propagate"  # "propagate" | "ignore" | "first"
    divisor: str = "attribute"  # "attribute" | "full" | "padded" | "valid"
    empty_avg: str = "zero"  # "zero" | "nan"


DEFAULT = Choices()


@dataclass(frozen=True)
class Axis:
    """One spatial axis: sizes, the pads actually applied and the output length."""

    size: int
    kernel: int
    stride: int
    dilation: int
    pad_begin: int
    pad_end: int
    out: int

    def window(self, o: int) -> list[int]:
        """The input positions tapped by window ``o`` (padding included)."""
        return [o * self.stride - self.pad_begin + j * self.dilation for j in range(self.kernel)]


# --------------------------------------------------------------------------- shapes


def explicit_out(size: int, pb: int, pe: int, kernel: int, dilation: int, stride: int, rounding: str) -> int:
    """The OpenVINO explicit-padding rule, evaluated with exact rationals."""
    dk = (kernel - 1) * dilation + 1
    if dk > size + pb + pe:
        raise OracleShapeError(f"dilated kernel {dk} > padded input {size} + {pb} + {pe}")
    # "H_out = floor((H + pads_begin[0] + pads_end[0] - ((kernel[0] - 1) * dilations[0] + 1))
    #  / strides[0] + 1)"  (and the same with ceil for rounding_type = ceil)
    q = Fraction(size + pb + pe - dk, stride) + 1
    if rounding == "floor":
        return math.floor(q)
    out = math.ceil(q)
    if rounding == "ceil_torch":
        # "If rounding_type is set to ceil_torch, the last pooling operation within a dimension
        #  cannot start in the padding area. If this is the case, the respective dimension is
        #  reduced by 1."  The last window starts at (out - 1) * stride in padded coordinates;
        #  the end padding begins at pads_begin + H.
        if (out - 1) * stride >= pb + size:
            out -= 1
    elif rounding != "ceil":
        raise ValueError(f"unknown rounding {rounding!r}")
    return out


def _same(size: int, kernel: int, dilation: int, stride: int, upper: bool,
          clamp: bool = True) -> tuple[int, int, int]:
    """ONNX: "SAME_UPPER or SAME_LOWER: output_spatial_shape[i] = ceil(input_spatial_shape[i] /
    strides_spatial_shape[i])", "pad_shape[i] = (output_spatial_shape[i] - 1) * strides + ((kernel - 1)
    * dilations + 1) - input_spatial_shape[i]" -- as written, so negative with a stride past the
    dilated kernel (``clamp=False``); "split between the two sides equally or almost equally ...
    the extra padding is added at the end for SAME_UPPER and at the beginning for SAME_LOWER".
    OpenVINO clamps a negative total at 0 (``clamp=True``): "In case of odd padding value, an extra
    padding is added at the end (at the beginning)"."""
    out = math.ceil(Fraction(size, stride))
    total = (out - 1) * stride + (kernel - 1) * dilation + 1 - size
    if clamp:
        total = max(0, total)
    half = int(Fraction(total, 2))  # toward zero: the smaller half by magnitude
    if upper:
        pb, pe = half, total - half
    else:
        pb, pe = total - half, half
    return out, pb, pe


def openvino_axis(
    size: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int, rounding: str, auto_pad: str
) -> Axis:
    """One axis under OpenVINO's rules as the runtime applies them.

    ``valid`` means "padding is not used": pads are zero and ``rounding_type`` still applies (the
    MaxPool-8 page's example 5: 3x3, kernel 2, stride 2, valid, ceil -> 2x2).
    """
    if auto_pad in ("same_upper", "same_lower"):
        out, pb, pe = _same(size, kernel, dilation, stride, auto_pad == "same_upper")
        return Axis(size, kernel, stride, dilation, pb, pe, out)
    if auto_pad == "valid":
        pad_begin = pad_end = 0
    elif auto_pad != "explicit":
        raise ValueError(f"unknown auto_pad {auto_pad!r}")
    out = explicit_out(size, pad_begin, pad_end, kernel, dilation, stride, rounding)
    return Axis(size, kernel, stride, dilation, pad_begin, pad_end, out)


def openvino_written_axis(
    size: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int, rounding: str, auto_pad: str
) -> int:
    """The output length exactly as the shape-rules page writes it (errata included)."""
    if auto_pad in ("same_upper", "same_lower"):
        # "auto_pad = same_upper / same_lower: H_out = H"
        return size
    if auto_pad == "valid":
        # "auto_pad = valid: H_out = ceil((H - ((kernel[0] - 1) * dilations[0] + 1) + 1) / strides[0])"
        return math.ceil(Fraction(size - ((kernel - 1) * dilation + 1) + 1, stride))
    return explicit_out(size, pad_begin, pad_end, kernel, dilation, stride, rounding)


def onnx_rounding(ceil_mode: int, auto_pad: str) -> str:
    """ONNX ceil_mode in OpenVINO's vocabulary: ceil with the PyTorch last-window rule, except
    under VALID where the ONNX formula ("floor((input - ((kernel - 1) * dilations + 1)) /
    strides) + 1" / its ceil_mode twin "ceil((input - dk + 1) / strides)") is the floor rule."""
    if not ceil_mode or auto_pad == "VALID":
        return "floor"
    return "ceil_torch"


def onnx_axis(
    size: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int, ceil_mode: int, auto_pad: str
) -> Axis:
    """One axis under the ONNX rules."""
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out, pb, pe = _same(size, kernel, dilation, stride, auto_pad == "SAME_UPPER", clamp=False)
        return Axis(size, kernel, stride, dilation, pb, pe, out)
    if auto_pad == "VALID":
        pad_begin = pad_end = 0
    elif auto_pad != "NOTSET":
        raise ValueError(f"unknown auto_pad {auto_pad!r}")
    out = explicit_out(size, pad_begin, pad_end, kernel, dilation, stride, onnx_rounding(ceil_mode, auto_pad))
    return Axis(size, kernel, stride, dilation, pad_begin, pad_end, out)


def openvino_axes(
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads_begin: Sequence[int],
    pads_end: Sequence[int],
    dilations: Sequence[int],
    rounding: str,
    auto_pad: str,
) -> list[Axis]:
    return [
        openvino_axis(spatial[i], kernel[i], strides[i], dilations[i], pads_begin[i], pads_end[i], rounding, auto_pad)
        for i in range(len(kernel))
    ]


def onnx_axes(
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: int,
    auto_pad: str,
) -> list[Axis]:
    # "pads ... [x1_begin, x2_begin...x1_end, x2_end,...]"
    n = len(kernel)
    return [
        onnx_axis(spatial[i], kernel[i], strides[i], dilations[i], pads[i], pads[n + i], ceil_mode, auto_pad)
        for i in range(n)
    ]


# --------------------------------------------------------------------------- pooling loops


def _row_major_strides(shape: Sequence[int]) -> list[int]:
    strides = []
    acc = 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


def _is_float(dtype: np.dtype) -> bool:
    """A floating-point type: NumPy's, or bfloat16 (ml_dtypes, which NumPy files under kind 'V')."""
    return dtype.kind == "f" or dtype.name == "bfloat16"


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _select(candidates: list[tuple[Any, tuple[int, ...]]], nan_rule: str) -> tuple[Any, tuple[int, ...]]:
    """Pick (value, position) from a non-empty window in tap order.

    Ties: the first of equal values wins (a strict ``>`` scan). NaN rules:
    ``propagate`` - the first NaN of the window wins; ``ignore`` - NaN loses to every number,
    an all-NaN window gives its first NaN; ``first`` - a strict ``>`` scan seeded with the first
    tap (a leading NaN sticks, later NaNs never win).
    """
    if nan_rule == "propagate":
        for value, pos in candidates:
            if _is_nan(value):
                return value, pos
    elif nan_rule == "ignore":
        numbers = [c for c in candidates if not _is_nan(c[0])]
        if numbers:
            candidates = numbers
    elif nan_rule != "first":
        raise ValueError(f"unknown nan rule {nan_rule!r}")
    best_value, best_pos = candidates[0]
    for value, pos in candidates[1:]:
        if value > best_value:
            best_value, best_pos = value, pos
    return best_value, best_pos


def _empty_max(dtype: np.dtype, rule: str) -> Any:
    # MaxPool-8: "If paddings are used, during the pooling calculation their values are -inf";
    # integer types have no -inf: their lowest value stands in.
    if rule == "zero":
        return 0
    if dtype.name == "bfloat16":
        return -math.inf if rule == "-inf" else -(2.0 - 2.0 ** -7) * 2.0 ** 127  # bfloat16's lowest
    if _is_float(dtype):
        return -math.inf if rule == "-inf" else float(np.finfo(dtype).min)
    return int(np.iinfo(dtype).min)


def max_pool_loops(
    x: np.ndarray,
    axes: Sequence[Axis],
    index_of: Any,
    policy: Any = DEFAULT,
) -> tuple[np.ndarray, list[int]]:
    """Max pooling by enumeration. ``index_of(n, c, spatial_position)`` gives the reported index.

    Returns the values (input dtype) and the flat list of indices (output order, row-major).
    """
    dtype = x.dtype
    batch, channels = x.shape[0], x.shape[1]
    spatial = [a.size for a in axes]
    plane_strides = _row_major_strides(spatial)
    plane = math.prod(spatial)
    flat = x.reshape(-1).tolist()
    values: list[Any] = []
    indices: list[int] = []
    for n in range(batch):
        for c in range(channels):
            base = (n * channels + c) * plane
            for out_pos in itertools.product(*(range(a.out) for a in axes)):
                candidates = []
                for pos in itertools.product(*(a.window(o) for a, o in zip(axes, out_pos))):
                    # MaxPool-8 output 2: "indices ... not considering padding": a tap in the
                    # padding (or past it, under ceil rounding) never contributes.
                    if all(0 <= p < a.size for p, a in zip(pos, axes)):
                        offset = sum(p * s for p, s in zip(pos, plane_strides))
                        candidates.append((flat[base + offset], pos))
                if not candidates:
                    values.append(_empty_max(dtype, policy.empty_max))
                    indices.append(int(policy.empty_index))
                    continue
                value, pos = _select(candidates, policy.nan if _is_float(dtype) else "first")
                values.append(value)
                indices.append(index_of(n, c, pos))
    out_shape = (batch, channels, *(a.out for a in axes))
    return np.array(values, dtype=dtype).reshape(out_shape), indices


def openvino_index(shape: Sequence[int], axis: int) -> Any:
    """MaxPool-8 output 2: "Values are computed as indices in a tensor flattened to 1D, not
    considering padding", bounded by "the product of dimensions starting from the one pointed by
    the 'axis' attribute until the end of the input shape" ("When axis == 2, the values are in the
    range [0, H * W * D)"): the row-major index of the coordinates from ``axis`` on."""
    rank = len(shape)
    first = axis + rank if axis < 0 else axis
    tail = list(shape[first:])
    weights = _row_major_strides(tail)

    def index_of(n: int, c: int, pos: tuple[int, ...]) -> int:
        coords = (n, c, *pos)[first:]
        return sum(v * w for v, w in zip(coords, weights))

    return index_of


def onnx_index(shape: Sequence[int], storage_order: int) -> Any:
    """ONNX MaxPool Indices: "flatten 1-D tensor ... values in indices are in [0, N x C x D1 x ...
    x Dn)"; storage_order "0 is row major, and 1 is column major" over the spatial axes of each
    (n, c) plane, i.e. ``(n * C + c) * plane + spatial`` with ``spatial`` row- or column-major."""
    channels = shape[1]
    spatial = list(shape[2:])
    plane = math.prod(spatial)
    if storage_order:
        weights = _row_major_strides(spatial[::-1])[::-1]  # column-major: first axis fastest
    else:
        weights = _row_major_strides(spatial)

    def index_of(n: int, c: int, pos: tuple[int, ...]) -> int:
        return (n * channels + c) * plane + sum(p * w for p, w in zip(pos, weights))

    return index_of


def avg_pool_loops(x: np.ndarray, axes: Sequence[Axis], exclude_pad: bool, policy: Any = DEFAULT) -> np.ndarray:
    """Average pooling by enumeration.

    ONNX: "The output of each pooling window is divided by the number of elements (exclude pad
    when attribute count_include_pad is zero)". With pads counted, only taps inside the padded
    input ``[-pad_begin, size + pad_end)`` count: the part of a ceil-rounded last window past the
    padded input is neither data nor padding. Sums are exact (``math.fsum``) for finite inputs and
    the quotient is rounded once to float64, then once to the input type.
    """
    dtype = x.dtype
    batch, channels = x.shape[0], x.shape[1]
    spatial = [a.size for a in axes]
    plane_strides = _row_major_strides(spatial)
    plane = math.prod(spatial)
    flat = x.astype(np.float64).reshape(-1).tolist()
    rule = policy.divisor
    if rule == "attribute":
        rule = "valid" if exclude_pad else "padded"
    values: list[float] = []
    for n in range(batch):
        for c in range(channels):
            base = (n * channels + c) * plane
            for out_pos in itertools.product(*(range(a.out) for a in axes)):
                terms: list[float] = []
                in_padded = 0
                taps = 0
                for pos in itertools.product(*(a.window(o) for a, o in zip(axes, out_pos))):
                    taps += 1
                    if all(-a.pad_begin <= p < a.size + a.pad_end for p, a in zip(pos, axes)):
                        in_padded += 1
                    if all(0 <= p < a.size for p, a in zip(pos, axes)):
                        terms.append(flat[base + sum(p * s for p, s in zip(pos, plane_strides))])
                divisor = {"valid": len(terms), "padded": in_padded, "full": taps}[rule]
                if divisor == 0:
                    values.append(0.0 if policy.empty_avg == "zero" else math.nan)
                    continue
                if all(math.isfinite(t) for t in terms):
                    total = math.fsum(terms)
                else:
                    total = sum(terms)  # inf / nan propagate as IEEE addition says
                values.append(total / divisor)
    out_shape = (batch, channels, *(a.out for a in axes))
    if dtype.name == "bfloat16":  # ml_dtypes' own float64 cast rounds twice (through float32)
        exact = [bfloat16_round(v) for v in values]
        return np.array(exact, dtype=np.float32).astype(dtype).reshape(out_shape)  # exact values
    return np.array(values, dtype=np.float64).astype(dtype).reshape(out_shape)


def bfloat16_round(v: float) -> float:
    """``v`` rounded once to bfloat16 (8 significant bits, exponents -126..127, subnormals down to
    2^-133), to nearest with ties to even, by Python's exact ``round`` of the scaled significand."""
    if not math.isfinite(v) or v == 0:
        return v
    _, e = math.frexp(v)  # |v| = m * 2^e, 0.5 <= m < 1
    quantum = max(e - 8, -133)  # the spacing of bfloat16 values near v, in powers of two
    r = math.ldexp(round(math.ldexp(v, -quantum)), quantum)  # round(): half to even, exact
    if abs(r) >= math.ldexp(1, 128):  # past the largest bfloat16 (2^128 - 2^120): infinity
        return math.copysign(math.inf, v)
    return r if r != 0 else math.copysign(0.0, v)


# --------------------------------------------------------------------------- convention entry points


def _dflt(value: Sequence[int] | None, fill: int, n: int) -> list[int]:
    return [fill] * n if value is None else list(value)


def openvino_max_pool(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads_begin: Sequence[int] | None = None,
    pads_end: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    rounding_type: str = "floor",
    auto_pad: str = "explicit",
    axis: int = 0,
    index_element_type: str = "i64",
    policy: Any = DEFAULT,
) -> tuple[np.ndarray, np.ndarray]:
    """OpenVINO MaxPool-8/14: (values, indices)."""
    n = len(kernel)
    axes = openvino_axes(x.shape[2:], kernel, strides, _dflt(pads_begin, 0, n), _dflt(pads_end, 0, n),
                         _dflt(dilations, 1, n), rounding_type, auto_pad)
    values, idx = max_pool_loops(x, axes, openvino_index(x.shape, axis), policy)
    # "T_IND: int64 or int32", chosen by index_element_type "i64" or "i32".
    idx_dtype = {"i64": np.int64, "i32": np.int32}[index_element_type]
    return values, np.array(idx, dtype=idx_dtype).reshape(values.shape)


def openvino_avg_pool(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads_begin: Sequence[int] | None = None,
    pads_end: Sequence[int] | None = None,
    exclude_pad: bool = False,
    rounding_type: str = "floor",
    auto_pad: str = "explicit",
    policy: Any = DEFAULT,
) -> np.ndarray:
    """OpenVINO AvgPool-14 (no dilations)."""
    n = len(kernel)
    axes = openvino_axes(x.shape[2:], kernel, strides, _dflt(pads_begin, 0, n), _dflt(pads_end, 0, n),
                         [1] * n, rounding_type, auto_pad)
    return avg_pool_loops(x, axes, exclude_pad, policy)


def onnx_max_pool(
    x: np.ndarray,
    kernel_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    ceil_mode: int = 0,
    auto_pad: str = "NOTSET",
    storage_order: int = 0,
    policy: Any = DEFAULT,
) -> tuple[np.ndarray, np.ndarray]:
    """ONNX MaxPool-22: (Y, Indices); Indices are int64."""
    n = len(kernel_shape)
    axes = onnx_axes(x.shape[2:], kernel_shape, _dflt(strides, 1, n), _dflt(pads, 0, 2 * n),
                     _dflt(dilations, 1, n), ceil_mode, auto_pad)
    values, idx = max_pool_loops(x, axes, onnx_index(x.shape, storage_order), policy)
    return values, np.array(idx, dtype=np.int64).reshape(values.shape)


def onnx_average_pool(
    x: np.ndarray,
    kernel_shape: Sequence[int],
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    ceil_mode: int = 0,
    count_include_pad: int = 0,
    auto_pad: str = "NOTSET",
    policy: Any = DEFAULT,
) -> np.ndarray:
    """ONNX AveragePool-19/22."""
    n = len(kernel_shape)
    axes = onnx_axes(x.shape[2:], kernel_shape, _dflt(strides, 1, n), _dflt(pads, 0, 2 * n),
                     _dflt(dilations, 1, n), ceil_mode, auto_pad)
    return avg_pool_loops(x, axes, not count_include_pad, policy)
