"""Generated pooling configurations and their inputs: the generators, and their Hypothesis strategies.

A generator (:func:`pool_config`, :func:`invalid_config`, :func:`fuzz_config`) asks a
:class:`~poolcheck.fuzz.choices.Choices` source for its choices: a campaign expands batches from
seeds, Hypothesis shrinks a divergent one through :func:`configs` (one Hypothesis choice per
choice). Shape first, then attributes consistent with it: every choice is labelled, every
configuration is spelled in its operator's vocabulary and parsed back through the catalogue
(:mod:`poolcheck.spec.operators`, so the fuzzer exercises the same parsing a case file does).

Inputs are not drawn element by element (far too slow for hundreds of cases per second): a
pattern (``arange`` first, so shrinking heads for the most readable input), a seed, and a short
list of special values (NaN, +-inf, extremes, ties) planted at drawn positions. Each part shrinks
towards the simple end: no specials, seed 0, the ``arange`` pattern, the smallest shape.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from hypothesis import strategies as st

from poolcheck.errors import AttributeValueError
from poolcheck.fuzz.batching import EXAMPLE_CONFIGS, example_lists
from poolcheck.fuzz.choices import Choice, Choices, DrawnChoices, generated
from poolcheck.spec import operators
from poolcheck.spec.dtypes import BFLOAT16, finfo, is_float
from poolcheck.spec.poolspec import INT_DTYPES, PoolSpec

OP_NAMES: dict[str, str] = {"maxpool": "max", "avgpool": "avg"}
CONVENTIONS: tuple[str, ...] = ("openvino", "onnx")
#: float32 first: shrinking moves towards the first choice, the most common type. bfloat16 (ONNX
#: MaxPool-22 / AveragePool-22 only) after the NumPy floats, before the integers.
ALL_DTYPES: tuple[str, ...] = ("float32", "float16", "float64", BFLOAT16.name, *INT_DTYPES)
T = TypeVar("T")
PATTERNS: tuple[str, ...] = ("arange", "random", "ties", "negative", "constant")

#: Ways to break a valid configuration (``--invalid``), in shrinking order.
MUTATIONS: tuple[str, ...] = (
    "kernel larger than padded input",
    "kernel 0",
    "stride 0",
    "dilation 0",
    "negative pad",
    "axis out of range",
    "dtype not allowed",
    "rank mismatch",
)


@dataclass(frozen=True, eq=False)
class Limits:
    """Size bounds for generated configurations (smaller for higher ranks keeps cases cheap).

    ``max_elements`` caps one input (N * C * spatial): long axes are drawn, and the element budget
    keeps throughput up (the longest spatial axes are halved until the input fits).
    ``global_windows`` lets a drawn kernel take the whole padded axis (a global window).
    """

    max_batch: int = 3
    max_channels: int = 3
    max_size: dict[int, int] = field(default_factory=lambda: {1: 12, 2: 7, 3: 5})
    max_kernel: dict[int, int] = field(default_factory=lambda: {1: 4, 2: 4, 3: 3})
    max_stride: int = 4
    max_dilation: int = 3
    max_pad: int = 4
    max_specials: int = 4
    max_elements: int = 4096
    global_windows: bool = False


DEFAULT_LIMITS = Limits()

#: The regimes a configuration is drawn in. Most draws stay small (fast, readable, and where
#: shrinking heads: regime 0); a steady share goes to each part of the attribute space where
#: runtimes switch code paths -- large kernels and global windows, long axes, strides above the
#: kernel with dilations to 4, pads past the kernel and batch/channels to 4.
REGIMES: dict[str, Limits] = {
    "small": DEFAULT_LIMITS,
    "large-kernel": Limits(max_size={1: 40, 2: 16, 3: 8}, max_kernel={1: 40, 2: 16, 3: 8}, max_stride=3,
                           max_dilation=2, max_pad=3, global_windows=True),
    "long-axis": Limits(max_size={1: 64, 2: 64, 3: 64}, max_kernel={1: 6, 2: 5, 3: 4}, max_dilation=4,
                        max_elements=8192),
    "wide": Limits(max_batch=4, max_channels=4, max_size={1: 24, 2: 12, 3: 7}, max_kernel={1: 4, 2: 4, 3: 3},
                   max_stride=9, max_dilation=5, max_pad=8),
}
#: Regime weights: small first (shrinking moves towards it), about half of all draws.
_REGIME_CHOICES: tuple[str, ...] = ("small", "small", "small", "large-kernel", "long-axis", "wide")


class CaseText:
    """What a generated case (:class:`FuzzCase`, ``fuzz.family.FamilyCase``) says of itself: its
    operator, convention and one-line description, read from its spec, spelling and input."""

    op_name: str
    spec: Any
    x: np.ndarray
    mutation: str | None

    @property
    def op(self) -> str:
        return str(self.spec.op)

    @property
    def convention(self) -> str:
        return str(self.spec.convention)

    def describe(self) -> str:
        text = f"{self.op_name} {self.spec.describe()} on {self.x.dtype.name}{list(self.x.shape)}"
        if self.mutation:
            text += f" [invalid: {self.mutation}]"
        return text


@dataclass
class FuzzCase(CaseText):
    """One generated configuration and its input.

    ``op_name``/``attributes`` are the case-file spelling (so a find is written back verbatim);
    ``spec`` is the canonical form peers receive. For a deliberately invalid configuration
    (``mutation`` set) ``spec`` is built without validation, so peers see the broken values.
    """

    op_name: str
    attributes: dict[str, Any]
    spec: PoolSpec
    x: np.ndarray
    recipe: dict[str, Any]
    mutation: str | None = None
    #: The choices that make this configuration again (:mod:`poolcheck.fuzz.choices`), and where
    #: its input's begin among them (the ones before make the geometry).
    choices: tuple[Choice, ...] = field(default=(), repr=False, compare=False)
    input_at: int | None = field(default=None, repr=False, compare=False)


# --------------------------------------------------------------------------- argument checks


def _check_choice(name: str, values: Sequence[str], allowed: Sequence[str]) -> tuple[str, ...]:
    values = tuple(values)
    if not values:
        raise AttributeValueError(name, f"needs at least one value; choose from {', '.join(allowed)}")
    bad = [v for v in values if v not in allowed]
    if bad:
        raise AttributeValueError(name, f"{name}={bad[0]!r} is not one of {', '.join(allowed)}")
    return values


def check_arguments(
    ops: Sequence[str], ranks: Sequence[int], dtypes: Sequence[str], conventions: Sequence[str]
) -> None:
    """Validate strategy arguments up front, naming the argument and the fix."""
    _check_choice("ops", ops, ("max", "avg"))
    _check_choice("conventions", conventions, CONVENTIONS)
    _check_choice("dtypes", dtypes, ALL_DTYPES)
    if not ranks or any(isinstance(r, bool) or r not in (3, 4, 5) for r in ranks):
        raise AttributeValueError("ranks", f"ranks={list(ranks)!r}: every rank must be 3, 4 or 5")
    if "max" not in ops and not any(set(dtypes) & set(operators.allowed_dtypes("avg", c)) for c in CONVENTIONS):
        raise AttributeValueError(
            "dtypes", f"dtypes={list(dtypes)!r} has no floating type, and average pooling needs one "
            "(add float16, float32 or float64, or fuzz maxpool)"
        )
    if not any(set(dtypes) & set(operators.allowed_dtypes(o, c)) for o in ops for c in conventions):
        raise AttributeValueError(
            "dtypes", f"dtypes={list(dtypes)!r}: no operator of these ops and conventions takes them "
            f"(ops {list(ops)}, conventions {list(conventions)}; bfloat16: ONNX MaxPool-22 and AveragePool-22 only)"
        )


def allowed_dtypes(op: str, convention: str, dtypes: Sequence[str]) -> list[str]:
    """The members of ``dtypes`` that the newest ``op`` of ``convention`` allows (the catalogue's)."""
    allowed = operators.allowed_dtypes(op, convention)
    return [d for d in dtypes if d in allowed]


# --------------------------------------------------------------------------- inputs


@functools.cache
def _specials(dtype: np.dtype) -> tuple[float | int, ...]:
    """Values worth planting: NaN, +-inf, the extremes (OpenVINO's -FLT_MAX fill among them)."""
    if is_float(dtype):
        fi = finfo(dtype)
        return (float("nan"), float("inf"), float("-inf"), float(fi.min), float(fi.max), -0.0)
    ii = np.iinfo(dtype)
    return (int(ii.min), int(ii.max))


def make_input(shape: Sequence[int], dtype: np.dtype | str, pattern: str, seed: int,
               specials: Sequence[tuple[int, int]] = ()) -> np.ndarray:
    """Build an input from a pattern, a seed and ``(position, special index)`` plants.

    Values are small integers (exact in every dtype, float16 included), so peers and engines see
    the same numbers and an average's error comes from arithmetic only. Each call returns an
    array of its own (recipes repeat while hypothesis mutates and shrinks: built once each).
    """
    key = (tuple(int(v) for v in shape), np.dtype(dtype), pattern, int(seed),
           tuple((int(p), int(w)) for p, w in specials))
    return _built_input(*key).copy()


@functools.lru_cache(maxsize=4096)
def _built_input(shape: tuple[int, ...], dt: np.dtype, pattern: str, seed: int,
                 specials: tuple[tuple[int, int], ...]) -> np.ndarray:
    """The input of one recipe (cached: callers get copies from :func:`make_input`)."""
    size = math.prod(shape)
    if pattern == "arange":
        data = np.arange(size, dtype=np.int64) + 1
    elif pattern == "random":
        data = np.random.default_rng(seed).integers(-60, 61, size=size)
    elif pattern == "ties":
        data = np.random.default_rng(seed).integers(0, 3, size=size)
    elif pattern == "negative":
        data = -(np.arange(size, dtype=np.int64) + 1)
    elif pattern == "constant":
        data = np.full(size, int(seed % 9) - 4, dtype=np.int64)
    else:
        raise AttributeValueError("pattern", f"expected one of {', '.join(PATTERNS)}, got {pattern!r}")
    if dt.kind in "iu":
        lo, hi = int(np.iinfo(dt).min), int(np.iinfo(dt).max)
        if dt.kind == "u":
            data = np.abs(data)
        if dt.itemsize <= 2:  # wrap into range (wider types hold every generated value)
            data = (data - lo) % (hi - lo + 1) + lo
    elif dt == np.float16:
        data = np.clip(data, -2048, 2048)  # integers up to 2048 are exact in float16
    elif dt == BFLOAT16:
        data = np.clip(data, -256, 256)  # integers up to 256 are exact in bfloat16
    x = data.astype(dt).reshape(shape)
    palette = _specials(dt)
    flat = x.reshape(-1)
    for pos, which in specials:
        flat[pos % size] = palette[which % len(palette)]
    return x


def draw_input(src: Choices, shape: Sequence[int], dtype: str, limits: Limits = DEFAULT_LIMITS
               ) -> tuple[np.ndarray, dict[str, Any]]:
    """An input of ``shape``/``dtype`` from ``src``'s choices and the recipe that rebuilds it:
    a pattern and its seed, then how many special values to plant (none a little over half the
    time) and where."""
    src.begin_input()
    pattern = src.pick(PATTERNS, "input pattern")
    seed = src.integer(0, 2**16 - 1, "input seed")
    n_special = len(_specials(np.dtype(dtype)))
    size = math.prod(shape)
    count = max(0, src.integer(0, 2 * limits.max_specials, "special values: 0 up to the bound, then 1, 2, ...")
                - limits.max_specials)
    plants = [divmod(src.integer(0, size * n_special - 1, "special value (position * kinds + kind)"), n_special)
              for _ in range(count)]
    x = make_input(shape, dtype, pattern, seed, plants)
    return x, {"shape": list(shape), "pattern": pattern, "seed": seed, "specials": [list(p) for p in plants]}


@st.composite
def inputs(draw: st.DrawFn, shape: Sequence[int], dtype: str, limits: Limits = DEFAULT_LIMITS
           ) -> tuple[np.ndarray, dict[str, Any]]:
    """An input of ``shape``/``dtype`` and the recipe that rebuilds it."""
    return draw_input(DrawnChoices(draw), shape, dtype, limits)


# --------------------------------------------------------------------------- configurations


def pool_config(
    src: Choices,
    ops: Sequence[str] = ("max", "avg"),
    ranks: Sequence[int] = (3, 4, 5),
    dtypes: Sequence[str] = ALL_DTYPES,
    conventions: Sequence[str] = CONVENTIONS,
    limits: Limits = DEFAULT_LIMITS,
) -> FuzzCase:
    """One valid configuration with its input, anywhere in the attribute space, from ``src``'s
    choices (:mod:`poolcheck.fuzz.choices`).

    One choice per digit, each uniform under a seeded source and each shrinking on its own
    towards its simplest value (0): operator/convention/rank, regime, dtype; N, C and the spatial
    sizes; the modes (auto_pad, rounding, the op's flag, axis, pad range, global axes); per axis
    kernel, stride, dilation, pads; the input's pattern, seed and special values. (Exploration
    does not go through Hypothesis, so a choice costs a few hundred nanoseconds: nothing is folded
    into a mixed-radix integer any more, which Hypothesis' integer shrinking cannot reduce digit
    by digit.)
    """
    kinds = _kinds(tuple(ops), tuple(ranks), tuple(dtypes), tuple(conventions))
    if not kinds:
        raise AttributeValueError("dtypes", f"no dtype in {list(dtypes)} is allowed for ops {list(ops)}")
    # the default campaign reaches the whole space (a regime per draw); explicit limits are kept
    regimes = _DEFAULT_REGIMES if limits is DEFAULT_LIMITS else (limits,)
    op, convention, rank = src.pick(kinds, "op, convention, rank")
    limits = src.pick(regimes, "regime")
    dtype = src.pick(_allowed(op, convention, tuple(dtypes)), "dtype")
    n = rank - 2
    shape_digits = _digits_of(src, (limits.max_batch, limits.max_channels, *[limits.max_size[n]] * n),
                              ("N - 1", "C - 1", *(f"size {i} - 1" for i in range(n))))
    batch, channels = 1 + shape_digits[0], 1 + shape_digits[1]
    sizes = _within_budget([1 + d for d in shape_digits[2:]], batch * channels, limits.max_elements)

    row = _newest(op, convention)  # the case-file operator: the newest version of each
    rounding_choices = tuple(row.rounding.values())
    axis_choices = (*range(rank), *range(-1, -rank - 1, -1)) if (op, convention) == ("max", "openvino") else (0,)
    # pad range: 0-2 keep every pad below the kernel, 3 lets pads reach the kernel and beyond
    # (windows wholly in padding; ONNX Runtime rejects such pads, so they stay a minority)
    mode_radices = (4, len(rounding_choices), 2, len(axis_choices), 4, 2 ** n)
    d_pad, d_round, d_flag, d_axis, d_range, d_global = _digits_of(
        src, mode_radices, ("auto_pad", "rounding", "flag", "axis", "pad range", "global axes"))
    wide_pads = d_range == 3
    auto_pad = ("explicit", "valid", "same_upper", "same_lower")[d_pad]
    rounding = rounding_choices[d_round]
    dilated_op = op == "max" or convention == "onnx"  # OpenVINO AvgPool has no dilations
    exclude_pad = op == "avg" and d_flag == 1
    storage_order = d_flag if (op, convention) == ("max", "onnx") else 0
    index_type = "i32" if (op, convention) == ("max", "openvino") and d_flag else "i64"
    axis = axis_choices[d_axis]

    kernel: list[int] = []
    strides: list[int] = []
    dilations: list[int] = []
    pads_begin: list[int] = []
    pads_end: list[int] = []
    radices = _axis_radices(limits, n)
    # Per axis, most significant first: kernel, stride, dilation, pads_begin, pads_end.
    axis_digits = _digits_of(src, radices * n, [f"{what} {i}" for i in range(n) for what in
                                               ("kernel - 1", "stride - 1", "dilation", "pad begin", "pad end")])
    for i, size in enumerate(sizes):
        dk, ds, dd, pb, pe = axis_digits[5 * i: 5 * i + 5]
        if not wide_pads:  # pads below the kernel: the kernel is drawn from the unpadded room
            k = 1 + dk % max(1, min(limits.max_kernel[n], size + pb + pe if auto_pad == "explicit" else size))
            pb, pe = pb % k, pe % k
        # Explicit pads must leave room for the window; valid ignores them; same_* computes its own.
        room = {"explicit": size + pb + pe, "valid": size}.get(auto_pad, limits.max_kernel[n] * limits.max_dilation)
        k = 1 + dk % max(1, min(limits.max_kernel[n], room))
        if limits.global_windows and d_global >> i & 1 and auto_pad != "same_upper" and auto_pad != "same_lower":
            k = max(1, room)  # a global window: the kernel takes the whole (padded) axis
        d_max = 1
        if dilated_op and k > 1:
            d_max = max(1, min(limits.max_dilation, (room - 1) // (k - 1)))
        kernel.append(k)
        strides.append(1 + ds)
        dilations.append(1 + dd % d_max)
        pads_begin.append(pb)
        pads_end.append(pe)

    if auto_pad != "explicit" and convention == "onnx":
        pads_begin, pads_end = [0] * n, [0] * n
    drawn = PoolSpec(op, tuple(kernel), tuple(strides), tuple(pads_begin), tuple(pads_end),  # type: ignore[arg-type]
                     tuple(dilations), rounding, auto_pad, exclude_pad, axis, index_type,  # type: ignore[arg-type]
                     storage_order, convention)  # type: ignore[arg-type]
    # Spelled in the operator's own vocabulary, then parsed back as a case file is.
    op_name = row.name
    spelled, spec = _spelled(drawn, op_name)
    attrs = {k: list(v) if isinstance(v, list) else v for k, v in spelled.items()}  # the case's own lists
    shape = (batch, channels, *sizes)
    x, recipe = draw_input(src, shape, dtype, limits)
    return FuzzCase(op_name, attrs, spec, x, recipe)


def pool_configs(
    ops: Sequence[str] = ("max", "avg"),
    ranks: Sequence[int] = (3, 4, 5),
    dtypes: Sequence[str] = ALL_DTYPES,
    conventions: Sequence[str] = CONVENTIONS,
    limits: Limits = DEFAULT_LIMITS,
) -> st.SearchStrategy[FuzzCase]:
    """:func:`pool_config` drawn through Hypothesis."""
    return configs(functools.partial(pool_config, ops=ops, ranks=ranks, dtypes=dtypes, conventions=conventions, limits=limits))


_DEFAULT_REGIMES: tuple[Limits, ...] = tuple(REGIMES[r] for r in _REGIME_CHOICES)


@functools.cache
def _kinds(ops: tuple[str, ...], ranks: tuple[int, ...], dtypes: tuple[str, ...],
           conventions: tuple[str, ...]) -> tuple[tuple[str, str, int], ...]:
    """(op, convention, rank) choices: the pairs that allow one of ``dtypes``, every rank."""
    return tuple((op, conv, rank) for op in ops for conv in conventions if allowed_dtypes(op, conv, dtypes)
                 for rank in ranks)


@functools.cache
def _allowed(op: str, convention: str, dtypes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(allowed_dtypes(op, convention, dtypes))


@functools.cache
def _newest(op: str, convention: str) -> operators.OperatorVersion:
    return operators.newest(op, convention)


@functools.lru_cache(maxsize=4096)
def _spelled(drawn: PoolSpec, name: str) -> tuple[dict[str, Any], PoolSpec]:
    """``drawn`` spelled as operator ``name`` writes it, and parsed back (cached: draws repeat;
    callers copy the attribute lists before handing them out)."""
    attrs = operators.spell(drawn, name)
    return attrs, operators.parse(name, attrs)


def _within_budget(sizes: list[int], planes: int, budget: int) -> list[int]:
    """``sizes`` with the longest axes halved until ``planes * prod(sizes) <= budget``."""
    sizes = list(sizes)
    while planes * math.prod(sizes) > budget and max(sizes) > 1:
        i = sizes.index(max(sizes))
        sizes[i] = (sizes[i] + 1) // 2
    return sizes


def _axis_radices(limits: Limits, n: int) -> tuple[int, ...]:
    return (limits.max_kernel[n], limits.max_stride, limits.max_dilation, limits.max_pad + 1, limits.max_pad + 1)


def _digits_of(src: Choices, radices: Sequence[int], labels: Sequence[str]) -> list[int]:
    """One choice per digit: digit ``i`` in ``[0, radices[i])``."""
    return [src.integer(0, r - 1, label) for r, label in zip(radices, labels, strict=True)]


def _raw_spec(spec: PoolSpec, **changes: Any) -> PoolSpec:
    """``spec`` with fields replaced and NO validation (to hand peers a broken configuration)."""
    return spec.replace(**changes)


def invalid_config(
    src: Choices,
    ops: Sequence[str] = ("max", "avg"),
    ranks: Sequence[int] = (3, 4, 5),
    dtypes: Sequence[str] = ALL_DTYPES,
    conventions: Sequence[str] = CONVENTIONS,
    limits: Limits = DEFAULT_LIMITS,
) -> FuzzCase:
    """A valid configuration broken in one drawn way: the engine must reject it; so should peers."""
    case = pool_config(src, ops, ranks, dtypes, conventions, limits)
    spec = case.spec
    n = spec.spatial_rank
    i = src.integer(0, n - 1, "axis to break")
    choices = [m for m in MUTATIONS if _mutation_applies(m, case)]
    mutation = src.pick(choices, "mutation")
    attrs = {k: (list(v) if isinstance(v, list) else v) for k, v in case.attributes.items()}
    kname = operators.operator(case.op_name).attribute_names[0]  # the kernel, as the row spells it
    x = case.x

    def put(values: tuple[int, ...], value: int) -> tuple[int, ...]:
        out = list(values)
        out[i] = value
        return tuple(out)

    if mutation == "kernel larger than padded input":
        size = x.shape[2 + i]
        big = size + spec.pads_begin[i] + spec.pads_end[i] + 1
        attrs[kname][i] = big
        raw = _raw_spec(spec, kernel=put(spec.kernel, big))
        if "dilations" in attrs:
            attrs["dilations"][i] = 1
        raw = raw.replace(dilations=put(raw.dilations, 1))
    elif mutation == "kernel 0":
        attrs[kname][i] = 0
        raw = _raw_spec(spec, kernel=put(spec.kernel, 0))
    elif mutation == "stride 0":
        attrs["strides"][i] = 0
        raw = _raw_spec(spec, strides=put(spec.strides, 0))
    elif mutation == "dilation 0":
        attrs["dilations"][i] = 0
        raw = _raw_spec(spec, dilations=put(spec.dilations, 0))
    elif mutation == "negative pad":
        if spec.convention == "openvino":
            attrs["pads_begin"][i] = -1
        else:
            attrs["pads"][i] = -1
        raw = _raw_spec(spec, pads_begin=put(spec.pads_begin, -1))
    elif mutation == "axis out of range":
        axis = src.pick((spec.rank, -spec.rank - 1), "bad axis")
        attrs["axis"] = axis
        raw = _raw_spec(spec, axis=axis)
    elif mutation == "dtype not allowed":
        allowed = set(allowed_dtypes(spec.op, spec.convention, ALL_DTYPES))
        bad = [d for d in ALL_DTYPES if d not in allowed]
        dt = src.pick(bad, "disallowed dtype")
        x = make_input(x.shape, dt, case.recipe["pattern"], case.recipe["seed"])
        raw = spec
    else:  # rank mismatch: one spatial axis too many in the input
        x = x.reshape(x.shape + (1,))
        raw = spec
    recipe = {**case.recipe, "shape": list(x.shape)}
    return FuzzCase(case.op_name, attrs, raw, x, recipe, mutation)


def fuzz_config(src: Choices, ops: Sequence[str], ranks: Sequence[int], dtypes: Sequence[str],
                conventions: Sequence[str], *, invalid: bool = False, limits: Limits = DEFAULT_LIMITS) -> FuzzCase:
    """One configuration of a campaign: :func:`pool_config`, or with ``invalid`` one time in four
    (the fourth choice of the first) an :func:`invalid_config`."""
    if invalid and src.integer(0, 3, "valid (0-2) or broken (3)") == 3:
        return invalid_config(src, ops, ranks, dtypes, conventions, limits)
    return pool_config(src, ops, ranks, dtypes, conventions, limits)


def configs(generate: Callable[[Choices], T]) -> st.SearchStrategy[T]:
    """A generator of :mod:`poolcheck.fuzz.choices` (``generate(src)``) as a Hypothesis strategy:
    one Hypothesis choice per choice it asks for, so a choice sequence recorded by a seeded run
    replays (and shrinks) through it."""

    @st.composite
    def drawn(draw: st.DrawFn) -> T:
        return generated(generate, DrawnChoices(draw))

    return drawn()


def _mutation_applies(mutation: str, case: FuzzCase) -> bool:
    spec = case.spec
    if mutation == "kernel larger than padded input":
        return spec.auto_pad in ("explicit", "valid")
    if mutation == "dilation 0":
        return "dilations" in case.attributes
    if mutation == "axis out of range":
        return spec.op == "max" and spec.convention == "openvino"
    if mutation == "dtype not allowed":
        return bool(set(ALL_DTYPES) - set(allowed_dtypes(spec.op, spec.convention, ALL_DTYPES)))
    if mutation == "rank mismatch":
        return spec.rank < 5
    if mutation == "negative pad":
        return spec.auto_pad == "explicit"
    return True


def config_batches(
    ops: Sequence[str] = ("max", "avg"),
    ranks: Sequence[int] = (3, 4, 5),
    dtypes: Sequence[str] = ALL_DTYPES,
    conventions: Sequence[str] = CONVENTIONS,
    *,
    max_configs: int = EXAMPLE_CONFIGS,
    invalid: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> st.SearchStrategy[list[FuzzCase]]:
    """A list of 1..``max_configs`` configurations, its length spread over the range
    (:func:`~poolcheck.fuzz.batching.example_lists`): one batched peer call per example; shrinking
    reduces the list to the configuration that diverges. With ``invalid`` about one in four
    configurations is deliberately broken."""
    check_arguments(ops, ranks, dtypes, conventions)
    if max_configs < 1:
        raise AttributeValueError("max_configs", f"max_configs={max_configs!r} must be >= 1")
    return example_lists(configs(functools.partial(fuzz_config, ops=ops, ranks=ranks, dtypes=dtypes,
                                                   conventions=conventions, invalid=invalid, limits=limits)),
                         max_configs)
