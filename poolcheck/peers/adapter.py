"""Plumbing shared by the built-in runtime adapters.

An adapter only says how to translate a :class:`PoolSpec` into its runtime's terms
(:meth:`RuntimePeer.translate`, raising :class:`PeerDeclined` where the runtime cannot express
it) and how to execute a group of translated configurations in one model
(:meth:`RuntimePeer.execute`). Availability, versions, ``supports``, ``run`` and the batched
``run_many`` -- with a failing group bisected until each failing configuration carries its own
error -- live here once, and so does :meth:`RuntimePeer.prepare`: one configuration made ready
once (:class:`PreparedConfig`) and run on many inputs (the benchmark times its ``bind`` call).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from poolcheck.peers.base import BatchItem, PeerDeclined, PeerOption, PeerOutput
from poolcheck.peers.packs import PackIndex, Where, named_position
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.poolspec import PoolSpec

#: One translated item of a batch: its position in the batch, the runtime's node, the input.
Translated = tuple[int, Any, np.ndarray]


def prepared_input(peer_name: str, shape: tuple[int, ...], dtype: np.dtype, x: np.ndarray) -> np.ndarray:
    """``x`` as a contiguous array, if it has the shape and element type a session was prepared
    for; else a ValueError naming both."""
    arr = np.ascontiguousarray(x)
    if arr.shape != shape or arr.dtype != dtype:
        raise ValueError(f"{peer_name}: prepared for {dtype.name}{list(shape)}, got {arr.dtype.name}{list(arr.shape)}")
    return arr


class PreparedConfig:
    """One configuration of one peer, made ready once (translated, model built, session
    compiled) for inputs of one shape and element type; :meth:`run` it on as many as needed.
    A family configuration (:class:`FamilySpec`, not MaxUnpool: it takes a second input) runs
    through the peer's :meth:`RuntimePeer.execute_family`."""

    def __init__(self, peer: RuntimePeer, spec: PoolSpec | FamilySpec, shape: tuple[int, ...], dtype: np.dtype,
                 node: Any) -> None:
        self.peer, self.spec, self.shape, self.dtype, self.node = peer, spec, shape, dtype, node

    def _input(self, x: np.ndarray) -> np.ndarray:
        return prepared_input(self.peer.name, self.shape, self.dtype, x)

    def run(self, x: np.ndarray) -> PeerOutput:
        """The peer's output for ``x``, in poolcheck's terms (indices converted)."""
        arr = self._input(x)
        if isinstance(self.spec, FamilySpec):
            return self.peer.execute_family(self.node, self.spec, arr, None)
        return self.peer.execute([(0, self.node, arr)], [(self.spec, arr)])[0]

    def bind(self, x: np.ndarray) -> Callable[[], object]:
        """The runtime's own call on ``x``, with ``x`` already in the runtime's input form: what a
        benchmark times (no conversion of inputs or outputs inside it). A family configuration's
        call is :meth:`RuntimePeer.execute_family` (its feeds made and its output read per call)."""
        arr = self._input(x)
        if isinstance(self.spec, FamilySpec):
            spec, node = self.spec, self.node
            return lambda: self.peer.execute_family(node, spec, arr, None)
        return self.peer.bind(self.node, self.spec, arr)


class RuntimePeer:
    """Base class of the built-in adapters (ONNX Runtime, OpenVINO, PyTorch, onnx.reference)."""

    name: str = ""
    ref: str = ""
    #: The module whose import decides availability and whose ``__version__`` is reported.
    module: str = ""
    #: Appended to "cannot be imported" when the module is missing (e.g. the extra to install).
    install_hint: str = ""
    #: Most configurations packed into one model by :meth:`run_many`.
    batch_limit: int = 1
    #: The most configurations one fuzz example holds when this peer is fuzzed (``poolcheck fuzz``
    #: without ``--batch`` takes the smallest among its peers). 64 for every adapter: a peer that
    #: pays for a model, a session, an export or a compile per call packs an example into one call,
    #: and even one that runs a configuration per call pays an example's fixed cost (the batch
    #: pickled to its worker and back, the session's work per example) less often; measured for
    #: each built-in peer in docs/fuzzing.md, "Batches".
    fuzz_batch: int = 64
    #: The conventions whose operators this peer runs as written (:func:`~poolcheck.peers.base.operator_conventions`);
    #: none by default: a built-in adapter translates into its runtime's own API unless it says so.
    operator_conventions: tuple[str, ...] = ()
    #: Options this peer accepts in its name (``onnxruntime:opt=disable``); none by default.
    accepted_options: tuple[PeerOption, ...] = ()
    #: The same configuration and input always give the same output (or are always declined):
    #: the fuzzer reuses a repeated configuration's result instead of asking again.
    repeatable: bool = True
    #: The family ops (:data:`~poolcheck.spec.family.FAMILY_OPS`) this adapter takes; it
    #: translates them in :meth:`translate_family` and runs them in :meth:`execute_family`.
    family_ops: tuple[str, ...] = ()

    def configure(self, options: dict[str, str]) -> None:
        """Apply validated options (defaults already dropped); subclasses read ``self.options``
        (see :meth:`option`) and may override this to rebuild their state."""
        self.options = dict(options)
        self.__dict__.pop("_translations", None)

    def option(self, key: str) -> str:
        """The value of option ``key``: the one given in the peer's name, else its default."""
        given = getattr(self, "options", {}) or {}
        if key in given:
            return given[key]
        return next(o.default for o in self.accepted_options if o.key == key)

    def element_types(self, op: str) -> tuple[str, ...] | None:
        """The element types this peer can ever take for ``op`` (``"max"``, ``"avg"`` or one of
        its :attr:`family_ops`), whatever the rest of the configuration; None: every type the
        catalogue allows. An adapter that declines a type for every configuration of an op says
        so here, and its :meth:`translate` declines through the same declaration
        (``tests/peers/test_peer_element_types.py`` keeps each one true)."""
        return None

    def unusable(self) -> str | None:
        """Why no configuration can run here with these options (a device, provider or precision
        absent on this machine), or None. Checked before every translation: the peer declines
        everything with this reason rather than fall back to another device."""
        return None

    # ------------------------------------------------------------------ for subclasses

    def translate(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """The runtime's form of ``spec`` (hashable), or raise :class:`PeerDeclined`."""
        raise NotImplementedError

    def execute(self, group: Sequence[Translated], items: Sequence[BatchItem]) -> list[PeerOutput]:
        """Run ``group`` as one model; one output per entry, in order. Raise if the runtime
        refuses the model."""
        raise NotImplementedError

    def translate_family(self, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """The runtime's form of a family configuration (an op in :attr:`family_ops`), or raise
        :class:`PeerDeclined` naming what the runtime lacks."""
        raise PeerDeclined(self.name, f"{self.name} has no {spec.describe().split('(')[0]}")

    def execute_family(self, node: Any, spec: FamilySpec, x: np.ndarray, indices: np.ndarray | None) -> PeerOutput:
        """Run one translated family configuration on ``x`` (and MaxUnpool's ``indices``)."""
        raise NotImplementedError

    def refused(self, node: Any, exc: Exception) -> None:
        """Called when the runtime refuses a single configuration (hook for remembering it)."""

    def known_refusal(self, node: Any) -> Exception | None:
        """An error to report without running ``node`` (e.g. a kernel the runtime lacks)."""
        return None

    def without_indices(self, node: Any) -> Any:
        """``node`` computing values only (max pooling), where the runtime can leave indices out."""
        return node

    def load_runtime(self) -> None:
        """Import the runtime now. A worker calls it while loading (under the load timeout), so
        that the first call's ``--peer-timeout`` times the runtime's answer, not its import: a
        0.3 s timeout made torch-onnx's first call, 1.8 s of importing torch and the exporter, a
        'timeout' with a violation's weight. Failures are left to the first call to report."""
        self.available()

    def warm(self, node: Any) -> None:
        """Build ``node``'s model and session now (kept for later calls); nothing by default."""

    def bind(self, node: Any, spec: PoolSpec, arr: np.ndarray) -> Callable[[], object]:
        """A call running ``node`` on ``arr`` (see :meth:`PreparedConfig.bind`). The default runs
        :meth:`execute`; adapters override it with their runtime's bare call."""
        return lambda: self.execute([(0, node, arr)], [(spec, arr)])

    def prepare(self, spec: PoolSpec | FamilySpec, shape: Sequence[int], dtype: Any, *,
                indices: bool = True) -> PreparedConfig:
        """Make ``spec`` ready once for inputs of ``shape``/``dtype`` (``indices=False``: values
        only). Raises :class:`PeerDeclined` when the peer cannot express it, or the runtime's error
        when it refuses the model. A family configuration is translated here and its model built
        on the first run (MaxUnpool is declined: its second input is not one prepared input)."""
        why = self.unusable()
        if why:
            raise PeerDeclined(self.name, why)
        shape = tuple(int(v) for v in shape)
        dt = np.dtype(dtype)
        if isinstance(spec, FamilySpec):
            if spec.op == "unpool":
                raise PeerDeclined(self.name, "a prepared configuration takes one input; MaxUnpool takes two")
            return PreparedConfig(self, spec, shape, dt, self._translate_family(spec, shape, dt))
        node = self.translate(spec, shape, dt)
        if not indices:
            node = self.without_indices(node)
        known = self.known_refusal(node)
        if known is not None:
            raise known
        self.warm(node)
        return PreparedConfig(self, spec, shape, dt, node)

    # ------------------------------------------------------------------ Peer protocol

    def available(self) -> tuple[bool, str]:
        try:
            importlib.import_module(self.module)
        except ImportError as exc:
            hint = f" ({self.install_hint})" if self.install_hint else ""
            return False, f"{self.module} is not installed{hint}: {exc}"
        except Exception as exc:  # a broken install
            return False, f"{self.module} cannot be imported: {type(exc).__name__}: {exc}"
        return True, ""

    def version(self) -> str | None:
        try:
            mod = importlib.import_module(self.module.split(".")[0])
        except Exception:
            return None
        return str(getattr(mod, "__version__", "unknown"))

    def supports(self, spec: PoolSpec | FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        why = self.unusable()
        if why:
            return False, why
        try:
            if isinstance(spec, FamilySpec):
                self._translate_family(spec, tuple(int(v) for v in shape), np.dtype(dtype))
            else:
                self._translated(spec, tuple(int(v) for v in shape), np.dtype(dtype))
        except PeerDeclined as exc:
            return False, exc.reason
        return True, ""

    def _translate_family(self, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        if spec.op not in self.family_ops:
            raise PeerDeclined(self.name, f"{self.name} has no {spec.describe().split('(')[0]}")
        return self.translate_family(spec, shape, dtype)

    def run(self, spec: PoolSpec | FamilySpec, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        if isinstance(spec, FamilySpec):
            why = self.unusable()
            if why:
                raise PeerDeclined(self.name, why)
            arr = np.ascontiguousarray(x)
            node = self._translate_family(spec, arr.shape, arr.dtype)
            return self.execute_family(node, spec, arr, None if indices is None else np.ascontiguousarray(indices))
        result = self.run_many([(spec, x)])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def run_many(self, items: Sequence[BatchItem]) -> list[PeerOutput | Exception]:
        """Compute every item, packing up to ``batch_limit`` of them per model."""
        results: list[PeerOutput | Exception | None] = [None] * len(items)
        todo: list[Translated] = []
        why = self.unusable()
        if why:
            return [PeerDeclined(self.name, why) for _ in items]
        for i, (spec, x) in enumerate(items):
            arr = np.ascontiguousarray(x)
            try:
                node = self._translated(spec, arr.shape, arr.dtype)
            except PeerDeclined as exc:
                results[i] = exc
                continue
            known = self.known_refusal(node) or self._refusal(node)
            if known is not None:
                results[i] = known
                continue
            todo.append((i, node, arr))
        self.__dict__.pop("_translations", None)  # kept from supports() for this call only
        todo = self._reuse_packs(todo, items, results)
        # A node asked for again with another input (the fuzzer feeds each geometry several
        # inputs) is compiled once: the first of each node runs as usual, the others through the
        # model that now holds it (the node's input at its position, zeros at the others).
        firsts, again = _first_of_each_node(todo)
        for group in self._groups(firsts):
            self._run_group(group, items, results)
        again = self._reuse_packs([t for t in again if results[t[0]] is None and not self._refused_here(t[1])],
                                  items, results)
        for group in self._groups(again):
            self._run_group(group, items, results)
        for i, node, _ in todo:  # a repeat of a node the runtime refused alone: the same error
            if results[i] is None:
                results[i] = self.known_refusal(node) or self._refusal(node)
        return [r if r is not None else RuntimeError("internal: no result") for r in results]

    def _groups(self, entries: list[Translated]) -> list[list[Translated]]:
        """``entries`` in models of up to :attr:`batch_limit`: nodes of a kind the runtime
        refused before run alone or among their kind (:meth:`~poolcheck.peers.packs.PackIndex.placement`),
        so that one refusal does not fail the others' model again."""
        index = self._pack_index()
        placed: dict[Where, list[Translated]] = {"pack": [], "apart": [], "alone": []}
        for entry in entries:
            try:
                where: Where = index.placement(entry[1]) if index is not None else "pack"
            except TypeError:  # an unhashable node
                where = "pack"
            placed[where].append(entry)
        limit = self.batch_limit
        return ([placed["pack"][k:k + limit] for k in range(0, len(placed["pack"]), limit)]
                + [placed["apart"][k:k + limit] for k in range(0, len(placed["apart"]), limit)]
                + [[entry] for entry in placed["alone"]])

    def _refused_here(self, node: Any) -> bool:
        return (self.known_refusal(node) or self._refusal(node)) is not None

    #: Translations :meth:`_translated` keeps at most.
    TRANSLATIONS_KEPT = 256

    def _translated(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """:meth:`translate`, kept from :meth:`supports` until the next :meth:`run_many`: a batch
        is asked whether each configuration is supported (``peers/isolation.py``) and then run,
        and a translation (an ONNX node: about 50 us) was made twice. Only hashable nodes are
        kept (the contract; a node that is not might be changed by its user), declines are
        raised anew each time."""
        kept: dict[tuple[Any, ...], Any] = self.__dict__.setdefault("_translations", {})
        key = (spec, shape, dtype)
        try:
            node = kept.get(key)
        except TypeError:  # a spec built without validation may not hash
            return self.translate(spec, shape, dtype)
        if node is not None:
            return node
        node = self.translate(spec, shape, dtype)
        try:
            hash(node)
        except TypeError:
            return node
        kept[key] = node
        if len(kept) > self.TRANSLATIONS_KEPT:
            del kept[next(iter(kept))]
        return node

    def _pack_index(self) -> PackIndex | None:
        """The packs this peer's nodes can be served from (:mod:`poolcheck.peers.packs`): for a
        repeatable adapter that packs several configurations per model and caches its models."""
        index = getattr(self, "_packs", None)
        cache_size = int(getattr(self, "cache_size", 0) or 0)
        if index is None and self.batch_limit > 1 and self.repeatable and cache_size > 1:
            index = self._packs = PackIndex(cache_size * 3 // 4)
        return index

    def _refusal(self, node: Any) -> Exception | None:
        index = self._pack_index()
        return index.refusal(node) if index is not None else None

    def _reuse_packs(self, todo: list[Translated], items: Sequence[BatchItem],
                     results: list[PeerOutput | Exception | None]) -> list[Translated]:
        """Run the items of ``todo`` whose node is in a model this peer already compiled through
        that model; return the rest. A reused model that raises answers nothing: its items go back
        to the ordinary path (compiled afresh, bisected on failure)."""
        index = self._pack_index()
        if index is None or not todo:
            return todo
        reuses, rest = index.plan(todo, items)
        for reuse in reuses:
            try:
                outputs = self.execute(reuse.group, reuse.items)
            except Exception:
                index.forget(reuse.pack)
                rest += [entry for entry in todo if entry[0] in reuse.asked.values()]
                continue
            for local, i in reuse.asked.items():
                results[i] = outputs[local]
        return sorted(rest, key=lambda entry: entry[0])

    def _run_group(self, group: Sequence[Translated], items: Sequence[BatchItem],
                   results: list[PeerOutput | Exception | None]) -> None:
        """Run ``group`` as one model; if the runtime refuses it, split it until each failing
        configuration stands alone and carries its own error: the node the error names (``pool3``,
        ``x3``) alone and the rest, else in halves. Every answer comes from a model that ran, every
        error from a configuration run alone, as an unbatched call gives them."""
        if not group:
            return
        try:
            outputs = self.execute(group, items)
        except Exception as exc:
            if len(group) == 1:
                i, node, _ = group[0]
                self.refused(node, exc)
                index = self._pack_index()
                if index is not None:
                    index.refused(node, exc)
                results[i] = exc
                return
            suspect = named_position(exc, len(group))
            if suspect is not None:  # the runtime named the node: try it alone, then the others
                self._run_group(group[suspect:suspect + 1], items, results)
                self._run_group([*group[:suspect], *group[suspect + 1:]], items, results)
                return
            half = len(group) // 2
            self._run_group(group[:half], items, results)
            self._run_group(group[half:], items, results)
            return
        for (i, _, _), out in zip(group, outputs, strict=True):
            results[i] = out
        index = self._pack_index()
        if index is not None:
            index.register([node for _, node, _ in group], [items[i][0] for i, _, _ in group], [a for _, _, a in group])


def _first_of_each_node(todo: Sequence[Translated]) -> tuple[list[Translated], list[Translated]]:
    """``todo`` split into the first item of each node and the items asking for a node again."""
    seen: set[Any] = set()
    firsts: list[Translated] = []
    again: list[Translated] = []
    for entry in todo:
        try:
            key = entry[1]
            new = key not in seen
            seen.add(key)
        except TypeError:  # an unhashable node: never shared
            new = True
        (firsts if new else again).append(entry)
    return firsts, again
