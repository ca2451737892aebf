"""onnx.reference's AveragePool with NaN in a window (``avg=nan-skipped``), judged with the
average rule's tolerance.

onnx 1.23's ``op_pool_common.py`` pads an AveragePool with NaN when ``count_include_pad`` is 0 and
averages ``np.average(window_vals[np.where(~np.isnan(window_vals))])``: NaN inputs are dropped
like the padding (neither summed nor counted); with ``count_include_pad`` 1 it pads with 0 and
averages every element, so a NaN gives NaN. ``np.average`` sums in its own order (pairwise, in the
input type), so its result may differ from a float64 box sum by an ulp: the diagnosis must judge
the variant's re-run with the average rule's tolerance of an average over the window's other
elements. It used to take the engine's mean |x| under that setting, which is NaN at a window
holding a NaN: no tolerance there, and the reference's last-bit differences were left
``unexplained values (window with NaN)`` (37 configurations of a 60 s seed-21 campaign).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from support import onnx_reference_run

from poolcheck.engines import get_engine
from poolcheck.fuzz.diagnosis import diagnose_output, predict
from poolcheck.spec.operators import parse

ENGINE = get_engine("numpy")
KEY = "avg=nan-skipped"


def nan_skipped_loops(x: np.ndarray, k: tuple[int, ...], s: tuple[int, ...], pb: tuple[int, ...],
                      pe: tuple[int, ...]) -> np.ndarray:
    """The rule read off onnx's source, as loops (2-D, floor rounding): the mean, in exact
    arithmetic (math.fsum), of the window's input elements that are not NaN; NaN when none is."""
    n_, c_, h, w = x.shape
    oh = (h + pb[0] + pe[0] - k[0]) // s[0] + 1
    ow = (w + pb[1] + pe[1] - k[1]) // s[1] + 1
    out = np.zeros((n_, c_, oh, ow))
    for n, c, i, j in itertools.product(range(n_), range(c_), range(oh), range(ow)):
        vals = [float(x[n, c, a, b]) for a in range(i * s[0] - pb[0], i * s[0] - pb[0] + k[0])
                for b in range(j * s[1] - pb[1], j * s[1] - pb[1] + k[1])
                if 0 <= a < h and 0 <= b < w and not math.isnan(x[n, c, a, b])]
        out[n, c, i, j] = math.fsum(vals) / len(vals) if vals else math.nan
    return out


def grid(count: int, seed: int, dtype: str = "float32"):  # type: ignore[no-untyped-def]
    """2-D configurations with NaN in some windows; inputs of many significant bits, so that a
    sum's order shows in the last bit."""
    rng = np.random.default_rng(seed)
    made = 0
    while made < count:
        k = tuple(int(v) for v in rng.integers(2, 6, 2))
        s = tuple(int(v) for v in rng.integers(1, 3, 2, endpoint=True))
        pb = tuple(int(rng.integers(0, kk - 1, endpoint=True)) for kk in k)
        pe = tuple(int(rng.integers(0, kk - 1, endpoint=True)) for kk in k)
        sizes = tuple(int(v) for v in rng.integers(max(k), 9, 2, endpoint=True))
        x = (rng.random((1, 2, *sizes)) * 10 - 3).astype(dtype)
        x[rng.random(x.shape) < 0.12] = np.nan
        if not np.isnan(x).any():
            continue
        made += 1
        yield x, k, s, pb, pe


def spec_of(k: tuple[int, ...], s: tuple[int, ...], pb: tuple[int, ...], pe: tuple[int, ...], exclude: bool = True):  # type: ignore[no-untyped-def]
    return parse("AveragePool-22", {"kernel_shape": list(k), "strides": list(s), "pads": list(pb + pe),
                                    "count_include_pad": 0 if exclude else 1})


def test_the_variant_is_the_loop_rule() -> None:
    for x, k, s, pb, pe in grid(30, 1, "float64"):
        got = predict(ENGINE, spec_of(k, s, pb, pe), x, [KEY])
        assert got is not None
        want = nan_skipped_loops(x, k, s, pb, pe)
        assert np.allclose(got[0], want, rtol=1e-12, atol=0, equal_nan=True), (x.shape, k, s, pb, pe)


def test_a_sum_in_another_order_is_named_with_no_remainder() -> None:
    """Planted: the NaN-skipped average summed in reverse order in float32 (an ulp away from the
    float64 box sum in some windows) is named avg=nan-skipped, nothing left unexplained."""
    off = 0
    for x, k, s, pb, pe in grid(40, 2):
        want = nan_skipped_loops(x, k, s, pb, pe)
        peer = np.zeros(want.shape, dtype=np.float32)
        h, w = x.shape[2:]
        for n, c, i, j in itertools.product(*map(range, want.shape)):
            vals = [x[n, c, a, b] for a in range(i * s[0] - pb[0], i * s[0] - pb[0] + k[0])
                    for b in range(j * s[1] - pb[1], j * s[1] - pb[1] + k[1])
                    if 0 <= a < h and 0 <= b < w and not np.isnan(x[n, c, a, b])]
            acc = np.float32(0)
            for v in reversed(vals):
                acc = np.float32(acc + v)
            peer[n, c, i, j] = acc / np.float32(len(vals)) if vals else np.nan
        off += int((peer != want.astype(np.float32)).sum())
        d = diagnose_output(ENGINE, spec_of(k, s, pb, pe), x, peer, None)
        assert d.explained and d.klass == KEY, (x.shape, k, s, pb, pe, d.klass)
    assert off > 0  # the planted peer does differ from the exact mean in the last bit


def test_a_wrong_divisor_is_not_given_the_name() -> None:
    """Planted: NaN dropped from the sum but still counted in the divisor is not avg=nan-skipped
    (the tolerance covers rounding, not another divisor)."""
    for x, k, s, pb, pe in grid(20, 3, "float64"):
        clean = np.where(np.isnan(x), 0.0, x)
        wrong = predict(ENGINE, spec_of(k, s, pb, pe), clean, [])
        assert wrong is not None
        want = nan_skipped_loops(x, k, s, pb, pe)
        if np.allclose(wrong[0], want, equal_nan=True):
            continue
        d = diagnose_output(ENGINE, spec_of(k, s, pb, pe), x, wrong[0], None)
        assert KEY not in d.atoms or not d.explained, (x.shape, k, s, pb, pe, d.klass)


onnx_ref = pytest.importorskip("onnx.reference")


def test_onnx_reference_follows_the_rule_and_is_named() -> None:
    """ReferenceEvaluator called plainly (a model built with onnx.helper): count_include_pad 0
    equals the loop rule within float32 rounding and is named avg=nan-skipped with no
    remainder; count_include_pad 1 gives NaN wherever a window holds a NaN."""
    named = exact = 0
    for x, k, s, pb, pe in grid(60, 4):
        attrs = {"kernel_shape": list(k), "strides": list(s), "pads": list(pb + pe)}
        (got,) = onnx_reference_run("AveragePool", x, count_include_pad=0, **attrs)
        want = nan_skipped_loops(x, k, s, pb, pe)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
        exact += int(np.array_equal(got, want.astype(np.float32), equal_nan=True))
        d = diagnose_output(ENGINE, spec_of(k, s, pb, pe), x, got, None)
        assert d.explained and "unexplained" not in d.klass, (x.shape, k, s, pb, pe, d.klass)
        named += d.klass == KEY
        (inc,) = onnx_reference_run("AveragePool", x, count_include_pad=1, **attrs)
        nan_window = np.isnan(predict(ENGINE, spec_of(k, s, pb, pe, exclude=False), x, [])[0])  # type: ignore[index]
        assert np.array_equal(np.isnan(inc), nan_window)
    assert named > 40 and exact < 60  # most windows hold a NaN; some outputs are an ulp off the exact mean


def test_with_a_float32_sum_overflowing_both_names_combine() -> None:
    """NaN in one plane, two FLT_MAX in a window of another: np.average drops the NaN and sums
    the float32 elements in float32 (inf); the two variants, each in its own policy field,
    combine into one verified explanation (as ``avg=nan-skipped`` they could not: both set
    ``Policy.nan``, and the combination was left unexplained)."""
    big = float(np.finfo(np.float32).max)
    x = np.arange(1, 29, dtype=np.float32).reshape(2, 1, 14, 1)
    x[0, 0, 5, 0] = x[0, 0, 12, 0] = np.nan
    x[1, 0, 6, 0] = x[1, 0, 11, 0] = big
    attrs = {"kernel_shape": [6, 1], "strides": [1, 2], "pads": [0, 0, 2, 0], "ceil_mode": 1}
    (got,) = onnx_reference_run("AveragePool", x, count_include_pad=0, **attrs)
    assert np.isinf(got[1]).any() and not np.isnan(got[0]).any()
    spec = parse("AveragePool-22", {**attrs, "count_include_pad": 0})
    d = diagnose_output(ENGINE, spec, x, got, None)
    assert d.explained and set(d.atoms) == {KEY, "avg=input-type-sum"}, d
    alone = predict(ENGINE, spec, x, [KEY])
    assert alone is not None and not np.isinf(alone[0]).any()  # the NaN rule alone does not overflow
