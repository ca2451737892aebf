"""Risk classes of a resolved pooling configuration: the geometric situations in which runtimes
are known to part ways, and the known-divergence registry entries each class points at."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from poolcheck.spec.dtypes import is_float
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.poolspec import PoolSpec
from poolcheck.spec.shape import Geometry, resolve


class Risk(str, Enum):
    """One geometric situation where runtimes are known to disagree."""

    CEIL_OVERHANG = "ceil-overhang"  # ceil rounding adds a window the floor rule would not
    CEIL_WINDOW_IN_PADDING = "ceil-window-in-padding"  # plain ceil's last window starts in the padding
    SAME_STRIDE = "same-stride"  # same_* padding with stride > 1 (pads depend on the rule read)
    SAME_NEGATIVE_PADS = "same-negative-pads"  # ONNX SAME, stride past the dilated kernel: pad_shape < 0
    DILATION_SAME = "dilation-same"  # dilations with same_* (undilated-kernel pad formulas)
    DILATION = "dilation"  # any dilation > 1 (some runtimes reject or ignore it)
    DIVISOR_OVERHANG = "divisor-overhang"  # average whose windows reach padding / overhang: the divisor is read differently
    PADS_GE_KERNEL = "pads-ge-kernel"  # a pad >= the kernel: windows wholly in padding
    ASYMMETRIC_PADS = "asymmetric-pads"  # pads_begin != pads_end (swapped-pads bugs)
    NAN_MAX = "nan-max"  # max pooling: NaN propagation is left open by the specs
    AVG_PRECISION = "avg-precision"  # float16 averages: accumulation type unspecified
    LP_PADS = "lp-pads"  # LpPool with pads: runtimes that ignore LpPool's pads give other windows
    UNPOOL_OVERLAP = "unpool-overlap"  # MaxUnpool of overlapping windows: indices may collide (which write wins)
    UNPOOL_OUTPUT_SHAPE = "unpool-output-shape"  # MaxUnpool's output_shape differs from the inferred one
    ADAPTIVE_UNEVEN_BINS = "adaptive-uneven-bins"  # an input size not a multiple of the output's: bin start/end rounding


#: Which known-divergence signatures (their detail part) each risk class points at.
RISK_SIGNATURES: dict[Risk, tuple[str, ...]] = {
    Risk.CEIL_OVERHANG: ("rounding:", "valid:ceil_mode", "shape:"),
    Risk.CEIL_WINDOW_IN_PADDING: ("rounding:", "empty_", "wholly in padding", "shape:"),
    Risk.SAME_STRIDE: ("same:", "negative SAME pad total"),
    Risk.SAME_NEGATIVE_PADS: ("same:negative-pads", "negative SAME pad total"),  # also onnx.reference refusing it
    Risk.DILATION_SAME: ("same:undilated-kernel",),
    Risk.DILATION: ("dilations", "undilated-kernel"),  # also onnx.reference's VALID sized without them
    Risk.DIVISOR_OVERHANG: ("divisor=",),
    Risk.PADS_GE_KERNEL: ("pads >= kernel", "empty_", "wholly in padding"),
    Risk.ASYMMETRIC_PADS: ("pads:",),
    Risk.NAN_MAX: ("nan=",),
    Risk.AVG_PRECISION: ("avg=input-type-sum", "precision:"),
    Risk.LP_PADS: ("pads",),
    Risk.UNPOOL_OVERLAP: ("collision",),
    Risk.UNPOOL_OUTPUT_SHAPE: ("output_shape",),
    Risk.ADAPTIVE_UNEVEN_BINS: ("bin",),
}

#: Window risks that concern averaging's divisor or max pooling's NaN: not Lp pooling's (its
#: window is held as an average's, whose divisor it never uses).
_NOT_LP = (Risk.DIVISOR_OVERHANG, Risk.AVG_PRECISION, Risk.NAN_MAX)


def risk_classes(spec: PoolSpec, input_shape: Sequence[int], dtype: str = "float32") -> list[Risk]:
    """The risk classes of ``spec`` on an input of ``input_shape``, from its resolved geometry."""
    geom: Geometry = resolve(spec, input_shape)
    out: list[Risk] = []
    same = spec.auto_pad in ("same_upper", "same_lower")
    for i, a in enumerate(geom.axes):
        dk = a.dilated_kernel
        span = a.size + a.pad_begin + a.pad_end - dk
        if spec.applied_rounding != "floor" and not same and span >= 0 and span % a.stride:
            out.append(Risk.CEIL_OVERHANG)
            ceil_out = -(-span // a.stride) + 1
            # "ceil": the last window starts at (out - 1) * stride; past size + pad_begin it
            # covers padding only (ceil_torch drops it, plain ceil keeps it).
            if (ceil_out - 1) * a.stride >= a.size + a.pad_begin:
                out.append(Risk.CEIL_WINDOW_IN_PADDING)
        if same and a.stride > 1:
            out.append(Risk.SAME_STRIDE)
        if same and spec.convention == "onnx":
            # ONNX: "pad_shape[i] = (output_spatial_shape[i] - 1) * strides_spatial_shape[i] +
            # ((kernel_spatial_shape[i] - 1) * dilations_spatial_shape[i] + 1) - input_spatial_shape[i]"
            o = -(-a.size // a.stride)
            if (o - 1) * a.stride + dk - a.size < 0:
                out.append(Risk.SAME_NEGATIVE_PADS)
        if a.dilation > 1:
            out.append(Risk.DILATION_SAME if same else Risk.DILATION)
        if spec.op == "avg" and (a.pad_begin or a.pad_end or a.overhang):
            out.append(Risk.DIVISOR_OVERHANG)
        if max(a.pad_begin, a.pad_end) >= a.kernel:
            out.append(Risk.PADS_GE_KERNEL)
        if not same and spec.auto_pad == "explicit" and spec.pads_begin[i] != spec.pads_end[i]:
            out.append(Risk.ASYMMETRIC_PADS)
    if spec.op == "max" and dtype.startswith("float"):
        out.append(Risk.NAN_MAX)
    if spec.op == "avg" and dtype == "float16":
        out.append(Risk.AVG_PRECISION)
    return sorted(set(out), key=list(Risk).index)


def family_risks(spec: FamilySpec, input_shape: Sequence[int], dtype: str = "float32") -> list[Risk]:
    """The risk classes of a family operator's configuration on an input of ``input_shape``:
    LpPool's window risks (and its pads), MaxUnpool's colliding indices and given output shape,
    adaptive pooling's uneven bins, NaN for the max-like ops and precision for the averages."""
    out: list[Risk] = []
    shape = tuple(int(v) for v in input_shape)
    if spec.op == "lp" and spec.window is not None:
        out += [r for r in risk_classes(spec.window, shape, dtype) if r not in _NOT_LP]
        if spec.window.auto_pad == "explicit" and (any(spec.window.pads_begin) or any(spec.window.pads_end)):
            out.append(Risk.LP_PADS)
    if spec.op == "unpool" and spec.window is not None:
        w = spec.window
        if any(s < k for s, k in zip(w.strides, w.kernel)):
            out.append(Risk.UNPOOL_OVERLAP)
        inferred = tuple((n - 1) * s + k - b - e for n, s, k, b, e in
                         zip(shape[2:], w.strides, w.kernel, w.pads_begin, w.pads_end))
        if spec.output_shape is not None and tuple(spec.output_shape[2:]) != inferred:
            out.append(Risk.UNPOOL_OUTPUT_SHAPE)
    if spec.op in ("adaptive_avg", "adaptive_max") and spec.output_shape is not None:
        if any(n % o for n, o in zip(shape[2:], spec.output_shape)):
            out.append(Risk.ADAPTIVE_UNEVEN_BINS)
    if spec.op in ("global_max", "adaptive_max") and is_float(dtype):
        out.append(Risk.NAN_MAX)
    if spec.op in ("global_avg", "adaptive_avg") and dtype in ("float16", "bfloat16"):
        out.append(Risk.AVG_PRECISION)
    return sorted(set(out), key=list(Risk).index)


@dataclass(frozen=True)
class KnownMatch:
    """A known-divergence entry whose class matches one of a node's risks."""

    risk: Risk
    case_id: str
    signature: str
    peer: str | None


def known_matches(op: str, risks: Sequence[Risk], entries: Sequence[object]) -> list[KnownMatch]:
    """Registry entries (:class:`poolcheck.fuzz.known.KnownEntry`) of the same op (max/avg)
    whose signature falls in one of ``risks``."""
    out = []
    for e in entries:
        sig = e.sig  # type: ignore[attr-defined]
        if sig.op != op:
            continue
        detail = sig.detail
        for r in risks:
            if any(s in detail for s in RISK_SIGNATURES[r]):
                out.append(KnownMatch(r, e.case.id, e.signature, e.peer))  # type: ignore[attr-defined]
                break
    return out
