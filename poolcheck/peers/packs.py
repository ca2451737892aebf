"""Which packed model already holds a configuration: the models a runtime adapter compiled stay
in its cache, and each of their nodes can serve later inputs.

:meth:`poolcheck.peers.adapter.RuntimePeer.run_many` packs the configurations of one call into
one model (one input and its own outputs per configuration), so a batch pays for one session,
compile or export. The fuzzer, though, asks for the same node (operator, attributes, input shape
and type) again and again with other inputs -- about four configurations in five in a fuzz run
against ONNX Runtime -- and a pack's key is its whole node tuple, which never repeats. A
:class:`PackIndex` remembers, for each node of each pack that ran, the pack and the position:
a later item with that node runs through the cached pack, its input at that position and a zero
input of the right shape at every other one. The nodes of a pack are independent (no edge between
them), so what one node computes does not depend on what the others are fed; a pack that fails
on reuse is never trusted for its answer (the items go through the ordinary path, which compiles
and bisects), so a verdict never depends on this cache. The index also remembers the nodes the
runtime refused on their own: asked again, they get the same error without failing a pack.

A refusal usually follows a node's *kind* (:func:`kind_of`: its element type and operator, with
or without indices), not the node: ONNX Runtime refuses every bfloat16 pool at session creation, OpenVINO's CPU
plugin every bfloat16 MaxPool with indices. A new node of a kind the runtime refused before
would fail its whole pack again (a bisection: two compiles per halving, or a recompile of the
rest where the error names the node). :meth:`PackIndex.placement` therefore sends it to run
alone (a kind that never ran) or in a pack of its own kind (one that also ran), so the other
nodes' pack compiles once. Where a node runs changes no answer: every answer still comes from a
model that ran and every error from the node run alone.
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from poolcheck.spec.poolspec import PoolSpec


@dataclass(frozen=True)
class Slot:
    """One node's place in a packed model: the pack's node tuple, the position, and a spec and
    input shape/type a filler input for that position is made from."""

    pack: tuple[Hashable, ...]
    position: int
    spec: PoolSpec
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass
class Reuse:
    """One run of a cached pack (``pack``): ``group`` (local item index, node, input) for every position,
    over ``items`` (the caller's items first, then fillers); ``asked`` maps each local index
    that answers a caller's item to that item's index."""

    pack: tuple[Hashable, ...]
    group: list[tuple[int, Any, np.ndarray]]
    items: list[tuple[PoolSpec, np.ndarray]]
    asked: dict[int, int]


def kind_of(node: Hashable) -> Hashable:
    """What a runtime's refusals of ``node`` most often follow: the adapter's node class, the
    element type, the operator and whether indices are asked for (the attributes the built-in
    nodes share; a node without them is a kind of its own class)."""
    return (type(node).__name__, str(getattr(node, "dtype", "")), getattr(node, "op", None) or
            getattr(node, "op_type", None), getattr(node, "with_indices", None))


#: Where :meth:`PackIndex.placement` runs a new node: ``pack`` (with the others), ``apart`` (in a
#: pack of its kind: one the runtime refused at least as often as it ran), ``alone`` (a kind it
#: refused and never ran). A kind refused now and then (OpenVINO's exclude-pad AvgPool whose
#: kernel does not exceed its pads) stays in the pack: a model of its own would cost a compile
#: on every call, a rare refusal one recompile now and then.
Where = Literal["pack", "apart", "alone"]


class PackIndex:
    """Node -> :class:`Slot` for the most recent ``capacity`` packs (kept below the adapter's own
    cache size, so a pack found here is almost always still compiled there; when it is not, the
    adapter compiles it again -- slower, never different)."""

    def __init__(self, capacity: int, refusals: int = 4096) -> None:
        self.capacity = max(1, capacity)
        self._packs: OrderedDict[tuple[Hashable, ...], list[Slot]] = OrderedDict()
        self._slots: dict[Hashable, Slot] = {}
        #: Nodes the runtime refused on their own, with its error: a later item with that node gets
        #: the same error instead of failing a pack (which costs a bisection: two compiles per
        #: halving). A repeatable peer refuses a node whatever the input values.
        self._refused: OrderedDict[Hashable, Exception] = OrderedDict()
        self._refusals = refusals
        #: Per kind (:func:`kind_of`): nodes refused alone, and nodes in packs that ran.
        self._kinds_refused: Counter[Hashable] = Counter()
        self._kinds_ran: Counter[Hashable] = Counter()

    def refused(self, node: Hashable, exc: Exception) -> None:
        """The runtime refused ``node`` alone with ``exc``."""
        if node not in self._refused:
            self._kinds_refused[kind_of(node)] += 1
        self._refused[node] = exc
        while len(self._refused) > self._refusals:
            self._refused.popitem(last=False)

    def placement(self, node: Hashable) -> Where:
        """Where a new ``node`` runs best: ``alone`` when the runtime refused nodes of its kind and
        never ran one, ``apart`` (in a pack of such nodes) when it refused at least as many as it
        ran, else ``pack``. Only the cost depends on it."""
        kind = kind_of(node)
        refused = self._kinds_refused.get(kind, 0)
        if not refused:
            return "pack"
        ran = self._kinds_ran.get(kind, 0)
        if not ran:
            return "alone"
        return "apart" if refused >= ran else "pack"

    def refusal(self, node: Hashable) -> Exception | None:
        """The error the runtime gave for ``node`` alone, if it did."""
        return self._refused.get(node)

    def __len__(self) -> int:
        return len(self._packs)

    def register(self, nodes: Sequence[Hashable], specs: Sequence[PoolSpec], arrays: Sequence[np.ndarray]) -> None:
        """A pack of ``nodes`` (built for ``specs`` on inputs like ``arrays``) ran: its nodes can
        serve later items."""
        pack = tuple(nodes)
        if pack in self._packs:
            self._packs.move_to_end(pack)
            return
        self._kinds_ran.update(kind_of(node) for node in pack)
        slots = [Slot(pack, k, spec, tuple(arr.shape), arr.dtype) for k, (spec, arr) in enumerate(zip(specs, arrays))]
        self._packs[pack] = slots
        for node, slot in zip(pack, slots):
            self._slots.setdefault(node, slot)
        while len(self._packs) > self.capacity:
            _, gone = self._packs.popitem(last=False)
            for node, slot in zip(gone[0].pack, gone):
                if self._slots.get(node) is slot:
                    del self._slots[node]

    def forget(self, pack: tuple[Hashable, ...]) -> None:
        """Stop serving from ``pack`` (it failed when reused)."""
        slots = self._packs.pop(pack, None) or []
        for node, slot in zip(pack, slots):
            if self._slots.get(node) is slot:
                del self._slots[node]

    def plan(self, todo: Sequence[tuple[int, Hashable, np.ndarray]],
             items: Sequence[tuple[PoolSpec, np.ndarray]]) -> tuple[list[Reuse], list[tuple[int, Hashable, np.ndarray]]]:
        """Split ``todo`` (item index, node, input) into runs of cached packs and the rest (to be
        packed and compiled). One run per pack serves one item per position: several inputs for
        the same node take several runs of the same pack."""
        runs: dict[tuple[Hashable, ...], list[dict[int, tuple[int, np.ndarray]]]] = {}
        rest = []
        for i, node, arr in todo:
            slot = self._slots.get(node)
            if slot is None or slot.shape != arr.shape or slot.dtype != arr.dtype:
                rest.append((i, node, arr))
                continue
            rounds = runs.setdefault(slot.pack, [])
            free = next((r for r in rounds if slot.position not in r), None)
            if free is None:
                free = {}
                rounds.append(free)
            free[slot.position] = (i, arr)
        reuses = []
        for pack, rounds in runs.items():
            self._packs.move_to_end(pack)
            slots = self._packs[pack]
            for asked_at in rounds:
                local_items: list[tuple[PoolSpec, np.ndarray]] = []
                group = []
                asked = {}
                for k, (node, slot) in enumerate(zip(pack, slots)):
                    if k in asked_at:
                        i, arr = asked_at[k]
                        asked[len(local_items)] = i
                        spec = items[i][0]
                    else:
                        arr, spec = np.zeros(slot.shape, slot.dtype), slot.spec
                    group.append((len(local_items), node, arr))
                    local_items.append((spec, arr))
                reuses.append(Reuse(pack, group, local_items, asked))
        return reuses, rest


#: A node of a packed model as the adapters name it: its pooling node ``pool{k}``, its input
#: ``x{k}``, its output ``y{k}`` (OpenVINO's ONNX frontend names a node by it) or ``name: i{k}``.
_NAMED = re.compile(r"\b(?:pool|x|y)(\d+)\b|\bname: i(\d+)\b")


def named_position(exc: BaseException, size: int) -> int | None:
    """The position in a pack of ``size`` nodes that a runtime's error names first (``pool3``,
    ``x3``, ``y3``), or None. Only a hint for bisection: the named node is then run alone."""
    for match in _NAMED.finditer(str(exc)):
        k = int(match.group(1) or match.group(2))
        if k < size:
            return k
    return None
