"""JAX / XLA (CPU) as a peer: ``jax.lax.reduce_window`` with ``lax.max`` or ``lax.add``.

XLA's reduce_window has explicit (low, high) padding per axis, window strides and window
dilation, and nothing else: no auto_pad, no rounding mode, no indices, no divisor. poolcheck
expresses every configuration through explicit padding, exactly:

- auto_pad (SAME_UPPER/SAME_LOWER/VALID) is resolved to the pads the spec prescribes;
- ceil rounding (``ceil``, ``ceil_torch``, ONNX ``ceil_mode=1``) grows the high padding so XLA's
  floor formula yields the spec's output size (the extra elements are the reduction's identity:
  -inf or the type's minimum for max, 0 for the sum), or crops the input where the last window
  ends before the input does;
- the average is XLA's window sum over the count of what the spec counts (every input element,
  plus the padding when padding is counted, never the ceil overhang), counted in NumPy
  (:func:`divisor`) and divided once (:func:`average`).

A configuration with a window that holds no input element is declined (its value would be the
init value or the 0/0 poolcheck picks, not XLA's answer). Indices are declined: XLA has no
argmax window reduction (the peer returns values only, and its max-pooling checks compare values).

An XLA compile costs tens of milliseconds, so the input is laid out in NumPy first (see
:func:`layout`): cropped, padded with the reduction's identity (what reduce_window's own padding
adds), (n, c) flattened into rows, and -- with the default option ``windows=shared`` -- dilated
axes split by residue, axes of a one-element window folded into the rows, and strided outputs
picked afterwards. The window is then reduced one axis at a time, each axis through one jitted
1-D reduce_window that serves every configuration with the same reduction, window length and
element type (:meth:`JaxPeer._by_axis`); it is cached in memory and, through JAX's persistent
compilation cache, in the per-user data folder.

XLA picks its reduce_window kernel from the shapes it sees (a loop emitter, or a YNNPACK fusion for
strided windows over large inputs), and those kernels differ where the answer is not unique: NaN
in a max, the order of an overflowing sum. There the layout would choose for XLA, so those
configurations run plainly on the input's own layout (:meth:`JaxPeer.execute`).
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from poolcheck.engines._windows import empty_windows
from poolcheck.errors import PoolcheckError
from poolcheck.peers._convert import check_expressible
from poolcheck.peers.adapter import RuntimePeer, Translated
from poolcheck.peers.base import BatchItem, PeerDeclined, PeerOption, PeerOutput
from poolcheck.spec import dtypes
from poolcheck.spec.family import FAMILY_OPS, FamilySpec
from poolcheck.spec.operators import allowed_dtypes
from poolcheck.spec.poolspec import PoolSpec
from poolcheck.spec.shape import resolve
from poolcheck.userdata import data_dir


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
    allowed = allowed_dtypes(spec.op, spec.convention)
    if spec.op == "avg" and dt.name not in allowed:
        raise PeerDeclined(peer, f"the {spec.convention} average takes {', '.join(allowed)}, not {dt.name}")
    base = dict(op=spec.op, shape=shape, dtype=dt.name, window=tuple(spec.kernel), strides=tuple(spec.strides),
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


#: ``windows=xla``: smallest block length per spatial axis, by spatial rank, and smallest number
#: of rows: every input is laid out in a block at least this large (then the next power of two),
#: so configurations differing only in shape and padding share one compiled function.
BUCKET_FLOOR = {1: 32, 2: 16, 3: 8}
ROWS_FLOOR = 32

#: The by-axis reductions (:meth:`JaxPeer._by_axis`) run rows of this many elements (longer rows
#: are cut into overlapping segments), this many rows per call: one compile per reduction, type and
#: window length.
SEGMENT = 64
TILE_ROWS = 64

#: The ``windows`` option: ``shared`` (default) hands XLA stride-1, undilated windows over a
#: block poolcheck lays out (dilated axes split by residue, strided outputs picked afterwards), so
#: one compile serves every configuration with the same reduction, window length and element
#: type (:meth:`JaxPeer._by_axis`); ``xla`` passes the strides and dilations to reduce_window
#: itself (one compile per window, strides and dilations: exact to XLA's own window arithmetic,
#: and about ten times slower to fuzz).
WINDOWS = ("shared", "xla")


def _bucket(n: int, floor: int = 1) -> int:
    return max(floor, 1 << max(0, n - 1).bit_length())


@dataclass(frozen=True)
class CompileKey:
    """What an XLA compile depends on: the reduction, the element type, the window arithmetic
    and the block's shape (the input's own shape and padding are laid out in NumPy)."""

    op: str
    dtype: str
    window: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    block: tuple[int, ...]  # (rows, *spatial lengths)


@dataclass
class Layout:
    """A block to run and how to read the configuration's output back from the result."""

    key: CompileKey
    block: np.ndarray
    rows: int  # rows of the padded input before the dilation split
    split: tuple[int, ...]  # residues per axis (the dilations, or 1s)
    picks: tuple[int, ...]  # stride to pick outputs with afterwards (1s when XLA strides)
    out: tuple[int, ...]  # the configuration's output size per axis
    shape: tuple[int, ...]  # (n, c)
    #: Axes of a one-element window folded into the rows (see :func:`_fold`): their positions and
    #: lengths, the permutation that put them first, and the window axes kept; () when none.
    folded: tuple[int, ...] = ()
    perm: tuple[int, ...] = ()


#: The note on every max the peer returns.
VALUES_ONLY = "values only: XLA reduce_window has no indices"


def _holds_nan(x: np.ndarray) -> bool:
    return dtypes.is_float(x.dtype) and bool(np.isnan(x).any())


def _identity(node: JaxNode) -> Any:
    """The reduction's init value, which XLA's reduce_window also pads with."""
    return _identity_of(np.dtype(node.dtype), node.op)


def _identity_of(dt: np.dtype, op: str) -> Any:
    if op == "avg":
        return dt.type(0)
    return dt.type(-np.inf) if dtypes.is_float(dt) else np.iinfo(dt).min


def _split_residues(a: np.ndarray, split: tuple[int, ...], fill: Any) -> np.ndarray:
    """(rows, L1, ...) -> (rows * d1 * ..., ceil(L1 / d1), ...): position q*d + r of an axis goes to
    residue row r, position q, so a window dilated by d becomes contiguous (same taps, same order)."""
    n = len(split)
    lengths = tuple(-(-length // d) * d for length, d in zip(a.shape[1:], split))
    if lengths != a.shape[1:]:
        grown = np.full((a.shape[0],) + lengths, fill, dtype=a.dtype)
        grown[(slice(None),) + tuple(slice(0, v) for v in a.shape[1:])] = a
        a = grown
    a = a.reshape((a.shape[0],) + tuple(v for length, d in zip(lengths, split) for v in (length // d, d)))
    a = a.transpose((0, *range(2, 2 * n + 1, 2), *range(1, 2 * n, 2)))  # rows, residues, positions
    return a.reshape((-1,) + tuple(length // d for length, d in zip(lengths, split)))


def _fit(a: np.ndarray, shape: tuple[int, ...], fill: Any) -> np.ndarray:
    block = np.full(shape, fill, dtype=a.dtype)
    block[tuple(slice(0, v) for v in a.shape)] = a
    return block


def _window_counts(lengths: Sequence[int], node: JaxNode,
                   axis: tuple[int, int, int] | None = None) -> tuple[int, ...]:
    """XLA's window count along each axis of ``lengths`` (padding included) under the node's
    window, strides and dilations (``axis``: one axis's (window, stride, dilation) instead):
    ``(length - ((w - 1) * d + 1)) // s + 1``."""
    arithmetic = [axis] if axis is not None else zip(node.window, node.strides, node.dilations)
    return tuple((length - ((w - 1) * d + 1)) // s + 1 for length, (w, s, d) in zip(lengths, arithmetic))


def layout(node: JaxNode, x: np.ndarray, windows: str = "shared") -> Layout:
    """Lay ``x`` out for ``node``: cropped as the node says, padded with the reduction's identity
    by ``node.padding`` (exactly what reduce_window's own padding does), (n, c) flattened into rows,
    dilated axes split by residue and axes of a one-element window folded into the rows
    (``shared``), or extended with the identity to the bucket sizes (``xla``)."""
    n_sp = len(node.window)
    starts = node.start or (0,) * n_sp
    crop = (slice(None), slice(None)) + tuple(slice(b, b + k) for b, k in zip(starts, node.keep))
    core = x[crop].reshape((-1,) + tuple(node.keep))
    lengths = tuple(lo + k + hi for k, (lo, hi) in zip(node.keep, node.padding))
    dt = np.dtype(node.dtype)
    fill = _identity(node)
    padded = np.full((core.shape[0],) + lengths, fill, dtype=dt)
    inner = tuple(slice(lo, lo + k) for k, (lo, _hi) in zip(node.keep, node.padding))
    padded[(slice(None),) + inner] = core
    out = _window_counts(lengths, node)
    window: tuple[int, ...]
    folded: tuple[int, ...]
    perm: tuple[int, ...]
    if windows == "xla":
        split, picks, strides, dilations = (1,) * n_sp, (1,) * n_sp, node.strides, node.dilations
        window, folded, perm = node.window, (), ()
    else:
        split, picks, strides, dilations = node.dilations, node.strides, (1,) * n_sp, (1,) * n_sp
        padded = _split_residues(padded, split, fill)
        padded, window, folded, perm = _fold(padded, node.window)
        strides, dilations = strides[:len(window)], dilations[:len(window)]
    if windows == "xla":  # one compile per block shape: the shapes bucketed
        shape = (_bucket(padded.shape[0], ROWS_FLOOR),) + tuple(_bucket(v, BUCKET_FLOOR.get(len(window), 1))
                                                                for v in padded.shape[1:])
        block = _fit(padded, shape, fill)
    else:  # by axis (JaxPeer._by_axis): the compiles take fixed tiles of any block
        block = np.ascontiguousarray(padded)
    key = CompileKey(node.op, dt.name, window, strides, dilations, tuple(block.shape))
    return Layout(key, block, core.shape[0], split, picks, out, tuple(x.shape[:2]), folded, perm)


def _fold(a: np.ndarray, window: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Fold the axes of a one-element window into the rows: (rows, L1, ..., Ln) with window
    (w1, ..., wn) becomes (rows * L_i * ..., L_j, ...) with the window of the axes j where
    w_j > 1 (at least the last axis is kept). A window of one element along an axis takes each
    position alone, so the reduction is the same one over the same taps in the same row-major
    order, and configurations that differ only there share a compile (a fuzzing campaign draws
    such windows often: (1, 2, 1) and (2,) are one compile). Returns the folded array, the
    window kept, the lengths of the folded axes and the axis permutation applied (both () when
    no axis folds)."""
    n = len(window)
    kept = [i for i in range(n) if window[i] != 1] or [n - 1]
    folded = [i for i in range(n) if i not in kept]
    if not folded:
        return a, window, (), ()
    perm = (0, *(1 + i for i in folded), *(1 + i for i in kept))
    lengths = tuple(a.shape[1 + i] for i in folded)
    a = a.transpose(perm).reshape((-1,) + tuple(a.shape[1 + i] for i in kept))
    return a, tuple(window[i] for i in kept), lengths, perm


def divisor_per_axis(node: JaxNode) -> list[list[int]]:
    """Per spatial axis and output position, the window's taps that fall on the input or on
    padding the spec counts (``node.counted``), never on the ceil overhang."""
    counted = node.counted or tuple((0, 0) for _ in node.keep)
    per_axis = []
    for k, (lo, hi), (c_lo, c_hi), w, s, d in zip(node.keep, node.padding, counted, node.window, node.strides,
                                                  node.dilations):
        (out,) = _window_counts((lo + k + hi,), node, (w, s, d))
        taps = np.arange(out)[:, None] * s + np.arange(w)[None, :] * d
        per_axis.append([int(v) for v in ((taps >= lo - c_lo) & (taps < lo + k + c_hi)).sum(axis=1)])
    return per_axis


def divisor(node: JaxNode) -> np.ndarray:
    """The average's divisor for every output position (the output's spatial shape, float64):
    the counted region is a box, so the count is the product of :func:`divisor_per_axis` over
    the axes. Exact integers, counted in NumPy: XLA has no average, and a sum of ones in the
    input's type stops counting where the type does (256 + 1 is 256 in bfloat16)."""
    count = np.ones((), dtype=np.float64)
    for taps in divisor_per_axis(node):
        count = np.multiply.outer(count, taps)
    return count


def average(total: np.ndarray, node: JaxNode) -> np.ndarray:
    """XLA's window sums ``total`` (N, C, *out) over :func:`divisor`, rounded once to the input's
    type. Where the count is exact in that type (every window of a campaign but the largest
    bfloat16 ones), this is the type's own correctly rounded division, as XLA's ``total / count``
    gives: a float64 quotient of two values of at most 24 bits, rounded again to them, is the
    quotient rounded once (``tests/peers/test_peers_new.py`` compares the bits with XLA's)."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        return dtypes.cast(total.astype(np.float64) / divisor(node), total.dtype)


def read_back(lay: Layout, result: np.ndarray) -> np.ndarray:
    """The configuration's output from the block's: residues merged back (output q*d + r), the
    strided outputs picked, cropped to the output size, rows back to (n, c)."""
    n = len(lay.split)
    d_total = math.prod(lay.split)
    if lay.folded:  # the folded axes back in place (a one-element window: out == length)
        res = result[: lay.rows * d_total * math.prod(lay.folded)]
        res = res.reshape((lay.rows * d_total, *lay.folded, *res.shape[1:]))
        res = res.transpose(np.argsort(lay.perm))
    else:
        res = result[: lay.rows * d_total]
    q = tuple(v for v in res.shape[1:])
    res = res.reshape((lay.rows, *lay.split, *q))
    res = res.transpose((0, *(i for k in range(n) for i in (1 + n + k, 1 + k))))
    res = res.reshape((lay.rows,) + tuple(qk * d for qk, d in zip(q, lay.split)))
    res = res[(slice(None),) + tuple(slice(0, o * p, p) for o, p in zip(lay.out, lay.picks))]
    return res.reshape(lay.shape + lay.out)


def _order_free(node: JaxNode, x: np.ndarray) -> bool:
    """Whether the order of an average's sum can change nothing but its rounding (within the
    comparison's tolerance): no partial sum of a window's finite elements can overflow. Such
    inputs keep the fast shared-block layout.

    NaN and infinities leave the order free: a window holding a NaN, or both infinities, sums to
    NaN in every order (NaN once both infinities are in, and NaN stays), one holding infinities of
    one sign sums to that infinity in every order, since its finite part, bounded by the sum of
    its finite magnitudes, never reaches the type's range. Only a finite part that can overflow
    lets the order decide (``65504 + 40`` is inf in float16, ``-inf + 65504 + 40`` is -inf,
    ``65504 + 40 + -inf`` is NaN). The bound is first the taps times the input's largest finite
    magnitude, then, where that reaches the range, each window's own sum of magnitudes; both
    grown by the rounding a sum of that many taps can add (``taps * eps``)."""
    if not dtypes.is_float(x.dtype) or x.size == 0:
        return True
    taps = math.prod(node.window)
    info = dtypes.finfo(x.dtype)
    limit = float(info.max) / (1.0 + taps * float(info.eps))
    with np.errstate(all="ignore"):
        magnitude = np.abs(x.astype(np.float64))
        magnitude[~np.isfinite(magnitude)] = 0.0
    if float(magnitude.max()) * taps < limit:
        return True
    return _largest_window_sum(node, magnitude) < limit


def _largest_window_sum(node: JaxNode, values: np.ndarray) -> float:
    """The largest sum of ``values`` (N, C, *spatial, float64, no NaN) over one of the node's
    windows: the input cropped and zero-padded as XLA sees it, one strided slice per tap."""
    n_sp = len(node.window)
    starts = node.start or (0,) * n_sp
    core = values[(slice(None), slice(None)) + tuple(slice(b, b + k) for b, k in zip(starts, node.keep))]
    padded = np.pad(core, ((0, 0), (0, 0)) + node.padding)
    out = _window_counts(padded.shape[2:], node)
    total = np.zeros(padded.shape[:2] + tuple(out))
    with np.errstate(over="ignore"):  # float64 magnitudes past its range: inf, which no type holds
        for tap in itertools.product(*(range(w) for w in node.window)):
            total += padded[(slice(None), slice(None)) + tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                                                               for t, d, s, o in zip(tap, node.dilations, node.strides, out))]
    return float(total.max(initial=0.0))


#: The family ops jax.numpy computes (a whole plane's mean, max, vector p-norm).
JAX_FAMILY_OPS = ("global_avg", "global_max", "global_lp")


def check_family_expressible(spec: FamilySpec, peer: str = "jax") -> None:
    """Raise :class:`PeerDeclined` for a family op jax has no function for."""
    if spec.op not in JAX_FAMILY_OPS:
        raise PeerDeclined(peer, f"jax has no {spec.describe().split('(')[0]} (no such function in jax.numpy, "
                                 "jax.lax or jax.nn)")


class JaxPeer(RuntimePeer):
    """JAX on the CPU, 64-bit types enabled, one jitted reduce_window per compile key."""

    name = "jax"
    ref = "jax"
    module = "jax"
    install_hint = "pip install 'poolcheck[jax]'"
    batch_limit = 1
    accepted_options = (
        PeerOption("windows", "shared", "shared: XLA runs stride-1, undilated windows over a block poolcheck "
                   "lays out, one window axis at a time (one compile per reduction, window length and type); "
                   "xla: strides and dilations passed to reduce_window (one compile per configuration's window "
                   "arithmetic, slower)", WINDOWS),
    )

    def __init__(self, *, cache_size: int = 4096, persistent_cache: bool = True) -> None:
        self.cache_size = cache_size
        self.persistent_cache = persistent_cache
        self._fns: OrderedDict[CompileKey | tuple[Any, ...], Any] = OrderedDict()
        self._ready = False
        self.options: dict[str, str] = {}

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
            if self.persistent_cache:
                self._use_persistent_cache(jax)
            self._ready = True
        return jax

    @staticmethod
    def _use_persistent_cache(jax: Any) -> None:
        """Keep XLA's compiled functions in the per-user data folder (``POOLCHECK_DATA_DIR``
        overrides it), so a later run does not compile them again. Skipped when the user already
        set a cache folder, or when the folder cannot be created."""
        if jax.config.jax_compilation_cache_dir:
            return
        folder = data_dir() / "jax-cache"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        jax.config.update("jax_compilation_cache_dir", str(folder))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

    def translate(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> JaxNode:
        return to_jax(spec, shape, dtype, self.name)

    def execute(self, group: Sequence[Translated], items: Sequence[BatchItem]) -> list[PeerOutput]:
        ((_, node, arr),) = group
        if node.invalid is not None:
            raise ValueError(f"invalid configuration: {node.invalid}")
        x = np.asarray(arr)
        if node.op == "avg" and not _order_free(node, x):
            # An average's float sum depends on the order XLA adds the taps in, and XLA picks
            # that order from the shapes it sees (a 2x2 float16 window holding -inf, 65504 and
            # 40 sums to NaN row by row on a (1, 1, 2, 2) input, to -inf on (1, 1, 4, 4)). Where
            # the order can matter beyond rounding (_order_free), an average runs on the input's
            # own layout, as a user's reduce_window call does: a claim about JAX then holds when JAX is
            # called plainly (the shared-block layout changed the shapes and produced sums a
            # plain call does not).
            return [PeerOutput(average(self._plain(node, x), node), None, [])]
        if node.op == "max" and _holds_nan(x):
            # XLA on the CPU picks a reduce_window kernel from the shapes: its own loop emitter,
            # or (strided windows over large inputs) a YNNPACK fusion, and the two treat NaN
            # differently (jax 0.10.2: a 2x2 stride-2 max over a (1, 64, 8, 8) float32 input runs
            # on YNNPACK and drops NaN; over (1, 1, 8, 8), or at stride 1, the emitter keeps it).
            # The shared block (stride 1, other shapes) would pick the kernel for XLA, so an
            # input with a NaN runs plainly: what a user's call gives.
            return [PeerOutput(self._plain(node, x), None, [VALUES_ONLY])]
        lay = layout(node, x, self.option("windows"))
        if self.option("windows") == "shared":
            result = self._by_axis(lay)
        else:
            result = np.asarray(self._compiled(lay.key)(lay.block))
        values = read_back(lay, result)
        if node.op == "avg":
            return [PeerOutput(average(values, node), None, [])]
        return [PeerOutput(values.copy(), None, [VALUES_ONLY])]

    def _by_axis(self, lay: Layout) -> np.ndarray:
        """The shared block's stride-1 window max (or an average's window sum), one window axis at
        a time (last first): each axis is moved last and its rows cut into overlapping segments of
        :data:`SEGMENT` elements (each output's whole window inside one segment), which run
        :data:`TILE_ROWS` at a time through one compiled 1-D ``reduce_window``: one compile per
        reduction, element type and window length.

        A max over a box is the max of the maxima of its rows: the same value in any order, and
        a segment's outputs are the row's. Inputs without NaN come here (:meth:`execute`), so the
        only freedom left is which of tied zeros is kept (-0.0 or 0.0), which the judgement does
        not tell apart (:mod:`poolcheck.judgement`: "-0.0 equals 0.0"). A sum over a box is the
        sum of its rows' sums: the same taps added in another order, in the input type as XLA
        adds them. Only averages whose order changes nothing but the rounding come here
        (:func:`_order_free`: no partial sum of a window's finite taps, a row's included, can
        overflow), and the average rule bounds the rounding of any order of a window's additions
        (:func:`poolcheck.judgement.avg_tolerance`). A campaign draws hundreds of distinct
        (window, type) pairs, each an XLA compile of about 50 ms; by axis, a few window lengths
        per type serve them all."""
        key = lay.key
        dt = np.dtype(key.dtype)
        fill = _identity_of(dt, key.op)
        a = lay.block
        for axis in reversed(range(len(key.window))):
            w = key.window[axis]
            if w == 1:
                continue
            moved = np.moveaxis(a, axis + 1, -1)
            lead, length = moved.shape[:-1], moved.shape[-1]
            rows = math.prod(lead)
            n = length - w + 1  # outputs per row
            seg = max(SEGMENT, w)
            step = seg - w + 1  # outputs per segment
            count = -(-n // step)  # segments per row
            padded = np.full((rows, (count - 1) * step + seg), fill, dtype=dt)
            padded[:, :length] = moved.reshape(rows, length)
            segments = np.lib.stride_tricks.sliding_window_view(padded, seg, axis=1)[:, ::step].reshape(-1, seg)
            total = len(segments)
            fn = self._compiled(CompileKey(key.op, key.dtype, (w,), (1,), (1,), (TILE_ROWS, seg)))
            reduced = np.empty((-(-total // TILE_ROWS) * TILE_ROWS, step), dtype=dt)
            for lo in range(0, total, TILE_ROWS):
                part = segments[lo:lo + TILE_ROWS]
                if len(part) < TILE_ROWS:
                    part = _fit(part, (TILE_ROWS, seg), fill)
                reduced[lo:lo + TILE_ROWS] = np.asarray(fn(np.ascontiguousarray(part)))
            row_out = reduced[:total].reshape(rows, count * step)[:, :n]
            a = np.moveaxis(row_out.reshape(*lead, n), -1, axis + 1)
        return a

    def _plain(self, node: JaxNode, x: np.ndarray) -> np.ndarray:
        """``reduce_window`` (max, or add for an average's sums) on the input in its own
        (N, C, *spatial) layout, cropped as the node says, with XLA's own padding, strides and
        dilations: the call poolcheck's reproducer scripts make. One compile per shape."""
        n_sp = len(node.window)
        starts = node.start or (0,) * n_sp
        core = x[(slice(None), slice(None)) + tuple(slice(b, b + k) for b, k in zip(starts, node.keep))]
        key = ("plain", node.op, core.shape, core.dtype.str, node.window, node.strides, node.dilations, node.padding)
        fn = self._fns.get(key)
        if fn is None:
            jax = self._setup()
            from jax import lax

            dims, strides, dil = (1, 1) + node.window, (1, 1) + node.strides, (1, 1) + node.dilations
            init = np.array(_identity(node), dtype=core.dtype)
            reduce = lax.add if node.op == "avg" else lax.max
            pads = ((0, 0), (0, 0)) + node.padding

            def f(a: Any) -> Any:
                return lax.reduce_window(a, init, reduce, dims, strides, pads, window_dilation=dil)

            fn = jax.jit(f)
            self._fns[key] = fn
            while len(self._fns) > self.cache_size:
                self._fns.popitem(last=False)
        return np.asarray(fn(np.ascontiguousarray(core)))

    def _compiled(self, key: CompileKey) -> Any:
        fn = self._fns.get(key)
        if fn is not None:
            self._fns.move_to_end(key)
            return fn
        jax = self._setup()
        from jax import lax

        dt = np.dtype(key.dtype)
        dims = (1,) + key.window
        strides = (1,) + key.strides
        dil = (1,) + key.dilations
        if key.op == "max":
            init, reduce = np.array(-np.inf if dtypes.is_float(dt) else np.iinfo(dt).min, dtype=dt), lax.max
        else:
            init, reduce = np.array(0, dtype=dt), lax.add  # the average's sums (divided by :func:`average`)

        def f(block: Any) -> Any:
            return lax.reduce_window(block, init, reduce, dims, strides, "VALID", window_dilation=dil)

        fn = jax.jit(f)
        self._fns[key] = fn
        while len(self._fns) > self.cache_size:
            self._fns.popitem(last=False)
        return fn

    # ------------------------------------------------------------------ the rest of the family

    #: jax.numpy pools a whole plane (mean, max, the vector p-norm); it has no LpPool window, no
    #: MaxUnpool and no adaptive pooling, which are declined (poolcheck composes none of them).
    family_ops = FAMILY_OPS
    family_computed = JAX_FAMILY_OPS

    def element_types(self, op: str) -> tuple[str, ...] | None:
        """Every type the catalogue gives MaxPool/AveragePool (averages: floating point only, as
        both conventions say) and the global pools; none for the family ops jax has not."""
        return None if op in ("max", "avg", *self.family_computed) else ()

    def translate_family(self, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> tuple[Any, ...]:
        check_family_expressible(spec, self.name)
        self._setup()
        return (spec.op, spec.p, tuple(shape), np.dtype(dtype).name)

    def execute_family(self, node: tuple[Any, ...], spec: FamilySpec, x: np.ndarray,
                       indices: np.ndarray | None) -> PeerOutput:
        """``jnp.mean`` / ``jnp.max`` over the spatial axes, ``jnp.linalg.norm(ord=p)`` of each
        flattened plane (keepdims: the output has the input's rank)."""
        self._setup()
        import jax.numpy as jnp

        axes = tuple(range(2, x.ndim))
        if spec.op == "global_avg":
            out = jnp.mean(x, axis=axes, keepdims=True)
        elif spec.op == "global_max":
            out = jnp.max(x, axis=axes, keepdims=True)
        else:
            planes = jnp.reshape(x, x.shape[:2] + (-1,))
            out = jnp.linalg.norm(planes, ord=spec.p, axis=-1).reshape(x.shape[:2] + (1,) * len(axes))
        return PeerOutput(np.asarray(out))
