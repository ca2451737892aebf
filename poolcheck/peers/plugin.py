"""A user's own implementation as a peer.

A plugin module defines ``max_pool`` and/or ``avg_pool`` with the signatures of
:func:`poolcheck.max_pool` / :func:`poolcheck.avg_pool` (OpenVINO-shaped keywords)::

    def max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type,
                 auto_pad, axis, index_element_type) -> (values, indices)
    def avg_pool(x, kernel, strides, pads_begin, pads_end, exclude_pad, rounding_type,
                 auto_pad) -> values

Optional module attributes: ``PEER_NAME`` (the name in reports) and ``__version__``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from poolcheck.peers._convert import PeerDeclined, negative_same_pads
from poolcheck.peers.base import InvalidPeerOutput, PeerOutput
from poolcheck.spec.operators import spell
from poolcheck.spec.poolspec import PoolSpec


class ModulePeer:
    """Wraps a plugin module's ``max_pool`` / ``avg_pool`` functions as a :class:`Peer`."""

    def __init__(self, module: ModuleType, *, name: str, ref: str) -> None:
        self.module = module
        self.name = name
        self.ref = ref
        self._max: Callable[..., Any] | None = _function(module, "max_pool")
        self._avg: Callable[..., Any] | None = _function(module, "avg_pool")

    def available(self) -> tuple[bool, str]:
        return True, ""

    def version(self) -> str | None:
        v = getattr(self.module, "__version__", None)
        return str(v) if v is not None else None

    def supports(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        if spec.op == "max" and self._max is None:
            return False, f"module {self.module.__name__} defines no max_pool"
        if spec.op == "avg" and self._avg is None:
            return False, f"module {self.module.__name__} defines no avg_pool"
        if spec.convention == "onnx":
            why = negative_same_pads(spec, shape)
            if why:
                return False, why
            if spec.op == "max" and spec.storage_order:
                # max_pool's keywords have no storage_order: its indices are row-major.
                return False, "storage_order=1 (column-major indices) has no max_pool keyword"
            if spec.op == "avg" and any(d != 1 for d in spec.dilations):
                return False, f"avg_pool has no dilations keyword (dilations={list(spec.dilations)})"
        return True, ""

    def run(self, spec: PoolSpec, x: np.ndarray) -> PeerOutput:
        ok, why = self.supports(spec, tuple(np.shape(x)), np.asarray(x).dtype)
        if not ok:
            raise PeerDeclined(self.name, why)
        # The OpenVINO-shaped keywords, spelled by the catalogue (an ONNX spec by its meaning;
        # it reaches max_pool as axis 0, i64: exactly ONNX's flat indices).
        if spec.op == "avg":
            assert self._avg is not None
            values = self._avg(x, **spell(spec, "AvgPool-14"))
            return PeerOutput(_array("avg_pool", values))
        assert self._max is not None
        result = self._max(x, **spell(spec, "MaxPool-14"))
        if isinstance(result, (tuple, list)) and len(result) == 2:
            return PeerOutput(_array("max_pool", result[0]), _array("max_pool indices", result[1]))
        return PeerOutput(_array("max_pool", result), None, ["max_pool returned no indices"])


def _function(module: ModuleType, name: str) -> Callable[..., Any] | None:
    fn = getattr(module, name, None)
    return fn if callable(fn) else None


def _array(what: str, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype == object:
        raise InvalidPeerOutput(f"{what} returned {type(value).__name__} of dtype object, not a numeric array")
    return arr


def is_plugin_module(module: ModuleType) -> bool:
    """Whether ``module`` defines a callable ``max_pool`` or ``avg_pool``."""
    return _function(module, "max_pool") is not None or _function(module, "avg_pool") is not None
