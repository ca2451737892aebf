"""Severity of every class the diagnosis names, with the spec sentence each ``violation``
contradicts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from poolcheck.results import Severity
from poolcheck.spec.attributes import PoolSpec

_OV_MAXPOOL = "OpenVINO MaxPool-8"
_OV_SHAPES = "OpenVINO Shape Calculation Rules for Pooling Operators"
_ONNX_AVG = "ONNX AveragePool-19"
_ONNX_MAX = "ONNX MaxPool-22 (attribute storage_order)"
_Q_DIVISOR = ("The output of each pooling window is divided by the number of elements (exclude pad when "
              "attribute count_include_pad is zero).")
_Q_FLOOR = ("H_out = floor((H + pads_begin[0] + pads_end[0] - ((kernel[0] - 1) * dilations[0] + 1)) / strides[0] "
            "+ 1)")
_Q_CEIL = "H_out = ceil((H + pads_begin[0] + pads_end[0] - ((kernel[0] - 1) * dilations[0] + 1)) / strides[0] + 1)"
_Q_CEIL_TORCH = ("If rounding_type is set to ceil_torch, the last pooling operation within a dimension cannot start "
                 "in the padding area.")
_Q_SAME_PADS = ("pad_shape[i] = (output_spatial_shape[i] - 1) * strides_spatial_shape[i] + "
                "((kernel_spatial_shape[i] - 1) * dilations[i] + 1) - input_spatial_shape[i]")
_Q_SAME_SPLIT = ("same_upper (same_lower) the input is padded to match the output size. In case of odd padding value, "
                 "an extra padding is added at the end (at the beginning).")
_Q_SAME_ONNX = ("SAME_UPPER or SAME_LOWER: output_spatial_shape[i] = floor((input_spatial_shape[i] - 1) / "
                "strides_spatial_shape[i]) + 1")
_Q_PADS_BEGIN = ("pads_begin is a number of pixels to add to the beginning along each axis. For example, pads_begin "
                 "equal to \u201c1,2\u201d means adding 1 pixel to the top of the input and 2 to the left of the input.")
_Q_VALID = ("VALID: output_spatial_shape[i] = ceil((input_spatial_shape[i] - ((kernel_spatial_shape[i] - 1) * "
            "dilations[i] + 1) + 1) / strides_spatial_shape[i])")
_Q_DILATIONS = ("dilations specify the index of the next pixel to select when pooling. [...] A value of 2 indicates "
                "that one pixel is skipped and every other pixel is considered.")
_Q_INDEX = "Values are computed as indices in a tensor flattened to 1D, not considering padding."
_Q_AXIS = ("The upper bound is the product of dimensions starting from the one pointed by the \u2018axis\u2019 "
           "attribute until the end of the input shape.")
_Q_STORAGE = "The storage order of the tensor. 0 is row major, and 1 is column major."
_Q_MAX = ("The max pooling operation involves sliding a filter over each channel of a feature map and downsampling "
          "by choosing the largest value within the region covered by the filter.")


@dataclass(frozen=True)
class SeverityRule:
    """The weight of one named behaviour. A ``violation`` quotes the sentence it contradicts;
    ``when`` (optional) restricts the row to configurations where that sentence applies (the first
    matching row of a key wins)."""

    key: str
    severity: Severity
    why: str  # for ``unspecified``/``limitation``: what the spec leaves open; else the source document
    quote: str = ""
    when: Callable[[PoolSpec], bool] | None = None


_V, _U, _L = Severity.VIOLATION, Severity.UNSPECIFIED, Severity.LIMITATION
_onnx: Callable[[PoolSpec], bool] = lambda s: s.convention == "onnx"  # noqa: E731
_excl: Callable[[PoolSpec], bool] = lambda s: s.exclude_pad  # noqa: E731
_incl: Callable[[PoolSpec], bool] = lambda s: not s.exclude_pad  # noqa: E731
_maxop: Callable[[PoolSpec], bool] = lambda s: s.op == "max"  # noqa: E731

#: Severity of every class the diagnosis names (data: the quoted sentences are the reason).
SEVERITY_RULES: tuple[SeverityRule, ...] = (
    # geometry
    SeverityRule("valid:ceil_mode-applied", _V, _ONNX_AVG, _Q_VALID),
    SeverityRule("rounding:ceil_torch->ceil", _V, _OV_SHAPES, _Q_CEIL_TORCH),
    SeverityRule("rounding:ceil->ceil_torch", _V, _OV_SHAPES, _Q_CEIL),
    SeverityRule("rounding:ceil->floor", _V, _OV_SHAPES, _Q_CEIL),
    SeverityRule("rounding:floor->ceil", _V, _OV_SHAPES, _Q_FLOOR),
    SeverityRule("same:rounding-applied", _V, _ONNX_AVG, _Q_SAME_ONNX, _onnx),
    SeverityRule("same:rounding-applied", _U, "the OpenVINO page gives H_out = H for SAME (it ignores the stride) "
                 "and says only that an uneven division is rounded with rounding_type"),
    SeverityRule("same:swapped", _V, _OV_MAXPOOL, _Q_SAME_SPLIT),
    SeverityRule("same:undilated-kernel", _V, _ONNX_AVG, _Q_SAME_PADS),
    SeverityRule("same:undilated-kernel-cropped", _V, _ONNX_AVG, _Q_SAME_PADS),
    SeverityRule("same:clamped", _V, _ONNX_AVG, _Q_SAME_PADS),
    SeverityRule("same:negative-pads", _U, "whether a negative SAME pad total (stride larger than the dilated "
                 "kernel) is applied or clamped at 0 (the ONNX formula as written goes negative; OpenVINO's page "
                 "gives no pad formula)"),
    SeverityRule("same:negative-pads-floor-split", _U, "how a negative odd SAME pad total is split between the "
                 "two ends (the spec's rule for the odd element speaks of adding padding)"),
    SeverityRule("same:negative-pads-cropped", _U, "as same:negative-pads; a negative end pad also shortens the "
                 "windows (and the divisor)"),
    SeverityRule("pads:swapped", _V, _OV_MAXPOOL, _Q_PADS_BEGIN),
    SeverityRule("pads:begin-both-ends", _V, _OV_MAXPOOL, _Q_PADS_BEGIN),
    SeverityRule("pads:end-both-ends", _V, _OV_MAXPOOL, _Q_PADS_BEGIN),
    SeverityRule("pads:ignored", _V, _OV_MAXPOOL, _Q_PADS_BEGIN),
    SeverityRule("auto_pad:ignored", _V, _OV_MAXPOOL, _Q_SAME_SPLIT),
    SeverityRule("dilations:ignored", _V, _OV_MAXPOOL, _Q_DILATIONS),
    # policy
    SeverityRule("nan=ignore", _U, "NaN handling in max pooling"),
    SeverityRule("nan=first", _U, "NaN handling in max pooling"),
    SeverityRule("nan=-inf", _U, "NaN handling in max pooling"),
    SeverityRule("nan=skip", _U, "NaN handling in max pooling"),
    SeverityRule("nan=last-index", _U, "which index a window holding several NaNs reports"),
    SeverityRule("max=seeded-scan", _U, "NaN handling and the value/index of a window wholly in padding"),
    SeverityRule("empty_max=lowest", _U, "the value of a max window wholly in padding"),
    SeverityRule("empty_max=zero", _U, "the value of a max window wholly in padding"),
    SeverityRule("empty_max=nan", _U, "the value of a max window wholly in padding"),
    SeverityRule("divisor=padded", _V, _ONNX_AVG, _Q_DIVISOR, _excl),
    SeverityRule("divisor=full", _V, _ONNX_AVG, _Q_DIVISOR, _excl),
    SeverityRule("divisor=full", _U, "whether taps past the padded input (ceil rounding) count in the divisor "
                 "when padding is counted"),
    SeverityRule("divisor=valid", _V, _ONNX_AVG, _Q_DIVISOR, _incl),
    SeverityRule("empty_avg=nan", _U, "the average of a window holding no element"),
    SeverityRule("empty_avg=signed-divisor", _U, "the average of a window holding no element"),
    SeverityRule("avg=input-type-sum", _U, "the accumulation type of the average"),
    SeverityRule("avg=input-type-sum-by-axis", _U, "the accumulation type and order of the average"),
    SeverityRule("avg=wide-sum-rounded", _U, "the accumulation type of the average"),
    SeverityRule("avg=nan-skipped", _U, "NaN handling in average pooling"),
    # computation type: a max that is not one of the input's values contradicts "choosing the largest value"
    SeverityRule("precision:float32", _V, _OV_MAXPOOL, _Q_MAX, _maxop),
    SeverityRule("precision:int32", _V, _OV_MAXPOOL, _Q_MAX, _maxop),
    SeverityRule("precision:float32", _U, "the computation type of the average"),
    SeverityRule("precision:int32", _U, "the computation type of the average"),
    # indices
    SeverityRule("empty_index=0", _U, "the index of a max window wholly in padding"),
    SeverityRule("empty_index=-1-per-axis", _U, "the index of a max window wholly in padding"),
    SeverityRule("empty_index=first-tap", _U, "the index of a max window wholly in padding"),
    SeverityRule("index:axis-ignored", _V, _OV_MAXPOOL, _Q_AXIS),
    SeverityRule("index:per-plane", _V, _OV_MAXPOOL, _Q_AXIS),
    SeverityRule("index:storage_order-ignored", _V, _ONNX_MAX, _Q_STORAGE),
    SeverityRule("index:storage_order-transposed", _V, _ONNX_MAX, _Q_STORAGE),
    SeverityRule("index:column-major", _V, _OV_MAXPOOL, _Q_INDEX),
    SeverityRule("index:padded-coordinates", _V, _OV_MAXPOOL, _Q_INDEX),
)
#: Classes outside the table: a rejection of a valid configuration is a limitation; what no
#: variant reproduces is a violation until explained (the reference implements the spec text).
REJECTION_SEVERITY = Severity.LIMITATION
UNEXPLAINED_SEVERITY = Severity.VIOLATION
#: A peer that crashes or hangs on a valid configuration gives no output the spec defines.
STATUS_SEVERITY: dict[str, Severity] = {"crash": Severity.VIOLATION, "timeout": Severity.VIOLATION}
_RANK = (Severity.VIOLATION, Severity.LIMITATION, Severity.UNSPECIFIED, Severity.ERRATUM)


def severity_rule(key: str, spec: PoolSpec) -> SeverityRule | None:
    """The table row that weighs ``key`` for ``spec`` (None: not a named variant)."""
    for rule in SEVERITY_RULES:
        if rule.key == key and (rule.when is None or rule.when(spec)):
            return rule
    return None


def severity_of(atoms: tuple[str, ...] | list[str], spec: PoolSpec) -> Severity:
    """The most severe weight among a diagnosis's atoms."""
    found = []
    for atom in atoms:
        if atom.startswith("rejects: "):
            found.append(REJECTION_SEVERITY)
            continue
        rule = severity_rule(atom, spec)
        found.append(rule.severity if rule is not None else UNEXPLAINED_SEVERITY)
    return min(found, key=_RANK.index) if found else UNEXPLAINED_SEVERITY
