"""A user's own implementation as a peer.

A plugin module defines ``max_pool`` and/or ``avg_pool`` with the signatures of
:func:`poolcheck.max_pool` / :func:`poolcheck.avg_pool` (OpenVINO-shaped keywords)::

    def max_pool(x, kernel, strides, pads_begin, pads_end, dilations, rounding_type,
                 auto_pad, axis, index_element_type) -> (values, indices)
    def avg_pool(x, kernel, strides, pads_begin, pads_end, exclude_pad, rounding_type,
                 auto_pad) -> values

The rest of the family is opt-in the same way: a module that defines a function of the public
API's name takes that op (:data:`FAMILY_FUNCTIONS`), called with that function's keywords (the
configuration spelled by the op's newest catalogue row)::

    def onnx_lp_pool(x, kernel_shape, p, strides, pads, dilations, ceil_mode, auto_pad) -> values
    def onnx_global_average_pool(x) -> values
    def onnx_global_max_pool(x) -> values
    def onnx_global_lp_pool(x, p) -> values
    def onnx_max_unpool(x, indices, kernel_shape, strides, pads, output_shape) -> values
    def adaptive_avg_pool(x, output_shape) -> values
    def adaptive_max_pool(x, output_shape, index_element_type) -> (values, indices)

Optional module attributes: ``PEER_NAME`` (the name in reports), ``__version__``, and
``ELEMENT_TYPES``, the element types the functions take (e.g. ``("float32",)``; default every
type their operator allows): the peer declines the others, and ``poolcheck fuzz`` without
``--dtypes`` draws only types some peer of the campaign takes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from poolcheck.peers._convert import negative_same_pads
from poolcheck.peers.adapter import prepared_input
from poolcheck.peers.base import InvalidPeerOutput, PeerDeclined, PeerLoadError, PeerOutput
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.operators import ELEMENT_TYPES, allowed_dtypes, any_convention_dtypes, newest, spell
from poolcheck.spec.poolspec import PoolSpec

#: The family op each plugin function takes: the public API's names (``poolcheck.onnx_lp_pool``
#: ...), so a module may re-export poolcheck's own functions and change one.
FAMILY_FUNCTIONS: dict[str, str] = {
    "lp": "onnx_lp_pool", "global_avg": "onnx_global_average_pool", "global_max": "onnx_global_max_pool",
    "global_lp": "onnx_global_lp_pool", "unpool": "onnx_max_unpool", "adaptive_avg": "adaptive_avg_pool",
    "adaptive_max": "adaptive_max_pool",
}


class ModulePeer:
    """Wraps a plugin module's ``max_pool`` / ``avg_pool`` functions (and any family functions,
    :data:`FAMILY_FUNCTIONS`) as a :class:`Peer`."""

    def __init__(self, module: ModuleType, *, name: str, ref: str) -> None:
        self.module = module
        self.name = name
        self.ref = ref
        self._max: Callable[..., Any] | None = _function(module, "max_pool")
        self._avg: Callable[..., Any] | None = _function(module, "avg_pool")
        self._family: dict[str, Callable[..., Any]] = {
            op: fn for op, name in FAMILY_FUNCTIONS.items() if (fn := _function(module, name)) is not None}
        #: The family ops the module has a function for (see :class:`~poolcheck.peers.base.Peer`).
        self.family_ops: tuple[str, ...] = tuple(self._family)
        self._declared = _declared_types(module, ref)

    def element_types(self, op: str) -> tuple[str, ...]:
        """The types ``op``'s function takes: those of the operator its keywords mirror (MaxPool-14,
        AvgPool-14, a family op's newest row), within the module's ``ELEMENT_TYPES``; none when the
        module has no function for ``op``."""
        if op in self._family:
            allowed = any_convention_dtypes(op)
        elif (op == "max" and self._max is not None) or (op == "avg" and self._avg is not None):
            allowed = allowed_dtypes(op, "openvino")
        else:
            return ()
        return allowed if self._declared is None else tuple(d for d in allowed if d in self._declared)

    def _type_declined(self, op: str, function: str, operator: str, dtype: np.dtype) -> str | None:
        """Why ``function`` does not take ``dtype`` (:meth:`element_types`), or None."""
        name = np.dtype(dtype).name
        if name in self.element_types(op):
            return None
        if self._declared is not None and name not in self._declared:
            return f"{self.name} takes {', '.join(self._declared)} only (its ELEMENT_TYPES), not {name}"
        return f"{function} takes {operator}'s element types ({', '.join(self.element_types(op))}), not {name}"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def version(self) -> str | None:
        v = getattr(self.module, "__version__", None)
        return str(v) if v is not None else None

    def supports(self, spec: PoolSpec | FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        if isinstance(spec, FamilySpec):
            return self._supports_family(spec, dtype)
        if spec.op == "max" and self._max is None:
            return False, f"module {self.module.__name__} defines no max_pool"
        if spec.op == "avg" and self._avg is None:
            return False, f"module {self.module.__name__} defines no avg_pool"
        # The functions mirror poolcheck.max_pool / avg_pool (OpenVINO-14), which refuse an
        # ONNX-22 input type (bfloat16) that their vocabulary has no word for.
        why = self._type_declined(spec.op, f"{spec.op}_pool", "OpenVINO", dtype)
        if why:
            return False, why
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

    def run(self, spec: PoolSpec | FamilySpec, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        arr = np.asarray(x)
        if isinstance(spec, FamilySpec):
            return self._run_family(spec, arr, indices)
        return self.prepare(spec, arr.shape, arr.dtype).run(arr)

    # ------------------------------------------------------------------ the rest of the family

    def _supports_family(self, spec: FamilySpec, dtype: np.dtype) -> tuple[bool, str]:
        if spec.op not in self._family:
            return False, f"module {self.module.__name__} defines no {FAMILY_FUNCTIONS[spec.op]}"
        why = self._type_declined(spec.op, FAMILY_FUNCTIONS[spec.op], newest(spec.op, spec.convention).title, dtype)
        return (False, why) if why else (True, "")

    def _run_family(self, spec: FamilySpec, x: np.ndarray, indices: np.ndarray | None) -> PeerOutput:
        """The module's function for ``spec.op`` on ``x`` (MaxUnpool: and ``indices``), with the
        keywords of the public function of that name: the configuration spelled by the op's newest
        row (an older version's configuration means the same there)."""
        ok, why = self._supports_family(spec, x.dtype)
        if not ok:
            raise PeerDeclined(self.name, why)
        name = FAMILY_FUNCTIONS[spec.op]
        keywords = spell(spec, newest(spec.op, spec.convention).name)
        if spec.op == "unpool":
            result = self._family[spec.op](x, indices, **keywords)
        else:
            result = self._family[spec.op](x, **keywords)
        if spec.op != "adaptive_max":
            return PeerOutput(_array(name, result))
        if isinstance(result, (tuple, list)) and len(result) == 2:
            return PeerOutput(_array(name, result[0]), _array(f"{name} indices", result[1]))
        return PeerOutput(_array(name, result), None, [f"{name} returned no indices"])


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


def _declared_types(module: ModuleType, ref: str) -> tuple[str, ...] | None:
    """The module's ``ELEMENT_TYPES`` (None: not given), or :class:`PeerLoadError` when it is no
    list of element type names."""
    value = getattr(module, "ELEMENT_TYPES", None)
    if value is None:
        return None
    names = (value,) if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not names or any(n not in ELEMENT_TYPES for n in names):
        listed = isinstance(names, (list, tuple))
        bad = next((n for n in names if n not in ELEMENT_TYPES), None) if listed else value
        got = "an empty list" if listed and not names else repr(str(bad)[:40])
        raise PeerLoadError(f"peer {ref!r}: ELEMENT_TYPES must list some of "
                            f"{', '.join(ELEMENT_TYPES)}; got {got}")
    return tuple(d for d in ELEMENT_TYPES if d in names)


def _function(module: ModuleType, name: str) -> Callable[..., Any] | None:
    fn = getattr(module, name, None)
    return fn if callable(fn) else None


def _array(what: str, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype == object:
        raise InvalidPeerOutput(f"{what} returned {type(value).__name__} of dtype object, not a numeric array")
    return arr


def is_plugin_module(module: ModuleType) -> bool:
    """Whether ``module`` defines a callable ``max_pool``, ``avg_pool`` or a family function
    (:data:`FAMILY_FUNCTIONS`)."""
    return any(_function(module, name) is not None for name in ("max_pool", "avg_pool", *FAMILY_FUNCTIONS.values()))
