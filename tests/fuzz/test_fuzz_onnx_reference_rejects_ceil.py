"""onnx.reference's refusal of a negative SAME pad total, and its explicit pads + ceil_mode path:

- an oracle written here from onnx 1.23's source (``op_pool_common.py``: ``CommonPool._run``,
  ``get_output_shape_auto_pad``, ``get_pad_shape``), not from poolcheck's, says where
  ReferenceEvaluator raises numpy.pad's "index can't contain negative values"; the runtime itself
  (a model built with onnx.helper, no poolcheck in between) raises exactly there, and the
  diagnosis names it ``rejects: negative SAME pad total`` -- not ONNX Runtime's
  ``same:undilated-kernel gives no output``;
- planted: ONNX Runtime's refusal keeps its names, and another message on the same
  configuration is not given this one;
- MaxPool with strides and dilations 1 (``_op_common_pool.py``, ``max:unit-step-common-path``):
  pads not applied to a 1-D or 3-D input, read as ``[top, bottom, left, right]`` for a 2-D one
  (with ceil_mode the output sized with the pads twice), indices through the output's shape;
  against an oracle from that source and ReferenceEvaluator, planted: spec-following and
  per-plane peers keep their names;
- AveragePool with explicit pads and ceil_mode (``get_output_shape_explicit_padding``, ``pool``):
  the extra padding the last window needs split half before the input
  (``rounding:ceil-extra-pad-split``), against a loop oracle written here from that source, against
  ReferenceEvaluator's own outputs, and planted: a peer following the spec is not given the name."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from support import onnx_reference_run

from poolcheck.engines import get_engine
from poolcheck.fuzz.diagnosis import GEOMETRY_VARIANTS, diagnose_output, diagnose_rejection, predict, replay
from poolcheck.spec import attributes as A
from poolcheck.spec.operators import parse

NEG_KEY = "rejects: negative SAME pad total"
NUMPY_PAD = "ValueError: index can't contain negative values"


# --------------------------------------------------------------------------- the oracle


def onnx_reference_same_raises(op: str, sizes: tuple[int, ...], kernel: list[int], strides: list[int],
                               ceil_mode: int) -> str | None:
    """What onnx.reference 1.23 raises for ``op`` under SAME_UPPER/SAME_LOWER, read off its source:
    AveragePool and LpPool (``op_pool_common.CommonPool._run``) assert ``ceil_mode`` is 0, then
    size the output ``math.floor((size - 1) / stride) + 1`` and pad ``(out - 1) * stride + kernel
    - size`` (the kernel as given, no dilation) split into two widths, one of them negative when
    the total is; ``np.pad`` refuses a negative width. MaxPool pads nothing with numpy under SAME
    (``_max_pool`` for a stride > 1). None: no refusal of these two kinds."""
    if op == "MaxPool":
        return None
    if ceil_mode:
        return "AssertionError"
    for size, k, s in zip(sizes, kernel, strides):
        out = math.floor((size - 1) / s) + 1
        if (out - 1) * s + k - size < 0:
            return NUMPY_PAD
    return None


def x_of(sizes: tuple[int, ...]) -> np.ndarray:
    return np.arange(1, 1 + math.prod(sizes), dtype=np.float32).reshape(1, 1, *sizes)


SHAPES = [(n,) for n in range(1, 8)] + [(1, 2), (3, 5), (4, 2)]


def _attrs(op: str, sizes: tuple[int, ...], k: int, s: int, d: int, ceil: int, mode: str,
           include: int) -> dict[str, object]:
    r = len(sizes)
    ks, ss = ([k, 1 + k % 3], [s, 1 + s % 4]) if r == 2 else ([k] * r, [s] * r)
    attrs: dict[str, object] = {"kernel_shape": ks, "strides": ss, "dilations": [d] * r, "auto_pad": mode}
    if op != "LpPool":
        attrs["ceil_mode"] = ceil
    if op == "AveragePool":
        attrs["count_include_pad"] = include
    return attrs


@pytest.mark.parametrize("op", ["AveragePool", "LpPool", "MaxPool"])
def test_onnx_reference_raises_where_its_own_same_formula_is_negative(op: str) -> None:
    """ReferenceEvaluator raises numpy.pad's message exactly where the oracle says (measured on a
    wider grid: sizes 1-8 and 2-D, kernels 1-3, strides 1-4, dilations 1-3: 0 mismatches)."""
    raised = 0
    for sizes, k, s, d, ceil, mode, include in itertools.product(
            SHAPES, (1, 2, 3), (1, 2, 3, 4), (1, 3), (0, 1), ("SAME_UPPER", "SAME_LOWER"), (0, 1)):
        if (op == "LpPool" and ceil) or (op != "AveragePool" and include):
            continue
        attrs = _attrs(op, sizes, k, s, d, ceil, mode, include)
        want = onnx_reference_same_raises(op, sizes, attrs["kernel_shape"], attrs["strides"],  # type: ignore[arg-type]
                                          ceil)
        try:
            onnx_reference_run(op, x_of(sizes), outputs=2 if op == "MaxPool" else 1, **attrs)
            got = None
        except (ValueError, AssertionError) as e:
            got = NUMPY_PAD if str(e) == "index can't contain negative values" else type(e).__name__
        except IndexError:  # MaxPool's stride-1 path on some SAME shapes: another refusal, not this one
            assert op == "MaxPool"
            got = None
        assert got == want, (op, sizes, attrs)
        raised += got == NUMPY_PAD
    assert op == "MaxPool" or raised > 100


def test_the_rule_names_onnx_reference_refusals_and_no_others() -> None:
    """Wherever ReferenceEvaluator raises numpy.pad's message, the diagnosis of that message names
    the rule; a configuration without a negative total is never given the rule's name, whatever
    the message."""
    named = 0
    for sizes, k, s, d, mode in itertools.product(SHAPES, (1, 2, 3), (1, 2, 3, 4), (1, 2, 3),
                                                   ("SAME_UPPER", "SAME_LOWER")):
        attrs = _attrs("AveragePool", sizes, k, s, d, 0, mode, 1)
        spec = parse("AveragePool-22", attrs)
        x = x_of(sizes)
        try:
            onnx_reference_run("AveragePool", x, **attrs)
            message = None
        except ValueError as e:
            message = f"{type(e).__name__}: {e}"
        if message is not None:
            assert diagnose_rejection(spec, x, message).klass == NEG_KEY, (sizes, attrs)
            named += 1
        else:  # a planted refusal with the same message where the total is not negative: not named so
            assert diagnose_rejection(spec, x, NUMPY_PAD).klass != NEG_KEY, (sizes, attrs)
    assert named > 100


def test_the_registry_examples_are_named_by_their_cause() -> None:
    """The two registry rows of the seed-21 campaign: numpy.pad's refusal (AvgPool-14 k1 s2 on
    [1, 2], the total -1) is the rule; onnx.reference's ceil_mode assertion under SAME is its own
    message, no longer ONNX Runtime's 'same:undilated-kernel gives no output'."""
    spec = A.openvino_avg_pool([1], [2], [0], [0], auto_pad="same_upper", exclude_pad=False)
    x = np.array([[[1.0, 2.0]]], dtype=np.float32)
    with pytest.raises(ValueError, match="index can't contain negative values"):
        onnx_reference_run("AveragePool", x, kernel_shape=[1], strides=[2], auto_pad="SAME_UPPER")
    d = diagnose_rejection(spec, x, NUMPY_PAD)
    assert d.klass == NEG_KEY and d.explained, d

    attrs = {"kernel_shape": [1, 4], "strides": [1, 3], "dilations": [1, 3], "ceil_mode": 1,
             "auto_pad": "SAME_LOWER", "count_include_pad": 1}
    x = np.ones((1, 1, 1, 1), dtype=np.float32)
    with pytest.raises(AssertionError) as e:
        onnx_reference_run("AveragePool", x, **attrs)
    d = diagnose_rejection(parse("AveragePool-22", attrs), x, f"AssertionError: {e.value}")
    assert d.klass == "rejects: AssertionError: ceil_mode is not supported with auto_pad", d


# --------------------------------------------------------------------------- planted


ORT_FULL = ("Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running AveragePool node. "
            "Name:'pool0' Status Message: pool_attributes.h:236 int64_t onnxruntime::PoolAttributes::ComputeOutputSize"
            "(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) const out_size >= 0 was false. Calculated output "
            "dimension is negative. Check kernel_shape, pads, strides and dilations.")


def test_onnxruntime_refusals_are_named_by_its_same_arithmetic() -> None:
    """ONNX Runtime refuses a dilated SAME configuration its undilated arithmetic sizes negative
    (measured, 1.31: size 1, kernel 2, dilation 3): 'same:undilated-kernel gives no output', for its
    full message too (whose hint "Check kernel_shape, pads, strides and dilations" made it
    'rejects: dilations' before), never the numpy.pad rule, even where onnx.reference's total is
    negative too."""
    for op in ("avg", "max"):
        spec = (A.onnx_average_pool([2], [1], None, [3], 0, 1, "SAME_UPPER") if op == "avg"
                else A.onnx_max_pool([2], [1], None, [3], 0, "SAME_UPPER"))
        x = np.ones((1, 1, 1), dtype=np.float32)
        for message in (ORT_FULL, "Calculated output dimension is negative."):
            assert diagnose_rejection(spec, x, message).klass == "rejects: same:undilated-kernel gives no output"
    # stride 3 on 2 elements: onnx.reference's total is negative; ONNX Runtime's message is not numpy's
    spec = A.onnx_average_pool([1], [3], None, [2], 0, 1, "SAME_UPPER")
    x = np.ones((1, 1, 2), dtype=np.float32)
    assert diagnose_rejection(spec, x, NUMPY_PAD).klass == NEG_KEY
    assert diagnose_rejection(spec, x, "Calculated output dimension is negative.").klass != NEG_KEY


def test_the_dilations_rule_needs_a_message_refusing_dilations() -> None:
    """A message refusing dilations names the rule; one that only lists the attribute (ONNX
    Runtime's hint, onnx.reference's TypeError on an integer MaxPool's empty 3-D window) does not."""
    spec = A.onnx_max_pool([1, 3, 2], [1, 3, 1], None, [1, 1, 3], 0, "SAME_UPPER")
    x = np.ones((1, 1, 1, 1, 1), dtype=np.int8)
    for message in ("Dilation is not supported", "dilations > 1 are not supported", "unsupported dilations"):
        assert diagnose_rejection(spec, x, message).klass == "rejects: dilations", message
    listing = ("TypeError: Issues with types [<class 'numpy.ndarray'>] and attributes ['auto_pad', 'ceil_mode', "
               "'dilations', 'kernel_shape', 'pads', 'storage_order', 'strides'] and linked attributes=[] "
               "(operator 'MaxPool').")
    assert diagnose_rejection(spec, x, listing).klass.startswith("rejects: TypeError: Issues with types")


def test_a_variant_without_output_names_only_the_refusal_it_models() -> None:
    """same:undilated-kernel predicts no output here (size 1, kernel 4, dilation 3); a peer that
    refuses with a message about something else is classed by its message, not given the
    variant's name."""
    spec = A.onnx_average_pool([4], [3], None, [3], 0, 1, "SAME_LOWER")
    x = np.ones((1, 1, 1), dtype=np.float32)
    assert diagnose_rejection(spec, x, "Calculated output dimension is negative.").klass == \
        "rejects: same:undilated-kernel gives no output"
    for message in ("AssertionError: ceil_mode is not supported with auto_pad", "RuntimeError: something 12"):
        assert "same:undilated-kernel" not in diagnose_rejection(spec, x, message).klass


# --------------------------------------------------------------------------- explicit pads + ceil_mode

ENGINE = get_engine("numpy")
SPLIT_KEY = "rounding:ceil-extra-pad-split"


def split_axis(size: int, k: int, s: int, d: int, pb: int, pe: int, ceil: int) -> list[list[int]]:
    """One axis of onnx.reference's AveragePool with explicit pads, from ``op_pool_common.py``:
    ``get_output_shape_explicit_padding`` sizes the output ``(size + pb + pe - dk) / s + 1``
    rounded (ceil: minus one when the last window starts at or past ``size + pb``), then adds
    ``extra = (out - 1) * s + dk - (size + pb + pe)`` (when positive) as ``extra // 2`` more
    padding before the input and the rest after; ``pool`` takes the taps ``s * o + j * d`` of the
    padded array below ``size + pb + pe`` (the original pads). Returned: per output, its taps as
    input positions (outside ``[0, size)``: padding)."""
    dk = (k - 1) * d + 1
    span = (size + pb + pe - dk) / s + 1
    out = math.ceil(span) if ceil else math.floor(span)
    if ceil and (out - 1) * s >= size + pb:
        out -= 1
    extra = (out - 1) * s + dk - (size + pb + pe)
    before = pb + (extra // 2 if extra > 0 else 0)
    return [[p - before for p in range(s * o, s * o + dk, d) if p < size + pb + pe] for o in range(out)]


def split_oracle(x: np.ndarray, axes: list[list[list[int]]], include: bool) -> np.ndarray:
    """The averages over :func:`split_axis`'s taps: padding counted as 0 with ``include``, left out
    (numpy NaN padding, ``np.average`` of the rest) without; a window of no element is NaN."""
    y = np.zeros((*x.shape[:2], *(len(a) for a in axes)))
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for pos in itertools.product(*(range(len(a)) for a in axes)):
            vals = []
            for tap in itertools.product(*(a[p] for a, p in zip(axes, pos))):
                inside = all(0 <= q < x.shape[2 + i] for i, q in enumerate(tap))
                if inside or include:
                    vals.append(float(x[(n, c, *tap)]) if inside else 0.0)
            y[(n, c, *pos)] = np.mean(vals) if vals else np.nan
    return y


SPLIT_1D = [((size,), [k], [s], [d], [pb, pe]) for size in (1, 2, 4, 5, 7) for k in (1, 2, 3) for s in (2, 3)
            for d in (1, 2) for pb in (0, 1, 2) for pe in (0, 1, 2)]
SPLIT_2D = [((4, 5), [2, 3], [3, 1], [1, 1], [0, 1, 1, 0]), ((3, 7), [3, 1], [3, 3], [2, 1], [1, 0, 0, 2]),
            ((4, 4), [3, 3], [3, 1], [1, 1], [0, 0, 0, 0]), ((7, 3), [2, 2], [3, 2], [1, 1], [2, 1, 1, 0])]


def _split_spec(ks: list[int], ss: list[int], ds: list[int], pads: list[int], ceil: int, include: int) -> object:
    return parse("AveragePool-22", {"kernel_shape": ks, "strides": ss, "dilations": ds, "pads": pads,
                                    "ceil_mode": ceil, "count_include_pad": include})


def _valid(sizes: tuple[int, ...], ks: list[int], ds: list[int], pads: list[int]) -> bool:
    n = len(sizes)
    return all(size + pads[i] + pads[n + i] >= (k - 1) * d + 1 for i, (size, k, d) in enumerate(zip(sizes, ks, ds)))


def x_split(sizes: tuple[int, ...]) -> np.ndarray:
    return (np.arange(2 * math.prod(sizes), dtype=np.float32) * 3 % 11 + 1).reshape(2, 1, *sizes)


@pytest.mark.parametrize("include", [0, 1])
def test_ceil_split_variant_is_the_loop_oracle(include: int) -> None:
    shifted = 0
    for sizes, ks, ss, ds, pads in SPLIT_1D + SPLIT_2D:
        if not _valid(sizes, ks, ds, pads):
            continue
        n = len(sizes)
        axes = [split_axis(sizes[i], ks[i], ss[i], ds[i], pads[i], pads[n + i], 1) for i in range(n)]
        x = x_split(sizes)
        want = split_oracle(x, axes, bool(include))
        if np.isnan(want).any():
            continue  # an average of no element: the empty_avg policy, not this placement
        got = predict(ENGINE, _split_spec(ks, ss, ds, pads, 1, include), x, [SPLIT_KEY])
        assert got is not None and got[0].shape == want.shape, (sizes, ks, ss, ds, pads)
        np.testing.assert_allclose(got[0], want, rtol=1e-6, err_msg=str((sizes, ks, ss, ds, pads)))
        own = predict(ENGINE, _split_spec(ks, ss, ds, pads, 1, include), x, [])
        shifted += own is None or not np.allclose(own[0], want, rtol=1e-6)
    assert shifted > 10  # the grid reaches the shifted windows


def test_ceil_split_variant_applies_only_with_ceil_rounding() -> None:
    gv = next(g for g in GEOMETRY_VARIANTS if g.key == SPLIT_KEY)
    assert gv.applies(_split_spec([3], [3], [1], [1, 0], 1, 0))
    assert not gv.applies(_split_spec([3], [3], [1], [1, 0], 0, 0))  # floor: no extra padding
    assert not gv.applies(A.onnx_max_pool([3], [3], [1, 0], [1], 1, "NOTSET"))  # _max_pool starts at -pads_begin
    assert not gv.applies(A.onnx_average_pool([3], [3], None, [1], 0, 0, "SAME_UPPER"))


def test_ceil_split_variant_replays_onnx_reference_exactly_on_a_grid() -> None:
    """Wherever ReferenceEvaluator gives an output without an empty window, the variant reproduces
    it exactly (ceil_mode 1) and the diagnosis names it where the spec differs; with ceil_mode 0
    there is no extra padding and the spec reproduces it."""
    named = 0
    for (sizes, ks, ss, ds, pads), ceil, include in itertools.product(SPLIT_1D + SPLIT_2D, (0, 1), (0, 1)):
        if not _valid(sizes, ks, ds, pads):
            continue
        attrs = {"kernel_shape": ks, "strides": ss, "dilations": ds, "pads": pads, "ceil_mode": ceil,
                 "count_include_pad": include}
        x = x_split(sizes)
        try:
            got = onnx_reference_run("AveragePool", x, **attrs)[0]
        except IndexError:  # pool() loops past the output it sized: a refusal classed by its message
            continue
        if np.isnan(got).any():
            continue
        spec = parse("AveragePool-22", attrs)
        plain = replay(ENGINE, spec, x, [], got, None)
        if not ceil:
            assert plain is not None and plain.exact, attrs
            continue
        r = replay(ENGINE, spec, x, [SPLIT_KEY], got, None)
        assert r is not None and r.exact, (attrs, got)
        if plain is None or not plain.exact:
            d = diagnose_output(ENGINE, spec, x, got, None)
            assert d.explained and d.klass == SPLIT_KEY, (attrs, d)
            named += 1
    assert named > 15


def test_the_registry_example_is_named() -> None:
    """The registry's 'avg unexplained values (window touching padding)' example: AvgPool-14 valid,
    ceil_torch, kernel 3x3, stride [3, 1], exclude_pad on 4x4 planes, sent to ONNX as NOTSET,
    pads 0, ceil_mode 1: onnx.reference's rows start one element early (extra 2 on axis 0)."""
    spec = A.openvino_avg_pool([3, 3], [3, 1], [0, 0], [1, 1], exclude_pad=True, rounding_type="ceil_torch",
                               auto_pad="valid")
    x = -np.arange(1, 33, dtype=np.float32).reshape(1, 2, 4, 4)
    got = onnx_reference_run("AveragePool", x, kernel_shape=[3, 3], strides=[3, 1], pads=[0, 0, 0, 0],
                             ceil_mode=1, count_include_pad=0)[0]
    assert got[0, 0].tolist() == [[-4.0, -5.0], [-10.0, -11.0]]  # measured (the spec: [[-6, -7], [-12, -13]])
    d = diagnose_output(ENGINE, spec, x, got, None)
    assert d.explained and d.klass == SPLIT_KEY, d


def test_a_peer_following_the_spec_or_shifting_otherwise_is_not_given_the_name() -> None:
    """The spec's own output is 'same'; windows shifted by the whole extra (not half), planted as a
    peer, are not this variant (the name is given only where its replay is exact)."""
    checked = 0
    for sizes, ks, ss, ds, pads in SPLIT_1D:
        if not _valid(sizes, ks, ds, pads):
            continue
        spec = _split_spec(ks, ss, ds, pads, 1, 1)
        x = x_split(sizes)
        own = predict(ENGINE, spec, x, [])
        assert own is not None and diagnose_output(ENGINE, spec, x, *own).klass == "same"
        size, k, s, d, pb, pe = sizes[0], ks[0], ss[0], ds[0], pads[0], pads[1]
        axis = split_axis(size, k, s, d, pb, pe, 1)
        extra = (len(axis) - 1) * s + (k - 1) * d + 1 - (size + pb + pe)
        if extra < 2:
            continue
        # planted: every window shifted by the whole extra, padding counted
        whole = [[p - pb - extra for p in range(s * o, s * o + (k - 1) * d + 1, d) if p < size + pb + pe]
                 for o in range(len(axis))]
        peer = split_oracle(x, [whole], True).astype(np.float32)
        if np.allclose(peer, split_oracle(x, [axis], True), rtol=1e-6):
            continue
        named = diagnose_output(ENGINE, spec, x, peer, None)
        assert SPLIT_KEY not in named.atoms, (sizes, ks, ss, ds, pads, named)
        checked += 1
    assert checked > 5


# --------------------------------------------------------------------------- MaxPool, strides and dilations 1

PATH_KEY = "max:unit-step-common-path"


def unit_max_oracle(x: np.ndarray, ks: list[int], pads: list[int], ceil: int) -> tuple[np.ndarray, np.ndarray] | str:
    """onnx.reference 1.23's MaxPool with strides and dilations 1, from ``_op_common_pool.py``
    (``CommonPool._run``, ``_get_output_shape``, ``_pool``; ``_get_indices``, ``_get_index``).

    A 4-item ``pads`` (a 2-D input) is applied as ``(pad_top, pad_bottom, pad_left, pad_right)``
    with NaN; the output is ``P - k + 1`` (P: the padded size) or, with ceil_mode, ``P + pad
    total - k + 1``, of which the loop computes the first ``P - k + 1`` (the rest 0, index -1).
    Any other ``pads`` is not applied (``padded = x``) but its first items (the begin pads) enter
    the sizes: ``size - k + 1`` outputs without ceil_mode, ``size + pb - k + 1`` with it, the loop
    ``size + pb - k + 1`` windows starting at input position ``o`` (taps past the end skipped).
    Value: the largest number of the window; index: ``np.argmax`` of the window's values with NaN
    replaced by their smallest number, through ``_get_indices`` with the OUTPUT shape (no bound on
    axis 0), plus ``o - pads[:n]`` (the ONNX begin pads), through ``_get_index`` with the input's
    spatial shape. A string: what it raises."""
    sp, n = x.shape[2:], len(ks)
    xp = x.astype(np.float64)
    if n == 2:
        xp = np.pad(xp, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])), constant_values=np.nan)
        total = [pads[0] + pads[1], pads[2] + pads[3]]
        loop = [a - k + 1 for a, k in zip(xp.shape[2:], ks)]
        out = [a + b for a, b in zip(loop, total)] if ceil else loop
    else:
        loop = [s + b - k + 1 for s, b, k in zip(sp, pads[:n], ks)]
        out = loop if ceil else [s - k + 1 for s, k in zip(sp, ks)]
    if min(out) <= 0:
        return "RuntimeError"
    if any(a > b for a, b in zip(loop, out)):
        return "IndexError"
    y = np.zeros((*x.shape[:2], *out), dtype=x.dtype)
    z = np.full(y.shape, -1, dtype=np.int64)
    for nn, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*(range(v) for v in loop)):
            taps = [tuple(a + b for a, b in zip(o, j)) for j in itertools.product(*(range(k) for k in ks))]
            vals = np.array([xp[(nn, c, *q)] for q in taps if all(a < s for a, s in zip(q, xp.shape[2:]))])
            numbers = vals[~np.isnan(vals)]
            if not numbers.size:
                return "ValueError"
            arg = int(np.argmax(np.where(np.isnan(vals), numbers.min(), vals)))
            coords = [0] * n
            for i in range(n - 1, 0, -1):
                coords[i], arg = arg % out[i], arg // out[i]
            coords[0] = arg
            index, mul = 0, 1
            for i in range(n - 1, -1, -1):
                index += (coords[i] + o[i] - pads[i]) * mul
                mul *= sp[i]
            y[(nn, c, *o)], z[(nn, c, *o)] = numbers.max(), index
    return y, z


UNIT_1D = [((size,), [k], [pb, pe]) for size in range(1, 7) for k in (1, 2, 3) for pb in (0, 1, 2) for pe in (0, 1, 2)]
UNIT_3D = [(sizes, ks, pads) for sizes in ((2, 3, 2), (3, 1, 4)) for ks in ([1, 2, 2], [2, 1, 3], [2, 2, 1])
           for pads in ([0] * 6, [1, 0, 2, 0, 1, 0], [0, 1, 0, 1, 0, 2])]
UNIT_2D = [(sizes, ks, pads) for sizes in ((1, 2), (2, 3), (4, 2)) for ks in ([1, 2], [2, 2], [3, 1])
           for pads in ([0, 0, 0, 0], [0, 0, 0, 1], [1, 0, 0, 2], [2, 1, 1, 0], [0, 1, 2, 0])]


def _unit_spec(ks: list[int], pads: list[int], ceil: int) -> object:
    n = len(ks)
    return parse("MaxPool-22", {"kernel_shape": ks, "pads": pads, "ceil_mode": ceil, "strides": [1] * n,
                                "dilations": [1] * n})


def x_unit(sizes: tuple[int, ...]) -> np.ndarray:
    return (np.arange(2 * math.prod(sizes), dtype=np.float32) * 7 % 13 + 1).reshape(2, 1, *sizes)


def test_unit_step_max_variants_are_the_loop_oracle() -> None:
    """Where onnx.reference gives an output, the variant is the oracle written from its source
    (values and indices); where its loop overruns the output, the variant has none."""
    checked = 0
    for (sizes, ks, pads), ceil in itertools.product(UNIT_1D + UNIT_2D + UNIT_3D, (0, 1)):
        want = unit_max_oracle(x_unit(sizes), ks, pads, ceil)
        spec = _unit_spec(ks, pads, ceil)
        keys = [PATH_KEY]
        try:
            got = predict(ENGINE, spec, x_unit(sizes), keys)
        except Exception:  # the spec itself has no output here (kernel past the padded input)
            continue
        if want == "IndexError":
            assert got is None, (sizes, ks, pads, ceil)
            continue
        if isinstance(want, str):
            continue
        assert got is not None and got[1] is not None, (sizes, ks, pads, ceil)
        np.testing.assert_array_equal(got[0], want[0], err_msg=str((sizes, ks, pads, ceil)))
        np.testing.assert_array_equal(got[1], want[1], err_msg=str((sizes, ks, pads, ceil)))
        checked += 1
    assert checked > 100


def test_unit_step_max_replays_onnx_reference_exactly_on_a_grid() -> None:
    """ReferenceEvaluator's own values and indices (with the oracle's refusals) are reproduced
    exactly by the variant, and the diagnosis explains them all, naming it wherever a pad or an
    index differs from the spec beyond what index:per-plane says."""
    named = 0
    for (sizes, ks, pads), ceil in itertools.product(UNIT_1D + UNIT_2D + UNIT_3D, (0, 1)):
        x = x_unit(sizes)
        n = len(ks)
        attrs = {"kernel_shape": ks, "pads": pads, "ceil_mode": ceil, "strides": [1] * n, "dilations": [1] * n}
        want = unit_max_oracle(x, ks, pads, ceil)
        try:
            v, i = onnx_reference_run("MaxPool", x, outputs=2, **attrs)
        except (IndexError, ValueError, RuntimeError) as e:
            assert isinstance(want, str), (sizes, attrs, e)  # the oracle refuses too
            continue
        assert not isinstance(want, str)
        np.testing.assert_array_equal(v, want[0])
        np.testing.assert_array_equal(i, want[1])
        try:
            spec = parse("MaxPool-22", attrs)
            r = replay(ENGINE, spec, x, [PATH_KEY], v, i)
        except Exception:  # the spec itself has no output here
            continue
        assert r is not None and r.exact, (sizes, attrs)
        d = diagnose_output(ENGINE, spec, x, v, i)
        assert d.explained, (sizes, attrs, d)
        named += PATH_KEY in d.atoms
    assert named > 50


def test_the_registry_examples_of_the_unit_step_path() -> None:
    """The registry's two examples: kernel [3], pads [1, 0], ceil_mode on [1, 2] -- onnx.reference's
    index 0 is the element at position 1 minus pads_begin; kernel [1, 2] on [[1, 2]] -- its index 2
    is the window rank 1 unraveled with the output shape (1, 1) as row 1, column 0. Both named."""
    x = np.array([[[1.0, 2.0]]], dtype=np.float32)
    attrs = {"kernel_shape": [3], "pads": [1, 0], "ceil_mode": 1}
    v, i = onnx_reference_run("MaxPool", x, outputs=2, **attrs)
    assert v.ravel().tolist() == [2.0] and i.ravel().tolist() == [0]  # measured; the spec's index is 1
    d = diagnose_output(ENGINE, parse("MaxPool-22", attrs), x, v, i)
    assert d.explained and PATH_KEY in d.atoms, d

    x = np.array([[[[1.0, 2.0]]]], dtype=np.float32)
    v, i = onnx_reference_run("MaxPool", x, outputs=2, kernel_shape=[1, 2])
    assert v.ravel().tolist() == [2.0] and i.ravel().tolist() == [2]  # measured; the spec's index is 1
    d = diagnose_output(ENGINE, parse("MaxPool-22", {"kernel_shape": [1, 2]}), x, v, i)
    assert d.explained and d.klass == PATH_KEY, d


def test_unit_step_max_with_nan_is_explained_on_a_grid() -> None:
    """NaN elements: onnx.reference takes the largest number (nan=ignore) and its argmax sees NaN
    as the window's smallest number, so a window whose numbers are all equal reports rank 0 --
    still exactly the variants (with the NaN policy the search adds)."""
    explained = 0
    for (sizes, ks, pads), ceil in itertools.product(UNIT_1D + UNIT_2D, (0, 1)):
        x = x_unit(sizes)
        x.ravel()[1::3] = np.nan
        n = len(ks)
        attrs = {"kernel_shape": ks, "pads": pads, "ceil_mode": ceil, "strides": [1] * n, "dilations": [1] * n}
        try:
            v, i = onnx_reference_run("MaxPool", x, outputs=2, **attrs)
            spec = parse("MaxPool-22", attrs)
            predict(ENGINE, spec, x, [])
        except Exception:  # the runtime refuses, or the spec has no output here
            continue
        d = diagnose_output(ENGINE, spec, x, v, i)
        assert d.explained, (sizes, attrs, d)
        explained += PATH_KEY in d.atoms
    assert explained > 30


def test_a_peer_following_the_spec_or_counting_per_plane_is_not_given_the_unit_step_names() -> None:
    """The spec's own output is 'same'; per-plane indices with the spec's windows keep
    index:per-plane (in 1-D without pads the rule gives the same numbers: the layout is named
    first); strided configurations (onnx.reference's _max_pool) never get the names."""
    for (sizes, ks, pads), ceil in itertools.product(UNIT_1D + UNIT_2D + UNIT_3D, (0, 1)):
        x = x_unit(sizes)
        try:
            spec = _unit_spec(ks, pads, ceil)
            own = predict(ENGINE, spec, x, [])
        except Exception:
            continue
        assert own is not None and own[1] is not None
        assert diagnose_output(ENGINE, spec, x, *own).klass == "same"
        plane = math.prod(sizes)
        per_plane = np.where(own[1] >= 0, own[1] % plane, own[1])
        if not np.array_equal(per_plane, own[1]):
            d = diagnose_output(ENGINE, spec, x, own[0], per_plane)
            assert d.klass == "index:per-plane", (sizes, ks, pads, ceil, d)
    gv = next(g for g in GEOMETRY_VARIANTS if g.key == PATH_KEY)
    assert gv.applies(parse("MaxPool-22", {"kernel_shape": [2, 2], "pads": [1, 0, 0, 1]}))
    assert gv.applies(parse("MaxPool-22", {"kernel_shape": [2], "auto_pad": "VALID"}))
    assert not gv.applies(parse("MaxPool-22", {"kernel_shape": [2], "pads": [1, 0], "strides": [2]}))  # _max_pool
    assert not gv.applies(parse("MaxPool-22", {"kernel_shape": [2], "dilations": [2]}))
    assert not gv.applies(parse("MaxPool-22", {"kernel_shape": [2], "auto_pad": "SAME_UPPER"}))
    assert not gv.applies(parse("AveragePool-22", {"kernel_shape": [2], "pads": [1, 0]}))
    # outside its path it predicts nothing (a neighbour with a stride is onnx.reference's _max_pool)
    assert predict(ENGINE, parse("MaxPool-22", {"kernel_shape": [2], "pads": [1, 0], "strides": [2]}),
                   x_unit((5,)), [PATH_KEY]) is None


def test_a_same_stride_risk_points_at_the_refusal_registry_entry() -> None:
    """`poolcheck audit` points an average with SAME and a stride past the kernel at the registry
    entries of its risks: onnx.reference's refusal is one (its name says 'negative SAME pad total',
    not 'same:')."""
    from poolcheck.corpus import KNOWN_DIR
    from poolcheck.fuzz.known import known_entries
    from poolcheck.models.risk import Risk, known_matches

    entries, errors = known_entries([KNOWN_DIR])
    assert not errors
    for risk in (Risk.SAME_STRIDE, Risk.SAME_NEGATIVE_PADS):
        found = {m.signature for m in known_matches("avg", [risk], entries)}
        assert f"peer|avg|onnx_reference|{NEG_KEY}" in found, risk


def test_unit_step_indices_in_an_openvino_axis_scope() -> None:
    """An OpenVINO-convention spec (MaxPool-14, axis -1) reaches onnx.reference through the ONNX
    adapter, which wraps ONNX's index by the axis scope: the rule's numbers go through the same
    wrap (the seed-21 campaign's find: ReferenceEvaluator's 11 is the adapter's 2)."""
    pytest.importorskip("onnx.reference")
    from poolcheck.peers.onnx_reference_peer import OnnxReferencePeer

    spec = A.openvino_max_pool([6, 3], [1, 1], [2, 0], [2, 0], axis=-1)
    x = -np.arange(1, 37, dtype=np.float32).reshape(3, 1, 4, 3)
    x[1, 0, 3, :2] = [np.inf, -np.inf]
    raw = onnx_reference_run("MaxPool", x, outputs=2, kernel_shape=[6, 3], pads=[2, 0, 2, 0])[1]
    assert raw[1].ravel().tolist() == [11, 11, 11]  # measured: row 3, column 2 of the plane
    out = OnnxReferencePeer().run(spec, x)
    assert out.indices is not None and out.indices[1].ravel().tolist() == [2, 2, 2]  # 11 % 3
    d = diagnose_output(ENGINE, spec, x, out.values, out.indices)
    assert d.explained and PATH_KEY in d.atoms, d


def test_a_split_that_shifts_every_window_off_a_one_element_axis_is_named() -> None:
    """A one-element axis, pads (3, 0), kernel 2 dilated by 2, stride 3, ceil_mode 1: the extra
    padding split half before the input shifts the last window off the element, so the variant's
    crop leaves the axis none. The C engine refuses such a geometry (every axis holds an element
    there) and the average rule's engine call raised its ValueError out of the diagnosis, ending a
    90 s every-peer campaign (seed 27, bfloat16); the NumPy engine computes it, and the cause is
    named."""
    attrs = {"kernel_shape": [2, 2], "strides": [3, 1], "dilations": [2, 1], "pads": [3, 0, 0, 1], "ceil_mode": 1,
             "count_include_pad": 1}
    x = np.arange(1.0, 7.0, dtype=np.float32).reshape(1, 2, 1, 3)
    got = onnx_reference_run("AveragePool", x, **attrs)[0]
    spec = parse("AveragePool-22", attrs)
    c_engine = get_engine("c")  # the campaign's reference engine
    assert replay(c_engine, spec, x, [], got, None) is not None  # the spec differs: there is something to name
    r = replay(c_engine, spec, x, [SPLIT_KEY], got, None)
    assert r is not None and r.exact and r.x.shape[2] == 0, r
    d = diagnose_output(c_engine, spec, x, got, None)
    assert d.explained and d.klass == SPLIT_KEY, d


def test_a_max_over_an_axis_without_element_is_the_empty_window_everywhere() -> None:
    """The same crop under a max: every window is padding only, its value and index the empty
    window's under the policy re-run (the spec's -inf and -1; a variant's lowest value)."""
    from poolcheck.fuzz.diagnosis.rerun import _run
    from poolcheck.spec.policy import SPEC
    from poolcheck.spec.shape import AxisGeometry, Geometry

    spec = A.onnx_max_pool([2, 2], [3, 1], [3, 0, 0, 1], [2, 1], 1)
    geom = Geometry(1, 2, (AxisGeometry(0, 2, 3, 2, 4, 0, 2), AxisGeometry(3, 2, 1, 1, 0, 1, 3)))
    x = np.zeros((1, 2, 0, 3), dtype=np.float16)
    out = _run(get_engine("c"), spec, x, geom, SPEC)
    assert out.values.dtype == np.float16 and (out.values == -np.inf).all() and (out.indices == -1).all()
    lowest = _run(get_engine("c"), spec, x, geom, SPEC.replace(empty_max="lowest"))
    assert (lowest.values == np.float16(-65504)).all()
