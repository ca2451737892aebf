"""The operator catalogue: one row per operator version, and the two directions through it.

A row (:class:`OperatorVersion`) says everything poolcheck knows about one operator version's
vocabulary: its convention and op, its attributes (names, types, defaults, which are required),
the element types it allows and how it spells rounding. :func:`parse` reads an attribute mapping
in that vocabulary into the canonical :class:`~poolcheck.spec.poolspec.PoolSpec`; :func:`spell`
writes a ``PoolSpec`` back in it. Case files, the fuzzer, the peers, the model importers and the
public API all go through here; adding an operator version is adding one row to
:data:`OPERATORS` (a new convention also needs its parse/spell pair below).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from poolcheck.errors import AttributeValueError
from poolcheck.spec.dtypes import BFLOAT16
from poolcheck.spec.poolspec import (
    AUTO_PADS,
    FLOAT_DTYPES,
    INDEX_ELEMENT_TYPES,
    INT_DTYPES,
    PoolSpec,
    axis_value,
    boolean,
    choice,
    flag,
    int_list,
    kernel_list,
)

#: How each attribute is typed in a case file: ``ints`` a list of integers, ``flag`` 0 or 1,
#: ``bool`` true/false, ``str`` one of a fixed set, ``int`` one integer.
AttributeType = Literal["ints", "flag", "bool", "str", "int"]

#: A default that depends on the kernel's rank (zeros or ones per spatial axis): written ``None``.
PER_AXIS = None


@dataclass(frozen=True)
class Attribute:
    """One attribute of an operator version: its name, type and default (``PER_AXIS`` = one
    value per spatial axis, see the row's parser)."""

    name: str
    type: AttributeType
    default: Any = PER_AXIS


@dataclass(frozen=True)
class OperatorVersion:
    """One catalogue row: an operator version's whole vocabulary."""

    name: str
    convention: Literal["openvino", "onnx"]
    op: Literal["max", "avg"]
    #: Every attribute in the operator's own order (the order :func:`spell` writes).
    attributes: tuple[Attribute, ...]
    required: tuple[str, ...]
    #: Element types of the input, as NumPy names.
    dtypes: tuple[str, ...]
    #: The rounding attribute's name and its values -> poolcheck's canonical rounding.
    rounding_attribute: str
    rounding: Mapping[Any, str]
    #: The sentence of the operator's document the dtypes and rounding come from.
    source: str = ""

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def default(self, name: str) -> Any:
        return next(a.default for a in self.attributes if a.name == name)


# --------------------------------------------------------------------------- vocabularies

#: ONNX ``auto_pad`` values -> canonical.
ONNX_AUTO_PADS: dict[str, str] = {
    "NOTSET": "explicit",
    "VALID": "valid",
    "SAME_UPPER": "same_upper",
    "SAME_LOWER": "same_lower",
}
ONNX_AUTO_PAD_NAMES: dict[str, str] = {v: k for k, v in ONNX_AUTO_PADS.items()}

#: OpenVINO MaxPool-8: "rounding_type ... Range of values: ceil, floor".
OPENVINO_ROUNDING_8 = {"floor": "floor", "ceil": "ceil"}
#: MaxPool-14 and AvgPool-14 add ``ceil_torch``.
OPENVINO_ROUNDING_14 = {"floor": "floor", "ceil": "ceil", "ceil_torch": "ceil_torch"}
#: ONNX ``ceil_mode``: "Whether to use ceil or floor (default) to compute the output shape";
#: ceil rounds up and (onnx reference, test_maxpool_2d_ceil_output_size_reduce_by_one) drops a
#: last window that would start past the input and the begin padding: OpenVINO's ceil_torch.
ONNX_CEIL_MODE = {0: "floor", 1: "ceil_torch"}

#: OpenVINO MaxPool "T: floating point or integer type".
OPENVINO_MAX_DTYPES = FLOAT_DTYPES + INT_DTYPES
#: ONNX MaxPool-22 T: bfloat16, float16, float, double, int8, uint8 (bfloat16 is ml_dtypes' type,
#: see :mod:`poolcheck.spec.dtypes`).
ONNX_MAX_DTYPES = FLOAT_DTYPES + (BFLOAT16.name, "int8", "uint8")
#: ONNX AveragePool "T: ... Allowed types: tensor(double), tensor(float), tensor(float16)".
#: Averages are computed for floating-point inputs only, in both conventions.
AVG_DTYPES = FLOAT_DTYPES
#: ONNX AveragePool-22 adds tensor(bfloat16).
ONNX_AVG_DTYPES_22 = FLOAT_DTYPES + (BFLOAT16.name,)

_OV_MAX_ATTRIBUTES = (
    Attribute("kernel", "ints"), Attribute("strides", "ints"), Attribute("pads_begin", "ints"),
    Attribute("pads_end", "ints"), Attribute("dilations", "ints"), Attribute("rounding_type", "str", "floor"),
    Attribute("auto_pad", "str", "explicit"), Attribute("axis", "int", 0),
    Attribute("index_element_type", "str", "i64"),
)
_OV_AVG_ATTRIBUTES = (
    Attribute("kernel", "ints"), Attribute("strides", "ints"), Attribute("pads_begin", "ints"),
    Attribute("pads_end", "ints"), Attribute("rounding_type", "str", "floor"),
    Attribute("auto_pad", "str", "explicit"), Attribute("exclude_pad", "bool", False),
)
_ONNX_COMMON = (
    Attribute("kernel_shape", "ints"), Attribute("strides", "ints"), Attribute("pads", "ints"),
    Attribute("dilations", "ints"), Attribute("ceil_mode", "flag", 0), Attribute("auto_pad", "str", "NOTSET"),
)
_ONNX_MAX_ATTRIBUTES = (*_ONNX_COMMON, Attribute("storage_order", "flag", 0))
_ONNX_AVG_ATTRIBUTES = (*_ONNX_COMMON, Attribute("count_include_pad", "flag", 0))

# --------------------------------------------------------------------------- the catalogue

#: Every operator version poolcheck reads, by its case-file name. One row per version.
OPERATORS: dict[str, OperatorVersion] = {
    row.name: row
    for row in (
        OperatorVersion("MaxPool-8", "openvino", "max", _OV_MAX_ATTRIBUTES, ("kernel", "strides"),
                        OPENVINO_MAX_DTYPES, "rounding_type", OPENVINO_ROUNDING_8,
                        "OpenVINO MaxPool-8: rounding_type 'ceil, floor'; T 'floating point or integer type'"),
        OperatorVersion("MaxPool-14", "openvino", "max", _OV_MAX_ATTRIBUTES, ("kernel", "strides"),
                        OPENVINO_MAX_DTYPES, "rounding_type", OPENVINO_ROUNDING_14,
                        "OpenVINO MaxPool-14: rounding_type 'ceil_torch, ceil, floor'"),
        OperatorVersion("AvgPool-14", "openvino", "avg", _OV_AVG_ATTRIBUTES, ("kernel", "strides"),
                        AVG_DTYPES, "rounding_type", OPENVINO_ROUNDING_14,
                        "OpenVINO AvgPool-14: no dilations; rounding_type 'ceil_torch, ceil, floor'"),
        OperatorVersion("MaxPool-22", "onnx", "max", _ONNX_MAX_ATTRIBUTES, ("kernel_shape",),
                        ONNX_MAX_DTYPES, "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX MaxPool-22: T 'Constrain input and output types to float and 8 bit tensors.' "
                        "(onnx.defs.get_schema('MaxPool', 22): tensor(bfloat16), tensor(float16), tensor(float), "
                        "tensor(double), tensor(int8), tensor(uint8))"),
        OperatorVersion("AveragePool-19", "onnx", "avg", _ONNX_AVG_ATTRIBUTES, ("kernel_shape",),
                        AVG_DTYPES, "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX AveragePool-19: T 'tensor(double), tensor(float), tensor(float16)'"),
        OperatorVersion("AveragePool-22", "onnx", "avg", _ONNX_AVG_ATTRIBUTES, ("kernel_shape",),
                        ONNX_AVG_DTYPES_22, "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX AveragePool-22: as -19; T 'Constrain input and output types to float tensors.' "
                        "(onnx.defs.get_schema('AveragePool', 22): tensor(bfloat16), tensor(float16), "
                        "tensor(float), tensor(double))"),
    )
}


def operator(name: str) -> OperatorVersion:
    """The catalogue row named ``name`` (e.g. ``"MaxPool-14"``)."""
    row = OPERATORS.get(name) if isinstance(name, str) else None
    if row is None:
        raise AttributeValueError("op", f"expected one of {', '.join(OPERATORS)}, got {name!r}")
    return row


def newest(op: str, convention: str) -> OperatorVersion:
    """The newest version of ``op`` ("max"/"avg") in ``convention`` (rows are listed oldest first)."""
    rows = [r for r in OPERATORS.values() if r.op == op and r.convention == convention]
    if not rows:
        raise AttributeValueError("op", f"no {convention} operator for {op!r} pooling")
    return rows[-1]


def allowed_dtypes(op: str, convention: str) -> tuple[str, ...]:
    """The element types ``op`` allows in ``convention`` (its newest version's)."""
    return newest(op, convention).dtypes


# --------------------------------------------------------------------------- parse


def parse(name: str, attrs: Mapping[str, Any]) -> PoolSpec:
    """Validate ``attrs`` (spelled as operator ``name`` spells them) into the canonical spec.

    Unknown attributes, missing required ones and bad values raise
    :class:`~poolcheck.errors.AttributeValueError` naming the attribute.
    """
    row = operator(name)
    unknown = sorted(set(attrs) - set(row.attribute_names))
    if unknown:
        raise AttributeValueError(
            unknown[0], f"not an attribute of {name} (allowed: {', '.join(sorted(row.attribute_names))})")
    for req in row.required:
        if req not in attrs:
            raise AttributeValueError(req, f"required by {name}")
    values = {a.name: attrs.get(a.name, a.default) for a in row.attributes}
    return _PARSERS[row.convention](row, values)


def _per_axis(value: Any, fill: int, count: int) -> Any:
    return value if value is not None else [fill] * count


def _parse_openvino(row: OperatorVersion, a: dict[str, Any]) -> PoolSpec:
    k = kernel_list("kernel", a["kernel"])
    n = len(k)
    # "strides ... Range of values: integer values starting from 0" -- a zero stride has no
    # meaning (the shape formula divides by it); poolcheck requires >= 1 and records the
    # documentation defect as an erratum of the MaxPool-8 page.
    s = int_list("strides", a["strides"], minimum=1, length=n)
    pb = int_list("pads_begin", _per_axis(a["pads_begin"], 0, n), minimum=0, length=n)
    pe = int_list("pads_end", _per_axis(a["pads_end"], 0, n), minimum=0, length=n)
    if row.op == "max":
        d = int_list("dilations", _per_axis(a["dilations"], 1, n), minimum=1, length=n)
    else:
        d = (1,) * n  # AvgPool has no dilations
    r = row.rounding[choice("rounding_type", a["rounding_type"], tuple(row.rounding))]
    ap = choice("auto_pad", a["auto_pad"], AUTO_PADS)
    if row.op == "avg":
        ex = boolean("exclude_pad", a["exclude_pad"])
        return PoolSpec("avg", k, s, pb, pe, d, r, ap, ex, 0, "i64", 0, "openvino")  # type: ignore[arg-type]
    ax = axis_value(a["axis"])
    it = choice("index_element_type", a["index_element_type"], tuple(INDEX_ELEMENT_TYPES))
    return PoolSpec("max", k, s, pb, pe, d, r, ap, False, ax, it, 0, "openvino")  # type: ignore[arg-type]


def _parse_onnx(row: OperatorVersion, a: dict[str, Any]) -> PoolSpec:
    k = kernel_list("kernel_shape", a["kernel_shape"])
    n = len(k)
    s = int_list("strides", _per_axis(a["strides"], 1, n), minimum=1, length=n)
    # "pads ... format should be as follow [x1_begin, x2_begin...x1_end, x2_end,...]"
    p = int_list("pads", _per_axis(a["pads"], 0, 2 * n), minimum=0, length=None)
    if len(p) != 2 * n:
        raise AttributeValueError(
            "pads",
            f"expected {2 * n} values (all begins, then all ends) for {n} spatial axes, got {len(p)} ({list(p)})",
        )
    d = int_list("dilations", _per_axis(a["dilations"], 1, n), minimum=1, length=n)
    # ceil_mode=1 is ceil_torch under every auto_pad; the shape rule knows that ONNX VALID ignores
    # it (PoolSpec.applied_rounding), so the spec keeps what was written.
    r = row.rounding[flag("ceil_mode", a["ceil_mode"])]
    ap = ONNX_AUTO_PADS[choice("auto_pad", a["auto_pad"], tuple(ONNX_AUTO_PADS))]
    if row.op == "max":
        so = flag("storage_order", a["storage_order"])
        return PoolSpec("max", k, s, p[:n], p[n:], d, r, ap, False, 0, "i64", so, "onnx")  # type: ignore[arg-type]
    # "count_include_pad: Whether include pad pixels when calculating values for the edges."
    cip = flag("count_include_pad", a["count_include_pad"])
    return PoolSpec("avg", k, s, p[:n], p[n:], d, r, ap, not cip, 0, "i64", 0, "onnx")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- spell


def spell(spec: PoolSpec, name: str) -> dict[str, Any]:
    """``spec`` in operator ``name``'s own attribute names and values (lists, ints, strings).

    For a spec of the row's own convention this is exact: ``parse(name, spell(spec, name)) ==
    spec``. For the other convention it translates the meaning: the rounding actually applied
    (:attr:`PoolSpec.applied_rounding`), and for ONNX, OpenVINO's rounded ``valid`` as NOTSET with
    zero pads. Shape-dependent limits (plain ``ceil`` keeping a window that ``ceil_mode`` would
    drop, ONNX SAME's negative pads) are for the caller to check on its input; a value the
    operator has no word for raises :class:`~poolcheck.errors.AttributeValueError`.
    """
    row = operator(name)
    if row.op != spec.op:
        raise AttributeValueError("op", f"{name} is {row.op} pooling, the configuration is {spec.op} pooling")
    return _SPELLERS[row.convention](row, spec)


def _rounding_word(row: OperatorVersion, rounding: str) -> Any:
    for word, canonical in row.rounding.items():
        if canonical == rounding:
            return word
    raise AttributeValueError(row.rounding_attribute, f"{row.name} has no rounding {rounding!r}")


def _spell_openvino(row: OperatorVersion, spec: PoolSpec) -> dict[str, Any]:
    rounding = spec.rounding_type if spec.convention == "openvino" else spec.applied_rounding
    out: dict[str, Any] = {"kernel": list(spec.kernel), "strides": list(spec.strides),
                           # ONNX "pads [x1_begin, x2_begin...x1_end, x2_end,...]" are already split.
                           "pads_begin": list(spec.pads_begin), "pads_end": list(spec.pads_end)}
    if row.op == "max":
        out["dilations"] = list(spec.dilations)
    elif any(d != 1 for d in spec.dilations):
        raise AttributeValueError("dilations", f"{row.name} has no dilations (got {list(spec.dilations)})")
    out["rounding_type"] = _rounding_word(row, rounding)
    out["auto_pad"] = spec.auto_pad
    if row.op == "max":
        out["axis"] = spec.axis
        out["index_element_type"] = spec.index_element_type
    else:
        # ONNX count_include_pad=1 is exclude_pad=false.
        out["exclude_pad"] = bool(spec.exclude_pad)
    return out


def _spell_onnx(row: OperatorVersion, spec: PoolSpec) -> dict[str, Any]:
    n = spec.spatial_rank
    auto_pad = spec.auto_pad
    pb, pe = spec.pads_begin, spec.pads_end
    rounding = spec.rounding_type
    if spec.convention != "onnx":
        if auto_pad != "explicit":
            pb, pe = (0,) * n, (0,) * n  # OpenVINO keeps pads it ignores; ONNX writes none
        if auto_pad in ("same_upper", "same_lower"):
            # SAME: "output_spatial_shape[i] = ceil(input_spatial_shape[i] /
            # strides_spatial_shape[i])" -- rounding plays no part, as in OpenVINO.
            rounding = "floor"
        elif rounding == "ceil":
            rounding = "ceil_torch"  # the caller has checked they agree on its input
        if auto_pad == "valid" and rounding != "floor":
            # OpenVINO "valid" with ceil rounding is "no padding, rounded up", which ONNX writes
            # as NOTSET, pads 0, ceil_mode 1 (its VALID ignores ceil_mode).
            auto_pad = "explicit"
    out: dict[str, Any] = {"kernel_shape": list(spec.kernel), "strides": list(spec.strides)}
    if auto_pad == "explicit" or any(pb) or any(pe):
        out["pads"] = list(pb) + list(pe)
    out["dilations"] = list(spec.dilations)
    out["ceil_mode"] = _rounding_word(row, rounding)
    out["auto_pad"] = ONNX_AUTO_PAD_NAMES[auto_pad]
    if row.op == "max":
        out["storage_order"] = spec.storage_order if spec.convention == "onnx" else 0
    else:
        out["count_include_pad"] = 0 if spec.exclude_pad else 1
    return out


_PARSERS = {"openvino": _parse_openvino, "onnx": _parse_onnx}
_SPELLERS = {"openvino": _spell_openvino, "onnx": _spell_onnx}


# --------------------------------------------------------------------------- inputs


def check_input(spec: PoolSpec, shape: Sequence[int], dtype: Any) -> np.dtype:
    """Validate an input's rank, dimensions and element type against ``spec``."""
    shape = tuple(int(v) for v in shape)
    if len(shape) != spec.rank:
        raise AttributeValueError(
            "kernel",
            f"{spec.spatial_rank} spatial value(s) need an input of rank {spec.rank}, "
            f"got rank {len(shape)} (shape {shape})",
        )
    if any(v < 1 for v in shape):
        raise AttributeValueError("input", f"every dimension must be >= 1, got shape {shape}")
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise AttributeValueError("dtype", f"not a NumPy dtype: {dtype!r}") from exc
    allowed = allowed_dtypes(spec.op, spec.convention)
    if dt.name not in allowed:
        op = {"max": "MaxPool", "avg": "AvgPool"}[spec.op]
        raise AttributeValueError(
            "dtype", f"{op} ({spec.convention}) does not allow {dt.name}; allowed: {', '.join(allowed)}"
        )
    if spec.op == "max" and spec.convention == "openvino":
        # "The range is [-R, R - 1], where R is the rank of the input tensor."
        if not -spec.rank <= spec.axis <= spec.rank - 1:
            raise AttributeValueError(
                "axis", f"must lie in [-{spec.rank}, {spec.rank - 1}] for a rank-{spec.rank} input, got {spec.axis}"
            )
    return dt
