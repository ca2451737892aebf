"""Output-shape rules and the resolved window geometry.

:func:`resolve` is the rule every engine follows: the one the written formulas and the real
runtimes (OpenVINO 2026.4 CPU, ONNX Runtime 1.31) agree on. :func:`axis_rules` additionally
evaluates each *written* convention so ``poolcheck shape --convention all`` can show where the
documents and the runtimes part ways.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from poolcheck.errors import AttributeValueError
from poolcheck.spec.limits import MAX_ELEMENTS, MAX_EXTENT, MAX_TAPS
from poolcheck.spec.poolspec import PoolSpec


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


@dataclass(frozen=True)
class AxisGeometry:
    """One spatial axis after auto_pad and rounding are resolved.

    Window ``o`` covers input positions ``o * stride - pad_begin + j * dilation`` for
    ``j in range(kernel)``; positions outside ``[0, size)`` are padding (inside
    ``[-pad_begin, size + pad_end)``) or overhang past the padded input (ceil rounding only).
    """

    size: int
    kernel: int
    stride: int
    dilation: int
    pad_begin: int
    pad_end: int
    out: int

    @property
    def dilated_kernel(self) -> int:
        return (self.kernel - 1) * self.dilation + 1

    @property
    def overhang(self) -> int:
        """How far the last window reaches past ``size + pad_end`` (0 unless ceil rounding)."""
        last = (self.out - 1) * self.stride - self.pad_begin + self.dilated_kernel
        return max(0, last - (self.size + self.pad_end))

    def taps(self, o: int) -> list[int]:
        start = o * self.stride - self.pad_begin
        return [start + j * self.dilation for j in range(self.kernel)]


@dataclass(frozen=True)
class Geometry:
    """The resolved geometry of a pooling op over one input shape."""

    batch: int
    channels: int
    axes: tuple[AxisGeometry, ...]

    # Computed once per geometry (a frozen dataclass keeps its __dict__ for them): the oracles,
    # engines and diagnosis ask for both shapes many times per configuration.
    @functools.cached_property
    def input_shape(self) -> tuple[int, ...]:
        return (self.batch, self.channels, *(a.size for a in self.axes))

    @functools.cached_property
    def output_shape(self) -> tuple[int, ...]:
        return (self.batch, self.channels, *(a.out for a in self.axes))

    @property
    def pads_begin(self) -> tuple[int, ...]:
        return tuple(a.pad_begin for a in self.axes)

    @property
    def pads_end(self) -> tuple[int, ...]:
        return tuple(a.pad_end for a in self.axes)


def _half_toward_zero(total: int) -> int:
    """``total / 2`` rounded toward zero: the smaller half by magnitude, for either sign."""
    return total // 2 if total >= 0 else -((-total) // 2)


def same_pads(size: int, stride: int, dilated_kernel: int, auto_pad: str,
              convention: str = "openvino") -> tuple[int, int, int]:
    """Output size and (pad_begin, pad_end) for same_upper / same_lower.

    ONNX: the output size [ONNX-SHAPE-SAME-CEIL] and the pad total [ONNX-SAME-PADS], split with
    the odd element at the end for SAME_UPPER, at the beginning for SAME_LOWER [ONNX-SAME-SPLIT].
    OpenVINO: the same split [OV-SAME-SPLIT].

    - ``convention="onnx"``: the formula as written. With a stride larger than the dilated
      kernel, ``pad_shape`` is negative: the windows start inside the input (ONNX Runtime 1.32's
      AveragePool and onnx.reference's MaxPool apply the negative pad). It is split as equally as
      possible by magnitude, the odd unit at the end (upper) or the beginning (lower).
    - ``convention="openvino"``: a negative total is clamped to 0 (measured: OpenVINO 2026.4.1
      CPU, opset14 MaxPool/AvgPool, 1x1x5 input, kernel 1, stride 3, same_upper and same_lower
      -> windows at 0 and 3).
    """
    out = _ceil_div(size, stride)
    total = (out - 1) * stride + dilated_kernel - size
    if convention != "onnx":
        total = max(0, total)
    small = _half_toward_zero(total)
    large = total - small
    if auto_pad == "same_upper":
        return out, small, large
    return out, large, small


def resolve_axis(
    size: int,
    kernel: int,
    stride: int,
    dilation: int,
    pad_begin: int,
    pad_end: int,
    rounding_type: str,
    auto_pad: str,
    *,
    axis_index: int = 0,
    convention: str = "openvino",
) -> AxisGeometry:
    """Resolve one axis: the pads actually applied and the output size."""
    dk = (kernel - 1) * dilation + 1
    if auto_pad in ("same_upper", "same_lower"):
        out, pb, pe = same_pads(size, stride, dk, auto_pad, convention)
        return AxisGeometry(size, kernel, stride, dilation, pb, pe, out)
    if auto_pad == "valid":
        # "valid padding is not used"; the rounding rule still applies (OpenVINO runtime and the
        # MaxPool-8 page's own example 5 give a 2x2 output for 3x3, kernel 2, stride 2, ceil).
        pad_begin = pad_end = 0
    padded = size + pad_begin + pad_end
    if dk > padded:
        raise AttributeValueError(
            "kernel",
            f"axis {axis_index}: the dilated kernel ({dk}) is larger than the padded input "
            f"({size} + {pad_begin} + {pad_end} = {padded}); the output would be empty",
        )
    # "H_out = floor((H + pads_begin[0] + pads_end[0] - ((kernel[0] - 1) * dilations[0] + 1)) /
    #  strides[0] + 1)" and the same with ceil.
    if rounding_type == "floor":
        out = (padded - dk) // stride + 1
    else:
        out = _ceil_div(padded - dk, stride) + 1
        if rounding_type == "ceil_torch" and (out - 1) * stride >= size + pad_begin:
            # the last window may not start in the padding: one fewer [OV-CEIL-TORCH]
            out -= 1
    return AxisGeometry(size, kernel, stride, dilation, pad_begin, pad_end, out)


#: Geometries :func:`resolve` keeps: a fuzzed configuration is resolved about six times (validation,
#: the reference, its regions, the shape rules, metamorphic properties, a diagnosis) and a
#: geometry is immutable, so the later calls share the first one's result.
RESOLVED_CACHE = 4096


def resolve(spec: PoolSpec, input_shape: Sequence[int]) -> Geometry:
    """Resolve ``spec`` against a full input shape ``(N, C, *spatial)`` (refusals are raised
    every time; a resolved geometry is shared by equal arguments)."""
    shape = tuple(int(v) for v in input_shape)
    try:
        return _resolved(spec, shape)
    except TypeError:  # an unhashable field (a spec built without validation): not kept
        return _resolve(spec, shape)


def _resolve(spec: PoolSpec, shape: tuple[int, ...]) -> Geometry:
    if len(shape) != spec.rank:
        raise AttributeValueError(
            "kernel",
            f"{spec.spatial_rank} spatial value(s) need an input of rank {spec.rank}, got rank {len(shape)}",
        )
    axes = tuple(
        resolve_axis(
            shape[2 + i],
            spec.kernel[i],
            spec.strides[i],
            spec.dilations[i],
            spec.pads_begin[i],
            spec.pads_end[i],
            spec.applied_rounding,
            spec.auto_pad,
            axis_index=i,
            convention=spec.convention,
        )
        for i in range(spec.spatial_rank)
    )
    geom = Geometry(shape[0], shape[1], axes)
    check_limits(spec, geom)
    return geom


_resolved = functools.lru_cache(maxsize=RESOLVED_CACHE)(_resolve)


def _prod(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def check_limits(spec: PoolSpec, geom: Geometry) -> None:
    """Refuse geometries past the documented limits (:mod:`poolcheck.spec.limits`) before any
    engine allocates or loops: per-axis extents, output and padded-input sizes, and the work."""
    pads_name = "pads" if spec.convention == "onnx" else "pads_begin"
    for i, a in enumerate(geom.axes):
        padded = a.size + a.pad_begin + a.pad_end
        if a.size > MAX_EXTENT:
            raise AttributeValueError("input", f"axis {i}: size {a.size} exceeds {MAX_EXTENT} (2^31 - 1)")
        if a.dilated_kernel > MAX_EXTENT:
            raise AttributeValueError(
                "dilations", f"axis {i}: the dilated kernel (({a.kernel} - 1) * {a.dilation} + 1) exceeds "
                f"{MAX_EXTENT} (2^31 - 1)")
        if padded > MAX_EXTENT:
            raise AttributeValueError(
                pads_name, f"axis {i}: the padded extent {a.size} + {a.pad_begin} + {a.pad_end} exceeds "
                f"{MAX_EXTENT} (2^31 - 1)")
    n_in = _prod(geom.input_shape)
    cap = max(MAX_ELEMENTS, n_in)
    n_out = _prod(geom.output_shape)
    if n_out > cap:
        raise AttributeValueError(
            "strides", f"the output {geom.output_shape} would hold {n_out} elements, over the limit of {cap}")
    n_padded = geom.batch * geom.channels * _prod([a.size + a.pad_begin + a.pad_end for a in geom.axes])
    if n_padded > cap:
        raise AttributeValueError(
            pads_name, f"the padded input would hold {n_padded} elements, over the limit of {cap}")
    taps = n_out * _prod(spec.kernel)
    if taps > MAX_TAPS:
        raise AttributeValueError(
            "kernel", f"{n_out} output elements x {_prod(spec.kernel)} kernel taps = {taps} exceeds the work "
            f"limit of {MAX_TAPS} (2^32) taps")


# --------------------------------------------------------------------------- written rules


@dataclass(frozen=True)
class RuleResult:
    """One convention's answer for one axis: output size (None = not expressible) and working."""

    convention: str
    out: int | None
    working: str
    pads: tuple[int, int] | None = None
    #: Why this rule's answer can differ from the others' (e.g. "last window would start in
    #: padding"), for the one line ``poolcheck shape`` prints; "" when nothing sets it apart.
    note: str = ""


def _explicit_working(size: int, pb: int, pe: int, k: int, d: int, s: int, fn: str) -> tuple[int, str]:
    num = size + pb + pe - ((k - 1) * d + 1)
    if fn == "floor":
        out = num // s + 1
    else:
        out = _ceil_div(num, s) + 1
    # the quotient as a reader can round it: exact when whole, else 12 significant digits (never 7.15828e+08)
    quotient = f"{num // s + 1}" if num % s == 0 else f"{num / s + 1:.12g}"
    text = f"{fn}(({size} + {pb} + {pe} - (({k} - 1) * {d} + 1)) / {s} + 1) = {fn}({quotient}) = {out}"
    return out, text


def axis_rules(
    size: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int,
    rounding_type: str, auto_pad: str,
) -> list[RuleResult]:
    """Evaluate every convention's rule for one axis (used by ``poolcheck shape``)."""
    results: list[RuleResult] = []
    dk = (kernel - 1) * dilation + 1
    fn = "floor" if rounding_type == "floor" else "ceil"

    # OpenVINO, as written on the shape-rules page.
    if auto_pad in ("same_upper", "same_lower"):
        results.append(RuleResult("openvino-written", size, f"out = in = {size} (\"H_out = H\"; stride not used)",
                                  note="as written, out = in (stride not used)"))
    elif auto_pad == "valid":
        num = size - dk + 1
        out = _ceil_div(num, stride)
        results.append(RuleResult(
            "openvino-written", out,
            f"ceil(({size} - (({kernel} - 1) * {dilation} + 1) + 1) / {stride}) = {out}  (rounding_type not used)",
            note="as written, rounding_type not used",
        ))
    else:
        if size + pad_begin + pad_end < dk:
            results.append(RuleResult("openvino-written", None, "dilated kernel larger than padded input"))
        else:
            out, text = _explicit_working(size, pad_begin, pad_end, kernel, dilation, stride, fn)
            if rounding_type == "ceil_torch" and (out - 1) * stride >= size + pad_begin:
                text += f"; last window starts at {(out - 1) * stride} >= {size} + {pad_begin} (in padding) -> {out - 1}"
                out -= 1
            results.append(RuleResult("openvino-written", out, text))

    # OpenVINO runtime / poolcheck engine.
    try:
        g = resolve_axis(size, kernel, stride, dilation, pad_begin, pad_end, rounding_type, auto_pad)
        note = ""
        if auto_pad in ("same_upper", "same_lower"):
            text = (f"ceil({size} / {stride}) = {g.out}; pads = max(0, ({g.out} - 1) * {stride} + {dk} - {size})"
                    f" = {g.pad_begin + g.pad_end} -> begin {g.pad_begin}, end {g.pad_end}")
            if (g.out - 1) * stride + dk - size < 0:
                note = "a negative SAME pad clamped to 0"
        elif auto_pad == "valid":
            _, text = _explicit_working(size, 0, 0, kernel, dilation, stride, fn)
            if rounding_type == "ceil_torch" and g.out != int(text.rsplit("= ", 1)[1]):
                text += f"; last window starts in padding -> {g.out}"
                note = "ceil_torch drops a last window that starts in padding"
        else:
            _, text = _explicit_working(size, pad_begin, pad_end, kernel, dilation, stride, fn)
            if rounding_type == "ceil_torch" and g.out != int(text.rsplit("= ", 1)[1]):
                text += f"; last window starts at {g.out * stride} >= {size} + {pad_begin} -> {g.out}"
                note = "ceil_torch drops a last window that starts in padding"
            elif rounding_type == "ceil" and (g.out - 1) * stride >= size + pad_begin:
                note = "rounding_type ceil keeps a last window that starts in padding"
        results.append(RuleResult("openvino-runtime", g.out, text, (g.pad_begin, g.pad_end), note))
    except AttributeValueError as exc:
        results.append(RuleResult("openvino-runtime", None, str(exc)))

    # ONNX (ceil_mode = rounding_type != floor).
    ceil_mode = rounding_type != "floor"
    if auto_pad in ("same_upper", "same_lower"):
        out, pb, pe = same_pads(size, stride, dk, auto_pad, "onnx")
        text = (f"ceil({size} / {stride}) = {out}; pad_shape = ({out} - 1) * {stride} + {dk} - {size}"
                f" = {pb + pe} -> begin {pb}, end {pe}")
        if pb + pe < 0:
            text += " (negative: windows start inside the input)"
        results.append(RuleResult("onnx", out, text, (pb, pe),
                                  "negative pad kept: windows start inside the input" if pb + pe < 0 else ""))
    elif auto_pad == "valid":
        num = size - dk
        if num < 0:
            results.append(RuleResult("onnx", None, "dilated kernel larger than input"))
        elif ceil_mode:
            out = _ceil_div(num + 1, stride)
            results.append(RuleResult("onnx", out, f"VALID, ceil_mode: ceil(({size} - {dk} + 1) / {stride}) = {out}",
                                      note="VALID: ceil_mode has no effect"))
        else:
            out = num // stride + 1
            results.append(RuleResult("onnx", out, f"VALID: floor(({size} - {dk}) / {stride}) + 1 = {out}"))
    else:
        if size + pad_begin + pad_end < dk:
            results.append(RuleResult("onnx", None, "dilated kernel larger than padded input"))
        else:
            out, text = _explicit_working(size, pad_begin, pad_end, kernel, dilation, stride,
                                          "ceil" if ceil_mode else "floor")
            note = ""
            if ceil_mode and (out - 1) * stride >= size + pad_begin:
                text += f"; last window would start in padding -> {out - 1}"
                out -= 1
                note = "last window would start in padding"
            results.append(RuleResult("onnx", out, text, note=note))

    # PyTorch F.max_poolNd / avg_poolNd: symmetric padding only, pad <= kernel / 2, no auto_pad.
    if auto_pad in ("same_upper", "same_lower"):
        results.append(RuleResult("torch", None, "no same padding for pooling"))
    else:
        pb, pe = (0, 0) if auto_pad == "valid" else (pad_begin, pad_end)
        if pb != pe:
            results.append(RuleResult("torch", None, f"asymmetric pads {pb}/{pe} not expressible"))
        elif 2 * pb > kernel:
            results.append(RuleResult("torch", None, f"pad {pb} > kernel / 2 is rejected"))
        else:
            # PyTorch (pooling_output_shape) rounds first and rejects only a non-positive size, so
            # with ceil_mode a dilated kernel longer than the padded input still yields a window.
            num = size + 2 * pb - dk
            out = (_ceil_div(num, stride) if ceil_mode else num // stride) + 1
            text = (f"{'ceil' if ceil_mode else 'floor'}(({size} + 2 * {pb} - (({kernel} - 1) * {dilation} + 1))"
                    f" / {stride}) + 1 = {out}")
            note = ""
            if ceil_mode and (out - 1) * stride >= size + pb:
                text += f"; last window would start in padding -> {out - 1}"
                out -= 1
                note = "last window would start in padding"
            if out <= 0:
                results.append(RuleResult("torch", None, f"output size {out} is rejected"))
            else:
                results.append(RuleResult("torch", out, text, note=note))
    return results


def window_taps(geom: Geometry, out_position: Sequence[int]) -> list[tuple[tuple[int, ...], str]]:
    """The taps of one output element's window: spatial input coordinates in row-major window
    order, each marked ``"input"``, ``"pad"`` (inside the padding) or ``"overhang"`` (past the
    padded input, reachable only under ceil rounding)."""
    spatial = tuple(out_position)[-len(geom.axes):]
    per_axis = []
    for a, o in zip(geom.axes, spatial):
        per_axis.append([
            (p, "input" if 0 <= p < a.size else ("pad" if -a.pad_begin <= p < a.size + a.pad_end else "overhang"))
            for p in a.taps(o)
        ])
    taps: list[tuple[tuple[int, ...], str]] = []
    for combo in itertools.product(*per_axis):
        coords = tuple(p for p, _ in combo)
        kinds = {k for _, k in combo}
        kind = "overhang" if "overhang" in kinds else ("pad" if "pad" in kinds else "input")
        taps.append((coords, kind))
    return taps
