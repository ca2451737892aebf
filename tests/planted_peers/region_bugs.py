"""Planted bugs that only one spec region shows: proof that the fuzzer reaches each region.

:class:`RegionBug` is poolcheck's engine with one bug, triggered by a condition written here from
the texts over the loop oracle's axes (tests/oracle.py), sharing no code with
:mod:`poolcheck.spec.regions`. Most bugs nudge the first output element; two are real kernel bugs
worth finding on every seed: a generic path for kernels of 5 and more that drops each window's
last tap (:data:`LARGE_KERNEL_TAP_DROP`), and a single-window average of many taps that drops the
last one (:data:`SINGLE_WINDOW_AVG`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import oracle

from planted_peers.storage_order_ignored import EnginePeer
from poolcheck.api import run_spec
from poolcheck.peers.base import PeerOutput
from poolcheck.spec.attributes import PoolSpec

LARGE_KERNEL_TAP_DROP = "large-kernel-tap-drop"
SINGLE_WINDOW_AVG = "single-window-avg-tap-drop"


def axes_of(spec: PoolSpec, shape: tuple[int, ...]) -> list[oracle.Axis]:
    spatial = shape[2:]
    if spec.convention == "onnx":
        pad = {"explicit": "NOTSET", "valid": "VALID", "same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER"}
        return oracle.onnx_axes(spatial, spec.kernel, spec.strides, (*spec.pads_begin, *spec.pads_end),
                                spec.dilations, spec.ceil_mode, pad[spec.auto_pad])
    return oracle.openvino_axes(spatial, spec.kernel, spec.strides, spec.pads_begin, spec.pads_end, spec.dilations,
                                spec.rounding_type, spec.auto_pad)


def _windows_inside(axes: list[oracle.Axis]) -> list[list[list[bool]]]:
    return [[[0 <= t < ax.size for t in ax.window(o)] for o in range(ax.out)] for ax in axes]


def _some_axis_window(axes: list[oracle.Axis], test: Callable[[oracle.Axis, list[bool]], bool]) -> bool:
    return any(test(ax, ins) for ax, wins in zip(axes, _windows_inside(axes)) for ins in wins)


def _dk(ax: oracle.Axis) -> int:
    return (ax.kernel - 1) * ax.dilation + 1


def _same(spec: PoolSpec) -> bool:
    return spec.auto_pad.startswith("same")


def _values(x: np.ndarray, test: Callable[[np.ndarray], np.ndarray]) -> bool:
    return x.dtype.kind == "f" and bool(test(x).any())


Trigger = Callable[[PoolSpec, np.ndarray, list[oracle.Axis]], bool]

TRIGGERS: dict[str, Trigger] = {
    "ceil-drop": lambda s, x, axes: s.rounding_type == "ceil_torch" and not _same(s) and not (
        s.convention == "onnx" and s.auto_pad == "valid") and any(
        -(-(ax.size + ax.pad_begin + ax.pad_end - _dk(ax)) // ax.stride) + 1 > ax.out for ax in axes),
    "ceil-overhang": lambda s, x, axes: any(
        (ax.out - 1) * ax.stride - ax.pad_begin + _dk(ax) > ax.size + ax.pad_end for ax in axes),
    "window-in-padding": lambda s, x, axes: _some_axis_window(axes, lambda ax, ins: not any(ins)),
    "avg-partial-window": lambda s, x, axes: s.op == "avg" and _some_axis_window(
        axes, lambda ax, ins: any(ins) and not all(ins)),
    "same-odd-split": lambda s, x, axes: _same(s) and any((ax.pad_begin + ax.pad_end) % 2 for ax in axes),
    "same-negative-total": lambda s, x, axes: _same(s) and any(ax.pad_begin + ax.pad_end < 0 for ax in axes),
    "pads-ge-kernel": lambda s, x, axes: s.auto_pad == "explicit" and any(
        max(ax.pad_begin, ax.pad_end) >= _dk(ax) for ax in axes),
    "dilated-crosses-padding": lambda s, x, axes: _some_axis_window(
        axes, lambda ax, ins: ax.dilation > 1 and any(ins) and not all(ins)),
    "large-kernel": lambda s, x, axes: max(s.kernel) >= 5,
    "global-window": lambda s, x, axes: any(
        ax.size > 1 and ax.out == 1 and _dk(ax) >= ax.size + ax.pad_begin + ax.pad_end for ax in axes),
    "long-axis": lambda s, x, axes: max(x.shape[2:]) >= 32,
    "stride-above-kernel": lambda s, x, axes: any(ax.stride > _dk(ax) for ax in axes),
    "dilation-4": lambda s, x, axes: max(s.dilations) >= 4,
    "batch-and-channels": lambda s, x, axes: x.shape[0] > 1 and x.shape[1] > 1,
    "rank-5": lambda s, x, axes: x.ndim == 5,
    "nan-in-window": lambda s, x, axes: _values(x, np.isnan),
    "inf-in-window": lambda s, x, axes: _values(x, np.isinf),
    "neg-zero-in-window": lambda s, x, axes: _values(x, lambda a: (a == 0) & np.signbit(a)),
    "int-extreme": lambda s, x, axes: x.dtype.kind in "iu" and bool(
        ((x == np.iinfo(x.dtype).min) | (x == np.iinfo(x.dtype).max)).any()),
    "index-i32": lambda s, x, axes: s.op == "max" and s.convention == "openvino" and s.index_element_type == "i32",
    "index-storage-order-1": lambda s, x, axes: s.op == "max" and s.storage_order == 1,
    "index-axis-0": lambda s, x, axes: s.op == "max" and s.convention == "openvino" and s.axis == 0,
    "index-axis-1": lambda s, x, axes: s.op == "max" and s.convention == "openvino" and s.axis in (1, 1 - x.ndim),
    "index-axis-2": lambda s, x, axes: s.op == "max" and s.convention == "openvino" and s.axis in (2, 2 - x.ndim),
    "index-axis-negative": lambda s, x, axes: s.op == "max" and s.convention == "openvino" and s.axis < 0,
}


def _nudge(values: np.ndarray) -> np.ndarray:
    out = values.copy()
    flat = out.reshape(-1)
    v = flat[0]
    if out.dtype.kind == "f":
        flat[0] = 0.0 if not np.isfinite(v) else v + 1
    else:
        flat[0] = v - 1 if v == np.iinfo(out.dtype).max else v + 1
    return out


def _tap_dropped(spec: PoolSpec, axes: list[oracle.Axis], which: list[int]) -> PoolSpec | None:
    """``spec`` with each window's last tap dropped on the axes ``which`` (explicit pads kept equal
    to the ones applied; the pad after the shortened window keeps every window's start)."""
    if any(ax.pad_begin < 0 or ax.pad_end < 0 for ax in axes):
        return None
    kernel, pe = list(spec.kernel), [ax.pad_end for ax in axes]
    for i in which:
        kernel[i] -= 1
        pe[i] += spec.dilations[i]
    # The window count is unchanged: the padded length grows by what the kernel loses. SAME's
    # pads make the floor rule give its count exactly.
    rounding = "floor" if _same(spec) else spec.applied_rounding
    return spec.replace(kernel=tuple(kernel), pads_begin=tuple(ax.pad_begin for ax in axes), pads_end=tuple(pe),
                        auto_pad="explicit", rounding_type=rounding)


class RegionBug(EnginePeer):
    """poolcheck's engine, wrong only where :data:`TRIGGERS` ``[region]`` holds (or one of the
    two tap-dropping kernel bugs)."""

    def __init__(self, region: str | None) -> None:
        self.region = region  # None: the faithful control, the same wrapper without a bug
        self.name = f"planted-{region or 'faithful'}"

    def run(self, spec: PoolSpec, x: np.ndarray) -> PeerOutput:
        values, indices = run_spec(spec, x)
        axes = axes_of(spec, x.shape)
        if self.region == LARGE_KERNEL_TAP_DROP:
            which = [i for i, k in enumerate(spec.kernel) if k >= 5]
            buggy = _tap_dropped(spec, axes, which) if which else None
            if buggy is not None:
                values, indices = self._windows_kept(buggy, x, values, indices)
        elif self.region == SINGLE_WINDOW_AVG:
            taps = int(np.prod(spec.kernel))
            if spec.op == "avg" and all(ax.out == 1 for ax in axes) and taps >= 16:
                buggy = _tap_dropped(spec, axes, [spec.spatial_rank - 1])
                if buggy is not None:
                    values, indices = self._windows_kept(buggy, x, values, indices)
        elif self.region is not None and TRIGGERS[self.region](spec, x, axes):
            values = _nudge(values)
        return PeerOutput(values, indices)

    @staticmethod
    def _windows_kept(buggy: PoolSpec, x: np.ndarray, values: np.ndarray, indices: np.ndarray | None
                      ) -> tuple[np.ndarray, np.ndarray | None]:
        """The buggy kernel's outputs over the windows the real rule keeps (same output shape)."""
        try:
            v, i = run_spec(buggy, x)
        except ValueError:
            return values, indices
        cut = tuple(slice(0, n) for n in values.shape)
        if any(a < b for a, b in zip(v.shape, values.shape)):
            return values, indices
        return v[cut], (i[cut] if i is not None and indices is not None else indices)
