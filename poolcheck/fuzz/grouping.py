"""One root cause, one finding: a peer's divergences that one explanation accounts for are grouped.

When a new divergence of a peer appears, the explanations of the peer's existing groups are
replayed on its example (:func:`~poolcheck.fuzz.diagnosis.replay`), and its own explanation (and
the alternatives its diagnosis verified) on theirs; what one explanation reproduces merges. The
group is named after an explanation only while that explanation reproduces *every* example of the
group; when several do, the others are shown ("ambiguous: also consistent with ..."); when none
does, the group is unexplained and shows its symptom. A rejection joins a group whose geometry
explanation makes that configuration one a runtime refuses (no output, or a pad reaching past the
kernel).

The session groups online (an example a group already explains is not shrunk again) and the
campaign groups every session's examples once more, so a run here, ``--jobs`` and ``--cluster``
give the same rows.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.errors import AttributeValueError, PoolcheckError
from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.diagnosis import (
    GEOMETRY_VARIANTS,
    UNEXPLAINED_SEVERITY,
    predict,
    replay,
    severity_of,
    variant_text,
)
from poolcheck.fuzz.diagnosis.family import family_variant_text, replay_family
from poolcheck.fuzz.diagnosis.family import rejection_explained as family_rejection_explained
from poolcheck.fuzz.diagnosis.symptom import shape_symptom
from poolcheck.judgement import close_values
from poolcheck.results import FindingKind, PeerStatus, Signature
from poolcheck.spec import dtypes
from poolcheck.spec.family import is_family
from poolcheck.spec.poolspec import PoolSpec
from poolcheck.spec.shape import resolve

Cause = tuple[str, ...]

#: Examples a group keeps (the first ones, then only smaller ones replace the largest).
MAX_EXAMPLES = 8

_GEOMETRY = {gv.key: gv for gv in GEOMETRY_VARIANTS}


@dataclass
class Group:
    """A peer's divergences that one explanation (or none) accounts for."""

    key: str  # the first member's signature: the group's identity in a session
    kind: FindingKind
    op: str
    subject: str
    causes: list[Cause]  # explanations that reproduce every member (empty: unexplained)
    members: list[O.Finding] = field(default_factory=list)
    signatures: set[str] = field(default_factory=set)  # every member signature seen
    known: bool = False  # a registry entry: its cause is known, it has no members of its own

    @property
    def name(self) -> str:
        if self.causes:
            return "+".join(self.causes[0])
        first = self.members[0] if self.members else None
        return first.atom or first.klass if first is not None else self.key

    pinned: int = 0  # members kept whatever their size: the first, and each that refuted a cause

    def add(self, f: O.Finding, *, pin: bool = False) -> None:
        self.signatures.add(f.signature)
        if pin or not self.members:
            self.members.insert(self.pinned, f)
            self.pinned += 1
            return
        if len(self.members) < MAX_EXAMPLES + self.pinned:
            self.members.append(f)
            return
        largest = max(range(self.pinned, len(self.members)), key=lambda i: self.members[i].size)
        if f.size < self.members[largest].size:
            self.members[largest] = f


def _arrays(f: O.Finding) -> tuple[np.ndarray, np.ndarray | None] | None:
    values = f.actual.get("values")
    if values is None or not isinstance(values, np.ndarray) or not (values.dtype.kind in "iu" or
                                                                   dtypes.is_float(values.dtype)):
        return None
    indices = f.actual.get("indices")
    return values, (None if indices is None else np.asarray(indices))


def _rejection_explained(cause: Cause, f: O.Finding) -> bool:
    """A geometry explanation accounts for a peer refusing the configuration when, read its
    way, the configuration has no output, or a pad of at least the kernel the spec's has not."""
    spec, shape = f.case.spec, tuple(int(v) for v in f.case.x.shape)
    if is_family(spec):
        indices = getattr(f.case, "indices", None)
        return family_rejection_explained(cause, spec, shape, None if indices is None else np.asarray(indices))
    try:  # the pads the spec applies (under SAME or VALID its pads attributes are ignored)
        applied = [(a.pad_begin, a.pad_end, a.kernel) for a in resolve(spec, shape).axes]
    except (PoolcheckError, ValueError, ZeroDivisionError):
        applied = list(zip(spec.pads_begin, spec.pads_end, spec.kernel))
    own_too_large = any(p >= k for b, e, k in applied for p in (b, e))

    for key in cause:
        gv = _GEOMETRY.get(key)
        if gv is None:  # (applied whether or not the diagnosis would try it here: the cause is established)
            continue

        try:
            g = gv.build(spec, shape).geom
        except (AttributeValueError, ValueError, ZeroDivisionError):
            return True
        if any(o < 1 for o in g.output_shape[2:]):
            return True
        if any(p >= a.kernel for a in g.axes for p in (a.pad_begin, a.pad_end)) and not own_too_large:
            return True
    return False


def _diagnosed(f: O.Finding) -> bool:
    """An output the diagnosis took apart (not a refusal, crash or output-contract breach, which
    keep their own class)."""
    return f.kind == FindingKind.PEER and f.status == PeerStatus.OK and "variants" in f.extra


def covers(engine_module: ModuleType, cause: Cause, f: O.Finding) -> bool:
    """Whether ``cause`` accounts for ``f``'s example: its replay reproduces the peer's output
    (alone, or with the example's other behaviours), or it explains the peer's refusal."""
    if not cause:
        return False
    if f.status == PeerStatus.REJECTS:
        return _rejection_explained(cause, f)
    if f.status != PeerStatus.OK:
        return False
    arrays = _arrays(f)
    if arrays is None:
        return False
    values, indices = arrays
    spec, x = f.case.spec, f.case.x
    if is_family(spec):
        return replay_family(spec, x, getattr(f.case, "indices", None), cause, (values, indices))
    others = [k for k in f.extra.get("variants", ()) if k != f.atom and k not in cause]
    for keys in ([*cause], [*others, *cause]) if others else ([*cause],):
        try:
            r = replay(engine_module, spec, x, keys, values, indices)
        except (PoolcheckError, ValueError):
            continue
        if r is not None and r.exact:
            return True
    return False


def candidates(f: O.Finding) -> list[Cause]:
    """The explanations ``f`` offers as a group's cause: its own behaviour, then the other full
    explanations its diagnosis verified on the same example."""
    if f.kind != FindingKind.PEER or f.status != PeerStatus.OK or not f.explained:
        return []
    out: list[Cause] = []
    if f.atom and f.atom in f.extra.get("variants", ()):
        out.append((f.atom,))
    for alt in f.extra.get("alternatives", ()):
        if tuple(alt) not in out:
            out.append(tuple(alt))
    return out


class Grouping:
    """The groups of one campaign (or one session), by peer and operator."""

    def __init__(self, engine_module: ModuleType, known_signatures: Iterable[str] = (),
                 ruled_out: Iterable[tuple[str, str, Cause]] = ()) -> None:
        self.engine_module = engine_module
        #: (subject, op, cause) that an experiment on the peer refuted (see :func:`distinguish`)
        self.ruled_out: set[tuple[str, str, Cause]] = set(ruled_out)
        self.groups: list[Group] = []
        self.by_signature: dict[str, Group] = {}
        self._pin = False  # the example being placed refuted or named a cause: keep it
        for key in known_signatures:
            sig = Signature.parse(key)
            if sig.kind == FindingKind.PEER and not sig.detail.startswith(("rejects", "unexplained", "shape:")):
                g = Group(key, sig.kind, sig.op, sig.subject, [tuple(sig.detail.split("+"))], known=True)
                self.groups.append(g)

    def _candidates(self, f: O.Finding) -> list[Cause]:
        return [c for c in candidates(f) if (f.subject, f.op, c) not in self.ruled_out]

    def _peers(self, f: O.Finding) -> list[Group]:
        """The groups of ``f``'s peer, max and average alike (one cause may show in both); a
        registry entry only for its own operator."""
        return [g for g in self.groups if (g.kind, g.subject) == (f.kind, f.subject) and (not g.known or g.op == f.op)]

    def place(self, f: O.Finding) -> Group:
        """The group ``f`` belongs to (a new one when no explanation covers it)."""
        g = self.by_signature.get(f.signature)
        if g is not None:
            # the example's own diagnosis is the group's cause: it reproduces it by construction
            own = g.causes == [(f.atom,)] or not g.causes
            fitting = g.causes if own else [c for c in g.causes if covers(self.engine_module, c, f)]
            if fitting or not g.causes:
                narrowed = len(fitting) < len(g.causes)
                g.causes = fitting
                g.add(f, pin=narrowed)
                return g
            # a name that fits this example is not the group's: the example is placed afresh
        self._pin = False
        if f.kind == FindingKind.PEER:
            g = self._absorb(f) or self._adopt(f)
            if g is None and _diagnosed(f) and not self._candidates(f):
                g = self._unexplained(f.subject)  # no name fits: one unexplained row per peer
        if g is None:
            key = f.signature
            while any(other.key == key for other in self.groups):
                key += "#"  # one signature in two groups (its name fits one example, not the other)
            g = Group(key, f.kind, f.op, f.subject,
                      [c for c in self._candidates(f) if covers(self.engine_module, c, f)] or self._candidates(f))
            self.groups.append(g)
            self.by_signature.setdefault(key, g)
        g.add(f, pin=self._pin)
        self.by_signature.setdefault(f.signature, g)
        self._fold(g)
        return g

    def _unexplained(self, subject: str, but: Group | None = None) -> Group | None:
        """The peer's group of outputs no explanation covers, if there is one."""
        return next((g for g in self.groups if g is not but and g.kind == FindingKind.PEER and g.subject == subject
                     and not g.known and not g.causes and g.members and all(_diagnosed(m) for m in g.members)), None)

    def refute(self, group: Group) -> Group:
        """``group``'s cause was refuted: it joins the peer's unexplained group (or becomes it)."""
        group.causes = []
        other = self._unexplained(group.subject, but=group)
        if other is None:
            return group
        for m in group.members:
            other.add(m)
        other.signatures |= group.signatures
        for sig in group.signatures | {group.key}:
            self.by_signature[sig] = other
        self.groups.remove(group)
        return other

    def _absorb(self, f: O.Finding) -> Group | None:
        """An existing group whose cause reproduces ``f`` (its causes narrowed to those that do)."""
        for g in self._peers(f):
            fitting = [c for c in g.causes if covers(self.engine_module, c, f)]
            if fitting:
                if len(fitting) < len(g.causes):
                    g.causes = fitting
                    self._pin = True  # the example that refuted the others stays on record
                return g
        return None

    def _adopt(self, f: O.Finding) -> Group | None:
        """An existing group all of whose examples one of ``f``'s explanations reproduces: it
        takes that explanation as its cause."""
        mine = [c for c in self._candidates(f) if covers(self.engine_module, c, f)]
        for g in self._peers(f):
            if g.known or not g.members:
                continue
            fitting = [c for c in mine if all(covers(self.engine_module, c, m) for m in g.members)]
            if fitting:
                g.causes = fitting
                self._pin = True  # the example that named the group stays on record
                return g
        return None

    def _fold(self, into: Group) -> None:
        """Other groups of the same peer whose every example ``into``'s cause reproduces join it."""
        if not into.causes:
            return
        for g in list(self._peers(into.members[0])):
            if g is into or g.known or not g.members:
                continue
            fitting = [c for c in into.causes if all(covers(self.engine_module, c, m) for m in g.members)]
            if fitting:
                into.causes = fitting
                for m in g.members:
                    into.add(m)
                into.signatures |= g.signatures
                for sig in g.signatures:
                    self.by_signature[sig] = into
                self.groups.remove(g)


#: The peer's output on a configuration (values, indices), or None when it gives none.
Ask = Callable[[PoolSpec, np.ndarray], "tuple[np.ndarray, np.ndarray | None] | None"]


def _neighbours(spec: PoolSpec, shape: tuple[int, ...]) -> Iterator[tuple[PoolSpec, tuple[int, ...]]]:
    """Configurations one attribute away from ``spec`` on ``shape``: each axis' size, pads,
    stride and kernel, then batch and channels (those the attribute checks refuse are left out)."""

    def changed(**changes: object) -> list[PoolSpec]:
        try:
            return [spec.replace(**changes)]
        except (PoolcheckError, ValueError, TypeError):
            return []

    n = spec.spatial_rank
    for i in range(n):
        def at(values: tuple[int, ...], v: int, i: int = i) -> tuple[int, ...]:
            return (*values[:i], v, *values[i + 1:])

        for size in range(1, 9):
            yield spec, (*shape[:2], *at(shape[2:], size))
        if spec.auto_pad == "explicit":
            for pad in range(0, 4):
                yield from ((s, shape) for s in changed(pads_begin=at(spec.pads_begin, pad)))
                yield from ((s, shape) for s in changed(pads_end=at(spec.pads_end, pad)))
        for stride in range(1, 4):
            yield from ((s, shape) for s in changed(strides=at(spec.strides, stride)))
        for kernel in range(1, 5):
            yield from ((s, shape) for s in changed(kernel=at(spec.kernel, kernel)))
    for b, c in ((2, shape[1]), (shape[0], 2), (2, 3)):
        yield spec, (b, c, *shape[2:])
    # then pads and stride of one axis together (where two explanations part only when they move
    # at once: a last-window test against H or H + pads_end needs a pads_end the stride reaches)
    for i in range(n) if spec.auto_pad == "explicit" else ():
        for pb, pe, stride in itertools.product(range(4), range(4), range(1, 4)):
            yield from ((s, shape) for s in changed(
                pads_begin=(*spec.pads_begin[:i], pb, *spec.pads_begin[i + 1:]),
                pads_end=(*spec.pads_end[:i], pe, *spec.pads_end[i + 1:]),
                strides=(*spec.strides[:i], stride, *spec.strides[i + 1:])))


def _sample(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Distinct values (no ties), negative ones where the type has them; an integer type's lowest
    and highest values in two places (a bug at the extremes -- a negation wrapping, a scan seeded
    off by one -- shows in the experiment as it did in the example, instead of leaving a name that
    fits the example only unrefuted)."""
    size = math.prod(shape)
    values = rng.permutation(size) - (size // 2 if dtype.kind != "u" else 0)
    out = values.reshape(shape).astype(dtype)
    if dtype.kind in "iu" and size:
        info = np.iinfo(dtype)
        flat = out.reshape(-1)
        places = rng.choice(size, size=min(2, size), replace=False)
        flat[places] = (info.min, info.max)[:len(places)]
    return out


def _agrees(pred: tuple[np.ndarray, np.ndarray | None], out: tuple[np.ndarray, np.ndarray | None]) -> bool:
    if pred[0].shape != out[0].shape:
        return False
    if not close_values(pred[0], out[0], None if not dtypes.is_float(pred[0].dtype) else
                        np.abs(pred[0].astype(np.float64)) * 1e-3 + 1e-6).all():
        return False
    if pred[1] is None or out[1] is None or pred[1].shape != out[1].shape:
        return True
    return bool((pred[1] == np.asarray(out[1]).astype(np.int64)).all())


def distinguish(engine_module: ModuleType, group: Group, ask: Ask, *, budget: int = 24) -> list[Cause]:
    """Tell a group's candidate causes apart by experiment: on configurations next to its smallest
    example where they predict different outputs, ask the peer, and keep the causes whose
    prediction it matches. Returns the causes refuted (at most ``budget`` peer calls)."""
    if len(group.causes) < 2 or not group.members:
        return []
    rep = min(group.members, key=lambda f: f.size)
    rng = np.random.default_rng(0)
    refuted: list[Cause] = []
    for spec, shape in _neighbours(rep.case.spec, tuple(int(v) for v in rep.case.x.shape)):
        if budget <= 0 or len(group.causes) < 2:
            break
        if not _informative(spec, shape, group.causes):
            continue
        x = _sample(shape, rep.case.x.dtype, rng)
        preds = {c: predict(engine_module, spec, x, c) for c in group.causes}
        if any(p is None for p in preds.values()):
            continue
        first = next(iter(preds.values()))
        assert first is not None
        if all(p is not None and _agrees(p, first) and _agrees(first, p) for p in preds.values()):
            continue  # the causes agree here: nothing to learn
        budget -= 1
        out = ask(spec, x)
        if out is None:
            continue
        keep = [c for c in group.causes if (p := preds[c]) is not None and _agrees(p, out)]
        if keep:
            refuted += [c for c in group.causes if c not in keep]
            group.causes = keep
    return refuted


def _informative(spec: PoolSpec, shape: tuple[int, ...], causes: Sequence[Cause] = ()) -> bool:
    """A configuration an experiment may use: valid, and without windows wholly in padding, as the
    spec or any of ``causes`` places them (their value and index the text leaves open: a peer's
    policy there says nothing about a cause)."""
    try:
        if w.empty_windows(resolve(spec, shape)) is not None:
            return False
        for cause in causes:
            for key in cause:
                gv = _GEOMETRY.get(key)
                if gv is not None and gv.applies(spec) and w.empty_windows(gv.build(spec, shape).geom) is not None:
                    return False
    except (PoolcheckError, ValueError, ZeroDivisionError):
        return False
    return True


def refutes(engine_module: ModuleType, group: Group, ask: Ask, *, budget: int = 8) -> bool:
    """Whether the peer contradicts its group's one cause: on configurations next to the smallest
    example where the cause predicts a divergence, the peer diverges from the spec in a way the
    cause does not predict. (A peer that agrees with the spec there says nothing: its bug may
    need a condition the neighbour lacks.)"""
    if len(group.causes) != 1 or not group.members:
        return False
    cause = group.causes[0]
    rep = min(group.members, key=lambda f: f.size)
    rng = np.random.default_rng(1)
    confirmed = 0
    for spec, shape in _neighbours(rep.case.spec, tuple(int(v) for v in rep.case.x.shape)):
        if budget <= 0 or confirmed >= 3:
            break
        if not _informative(spec, shape, (cause,)):
            continue
        x = _sample(shape, rep.case.x.dtype, rng)
        mine, plain = predict(engine_module, spec, x, cause), predict(engine_module, spec, x, ())
        if mine is None or plain is None or (_agrees(mine, plain) and _agrees(plain, mine)):
            continue
        budget -= 1
        out = ask(spec, x)
        if out is None:
            continue
        if _agrees(mine, out):
            confirmed += 1
        elif not _agrees(plain, out):
            return True
    return False


def group_text(g: Group, rep: O.Finding) -> str:
    """What a group's row says: the shape first when shapes differ, then the cause (with the
    others that fit every example too), or "unexplained" and the symptom."""
    parts = []
    arrays = _arrays(rep)
    symptom = shape_symptom(rep.case.spec, tuple(rep.case.x.shape), tuple(arrays[0].shape)) \
        if arrays and not is_family(rep.case.spec) else ""
    if symptom:
        parts.append(symptom)
    if g.causes:
        text = family_variant_text if is_family(rep.case.spec) else variant_text
        parts.append("; ".join(text(k) for k in g.causes[0]))
        if len(g.causes) > 1:
            parts.append("ambiguous: also consistent with " + ", ".join("+".join(c) for c in g.causes[1:]))
    elif _diagnosed(rep) and rep.explained:
        parts.append("unexplained: no named variant reproduces every example of this divergence (this one "
                     f"alone fits: {rep.klass})")
    elif _diagnosed(rep):
        parts.append("unexplained: no known variant gives this shape" if symptom else rep.text)
    else:
        parts.append(rep.text)
    return "; ".join(parts)


def group_finding(g: Group, rep: O.Finding, examples: int) -> O.Finding:
    """The one finding a group is reported as: the representative example under the group's name,
    with the number of divergent examples seen."""
    if not g.causes:
        if rep.explained and _diagnosed(rep):  # its name was refuted, or fits this example only
            unexplained = "unexplained output"
            return dataclasses.replace(rep, klass=unexplained, atom=unexplained, atoms=(unexplained,), explained=False,
                                       severity=UNEXPLAINED_SEVERITY, text=group_text(g, rep),
                                       extra={**rep.extra, "examples": examples})
        return dataclasses.replace(rep, text=group_text(g, rep), extra={**rep.extra, "examples": examples})
    name = g.name
    return dataclasses.replace(
        rep, klass=name, atom=name, atoms=(name,), explained=True, text=group_text(g, rep),
        severity=severity_of(g.causes[0], rep.case.spec),
        extra={**rep.extra, "examples": examples, "also": ["+".join(c) for c in g.causes[1:]],
               "cause": list(g.causes[0])},
    )


CAUSE_TAG = "cause:"


def cause_tags(f: O.Finding) -> list[str]:
    """Tags naming every explanation that reproduces all of a row's examples (``cause:KEYS``), so
    rows from separate runs can be grouped without their inputs (:func:`join_by_cause`)."""
    causes = ["+".join(f.extra.get("cause", ()))] + list(f.extra.get("also", ()))
    return [CAUSE_TAG + c for c in causes if c]


def join_by_cause(rows: dict[str, tuple[str, Sequence[str]]]) -> dict[str, str]:
    """``key -> (subject, tags)`` of rows from several runs -> ``key -> the key of its group``:
    rows of one subject that share an explanation (a ``cause:`` tag) are one root cause."""
    parent = {k: k for k in rows}

    def root(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    first: dict[tuple[str, str], str] = {}
    for key in sorted(rows):
        subject, tags = rows[key]
        for tag in tags:
            if not tag.startswith(CAUSE_TAG):
                continue
            other = first.setdefault((subject, tag), key)
            a, b = root(key), root(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return {k: root(k) for k in rows}


def group_all(engine_module: ModuleType, findings: Sequence[O.Finding], known: Iterable[str] = (),
              ruled_out: Iterable[tuple[str, str, Cause]] = ()) -> Grouping:
    """Group ``findings`` (in the order they were seen) as a session does."""
    grouping = Grouping(engine_module, known, ruled_out)
    for f in findings:
        grouping.place(f)
    return grouping


__all__ = ["CAUSE_TAG", "Group", "Grouping", "candidates", "cause_tags", "covers", "distinguish", "group_all",
           "group_finding", "group_text", "join_by_cause", "refutes"]
