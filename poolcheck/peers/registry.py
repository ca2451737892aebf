"""Finding peers by name: built-ins, installed plugins (entry points), module and file paths."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from poolcheck.errors import PoolcheckError
from poolcheck.peers.base import Peer, PeerOption, PeerOutput
from poolcheck.peers.isolation import probe_load, set_resolver, stdout_to_stderr
from poolcheck.peers.plugin import ModulePeer, is_plugin_module
from poolcheck.spec.poolspec import PoolSpec

_T = TypeVar("_T")

#: Entry-point group under which installed packages register peers.
ENTRY_POINT_GROUP = "poolcheck.peers"

#: Set in peer workers: the worker is the isolation, so plugins are imported directly there.
LOAD_IN_PROCESS = False
#: Seconds a plugin may take to load (the default of ``--peer-timeout``).
DEFAULT_LOAD_TIMEOUT = 60.0


class PeerNotFoundError(PoolcheckError, LookupError):
    """A name in ``--peers`` is no built-in, no installed plugin, and no importable module/file."""


class PeerLoadError(PoolcheckError):
    """A plugin was found but could not be loaded, or does not define a peer."""


class PeerSpecError(PoolcheckError, ValueError):
    """A ``--peers`` list is malformed, or names an option the peer does not accept (exit 2)."""


# --------------------------------------------------------------------------- peer references

_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-+")


@dataclass(frozen=True)
class PeerRef:
    """One entry of a ``--peers`` list: a peer name, an optional argument (``onnx-backend:MODULE``)
    and options as sorted ``(key, value)`` pairs. ``str(ref)`` is the canonical form used in
    reports, worker references and the fuzz registry, e.g. ``openvino:device=GPU,precision=bf16``.
    """

    name: str
    options: tuple[tuple[str, str], ...] = ()
    arg: str = ""

    def __str__(self) -> str:
        head = f"{self.name}:{self.arg}" if self.arg else self.name
        if not self.options:
            return head
        opts = ",".join(f"{k}={v}" for k, v in self.options)
        return f"{head},{opts}" if self.arg else f"{head}:{opts}"

    @property
    def canonical(self) -> str:
        return str(self)


def _option(token: str, where: str) -> tuple[str, str]:
    key, _, value = token.partition("=")
    key, value = key.strip(), value.strip()
    if not key.isidentifier():
        raise PeerSpecError(f"--peers: bad option {token!r} in {where!r}: the key must be a name like opt or device")
    if not value or not set(value) <= _NAME_CHARS:
        raise PeerSpecError(f"--peers: bad option {token!r} in {where!r}: the value must be letters, digits, '_', '.', '-'")
    return key, value


def parse_peer_list(text: str) -> list[PeerRef]:
    """Parse a ``--peers`` value into :class:`PeerRef` entries, in order.

    Grammar: peers are separated by commas; ``name:key=value`` gives a peer options, and a
    further comma-separated ``key=value`` (an item with ``=`` and no ``:``) continues the previous
    peer's options: ``onnxruntime:opt=disable,openvino:device=CPU,precision=bf16,torch`` is three
    peers. ``name:ARG`` (no ``=``) passes one argument, e.g. ``onnx-backend:onnxruntime.backend``.
    File paths and dotted module names are names too. Raises :class:`PeerSpecError` (one line).
    """
    entries: list[tuple[str, str, list[tuple[str, str]]]] = []
    for raw in str(text).split(","):
        token = raw.strip()
        if not token:
            continue
        if "=" in token and ":" not in token:
            if not entries:
                raise PeerSpecError(f"--peers: option {token!r} comes before any peer name (write name:{token})")
            entries[-1][2].append(_option(token, entries[-1][0]))
            continue
        name, sep, rest = token.partition(":")
        if sep and len(name) == 1 and name.isalpha() and rest[:1] in ("\\", "/"):
            name, sep, rest = token, "", ""  # a Windows drive letter: C:\\peers\\mine.py
        name = name.strip()
        if not name:
            raise PeerSpecError(f"--peers: {token!r} has no peer name before ':'")
        arg = ""
        options: list[tuple[str, str]] = []
        if sep:
            rest = rest.strip()
            if not rest:
                raise PeerSpecError(f"--peers: {token!r} has nothing after ':' (expected key=value or an argument)")
            if "=" in rest:
                options.append(_option(rest, name))
            else:
                arg = rest
        entries.append((name, arg, options))
    refs = []
    for name, arg, options in entries:
        keys = [k for k, _ in options]
        dup = next((k for k in keys if keys.count(k) > 1), None)
        if dup is not None:
            raise PeerSpecError(f"--peers: option {dup!r} is given twice for peer {name!r}")
        refs.append(PeerRef(name, tuple(sorted(options)), arg))
    return refs


def _as_refs(names: str | PeerRef | Iterable[str | PeerRef]) -> list[PeerRef]:
    """Accept a ``--peers`` string, one PeerRef, or a list of either (a list of strings is
    joined with commas first, so callers that split ``--peers`` on commas still work)."""
    if isinstance(names, PeerRef):
        return [names]
    if isinstance(names, str):
        return parse_peer_list(names)
    refs: list[PeerRef] = []
    pending: list[str] = []
    for item in names:
        if isinstance(item, PeerRef):
            refs += parse_peer_list(",".join(pending))
            pending = []
            refs.append(item)
        else:
            pending.append(str(item))
    return refs + parse_peer_list(",".join(pending))


def peer_options(peer: Any) -> tuple[PeerOption, ...]:
    """The options ``peer`` declares it accepts (``accepted_options``), possibly none."""
    return tuple(getattr(peer, "accepted_options", ()) or ())


def _apply_options(peer: Any, ref: PeerRef) -> Any:
    """Validate ``ref``'s options against what ``peer`` accepts, configure it, and give it the
    canonical name (defaults dropped, values spelled as declared)."""
    accepted = {o.key: o for o in peer_options(peer)}
    chosen: dict[str, str] = {}
    for key, value in ref.options:
        opt = accepted.get(key)
        if opt is None:
            offered = ", ".join(o.describe() for o in accepted.values()) or "none"
            raise PeerSpecError(f"--peers: peer {ref.name!r} has no option {key!r} (it accepts: {offered})")
        if opt.choices:
            match = next((c for c in opt.choices if c.lower() == value.lower()), None)
            if match is None:
                raise PeerSpecError(
                    f"--peers: {ref.name}:{key}={value}: expected one of {', '.join(opt.choices)}")
            value = match
        if value != opt.default:
            chosen[key] = value
    if ref.options:
        configure = getattr(peer, "configure", None)
        if not callable(configure):
            raise PeerSpecError(f"--peers: peer {ref.name!r} accepts no options")
        configure(chosen)
        canonical = str(PeerRef(ref.name, tuple(sorted(chosen.items())), ref.arg))
        try:
            peer.name = canonical
            peer.ref = canonical
        except AttributeError:
            pass
    return peer


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


def _onnx_backend(ref: PeerRef, load_timeout: float = DEFAULT_LOAD_TIMEOUT) -> Peer:
    """The ``onnx-backend:MODULE`` peer, MODULE loaded as a plugin is: probed in a throw-away
    worker first (exit, crash or hang -> a :class:`FailedPeer`; no such module, or no backend
    -> the usage error raised there), then imported here."""
    from poolcheck.peers.onnx_backend_peer import NotAnOnnxBackend, OnnxBackendPeer

    if not ref.arg:
        raise PeerSpecError("--peers: onnx-backend needs a module: onnx-backend:MODULE, e.g. onnx-backend:onnxruntime.backend")
    if not all(part.isidentifier() for part in ref.arg.split(".")):
        raise PeerSpecError(f"--peers: onnx-backend:{ref.arg}: expected a dotted module name like onnxruntime.backend")
    peer = OnnxBackendPeer(ref.arg)
    failed = _probe(peer.name, peer.name, load_timeout, raise_errors=True)
    if failed is not None:
        return failed
    what = f"peer {peer.name!r}"
    try:
        _import_guarded(what, peer.load)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (ref.arg == exc.name or ref.arg.startswith(exc.name + ".")):
            raise PeerNotFoundError(f"--peers: {peer.name}: there is no module named {ref.arg!r}") from None
        raise PeerLoadError(f"{what}: importing it failed: {exc}") from exc
    except NotAnOnnxBackend as exc:
        raise PeerSpecError(f"--peers: {peer.name}: {exc}") from None
    except PeerLoadError:
        raise
    except Exception as exc:
        raise PeerLoadError(f"{what}: importing it failed: {type(exc).__name__}: {exc}") from exc
    return peer


#: Peers that take an argument after ``:`` (``onnx-backend:onnxruntime.backend``), built from
#: the reference and the load time limit.
SPECIAL_PEERS: dict[str, Callable[[PeerRef, float], Peer]] = {
    "onnx-backend": _onnx_backend,
}


#: What ``doctor`` lists for the peers that take an argument (their worked examples).
SPECIAL_EXAMPLES: tuple[str, ...] = ("onnx-backend:onnxruntime.backend",)


class FailedPeer:
    """A plugin that crashed, exited or hung while loading: every call gets ``load_failure``
    (``crash`` or ``timeout`` with the reason), so the run goes on and its exit code shows it."""

    def __init__(self, name: str, ref: str, status: str, reason: str) -> None:
        self.name = name
        self.ref = ref
        self.load_failure = (status, reason)

    def available(self) -> tuple[bool, str]:
        return False, f"{self.load_failure[0]}: {self.load_failure[1]}"

    def version(self) -> str | None:
        return None

    def supports(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        return True, ""

    def run(self, spec: PoolSpec, x: np.ndarray) -> PeerOutput:
        raise PeerLoadError(self.load_failure[1])


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


def _probe(name: str, ref: str, timeout: float, *, raise_errors: bool = False) -> FailedPeer | None:
    """Load the plugin in a throw-away worker first (unless this process is a worker): a plugin
    that kills its process, calls sys.exit or hangs at import becomes a :class:`FailedPeer`.
    With ``raise_errors``, a poolcheck error raised there (no such module...) is raised here."""
    if LOAD_IN_PROCESS:
        return None
    failure = probe_load(name, ref, timeout, raise_errors=raise_errors)
    return None if failure is None else FailedPeer(name, ref, *failure)


def _import_guarded(what: str, load: Callable[[], _T]) -> _T:
    """Run an import with stdout sent to stderr; SystemExit and friends become PeerLoadError."""
    try:
        with stdout_to_stderr():
            return load()
    except SystemExit as exc:
        raise PeerLoadError(f"{what}: the plugin called sys.exit({exc.code!r}) while loading") from None


def _load_file(path: str, load_timeout: float = DEFAULT_LOAD_TIMEOUT) -> Peer:
    full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise PeerNotFoundError(f"peer {path!r}: no such file")
    stem = os.path.splitext(os.path.basename(full))[0]
    digest = hashlib.sha1(full.encode()).hexdigest()[:8]
    mod_name = f"poolcheck_plugin_{stem}_{digest}"
    module = sys.modules.get(mod_name)
    if module is None:
        failed = _probe(stem, full, load_timeout)
        if failed is not None:
            return failed
        spec = importlib.util.spec_from_file_location(mod_name, full)
        if spec is None or spec.loader is None:
            raise PeerLoadError(f"peer {path!r}: cannot import a module from this file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            _import_guarded(f"peer {path!r}", lambda: (spec.loader.exec_module(module), module)[1])  # type: ignore[union-attr]
        except PeerLoadError:
            del sys.modules[mod_name]
            raise
        except Exception as exc:
            del sys.modules[mod_name]
            raise PeerLoadError(f"peer {path!r}: importing the file failed: {type(exc).__name__}: {exc}") from exc
    return _from_object(module, name=stem, ref=full)


def _load_module(name: str, load_timeout: float = DEFAULT_LOAD_TIMEOUT) -> Peer | None:
    """The peer defined by importable module ``name``, or None if there is no such module."""
    if name not in sys.modules:
        try:
            found = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            found = None
        if found is not None:
            failed = _probe(name, name, load_timeout)
            if failed is not None:
                return failed
    try:
        module = _import_guarded(f"peer {name!r}", lambda: importlib.import_module(name))
    except ModuleNotFoundError as exc:
        # Only "no such module" means "not found"; a missing dependency inside it is a load error.
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            return None
        raise PeerLoadError(f"peer {name!r}: importing it failed: {exc}") from exc
    except PeerLoadError:
        raise
    except Exception as exc:
        raise PeerLoadError(f"peer {name!r}: importing it failed: {type(exc).__name__}: {exc}") from exc
    return _from_object(module, name=name, ref=name)


# --------------------------------------------------------------------------- public API


def resolve_peer(name: str | PeerRef, *, load_timeout: float = DEFAULT_LOAD_TIMEOUT) -> Peer:
    """One peer by name (with options): built-in, entry point, file path, or dotted module path."""
    refs = _as_refs(name)
    if len(refs) != 1:
        raise PeerNotFoundError(f"expected one peer, got {len(refs)} in {str(name)!r}" if refs else "empty peer name")
    ref = refs[0]
    special = SPECIAL_PEERS.get(ref.name)
    if special is not None:
        peer = special(ref, load_timeout)
    elif ref.arg:
        raise PeerSpecError(f"--peers: peer {ref.name!r} takes no argument (got {ref.name}:{ref.arg})")
    else:
        peer = _resolve_plain(ref.name, load_timeout)
    if isinstance(peer, FailedPeer):
        return peer
    return _apply_options(peer, ref)


def _resolve_plain(name: str, load_timeout: float = DEFAULT_LOAD_TIMEOUT) -> Peer:
    if name in BUILTIN_PEERS:
        return BUILTIN_PEERS[name]()
    eps = _entry_points()
    for ep in eps:
        if ep.name == name:
            return _load_entry_point(ep)
    if _looks_like_file(name):
        return _load_file(name, load_timeout)
    peer = _load_module(name, load_timeout) if all(part.isidentifier() for part in name.split(".")) else None
    if peer is None:
        plugins = ", ".join(ep.name for ep in eps) or "none installed"
        raise PeerNotFoundError(
            f"unknown peer {name!r}: not a built-in ({', '.join(BUILTIN_PEERS)}, {', '.join(SPECIAL_PEERS)}:MODULE), "
            f"not an installed plugin (entry points in {ENTRY_POINT_GROUP!r}: {plugins}), "
            "and no importable module or .py file of that name"
        )
    return peer


def resolve_in_worker(name: str) -> Peer:
    """Resolve ``name`` inside an isolation worker: that process is the isolation, so a plugin
    is loaded in it directly (no nested probe)."""
    global LOAD_IN_PROCESS
    LOAD_IN_PROCESS = True
    return resolve_peer(name)


set_resolver(resolve_in_worker)


def resolve_peers(names: str | Iterable[str | PeerRef], *, load_timeout: float = DEFAULT_LOAD_TIMEOUT) -> list[Peer]:
    """Peers for a ``--peers`` string or a list of names/PeerRefs, in order (duplicates dropped).

    The whole list is parsed (:func:`parse_peer_list`) before any peer is built, so a malformed
    list fails at once. A plugin that raises, exits or hangs while loading becomes a
    :class:`FailedPeer` (each call ``crash``/``timeout`` with the reason) and the others still
    run. Raises :class:`PeerSpecError` or :class:`PeerNotFoundError` naming the first entry
    that does not resolve."""
    refs = _as_refs(names)
    peers: list[Peer] = []
    seen: set[str] = set()
    for ref in refs:
        if str(ref) in seen:
            continue
        seen.add(str(ref))
        try:
            peer = resolve_peer(ref, load_timeout=load_timeout)
        except PeerLoadError as exc:
            name = os.path.splitext(os.path.basename(ref.name))[0] if _looks_like_file(ref.name) else str(ref)
            full = os.path.abspath(ref.name) if _looks_like_file(ref.name) else str(ref)
            peer = FailedPeer(name, full, "crash", str(exc))
        same = next((p for p in peers if p.name == peer.name), None)
        if same is not None:
            if getattr(same, "ref", None) == getattr(peer, "ref", None):
                continue  # e.g. onnxruntime and onnxruntime:opt=all are one peer
            raise PeerLoadError(f"two peers are named {peer.name!r} (the second is {str(ref)!r}); rename one")
        peers.append(peer)
    return peers


def all_peers() -> list[Peer]:
    """Every built-in peer, then every installed plugin (a plugin that fails to load appears as
    an unavailable peer carrying the error)."""
    peers: list[Peer] = [factory() for factory in BUILTIN_PEERS.values()]
    for example in SPECIAL_EXAMPLES:
        try:
            peers.append(resolve_peer(example))
        except PoolcheckError as exc:  # e.g. onnxruntime is not installed here
            peers.append(BrokenPeer(example, str(exc)))
    for ep in _entry_points():
        try:
            peers.append(_load_entry_point(ep))
        except PoolcheckError as exc:
            peers.append(BrokenPeer(ep.name, str(exc)))
    return peers


def peer_kind(peer: Peer) -> str:
    """``built-in`` or ``plugin``."""
    base = str(getattr(peer, "ref", None)).partition(":")[0]
    return "built-in" if base in BUILTIN_PEERS or base in SPECIAL_PEERS else "plugin"
