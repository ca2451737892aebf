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

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from poolcheck.peers._convert import negative_same_pads
from poolcheck.peers.adapter import prepared_input
from poolcheck.peers.base import InvalidPeerOutput, PeerDeclined, PeerOutput
from poolcheck.spec.operators import allowed_dtypes, spell
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
        allowed = allowed_dtypes(spec.op, "openvino")
        if np.dtype(dtype).name not in allowed:
            # The functions mirror poolcheck.max_pool / avg_pool (OpenVINO-14), which refuse it:
            # an ONNX-22 input type (bfloat16) that their vocabulary has no word for.
            return False, f"{spec.op}_pool takes OpenVINO's element types ({', '.join(allowed)}), not {np.dtype(dtype).name}"
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

    def prepare(self, spec: PoolSpec, shape: Sequence[int], dtype: Any, *, indices: bool = True) -> PreparedPluginConfig:
        """Make ``spec`` ready once for inputs of ``shape``/``dtype``, as a runtime peer's
        :meth:`~poolcheck.peers.adapter.RuntimePeer.prepare` does: the keywords are spelled once
        and the session calls the plugin's function on each input. Raises :class:`PeerDeclined`
        when the plugin cannot express ``spec``."""
        shape = tuple(int(v) for v in shape)
        dt = np.dtype(dtype)
        ok, why = self.supports(spec, shape, dt)
        if not ok:
            raise PeerDeclined(self.name, why)
        # The OpenVINO-shaped keywords, spelled by the catalogue (an ONNX spec by its meaning;
        # it reaches max_pool as axis 0, i64: exactly ONNX's flat indices).
        fn = self._avg if spec.op == "avg" else self._max
        assert fn is not None
        keywords = spell(spec, "AvgPool-14" if spec.op == "avg" else "MaxPool-14")
        return PreparedPluginConfig(self, spec, shape, dt, fn, keywords, indices)

    def run(self, spec: PoolSpec, x: np.ndarray) -> PeerOutput:
        arr = np.asarray(x)
        return self.prepare(spec, arr.shape, arr.dtype).run(arr)


class PreparedPluginConfig:
    """One configuration of a plugin, ready for inputs of one shape and element type: the same
    interface as a runtime peer's :class:`~poolcheck.peers.adapter.PreparedConfig`."""

    def __init__(self, peer: ModulePeer, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype,
                 function: Callable[..., Any], keywords: dict[str, Any], indices: bool) -> None:
        self.peer, self.spec, self.shape, self.dtype = peer, spec, shape, dtype
        self.function, self.keywords, self.indices = function, keywords, indices

    def _input(self, x: np.ndarray) -> np.ndarray:
        return prepared_input(self.peer.name, self.shape, self.dtype, x)

    def run(self, x: np.ndarray) -> PeerOutput:
        """The plugin's output for ``x``."""
        result = self.function(self._input(x), **self.keywords)
        if self.spec.op == "avg":
            return PeerOutput(_array("avg_pool", result))
        if isinstance(result, (tuple, list)) and len(result) == 2:
            indices = _array("max_pool indices", result[1]) if self.indices else None
            return PeerOutput(_array("max_pool", result[0]), indices)
        notes = ["max_pool returned no indices"] if self.indices else []
        return PeerOutput(_array("max_pool", result), None, notes)

    def bind(self, x: np.ndarray) -> Callable[[], object]:
        """The plugin's own call on ``x`` (what a benchmark times)."""
        arr = self._input(x)
        return lambda: self.function(arr, **self.keywords)


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
