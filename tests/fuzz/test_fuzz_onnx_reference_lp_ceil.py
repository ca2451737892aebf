"""onnx.reference's LpPool with explicit pads and ceil_mode (``lp:ceil-window-rescaled``, with
``rounding:ceil-extra-pad-split`` where the last window needs two or more elements of extra
padding), and with NaN inputs (``lp:nan-skipped-rescaled``).

onnx 1.23's ``op_lp_pool.py`` runs the AVG path of ``op_pool_common.py`` on ``|x|^p`` and
multiplies by the kernel size: padding is 0 and counted, the extra padding a ceil window needs is
added half before the input, a window's taps stop at ``size + pads_begin + pads_end`` in the
padded coordinates, and the average over the taps left is scaled back up by kernel size / taps.
``lp:ceil-window-rescaled`` used to count only the taps inside the input, so a ceil window that
also touched an explicit pad was left unexplained; NaN inputs, dropped by the AVG path and
scaled over, were unexplained everywhere. The oracle below is that source read as loops
(not poolcheck's code), checked against ReferenceEvaluator called plainly.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from support import onnx_reference_run

from poolcheck.fuzz.diagnosis.family import _expected, _lp_combination, agrees, diagnose_family
from poolcheck.spec.operators import parse

KEY = "lp:ceil-window-rescaled"
SPLIT = "rounding:ceil-extra-pad-split"


def reference_axis(size: int, k: int, s: int, d: int, pb: int, pe: int, ceil: int) -> tuple[int, int, int]:
    """``get_output_shape_explicit_padding`` for one axis: the output size, the extra padding put
    before the input (``extra // 2``), and where a window's taps stop (padded coordinates)."""
    span = d * (k - 1) + 1
    f = (size + pb + pe - span) / s + 1
    out = int(np.ceil(f)) if ceil else int(np.floor(f))
    if ceil and (out - 1) * s >= size + pb:
        out -= 1
    extra = (out - 1) * s + span - size - pb - pe
    return out, extra // 2 if extra > 0 else 0, size + pb + pe


def reference_loops(x: np.ndarray, k: list[int], s: list[int], d: list[int], pb: list[int], pe: list[int],
                    ceil: int, p: int) -> np.ndarray:
    """onnx 1.23's LpPool as loops: per window, the mean of |x|^p over its taps below the stop
    (padding 0) that are not NaN, times prod(kernel), to the power 1/p (NaN when no tap is left)."""
    axes = [reference_axis(*a, ceil) for a in zip(x.shape[2:], k, s, d, pb, pe)]
    y = np.zeros(x.shape[:2] + tuple(a[0] for a in axes))
    for n, c, *o in itertools.product(*map(range, y.shape)):
        taps = [[j - b - shift for j in range(oo * ss, oo * ss + dd * (kk - 1) + 1, dd) if j < stop]
                for oo, kk, ss, dd, b, (_, shift, stop) in zip(o, k, s, d, pb, axes)]
        vals = [abs(float(x[(n, c, *t)])) ** p if all(0 <= v < m for v, m in zip(t, x.shape[2:])) else 0.0
                for t in itertools.product(*taps)]
        vals = [v for v in vals if not math.isnan(v)]
        y[(n, c, *o)] = (math.prod(k) * math.fsum(vals) / len(vals)) ** (1.0 / p) if vals else math.nan
    return y


def grid():  # type: ignore[no-untyped-def]
    """1-D configurations with explicit pads (< kernel), and a few 2-D ones."""
    rng = np.random.default_rng(0)
    for size, k, s, d, pb, pe, ceil, p in itertools.product(range(1, 7), (2, 3), (1, 2, 3), (1, 2), (0, 1, 2),
                                                           (0, 1, 2), (0, 1), (1, 2, 3)):
        if pb < k and pe < k and size + pb + pe >= d * (k - 1) + 1 and (size + k + s + pb + pe + p) % 3 == 0:
            yield (rng.random((1, 2, size)) * 4 + 0.5).astype(np.float32), [k], [s], [d], [pb], [pe], ceil, p
    made = 0
    while made < 30:
        k = [int(v) for v in rng.integers(2, 4, 2)]
        s = [int(v) for v in rng.integers(1, 4, 2)]
        pb = [int(rng.integers(0, kk)) for kk in k]
        pe = [int(rng.integers(0, kk)) for kk in k]
        sizes = tuple(int(v) for v in rng.integers(2, 7, 2))
        if any(n + b + e < kk for n, b, e, kk in zip(sizes, pb, pe, k)):
            continue
        made += 1
        yield (rng.random((1, 1, *sizes)) * 4 + 0.5).astype(np.float32), k, s, [1, 1], pb, pe, 1, int(rng.integers(1, 4))


def attrs_of(k, s, d, pb, pe, ceil, p):  # type: ignore[no-untyped-def]
    return {"kernel_shape": k, "strides": s, "dilations": d, "pads": pb + pe, "ceil_mode": ceil, "p": p}


def test_the_variants_are_the_loop_rule() -> None:
    """Where the ceil window needs extra padding, the split placement with the rescale (or the
    rescale alone) equals the oracle; explicit pads are counted as taps."""
    padded = 0
    for x, k, s, d, pb, pe, ceil, p in grid():
        if not ceil:
            continue
        spec = parse("LpPool-22", attrs_of(k, s, d, pb, pe, ceil, p))
        want = reference_loops(x, k, s, d, pb, pe, ceil, p)
        got = _lp_combination(spec, x, (SPLIT, KEY))
        assert got is not None and np.allclose(got[0], want, rtol=2e-6), (x.shape, k, s, d, pb, pe, p)
        padded += any(pb + pe)
    assert padded > 20


onnx_ref = pytest.importorskip("onnx.reference")


def test_onnx_reference_is_the_rule_and_is_named() -> None:
    """ReferenceEvaluator called plainly equals the oracle on every configuration; every ceil
    configuration that differs from the spec is named by the rescale (alone or after the split),
    none is unexplained; a floor configuration never differs."""
    named = touching = 0
    for x, k, s, d, pb, pe, ceil, p in grid():
        attrs = attrs_of(k, s, d, pb, pe, ceil, p)
        (got,) = onnx_reference_run("LpPool", x, **attrs)
        want = reference_loops(x, k, s, d, pb, pe, ceil, p)
        assert got.shape == want.shape and np.allclose(got, want, rtol=2e-6), (x.shape, attrs)
        spec = parse("LpPool-22", attrs)
        expected = _expected(spec, x)
        if expected[0].shape == got.shape and np.allclose(expected[0], got, rtol=2e-6):
            continue
        assert ceil, attrs
        found = diagnose_family(spec, x, None, expected, (got, None))
        assert found and found[0] in (KEY, f"{SPLIT}+{KEY}"), (x.shape, attrs, found)
        named += 1
        touching += any(pb + pe)
    assert named > 40 and touching > 20


def test_a_peer_rescaling_by_the_input_taps_only_is_not_named() -> None:
    """Planted: the old model (the rescale counting only the taps inside the input) differs from
    the reference where a ceil window also touches a pad, and is not given the rescale's name."""
    x = np.array([[[1.5, 2.5, 3.5, 4.5]]], dtype=np.float32)
    attrs = attrs_of([3], [2], [1], [1], [1], 1, 2)  # windows [-1, 2), [1, 4), [3, 6): the last past the pad
    spec = parse("LpPool-22", attrs)
    (got,) = onnx_reference_run("LpPool", x, **attrs)
    sq = x.astype(np.float64)[0, 0] ** 2
    # input taps only: window 0 holds 2 of the input (1 pad), window 2 holds 1 input + 1 pad
    planted = np.sqrt(np.array([sq[0] + sq[1], sq[1] + sq[2] + sq[3], sq[3]]) * 3 / np.array([2, 3, 1]))
    assert not np.allclose(planted, got[0, 0], rtol=1e-5)
    found = diagnose_family(spec, x, None, _expected(spec, x), (planted.reshape(1, 1, 3).astype(np.float32), None))
    assert KEY not in found and f"{SPLIT}+{KEY}" not in found, found


def test_onnx_reference_skips_nan_and_rescales() -> None:
    """NaN inputs: the AVG path drops them (``np.average(window_vals[~isnan])``) and the product
    with the kernel size scales the rest back up (``lp:nan-skipped-rescaled``, with the ceil
    rescale where a window also passes the padded input); the oracle, ReferenceEvaluator and the
    diagnosis agree on every configuration, nothing unexplained."""
    from poolcheck.results import Severity
    from poolcheck.spec.severity import severity_of

    rng = np.random.default_rng(5)
    named = both = 0
    for x, k, s, d, pb, pe, ceil, p in grid():
        x = x.copy()
        x[rng.random(x.shape) < 0.25] = np.nan
        attrs = attrs_of(k, s, d, pb, pe, ceil, p)
        (got,) = onnx_reference_run("LpPool", x, **attrs)
        want = reference_loops(x, k, s, d, pb, pe, ceil, p)
        assert np.allclose(got, want, rtol=2e-6, equal_nan=True), (x.shape, attrs)
        spec = parse("LpPool-22", attrs)
        expected = _expected(spec, x)
        if np.allclose(expected[0], got, rtol=2e-6, equal_nan=True):
            continue
        found = diagnose_family(spec, x, None, expected, (got, None))
        assert found and ("lp:nan-skipped-rescaled" in found[0] or found[0] in (KEY, f"{SPLIT}+{KEY}")), (attrs, found)
        named += "lp:nan-skipped-rescaled" in found[0]
        both += "+" in found[0] and "lp:nan-skipped-rescaled" in found[0]
    assert named > 40 and both > 5
    assert severity_of(("lp:nan-skipped-rescaled",), parse("LpPool-22", {"kernel_shape": [2]})) is Severity.UNSPECIFIED



def reference_float16(x: np.ndarray, k: int, p: int) -> np.ndarray:
    """onnx 1.23's LpPool of a float16 input, unpadded, stride = kernel: ``np.power`` rounds each
    |x|^p to float16 (inf past 65504), ``np.average`` sums in float32 and rounds the mean to
    float16, the ``np.int64`` kernel size times it is float64, and so is the root, rounded last."""
    with np.errstate(over="ignore"):
        terms = np.power(np.abs(x.astype(np.float32)), p).astype(np.float16)
        windows = terms.reshape(*x.shape[:2], -1, k).astype(np.float32)
        mean = np.mean(windows, axis=-1).astype(np.float16)
        return ((k * mean.astype(np.float64)) ** (1.0 / p)).astype(np.float16)


def run_float16(x: np.ndarray, **attrs: object) -> np.ndarray:
    """ReferenceEvaluator on a float16 model (support.onnx_reference_run builds float32 ones)."""
    import warnings

    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("LpPool", ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(ReferenceEvaluator(model).run(None, {"x": x})[0])


def test_onnx_reference_float16_terms_and_average_in_float16() -> None:
    """float16: a window whose float64 sum of |x|^p passes 65504 is finite in onnx.reference when
    no term and not the average does, while a window holding a term past 65504 is inf:
    ``lp:input-type-overflow`` (inf wherever the sum passes) cannot reproduce both in one example,
    only ``lp:input-type-average`` does; nothing is unexplained."""
    rng = np.random.default_rng(7)
    only_average = 0
    for _ in range(80):  # p = 3 and |x| up to 46: some terms pass 65504 (41^3), some sums only
        k, p = int(rng.integers(2, 5)), 3
        x = (rng.random((1, 1, 4 * k)) * 92 - 46).astype(np.float16)
        attrs = {"kernel_shape": [k], "strides": [k], "p": p}
        got = run_float16(x, **attrs)
        assert np.array_equal(got, reference_float16(x, k, p), equal_nan=True), (x, k, p)
        spec = parse("LpPool-22", attrs)
        expected = _expected(spec, x)
        if agrees(spec, x, expected, (got, None)):  # within the Lp rule: no divergence
            continue
        found = diagnose_family(spec, x, None, expected, (got, None))
        assert found, (x, k, p)
        wide = (np.abs(x.astype(np.float64)) ** p).reshape(1, 1, -1, k).sum(axis=-1)
        if ((wide > 65504) & np.isfinite(got.astype(np.float64))).any():
            # named so (the signed sum's own wide bound may also admit it: an alternative, not the name)
            assert found[0] == "lp:input-type-average" and "lp:input-type-overflow" not in found, (x, k, p, found)
            only_average += 1
    assert only_average > 5
