"""One judgement: how an actual output is compared with an expected one, everywhere.

The case runner (engines against the document, peers against the reference engine), the fuzzer's
engine, peer and metamorphic oracles, the diagnosis and ``poolcheck explain`` all compare
through this module, so a verdict means the same whoever asks.

**Output contract** (checked before any value is compared): values and indices are real numeric
arrays; the values have the input's element type ("T"; bfloat16 too, where the operator version allows it); the indices the type the attributes
name (OpenVINO: "index_element_type ... the type of output tensor with indices", i32/i64; ONNX
MaxPool: "Indices tensor ... T2 = tensor(int64)"); both the output shape the attributes give.
A wrong type is a divergence of its own, never cast away.

**Values.** Max pooling, indices and integers agree bit for bit (NaN equals NaN, -0.0 equals 0.0).
An average agrees with the float64-accumulated reference ``e`` when, element by element,

    |a - e| <= ulp_R(e) + (taps + 1) * eps_A * mean|x|                     (the average rule)

where ``R`` is the result type, ``A`` the type the subject accumulates in (a runtime: the input
type, as the specs name no accumulation type; poolcheck's engines: float64), ``taps`` the window
size and ``mean|x|`` the window's average of ``|x|`` with the same divisor. Summing ``t`` terms
in a type with machine epsilon ``eps`` errs by at most about ``t * eps * sum|x|``; divided by
the divisor that is ``t * eps * mean|x|``; one unit in the last place of ``R`` covers the final
rounding. When both sides accumulate in float64 (engine against engine, a metamorphic property),
both err: the bound is counted twice. Inf equals inf, NaN equals NaN, and where ``|x|`` sums past
the float64 range no bound is useful (the element must then agree exactly) -- except where the
*finite* ``|x|`` of a window sum past it (float64 inputs only): there the order of the additions,
which no text fixes, decides between +inf, -inf, NaN and a finite value (``[M, M, -inf]`` gives NaN
summed left to right and -inf right to left), so any answer agrees (an *order-open* element).

**The rest of the family.** GlobalMaxPool, AdaptiveMaxPool (values and indices) and MaxUnpool
agree bit for bit. GlobalAveragePool follows the average rule over its one window (the plane);
AdaptiveAvgPool too, with ``taps`` the largest bin and ``mean|x|`` each bin's average of ``|x|``.
LpPool and GlobalLpPool (``y = S ** (1/p)``, ``S`` the sum of ``|x|^p`` over ``taps`` cells,
padding counting zero) agree when

    |a - e| <= ((taps + 1) / p + 1) * eps_A * |e| + ulp_R(e) + (taps * tiny_A) ** (1/p)   (the Lp rule)

All terms of ``S`` are non-negative, so a subject summing them in ``A`` errs by at most
``(taps - 1) * eps * S``; each term ``|x|^p`` rounded once more (``+ 2 eps`` with the rounding of
the sum's last step) gives ``(taps + 1) * eps`` relative on ``S``. The 1/p-th root divides a
relative error by ``p`` and rounds once more (``+ eps``); ``ulp_R(e)`` covers the final rounding
to the result type. Terms below the smallest normal ``tiny`` of ``A`` may be flushed or lose
digits: at most ``taps * tiny`` absolutely on ``S``, at most ``(taps * tiny) ** (1/p)`` on
``y``. A term that overflows ``A`` (``|x|^p`` past its range) has no bound: the element must
agree exactly, and such a difference is a finding.

A case file's documented outputs are the exception: they are compared with the case's own
``rtol``/``atol`` (default exact), which the case author chose for numbers written by hand.

**Severity band.** A peer's average outside the rule but within :data:`ACCUMULATION_RTOL` of the
reference (relative) differs by accumulation precision: a policy point the specs leave open
(``unspecified``), not a pass.

**Messages** have one format, ``<what>=<actual>, but should be <expected> [<operator> <runner>]``,
e.g. ``out.shape=(1, 1, 2, 2), but should be (1, 1, 3, 3) [MaxPool(kernel=[2, 2], ceil) engine=c]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from poolcheck import spec as S
from poolcheck.results import Diff, WindowCell
from poolcheck.spec import dtypes
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.family import FamilySpec, adaptive_bins, global_window
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import Geometry

#: Summation-error allowance per tap, in machine epsilons of the accumulation type.
ULPS_PER_TAP = 1.0
#: A peer's average within this relative distance of the reference, though outside the average
#: rule, differs by accumulation precision (severity ``unspecified``, not ``violation``).
ACCUMULATION_RTOL = {"float16": 2e-2, "float32": 1e-4}
#: Differing elements kept per check (with their windows); the count covers all of them.
MAX_DIFFS = 16
#: Tensors up to this many elements are stored whole in a result (side-by-side views).
FULL_OUTPUT_LIMIT = 4096
FLOAT64 = np.dtype(np.float64)


@dataclass
class Outputs:
    """Expected (or actual) outputs: values, and (max pooling) indices."""

    values: np.ndarray
    indices: np.ndarray | None = None


# --------------------------------------------------------------------------- messages


#: The bound of an order-open element of an average (module docstring): no bound, any answer
#: agrees. NaN, which no other bound is (they map NaN and, where exact agreement is needed, inf to 0).
ORDER_OPEN = np.nan


def label(spec: PoolSpec | FamilySpec, runner: str) -> str:
    """``[MaxPool(kernel=[2, 2], ceil) engine=c]``: the operator and who computed the output."""
    return f"[{spec.describe()} {runner}]"


def should_be(what: str, actual: Any, expected: Any, where: str = "") -> str:
    """The one message format: ``out.shape=(1, 2), but should be (1, 3) [where]``."""
    return f"{what}={actual}, but should be {expected}" + (f" {where}" if where else "")


# --------------------------------------------------------------------------- the value rules


def same_values(expected: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """Element-wise exact agreement (NaN equals NaN; -0.0 equals 0.0)."""
    if expected.dtype.kind in "iu" and actual.dtype.kind in "iu":
        return np.asarray(expected == actual)
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    return (e == a) | (np.isnan(e) & np.isnan(a))


def avg_tolerance(x: np.ndarray, geom: Geometry, exclude_pad: bool, policy: Policy,
                  expected: np.ndarray, engine_module: ModuleType, dtype: np.dtype | None = None, *,
                  result: np.dtype | None = None, both_float64: bool = False,
                  mean_abs: np.ndarray | None = None) -> np.ndarray:
    """The average rule: the per-element bound on a correct average's deviation from the
    float64 reference, for a subject accumulating in ``dtype`` (default: the input type) and
    returning ``result`` (default: ``dtype``). ``both_float64``: the other side also accumulated
    in float64 and errs too (the bound counts twice). ``mean_abs``: each window's mean ``|x|``
    over the elements the subject averages, when they are not the ones ``policy`` gives the
    engine (default: the engine's average of ``|x|``)."""
    acc = np.dtype(dtype or x.dtype)
    res = np.dtype(result or acc)
    eps = float(dtypes.finfo(acc).eps)  # bfloat16: 2^-7, from ml_dtypes
    taps = math.prod(a.kernel for a in geom.axes)
    sides = 2.0 if both_float64 else 1.0
    with np.errstate(all="ignore"):
        wide = np.abs(x.astype(np.float64))
        if mean_abs is None:
            mean_abs = engine_module.avg_pool(wide, geom, exclude_pad, policy)
        e = np.abs(expected.astype(np.float64))
        ulp = dtypes.spacing(e, res)
        tol = sides * (taps + 1) * ULPS_PER_TAP * eps * mean_abs + ulp
        # order-open elements (module docstring): the finite |x| of the window sum past float64
        open_ = np.isinf(engine_module.avg_pool(np.where(np.isfinite(wide), wide, 0.0), geom, exclude_pad,
                                                policy)) if np.isinf(mean_abs).any() else None
    # |x| summing past the float64 range: no useful bound (exact agreement required there)
    tol = np.where(np.isnan(tol), 0.0, tol)
    return tol if open_ is None else np.where(open_, ORDER_OPEN, tol)


def tolerance_for(spec: PoolSpec, x: np.ndarray, geom: Geometry, expected: np.ndarray, engine_module: ModuleType,
                  policy: Policy = SPEC) -> np.ndarray | None:
    """The average rule for a runtime (accumulating in the input type), or None (exact) for max
    pooling, integer types and empty outputs."""
    if spec.op != "avg" or not dtypes.is_float(x.dtype) or 0 in geom.output_shape:
        return None
    return avg_tolerance(x, geom, spec.exclude_pad, policy, expected, engine_module)


def family_tolerance(spec: FamilySpec, x: np.ndarray, expected: np.ndarray, engine_module: ModuleType,
                     family_module: ModuleType) -> np.ndarray | None:
    """The per-element bound a runtime's output of family operator ``spec`` on ``x`` may deviate
    from the float64-accumulated reference ``expected`` (module docstring: the average rule for
    GlobalAveragePool and AdaptiveAvgPool, the Lp rule for LpPool and GlobalLpPool), or None
    (exact) for the max pools, MaxUnpool, integer types and empty outputs. ``engine_module`` and
    ``family_module`` are the reference engines (averages of ``|x|``)."""
    if spec.op in ("global_max", "adaptive_max", "unpool") or not dtypes.is_float(x.dtype) or expected.size == 0:
        return None
    acc = np.dtype(x.dtype)
    eps = float(dtypes.finfo(acc).eps)
    e = np.abs(expected.astype(np.float64))
    with np.errstate(all="ignore"):
        ulp = dtypes.spacing(e, acc)
    if spec.op == "global_avg":
        geom = S.resolve(global_window(spec, x.shape), x.shape)
        return avg_tolerance(x, geom, False, SPEC, expected, engine_module)
    if spec.op == "adaptive_avg":
        assert spec.output_shape is not None
        taps = math.prod(int((end - start).max()) for start, end in
                         (adaptive_bins(n, o) for n, o in zip(x.shape[2:], spec.output_shape)))
        with np.errstate(all="ignore"):
            mean_abs = family_module.adaptive_avg(np.abs(x.astype(np.float64)), spec.output_shape)
            tol = (taps + 1) * ULPS_PER_TAP * eps * mean_abs + ulp
        return np.where(np.isnan(tol), 0.0, tol)
    window = spec.window
    taps = math.prod(window.kernel) if window is not None and spec.op == "lp" else math.prod(x.shape[2:])
    tiny = float(dtypes.finfo(acc).tiny)
    with np.errstate(all="ignore"):
        tol = ((taps + 1) / spec.p + 1) * ULPS_PER_TAP * eps * e + ulp + (taps * tiny) ** (1.0 / spec.p)
    return np.where(np.isfinite(tol), tol, 0.0)


def close_values(expected: np.ndarray, actual: np.ndarray, tol: np.ndarray | None) -> np.ndarray:
    """Agreement within ``tol`` (exact where ``tol`` is None); NaN equals NaN, inf equals inf;
    anything agrees at an order-open element (``tol`` is :data:`ORDER_OPEN`)."""
    same = same_values(expected, actual)
    if tol is None:
        return same
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    with np.errstate(all="ignore"):
        near = np.abs(e - a) <= tol
    return same | (near & np.isfinite(e) & np.isfinite(a)) | np.isnan(tol)


def within(expected: np.ndarray, actual: np.ndarray, *, rtol: float = 0.0, atol: float = 0.0) -> np.ndarray:
    """A case file's own tolerance (``|a - e| <= atol + rtol * |e|``; NaN equals NaN)."""
    if expected.dtype.kind in "iu" and actual.dtype.kind in "iu":
        return same_values(expected, actual)
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    with np.errstate(all="ignore"):
        return np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True) | (a == e)


def differing(name: str, expected: np.ndarray, actual: np.ndarray, *, rtol: float = 0.0, atol: float = 0.0,
              tol: np.ndarray | None = None) -> tuple[list[tuple[int, ...]], str]:
    """Positions where ``actual`` differs from ``expected`` (under ``tol``, the average rule, or
    else ``rtol``/``atol``), and a shape message when the shapes differ."""
    if tuple(expected.shape) != tuple(actual.shape):
        return [], should_be(f"{name}.shape", tuple(actual.shape), tuple(expected.shape))
    same = close_values(expected, actual, tol) if tol is not None else within(expected, actual, rtol=rtol, atol=atol)
    return [tuple(int(i) for i in p) for p in np.argwhere(~same)], ""


def within_accumulation(dtype: np.dtype, expected: np.ndarray, actual: np.ndarray) -> float | None:
    """The accumulation band's rtol when ``actual`` lies inside it (see :data:`ACCUMULATION_RTOL`)."""
    rtol = ACCUMULATION_RTOL.get(np.dtype(dtype).name)
    if rtol is None or expected.shape != actual.shape:
        return None
    return rtol if within(expected, actual, rtol=rtol, atol=rtol).all() else None


# --------------------------------------------------------------------------- masks (the fuzzer)


@dataclass
class Mismatch:
    """How a subject's outputs differ from the reference: a shape message, or masks."""

    shape: str = ""
    values: np.ndarray | None = None  # bool mask of differing values
    indices: np.ndarray | None = None  # bool mask of differing indices (where values agree)

    @property
    def count(self) -> int:
        if self.shape:
            return 1
        n = 0
        if self.values is not None:
            n += int(self.values.sum())
        if self.indices is not None:
            n += int(self.indices.sum())
        return n

    def __bool__(self) -> bool:
        return self.count > 0

    def what(self) -> str:
        """``shape``, ``values``, ``indices`` or ``values+indices``."""
        if self.shape:
            return "shape"
        parts = []
        if self.values is not None and self.values.any():
            parts.append("values")
        if self.indices is not None and self.indices.any():
            parts.append("indices")
        return "+".join(parts)


def mismatch(expected: Outputs, values: np.ndarray, indices: np.ndarray | None,
             tol: np.ndarray | None = None) -> Mismatch:
    """Compare a subject's outputs with ``expected``. Indices are compared only where both
    sides report them and the values agree (a different value makes a different index)."""
    if tuple(values.shape) != tuple(expected.values.shape):
        return Mismatch(shape=should_be("out.shape", list(values.shape), list(expected.values.shape)))
    vmask = ~close_values(expected.values, values, tol)
    imask = None
    if expected.indices is not None and indices is not None:
        if tuple(indices.shape) != tuple(expected.indices.shape):
            return Mismatch(shape=should_be("indices.shape", list(indices.shape), list(expected.indices.shape)))
        imask = (expected.indices.astype(np.int64) != np.asarray(indices).astype(np.int64)) & ~vmask
    return Mismatch(values=vmask, indices=imask)


def first_difference(expected: Outputs, values: np.ndarray, indices: np.ndarray | None, mm: Mismatch) -> str:
    """A one-line description of the first differing element."""
    if mm.shape:
        return mm.shape
    for name, mask, exp, act in (("values", mm.values, expected.values, values),
                                 ("indices", mm.indices, expected.indices, indices)):
        if mask is not None and mask.any() and exp is not None and act is not None:
            pos = tuple(int(i) for i in np.argwhere(mask)[0])
            n = int(mask.sum())
            return (f"{name}: {n} of {mask.size} differ; first at {list(pos)}: "
                    f"expected {exp[pos].item()!r}, got {np.asarray(act)[pos].item()!r}")
    return "no difference"


# --------------------------------------------------------------------------- the output contract


@dataclass(frozen=True)
class Breach:
    """One way an output breaks the contract: ``klass`` is stable (fuzz signatures), ``message``
    is for people."""

    output: str  # "values" | "indices"
    klass: str
    message: str
    what: str  # "type" | "shape" | "dtype"


def output_contract(spec: PoolSpec, x_shape: Sequence[int], x_dtype: np.dtype, values: Any, indices: Any, *,
                    check_shape: bool = True) -> list[Breach]:
    """What is wrong with an output's types (and shape), most basic first: not a real array,
    then shape, then element types (only when the kinds and shapes are right)."""
    breaches: list[Breach] = []
    want_shape: tuple[int, ...] | None = None
    if check_shape:
        out_shape = tuple(a.out for a in S.resolve(spec, tuple(x_shape)).axes)
        want_shape = (int(x_shape[0]), int(x_shape[1]), *out_shape)
    for name, arr in (("values", values), ("indices", indices)):
        if arr is None:
            continue
        if not isinstance(arr, np.ndarray):
            breaches.append(Breach(name, f"output:{name}-not-real-numbers",
                                   f"{name}: not an array ({type(arr).__name__})", "type"))
            continue
        if not dtypes.is_numeric(arr.dtype):
            breaches.append(Breach(name, f"output:{name}-not-real-numbers",
                                   f"{name}: element type {arr.dtype} is not a real number type", "type"))
            continue
        if want_shape is not None and tuple(arr.shape) != want_shape:
            breaches.append(Breach(name, "shape", f"shape: {name} are {tuple(arr.shape)}, the attributes give "
                                                  f"{want_shape}", "shape"))
    if breaches:
        return breaches
    x_dtype = np.dtype(x_dtype)
    if isinstance(values, np.ndarray) and values.dtype != x_dtype:
        breaches.append(Breach("values", f"dtype:values-{values.dtype}-for-{x_dtype}",
                               f"dtype: values are {values.dtype}, the input is {x_dtype}", "dtype"))
    if isinstance(indices, np.ndarray) and spec.op == "max":
        want = S.index_layout(spec, tuple(x_shape)).dtype
        if indices.dtype != want:
            rule = (f"index_element_type {spec.index_element_type} requires {want}"
                    if spec.convention == "openvino" else f"ONNX MaxPool requires {want}")
            breaches.append(Breach("indices", f"dtype:indices-{indices.dtype}-for-{np.dtype(want)}",
                                   f"dtype: indices are {indices.dtype}, {rule}", "dtype"))
    return breaches


def contract_message(breaches: Sequence[Breach]) -> str:
    return "; ".join(b.message for b in breaches)


# --------------------------------------------------------------------------- diffs for a result


def scalar(v: Any) -> Any:
    """A JSON-safe scalar ("nan", "inf", "-inf" survive JSON as strings)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return repr(v)
    return v


def tensor(a: np.ndarray | None) -> Any:
    """A small tensor as nested lists (None past :data:`FULL_OUTPUT_LIMIT` elements)."""
    if a is None or a.size > FULL_OUTPUT_LIMIT:
        return None
    return [scalar(v) for v in a.reshape(-1)] if a.ndim == 0 else _nested(a)


def _nested(a: np.ndarray) -> Any:
    if a.ndim == 0:
        return scalar(a[()])
    return [_nested(sub) for sub in a]


def window_cells(case_input: np.ndarray, geom: Geometry, position: Sequence[int],
                 chosen: int | None, layout: S.IndexLayout | None) -> list[WindowCell]:
    """The window of one output element over the padded input, with values and the chosen tap."""
    n, c = int(position[0]), int(position[1])
    plane = case_input[n, c]
    cells = []
    for coords, kind in S.window_taps(geom, position):
        value = scalar(plane[coords]) if kind == "input" else None
        is_chosen = False
        if chosen is not None and kind == "input" and layout is not None:
            sizes = [a.size for a in geom.axes]
            flat = int(np.ravel_multi_index(coords, sizes, order=layout.order))  # type: ignore[call-overload]
            nc = n * geom.channels + c
            is_chosen = (nc * int(np.prod(sizes)) + flat) % layout.modulus == chosen
        cells.append(WindowCell(list(coords), kind, value, is_chosen))
    return cells


@dataclass
class Judgement:
    """Actual against expected for one runner: the differing elements (the first
    :data:`MAX_DIFFS` with their windows), how many differ in all, and one message per output."""

    diffs: list[Diff] = field(default_factory=list)
    total: int = 0
    messages: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return not self.diffs

    def message(self) -> str:
        return "; ".join(self.messages)


def judge(x: np.ndarray, geom: Geometry | None, layout: S.IndexLayout | None,
          outputs: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray | None]], *,
          rtol: float = 0.0, atol: float = 0.0, chosen: np.ndarray | None = None, against: str = "",
          stop_at_shape: bool = False) -> Judgement:
    """Compare each ``(output, expected, actual, tol)``; ``chosen`` (the actual indices) marks the
    tap each differing element's window chose. ``against`` names the expected side in the count
    message ("the reference"). ``geom`` None (an operator without a sliding window: adaptive
    pooling, MaxUnpool) leaves the differing elements without their windows."""
    j = Judgement()
    for output, exp, act, tol in outputs:
        positions, shape_msg = differing(output, exp, act, rtol=rtol, atol=atol, tol=tol)
        if shape_msg:
            j.diffs.append(Diff("shape", None, list(exp.shape), list(act.shape)))
            j.total += 1
            j.messages.append(shape_msg)
            if stop_at_shape:
                break
            continue
        _describe(j, output, positions, exp, act, x, geom, layout, chosen, against)
    return j


def _describe(j: Judgement, output: str, positions: Sequence[tuple[int, ...]], exp: np.ndarray, act: np.ndarray,
              x: np.ndarray, geom: Geometry | None, layout: S.IndexLayout | None, chosen: np.ndarray | None,
              against: str = "") -> None:
    """Add ``output``'s differing ``positions`` to ``j``: the count, the first :data:`MAX_DIFFS`
    with their windows (``chosen``: the actual indices, marking each window's chosen tap)."""
    if not positions:
        return
    j.total += len(positions)
    pick = chosen if chosen is not None and chosen.shape == exp.shape else None
    for p in positions[:MAX_DIFFS]:
        tap = int(pick[p]) if pick is not None else None
        j.diffs.append(Diff(output, list(p), scalar(exp[p]), scalar(act[p]),
                            window_cells(x, geom, p, tap, layout) if geom is not None else []))
    j.messages.append(f"{output}: {len(positions)} of {act.size} elements differ"
                      + (f" from {against}" if against else ""))


def judgement_of(x: np.ndarray, geom: Geometry | None, layout: S.IndexLayout | None, expected: Outputs,
                 values: np.ndarray, indices: np.ndarray | None, mm: Mismatch) -> Judgement:
    """The differences :func:`mismatch` found, described as :func:`judge` describes its own (the
    first :data:`MAX_DIFFS` with their windows, the count): a comparison made once, shown without
    comparing again -- the same elements, the same count (indices only where the values agree)."""
    j = Judgement()
    if mm.shape:
        values_differ = tuple(np.shape(values)) != tuple(expected.values.shape)
        exp_shape = expected.values.shape if values_differ or expected.indices is None else expected.indices.shape
        act_shape = np.shape(values) if values_differ or indices is None else np.shape(indices)
        j.diffs.append(Diff("shape", None, list(exp_shape), list(act_shape)))
        j.total = 1
        j.messages.append(mm.shape)
        return j
    chosen = np.asarray(indices) if indices is not None else None
    for output, mask, exp, act in (("values", mm.values, expected.values, values),
                                   ("indices", mm.indices, expected.indices, indices)):
        if mask is None or exp is None or act is None:
            continue
        positions = [tuple(int(v) for v in p) for p in np.argwhere(mask)]
        _describe(j, output, positions, np.asarray(exp), np.asarray(act), x, geom, layout, chosen)
    return j
