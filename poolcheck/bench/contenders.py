"""Everything ``poolcheck bench`` times: poolcheck's own engines and the runtimes, each set to
one thread.

A contender is prepared once per workload (model built, session compiled, geometry resolved),
outside the timing; what is timed is one call on an input that is already in the contender's
own form (an ONNX Runtime feed, an OpenVINO tensor, a torch tensor in its memory format). The
runtimes are the peers themselves (:meth:`RuntimePeer.prepare`): this module only times them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from poolcheck import spec as S
from poolcheck.api_family import run_family
from poolcheck.bench.workloads import Workload
from poolcheck.engines import c_engine, c_engine_status, get_engine
from poolcheck.peers.adapter import RuntimePeer
from poolcheck.peers.base import PeerDeclined
from poolcheck.peers.onnx_reference_peer import OnnxReferencePeer
from poolcheck.peers.onnxruntime_peer import OnnxRuntimePeer
from poolcheck.peers.openvino_peer import OpenVinoPeer
from poolcheck.peers.torch_peer import TorchPeer
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.indices import IndexLayout, index_layout
from poolcheck.spec.policy import SPEC

#: How a contender numbers the elements its indices point at.
INDEX_GLOBAL = "global"  # flat over (N, C, *spatial): ONNX MaxPool Indices, OpenVINO axis=0
INDEX_PLANE = "plane"  # flat within each (n, c) plane: torch return_indices, OpenVINO axis=2
INDEX_CANONICAL = "canonical"  # poolcheck's own layout for the spec (what peers convert to)

#: Key of the C engine run on a named instruction-set path beside the default one: "c@avx2".
C_PATH_PREFIX = "c@"


def is_poolcheck_key(key: str) -> bool:
    """Whether a contender key is one of poolcheck's own engines (on any path)."""
    return key in ("c", "numpy") or key.startswith(C_PATH_PREFIX)


class Unsupported(Exception):
    """The contender cannot express this workload (shown as n/a, not as a failure)."""


@dataclass
class Prepared:
    """A contender ready to run one workload: ``call`` is what is timed; ``outputs`` runs once
    and returns NumPy values (and indices) for the correctness check."""

    call: Callable[[], object]
    outputs: Callable[[], tuple[np.ndarray, np.ndarray | None]]
    index_kind: str = INDEX_GLOBAL
    close: Callable[[], None] | None = None
    #: Run before the outputs are read and before each block of timed calls, untimed (the C
    #: engine's instruction-set path is switched here when several paths are timed).
    enter: Callable[[], object] | None = None


@dataclass
class Contender:
    """One implementation under test. ``memory_format`` is "NCHW" or "channels_last";
    ``max_reps`` caps slow baselines; ``only`` restricts it to some workloads; ``isa`` is the
    C engine's instruction-set path it runs on, when several are timed."""

    key: str
    label: str
    memory_format: str
    module: str | None
    prepare: Callable[[Workload, np.ndarray], Prepared]
    max_reps: int | None = None
    only: tuple[str, ...] | None = None
    is_poolcheck: bool = False
    isa: str | None = None

    def available(self) -> tuple[bool, str]:
        if self.key == "c" or self.isa is not None:

            module, reason = c_engine_status()
            return (module is not None, reason)
        if self.module is None:
            return True, ""
        try:
            importlib.import_module(self.module)
        except Exception as exc:  # an absent or broken install: shown as absent, with why
            return False, f"{self.module} is not importable ({type(exc).__name__}: {exc})"
        return True, ""

    def version(self) -> str | None:
        dist = {"onnxruntime": "onnxruntime", "openvino": "openvino", "torch": "torch", "onnx.reference": "onnx"}
        name = "poolcheck" if self.is_poolcheck else dist.get(self.module or "")
        if name is None:
            return None
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None


# --------------------------------------------------------------------------- poolcheck engines


def _poolcheck(engine_name: str, isa: str | None = None) -> Callable[[Workload, np.ndarray], Prepared]:
    """One of poolcheck's engines; with ``isa``, the C engine switched to that instruction-set
    path before its outputs are read and before each block of timed calls (never inside one)."""

    def prepare(w: Workload, x: np.ndarray) -> Prepared:
        prepared = _engine_calls(engine_name, w, x)
        if isa is not None:
            def enter() -> str:
                return c_engine.switch_isa(isa)

            def outputs(read: Callable[[], tuple[np.ndarray, np.ndarray | None]] = prepared.outputs,
                        ) -> tuple[np.ndarray, np.ndarray | None]:
                enter()
                return read()

            prepared.enter, prepared.outputs = enter, outputs
        return prepared

    return prepare


def _engine_calls(engine_name: str, w: Workload, x: np.ndarray) -> Prepared:
    if isinstance(w.spec, FamilySpec):  # run_family: the input's checks, then the engine
        fspec = w.spec

        def call_family() -> object:
            return run_family(fspec, x, engine=engine_name)

        return Prepared(call_family, lambda: run_family(fspec, x, engine=engine_name))
    eng = get_engine(engine_name)
    geom = w.geometry
    if w.spec.op == "avg":
        exclude = w.spec.exclude_pad

        def call() -> object:
            return eng.avg_pool(x, geom, exclude, SPEC)

        return Prepared(call, lambda: (eng.avg_pool(x, geom, exclude, SPEC), None))
    layout = S.index_layout(w.spec, w.shape) if w.with_indices else None

    def call_max() -> object:
        return eng.max_pool(x, geom, layout, SPEC)

    return Prepared(call_max, lambda: eng.max_pool(x, geom, layout, SPEC))


# --------------------------------------------------------------------------- runtimes, through the peers


def _peer(make: Callable[[], RuntimePeer]) -> Callable[[Workload, np.ndarray], Prepared]:
    """A runtime contender: the peer's own prepared session (the same translation, model and
    session the conformance runs use), timed on its bare runtime call."""

    def prepare(w: Workload, x: np.ndarray) -> Prepared:
        peer = make()
        if isinstance(w.spec, FamilySpec) and getattr(peer, "options", {}).get("layout") == "channels_last":
            raise Unsupported("the torch peer's family calls take a contiguous tensor (no channels_last)")
        try:
            session = peer.prepare(w.spec, w.shape, x.dtype, indices=w.with_indices)
        except PeerDeclined as exc:
            raise Unsupported(exc.reason) from None

        def outputs() -> tuple[np.ndarray, np.ndarray | None]:
            out = session.run(x)
            return np.asarray(out.values), (None if out.indices is None else np.asarray(out.indices))

        # The peers convert indices to poolcheck's own layout.
        return Prepared(session.bind(x), outputs, index_kind=INDEX_CANONICAL)

    return prepare


def _torch(layout: str) -> Callable[[], RuntimePeer]:
    def make() -> RuntimePeer:
        peer = TorchPeer()
        peer.configure({"layout": layout} if layout != "contiguous" else {})
        return peer

    return make


def all_contenders(paths: Sequence[str] = ()) -> list[Contender]:
    """Every contender, in table order. ``paths``: instruction-set paths the C engine is also
    timed on, each as a contender of its own right after it (the default path, the one chosen at
    import, is the ``c`` contender and the headline ratios' C engine; it is not repeated)."""
    active = c_engine.active_isa()
    extra = [p for p in dict.fromkeys(paths) if p != active]
    return [
        Contender("c", "poolcheck c", "NCHW", None, _poolcheck("c", active if extra else None), is_poolcheck=True,
                  isa=active if extra else None),
        *(Contender(C_PATH_PREFIX + p, f"poolcheck c [{p}]", "NCHW", None, _poolcheck("c", p), is_poolcheck=True,
                    isa=p) for p in extra),
        Contender("numpy", "poolcheck numpy", "NCHW", None, _poolcheck("numpy"), is_poolcheck=True),
        Contender("onnxruntime", "onnxruntime", "NCHW", "onnxruntime", _peer(OnnxRuntimePeer)),
        Contender("openvino", "openvino", "NCHW", "openvino", _peer(OpenVinoPeer)),
        Contender("torch", "torch", "NCHW", "torch", _peer(_torch("contiguous"))),
        Contender("torch-cl", "torch channels_last", "channels_last", "torch", _peer(_torch("channels_last"))),
        Contender("onnx-reference", "onnx.reference", "NCHW", "onnx.reference", _peer(OnnxReferencePeer),
                  max_reps=3, only=("W1",)),
    ]


def reference_layout(w: Workload, index_kind: str) -> IndexLayout:
    """The poolcheck index layout that means what a contender's indices mean (MaxPool workloads)."""
    assert isinstance(w.spec, S.PoolSpec)
    layout = index_layout(w.spec, w.shape)
    if index_kind == INDEX_CANONICAL:
        return layout
    if index_kind == INDEX_PLANE:
        return IndexLayout("C", int(np.prod(w.shape[2:])), np.dtype(np.int64))
    return IndexLayout(layout.order, layout.modulus, np.dtype(np.int64))


class KeepPath:
    """Context manager: the C engine back on the instruction-set path it ran when entered."""

    def __enter__(self) -> KeepPath:
        self._path = c_engine.active_isa()
        return self

    def restore(self) -> None:
        """Back on the path now (the reference's outputs are computed on it)."""
        if self._path is not None and c_engine.active_isa() != self._path:
            c_engine.switch_isa(self._path)

    def __exit__(self, *exc: object) -> None:
        self.restore()


class SingleThread:
    """Context manager: torch at one thread for the run (restored afterwards)."""

    def __enter__(self) -> SingleThread:
        self._torch_threads: int | None = None
        try:
            import torch
        except Exception:  # torch absent: nothing to set
            return self
        self._torch_threads = torch.get_num_threads()
        torch.set_num_threads(1)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._torch_threads is not None:
            import torch

            torch.set_num_threads(self._torch_threads)
