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
from poolcheck.spec.dtypes import BFLOAT16, name_of
from poolcheck.spec.family import FAMILY_OPS, FamilySpec, check_family_input, parse_family, spell_family
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

    #: The case-file name: the operator's own name (``"MaxPool-14"``), qualified by convention
    #: (``"onnx:MaxPool-8"``) where another convention's operator has the same name.
    name: str
    convention: Literal["openvino", "onnx"]
    #: "max"/"avg" (MaxPool/AveragePool, parsed into PoolSpec), or a family op (FamilySpec).
    op: str
    #: Every attribute in the operator's own order (the order :func:`spell` writes).
    attributes: tuple[Attribute, ...]
    required: tuple[str, ...]
    #: Element types of the input, as NumPy names.
    dtypes: tuple[str, ...]
    #: The rounding attribute's name and its values -> poolcheck's canonical rounding.
    rounding_attribute: str
    rounding: Mapping[Any, str]
    #: The sentence of the operator's document the dtypes and rounding come from (for an older
    #: version: the sentence that differs from its neighbour's).
    source: str = ""
    #: Whether the operator has a second output (MaxPool's Indices: ONNX from version 8).
    indices_output: bool = True

    @property
    def title(self) -> str:
        """The operator's own versioned name (``"MaxPool-8"`` for ``"onnx:MaxPool-8"``)."""
        return self.name.split(":", 1)[-1]

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
#: ONNX MaxPool-12 T: tensor(float16), tensor(float), tensor(double), tensor(int8), tensor(uint8).
ONNX_MAX_DTYPES_12 = FLOAT_DTYPES + ("int8", "uint8")
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

# The older versions: each drops what its successor added (the Changelog's attribute lists).
_OV_MAX_1_ATTRIBUTES = tuple(a for a in _OV_MAX_ATTRIBUTES if a.name not in ("dilations", "axis", "index_element_type"))
_OV_AVG_1_ATTRIBUTES = (
    Attribute("kernel", "ints"), Attribute("strides", "ints"), Attribute("pads_begin", "ints"),
    Attribute("pads_end", "ints"), Attribute("exclude-pad", "bool"), Attribute("rounding_type", "str", "floor"),
    Attribute("auto_pad", "str", "explicit"),
)
_ONNX_1_COMMON = tuple(a for a in _ONNX_COMMON if a.name not in ("dilations", "ceil_mode"))
_ONNX_MAX_1_ATTRIBUTES = _ONNX_1_COMMON
_ONNX_MAX_8_ATTRIBUTES = (*_ONNX_1_COMMON, Attribute("storage_order", "flag", 0))
_ONNX_AVG_1_ATTRIBUTES = _ONNX_1_COMMON
_ONNX_AVG_7_ATTRIBUTES = (*_ONNX_1_COMMON, Attribute("count_include_pad", "flag", 0))
_ONNX_AVG_10_ATTRIBUTES = tuple(a for a in _ONNX_AVG_ATTRIBUTES if a.name != "dilations")
#: ONNX MaxPool-1..11, AveragePool-1..22: "T: tensor(float16), tensor(float), tensor(double)".
ONNX_FLOAT_DTYPES = FLOAT_DTYPES

# The rest of the family (poolcheck/spec/family.py). Attributes that ONNX and OpenVINO pass as an
# input tensor (MaxUnpool's output_shape, the adaptive pools' output shape) are written as
# attributes in a case file; MaxUnpool's index tensor I is a case's second input.
_LP_ATTRIBUTES = (*_ONNX_COMMON, Attribute("p", "int", 2))
_LP_2_ATTRIBUTES = (*_ONNX_1_COMMON, Attribute("p", "int", 2))
_UNPOOL_ATTRIBUTES = (Attribute("kernel_shape", "ints"), Attribute("strides", "ints"), Attribute("pads", "ints"),
                      Attribute("output_shape", "ints", None))
_ADAPTIVE_AVG_ATTRIBUTES = (Attribute("output_shape", "ints"),)
_ADAPTIVE_MAX_ATTRIBUTES = (Attribute("output_shape", "ints"), Attribute("index_element_type", "str", "i64"))
#: ONNX LpPool-22, GlobalAveragePool-22, GlobalMaxPool-22, GlobalLpPool-22 T and MaxUnpool-22 T1:
#: tensor(bfloat16), tensor(float16), tensor(float), tensor(double) (their -22 adds bfloat16).
ONNX_FAMILY_DTYPES_22 = FLOAT_DTYPES + (BFLOAT16.name,)
#: AdaptiveAvgPool-8 / AdaptiveMaxPool-8 "T: floating-point type."
OPENVINO_FLOAT_DTYPES = FLOAT_DTYPES

# --------------------------------------------------------------------------- the catalogue

#: Every operator version poolcheck reads, by its case-file name. One row per version, each
#: op's versions oldest first (:func:`newest` relies on it).
OPERATORS: dict[str, OperatorVersion] = {
    row.name: row
    for row in (
        OperatorVersion("MaxPool-1", "openvino", "max", _OV_MAX_1_ATTRIBUTES, ("kernel", "strides"),
                        OPENVINO_MAX_DTYPES, "rounding_type", OPENVINO_ROUNDING_8,
                        "OpenVINO MaxPool-1: no dilations and one output (its type as [OV-OUT-TYPE] says); MaxPool-8 "
                        "adds dilations and the indices output", indices_output=False),
        OperatorVersion("MaxPool-8", "openvino", "max", _OV_MAX_ATTRIBUTES, ("kernel", "strides"),
                        OPENVINO_MAX_DTYPES, "rounding_type", OPENVINO_ROUNDING_8,
                        "OpenVINO MaxPool-8: rounding_type 'ceil, floor'; T 'floating point or integer type'"),
        OperatorVersion("MaxPool-14", "openvino", "max", _OV_MAX_ATTRIBUTES, ("kernel", "strides"),
                        OPENVINO_MAX_DTYPES, "rounding_type", OPENVINO_ROUNDING_14,
                        "OpenVINO MaxPool-14: rounding_type 'ceil_torch, ceil, floor'"),
        OperatorVersion("AvgPool-1", "openvino", "avg", _OV_AVG_1_ATTRIBUTES, ("kernel", "strides", "exclude-pad"),
                        AVG_DTYPES, "rounding_type", OPENVINO_ROUNDING_8,
                        "OpenVINO AvgPool-1: '*exclude-pad* is a type of pooling strategy for values in the padding "
                        "area' (spelled with a hyphen; Required: yes); rounding_type 'ceil, floor'"),
        OperatorVersion("AvgPool-14", "openvino", "avg", _OV_AVG_ATTRIBUTES, ("kernel", "strides"),
                        AVG_DTYPES, "rounding_type", OPENVINO_ROUNDING_14,
                        "OpenVINO AvgPool-14: no dilations; rounding_type 'ceil_torch, ceil, floor'"),
        OperatorVersion("onnx:MaxPool-1", "onnx", "max", _ONNX_MAX_1_ATTRIBUTES, ("kernel_shape",),
                        ONNX_FLOAT_DTYPES, "", {0: "floor"},
                        "ONNX MaxPool-1: one output Y; 'output_spatial_shape[i] = floor((input_spatial_shape[i] + "
                        "pad_shape[i] - kernel_spatial_shape[i]) / strides_spatial_shape[i] + 1)'", indices_output=False),
        OperatorVersion("onnx:MaxPool-8", "onnx", "max", _ONNX_MAX_8_ATTRIBUTES, ("kernel_shape",),
                        ONNX_FLOAT_DTYPES, "", {0: "floor"},
                        "ONNX MaxPool-8: 'Indices tensor from max pooling across the input tensor'; storage_order "
                        "[ONNX-STORAGE-ORDER]"),
        OperatorVersion("MaxPool-10", "onnx", "max", _ONNX_MAX_ATTRIBUTES, ("kernel_shape",),
                        ONNX_FLOAT_DTYPES, "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX MaxPool-10: ceil_mode 'Whether to use ceil or floor (default) to compute the output "
                        "shape.'; dilations [ONNX-DILATIONS]"),
        OperatorVersion("MaxPool-11", "onnx", "max", _ONNX_MAX_ATTRIBUTES, ("kernel_shape",),
                        ONNX_FLOAT_DTYPES, "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX MaxPool-11: strides 'If not present, the stride defaults to 1 along each spatial axis.' "
                        "(and dilations likewise; poolcheck applies these defaults to every version)"),
        OperatorVersion("MaxPool-12", "onnx", "max", _ONNX_MAX_ATTRIBUTES, ("kernel_shape",),
                        ONNX_MAX_DTYPES_12, "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX MaxPool-12: T 'tensor(float16), tensor(float), tensor(double), tensor(int8), "
                        "tensor(uint8)'"),
        OperatorVersion("MaxPool-22", "onnx", "max", _ONNX_MAX_ATTRIBUTES, ("kernel_shape",),
                        ONNX_MAX_DTYPES, "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX MaxPool-22: T 'Constrain input and output types to float and 8 bit tensors.' "
                        "(onnx.defs.get_schema('MaxPool', 22): tensor(bfloat16), tensor(float16), tensor(float), "
                        "tensor(double), tensor(int8), tensor(uint8))"),
        OperatorVersion("AveragePool-1", "onnx", "avg", _ONNX_AVG_1_ATTRIBUTES, ("kernel_shape",),
                        ONNX_FLOAT_DTYPES, "", {0: "floor"},
                        "ONNX AveragePool-1: [ONNX-DIVISOR] without its parenthesis: the divisor always excludes the "
                        "pad (no count_include_pad before version 7)"),
        OperatorVersion("AveragePool-7", "onnx", "avg", _ONNX_AVG_7_ATTRIBUTES, ("kernel_shape",),
                        ONNX_FLOAT_DTYPES, "", {0: "floor"},
                        "ONNX AveragePool-7: 'divided by the number of elements (exclude pad when attribute "
                        "count_include_pad is zero)'"),
        OperatorVersion("AveragePool-10", "onnx", "avg", _ONNX_AVG_10_ATTRIBUTES, ("kernel_shape",),
                        ONNX_FLOAT_DTYPES, "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX AveragePool-10: ceil_mode 'Whether to use ceil or floor (default) to compute the output "
                        "shape.'"),
        OperatorVersion("AveragePool-11", "onnx", "avg", _ONNX_AVG_10_ATTRIBUTES, ("kernel_shape",),
                        ONNX_FLOAT_DTYPES, "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX AveragePool-11: strides 'If not present, the stride defaults to 1'; its formulas name "
                        "'dilations[i]', an attribute it does not have (-19 adds it), and 'when ceil_mode is disabled: "
                        "SAME_UPPER or SAME_LOWER: output_spatial_shape[i] = floor(input_spatial_shape[i] / "
                        "strides_spatial_shape[i])', which contradicts its auto_pad 'output_shape[i] = "
                        "ceil(input_shape[i] / strides[i])' (poolcheck applies ceil, as every version does)"),
        OperatorVersion("AveragePool-19", "onnx", "avg", _ONNX_AVG_ATTRIBUTES, ("kernel_shape",),
                        AVG_DTYPES, "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX AveragePool-19: T 'tensor(double), tensor(float), tensor(float16)'"),
        OperatorVersion("AveragePool-22", "onnx", "avg", _ONNX_AVG_ATTRIBUTES, ("kernel_shape",),
                        ONNX_AVG_DTYPES_22, "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX AveragePool-22: as -19; T [ONNX-AVG-TYPES] "
                        "(onnx.defs.get_schema('AveragePool', 22): tensor(bfloat16), tensor(float16), "
                        "tensor(float), tensor(double))"),
        OperatorVersion("LpPool-2", "onnx", "lp", _LP_2_ATTRIBUTES, ("kernel_shape",), FLOAT_DTYPES, "", {},
                        "ONNX LpPool-2: no ceil_mode, no dilations; strides 'Stride along each spatial axis.' (no "
                        "default stated; poolcheck takes 1, as -11 says); auto_pad SAME [ONNX-AUTO-PAD-SAME-MATCH], "
                        "which no stride > 1 can give (poolcheck applies -11's ceil(input / strides), as ONNX "
                        "Runtime, onnx.reference and onnx's shape inference do at opsets 2 and 10)", indices_output=False),
        OperatorVersion("LpPool-11", "onnx", "lp", _LP_2_ATTRIBUTES, ("kernel_shape",), FLOAT_DTYPES, "", {},
                        "ONNX LpPool-11: strides 'If not present, the stride defaults to 1 along each spatial axis.'; "
                        "auto_pad SAME: 'output_shape[i] = ceil(input_shape[i] / strides[i])' (-2: "
                        "[ONNX-AUTO-PAD-SAME-MATCH])",
                        indices_output=False),
        OperatorVersion("LpPool-18", "onnx", "lp", _LP_ATTRIBUTES, ("kernel_shape",), FLOAT_DTYPES,
                        "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX LpPool-18: the Lp norm of each window [ONNX-LP-NORM]; adds ceil_mode and dilations to -11", indices_output=False),
        OperatorVersion("LpPool-22", "onnx", "lp", _LP_ATTRIBUTES, ("kernel_shape",), ONNX_FAMILY_DTYPES_22,
                        "ceil_mode", ONNX_CEIL_MODE,
                        "ONNX LpPool-22: as -18; T [ONNX-AVG-TYPES] "
                        "(onnx.defs.get_schema('LpPool', 22): tensor(bfloat16), tensor(float16), tensor(float), "
                        "tensor(double))", indices_output=False),
        OperatorVersion("GlobalAveragePool-1", "onnx", "global_avg", (), (), FLOAT_DTYPES, "", {},
                        "ONNX GlobalAveragePool-1: as -22 but T 'tensor(float16), tensor(float), tensor(double)' "
                        "(-22 adds tensor(bfloat16))", indices_output=False),
        OperatorVersion("GlobalAveragePool-22", "onnx", "global_avg", (), (), ONNX_FAMILY_DTYPES_22, "", {},
                        "ONNX GlobalAveragePool-22: 'This is equivalent to AveragePool with kernel size equal to the "
                        "spatial dimension of input tensor.'", indices_output=False),
        OperatorVersion("GlobalMaxPool-1", "onnx", "global_max", (), (), FLOAT_DTYPES, "", {},
                        "ONNX GlobalMaxPool-1: as -22 but T 'tensor(float16), tensor(float), tensor(double)'",
                        indices_output=False),
        OperatorVersion("GlobalMaxPool-22", "onnx", "global_max", (), (), ONNX_FAMILY_DTYPES_22, "", {},
                        "ONNX GlobalMaxPool-22: 'This is equivalent to MaxPool with kernel size equal to the spatial "
                        "dimension of input tensor.'", indices_output=False),
        OperatorVersion("GlobalLpPool-2", "onnx", "global_lp", (Attribute("p", "int", 2),), (), FLOAT_DTYPES,
                        "", {}, "ONNX GlobalLpPool-2: as -22 but T 'tensor(float16), tensor(float), tensor(double)' "
                        "(ONNX Runtime implements this version, not -22)", indices_output=False),
        OperatorVersion("GlobalLpPool-22", "onnx", "global_lp", (Attribute("p", "int", 2),), (), ONNX_FAMILY_DTYPES_22,
                        "", {}, "ONNX GlobalLpPool-22: 'This is equivalent to LpPool with kernel size equal to the "
                        "spatial dimension of input tensor.'", indices_output=False),
        OperatorVersion("MaxUnpool-9", "onnx", "unpool", _UNPOOL_ATTRIBUTES, ("kernel_shape",), FLOAT_DTYPES,
                        "", {}, "ONNX MaxUnpool-9: strides 'Stride along each spatial axis.' (no default stated; "
                        "poolcheck takes 1, as -11 says)", indices_output=False),
        OperatorVersion("MaxUnpool-11", "onnx", "unpool", _UNPOOL_ATTRIBUTES, ("kernel_shape",), FLOAT_DTYPES,
                        "", {}, "ONNX MaxUnpool-11: strides 'If not present, the stride defaults to 1 along each spatial "
                        "axis.'; T1 'tensor(float16), tensor(float), tensor(double)'", indices_output=False),
        OperatorVersion("MaxUnpool-22", "onnx", "unpool", _UNPOOL_ATTRIBUTES, ("kernel_shape",), ONNX_FAMILY_DTYPES_22,
                        "", {}, "ONNX MaxUnpool-22: 'all the non-maximal values from the original input to MaxPool are "
                        "set to zero in the output of the MaxUnpool op'", indices_output=False),
        OperatorVersion("AdaptiveAvgPool-8", "openvino", "adaptive_avg", _ADAPTIVE_AVG_ATTRIBUTES, ("output_shape",),
                        OPENVINO_FLOAT_DTYPES, "", {},
                        "OpenVINO AdaptiveAvgPool-8: 'h_start = floor(j * H_in / H_out)', 'h_end = ceil((j+1) * "
                        "H_in / H_out)'; T 'floating-point type'", indices_output=False),
        OperatorVersion("AdaptiveMaxPool-8", "openvino", "adaptive_max", _ADAPTIVE_MAX_ATTRIBUTES, ("output_shape",),
                        OPENVINO_FLOAT_DTYPES, "", {},
                        "OpenVINO AdaptiveMaxPool-8: 'The values of indices are computed as if input spatial "
                        "dimensions were flatten, so the values are in the range [0, H * W * D)'"),
    )
}


def operator(name: Any) -> OperatorVersion:
    """The catalogue row named ``name`` (e.g. ``"MaxPool-14"``, ``"onnx:MaxPool-8"``)."""
    row = OPERATORS.get(name) if isinstance(name, str) else None
    if row is None:
        raise AttributeValueError("op", f"expected one of {', '.join(OPERATORS)}, got {name!r}")
    return row


def lookup(name: Any, convention: str | None = None) -> OperatorVersion:
    """The row an operator's own name means in ``convention``: ``lookup("MaxPool-8", "onnx")`` is
    ``onnx:MaxPool-8``, ``lookup("MaxPool-8")`` the catalogue's ``MaxPool-8`` (OpenVINO's)."""
    if convention is not None and isinstance(name, str) and ":" not in name:
        qualified = OPERATORS.get(f"{convention}:{name}")
        if qualified is not None:
            return qualified
    return operator(name)


def onnx_version(op_type: str, opset: int) -> OperatorVersion | None:
    """The row of ONNX ``op_type`` in force at ``opset`` (the newest version <= opset), or None
    when the catalogue has none (the hook for a model's nodes: ``audit``, the importers)."""
    best: tuple[int, OperatorVersion] | None = None
    for row in OPERATORS.values():
        title, _, version = row.title.rpartition("-")
        if row.convention == "onnx" and title == op_type and version.isdigit() and int(version) <= opset:
            if best is None or int(version) > best[0]:
                best = (int(version), row)
    return None if best is None else best[1]


def onnx_opset(row: OperatorVersion) -> int:
    """The opset a one-node model of ONNX ``row`` imports: the newest at which ``row`` is the version
    in force (the next version's number - 1; the newest row: its own number). GlobalLpPool-2 is a
    model of opset 21, LpPool-2 of opset 10: opsets 2 to 4 were never released, ONNX Runtime only
    guarantees opset 7 and later, and the version's text and kernel are the same at every opset
    where it is in force (:func:`onnx_version` is the inverse)."""
    number = version_number(row)
    later = [version_number(r) for r in OPERATORS.values()
             if r.convention == row.convention and r.op == row.op and version_number(r) > number]
    return min(later) - 1 if later else number


def version_number(row: OperatorVersion) -> int:
    """The version number in a row's name (``LpPool-11`` -> 11)."""
    return int(row.title.rpartition("-")[2])


def family_row(spec: FamilySpec) -> OperatorVersion:
    """The row a family configuration was written for: its op at :attr:`FamilySpec.version`, the
    newest version when that is None."""
    if spec.version is None:
        return newest(spec.op, spec.convention)
    for row in OPERATORS.values():
        if row.op == spec.op and row.convention == spec.convention and version_number(row) == spec.version:
            return row
    raise AttributeValueError("op", f"poolcheck has no row for {spec.describe().split('(')[0]}")


def newest(op: str, convention: str) -> OperatorVersion:
    """The newest version of ``op`` ("max"/"avg") in ``convention`` (rows are listed oldest first)."""
    rows = [r for r in OPERATORS.values() if r.op == op and r.convention == convention]
    if not rows:
        raise AttributeValueError("op", f"no {convention} operator for {op!r} pooling")
    return rows[-1]


def allowed_dtypes(op: str, convention: str) -> tuple[str, ...]:
    """The element types ``op`` allows in ``convention`` (its newest version's)."""
    return newest(op, convention).dtypes


#: Every element type a row allows, in one order: floating point, bfloat16, integers.
ELEMENT_TYPES: tuple[str, ...] = (*FLOAT_DTYPES, BFLOAT16.name, *INT_DTYPES)


def any_convention_dtypes(op: str) -> tuple[str, ...]:
    """The element types the newest ``op`` allows in some convention (:data:`ELEMENT_TYPES` order)."""
    allowed = {d for row in OPERATORS.values() if row.op == op for d in newest(op, row.convention).dtypes}
    return tuple(d for d in ELEMENT_TYPES if d in allowed)


# --------------------------------------------------------------------------- parse


def parse(name: str, attrs: Mapping[str, Any]) -> Any:
    """Validate ``attrs`` (spelled as operator ``name`` spells them) into the canonical spec: a
    :class:`PoolSpec` for MaxPool/AveragePool, a :class:`~poolcheck.spec.family.FamilySpec` for
    the rest of the family.

    Unknown attributes, missing required ones and bad values raise
    :class:`~poolcheck.errors.AttributeValueError` naming the attribute.
    """
    row = operator(name)
    unknown = sorted(set(attrs) - set(row.attribute_names))
    if unknown:
        allowed = ", ".join(sorted(row.attribute_names)) or "none"
        raise AttributeValueError(unknown[0], f"not an attribute of {row.title} (allowed: {allowed})")
    for req in row.required:
        if req not in attrs:
            raise AttributeValueError(req, f"required by {row.title}")
    values = {a.name: attrs.get(a.name, a.default) for a in row.attributes}
    if row.op in FAMILY_OPS:
        window = _parse_onnx(row, values) if "kernel_shape" in values else None
        spec = parse_family(row, values, window)
        # An older version is carried with the configuration: the peers build their model at it.
        return spec if row is newest(row.op, row.convention) else spec.replace(version=version_number(row))
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
    if "dilations" in a:
        d = int_list("dilations", _per_axis(a["dilations"], 1, n), minimum=1, length=n)
    else:
        d = (1,) * n  # AvgPool and MaxPool-1 have no dilations
    r = row.rounding[choice("rounding_type", a["rounding_type"], tuple(row.rounding))]
    ap = choice("auto_pad", a["auto_pad"], AUTO_PADS)
    if row.op == "avg":
        word = "exclude-pad" if "exclude-pad" in a else "exclude_pad"  # AvgPool-1 spells it with a hyphen
        ex = boolean(word, a[word])
        return PoolSpec("avg", k, s, pb, pe, d, r, ap, ex, 0, "i64", 0, "openvino")  # type: ignore[arg-type]
    ax = axis_value(a.get("axis", 0))
    it = choice("index_element_type", a.get("index_element_type", "i64"), tuple(INDEX_ELEMENT_TYPES))
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
    # Versions without dilations (MaxPool before 10, AveragePool before 19, MaxUnpool) or without
    # ceil_mode (before 10) are parsed as dilations 1 and floor.
    d = int_list("dilations", _per_axis(a.get("dilations"), 1, n), minimum=1, length=n)
    # ceil_mode=1 is ceil_torch under every auto_pad; the shape rule knows that ONNX VALID ignores
    # it (PoolSpec.applied_rounding), so the spec keeps what was written.
    r = row.rounding[flag("ceil_mode", a.get("ceil_mode", 0))] if row.rounding else "floor"
    ap = ONNX_AUTO_PADS[choice("auto_pad", a.get("auto_pad", "NOTSET"), tuple(ONNX_AUTO_PADS))]
    if row.op in ("max", "unpool"):
        so = flag("storage_order", a.get("storage_order", 0))
        return PoolSpec("max", k, s, p[:n], p[n:], d, r, ap, False, 0, "i64", so, "onnx")  # type: ignore[arg-type]
    # "count_include_pad: Whether include pad pixels when calculating values for the edges."
    # AveragePool-1 (no such attribute): "divided by the number of elements exclude pad".
    cip = flag("count_include_pad", a.get("count_include_pad", 0))
    return PoolSpec("avg", k, s, p[:n], p[n:], d, r, ap, not cip, 0, "i64", 0, "onnx")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- spell


def spell(spec: Any, name: str) -> dict[str, Any]:
    """``spec`` in operator ``name``'s own attribute names and values (lists, ints, strings).

    For a spec of the row's own convention this is exact: ``parse(name, spell(spec, name)) ==
    spec``. For the other convention it translates the meaning: the rounding actually applied
    (:attr:`PoolSpec.applied_rounding`), and for ONNX, OpenVINO's rounded ``valid`` as NOTSET with
    zero pads. Shape-dependent limits (plain ``ceil`` keeping a window that ``ceil_mode`` would
    drop, ONNX SAME's negative pads) are for the caller to check on its input; a value the
    operator has no word for (an older version's missing attribute included) raises
    :class:`~poolcheck.errors.AttributeValueError`.
    """
    row = operator(name)
    if isinstance(spec, FamilySpec):
        if row.op != spec.op:
            raise AttributeValueError("op", f"{row.title} is not {spec.describe().split('(')[0]}")
        words = _without_missing(row, _spell_onnx(row, spec.window)) if spec.window is not None else {}
        return spell_family(row, spec, words)
    if row.op != spec.op:
        raise AttributeValueError("op", f"{row.title} is {row.op} pooling, the configuration is {spec.op} pooling")
    return _without_missing(row, _SPELLERS[row.convention](row, spec))


#: What an attribute an older version lacks must say for that version to express a spec.
_ABSENT_MEANS: dict[str, Any] = {"dilations": None, "ceil_mode": 0, "storage_order": 0, "count_include_pad": 0,
                                 "axis": 0, "index_element_type": "i64", "auto_pad": "NOTSET"}


def _without_missing(row: OperatorVersion, words: dict[str, Any]) -> dict[str, Any]:
    """``words`` restricted to ``row``'s attributes; a dropped attribute must say its default."""
    names = set(row.attribute_names)
    out = {}
    for key, value in words.items():
        if key in names:
            out[key] = value
            continue
        meaning = _ABSENT_MEANS.get(key, "unknown")
        ok = all(v == 1 for v in value) if key == "dilations" else value == meaning
        if not ok:
            raise AttributeValueError(key, f"{row.title} has no {key} (got {value!r})")
    return out


def _rounding_word(row: OperatorVersion, rounding: str) -> Any:
    for word, canonical in row.rounding.items():
        if canonical == rounding:
            return word
    attribute = row.rounding_attribute or ("ceil_mode" if row.convention == "onnx" else "rounding_type")
    raise AttributeValueError(attribute, f"{row.title} has no rounding {rounding!r}")


def _spell_openvino(row: OperatorVersion, spec: PoolSpec) -> dict[str, Any]:
    rounding = spec.rounding_type if spec.convention == "openvino" else spec.applied_rounding
    out: dict[str, Any] = {"kernel": list(spec.kernel), "strides": list(spec.strides),
                           # ONNX "pads [x1_begin, x2_begin...x1_end, x2_end,...]" are already split.
                           "pads_begin": list(spec.pads_begin), "pads_end": list(spec.pads_end)}
    if row.op == "max":
        out["dilations"] = list(spec.dilations)
    elif any(d != 1 for d in spec.dilations):
        raise AttributeValueError("dilations", f"{row.title} has no dilations (got {list(spec.dilations)})")
    if row.op == "avg":
        # ONNX count_include_pad=1 is exclude_pad=false.
        out["exclude-pad" if "exclude-pad" in row.attribute_names else "exclude_pad"] = bool(spec.exclude_pad)
    out["rounding_type"] = _rounding_word(row, rounding)
    out["auto_pad"] = spec.auto_pad
    if row.op == "max":
        out["axis"] = spec.axis
        out["index_element_type"] = spec.index_element_type
    return {k: out[k] for k in [*row.attribute_names, *out] if k in out}


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
    out["ceil_mode"] = _rounding_word(row, rounding) if row.rounding else (0 if rounding == "floor" else 1)
    out["auto_pad"] = ONNX_AUTO_PAD_NAMES[auto_pad]
    if row.op in ("max", "unpool"):
        out["storage_order"] = spec.storage_order if spec.convention == "onnx" else 0
    elif row.op == "avg":
        out["count_include_pad"] = 0 if spec.exclude_pad else 1
    return out


_PARSERS = {"openvino": _parse_openvino, "onnx": _parse_onnx}
_SPELLERS = {"openvino": _spell_openvino, "onnx": _spell_onnx}


# --------------------------------------------------------------------------- inputs


def check_input(spec: Any, shape: Sequence[int], dtype: Any, row: OperatorVersion | None = None) -> np.dtype:
    """Validate an input's rank, dimensions and element type against ``spec`` (and the types of
    ``row``, default: the newest version of the spec's op)."""
    if isinstance(spec, FamilySpec):
        return check_family_input(spec, shape, (row or family_row(spec)).dtypes, dtype)
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
    if name_of(dt) not in allowed:
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
