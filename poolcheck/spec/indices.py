"""What a max-pool index means: which flattening, relative to which axis, in which type."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from poolcheck.spec.poolspec import INDEX_ELEMENT_TYPES, PoolSpec


@dataclass(frozen=True)
class IndexLayout:
    """How to turn the position of a chosen input element into the reported index.

    ``index = ((n * C + c) * S + spatial) % modulus`` where ``spatial`` is the element's
    position in its (N, C) plane flattened in ``order`` ("C" row-major, "F" column-major over
    the spatial axes only) and ``S`` is the plane's size. A window with no element gets the
    policy's ``empty_index`` unchanged.
    """

    order: str
    modulus: int
    dtype: np.dtype


def index_layout(spec: PoolSpec, input_shape: Sequence[int]) -> IndexLayout:
    shape = tuple(int(v) for v in input_shape)
    if spec.convention == "onnx":
        # ONNX MaxPool Indices: the whole tensor, flattened, padding not considered [ONNX-INDICES];
        # storage_order: row or column major [ONNX-STORAGE-ORDER] -- applied, as in the ONNX
        # reference and ONNX Runtime, to the spatial axes within each (n, c) plane.
        return IndexLayout("F" if spec.storage_order else "C", math.prod(shape), np.dtype(np.int64))
    # OpenVINO: the index bound is the product of the dimensions from ``axis`` to the end
    # [OV-AXIS] ("When axis == 2, the values are in the range [0, H * W * D).").
    axis = spec.axis + len(shape) if spec.axis < 0 else spec.axis
    return IndexLayout("C", math.prod(shape[axis:]), np.dtype(INDEX_ELEMENT_TYPES[spec.index_element_type]))
