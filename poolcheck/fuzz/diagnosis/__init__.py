"""Diagnosis, not just a diff: which named setting makes the reference reproduce a peer.

Where implementations part ways the specs are silent or misread; each such point is a named
*variant* of the reference:

- geometry (output shape and window placement): ceil vs ceil_torch vs floor, same_upper vs
  same_lower, SAME pads from the undilated kernel (as ONNX Runtime computes them), an output sized
  without the dilation whose uncomputed tail is 0 (onnx.reference's AveragePool under SAME and
  VALID: :attr:`Placement.computed`), SAME_LOWER split as SAME_UPPER and sized floor(size /
  stride) (onnx.reference's MaxPool), SAME pads clamped at 0 then sized with ceil_mode as
  OpenVINO's ceil (OpenVINO's ONNX frontend), pads swapped or ignored or read interleaved, the
  padding a ceil window needs split half before the input (onnx.reference's AveragePool), the input not
  padded with pads_begin counted at the end and its indices counted its own way
  (``max:unit-step-common-path``, onnx.reference's MaxPool with strides and dilations 1),
  dilations ignored;
- policy (:class:`poolcheck.spec.policy.Policy`): NaN propagated / ignored / first-wins, value of
  a window wholly in padding (-inf / lowest finite / 0), the average's divisor (full kernel /
  window clipped to the padded input / valid elements only), the average of no element;
- indices: what a max index counts (whole tensor vs from ``axis``, row- vs column-major, padded
  coordinates, the index of an empty window, PyTorch's channels_last max_pool3d start index
  without its depth term, ``index:depthless-tail-start``), or a placement's own rule
  (:attr:`Placement.index_rule`: onnx.reference's unit-step MaxPool path).

For a differing output the reference is re-run under the variants and, per output element,
the variants that turn the reference's element into the peer's (without breaking an element
they agreed on) are collected; a greedy cover picks at most one variant per group. When that
leaves elements unexplained, combinations of up to :data:`MAX_DEPTH` policy variants are tried
on every placement and computation type (variants that change nothing the peer differs on are
pruned; :data:`DIAGNOSIS_SECONDS` bounds the search).

A name is given only if :func:`replay` -- the reference re-run under exactly the named variants
-- reproduces the peer (max exactly, averages within the comparison's tolerance); variants the
replay does not need are dropped, and each remaining one is credited with the elements that stop
agreeing without it ("values at 12 positions: divisor ...; values at 3 positions: ..."). What no
verified combination reproduces is ``unexplained values/indices (<kind of window>)``: a wrong
name is worse than none. Rejections are matched against named conditions the peer's message
points at (pads >= kernel, exclude_pad with pads >= kernel, a negative SAME pad total, ...), or a
SAME variant without output when the message says an output size is negative. Every class carries a :class:`Severity` from
:data:`SEVERITY_RULES` (poolcheck/spec/severity.py), which cites the sentences each rule rests on.
"""

from poolcheck.fuzz.diagnosis.indices import (
    TRANSPOSED,
    empty_index_fill,
    encode_indices,
    encode_with_fill,
)
from poolcheck.fuzz.diagnosis.model import (
    Diagnosis,
)
from poolcheck.fuzz.diagnosis.rejections import (
    REJECT_RULES,
    REJECTING_VARIANTS,
    RejectRule,
    diagnose_rejection,
    normalise_message,
)
from poolcheck.fuzz.diagnosis.replay import (
    Replay,
    attribution_text,
    predict,
    replay,
    settle,
)
from poolcheck.fuzz.diagnosis.search import (
    DIAGNOSIS_SECONDS,
    MAX_DEPTH,
    MAX_VERIFIED,
    diagnose_output,
)
from poolcheck.fuzz.diagnosis.severity import (
    REJECTION_SEVERITY,
    SEVERITY_RULES,
    STATUS_SEVERITY,
    UNEXPLAINED_SEVERITY,
    SeverityRule,
    severity_of,
    severity_rule,
)
from poolcheck.fuzz.diagnosis.symptom import shape_symptom
from poolcheck.fuzz.diagnosis.variants import (
    EMPTY_INDEX_MINUS_TEXT,
    EMPTY_INDEX_TAP_TEXT,
    EMPTY_INDEX_TEXT,
    EMPTY_INDEX_VARIANTS,
    GEOMETRY_VARIANTS,
    INDEX_VARIANTS,
    NARROWER,
    POLICY_VARIANTS,
    PRECISION_TEXT,
    GeometryVariant,
    IndexVariant,
    Placement,
    PolicyVariant,
    placements,
    variant_text,
)

__all__ = [
    "DIAGNOSIS_SECONDS",
    "EMPTY_INDEX_MINUS_TEXT",
    "EMPTY_INDEX_TAP_TEXT",
    "EMPTY_INDEX_TEXT",
    "EMPTY_INDEX_VARIANTS",
    "GEOMETRY_VARIANTS",
    "INDEX_VARIANTS",
    "MAX_DEPTH",
    "MAX_VERIFIED",
    "NARROWER",
    "POLICY_VARIANTS",
    "PRECISION_TEXT",
    "REJECTING_VARIANTS",
    "REJECTION_SEVERITY",
    "REJECT_RULES",
    "SEVERITY_RULES",
    "STATUS_SEVERITY",
    "TRANSPOSED",
    "UNEXPLAINED_SEVERITY",
    "Diagnosis",
    "GeometryVariant",
    "IndexVariant",
    "Placement",
    "PolicyVariant",
    "RejectRule",
    "Replay",
    "SeverityRule",
    "attribution_text",
    "diagnose_output",
    "diagnose_rejection",
    "empty_index_fill",
    "encode_indices",
    "encode_with_fill",
    "normalise_message",
    "placements",
    "predict",
    "replay",
    "settle",
    "severity_of",
    "severity_rule",
    "shape_symptom",
    "variant_text",
]
