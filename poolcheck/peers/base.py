"""The one small interface every peer (runtime adapter or user plugin) implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from poolcheck.spec.attributes import PoolSpec


@dataclass
class PeerOutput:
    """What a peer produced for one (spec, input): values, and indices when it has them."""

    values: np.ndarray
    indices: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)


@runtime_checkable
class Peer(Protocol):
    """A runtime (or a user's implementation) that poolcheck compares against its engines.

    - ``available()`` -> (True, "") or (False, why not), e.g. "openvino is not installed".
    - ``supports(spec, shape, dtype)`` -> (True, "") or (False, why the peer cannot express
      this configuration). A peer declines rather than silently computing something else.
    - ``run(spec, x)`` computes; raising means the peer rejects the configuration.
    - ``version()`` is the peer's version string, or None.
    """

    name: str

    def available(self) -> tuple[bool, str]: ...

    def version(self) -> str | None: ...

    def supports(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]: ...

    def run(self, spec: PoolSpec, x: np.ndarray) -> PeerOutput: ...


# --------------------------------------------------------------------------- results and batching

#: What became of one peer call. ``rejects``: the peer raised (it refuses the configuration);
#: ``crash``: the worker process died; ``timeout``: no answer in time; ``declined``: the peer
#: cannot express the configuration (``supports`` said no); ``unavailable``: not installed.
PEER_STATUSES: tuple[str, ...] = ("ok", "rejects", "crash", "timeout", "declined", "unavailable")

#: One item of a batched call: a configuration and its input.
BatchItem = tuple[PoolSpec, np.ndarray]


@dataclass
class PeerResult:
    """The outcome of one peer call; ``output`` is set only when ``status == "ok"``."""

    status: str
    output: PeerOutput | None = None
    message: str = ""

    @property
    def verdict(self) -> str:
        """``"ok"``, or the status with its message, e.g. ``"rejects: pads must be < kernel"``."""
        if self.status == "ok" or not self.message:
            return self.status
        return f"{self.status}: {self.message}"


@runtime_checkable
class BatchPeer(Peer, Protocol):
    """A peer that can compute several configurations in one go (one model, one session).

    ``run_many(items)`` returns, per item and in order, its :class:`PeerOutput` or the exception
    the peer raised for that item alone (one failing item never fails the others).
    """

    def run_many(self, items: list[BatchItem]) -> list[PeerOutput | Exception]: ...
