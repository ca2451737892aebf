"""tract (the Rust ONNX runtime, ``tract`` on PyPI) as a peer: the same MaxPool-22 /
AveragePool-22 models as the ONNX Runtime peer.

tract's Python binding loads models from a file only, so each packed model is written to a
private temporary folder, loaded, and the folder removed. :meth:`TractPeer.run_many` packs many
configurations into one model (one node, one input per configuration), and runnable models are
cached by their nodes, as for ONNX Runtime.

tract's errors are Rust ``anyhow`` errors, which capture a stack backtrace when
``RUST_BACKTRACE`` is set (many development machines and CI images set it): a refused model
then takes 60-100 ms instead of 1 ms to fail (measured: a bfloat16 MaxPool, tract 0.21), and
its message carries 3,000 characters of backtrace. :func:`_tract` turns the capture off with
``RUST_LIB_BACKTRACE=0`` (which ``anyhow`` reads before ``RUST_BACKTRACE``; panics keep theirs)
unless the user set that variable: the refusal is the same, its words are the runtime's.

tract has no bfloat16 at all: its ONNX loader answers ``Unknown DatumType Bfloat16`` for any
bfloat16 tensor, an Identity's input or a Cast's target as much as a pool's (tract 0.23.9). A
bfloat16 pool is therefore declined (:data:`MISSING_TYPES`), as an operator tract has not is: the
refusal says nothing about its pooling, and a reproducer could not show otherwise (the
float32-in, bfloat16-inside script fails on its first Cast).
"""

from __future__ import annotations

import os
import tempfile
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from poolcheck.peers.adapter import RuntimePeer, Translated
from poolcheck.peers.base import BatchItem, PeerDeclined, PeerOutput
from poolcheck.peers.family_onnx import FamilyNode, OnnxFamily, family_model
from poolcheck.peers.onnx_model import OnnxNode, build_model, onnx_outputs, to_onnx
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.poolspec import PoolSpec


def _tract() -> Any:
    """The ``tract`` module, with error backtraces off unless ``RUST_LIB_BACKTRACE`` says
    otherwise (set before tract's first error: Rust reads the variable once per process)."""
    os.environ.setdefault("RUST_LIB_BACKTRACE", "0")
    import tract

    return tract


#: Element types tract has no datum type for, and what its loader answers for any tensor of one.
MISSING_TYPES: dict[str, str] = {
    "bfloat16": "tract has no bfloat16 type (its ONNX loader answers 'Unknown DatumType Bfloat16' for any "
                "bfloat16 tensor, an Identity's as well as a pool's)",
}


class TractPeer(OnnxFamily, RuntimePeer):
    """tract through its Python binding: ``onnx().load`` -> ``into_model`` -> ``into_runnable``."""

    operator_conventions = ("onnx",)

    name = "tract"
    ref = "tract"
    module = "tract"
    install_hint = "pip install 'poolcheck[tract]'"
    family_missing = tuple((op, f"tract has no {kind} (its ONNX loader answers 'Unimplemented({kind})')")
                           for op, kind in (("lp", "LpPool"), ("unpool", "MaxUnpool")))

    def __init__(self, *, cache_size: int = 128, batch_limit: int = 32) -> None:
        self.cache_size = cache_size
        self.batch_limit = batch_limit
        self._runnables: OrderedDict[tuple[OnnxNode, ...], Any] = OrderedDict()

    def version(self) -> str | None:
        try:
            import tract
        except Exception:
            return None
        return str(tract.version())

    def element_types(self, op: str) -> tuple[str, ...]:
        """Its ONNX operators' types (:meth:`OnnxFamily.element_types`) but :data:`MISSING_TYPES`."""
        return tuple(t for t in super().element_types(op) if t not in MISSING_TYPES)

    def _check_type(self, dtype: np.dtype) -> None:
        missing = MISSING_TYPES.get(np.dtype(dtype).name)
        if missing is not None:
            raise PeerDeclined(self.name, missing)

    def translate(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> OnnxNode:
        self._check_type(dtype)
        return to_onnx(spec, shape, dtype, self.name)

    def translate_family(self, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> FamilyNode:
        self._check_type(dtype)
        return super().translate_family(spec, shape, dtype)

    def execute(self, group: Sequence[Translated], items: Sequence[BatchItem]) -> list[PeerOutput]:
        runnable = self._runnable(tuple(node for _, node, _ in group))
        raw = runnable.run([arr for _, _, arr in group])
        return onnx_outputs(group, items, [t.to_numpy() for t in raw])

    def _runnable(self, nodes: tuple[OnnxNode, ...]) -> Any:
        cached = self._runnables.get(nodes)
        if cached is not None:
            self._runnables.move_to_end(nodes)
            return cached
        tract = _tract()
        data = build_model(nodes).SerializeToString()
        with tempfile.TemporaryDirectory(prefix="poolcheck-tract-") as tmp:
            path = os.path.join(tmp, "model.onnx")
            with open(path, "wb") as fh:
                fh.write(data)
            runnable = tract.onnx().load(path).into_model().into_runnable()
        self._runnables[nodes] = runnable
        while len(self._runnables) > self.cache_size:
            self._runnables.popitem(last=False)
        return runnable

    def run_family_model(self, node: FamilyNode, feeds: dict[str, np.ndarray]) -> np.ndarray:
        def load(n: FamilyNode) -> Any:
            tract = _tract()
            with tempfile.TemporaryDirectory(prefix="poolcheck-tract-") as tmp:
                path = os.path.join(tmp, "model.onnx")
                with open(path, "wb") as fh:
                    fh.write(family_model(n).SerializeToString())
                return tract.onnx().load(path).into_model().into_runnable()

        runnable = self.family_cached(node, load)
        return runnable.run([feeds[k] for k in ("x", "i", "s") if k in feeds])[0].to_numpy()
