"""The one small interface every peer (runtime adapter or user plugin) implements, its results,
its options, the public errors of the peers package and the stand-in for a peer that cannot be
had (:class:`UnavailablePeer`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from poolcheck.errors import PoolcheckError
from poolcheck.spec import dtypes
from poolcheck.spec.family import FAMILY_OPS, FamilySpec
from poolcheck.spec.poolspec import PoolSpec

# --------------------------------------------------------------------------- errors


class PeerDeclined(PoolcheckError):
    """A peer cannot express a configuration (raised by ``run`` when ``supports`` says no)."""

    def __init__(self, peer: str, reason: str) -> None:
        self.peer = peer
        self.reason = reason
        super().__init__(f"{peer} cannot express this configuration: {reason}")


class PeerNotFoundError(PoolcheckError, LookupError):
    """A name in ``--peers`` is no built-in, no installed plugin, and no importable module/file."""


class PeerLoadError(PoolcheckError):
    """A plugin was found but could not be loaded, or does not define a peer."""


class PeerSpecError(PoolcheckError, ValueError):
    """A ``--peers`` list is malformed, or names an option the peer does not accept (exit 2)."""


class InvalidPeerOutput(ValueError):
    """A peer answered with something that is not a pooling output (status ``invalid``)."""


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

    Optional attributes: ``ref``, the name the peer was resolved from (``onnxruntime:opt=all``,
    a file path), and ``rebuild``, a picklable zero-argument callable that makes the same peer
    in another process (the registry sets it on every peer it resolves; an isolation worker
    calls it, and pickles the peer object itself when there is none).

    **The rest of the family** (LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool,
    MaxUnpool, AdaptiveAvgPool, AdaptiveMaxPool; configured by a
    :class:`~poolcheck.spec.family.FamilySpec`) is opt-in, so a peer written for MaxPool and
    AveragePool never sees one:

    - ``family_ops``: optional attribute, the :data:`~poolcheck.spec.family.FAMILY_OPS` names
      the peer takes (e.g. ``("lp", "global_avg", "unpool")``). Absent or empty: poolcheck
      declines every family configuration for the peer without calling it
      (:func:`family_declined`).
    - For an op it lists, ``supports(spec, shape, dtype)`` receives the ``FamilySpec`` (``shape``
      and ``dtype`` are those of the data input X) and returns (False, why) for what the runtime
      cannot express (an opset without the op, an index type the runtime lacks ...).
    - ``run(spec, x)`` computes it; MaxUnpool's second input I (int64 flat indices, the shape of
      ``x``) comes as the keyword ``indices=`` -- passed for ``spec.op == "unpool"`` only, so
      ``run(spec, x)`` stays the whole call for every other op. MaxUnpool's optional third input
      (the whole output shape) is ``spec.output_shape`` (None: not given). AdaptiveMaxPool
      answers its indices in :attr:`PeerOutput.indices` (flat per (n, c) plane, as OpenVINO
      writes them), every other family op values only.
    - Family configurations are never batched: ``run_many`` (see :class:`BatchPeer`) only ever
      receives MaxPool/AveragePool items.

    **Element types** (optional): ``element_types(op)`` -> the element type names (``"float32"``
    ...) the peer can ever take for ``op`` (``"max"``, ``"avg"`` or a family op), whatever the
    rest of the configuration, or None for every type. ``supports`` declines every other type.
    ``poolcheck fuzz`` without ``--dtypes`` draws only the types some peer of the campaign takes
    (:func:`declared_types`); a peer without the method takes every type.
    """

    name: str

    def available(self) -> tuple[bool, str]: ...

    def version(self) -> str | None: ...

    def supports(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]: ...

    def run(self, spec: PoolSpec, x: np.ndarray) -> PeerOutput: ...


#: Either configuration a peer may be handed (a family one only when it lists the op).
AnySpec = PoolSpec | FamilySpec

#: One family call: the configuration, the data input X and MaxUnpool's indices I (else None).
FamilyItem = tuple[FamilySpec, np.ndarray, "np.ndarray | None"]


def family_declined(peer: Any, spec: FamilySpec) -> str | None:
    """Why ``peer`` is not even asked about family configuration ``spec`` (its ``family_ops``
    does not list the op), or None when it is."""
    ops = getattr(peer, "family_ops", ()) or ()
    if spec.op in ops:
        return None
    name = getattr(peer, "name", "the peer")
    return f"{name} does not take {spec.describe().split('(')[0]} (not in its family_ops)"


#: The conventions a peer runs the operators of as written, unless it says otherwise (a plugin's
#: kernel implements the spec it is handed).
ALL_CONVENTIONS: tuple[str, ...] = ("onnx", "openvino")


def operator_conventions(peer: Any) -> tuple[str, ...]:
    """The conventions whose operators ``peer`` runs as written (its optional
    ``operator_conventions``): an ONNX runtime ONNX's, OpenVINO's native API OpenVINO's, PyTorch and
    JAX neither (they translate into an API of their own). Where a configuration is invalid only
    by its operator's own rules (an element type the operator leaves out), a peer that runs
    another operator is not judged on it: that type may be its own operator's (OpenVINO's MaxPool
    takes uint64, ONNX MaxPool-22 does not)."""
    conventions = getattr(peer, "operator_conventions", ALL_CONVENTIONS)
    return tuple(conventions) if isinstance(conventions, (tuple, list)) else ALL_CONVENTIONS


def declared_types(peer: Any, op: str) -> tuple[str, ...] | None:
    """The element types ``peer`` declares it can ever take for ``op`` (its optional
    ``element_types(op)``, see :class:`Peer`): () for a family op it does not list, None when
    it declares nothing (every type) or its declaration raises (a user's peer: then it is asked,
    and declines for itself)."""
    if op in FAMILY_OPS and op not in (getattr(peer, "family_ops", ()) or ()):
        return ()
    declare = getattr(peer, "element_types", None)
    if not callable(declare):
        return None
    try:
        types = declare(op)
        if types is None:
            return None
        return (types,) if isinstance(types, str) else tuple(str(t) for t in types)
    except Exception:
        return None


@dataclass(frozen=True)
class PeerFacts:
    """What a peer says of itself where it runs (its worker, or this process when not
    isolated): whether it can be used here and why not, its version (None when it cannot say),
    and the element types it declares per operator asked (:func:`declared_types`). Asking the
    worker keeps the runtime's import out of poolcheck's own process (torch takes seconds; JAX
    hooks every garbage collection there, where a Ctrl-C can be lost)."""

    available: bool
    why: str = ""
    version: str | None = None
    types: tuple[tuple[str, tuple[str, ...] | None], ...] = ()

    def declared(self, op: str) -> tuple[str, ...] | None:
        """The types declared for ``op`` (None: every type, or ``op`` was not asked)."""
        return dict(self.types).get(op)


def run_family_item(peer: Any, item: FamilyItem) -> Any:
    """``peer.run`` on one family item: ``run(spec, x)``, plus ``indices=I`` for MaxUnpool."""
    spec, x, indices = item
    if spec.op == "unpool":
        return peer.run(spec, x, indices=indices)
    return peer.run(spec, x)


# --------------------------------------------------------------------------- results and batching

#: What became of one peer call. ``rejects``: the peer raised (it refuses the configuration);
#: ``crash``: the worker process died; ``timeout``: no answer in time; ``declined``: the peer
#: cannot express the configuration (``supports`` said no); ``unavailable``: not installed.
#: ``invalid``: the peer answered with something that is not a pooling output (complex, strings,
#: objects, a structured array, the wrong rank), see :func:`validate_output`.
PEER_STATUSES: tuple[str, ...] = ("ok", "rejects", "crash", "timeout", "declined", "unavailable", "invalid")

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


def _check_array(what: str, value: Any, rank: int, kinds: str) -> np.ndarray:
    """``value`` as an ndarray of ``rank`` dimensions and a dtype kind in ``kinds``, or raise."""
    if isinstance(value, np.ndarray):
        arr = value
    else:
        try:
            arr = np.asarray(value)
        except Exception as exc:  # ragged nested lists and the like
            raise InvalidPeerOutput(f"{what} is a {type(value).__name__} that is no array ({exc})") from None
    bfloat16 = arr.dtype == dtypes.BFLOAT16 and "f" in kinds  # a float type NumPy calls kind 'V'
    if arr.dtype.fields is not None or (arr.dtype.kind not in kinds and not bfloat16):
        described = "a structured array" if arr.dtype.fields is not None else f"dtype {arr.dtype}"
        wanted = "an integer" if kinds == "iu" else "a real numeric"
        raise InvalidPeerOutput(f"{what} has {described}, not {wanted} dtype")
    if arr.ndim != rank:
        raise InvalidPeerOutput(f"{what} has rank {arr.ndim} (shape {arr.shape}), expected rank {rank} like the input")
    return arr


def validate_output(out: PeerOutput, x: np.ndarray) -> PeerOutput:
    """Check a peer's answer for input ``x`` before anything compares it: values a real numeric
    ndarray (integer, float; bool only for a bool input) of the input's rank, indices (when
    given) an integer ndarray of the same rank. Raises :class:`InvalidPeerOutput`; returns the
    output with plain ndarrays (a plugin may return lists)."""
    rank = np.ndim(x)
    kinds = "iuf" + ("b" if np.asarray(x).dtype.kind == "b" else "")
    values = _check_array("values", out.values, rank, kinds)
    indices = None if out.indices is None else _check_array("indices", out.indices, rank, "iu")
    notes = out.notes if isinstance(out.notes, list) else [str(n) for n in (out.notes or ())]
    if values is out.values and indices is out.indices and notes is out.notes:
        return out
    return PeerOutput(values, indices, notes)


# --------------------------------------------------------------------------- peer options


@dataclass(frozen=True)
class PeerOption:
    """One option a peer accepts in its name (``onnxruntime:opt=disable``).

    ``choices`` lists every accepted value (matched case-insensitively, written as listed), or
    is empty for an open set (a device or provider name: any identifier, checked when the peer
    runs -- one absent here makes the peer decline every configuration, never fall back).
    """

    key: str
    default: str
    help: str
    choices: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()

    def describe(self) -> str:
        """``opt=disable|basic|extended|all (default all)``."""
        values = "|".join(self.choices) if self.choices else "|".join(self.examples) + "|..."
        return f"{self.key}={values} (default {self.default})"


@runtime_checkable
class BatchPeer(Peer, Protocol):
    """A peer that can compute several configurations in one go (one model, one session).

    ``run_many(items)`` returns, per item and in order, its :class:`PeerOutput` or the exception
    the peer raised for that item alone (one failing item never fails the others).
    """

    def run_many(self, items: list[BatchItem]) -> list[PeerOutput | Exception]: ...


class UnavailablePeer:
    """Stands in for a peer that cannot be had -- a plugin that crashed, exited or hung while
    loading (``status`` ``crash`` or ``timeout``), or an installed plugin that failed to load
    (``unavailable``) -- so a run goes on, every call to it gets ``status`` with the reason, and
    ``doctor`` can say why."""

    def __init__(self, name: str, ref: str, status: str, reason: str) -> None:
        self.name = name
        self.ref = ref
        self.status = status
        self.reason = reason

    def available(self) -> tuple[bool, str]:
        return False, self.reason if self.status == "unavailable" else f"{self.status}: {self.reason}"

    def version(self) -> str | None:
        return None

    def supports(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[bool, str]:
        return False, self.reason

    def run(self, spec: PoolSpec, x: np.ndarray, *, indices: np.ndarray | None = None) -> PeerOutput:
        raise PeerLoadError(self.reason)
