"""Finding peers by name: built-ins, installed plugins (entry points), module and file paths."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from importlib import metadata
from types import ModuleType
from typing import Any

import numpy as np

from poolcheck.errors import PoolcheckError
from poolcheck.peers.base import Peer, PeerOutput
from poolcheck.peers.plugin import ModulePeer, is_plugin_module
from poolcheck.spec.attributes import PoolSpec

#: Entry-point group under which installed packages register peers.
ENTRY_POINT_GROUP = "poolcheck.peers"


class PeerNotFoundError(PoolcheckError, LookupError):
    """A name in ``--peers`` is no built-in, no installed plugin, and no importable module/file."""


class PeerLoadError(PoolcheckError):
    """A plugin was found but could not be loaded, or does not define a peer."""


def _onnxruntime() -> Peer:
    from poolcheck.peers.onnxruntime_peer import OnnxRuntimePeer

    return OnnxRuntimePeer()


def _openvino() -> Peer:
    from poolcheck.peers.openvino_peer import OpenVinoPeer

    return OpenVinoPeer()


def _torch() -> Peer:
    from poolcheck.peers.torch_peer import TorchPeer

    return TorchPeer()


def _onnx_reference() -> Peer:
    from poolcheck.peers.onnx_reference_peer import OnnxReferencePeer

    return OnnxReferencePeer()


def _tract() -> Peer:
    from poolcheck.peers.tract_peer import TractPeer

    return TractPeer()


def _jax() -> Peer:
    from poolcheck.peers.jax_peer import JaxPeer

    return JaxPeer()


def _openvino_onnx() -> Peer:
    from poolcheck.peers.openvino_onnx_peer import OpenVinoOnnxPeer

    return OpenVinoOnnxPeer()


def _torch_onnx() -> Peer:
    from poolcheck.peers.torch_onnx_peer import TorchOnnxPeer

    return TorchOnnxPeer()


#: Built-in peers by name (constructing one imports no runtime; ``available()`` does).
BUILTIN_PEERS: dict[str, Callable[[], Peer]] = {
    "onnxruntime": _onnxruntime,
    "openvino": _openvino,
    "torch": _torch,
    "onnx_reference": _onnx_reference,
    "tract": _tract,
    "jax": _jax,
    "openvino-onnx": _openvino_onnx,
    "torch-onnx": _torch_onnx,
}


class BrokenPeer:
    """Stands in for an installed plugin that failed to load (so ``doctor`` can say why)."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.ref = name
        self.reason = reason

    def available(self) -> tuple[bool, str]:
        return False, self.reason

    def version(self) -> str | None:
        return None

    def supports(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        return False, self.reason

    def run(self, spec: PoolSpec, x: np.ndarray) -> PeerOutput:
        raise PeerLoadError(self.reason)


# --------------------------------------------------------------------------- entry points


def _entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def _from_object(obj: Any, *, name: str, ref: str) -> Peer:
    """A peer from what a plugin exposes: a module with max_pool/avg_pool, a Peer instance,
    a Peer class, or a zero-argument factory returning a Peer."""
    if isinstance(obj, ModuleType):
        if not is_plugin_module(obj):
            raise PeerLoadError(f"peer {name!r}: module {obj.__name__} defines neither max_pool nor avg_pool")
        return ModulePeer(obj, name=str(getattr(obj, "PEER_NAME", name)), ref=ref)
    if inspect.isclass(obj) or (callable(obj) and not isinstance(obj, Peer)):
        try:
            obj = obj()
        except Exception as exc:
            raise PeerLoadError(f"peer {name!r}: creating it failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(obj, Peer):
        raise PeerLoadError(
            f"peer {name!r}: {type(obj).__name__} is not a peer (needs name, available, version, supports, run)"
        )
    if not hasattr(obj, "ref"):
        try:
            obj.ref = ref  # type: ignore[attr-defined]
        except AttributeError:
            pass
    return obj


def _load_entry_point(ep: metadata.EntryPoint) -> Peer:
    try:
        obj = ep.load()
    except Exception as exc:
        raise PeerLoadError(f"plugin {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}") from exc
    return _from_object(obj, name=ep.name, ref=ep.name)


# --------------------------------------------------------------------------- module / file paths


def _looks_like_file(name: str) -> bool:
    return name.endswith(".py") or os.sep in name or (os.altsep is not None and os.altsep in name)


def _load_file(path: str) -> Peer:
    full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise PeerNotFoundError(f"peer {path!r}: no such file")
    stem = os.path.splitext(os.path.basename(full))[0]
    digest = hashlib.sha1(full.encode()).hexdigest()[:8]
    mod_name = f"poolcheck_plugin_{stem}_{digest}"
    module = sys.modules.get(mod_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(mod_name, full)
        if spec is None or spec.loader is None:
            raise PeerLoadError(f"peer {path!r}: cannot import a module from this file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[mod_name]
            raise PeerLoadError(f"peer {path!r}: importing the file failed: {type(exc).__name__}: {exc}") from exc
    return _from_object(module, name=stem, ref=full)


def _load_module(name: str) -> Peer | None:
    """The peer defined by importable module ``name``, or None if there is no such module."""
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        # Only "no such module" means "not found"; a missing dependency inside it is a load error.
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            return None
        raise PeerLoadError(f"peer {name!r}: importing it failed: {exc}") from exc
    except Exception as exc:
        raise PeerLoadError(f"peer {name!r}: importing it failed: {type(exc).__name__}: {exc}") from exc
    return _from_object(module, name=name, ref=name)


# --------------------------------------------------------------------------- public API


def resolve_peer(name: str) -> Peer:
    """One peer by name: built-in, entry point, file path, or dotted module path."""
    name = name.strip()
    if not name:
        raise PeerNotFoundError("empty peer name")
    if name in BUILTIN_PEERS:
        return BUILTIN_PEERS[name]()
    eps = _entry_points()
    for ep in eps:
        if ep.name == name:
            return _load_entry_point(ep)
    if _looks_like_file(name):
        return _load_file(name)
    peer = _load_module(name) if all(part.isidentifier() for part in name.split(".")) else None
    if peer is None:
        plugins = ", ".join(ep.name for ep in eps) or "none installed"
        raise PeerNotFoundError(
            f"unknown peer {name!r}: not a built-in ({', '.join(BUILTIN_PEERS)}), not an installed plugin "
            f"(entry points in {ENTRY_POINT_GROUP!r}: {plugins}), and no importable module or .py file of that name"
        )
    return peer


def resolve_peers(names: Iterable[str]) -> list[Peer]:
    """Peers for ``names`` in order (duplicates dropped). Raises :class:`PeerNotFoundError` /
    :class:`PeerLoadError` naming the first name that does not resolve."""
    peers: list[Peer] = []
    seen: set[str] = set()
    for raw in names:
        name = raw.strip()
        if not name or name in seen:
            continue
        seen.add(name)
        peer = resolve_peer(name)
        if any(p.name == peer.name for p in peers):
            raise PeerLoadError(f"two peers are named {peer.name!r} (the second is {name!r}); rename one")
        peers.append(peer)
    return peers


def all_peers() -> list[Peer]:
    """Every built-in peer, then every installed plugin (a plugin that fails to load appears as
    an unavailable peer carrying the error)."""
    peers: list[Peer] = [factory() for factory in BUILTIN_PEERS.values()]
    for ep in _entry_points():
        try:
            peers.append(_load_entry_point(ep))
        except PoolcheckError as exc:
            peers.append(BrokenPeer(ep.name, str(exc)))
    return peers


def peer_kind(peer: Peer) -> str:
    """``built-in`` or ``plugin``."""
    return "built-in" if getattr(peer, "ref", None) in BUILTIN_PEERS else "plugin"
