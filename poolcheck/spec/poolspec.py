"""The canonical pooling configuration (:class:`PoolSpec`) and the field validators.

Every operator version is parsed into a ``PoolSpec`` by :mod:`poolcheck.spec.operators` (the
catalogue), using the validators here; nothing in this module knows any operator's spelling.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from poolcheck.errors import AttributeValueError
from poolcheck.spec.limits import MAX_EXTENT

Op = Literal["max", "avg"]
Rounding = Literal["floor", "ceil", "ceil_torch"]
AutoPad = Literal["explicit", "valid", "same_upper", "same_lower"]
Convention = Literal["openvino", "onnx"]

ROUNDING_TYPES: tuple[str, ...] = ("floor", "ceil", "ceil_torch")
AUTO_PADS: tuple[str, ...] = ("explicit", "valid", "same_upper", "same_lower")
INDEX_ELEMENT_TYPES: dict[str, type[np.integer]] = {"i32": np.int32, "i64": np.int64}

FLOAT_DTYPES: tuple[str, ...] = ("float16", "float32", "float64")
INT_DTYPES: tuple[str, ...] = (
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
)

@dataclass(frozen=True)
class PoolSpec:
    """A pooling configuration in poolcheck's canonical (OpenVINO-shaped) vocabulary.

    ``rounding_type`` is the one rounding: ONNX ``ceil_mode=1`` is ``ceil_torch`` whatever
    ``auto_pad`` says (:attr:`applied_rounding` is what the shape rule then uses).

    ``pads_begin``/``pads_end`` are the explicit pads as given; ``auto_pad`` other than
    ``explicit`` overrides them when the geometry is resolved against an input shape.
    """

    op: Op
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    dilations: tuple[int, ...]
    rounding_type: Rounding = "floor"
    auto_pad: AutoPad = "explicit"
    exclude_pad: bool = False
    axis: int = 0
    index_element_type: str = "i64"
    storage_order: int = 0
    convention: Convention = "openvino"

    @property
    def applied_rounding(self) -> Rounding:
        """The rounding the shape rule applies: ``rounding_type``, except that ONNX VALID ignores
        ``ceil_mode`` ("VALID: output_spatial_shape[i] = ceil((input_spatial_shape[i] -
        ((kernel_spatial_shape[i] - 1) * dilations[i] + 1) + 1) / strides_spatial_shape[i])",
        whatever ``ceil_mode`` says, which equals the floor rule). OpenVINO applies its rounding
        under ``valid`` too; SAME ignores rounding in both (see :mod:`poolcheck.spec.shape`)."""
        if self.convention == "onnx" and self.auto_pad == "valid":
            return "floor"
        return self.rounding_type

    @property
    def ceil_mode(self) -> int:
        """ONNX ``ceil_mode`` as written (read-only, derived from ``rounding_type``; 0 for an
        OpenVINO-convention spec, whose rounding ONNX spells only after translation)."""
        return int(self.convention == "onnx" and self.rounding_type != "floor")

    @property
    def spatial_rank(self) -> int:
        return len(self.kernel)

    @property
    def rank(self) -> int:
        return len(self.kernel) + 2

    def replace(self, **changes: Any) -> PoolSpec:
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        """A one-line label, e.g. ``MaxPool(kernel=[2, 2], strides=[2, 2], ceil)``."""
        name = "MaxPool" if self.op == "max" else "AvgPool"
        parts = [f"kernel={list(self.kernel)}", f"strides={list(self.strides)}"]
        if any(d != 1 for d in self.dilations):
            parts.append(f"dilations={list(self.dilations)}")
        if self.auto_pad == "explicit":
            if any(self.pads_begin) or any(self.pads_end):
                parts.append(f"pads={list(self.pads_begin)}/{list(self.pads_end)}")
        else:
            parts.append(self.auto_pad)
        if self.rounding_type != "floor":
            parts.append(self.rounding_type)
        if self.op == "avg":
            parts.append("exclude_pad" if self.exclude_pad else "include_pad")
        else:
            if self.axis:
                parts.append(f"axis={self.axis}")
            if self.storage_order:
                parts.append("storage_order=1")
        return f"{name}({', '.join(parts)})"


# --------------------------------------------------------------------------- validation helpers


def short_int(v: Any) -> str:
    """An integer for a message: a 400-digit value is shown by its size, not spelled out."""
    text = str(int(v))
    return text if len(text) <= 24 else f"{text[:6]}...({len(text)} digits)"


def comma_ints(text: str) -> list[int]:
    """Command-line integers: ``"2, 2"`` -> ``[2, 2]`` (``""`` -> ``[]``; one trailing comma
    allowed). ValueError for an item that is not an integer -- an empty one (``1,,7``) included,
    never dropped (that would answer for a list the user did not give) -- and one that is not plain
    ASCII digits with an optional sign: Python's int() reads ``1_6`` as 16 and ``\uff12`` as 2."""
    parts = text.replace(" ", "").split(",")
    if parts[-1] == "":
        parts.pop()
    for p in parts:
        if not _DECIMAL.fullmatch(p):
            raise ValueError(f"not a decimal integer: {p!r}")
    return [int(p) for p in parts]


_DECIMAL = re.compile(r"[+-]?[0-9]+")


def short_list(value: Any) -> str:
    items = [short_int(x) if isinstance(x, (int, np.integer)) and not isinstance(x, bool) else repr(x)
             for x in list(value)[:8]]
    return "[" + ", ".join(items) + (", ...]" if len(value) > 8 else "]")


def int_list(name: str, value: Any, *, minimum: int, length: int | None) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence | np.ndarray):
        raise AttributeValueError(name, f"expected a list of integers, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise AttributeValueError(name, f"expected integers, got {v!r} in {list(value)!r}")
        if v < minimum:
            raise AttributeValueError(
                name, f"every value must be >= {minimum}, got {short_int(v)} in {short_list(value)}"
            )
        if v > MAX_EXTENT:
            raise AttributeValueError(
                name, f"every value must be <= {MAX_EXTENT} (2^31 - 1), got {short_int(v)} in {short_list(value)}"
            )
        out.append(int(v))
    if length is not None and len(out) != length:
        raise AttributeValueError(
            name,
            f"expected {length} value(s), one per spatial axis of kernel, got {len(out)} ({out})",
        )
    return tuple(out)


def kernel_list(name: str, value: Any) -> tuple[int, ...]:
    # "kernel ... Range of values: integer values starting from 1"
    kernel = int_list(name, value, minimum=1, length=None)
    if not 1 <= len(kernel) <= 3:
        raise AttributeValueError(
            name,
            f"expected 1, 2 or 3 spatial values (inputs of rank 3, 4 or 5), got {len(kernel)}",
        )
    return kernel


def choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise AttributeValueError(
            name, f"expected one of {', '.join(repr(a) for a in allowed)}, got {value!r}"
        )
    return value


def flag(name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return int(value)
    raise AttributeValueError(name, f"expected 0 or 1, got {value!r}")


def boolean(name: str, value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise AttributeValueError(name, f"expected true or false, got {value!r}")


def axis_value(value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise AttributeValueError("axis", f"expected an integer, got {value!r}")
    return int(value)
