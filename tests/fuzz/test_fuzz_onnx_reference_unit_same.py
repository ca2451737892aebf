"""onnx.reference 1.23's MaxPool with strides and dilations 1 under SAME on a 2-D input
(``_op_common_pool.py``: ``CommonPool._run`` pads as the spec does, ``_pool`` ranks the chosen
element in its window, unravels the rank with the OUTPUT shape and adds the output position minus
the ``pads`` attribute, absent under SAME): the values are the spec's, the indices are
``max:unit-step-common-path``'s. Checked against a loop oracle written here from that source, and
against ReferenceEvaluator called plainly (skipped without onnx); a peer following the spec is not
given the name. Found as "unexplained indices (window touching padding)" in a 30 s every-peer
campaign (seed 2)."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np
from support import onnx_reference_run

from poolcheck.engines import get_engine
from poolcheck.errors import AttributeValueError
from poolcheck.fuzz.diagnosis import diagnose_output, predict, replay
from poolcheck.fuzz.reference import expected_for
from poolcheck.spec.operators import parse
from poolcheck.spec.shape import resolve

ENGINE = get_engine("numpy")
KEY = "max:unit-step-common-path"
GRID = [(sizes, ks, mode) for sizes in ((1, 3), (4, 2), (5, 5), (8, 4)) for ks in ([1, 2], [2, 2], [3, 1], [4, 3], [16, 1])
        for mode in ("SAME_UPPER", "SAME_LOWER")]


def oracle(x: np.ndarray, ks: list[int], mode: str) -> tuple[np.ndarray, np.ndarray]:
    """From the source: out = size (stride 1); pad total = (out - 1) + k - size; SAME_LOWER
    puts total // 2 at the end and the rest first, SAME_UPPER total // 2 first; NaN padding;
    each window's argmax (NaN as the smallest number) unraveled with the output shape, plus the
    output position (the ``pads`` attribute is zeros), raveled with the input's shape."""
    sp = x.shape[2:]
    pads = []
    for size, k in zip(sp, ks):
        total = (size - 1) + k - size
        tail = total // 2 if mode == "SAME_LOWER" else total - total // 2
        pads.append((total - tail, tail))
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), *pads), constant_values=np.nan)
    y = np.zeros(x.shape, dtype=x.dtype)
    z = np.zeros(x.shape, dtype=np.int64)
    for n, c, *o in itertools.product(*(range(v) for v in x.shape)):
        vals = np.array([xp[(n, c, o[0] + a, o[1] + b)] for a, b in itertools.product(range(ks[0]), range(ks[1]))])
        numbers = vals[~np.isnan(vals)]
        arg = int(np.argmax(np.where(np.isnan(vals), numbers.min(), vals)))
        row, col = arg // sp[1], arg % sp[1]  # unraveled with the output's shape (= the input's here)
        y[n, c, o[0], o[1]] = numbers.max()
        z[n, c, o[0], o[1]] = (row + o[0]) * sp[1] + (col + o[1])
    return y, z


def x_of(sizes: tuple[int, ...]) -> np.ndarray:
    return (np.random.default_rng(3).permutation(2 * math.prod(sizes)) - 7).astype(np.float32).reshape(2, 1, *sizes)


def _spec(ks: list[int], mode: str) -> object:
    return parse("MaxPool-22", {"kernel_shape": ks, "auto_pad": mode, "strides": [1, 1], "dilations": [1, 1]})


def test_the_variant_is_the_oracle_on_a_grid() -> None:
    for sizes, ks, mode in GRID:
        x = x_of(sizes)
        got = predict(ENGINE, _spec(ks, mode), x, [KEY])
        want = oracle(x, ks, mode)
        assert got is not None and got[1] is not None, (sizes, ks, mode)
        np.testing.assert_array_equal(got[0], want[0], err_msg=str((sizes, ks, mode)))
        np.testing.assert_array_equal(got[1], want[1], err_msg=str((sizes, ks, mode)))


def test_onnx_reference_called_plainly_is_the_oracle_and_is_named() -> None:
    named = 0
    for sizes, ks, mode in GRID:
        x = x_of(sizes)
        attrs = {"kernel_shape": ks, "auto_pad": mode, "strides": [1, 1], "dilations": [1, 1]}
        v, i = onnx_reference_run("MaxPool", x, outputs=2, **attrs)
        want = oracle(x, ks, mode)
        np.testing.assert_array_equal(v, want[0])
        np.testing.assert_array_equal(i, want[1])
        spec = _spec(ks, mode)
        r = replay(ENGINE, spec, x, [KEY], v, i)
        assert r is not None and r.exact, (sizes, ks, mode)
        d = diagnose_output(ENGINE, spec, x, v, i)
        assert d.explained, (sizes, ks, mode, d)
        named += KEY in d.atoms
    assert named > 10


def test_ceil_mode_changes_nothing_under_same_on_the_unit_step_path() -> None:
    """SAME's output size is ceil(size / stride) with or without ceil_mode, and with stride 1 the
    loop's ceil and floor agree: ceil_mode=1 (an OpenVINO same_upper spec with ceil rounding, as
    the peer translates it) takes the same path and index rule. A 60 s campaign (seed 13) had
    it 'unexplained indices (window touching padding)', a violation."""
    named = 0
    for sizes, ks, mode in GRID:
        x = x_of(sizes)
        attrs = {"kernel_shape": ks, "auto_pad": mode, "strides": [1, 1], "dilations": [1, 1], "ceil_mode": 1}
        v, i = onnx_reference_run("MaxPool", x, outputs=2, **attrs)
        want = oracle(x, ks, mode)
        np.testing.assert_array_equal(i, want[1])
        spec = parse("MaxPool-22", attrs)
        r = replay(ENGINE, spec, x, [KEY], v, i)
        assert r is not None and r.exact, (sizes, ks, mode)
        named += KEY in diagnose_output(ENGINE, spec, x, v, i).atoms
    assert named > 10
    ov = parse("MaxPool-14", {"kernel": [3, 2], "strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0],
                              "rounding_type": "ceil", "auto_pad": "same_upper"})
    x = np.array([[[[1.0, 2.0]]]], dtype=np.float32)  # the campaign's example: index 3, not 1
    d = diagnose_output(ENGINE, ov, x, x[..., 1:].repeat(2, axis=-1), np.array([[[[3, 1]]]]))
    assert d.explained and KEY in d.atoms, d


def test_a_peer_following_the_spec_is_not_given_the_name() -> None:
    for sizes, ks, mode in GRID:
        x = x_of(sizes)
        spec = _spec(ks, mode)
        base, _geom = expected_for(ENGINE, SimpleNamespace(spec=spec, x=x))
        d = diagnose_output(ENGINE, spec, x, base.values, base.indices)
        assert KEY not in d.atoms, (sizes, ks, mode, d)


def test_infinities_count_as_the_largest_finite_magnitude_in_the_argmax() -> None:
    """onnx.reference replaces NaN with ``np.nan_to_num``, which also turns +-inf into
    +-FLT_MAX before its argmax: a window {FLT_MAX, inf} reports FLT_MAX's place (a 25 s
    every-peer campaign, seed 7, had 18 such windows 'unexplained indices', a violation).
    Called plainly, on 1-D and 2-D inputs with both infinities, the variant reproduces it."""
    big = float(np.finfo(np.float32).max)
    row = [1.0, big, np.inf, 2.0, -np.inf, -big, 5.0, np.inf]
    cases = [
        (np.array([[row, row[::-1]]], dtype=np.float32), {"kernel_shape": [2]}),
        (np.array([[row, row[::-1]]], dtype=np.float32), {"kernel_shape": [3]}),
        (np.array([[row[:4], row[4:]], [row[2:6], row[::2]]], dtype=np.float32).reshape(1, 2, 2, 4),
         {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"}),
    ]
    moved = 0
    for x, attrs in cases:
        full = {"strides": [1] * len(attrs["kernel_shape"]), **attrs}
        v, i = onnx_reference_run("MaxPool", x, outputs=2, **full)
        spec = parse("MaxPool-22", full)
        base, _geom = expected_for(ENGINE, SimpleNamespace(spec=spec, x=x))
        moved += int((base.indices != i).sum())
        r = replay(ENGINE, spec, x, [KEY], v, i)
        assert r is not None and r.exact, attrs
        assert KEY in diagnose_output(ENGINE, spec, x, v, i).atoms, attrs
    assert moved > 0


def test_a_uint8_window_wholly_in_padding_is_ranked_like_any_other() -> None:
    """onnx.reference pads a 2-D input with NaN, which np.pad casts to 0 in uint8: a window
    wholly in padding is computed (0) and its index is rank 0 through the offset formula (``[[1]]``,
    pads [0, 1, 0, 0] read interleaved: values [[1], [0]], indices [[-1], [0]]), not -1. A 60 s
    every-peer campaign (seed 11) had it NEW as 'unexplained indices (window wholly in padding)',
    a violation. Called plainly on inputs with padding on each side, the variant reproduces it."""
    cases = [((1, 1), [0, 1, 0, 0], [1, 1]), ((3, 3), [0, 1, 0, 0], [1, 1]), ((2, 2), [1, 0, 0, 0], [1, 1]),
             ((2, 2), [0, 0, 1, 1], [1, 1]), ((3, 4), [2, 1, 1, 2], [2, 2]), ((2, 3), [1, 1, 1, 1], [1, 2])]
    rng = np.random.default_rng(5)
    for _ in range(30):  # zeros among the numbers: a window whose largest is 0 ranks its first tap
        ks = [int(k) for k in rng.integers(1, 4, 2)]
        cases.append(((int(rng.integers(1, 5)), int(rng.integers(1, 5))),
                      [int(rng.integers(0, k)) for k in ks * 2], ks))
    empty = named = 0
    for n, (sizes, pads, ks) in enumerate(cases):
        x = (np.arange(math.prod(sizes)) % 5 + 1 if n < 6 else rng.integers(0, 3, math.prod(sizes)))
        x = x.astype(np.uint8).reshape(1, 1, *sizes)
        attrs = {"kernel_shape": ks, "pads": pads, "strides": [1, 1]}
        spec = parse("MaxPool-22", attrs)
        try:
            resolve(spec, x.shape)
            v, i = onnx_reference_run("MaxPool", x, outputs=2, **attrs)
        except (AttributeValueError, ValueError, IndexError, RuntimeError):  # a kernel past the padded input
            continue
        r = replay(ENGINE, spec, x, [KEY], v, i)
        assert r is not None and r.exact, (sizes, pads, ks)
        d = diagnose_output(ENGINE, spec, x, v, i)
        assert d.explained and (KEY in d.atoms or d.klass == "same"), (sizes, pads, ks, d)
        named += KEY in d.atoms
        empty += int((v == 0).sum())
    assert empty > 0 and named > 10


def test_a_bfloat16_window_reports_its_first_nan_tap() -> None:
    """np.nan_to_num leaves an ml_dtypes bfloat16 window as it is (the type is no NumPy float), so
    onnx.reference's argmax meets the NaN: the index is the window's first NaN tap (a NaN element;
    in 2-D also a padded tap), an infinity stays itself, while the value ignores NaN ([nan, 2, 3]
    with kernel 3: value 3, index 0). A 60 s every-peer campaign (seed 12) had it NEW as
    'unexplained indices (window with NaN)', a violation. Called plainly, the variant reproduces it."""
    from poolcheck.spec import dtypes

    nan, inf = np.nan, np.inf
    big = float(dtypes.finfo(dtypes.BFLOAT16).max)
    rows = [[nan, 2, 3, 1], [2, nan, 3, nan], [2, 3, 1, nan], [big, inf, 1, -inf], [3, 3, -big, 1], [1, 1, 1, 1]]
    cases = [(np.array([rows[a], rows[b]]).reshape(1, 2, 4), {"kernel_shape": [k]})
             for a, b in ((0, 1), (2, 3), (4, 5)) for k in (2, 3)]
    cases += [(np.array(rows[a] + rows[b]).reshape(1, 1, 2, 4), {"kernel_shape": [2, 2], "pads": pads})
              for a, b in ((0, 1), (2, 3), (4, 5)) for pads in ([0, 0, 0, 0], [1, 0, 0, 1], [0, 1, 1, 0])]
    named = 0
    for x, attrs in cases:
        xb = dtypes.cast(x, dtypes.BFLOAT16)
        full = {"strides": [1] * len(attrs["kernel_shape"]), **attrs}
        try:
            v, i = onnx_reference_run("MaxPool", xb, outputs=2, **full)
        except ValueError:  # a window of NaN and padding only: its max of no number raises
            continue
        spec = parse("MaxPool-22", full)
        r = replay(ENGINE, spec, xb, [KEY, "nan=ignore"], v, i)
        plain = replay(ENGINE, spec, xb, [KEY], v, i)
        assert (r is not None and r.exact) or (plain is not None and plain.exact), (x.tolist(), attrs)
        d = diagnose_output(ENGINE, spec, xb, v, i)
        fits = KEY in d.atoms or any(KEY in alt for alt in d.alternatives)  # per-plane indices fit 1 plane too
        assert d.explained and (fits or d.klass == "same"), (x.tolist(), attrs, d)
        named += KEY in d.atoms
    assert named > 6
