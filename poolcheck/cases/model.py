"""The in-memory form of a case file entry (schema: docs/case-format.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from poolcheck.errors import AttributeValueError
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.poolspec import PoolSpec


@dataclass
class Case:
    """One conformance case: a configuration, an input, and what a document says comes out."""

    id: str
    op: str
    convention: str
    spec: PoolSpec | FamilySpec
    attributes: dict[str, Any]
    dtype: np.dtype
    input: np.ndarray
    expected: dict[str, Any]  # "values"/"indices": np.ndarray, "shape": tuple
    path: str = "<memory>"
    line: int = 0
    title: str = ""
    source: dict[str, Any] = field(default_factory=dict)
    rtol: float = 0.0
    atol: float = 0.0
    erratum: dict[str, Any] | None = None
    transcription: str = ""
    notes: str = ""
    tags: list[str] = field(default_factory=list)
    input_recipe: dict[str, Any] | None = None
    field_lines: dict[str, int] = field(default_factory=dict)
    #: Inputs beyond the first (MaxUnpool's index tensor ``I``), by the operator's input name.
    inputs: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def pool_spec(self) -> PoolSpec:
        """The MaxPool/AveragePool configuration, for the commands that handle only those (explain,
        export, the fuzzer's known divergences, peers); a family operator raises
        :class:`~poolcheck.errors.AttributeValueError` naming ``op``, one line, exit 2."""
        if isinstance(self.spec, PoolSpec):
            return self.spec
        raise AttributeValueError("op", f"{self.op}: this command handles MaxPool and AveragePool cases only (case {self.id})")

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path
