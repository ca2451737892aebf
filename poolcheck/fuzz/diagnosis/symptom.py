"""What a differing output looks like, before any explanation: for a shape, which axis, the
expected and actual lengths, and which window is missing or extra, where it starts relative to the
input and the padding."""

from __future__ import annotations

from poolcheck.errors import PoolcheckError
from poolcheck.spec.poolspec import PoolSpec
from poolcheck.spec.shape import AxisGeometry, resolve


def _where(a: AxisGeometry, start: int) -> str:
    if start < -a.pad_begin:
        return "before the padded input"
    if start < 0:
        return f"in the begin padding ({-start} before the input)"
    if start < a.size:
        return f"inside the input, {a.size - start} element(s) before its end"
    if start < a.size + a.pad_end:
        return f"in the end padding ({start - a.size} past the input)"
    return "past the padded input"


def shape_symptom(spec: PoolSpec, in_shape: tuple[int, ...], actual: tuple[int, ...]) -> str:
    """``""`` when the shapes agree; else one clause per differing axis, e.g. "shape: spatial axis 0
    has 2 windows, expected 3: window 2, starting at input position 4 (inside the input, 1
    element(s) before its end; H 5, pads_begin 1, pads_end 1, stride 2), is missing"."""
    try:
        g = resolve(spec, in_shape)
    except PoolcheckError:
        return ""
    expected = g.output_shape
    if tuple(actual) == tuple(expected):
        return ""
    if len(actual) != len(expected):
        return f"shape: rank {len(actual)}, expected rank {len(expected)} ({list(actual)} vs {list(expected)})"
    parts = []
    for i, (e, got) in enumerate(zip(expected, actual)):
        if e == got:
            continue
        if i < 2:
            parts.append(f"{'batch' if i == 0 else 'channel'} axis has {got}, expected {e}")
            continue
        a = g.axes[i - 2]
        o = min(e, got)  # the first window one side has and the other lacks
        start = o * a.stride - a.pad_begin
        what = "is missing" if got < e else "is extra"
        many = f" (and {abs(e - got) - 1} more after it)" if abs(e - got) > 1 else ""
        parts.append(f"spatial axis {i - 2} has {got} window(s), expected {e}: window {o}, starting at input position "
                     f"{start} ({_where(a, start)}; H {a.size}, pads_begin {a.pad_begin}, pads_end {a.pad_end}, "
                     f"stride {a.stride}), {what}{many}")
    return "shape: " + "; ".join(parts)
