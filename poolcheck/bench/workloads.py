"""The named benchmark workloads W1-W6: common pooling layers at realistic sizes; and F1-F3, the
rest of the family (LpPool, GlobalAveragePool, AdaptiveAvgPool), timed when named
(``--workloads F1,F2,F3``). MaxUnpool has none: its second input (the indices) is no part of a
workload's one input."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from poolcheck import spec as S
from poolcheck.errors import AttributeValueError
from poolcheck.spec.family import FamilySpec, family_output_shape
from poolcheck.spec.operators import parse


@dataclass(frozen=True)
class Workload:
    """One pooling layer on one float32 input shape; ``with_indices`` asks for int64 indices
    (flattened over the whole tensor, as ONNX MaxPool's ``Indices`` and OpenVINO ``axis=0``)."""

    name: str
    title: str
    spec: S.PoolSpec | FamilySpec
    shape: tuple[int, ...]
    with_indices: bool = False

    @property
    def geometry(self) -> S.Geometry:
        """The pooling geometry (MaxPool/AveragePool workloads only)."""
        assert isinstance(self.spec, S.PoolSpec), "a family workload has no pooling geometry"
        return S.resolve(self.spec, self.shape)

    @property
    def output_shape(self) -> tuple[int, ...]:
        if isinstance(self.spec, FamilySpec):
            return family_output_shape(self.spec, self.shape)
        return self.geometry.output_shape

    @property
    def input_bytes(self) -> int:
        return 4 * math.prod(self.shape)

    @property
    def output_bytes(self) -> int:
        """Bytes of every output: float32 values, and int64 indices when asked for."""
        count = math.prod(self.output_shape)
        return count * (4 + (8 if self.with_indices else 0))

    @property
    def bytes_moved(self) -> int:
        """What any implementation must move at least: the input once, every output once."""
        return self.input_bytes + self.output_bytes

    @property
    def window_size(self) -> int:
        assert isinstance(self.spec, S.PoolSpec)
        return math.prod(self.spec.kernel)

    def make_input(self, seed: int = 0) -> np.ndarray:
        """Standard-normal float32 values (no NaN: runtimes legitimately differ on NaN)."""
        return np.random.default_rng(seed).standard_normal(self.shape, dtype=np.float32)


WORKLOADS: tuple[Workload, ...] = (
    Workload("W1", "MaxPool2D 1x64x112x112 k3 s2 p1", S.openvino_max_pool([3, 3], [2, 2], [1, 1], [1, 1]),
             (1, 64, 112, 112)),
    Workload("W1i", "MaxPool2D 1x64x112x112 k3 s2 p1 + int64 indices",
             S.openvino_max_pool([3, 3], [2, 2], [1, 1], [1, 1]), (1, 64, 112, 112), with_indices=True),
    Workload("W2", "AvgPool2D 1x2048x7x7 k7 s1 (global)", S.openvino_avg_pool([7, 7], [1, 1]), (1, 2048, 7, 7)),
    Workload("W3", "AvgPool2D 8x32x56x56 k3 s1 p1 exclude pads",
             S.openvino_avg_pool([3, 3], [1, 1], [1, 1], [1, 1], exclude_pad=True), (8, 32, 56, 56)),
    Workload("W4", "MaxPool3D 1x32x32x64x64 k2 s2", S.openvino_max_pool([2, 2, 2], [2, 2, 2]), (1, 32, 32, 64, 64)),
    Workload("W5", "MaxPool1D 8x64x4096 k4 s4", S.openvino_max_pool([4], [4]), (8, 64, 4096)),
    Workload("W6", "MaxPool2D 1x64x112x112 k3 d2 s1 p2",
             S.openvino_max_pool([3, 3], [1, 1], [2, 2], [2, 2], [2, 2]), (1, 64, 112, 112)),
)

#: The rest of the family, timed when named (not in the default set, whose targets are W1-W6).
FAMILY_WORKLOADS: tuple[Workload, ...] = (
    Workload("F1", "LpPool2D p2 1x64x56x56 k3 s2", parse("LpPool-22", {"kernel_shape": [3, 3], "strides": [2, 2]}),
             (1, 64, 56, 56)),
    Workload("F2", "GlobalAveragePool 1x2048x7x7", parse("GlobalAveragePool-22", {}), (1, 2048, 7, 7)),
    Workload("F3", "AdaptiveAvgPool2D 1x512x14x14 to 7x7", parse("AdaptiveAvgPool-8", {"output_shape": [7, 7]}),
             (1, 512, 14, 14)),
)

BY_NAME: dict[str, Workload] = {w.name: w for w in WORKLOADS + FAMILY_WORKLOADS}


def select(names: list[str] | None) -> list[Workload]:
    """The workloads named (case-insensitive), in the order given; W1-W6 for None."""
    if not names:
        return list(WORKLOADS)
    upper = {k.upper(): v for k, v in BY_NAME.items()}
    chosen: list[Workload] = []
    for name in names:
        w = upper.get(name.strip().upper())
        if w is None:
            raise AttributeValueError("workloads", f"unknown workload {name!r}; known: {', '.join(BY_NAME)}")
        if w not in chosen:
            chosen.append(w)
    return chosen
