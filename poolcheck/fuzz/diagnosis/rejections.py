"""Diagnosis of a peer refusing a configuration the engine accepts."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from poolcheck.engines import _windows as w
from poolcheck.errors import AttributeValueError
from poolcheck.fuzz.diagnosis.model import Diagnosis
from poolcheck.fuzz.diagnosis.severity import REJECTION_SEVERITY
from poolcheck.fuzz.diagnosis.variants import placements
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.shape import resolve


@dataclass(frozen=True)
class RejectRule:
    key: str
    text: str
    holds: Callable[[PoolSpec, np.ndarray], bool]
    needs: str = ""  # a regular expression the peer's message must match (empty: any message)


def _same_pad_total_undilated(size: int, kernel: int, stride: int) -> int:
    """The SAME pad total as onnx.reference 1.23's AveragePool/LpPool computes it
    (``op_pool_common.py``: ``get_output_shape_auto_pad``'s ``floor((size - 1) / stride) + 1``
    outputs, then ``get_pad_shape``'s ``(out - 1) * stride + kernel - size`` with the UNdilated
    kernel), not clamped at 0."""
    return ((size - 1) // stride) * stride + kernel - size


def _negative_same_total(spec: PoolSpec, x: np.ndarray) -> bool:
    """An average under SAME whose pad total (:func:`_same_pad_total_undilated`) is negative on
    some axis: onnx.reference hands it to ``numpy.pad``, which refuses a negative width ("index
    can't contain negative values"). Measured (ReferenceEvaluator, onnx 1.23.2: sizes 1-8 and 2-D,
    kernels 1-3, strides 1-4, dilations 1-3): it raises exactly there for AveragePool and LpPool
    with ceil_mode 0 (ceil_mode 1 asserts first), whatever the dilation; MaxPool never."""
    return spec.op == "avg" and spec.auto_pad in ("same_upper", "same_lower") and any(
        _same_pad_total_undilated(n, k, s) < 0 for n, k, s in zip(x.shape[2:], spec.kernel, spec.strides))


def _pads_ge_kernel(spec: PoolSpec) -> bool:
    return spec.auto_pad == "explicit" and any(
        p >= k for p, k in zip(spec.pads_begin + spec.pads_end, spec.kernel + spec.kernel))


def _empty_windows(spec: PoolSpec, x: np.ndarray) -> bool:
    try:
        return w.empty_windows(resolve(spec, x.shape)) is not None
    except AttributeValueError:
        return False


def _starts_in_pad(spec: PoolSpec, x: np.ndarray) -> bool:
    if spec.applied_rounding == "floor" or spec.auto_pad not in ("explicit", "valid"):
        return False
    try:
        g = resolve(spec.replace(rounding_type="ceil"), x.shape)
    except AttributeValueError:
        return False
    return any((a.out - 1) * a.stride >= a.size + a.pad_begin for a in g.axes)


def _plane_over_element_index(spec: PoolSpec, x: np.ndarray) -> bool:
    """PyTorch's channels_last max pooling (``cpu_max_pool_channels_last`` in
    aten/src/ATen/native/cpu/MaxPoolKernel.cpp, 2-D and 3-D alike) keeps each lane's in-plane
    index in ``integer_t = int_same_size_t<opmath_t>``, a signed integer as wide as the element's
    compute type, and checks ``input_depth * input_height * input_width <= numeric_limits<integer_t>::max()``
    first: one (n, c) plane of the INPUT (padding, kernel, stride, ceil_mode and N play no part)
    holds more elements than that integer counts. The kernel runs only on a channels_last tensor
    with C > 1 (with C = 1 the tensor is also contiguous and the NCHW kernel runs). Measured with
    F.max_pool2d / F.max_pool3d on channels_last tensors (PyTorch 2.13.0 CPU): int8 and uint8
    (``integer_t`` int8) refuse exactly when C > 1 and the plane has more than 127 elements
    (3-D: 18396 calls per type, D and H 1-8, W 1-129, N 1-3, C 1-64, kernels 1-2, with and
    without indices; 2-D: 7020 calls, H 1-39, W 1-129; 0 mismatches; the other seven types pass
    that whole 3-D grid); int16 above 32767 (32767 passes, 32768 refuses); float16, bfloat16,
    float32 and int32 pass at 32768 (``integer_t`` int32)."""
    if spec.op != "max" or x.ndim not in (4, 5) or x.shape[1] < 2 or x.dtype.kind not in "iuf":
        return False
    width = x.dtype.itemsize if x.dtype.kind in "iu" else max(x.dtype.itemsize, 4)  # half types: float opmath
    return int(np.prod(x.shape[2:])) > np.iinfo(np.dtype(f"int{8 * width}")).max


#: A rejection is named only when the peer's own message points at the condition (and the
#: condition holds); anything else is classed by its message with the numbers blanked.
REJECT_RULES: tuple[RejectRule, ...] = (
    RejectRule("exclude_pad with pads >= kernel", "rejects exclude_pad with a pad >= the kernel",
               lambda s, x: s.op == "avg" and s.exclude_pad and _pads_ge_kernel(s), r"(?i)exclude_pad"),
    RejectRule("pads >= kernel", "rejects a pad >= the kernel (the ONNX spec does not forbid it)",
               lambda s, x: _pads_ge_kernel(s), r"(?i)pad should be smaller than kernel|pads\[dim\] <"),
    RejectRule("input smaller than the kernel", "rejects an input smaller than the kernel (padding not counted)",
               lambda s, x: any(n < (k - 1) * d + 1 for n, k, d in zip(x.shape[2:], s.kernel, s.dilations)),
               r"(?i)smaller than (the )?kernel"),
    RejectRule("pads > kernel / 2", "rejects a pad larger than half the kernel",
               lambda s, x: s.auto_pad == "explicit" and any(
                   2 * p > k for p, k in zip(s.pads_begin + s.pads_end, s.kernel + s.kernel)), r"(?i)half of"),
    RejectRule("window wholly in padding", "rejects a configuration with a window wholly in padding",
               _empty_windows, r"(?i)wholly in padding|only padding"),
    RejectRule("ceil window starting in padding", "rejects a ceil window that starts in the padding",
               _starts_in_pad, r"(?i)ceil.*(start|begin).*pad"),
    RejectRule("negative SAME pad total",
               "rejects SAME padding whose total, (ceil(size / stride) - 1) * stride + kernel - size with the "
               "undilated kernel, is negative (a stride larger than the kernel): numpy.pad refuses a negative width "
               "(onnx.reference's AveragePool and LpPool pad so)",
               _negative_same_total, r"index can't contain negative values"),
    # the message must refuse dilations, not list them: ONNX Runtime's "Calculated output dimension is
    # negative. Check kernel_shape, pads, strides and dilations." and onnx.reference's "Issues with
    # types ... and attributes ['auto_pad', ..., 'dilations', ...]" name other causes
    RejectRule("dilations", "rejects dilations > 1", lambda s, x: any(d > 1 for d in s.dilations),
               r"(?i)dilations?\W{0,3}(>|must|should|are not|is not|not supported|unsupported)"
               r"|(unsupported|no|not support\w*)\s+dilations?"),
    RejectRule("plane over the element-width index", "rejects (max pooling, C > 1) an input plane of more "
               "elements than a signed integer as wide as the element counts (D*H*W, or H*W, > 127 for int8/uint8, "
               "> 32767 for int16): PyTorch's channels_last kernel keeps its in-plane indices in that integer",
               _plane_over_element_index, r"input_depth \* input_height \* input_width <= "
               r"std::numeric_limits<integer_t>::max\(\)"),
    RejectRule("asymmetric pads", "rejects asymmetric pads",
               lambda s, x: s.auto_pad == "explicit" and s.pads_begin != s.pads_end, r"(?i)symmetric"),
)


#: Geometry variants that can leave a configuration without output, each with what a peer
#: following it says when it refuses: ONNX Runtime's SAME arithmetic ends in "Calculated output
#: dimension is negative" (measured, 1.31). A variant names a refusal only when the message says
#: so: another peer's refusal of the same configuration has another cause (onnx.reference's
#: "ceil_mode is not supported with auto_pad", or numpy.pad's negative width). onnx.reference's
#: refusal is the rule "negative SAME pad total" above, not same:undilated-kernel-zero-tail's "no
#: output": that variant applies only under a dilation, the refusal happens without one too.
_NEGATIVE_SIZE = r"(?i)(output|dimension|size)[^.]*\bnegative|negative[^.]*(output|dimension|size)"
REJECTING_VARIANTS: dict[str, str] = {"same:undilated-kernel": _NEGATIVE_SIZE, "same:negative-pads": _NEGATIVE_SIZE}


#: Other spellings of an element type in runtimes' messages (tract: "Unknown DatumType Bfloat16").
_TYPE_SPELLINGS: dict[str, tuple[str, ...]] = {"bfloat16": ("bf16",), "float16": ("f16", "half"),
                                               "float32": ("f32",), "float64": ("f64", "double")}
_REFUSING = r"(unknown|unsupported|not supported|no support for|cannot handle)"


def refuses_element_type(message: str, dtype: np.dtype) -> bool:
    """Whether ``message`` refuses ``dtype`` itself: a word of refusal and the type's name (or a
    spelling of it) at most three words apart, in either order. A message that merely lists types
    ("Issues with types ...") refuses none."""
    names = (dtype.name, *_TYPE_SPELLINGS.get(dtype.name, ()))
    typed = "(" + "|".join(re.escape(n) for n in names) + r")\b"
    near = r"\W+(\w+\W+){0,3}?"
    return re.search(rf"(?i)\b{_REFUSING}{near}{typed}|\b{typed}{near}(is |are )?{_REFUSING}", message) is not None


def element_type_key(message: str, dtype: np.dtype) -> str | None:
    """The class key of a refusal of the element type itself (``element type T``, whatever the op
    and shape the message also holds), or None (:func:`refuses_element_type`)."""
    return f"element type {dtype.name}" if refuses_element_type(message, dtype) else None


def normalise_message(message: str, limit: int = 80) -> str:
    """A message with numbers and paths blanked, so one cause gives one class."""
    text = re.sub(r"0x[0-9a-fA-F]+", "#", message)
    text = re.sub(r"\d+", "#", text)
    # a tuple or list of numbers (a shape) is one blank, however many axes or signs it has
    text = re.sub(r"[\(\[][-#,\s]*[\)\]]", "#", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text[:limit]


def diagnose_rejection(spec: PoolSpec, x: np.ndarray, message: str) -> Diagnosis:
    """A peer refused a configuration the engine accepts: name the condition it trips on."""
    if "NOT_IMPLEMENTED" in message or "Could not find an implementation" in message:
        key = f"no {spec.op} kernel for {x.dtype.name}"
        return Diagnosis(f"rejects: {key}", f"has no kernel for {x.dtype.name} ({message[:120]})", True, (key,),
                         severity=REJECTION_SEVERITY)
    if "supported only with one output" in message:  # OpenVINO CPU, e.g. bfloat16 MaxPool with its indices
        key = f"no {spec.op} kernel with indices for {x.dtype.name}"
        return Diagnosis(f"rejects: {key}", f"has no kernel with indices for {x.dtype.name} ({message[:120]})", True,
                         (key,), severity=REJECTION_SEVERITY)

    typed = element_type_key(message, x.dtype)  # e.g. tract: "Unknown DatumType Bfloat16", whatever the op
    if typed is not None:
        return Diagnosis(f"rejects: {typed}", f"does not take {x.dtype.name} tensors at all ({message[:120]})", True,
                         (typed,), severity=REJECTION_SEVERITY)

    def holds(rule: RejectRule) -> bool:
        try:
            return rule.holds(spec, x)
        except (AttributeValueError, ValueError):
            return False

    # 1. a named condition the message itself points at
    for rule in REJECT_RULES:
        if rule.needs and re.search(rule.needs, message) and holds(rule):
            return Diagnosis(f"rejects: {rule.key}", f"{rule.text} ({message[:160]})", True, (rule.key,),
                             severity=REJECTION_SEVERITY)
    # 2. a SAME-padding variant under which the configuration has no output, refused as that
    # variant's followers refuse it
    try:
        options = placements(spec, tuple(int(v) for v in x.shape))
    except AttributeValueError:
        options = []
    for gv, p in options:
        if gv is not None and p is None and gv.key in REJECTING_VARIANTS and re.search(REJECTING_VARIANTS[gv.key],
                                                                                     message):
            key = f"{gv.key} gives no output"
            return Diagnosis(f"rejects: {key}", f"rejects it: {gv.text}, and then the output size is negative "
                             f"({message[:160]})", True, (gv.key,), severity=REJECTION_SEVERITY)
    norm = normalise_message(message)
    return Diagnosis(f"rejects: {norm}", f"rejects the configuration: {message[:200]}", False,
                     severity=REJECTION_SEVERITY)
