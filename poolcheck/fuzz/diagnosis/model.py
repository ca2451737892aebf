"""The result of a diagnosis: :class:`Diagnosis` (a stable class for signatures, a text for people)."""

from __future__ import annotations

from dataclasses import dataclass

from poolcheck.results import Severity


@dataclass(frozen=True)
class Diagnosis:
    """Why a subject differs: ``klass`` is stable (signatures), ``text`` is for people."""

    klass: str
    text: str
    explained: bool
    variants: tuple[str, ...] = ()
    ambiguous: bool = False  # another explanation fits this example equally well
    atoms: tuple[str, ...] = ()  # the separate behaviours: each variant, and what stays unexplained
    #: the weight of the divergence: the most severe of its atoms (see :data:`SEVERITY_RULES`)
    severity: Severity | None = None
    #: which elements each named variant accounts for: (variant, values, indices) counts
    attribution: tuple[tuple[str, int, int], ...] = ()
    #: other explanations whose replay reproduces this example too (each a tuple of variant keys):
    #: the candidates a campaign tries on the subject's other examples before it names a cause
    alternatives: tuple[tuple[str, ...], ...] = ()
