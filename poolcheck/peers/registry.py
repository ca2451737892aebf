"""Finding peers by name: built-ins, installed plugins (entry points), module and file paths.

Every way in ends in one loader: a built-in is a ``"module:Class"`` entry of
:data:`BUILTIN_PEERS` loaded like an installed plugin's entry point, and a module or file path is
imported and read by the same :func:`_from_object`. Every peer resolved here carries ``rebuild``
(see :class:`~poolcheck.peers.base.Peer`): how an isolation worker makes the same peer again.
"""

from __future__ import annotations

import functools
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

from poolcheck.errors import PoolcheckError
from poolcheck.files import stdout_to_stderr
from poolcheck.peers.base import (
    Peer,
    PeerLoadError,
    PeerNotFoundError,
    PeerOption,
    PeerSpecError,
    UnavailablePeer,
)
from poolcheck.peers.isolation import probe_load
from poolcheck.peers.plugin import FAMILY_FUNCTIONS, ModulePeer, is_plugin_module

_T = TypeVar("_T")

#: Entry-point group under which installed packages register peers.
ENTRY_POINT_GROUP = "poolcheck.peers"

#: Seconds a plugin may take to load (the default of ``--peer-timeout``).
DEFAULT_LOAD_TIMEOUT = 60.0


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


#: The built-in peers, written as entry points are: name -> ``"module:Class"``. They load the way
#: an installed plugin does (:func:`_load_entry_point`); constructing one imports no runtime
#: (``available()`` does). A class named in :data:`TAKES_ARGUMENT` is called with the argument
#: after ``:`` (``onnx-backend:onnxruntime.backend``), every other one with none.
BUILTIN_PEERS: dict[str, str] = {
    "onnxruntime": "poolcheck.peers.onnxruntime_peer:OnnxRuntimePeer",
    "openvino": "poolcheck.peers.openvino_peer:OpenVinoPeer",
    "torch": "poolcheck.peers.torch_peer:TorchPeer",
    "onnx_reference": "poolcheck.peers.onnx_reference_peer:OnnxReferencePeer",
    "tract": "poolcheck.peers.tract_peer:TractPeer",
    "jax": "poolcheck.peers.jax_peer:JaxPeer",
    "openvino-onnx": "poolcheck.peers.openvino_onnx_peer:OpenVinoOnnxPeer",
    "torch-onnx": "poolcheck.peers.torch_onnx_peer:TorchOnnxPeer",
    "onnx-backend": "poolcheck.peers.onnx_backend_peer:OnnxBackendPeer",
}

#: Built-in peers that take an argument after ``:``: what it is, and the worked example (the one
#: ``doctor`` lists).
TAKES_ARGUMENT: dict[str, tuple[str, str]] = {
    "onnx-backend": ("MODULE", "onnxruntime.backend"),
}


def builtin_list() -> str:
    """The built-in peer names as a user types them (``onnx-backend:MODULE``), comma-separated."""
    return ", ".join(f"{n}:{TAKES_ARGUMENT[n][0]}" if n in TAKES_ARGUMENT else n for n in BUILTIN_PEERS)


def _builtin(name: str) -> metadata.EntryPoint:
    return metadata.EntryPoint(name=name, value=BUILTIN_PEERS[name], group=ENTRY_POINT_GROUP)


def builtin_peer(name: str, arg: str = "", load_timeout: float | None = DEFAULT_LOAD_TIMEOUT) -> Peer:
    """The built-in peer ``name`` (with its argument, for a peer in :data:`TAKES_ARGUMENT`)."""
    if name in TAKES_ARGUMENT:
        what, example = TAKES_ARGUMENT[name]
        if not arg:
            raise PeerSpecError(f"--peers: {name} needs a {what.lower()}: {name}:{what}, e.g. {name}:{example}")
        if not all(part.isidentifier() for part in arg.split(".")):
            raise PeerSpecError(f"--peers: {name}:{arg}: expected a dotted module name like {example}")
        return _with_module(_load_entry_point(_builtin(name), arg), arg, load_timeout)
    if arg:
        raise PeerSpecError(f"--peers: peer {name!r} takes no argument (got {name}:{arg})")
    return _load_entry_point(_builtin(name))


def _with_module(peer: Any, module: str, load_timeout: float | None) -> Peer:
    """A peer whose argument names a module (``onnx-backend:MODULE``), that module loaded as a
    plugin is (``peer.load()``): probed in a throw-away worker first (exit, crash or hang -> an
    :class:`UnavailablePeer`; no such module, or not what the peer needs -> the usage error
    raised there), then imported here."""
    failed = _probe(peer.name, peer.name, load_timeout, raise_errors=True)
    if failed is not None:
        return failed
    what = f"peer {peer.name!r}"
    try:
        _import_guarded(what, peer.load)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise PeerNotFoundError(f"--peers: {peer.name}: there is no module named {module!r}") from None
        raise PeerLoadError(f"{what}: importing it failed: {exc}") from exc
    except PeerLoadError:
        raise
    except PoolcheckError as exc:  # the module is not what the peer needs (NotAnOnnxBackend)
        raise PeerSpecError(f"--peers: {peer.name}: {exc}") from None
    except Exception as exc:
        raise PeerLoadError(f"{what}: importing it failed: {type(exc).__name__}: {exc}") from exc
    return peer


# --------------------------------------------------------------------------- entry points


def _entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def _from_object(obj: Any, *, name: str, ref: str, args: tuple[str, ...] = ()) -> Peer:
    """A peer from what a plugin exposes: a module with max_pool/avg_pool, a Peer instance,
    a Peer class, or a factory returning a Peer (called with ``args``)."""
    if isinstance(obj, ModuleType):
        if not is_plugin_module(obj):
            raise PeerLoadError(f"peer {name!r}: module {obj.__name__} defines neither max_pool nor avg_pool "
                                f"(nor a family function: {', '.join(FAMILY_FUNCTIONS.values())})")
        return ModulePeer(obj, name=str(getattr(obj, "PEER_NAME", name)), ref=ref)
    if inspect.isclass(obj) or (callable(obj) and not isinstance(obj, Peer)):
        try:
            obj = obj(*args)
        except PoolcheckError:
            raise
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


def _load_entry_point(ep: metadata.EntryPoint, *args: str) -> Peer:
    try:
        obj = ep.load()
    except Exception as exc:
        raise PeerLoadError(f"plugin {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}") from exc
    ref = f"{ep.name}:{args[0]}" if args else ep.name
    return _from_object(obj, name=ep.name, ref=ref, args=args)


# --------------------------------------------------------------------------- module / file paths


def _looks_like_file(name: str) -> bool:
    return name.endswith(".py") or os.sep in name or (os.altsep is not None and os.altsep in name)


def _probe(name: str, ref: str, timeout: float | None, *, raise_errors: bool = False) -> UnavailablePeer | None:
    """Load the plugin in a throw-away worker first (``timeout`` None: this process is a worker
    and is the isolation itself): a plugin that kills its process, calls sys.exit or hangs at
    import becomes an :class:`UnavailablePeer`. With ``raise_errors``, a poolcheck error raised
    there (no such module...) is raised here."""
    if timeout is None:
        return None
    failure = probe_load(name, functools.partial(resolve_in_worker, ref), timeout, raise_errors=raise_errors)
    return None if failure is None else UnavailablePeer(name, ref, *failure)


def _import_guarded(what: str, load: Callable[[], _T]) -> _T:
    """Run an import with stdout sent to stderr; SystemExit and friends become PeerLoadError."""
    try:
        with stdout_to_stderr():
            return load()
    except SystemExit as exc:
        raise PeerLoadError(f"{what}: the plugin called sys.exit({exc.code!r}) while loading") from None


def _load_file(path: str, load_timeout: float | None) -> Peer:
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


def _load_module(name: str, load_timeout: float | None) -> Peer | None:
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


def resolve_peer(name: str | PeerRef, *, load_timeout: float | None = DEFAULT_LOAD_TIMEOUT) -> Peer:
    """One peer by name (with options): built-in, entry point, file path, or dotted module path.

    A plugin file or module is first loaded in a throw-away worker for at most ``load_timeout``
    seconds; ``None`` loads it here directly (what a worker does: it is the isolation)."""
    refs = _as_refs(name)
    if len(refs) != 1:
        raise PeerNotFoundError(f"expected one peer, got {len(refs)} in {str(name)!r}" if refs else "empty peer name")
    ref = refs[0]
    if ref.name in BUILTIN_PEERS:
        peer = builtin_peer(ref.name, ref.arg, load_timeout)
    elif ref.arg:
        raise PeerSpecError(f"--peers: peer {ref.name!r} takes no argument (got {ref.name}:{ref.arg})")
    else:
        peer = _resolve_plain(ref.name, load_timeout)
        if not isinstance(peer, UnavailablePeer):
            _check_plugin_name(peer.name, ref.name)
    if isinstance(peer, UnavailablePeer):
        return peer
    peer = _apply_options(peer, ref)
    try:
        peer.rebuild = functools.partial(resolve_in_worker, str(getattr(peer, "ref", ref)))
    except AttributeError:  # a peer object that takes no new attributes is pickled to its worker
        pass
    return peer


#: The reference engines' names: a runner name in every result (poolcheck.engines.ENGINE_NAMES).
_ENGINE_RUNNERS = ("numpy", "c")


def _check_plugin_name(name: object, ref: str) -> None:
    """A plugin's name (``PEER_NAME``, or its ``name``) is a runner of its own in every result: it
    may not be empty, be a built-in peer's or an engine's (its divergences would be reported as
    theirs), or hold ``|`` (a divergence signature's separator)."""
    where = f"--peers: {ref}"
    if not isinstance(name, str) or not name.strip():
        raise PeerSpecError(f"{where}: expected a name (PEER_NAME), got {name!r}")
    base = name.split(":", 1)[0]
    if base in BUILTIN_PEERS:
        raise PeerSpecError(f"{where}: the name {name!r} is a built-in peer's; a plugin names itself (PEER_NAME)")
    if name in _ENGINE_RUNNERS:
        raise PeerSpecError(f"{where}: the name {name!r} is a reference engine's; a plugin names itself (PEER_NAME)")
    if "|" in name:
        raise PeerSpecError(f"{where}: a name may not hold '|' (it separates a divergence signature), got {name!r}")


def _resolve_plain(name: str, load_timeout: float | None) -> Peer:
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
            f"unknown peer {name!r}: not a built-in ({builtin_list()}), "
            f"not an installed plugin (entry points in {ENTRY_POINT_GROUP!r}: {plugins}), "
            "and no importable module or .py file of that name"
        )
    return peer


def resolve_in_worker(name: str) -> Peer:
    """Resolve ``name`` inside an isolation worker: that process is the isolation, so a plugin
    is loaded in it directly (no nested probe)."""
    return resolve_peer(name, load_timeout=None)


def resolve_peers(names: str | Iterable[str | PeerRef], *, load_timeout: float = DEFAULT_LOAD_TIMEOUT) -> list[Peer]:
    """Peers for a ``--peers`` string or a list of names/PeerRefs, in order (duplicates dropped).

    The whole list is parsed (:func:`parse_peer_list`) before any peer is built, so a malformed
    list fails at once. A plugin that raises, exits or hangs while loading becomes an
    :class:`UnavailablePeer` (each call ``crash``/``timeout`` with the reason) and the others
    still run. Raises :class:`PeerSpecError` or :class:`PeerNotFoundError` naming the first entry
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
            peer = UnavailablePeer(name, full, "crash", str(exc))
        same = next((p for p in peers if p.name == peer.name), None)
        if same is not None:
            if getattr(same, "ref", None) == getattr(peer, "ref", None):
                continue  # e.g. onnxruntime and onnxruntime:opt=all are one peer
            raise PeerLoadError(f"two peers are named {peer.name!r} (the second is {str(ref)!r}); rename one")
        peers.append(peer)
    return peers


def all_peers() -> list[Peer]:
    """Every built-in peer (those that take an argument with their worked example), then every
    installed plugin (a plugin that fails to load appears as an unavailable peer carrying the
    error)."""
    peers: list[Peer] = []
    for name in BUILTIN_PEERS:
        entry = f"{name}:{TAKES_ARGUMENT[name][1]}" if name in TAKES_ARGUMENT else name
        try:
            peers.append(resolve_peer(entry))
        except PoolcheckError as exc:  # e.g. the example's module (onnxruntime) is not installed here
            peers.append(UnavailablePeer(entry, entry, "unavailable", str(exc)))
    for ep in _entry_points():
        try:
            peers.append(resolve_peer(ep.name))
        except PoolcheckError as exc:
            peers.append(UnavailablePeer(ep.name, ep.name, "unavailable", str(exc)))
    return peers


def peer_kind(peer: Peer) -> str:
    """``built-in`` or ``plugin``."""
    base = str(getattr(peer, "ref", None)).partition(":")[0]
    return "built-in" if base in BUILTIN_PEERS else "plugin"
