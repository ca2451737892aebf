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
