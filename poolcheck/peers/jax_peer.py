"""JAX / XLA (CPU) as a peer: ``jax.lax.reduce_window`` with ``lax.max`` or ``lax.add``.

XLA's reduce_window has explicit (low, high) padding per axis, window strides and window
dilation, and nothing else: no auto_pad, no rounding mode, no indices, no divisor. poolcheck
expresses every configuration through explicit padding, exactly:

- auto_pad (SAME_UPPER/SAME_LOWER/VALID) is resolved to the pads the spec prescribes;
- ceil rounding (``ceil``, ``ceil_torch``, ONNX ``ceil_mode=1``) grows the high padding so XLA's
  floor formula yields the spec's output size (the extra elements are the reduction's identity:
  -inf or the type's minimum for max, 0 for the sum), or crops the input where the last window
  ends before the input does;
- the average's divisor is a second reduce_window (a sum) over ones laid out as the spec counts
  them: every input element, plus the padding when padding is counted, never the ceil overhang.

A configuration with a window that holds no input element is declined (its value would be the
init value or the 0/0 poolcheck picks, not XLA's answer). Indices are declined: XLA has no argmax window reduction (the peer returns values only, and its
max-pooling checks compare values). Each configuration is jitted once and cached (an XLA compile
costs tens of milliseconds; a cached configuration runs in microseconds).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from poolcheck.engines._windows import empty_windows
from poolcheck.errors import PoolcheckError
from poolcheck.peers._convert import PeerDeclined, check_expressible
from poolcheck.peers.adapter import RuntimePeer, Translated
from poolcheck.peers.base import BatchItem, PeerOutput
from poolcheck.spec.operators import allowed_dtypes
from poolcheck.spec.poolspec import PoolSpec
from poolcheck.spec.shape import resolve


@dataclass(frozen=True)
class JaxNode:
    """One reduce_window call: window, strides, dilations, XLA padding and the divisor's layout."""

    op: str
    shape: tuple[int, ...]
    dtype: str
    window: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    #: Input kept per spatial axis (``size`` or less when the last window ends early).
    keep: tuple[int, ...]
    #: XLA (low, high) padding per spatial axis, both >= 0.
    padding: tuple[tuple[int, int], ...]
    #: Padding counted by the divisor per axis (spec pads clipped to the XLA padding), or None
    #: when padding is not counted.
    counted: tuple[tuple[int, int], ...] | None
    #: Why the configuration is invalid (the peer then rejects it, as the runtime would).
    invalid: str | None = None
    #: Input dropped at the start per spatial axis (a negative ONNX SAME pad_begin).
    start: tuple[int, ...] = ()


def to_jax(spec: PoolSpec, shape: Sequence[int], dtype: np.dtype, peer: str = "jax") -> JaxNode:
    """Translate ``spec`` for ``shape``/``dtype`` into a :class:`JaxNode`, or raise :class:`PeerDeclined`."""
    shape = tuple(int(v) for v in shape)
    dt = np.dtype(dtype)
    check_expressible(spec, shape, peer, "XLA")
    if spec.op == "avg" and dt.name not in allowed_dtypes("avg", spec.convention):
        raise PeerDeclined(peer, f"averages are computed for floating-point inputs only, not {dt.name}")
    base = dict(op=spec.op, shape=shape, dtype=dt.str, window=tuple(spec.kernel), strides=tuple(spec.strides),
                dilations=tuple(spec.dilations))
    try:
        geom = resolve(spec, shape)
    except (PoolcheckError, ArithmeticError, IndexError, ValueError) as exc:
        return JaxNode(keep=(), padding=(), counted=None, invalid=str(exc), **base)  # type: ignore[arg-type]
    if empty_windows(geom) is not None:
        # Such a window reduces nothing: its value would be the init value (max) or 0/0 (average)
        # that poolcheck picks when calling reduce_window, not an answer of XLA's.
        raise PeerDeclined(peer, "a window holds no input element (all padding or past the input); XLA's "
                                 "reduce_window has no rule for it beyond the init value the caller picks")
    keep, start, padding, counted = [], [], [], []
    for a in geom.axes:
        # Window o covers o*stride - pad_begin + j*dilation; XLA's last window must end where the
        # spec's does: (out-1)*stride - pad_begin + dilated_kernel. A negative pad_begin (ONNX
        # SAME with a stride past the dilated kernel) drops that much input at the start.
        end = (a.out - 1) * a.stride - a.pad_begin + a.dilated_kernel
        first = max(0, -a.pad_begin)
        lo = max(0, a.pad_begin)
        hi = end - a.size
        size = a.size
        if hi < 0:  # the last window ends inside the input: crop it
            size, hi = a.size + hi, 0
        if a.out <= 0 or size <= first:
            return JaxNode(keep=(), padding=(), counted=None, invalid=f"resolved geometry {a} has no XLA form",
                           **base)  # type: ignore[arg-type]
        keep.append(size - first)
        start.append(first)
        padding.append((lo, hi))
        counted.append((lo, max(0, min(hi, a.size + a.pad_end - size))))
    return JaxNode(keep=tuple(keep), padding=tuple(padding), start=tuple(start),
                   counted=None if spec.op == "max" or spec.exclude_pad else tuple(counted), **base)  # type: ignore[arg-type]


class JaxPeer(RuntimePeer):
    """JAX on the CPU, 64-bit types enabled, one jitted reduce_window per configuration."""

    name = "jax"
    ref = "jax"
    module = "jax"
    install_hint = "pip install 'poolcheck[jax]'"
    batch_limit = 1

    def __init__(self, *, cache_size: int = 512) -> None:
        self.cache_size = cache_size
        self._fns: OrderedDict[JaxNode, Any] = OrderedDict()
        self._ready = False

    def version(self) -> str | None:
        version = super().version()
        if version is None:
            return None
        try:
            import jaxlib
        except Exception:
            return version
        # jax and jaxlib are released together; name jaxlib only when it differs
        return version if jaxlib.__version__ == version else f"{version}/jaxlib-{jaxlib.__version__}"

    def _setup(self) -> Any:
        import jax

        if not self._ready:
            jax.config.update("jax_platforms", "cpu")
            jax.config.update("jax_enable_x64", True)  # float64 and int64 inputs stay 64-bit
            self._ready = True
        return jax

    def translate(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> JaxNode:
        return to_jax(spec, shape, dtype, self.name)

    def execute(self, group: Sequence[Translated], items: Sequence[BatchItem]) -> list[PeerOutput]:
        ((_, node, arr),) = group
        if node.invalid is not None:
            raise ValueError(f"invalid configuration: {node.invalid}")
        fn = self._compiled(node)
        values = np.asarray(fn(arr))
        return [PeerOutput(values.copy(), None, ["values only: XLA reduce_window has no indices"]
                           if node.op == "max" else [])]

    def _compiled(self, node: JaxNode) -> Any:
        fn = self._fns.get(node)
        if fn is not None:
            self._fns.move_to_end(node)
            return fn
        jax = self._setup()
        from jax import lax

        dt = np.dtype(node.dtype)
        dims = (1, 1) + node.window
        strides = (1, 1) + node.strides
        dil = (1, 1) + node.dilations
        pad = ((0, 0), (0, 0)) + node.padding
        starts = node.start or (0,) * len(node.keep)
        crop = (slice(None), slice(None)) + tuple(slice(b, b + k) for b, k in zip(starts, node.keep))
        if node.op == "max":
            init = -np.inf if dt.kind == "f" else np.iinfo(dt).min
            init_v = np.array(init, dtype=dt)

            def f(x: Any) -> Any:
                return lax.reduce_window(x[crop], init_v, lax.max, dims, strides, pad, window_dilation=dil)
        else:
            ones = np.ones(node.keep, dtype=dt)
            if node.counted is not None:
                ones = np.pad(ones, node.counted, constant_values=1)
                rest = tuple((lo - c_lo, hi - c_hi) for (lo, hi), (c_lo, c_hi) in zip(node.padding, node.counted))
            else:
                rest = node.padding
            ones = ones[None, None]
            zero = np.array(0, dtype=dt)
            rest_pad = ((0, 0), (0, 0)) + rest

            def f(x: Any) -> Any:
                # the divisor is computed in the same jitted function: one XLA compile per config
                count = lax.reduce_window(ones, zero, lax.add, dims, strides, rest_pad, window_dilation=dil)
                total = lax.reduce_window(x[crop], zero, lax.add, dims, strides, pad, window_dilation=dil)
                return total / count

        fn = jax.jit(f)
        self._fns[node] = fn
        while len(self._fns) > self.cache_size:
            self._fns.popitem(last=False)
        return fn
