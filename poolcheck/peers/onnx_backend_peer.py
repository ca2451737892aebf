"""Any implementation of the ONNX backend API as a peer: ``--peers onnx-backend:MODULE``.

The ONNX backend API (``onnx.backend.base``) is ``Backend.prepare(model, device) -> BackendRep``
and ``BackendRep.run(inputs) -> outputs``. MODULE is a module that exposes ``prepare`` (and
optionally ``supports_device``) at its top level, as ``onnxruntime.backend`` does, or a module
holding one subclass of ``onnx.backend.base.Backend``. The peer feeds it the same MaxPool-22 /
AveragePool-22 models as the ONNX Runtime peer (:mod:`poolcheck.peers.onnx_model`), several
configurations packed into one model.

MODULE is loaded the way plugins are (:mod:`poolcheck.peers.registry`): first in a throw-away
worker under the load time limit, so a module that exits, crashes or hangs while importing is
recorded as that peer's ``crash``/``timeout``; a module that does not exist or is no backend is
a usage error.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from poolcheck.errors import PoolcheckError
from poolcheck.peers.adapter import RuntimePeer, Translated
from poolcheck.peers.base import BatchItem, PeerOption, PeerOutput
from poolcheck.peers.family_onnx import FamilyNode, OnnxFamily, family_model
from poolcheck.peers.onnx_model import OnnxNode, build_model, onnx_outputs, to_onnx
from poolcheck.spec.poolspec import PoolSpec


class NotAnOnnxBackend(PoolcheckError, TypeError):
    """The module named in ``onnx-backend:MODULE`` implements no ONNX backend API."""


def find_backend(module: Any) -> Any:
    """The object carrying ``prepare`` in ``module``: the module itself, or its one
    ``onnx.backend.base.Backend`` subclass. Raises :class:`NotAnOnnxBackend` when there is none."""
    if callable(getattr(module, "prepare", None)):
        return module
    from onnx.backend.base import Backend

    found = [obj for _, obj in inspect.getmembers(module, inspect.isclass)
             if issubclass(obj, Backend) and obj is not Backend and obj.__module__ == module.__name__]
    if len(found) == 1:
        return found[0]
    raise NotAnOnnxBackend(f"module {module.__name__} is not an ONNX backend: it has no prepare() and "
                           f"{'several' if found else 'no'} onnx.backend.base.Backend subclasses")


class OnnxBackendPeer(OnnxFamily, RuntimePeer):
    """An ONNX backend module (``prepare(model, device).run(inputs)``) on single-node models."""

    operator_conventions = ("onnx",)

    accepted_options = (
        PeerOption("device", "CPU", "device passed to prepare(); one the backend does not support declines everything",
                   examples=("CPU", "CUDA")),
    )

    #: Any backend module: nothing is known about how it repeats itself.
    repeatable = False

    def __init__(self, module: str, *, cache_size: int = 128, batch_limit: int = 32) -> None:
        self.module = module
        self.name = self.ref = f"onnx-backend:{module}"
        self.install_hint = f"the module named in onnx-backend:{module}"
        self.cache_size = cache_size
        self.batch_limit = batch_limit
        self.options: dict[str, str] = {}
        self._reps: OrderedDict[tuple[OnnxNode, ...], Any] = OrderedDict()
        self._backend: Any = None

    def load(self) -> None:
        """Import the module and find its backend now: raises whatever importing it raises, or
        :class:`NotAnOnnxBackend`. The registry calls this in a throw-away worker first, so a
        module that exits, crashes or hangs while loading never takes poolcheck with it."""
        self._get_backend()

    def available(self) -> tuple[bool, str]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # backends import old onnx names
            ok, why = super().available()
        if not ok:
            return ok, why
        try:
            self._get_backend()
        except NotAnOnnxBackend as exc:
            return False, str(exc)
        return True, ""

    def version(self) -> str | None:
        try:
            mod = importlib.import_module(self.module)
        except Exception:
            return None
        own = getattr(mod, "__version__", None)
        return str(own) if own is not None else super().version()

    def configure(self, options: dict[str, str]) -> None:
        super().configure(options)
        self._reps.clear()

    def unusable(self) -> str | None:
        backend = self._get_backend()
        supports_device = getattr(backend, "supports_device", None)
        device = self.option("device")
        if callable(supports_device) and not supports_device(device):
            return f"backend {self.module} does not support device {device} here"
        return None

    def translate(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> OnnxNode:
        return to_onnx(spec, shape, dtype, self.name)

    def execute(self, group: Sequence[Translated], items: Sequence[BatchItem]) -> list[PeerOutput]:
        rep = self._rep(tuple(node for _, node, _ in group))
        raw = rep.run([arr for _, _, arr in group])
        return onnx_outputs(group, items, [np.asarray(r) for r in raw])

    # ------------------------------------------------------------------ internals

    def _get_backend(self) -> Any:
        if self._backend is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                self._backend = find_backend(importlib.import_module(self.module))
        return self._backend

    def _rep(self, nodes: tuple[OnnxNode, ...]) -> Any:
        rep = self._reps.get(nodes)
        if rep is not None:
            self._reps.move_to_end(nodes)
            return rep
        rep = self._get_backend().prepare(build_model(nodes, output_ranks=True), self.option("device"))
        self._reps[nodes] = rep
        while len(self._reps) > self.cache_size:
            self._reps.popitem(last=False)
        return rep

    def run_family_model(self, node: FamilyNode, feeds: dict[str, np.ndarray]) -> np.ndarray:
        rep = self.family_cached(node, lambda n: self._get_backend().prepare(family_model(n, output_rank=True),
                                                                             self.option("device")))
        return np.asarray(rep.run([feeds[k] for k in ("x", "i", "s") if k in feeds])[0])
