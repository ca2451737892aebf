"""How much each divergence class weighs, derived from the text: one rule per class and convention.

A *class* is a named behaviour a runner shows where the reference does something else (the
fuzzer's diagnosis names them: ``divisor=full``, ``same:swapped``, ...). Its severity comes from
the sentence of the text that applies to the operator version's convention, cited by id
(:mod:`poolcheck.spec.sources`):

- ``violation``: a sentence requires something else; the rule cites it.
- ``unspecified``: no sentence decides. Accumulation width, NaN, empty windows (a window with no
  input element: wholly in padding, or past the padded input under ceil rounding), tie order and
  any combination of them are always here. The rule cites the nearest sentence when one exists,
  and says why it does not decide.
- ``erratum``: only sentences that contradict each other decide (the ONNX SAME pad formula goes
  negative where the pads attribute must be >= 0; ONNX's ceil formula against its own example;
  OpenVINO's written ``H_out = H`` for SAME against "rounded with respect to rounding_type"). The
  rule cites both sides; the runner follows one of them and the reference the other, so the
  difference is the document's, and it is not a violation.

The rule depends on the configuration (convention, op, attributes), never on the runner: one
class has one severity for every runner of a convention, whether the fuzzer's diagnosis or a
``poolcheck run --peers`` check (:func:`poolcheck.runner.peer_severity`) names it. The table in
docs/severity.md is generated from :data:`SEVERITY_RULES` (``python -m poolcheck.spec.severity``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from poolcheck.results import Severity
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.poolspec import PoolSpec
from poolcheck.spec.sources import DOCUMENTS, quote, sentence

Condition = Callable[[PoolSpec], bool]


@dataclass(frozen=True)
class SeverityRule:
    """The weight of one class under one condition (the first matching row of a key wins)."""

    key: str
    severity: Severity
    #: Sentence ids: the one contradicted (violation), the contradicting pair (erratum), the
    #: nearest one that does not decide (unspecified; may be empty).
    sentences: tuple[str, ...]
    #: One line: what the text requires, or what it leaves open and why.
    why: str
    #: Where the row applies, in words (docs table) and as a predicate on the configuration.
    condition: str = "any configuration"
    when: Condition | None = None

    @property
    def quote(self) -> str:
        """The cited sentences as shown to people (empty when none is cited)."""
        return " / ".join(quote(sid) for sid in self.sentences)


def _all(*conds: Condition) -> Condition:
    return lambda s: all(c(s) for c in conds)


def _ov(s: PoolSpec) -> bool:
    return s.convention == "openvino"


def _onnx(s: PoolSpec) -> bool:
    return s.convention == "onnx"


def _max(s: PoolSpec) -> bool:
    return s.op == "max"


def _avg(s: PoolSpec) -> bool:
    return s.op == "avg"


def _excl(s: PoolSpec) -> bool:
    return bool(s.exclude_pad)


def _incl(s: PoolSpec) -> bool:
    return not s.exclude_pad


_V, _U, _E = Severity.VIOLATION, Severity.UNSPECIFIED, Severity.ERRATUM
OV, ONNX = "OpenVINO", "ONNX"


def _rule(key: str, severity: Severity, sentences: Sequence[str], why: str, condition: str = "any configuration",
          *when: Condition) -> SeverityRule:
    return SeverityRule(key=key, severity=severity, sentences=tuple(sentences), why=why, condition=condition,
                        when=_all(*when) if when else None)


_NAN = "NaN has no order: 'the largest value' does not say whether it wins, loses or which index it reports"
_EMPTY_MAX = ("a window holding no input element (wholly in padding, or past the padded input under ceil); -inf "
              "padding does not decide it (integer types have no -inf, a window past the padded input holds no "
              "padding)")
_ACC = "the text gives no accumulation type or order for the average's sum"
_NEG_SAME = ("only contradicting sentences decide: the SAME pad formula goes negative when the stride exceeds the "
             "dilated kernel, while pads 'can take any value greater than or equal to 0'")
_OV_NO_SAME_PADS = "OpenVINO's text gives no SAME pad formula: only 'padded to match the output size'"
_DIVISOR_OV, _DIVISOR_ONNX = ("OV14-AVG-EXCLUDE-PAD",), ("ONNX-DIVISOR",)

#: Every class the diagnosis names, per convention (the first matching row of a key wins).
SEVERITY_RULES: tuple[SeverityRule, ...] = (
    # ------------------------------------------------------------------ output shape, window placement
    _rule("valid:ceil_mode-applied", _V, ("ONNX-SHAPE-VALID-CEIL", "ONNX-SHAPE-VALID"),
          "under VALID the ceil_mode formula gives the same count as floor: no window past the input", ONNX, _onnx),
    _rule("rounding:ceil_torch->ceil", _V, ("OV-CEIL-TORCH",),
          "a last window that starts in the padding is dropped", OV, _ov),
    _rule("rounding:ceil_torch->ceil", _E, ("ONNX-SHAPE-CEIL", "ONNX-LAST-WINDOW-EXAMPLE"),
          "ONNX's ceil formula keeps a last window that starts in the end padding, its own example drops it "
          "(poolcheck follows the example, as the onnx reference and backend tests do)", ONNX, _onnx),
    _rule("rounding:ceil->ceil_torch", _V, ("OV-SHAPE-CEIL",), "ceil keeps a last window that starts in the padding",
          OV, _ov),
    _rule("rounding:ceil->floor", _V, ("OV-SHAPE-CEIL", "OV-CEIL-TORCH"), "ceil rounding rounds up", OV, _ov),
    _rule("rounding:ceil->floor", _V, ("ONNX-SHAPE-CEIL",),
          "ceil_mode rounds up (the example that drops a window starting in the padding keeps every other)",
          ONNX, _onnx),
    _rule("rounding:floor->ceil", _V, ("OV-SHAPE-FLOOR",), "floor rounding rounds down", OV, _ov),
    _rule("rounding:floor->ceil", _V, ("ONNX-SHAPE-FLOOR",), "ceil_mode disabled rounds down", ONNX, _onnx),
    _rule("rounding:ceil-extra-pad-split", _V, ("ONNX-PADS-FORMAT",),
          "xi_begin pixels are added at the beginning of axis i: the windows start at -pads_begin, whatever "
          "ceil_mode adds past the end", ONNX, _onnx),
    _rule("rounding:ceil-extra-pad-split", _V, ("OV14-PADS-BEGIN",),
          "pads_begin pixels are added at the beginning (none under valid): the windows start at -pads_begin, "
          "whatever the rounding adds past the end", OV, _ov),
    _rule("same:rounding-applied", _V, ("ONNX-SHAPE-SAME", "ONNX-SHAPE-SAME-CEIL"),
          "SAME gives the same count with and without ceil_mode", ONNX, _onnx),
    _rule("same:clamped-ceil-mode-applied", _V, ("ONNX-SHAPE-SAME", "ONNX-SHAPE-SAME-CEIL"),
          "SAME gives the same count with and without ceil_mode", ONNX, _onnx),
    _rule("same:rounding-applied", _E, ("OV-SHAPE-SAME", "OV-SHAPE-ROUNDED"),
          "only contradicting sentences decide: the SAME formula ignores the stride (and any rounding), the next "
          "sentence rounds an uneven division with rounding_type", OV, _ov),
    _rule("same:swapped", _V, ("OV-SAME-SPLIT",), "the odd pad goes to the end (same_upper) or beginning "
          "(same_lower)", f"{OV} max", _ov, _max),
    _rule("same:swapped", _U, (), "no text of AvgPool-14 among the sources says which end takes an odd pad",
          f"{OV} avg", _ov, _avg),
    _rule("same:swapped", _V, ("ONNX-SAME-SPLIT",), "the odd pad goes to the end for SAME_UPPER, the beginning "
          "for SAME_LOWER", ONNX, _onnx),
    *(_rule(key, _V, ("ONNX-SAME-PADS",), "the SAME pads come from the dilated kernel", ONNX, _onnx)
      for key in ("same:undilated-kernel", "same:undilated-kernel-cropped")),
    *(_rule(key, _U, ("OV-SAME-SPLIT",), _OV_NO_SAME_PADS, OV, _ov)
      for key in ("same:undilated-kernel", "same:undilated-kernel-cropped")),
    _rule("same:undilated-kernel-zero-tail", _V, ("ONNX-SAME-PADS", "ONNX-DIVISOR"),
          "the SAME pads come from the dilated kernel, and every output is its window's average (none is left 0)",
          ONNX, _onnx),
    _rule("same:undilated-kernel-zero-tail", _U, ("OV-SAME-SPLIT",),
          _OV_NO_SAME_PADS + "; AvgPool-14's text among the sources does not define the average's output beyond "
          "its exclude_pad parameter", OV, _ov),
    _rule("valid:undilated-kernel-zero-tail", _V, ("ONNX-SHAPE-VALID", "ONNX-DIVISOR"),
          "the VALID output size comes from the dilated kernel, and every output is its window's average (none is "
          "left 0)", ONNX, _onnx),
    _rule("valid:undilated-kernel-zero-tail", _V, ("OV-SHAPE-VALID",),
          "the valid output size comes from the dilated kernel", OV, _ov),
    _rule("same:lower-as-upper-floor-size", _V, ("ONNX-AUTO-PAD-SAME", "ONNX-SAME-SPLIT"),
          "SAME pads so that the output size is ceil(input / stride), an odd pad at the beginning for SAME_LOWER",
          ONNX, _onnx),
    _rule("same:lower-as-upper-floor-size", _V, ("OV-SAME-SPLIT",),
          "same_lower adds an odd pad at the beginning", f"{OV} max", _ov, _max),
    *(_rule(key, _E, ("ONNX-SAME-PADS", "ONNX-PADS"), _NEG_SAME, ONNX, _onnx)
      for key in ("same:negative-pads", "same:negative-pads-cropped", "same:clamped")),
    _rule("same:negative-pads-floor-split", _E, ("ONNX-SAME-PADS", "ONNX-PADS", "ONNX-SAME-SPLIT"),
          _NEG_SAME + "; the odd-element rule speaks of adding padding, not of a negative total", ONNX, _onnx),
    *(_rule(key, _U, ("OV-SAME-SPLIT",), _OV_NO_SAME_PADS, OV, _ov)
      for key in ("same:negative-pads", "same:negative-pads-cropped", "same:clamped", "same:negative-pads-floor-split")),
    *(_rule(key, _V, ("OV-PADS-BEGIN", "OV-PADS-END"), "pads_begin pads the beginning, pads_end the end",
            f"{OV} max", _ov, _max)
      for key in ("pads:swapped", "pads:begin-both-ends", "pads:end-both-ends", "pads:ignored")),
    *(_rule(key, _V, ("OV14-PADS-BEGIN", "OV14-PADS-END"), "pads_begin pads the beginning, pads_end the end",
            f"{OV} avg", _ov, _avg)
      for key in ("pads:swapped", "pads:begin-both-ends", "pads:end-both-ends", "pads:ignored")),
    *(_rule(key, _V, ("ONNX-PADS-FORMAT",), "pads are [x1_begin, x2_begin, ..., x1_end, x2_end, ...]", ONNX, _onnx)
      for key in ("pads:swapped", "pads:begin-both-ends", "pads:end-both-ends", "pads:ignored")),
    _rule("auto_pad:ignored", _V, ("OV-AUTO-PAD-PADS", "OV-SHAPE-VALID"),
          "pads_begin and pads_end do not apply under auto_pad", OV, _ov),
    _rule("auto_pad:ignored", _V, ("ONNX-AUTO-PAD-SAME", "ONNX-SHAPE-VALID"),
          "auto_pad decides the padding", ONNX, _onnx),
    _rule("dilations:ignored", _V, ("OV-DILATIONS",), "a dilation of d takes every d-th element", OV, _ov),
    _rule("dilations:ignored", _V, ("ONNX-DILATIONS",), "the dilations space the kernel's taps", ONNX, _onnx),
    # ------------------------------------------------------------------ NaN, empty windows (max)
    *(_rule(key, _U, ("OV-MAX",), _NAN, OV, _ov)
      for key in ("nan=ignore", "nan=first", "nan=-inf", "nan=skip", "nan=last-index")),
    *(_rule(key, _U, ("ONNX-MAX",), _NAN, ONNX, _onnx)
      for key in ("nan=ignore", "nan=first", "nan=-inf", "nan=skip", "nan=last-index")),
    _rule("max=seeded-scan", _U, ("OV-PAD-INF",), "NaN and empty windows together: " + _NAN + "; " + _EMPTY_MAX),
    *(_rule(key, _U, ("OV-PAD-NEG-INF",), _EMPTY_MAX, OV, _ov)
      for key in ("empty_max=lowest", "empty_max=zero", "empty_max=int32-lowest-wrapped", "empty_max=nan")),
    *(_rule(key, _U, ("ONNX-MAX",), _EMPTY_MAX, ONNX, _onnx)
      for key in ("empty_max=lowest", "empty_max=zero", "empty_max=int32-lowest-wrapped", "empty_max=nan")),
    # ------------------------------------------------------------------ the average's divisor and sum
    _rule("divisor=padded", _V, _DIVISOR_OV, "exclude_pad=true: padding is not counted", f"{OV}, exclude_pad",
          _ov, _excl),
    _rule("divisor=padded", _V, _DIVISOR_ONNX, "count_include_pad=0: padding is not counted",
          f"{ONNX}, count_include_pad=0", _onnx, _excl),
    _rule("divisor=full", _V, _DIVISOR_OV, "exclude_pad=true: padding is not counted", f"{OV}, exclude_pad",
          _ov, _excl),
    _rule("divisor=full", _V, _DIVISOR_ONNX, "count_include_pad=0: padding is not counted",
          f"{ONNX}, count_include_pad=0", _onnx, _excl),
    _rule("divisor=full", _U, _DIVISOR_ONNX + _DIVISOR_OV,
          "padding counted: whether the taps past the padded input (ceil rounding), neither elements nor padding, "
          "count is not said", "padding counted", _incl),
    _rule("divisor=valid", _V, _DIVISOR_OV, "exclude_pad=false: padding is counted", f"{OV}, padding counted",
          _ov, _incl),
    _rule("divisor=valid", _V, _DIVISOR_ONNX, "count_include_pad=1: padding is counted",
          f"{ONNX}, count_include_pad=1", _onnx, _incl),
    *(_rule(key, _U, (), "the average of a window holding no element") for key in (
        "empty_avg=nan", "empty_avg=signed-divisor")),
    *(_rule(key, _U, (), _ACC) for key in ("avg=input-type-sum", "avg=input-type-sum-by-axis", "avg=wide-sum-rounded")),
    _rule("avg=nan-skipped", _U, (), "NaN in an average: the text does not mention it"),
    # ------------------------------------------------------------------ computation type
    *(_rule(f"precision:{t}", _V, ("OV-MAX", "OV-OUT-TYPE"),
            "the max is one of the input's values, in the input's type", f"{OV} max", _ov, _max)
      for t in ("float32", "int32")),
    *(_rule(f"precision:{t}", _V, ("ONNX-MAX",), "the max is one of the window's elements", f"{ONNX} max",
            _onnx, _max) for t in ("float32", "int32")),
    *(_rule(f"precision:{t}", _U, (), "the computation type of the average: " + _ACC, "avg", _avg)
      for t in ("float32", "int32")),
    # ------------------------------------------------------------------ indices
    *(_rule(key, _U, ("OV-INDEX-PADS",), "the index of a window holding no input element: no element was chosen")
      for key in ("empty_index=0", "empty_index=-1-per-axis", "empty_index=first-tap")),
    *(_rule(key, _V, ("OV-AXIS",), "indices count from the dimension 'axis' points at", OV, _ov)
      for key in ("index:axis-ignored", "index:per-plane")),
    *(_rule(key, _V, ("ONNX-INDICES",), "indices count the whole tensor", ONNX, _onnx)
      for key in ("index:axis-ignored", "index:per-plane")),
    _rule("index:storage_order-ignored", _V, ("ONNX-STORAGE-ORDER",), "storage_order=1 counts column-major",
          ONNX, _onnx),
    _rule("index:storage_order-transposed", _V, ("ONNX-STORAGE-ORDER",), "storage_order=1 counts column-major",
          ONNX, _onnx),
    _rule("index:column-major", _V, ("OV-INDEX",),
          "indices of the tensor flattened to 1D (row-major, as every example of the page counts)", OV, _ov),
    _rule("index:column-major", _V, ("ONNX-STORAGE-ORDER",), "storage_order=0 counts row-major", ONNX, _onnx),
    _rule("index:padded-coordinates", _V, ("OV-INDEX",), "indices do not count padding", OV, _ov),
    _rule("index:padded-coordinates", _V, ("ONNX-INDICES",), "indices do not count padding", ONNX, _onnx),
    # a window holding elements all equal to the lowest value reports an index without its depth
    # term: another element's position (a window holding none: OV-INDEX-PADS leaves it open)
    _rule("index:depthless-tail-start", _V, ("OV-INDEX",), "the index of the chosen element in the tensor "
          "flattened to 1D: the depth term d*H*W is part of it", OV, _ov),
    _rule("index:depthless-tail-start", _V, ("ONNX-INDICES",), "the index of the chosen element in the tensor "
          "flattened to 1D: the depth term d*H*W is part of it", ONNX, _onnx),
    # ------------------------------------------------------------------ variants added for issue 20 (h20-diag)
    *(_rule(key, _V, ("OV-CEIL-TORCH",), "only a last window that starts in the padding (at or past "
            "H + pads_begin) is dropped", OV, _ov)
      for key in ("rounding:ceil_torch-last-window-vs-H", "rounding:ceil_torch-last-window-vs-H+pads_end")),
    *(_rule(key, _V, ("ONNX-SHAPE-CEIL", "ONNX-LAST-WINDOW-EXAMPLE"), "ceil_mode keeps every window that starts "
            "inside the input or the begin padding (the example drops only one starting in the end padding)",
            ONNX, _onnx)
      for key in ("rounding:ceil_torch-last-window-vs-H", "rounding:ceil_torch-last-window-vs-H+pads_end")),
    *(_rule(key, _V, ("ONNX-PADS-FORMAT",), "pads are [x1_begin, x2_begin, ..., x1_end, x2_end, ...]", ONNX,
            _onnx) for key in ("pads:onnx-written-interleaved", "pads:onnx-read-interleaved")),
    *(_rule(key, _V, ("OV-PADS-BEGIN", "OV-PADS-END"), "pads_begin pads the beginning, pads_end the end", OV, _ov)
      for key in ("pads:onnx-written-interleaved", "pads:onnx-read-interleaved")),
    _rule("max:unit-step-common-path", _V, ("ONNX-PADS-FORMAT", "ONNX-INDICES"),
          "pads are [x1_begin, x2_begin, ..., x1_end, x2_end, ...] and pad the input; an index is the chosen "
          "element's position in the tensor flattened to 1-D", ONNX, _onnx),
    _rule("max:unit-step-common-path", _V, ("OV-PADS-BEGIN", "OV-PADS-END", "OV-INDEX"),
          "pads_begin pads the beginning, pads_end the end; an index is the chosen element's position in the "
          "tensor flattened to 1D, not considering padding", OV, _ov),
    _rule("window:last-tap-dropped", _V, ("OV-MAX",), "the window (filter) covers the kernel's taps on every axis",
          f"{OV} max", _ov, _max),
    _rule("window:last-tap-dropped", _V, ("ONNX-MAX",), "the window covers the kernel's taps on every axis",
          f"{ONNX} max", _onnx, _max),
    _rule("window:last-tap-dropped", _V, _DIVISOR_OV, "the window averaged covers the kernel's taps", f"{OV} avg",
          _ov, _avg),
    _rule("window:last-tap-dropped", _V, _DIVISOR_ONNX, "the window averaged covers the kernel's taps",
          f"{ONNX} avg", _onnx, _avg),
    _rule("index:planes-c*N+n", _V, ("OV-INDEX",), "indices of the tensor flattened to 1D: plane n * C + c", OV,
          _ov),
    _rule("index:planes-c*N+n", _V, ("ONNX-INDICES",), "indices of the tensor flattened to 1D: plane n * C + c",
          ONNX, _onnx),
    _rule("index:negative-axis-off-by-one", _V, ("OV-AXIS",), "indices count from the dimension 'axis' points at"),
    _rule("int_max:pad-zero", _V, ("OV-PAD-NEG-INF",), "padding is -inf: it never gives the max", OV, _ov),
    _rule("int_max:pad-zero", _V, ("ONNX-MAX",), "the max is one of the window's elements, and padding is none",
          ONNX, _onnx),
    *(_rule(key, _V, ("OV-MAX",), "the max is the largest value of the window", OV, _ov)
      for key in ("int_max:seed-zero", "int_max:seed-lowest+1")),
    *(_rule(key, _V, ("ONNX-MAX",), "the max is one of the window's elements", ONNX, _onnx)
      for key in ("int_max:seed-zero", "int_max:seed-lowest+1")),
    # ------------------------------------------------------------------ the rest of the family
    _rule("lp:no-root", _V, ("ONNX-LP-NORM", "ONNX-LP-P"), "the Lp norm is the 1/p-th root of the sum of |x|^p",
          "LpPool, GlobalLpPool"),
    _rule("lp:no-abs", _V, ("ONNX-LP-NORM",), "a norm sums |x|^p: x^p of a negative x with odd p is not a norm",
          "LpPool, GlobalLpPool"),
    _rule("lp:ceil-window-rescaled", _V, ("ONNX-LP-NORM",), "the norm is over the window's values: a window "
          "past the input's end is not scaled up to the kernel's size", "LpPool"),
    _rule("lp:input-type-average", _U, ("ONNX-LP-NORM",), "the text gives no computation type for the terms |x|^p "
          "or their sum: terms past the input type's largest value are inf where a wider type holds them",
          "LpPool"),
    _rule("lp:nan-skipped-rescaled", _U, (), "NaN in a norm: the text does not mention it", "LpPool"),
    _rule("lp:p-ignored", _V, ("ONNX-LP-P",), "p is the norm's order", "LpPool, GlobalLpPool"),
    _rule("lp:mean", _V, ("ONNX-LP-NORM",), "the Lp norm sums |x|^p: divided by the element count it is a "
          "power mean, smaller by count^(1/p)", "GlobalLpPool"),
    _rule("lp:input-type-overflow", _U, ("ONNX-LP-NORM",), "the text gives no accumulation type for the sum of "
          "|x|^p: a sum in the input type overflows where a wider one does not", "LpPool, GlobalLpPool"),
    _rule("lp:root-exponent-float32", _U, ("ONNX-LP-NORM",), "the text gives no computation type for the norm's "
          "1/p-th root: pow(S, 1.0f / p) computes it in float32, with 1/p held as float32 can hold it (0.33333334 "
          "for p = 3), a relative error of |fl(1/p) - 1/p| ln S that the Lp rule does not cover",
          "LpPool, GlobalLpPool"),
    _rule("lp:root-exponent-input-type", _U, ("ONNX-LP-NORM",), "the text gives no computation type for the norm's "
          "1/p-th root: an exponent held in a float16 or bfloat16 input's own type (0.33325195 for p = 3) is a "
          "relative error of |fl(1/p) - 1/p| ln S, past the Lp rule", "LpPool, GlobalLpPool"),
    *(_rule(key, _V, ("ONNX-GLOBAL-LP",), "global pooling pools each (n, c) plane over every spatial axis",
            "GlobalAveragePool, GlobalMaxPool, GlobalLpPool")
      for key in ("global:last-axis-only", "global:first-spatial-axis-only", "global:channels-too")),
    _rule("global:nan-skipped", _U, (), _NAN, "GlobalMaxPool"),
    _rule("global:nan-any", _U, (), _NAN, "GlobalMaxPool"),
    _rule("global:seed-lowest", _V, ("ONNX-MAX",), "the max of a plane is one of its elements: a plane of -inf "
          "gives -inf (GlobalMaxPool is MaxPool over the whole plane)", "GlobalMaxPool"),
    _rule("adaptive:float64-as-float32", _U, (), "the text states no computation type (T is any floating-point "
          "type); computing f64 as f32, with inf saturated, changes the result beyond f32's range",
          "AdaptiveAvgPool-8, AdaptiveMaxPool-8"),
    _rule("global:float64-as-float32", _U, (), "the text states no computation type (T is any floating-point "
          "type); computing f64 as f32, with inf saturated, changes the result beyond f32's precision and range",
          "GlobalAveragePool, GlobalMaxPool"),
    _rule("lp:float64-as-float32", _U, ("ONNX-LP-NORM",), "the text gives no computation type for the norm (T is "
          "any floating-point type); computing f64 as f32, with inf saturated, changes the result beyond f32's "
          "precision and range", "LpPool, GlobalLpPool"),
    _rule("lp:float64-cast-to-float32", _U, ("ONNX-LP-NORM",), "the text gives no computation type for the norm "
          "(T is any floating-point type); computing f64 in f32 changes the result beyond f32's precision and "
          "range", "LpPool, GlobalLpPool"),
    _rule("adaptive_max:nan-any", _U, (), _NAN, "AdaptiveMaxPool-8"),
    _rule("avg:input-type-overflow", _U, (), "the text gives no accumulation type or order for the average's sum: "
          "a sum in the input type overflows where a wider one does not", "GlobalAveragePool, AdaptiveAvgPool-8"),
    *(_rule(key, _U, (), "MaxUnpool's text does not say which element is kept where two indices are equal",
            "MaxUnpool") for key in ("unpool:first-write-wins", "unpool:collisions-summed")),
    *(_rule(key, _V, ("ONNX-UNPOOL-OUTPUT-SIZE",), "the third input sets the output size", "MaxUnpool")
      for key in ("unpool:output-shape-ignored", "unpool:inferred-then-padded")),
    _rule("unpool:pads-ignored", _U, (), "MaxUnpool's text gives no formula for the output shape without its "
          "output_shape input", "MaxUnpool"),
    *(_rule(key, _V, ("OV-ADAPTIVE-START", "OV-ADAPTIVE-END"), "bin j starts at floor(j H / O) and ends at "
            "ceil((j + 1) H / O)", "AdaptiveAvgPool-8, AdaptiveMaxPool-8")
      for key in ("adaptive:end-floor", "adaptive:start-ceil", "adaptive:rounding-swapped", "adaptive:uniform-bins")),
    _rule("adaptive_max:index-whole-tensor", _V, ("OV-ADAPTIVE-INDICES",), "indices count within the spatial "
          "dimensions of one (n, c) plane", "AdaptiveMaxPool-8"),
    _rule("adaptive_max:last-max", _U, (), "the text does not say which of equal maxima's index is given",
          "AdaptiveMaxPool-8"),
    _rule("adaptive_max:nan-skipped", _U, (), _NAN, "AdaptiveMaxPool-8"),
)

#: The prefixes of the family operators' own classes (the rest of a family class is a window's).
FAMILY_CLASS_PREFIXES: tuple[str, ...] = ("lp:", "global:", "unpool:", "adaptive:", "adaptive_max:", "avg:")

#: Classes outside the table: a rejection of a valid configuration is a limitation; what no
#: variant reproduces is a violation until explained (the reference implements the text).
REJECTION_SEVERITY = Severity.LIMITATION
UNEXPLAINED_SEVERITY = Severity.VIOLATION
#: A runner that crashes or hangs on a valid configuration gives no output the text defines.
STATUS_SEVERITY: dict[str, Severity] = {"crash": Severity.VIOLATION, "timeout": Severity.VIOLATION}
#: Most severe first.
RANK = (Severity.VIOLATION, Severity.LIMITATION, Severity.UNSPECIFIED, Severity.ERRATUM)


def severity_rule(key: str, spec: PoolSpec | FamilySpec) -> SeverityRule | None:
    """The table row that weighs ``key`` for ``spec`` (None: not a named class). A class of the
    pooling window (``rounding:...``, ``same:...``) on a family operator that slides one (LpPool)
    weighs as on that window."""
    window = getattr(spec, "window", None)
    if window is not None and not key.startswith(FAMILY_CLASS_PREFIXES):
        spec = window
    for rule in SEVERITY_RULES:  # a family operator's own rows hold for any configuration
        if rule.key == key and (rule.when is None or (isinstance(spec, PoolSpec) and rule.when(spec))):
            return rule
    return None


def severity_of(atoms: Sequence[str], spec: PoolSpec | FamilySpec) -> Severity:
    """The most severe weight among a divergence's atoms (a combination of open behaviours stays
    open; one contradicted sentence makes it a violation)."""
    found = []
    for atom in atoms:
        if atom.startswith("rejects: "):
            found.append(REJECTION_SEVERITY)
            continue
        rule = severity_rule(atom, spec)
        found.append(rule.severity if rule is not None else UNEXPLAINED_SEVERITY)
    return min(found, key=RANK.index) if found else UNEXPLAINED_SEVERITY


def rules_citing(atoms: Sequence[str], spec: PoolSpec | FamilySpec) -> list[SeverityRule]:
    """The rows that weigh ``atoms`` for ``spec``, in order (unknown atoms left out)."""
    return [r for r in (severity_rule(a, spec) for a in atoms if not a.startswith("rejects: ")) if r is not None]


# --------------------------------------------------------------------------- docs/severity.md

_DOC_HEAD = """\
# Severity of each divergence class

Generated from `poolcheck/spec/severity.py` (`SEVERITY_RULES`) and the sentences of
`poolcheck/spec/sources.py` by `python -m poolcheck.spec.severity > docs/severity.md`;
`tests/engines/test_spec_severity.py` fails when this page is out of date. Do not edit it by hand.

A class is a named behaviour of a runner where the reference does something else. Its severity
comes from the sentence of the text that applies to the configuration's convention, never from
the runner: `violation` (a sentence requires something else), `unspecified` (no sentence decides:
accumulation width, NaN, empty windows, tie order and their combinations always), `erratum` (only
sentences that contradict each other decide: the runner follows one, the reference the other).
A divergence named by several classes weighs as its most severe one. Outside the table: a
rejection of a valid configuration is a `limitation`; a crash, a hang and anything no class
explains are a `violation`.

| class | where | severity | why | sentence(s) |
| --- | --- | --- | --- | --- |
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def severity_table_markdown() -> str:
    """docs/severity.md: the table, then every cited sentence with its document."""
    lines = [_DOC_HEAD.rstrip("\n")]
    cited: list[str] = []
    for r in SEVERITY_RULES:
        ids = ", ".join(f"[{sid}](#{sid.lower()})" for sid in r.sentences) or "none"
        lines.append(f"| `{r.key}` | {_cell(r.condition)} | {r.severity.value} | {_cell(r.why)} | {ids} |")
        cited += [sid for sid in r.sentences if sid not in cited]
    lines += ["", "## Sentences", ""]
    for sid in sorted(cited):
        s = sentence(sid)
        lines.append(f"### {sid}")
        lines.append("")
        lines.append(f"> {_cell(s.text)}")
        lines.append("")
        where = ", ".join(f"`{loc}`" for loc in s.locations)
        note = f" {s.note[0].upper()}{s.note[1:]}." if s.note else ""
        lines.append(f"{DOCUMENTS[s.document].title} ({where}).{note}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":  # pragma: no cover - the generator's command line
    sys.stdout.write(severity_table_markdown())
