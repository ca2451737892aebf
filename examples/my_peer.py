"""A worked example of a poolcheck peer plugin: your own pooling kernels, checked by poolcheck.

A plugin is any module that defines ``max_pool`` and/or ``avg_pool`` with the signatures of
``poolcheck.max_pool`` / ``poolcheck.avg_pool`` (OpenVINO MaxPool-14 / AvgPool-14 keywords).
Name it like a built-in peer::

    poolcheck run cases/ --peers onnxruntime,examples/my_peer.py
    poolcheck fuzz --ops maxpool --peers examples/my_peer.py

or, once installed, by module path (``--peers my_pkg.my_peer``) or through an entry point::

    [project.entry-points."poolcheck.peers"]
    my_peer = "my_pkg.my_peer"

This one is a deliberately plain loop over output positions, the way a kernel team might
write a first scalar reference for a new accelerator. Raising (``ValueError`` below) is
recorded as ``rejects: <message>``; poolcheck runs plugins in a worker process, so even a
crash or a hang only costs that one case.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

#: The name poolcheck reports this peer under (default: the module or file name).
PEER_NAME = "my_peer"
__version__ = "1.0"


def _axis(size: int, k: int, s: int, d: int, pb: int, pe: int, rounding: str, auto_pad: str) -> tuple[int, int]:
    """Output size and begin padding of one spatial axis."""
    dk = (k - 1) * d + 1
    if auto_pad in ("same_upper", "same_lower"):
        out = -(-size // s)
        total = max(0, (out - 1) * s + dk - size)
        return out, (total // 2 if auto_pad == "same_upper" else total - total // 2)
    if auto_pad == "valid":
        pb = pe = 0
    span = size + pb + pe - dk
    if span < 0:
        raise ValueError(f"kernel {k} (dilated {dk}) does not fit the padded input {size + pb + pe}")
    out = (span // s if rounding == "floor" else -(-span // s)) + 1
    if rounding == "ceil_torch" and (out - 1) * s >= size + pb:
        out -= 1  # the last window may not start in the end padding
    return out, pb


def _geometry(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], pads_begin: Sequence[int] | None,
    pads_end: Sequence[int] | None, dilations: Sequence[int] | None, rounding_type: str, auto_pad: str,
) -> tuple[list[int], list[int], list[int], list[int]]:
    """Output sizes, begin pads, dilations and end pads (as given) of every spatial axis."""
    n = len(kernel)
    pads_begin = list(pads_begin or [0] * n)
    pads_end = list(pads_end or [0] * n)
    dilations = list(dilations or [1] * n)
    if x.ndim != n + 2:
        raise ValueError(f"expected a rank-{n + 2} input for a {n}-D kernel, got rank {x.ndim}")
    axes = [
        _axis(x.shape[2 + i], kernel[i], strides[i], dilations[i], pads_begin[i], pads_end[i], rounding_type, auto_pad)
        for i in range(n)
    ]
    return [a[0] for a in axes], [a[1] for a in axes], dilations, pads_end


def max_pool(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], pads_begin: Sequence[int] | None = None,
    pads_end: Sequence[int] | None = None, dilations: Sequence[int] | None = None, rounding_type: str = "floor",
    auto_pad: str = "explicit", axis: int = 0, index_element_type: str = "i64",
) -> tuple[np.ndarray, np.ndarray]:
    """MaxPool-14: (values, indices). Padding is -inf; a window with no input element gives
    -inf (the type's lowest value for integers) and index -1; NaN wins."""
    x = np.asarray(x)
    outs, pb, dil, _ = _geometry(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type, auto_pad)
    spatial = x.shape[2:]
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    values = np.empty(x.shape[:2] + tuple(outs), dtype=x.dtype)
    indices = np.empty(values.shape, dtype=np.int64)
    axis = axis + x.ndim if axis < 0 else axis
    modulus = math.prod(x.shape[axis:])
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*(range(v) for v in outs)):
            best: Any = None
            where = -1
            for j in itertools.product(*(range(v) for v in kernel)):
                pos = tuple(o[i] * strides[i] - pb[i] + j[i] * dil[i] for i in range(len(kernel)))
                if not all(0 <= p < size for p, size in zip(pos, spatial)):
                    continue
                v = x[(n, c, *pos)]
                if best is None or v > best or (np.isnan(v) and not np.isnan(best)):
                    best, where = v, int(np.ravel_multi_index(pos, spatial))
            values[(n, c, *o)] = lowest if best is None else best
            flat = (n * x.shape[1] + c) * math.prod(spatial) + where
            indices[(n, c, *o)] = -1 if best is None else flat % modulus
    return values, indices.astype(np.int32 if index_element_type == "i32" else np.int64)


def avg_pool(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], pads_begin: Sequence[int] | None = None,
    pads_end: Sequence[int] | None = None, exclude_pad: bool = False, rounding_type: str = "floor",
    auto_pad: str = "explicit",
) -> np.ndarray:
    """AvgPool-14. The divisor counts the input elements (``exclude_pad``) or the window
    clipped to the padded input; a zero divisor gives 0."""
    x = np.asarray(x)
    outs, pb, _, pe = _geometry(x, kernel, strides, pads_begin, pads_end, None, rounding_type, auto_pad)
    if auto_pad != "explicit":
        pe = [max(0, (o - 1) * s + k - size - p) if auto_pad != "valid" else 0
              for o, s, k, size, p in zip(outs, strides, kernel, x.shape[2:], pb)]
    spatial = x.shape[2:]
    values = np.empty(x.shape[:2] + tuple(outs), dtype=x.dtype)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*(range(v) for v in outs)):
            total, inside, padded = 0.0, 0, 0
            for j in itertools.product(*(range(v) for v in kernel)):
                pos = tuple(o[i] * strides[i] - pb[i] + j[i] for i in range(len(kernel)))
                if all(-pb[i] <= p < size + pe[i] for i, (p, size) in enumerate(zip(pos, spatial))):
                    padded += 1
                if all(0 <= p < size for p, size in zip(pos, spatial)):
                    inside += 1
                    total += float(x[(n, c, *pos)])
            divisor = inside if exclude_pad else padded
            values[(n, c, *o)] = total / divisor if divisor else 0.0
    return values
