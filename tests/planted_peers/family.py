"""Planted-bug peers for the rest of the family (LpPool, global pooling, MaxUnpool, adaptive
pooling): poolcheck's public functions with one spec violation each, written here with NumPy
(not with the diagnosis' variant code they are meant to be named by). Each is a Peer class that
lists the family ops it takes (``family_ops``) and answers ``run(spec, x, indices=None)``.
``EXPECTED`` is the class the fuzzer should name; ``OPS`` the ``--ops`` that reach the bug.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

import poolcheck
from planted_peers.storage_order_ignored import EnginePeer
from poolcheck.api_family import run_family
from poolcheck.peers.base import PeerOutput
from poolcheck.spec.family import FAMILY_OPS, FamilySpec


class FamilyPeer(EnginePeer):
    """poolcheck's own family functions (no bug): the faithful control."""

    name = "planted-family-faithful"
    family_ops: tuple[str, ...] = FAMILY_OPS
    EXPECTED: tuple[str, ...] = ()
    OPS: tuple[str, ...] = FAMILY_OPS

    def supports(self, spec: Any, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        return True, ""

    def correct(self, spec: FamilySpec, x: np.ndarray, indices: np.ndarray | None) -> PeerOutput:
        values, where = run_family(spec, x, indices=indices)
        return PeerOutput(values, where)

    def run(self, spec: Any, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        return self.correct(spec, x, indices)


def _window_sums(spec: FamilySpec, x: np.ndarray) -> np.ndarray:
    """Per window, the sum of x (already raised to p) -- LpPool with p = 1 on it, in float64."""
    w = spec.window
    assert w is not None
    pads = None if w.auto_pad != "explicit" else [*w.pads_begin, *w.pads_end]
    auto = {"explicit": "NOTSET", "same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER", "valid": "VALID"}[w.auto_pad]
    return poolcheck.onnx_lp_pool(x.astype(np.float64), list(w.kernel), p=1, strides=list(w.strides), pads=pads,
                                  dilations=list(w.dilations), ceil_mode=int(w.rounding_type != "floor"),
                                  auto_pad=auto)


class LpNoRoot(FamilyPeer):
    """LpPool returns the sum of |x|^p: the 1/p-th root is never taken."""

    name = "planted-family-lp-no-root"
    family_ops = ("lp",)
    EXPECTED = ("lp:no-root",)
    OPS = ("lp",)

    def run(self, spec: Any, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        if spec.p == 1:
            return self.correct(spec, x, indices)
        with np.errstate(all="ignore"):
            return PeerOutput(_window_sums(spec, np.abs(x.astype(np.float64)) ** spec.p).astype(x.dtype))  # the bug


class LpNoAbs(FamilyPeer):
    """LpPool sums x^p, not |x|^p (an odd p keeps the sign), then takes the 1/p-th power (NaN for
    a negative sum, p > 1): torch's lp_pool formula."""

    name = "planted-family-lp-no-abs"
    family_ops = ("lp",)
    EXPECTED = ("lp:no-abs",)
    OPS = ("lp",)

    def run(self, spec: Any, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        wide = x.astype(np.float64)
        with np.errstate(all="ignore"):
            # the bug: x^p, sign kept (LpPool with p = 1 adds |.|: positive and negative parts apart)
            pos, neg = _window_sums(spec, np.maximum(wide, 0) ** spec.p), _window_sums(spec, np.maximum(-wide, 0) ** spec.p)
            s = pos - neg if spec.p % 2 else pos + neg  # an even p: x^p is |x|^p, the sum is the norm's
            return PeerOutput((s if spec.p == 1 else np.power(s, 1.0 / spec.p)).astype(x.dtype))


class GlobalMaxLastAxis(FamilyPeer):
    """GlobalMaxPool takes the maximum over the last axis only."""

    name = "planted-family-global-max-last-axis"
    family_ops = ("global_max",)
    EXPECTED = ("global:last-axis-only",)
    OPS = ("global_max",)

    def run(self, spec: Any, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        return PeerOutput(np.max(x, axis=-1, keepdims=True))  # the bug: one axis, not every spatial one


class AdaptiveEndFloor(FamilyPeer):
    """Adaptive average pooling ends bin j at floor((j + 1) * H / O) instead of ceil (an empty bin
    averages to NaN)."""

    name = "planted-family-adaptive-end-floor"
    family_ops = ("adaptive_avg",)
    EXPECTED = ("adaptive:end-floor",)
    OPS = ("adaptive_avg",)

    def run(self, spec: Any, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        outs = spec.output_shape
        edges = [[(j * h // o, (j + 1) * h // o) for j in range(o)] for h, o in zip(x.shape[2:], outs)]  # the bug
        out = np.zeros((*x.shape[:2], *outs), dtype=np.float64)
        with np.errstate(all="ignore"):
            for pos in itertools.product(*(range(o) for o in outs)):
                sl = tuple(slice(*edges[i][j]) for i, j in enumerate(pos))
                region = x[(slice(None), slice(None), *sl)].astype(np.float64).reshape(*x.shape[:2], -1)
                out[(slice(None), slice(None), *pos)] = region.sum(axis=2) / region.shape[2] if region.shape[2] \
                    else np.nan
        return PeerOutput(out.astype(x.dtype))


class UnpoolOutputShapeIgnored(FamilyPeer):
    """MaxUnpool ignores its output_shape input: the output takes the shape inferred from kernel,
    strides and pads, and writes past its end are dropped."""

    name = "planted-family-unpool-output-shape-ignored"
    family_ops = ("unpool",)
    EXPECTED = ("unpool:output-shape-ignored",)
    OPS = ("unpool",)

    def run(self, spec: Any, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        assert indices is not None and spec.window is not None
        w = spec.window
        shape = (*x.shape[:2], *((x.shape[2 + i] - 1) * w.strides[i] + w.kernel[i] - w.pads_begin[i] - w.pads_end[i]
                                 for i in range(w.spatial_rank)))  # the bug: output_shape never read
        out = np.zeros(math.prod(shape), dtype=x.dtype)
        keep = indices.reshape(-1) < out.size
        out[indices.reshape(-1)[keep]] = x.reshape(-1)[keep]
        return PeerOutput(out.reshape(shape))


class UnpoolOutputShapeIgnoredRefusing(UnpoolOutputShapeIgnored):
    """The same misreading, with a bounds check: an index past the end of the output it sized
    without output_shape is refused, as a runtime checking its indices does (one bug, which
    shows as a refusal or as values)."""

    name = "planted-family-unpool-output-shape-ignored-refusing"

    def run(self, spec: Any, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        out = super().run(spec, x, indices=indices)
        assert indices is not None
        if indices.size and int(indices.max()) >= np.asarray(out.values).size:
            raise ValueError(f"index {int(indices.max())} out of bounds for an output of "
                             f"{np.asarray(out.values).size} elements")
        return out


PLANTED_FAMILY: tuple[type[FamilyPeer], ...] = (LpNoRoot, LpNoAbs, GlobalMaxLastAxis, AdaptiveEndFloor,
                                                UnpoolOutputShapeIgnored, UnpoolOutputShapeIgnoredRefusing)
