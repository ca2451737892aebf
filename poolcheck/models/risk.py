"""Risk classes of a resolved pooling configuration: the geometric situations in which runtimes
are known to part ways, and the known-divergence registry entries each class points at."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

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


#: Which known-divergence signatures (their detail part) each risk class points at.
RISK_SIGNATURES: dict[Risk, tuple[str, ...]] = {
    Risk.CEIL_OVERHANG: ("rounding:", "valid:ceil_mode", "shape:"),
    Risk.CEIL_WINDOW_IN_PADDING: ("rounding:", "empty_", "wholly in padding", "shape:"),
    Risk.SAME_STRIDE: ("same:",),
    Risk.SAME_NEGATIVE_PADS: ("same:negative-pads",),
    Risk.DILATION_SAME: ("same:undilated-kernel",),
    Risk.DILATION: ("dilations",),
    Risk.DIVISOR_OVERHANG: ("divisor=",),
    Risk.PADS_GE_KERNEL: ("pads >= kernel", "empty_", "wholly in padding"),
    Risk.ASYMMETRIC_PADS: ("pads:",),
    Risk.NAN_MAX: ("nan=",),
    Risk.AVG_PRECISION: ("avg=input-type-sum", "precision:"),
}


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
