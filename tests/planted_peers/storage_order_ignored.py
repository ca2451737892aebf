"""Planted bug: ONNX ``storage_order=1`` ignored, indices always row-major.

``storage_order`` is an ONNX attribute the plugin signatures (OpenVINO-shaped) cannot carry, so
this peer implements the Peer interface itself: a class, handed to the fuzzer as an object.
"""

from __future__ import annotations

import numpy as np

from poolcheck.api import run_spec
from poolcheck.peers.base import PeerOutput
from poolcheck.spec.attributes import PoolSpec, check_input


class EnginePeer:
    """The Peer plumbing of a class-based planted peer: always available, version "planted",
    supports what the operator allows. Subclasses write ``run`` (with their one bug)."""

    name = "planted-engine"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def version(self) -> str | None:
        return "planted"

    def supports(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        try:
            check_input(spec, shape, dtype)
        except ValueError as exc:
            return False, str(exc)
        return True, ""


class StorageOrderIgnored(EnginePeer):
    """poolcheck's engine, except that column-major indices are reported row-major."""

    name = "planted-storage-order-ignored"

    def run(self, spec: PoolSpec, x: np.ndarray) -> PeerOutput:
        if spec.storage_order:
            spec = spec.replace(storage_order=0)  # the bug
        values, indices = run_spec(spec, x)
        return PeerOutput(values, indices)
