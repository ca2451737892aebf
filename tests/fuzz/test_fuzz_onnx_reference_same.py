"""onnx.reference's SAME and VALID paths under dilation as named variants
(same:undilated-kernel-zero-tail and valid:undilated-kernel-zero-tail for its AveragePool/LpPool,
same:lower-as-upper-floor-size for its MaxPool with a stride or dilation > 1):

- the variants' windows against a slow loop oracle whose axes are written here from onnx 1.23's
  source (``op_pool_common.py``: ``get_output_shape_auto_pad``, ``get_pad_shape``,
  ``get_pad_with_auto_pad``, ``pool``; ``op_max_pool.py``: ``_max_pool``), not from poolcheck's;
- the diagnosis of ReferenceEvaluator's own outputs (the model built with onnx.helper, no poolcheck
  in between), skipped without onnx;
- planted: a peer following the spec, or ONNX Runtime's SAME, is not given these names."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from oracle import Axis, avg_pool_loops, max_pool_loops, onnx_index
from support import onnx_reference_run

from poolcheck.engines import get_engine
from poolcheck.fuzz.diagnosis import GEOMETRY_VARIANTS, diagnose_output, predict, replay
from poolcheck.spec import attributes as A
from poolcheck.spec.operators import parse

ENGINE = get_engine("numpy")
AVG_KEY = "same:undilated-kernel-zero-tail"
VALID_KEY = "valid:undilated-kernel-zero-tail"
MAX_KEY = "same:lower-as-upper-floor-size"


# --------------------------------------------------------------------------- the oracle's axes


def avg_axis(size: int, k: int, s: int, d: int, mode: str) -> tuple[Axis, int] | None:
    """onnx.reference's AveragePool axis: out = floor((size - 1) / s) + 1; pad_shape from the
    UNdilated kernel; SAME_UPPER puts pad // 2 first, SAME_LOWER pad - pad // 2; ``pool`` loops
    over int((size + pads - ((k - 1) * d + 1)) / s + 1) windows (the count returned), the other
    outputs stay np.zeros' 0. None: a negative pad (np.pad raises)."""
    out = math.floor((size - 1) / s) + 1
    pad = (out - 1) * s + k - size
    if pad < 0:
        return None
    head = pad // 2 if mode == "SAME_UPPER" else pad - pad // 2
    windows = int((size + pad - (1 + (k - 1) * d)) / s + 1)
    return Axis(size, k, s, d, head, pad - head, out), max(0, min(windows, out))


def valid_axis(size: int, k: int, s: int, d: int) -> tuple[Axis, int]:
    """onnx.reference's AveragePool VALID axis: get_output_shape_auto_pad's floor((size - k) / s)
    + 1 (the UNdilated kernel), no pads, ``pool``'s int((size - dilated kernel) / s + 1) windows."""
    out = math.floor((size - k) / s) + 1
    windows = int((size - (1 + (k - 1) * d)) / s + 1)
    return Axis(size, k, s, d, 0, 0, out), max(0, min(windows, out))


def max_axis(size: int, k: int, s: int, d: int, mode: str) -> Axis:
    """onnx.reference's ``_max_pool`` axis: out = ceil(size / s) for SAME_UPPER, floor(size / s)
    for SAME_LOWER; pad_i from the dilated kernel; hstart = ph * s - pad_i // 2 in both modes."""
    out = int(np.ceil(size / s)) if mode == "SAME_UPPER" else int(np.floor(size / s))
    pad = (out - 1) * s + ((k - 1) * d + 1) - size
    return Axis(size, k, s, d, pad // 2, pad - pad // 2, out)


def avg_oracle(x: np.ndarray, axes: list[tuple[Axis, int]], include: bool) -> np.ndarray:
    full = avg_pool_loops(x, [a for a, _n in axes], exclude_pad=not include)
    for pos in itertools.product(*(range(a.out) for a, _n in axes)):
        if any(p >= n for p, (_a, n) in zip(pos, axes)):
            full[(slice(None), slice(None), *pos)] = 0
    return full


def x_of(shape: tuple[int, ...]) -> np.ndarray:
    return (np.random.default_rng(7).permutation(math.prod(shape)) + 1).astype(np.float32).reshape(shape)


ONE_D = [(size, k, s, d) for size in (1, 2, 3, 5, 6, 8) for k in (1, 2, 3) for s in (1, 2, 3) for d in (2, 3)]
TWO_D = [((4, 5), (2, 3), (1, 2), (2, 1)), ((6, 3), (3, 2), (2, 1), (2, 3)), ((5, 5), (2, 2), (3, 2), (3, 2))]


@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("include", [0, 1])
def test_zero_tail_variant_is_the_loop_oracle(mode: str, include: int) -> None:
    checked = tails = 0
    cases = [((size,), (k,), (s,), (d,)) for size, k, s, d in ONE_D] + TWO_D
    for sizes, ks, ss, ds in cases:
        spec = A.onnx_average_pool(list(ks), list(ss), None, list(ds), 0, include, mode)
        x = x_of((2, 1, *sizes))
        axes = [avg_axis(*a, mode) for a in zip(sizes, ks, ss, ds)]
        got = predict(ENGINE, spec, x, [AVG_KEY])
        if any(a is None for a in axes):
            assert got is None, (sizes, ks, ss, ds)  # the variant predicts no output
            continue
        want = avg_oracle(x, [a for a in axes if a is not None], bool(include))
        assert got is not None and got[0].shape == want.shape, (sizes, ks, ss, ds)
        np.testing.assert_allclose(got[0], want, rtol=1e-6, err_msg=str((sizes, ks, ss, ds)))
        checked += 1
        tails += any(n < a.out for a, n in axes if a is not None)  # type: ignore[misc]
    assert checked > 40 and tails > 10  # the grid reaches both computed and zeroed outputs


@pytest.mark.parametrize("include", [0, 1])
def test_valid_zero_tail_variant_is_the_loop_oracle(include: int) -> None:
    tails = 0
    cases = [((size,), (k,), (s,), (d,)) for size, k, s, d in ONE_D] + TWO_D
    for sizes, ks, ss, ds in cases:
        if any(n < (k - 1) * d + 1 for n, k, d in zip(sizes, ks, ds)):
            continue  # the spec has no output (an invalid configuration, diagnosed apart)
        spec = A.onnx_average_pool(list(ks), list(ss), None, list(ds), 0, include, "VALID")
        x = x_of((2, 1, *sizes))
        axes = [valid_axis(*a) for a in zip(sizes, ks, ss, ds)]
        got = predict(ENGINE, spec, x, [VALID_KEY])
        assert got is not None and got[0].shape == (2, 1, *(a.out for a, _n in axes)), (sizes, ks, ss, ds)
        np.testing.assert_allclose(got[0], avg_oracle(x, axes, bool(include)), rtol=1e-6,
                                   err_msg=str((sizes, ks, ss, ds)))
        tails += any(n < a.out for a, n in axes)
    assert tails > 10


@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER"])
def test_lower_as_upper_variant_is_the_loop_oracle_for_same_lower(mode: str) -> None:
    """For SAME_LOWER the variant is onnx.reference's _max_pool; for SAME_UPPER that path is
    already another name's (same:negative-pads-floor-split, or the spec), so the variant does not
    apply."""
    moved = 0
    cases = [((size,), (k,), (s,), (d,)) for size, k, s, d in ONE_D] + TWO_D
    for sizes, ks, ss, ds in cases:
        spec = A.onnx_max_pool(list(ks), list(ss), None, list(ds), 0, mode)
        gv = next(g for g in GEOMETRY_VARIANTS if g.key == MAX_KEY)
        if mode == "SAME_UPPER":
            assert not gv.applies(spec)
            continue
        x = x_of((2, 1, *sizes))
        axes = [max_axis(*a, mode) for a in zip(sizes, ks, ss, ds)]
        got = predict(ENGINE, spec, x, [MAX_KEY])
        if any(a.out < 1 for a in axes):
            assert got is None or 0 in got[0].shape
            continue
        values, indices = max_pool_loops(x, axes, onnx_index(x.shape, 0))
        assert got is not None and got[0].shape == values.shape, (sizes, ks, ss, ds)
        np.testing.assert_array_equal(got[0], values, err_msg=str((sizes, ks, ss, ds)))
        assert got[1] is not None
        assert got[1].ravel().tolist() == indices, (sizes, ks, ss, ds)
        base = predict(ENGINE, spec, x, [])
        moved += base is None or base[0].shape != values.shape or not np.array_equal(base[0], values)
    assert mode == "SAME_UPPER" or moved > 20


def test_the_variants_apply_only_where_onnx_reference_takes_those_paths() -> None:
    avg, mx, valid = (next(g for g in GEOMETRY_VARIANTS if g.key == k) for k in (AVG_KEY, MAX_KEY, VALID_KEY))
    assert valid.applies(A.onnx_average_pool([2], [2], None, [3], 0, 1, "VALID"))
    assert not valid.applies(A.onnx_average_pool([2], [2], None, [1], 0, 1, "VALID"))
    assert not valid.applies(A.onnx_average_pool([2], [2], None, [3], 1, 1, "VALID"))  # ceil_mode: it asserts
    assert not valid.applies(A.onnx_max_pool([2], [2], None, [3], 0, "VALID"))  # _max_pool sizes it right
    assert avg.applies(A.onnx_average_pool([2], [1], None, [2], 0, 0, "SAME_UPPER"))
    assert not avg.applies(A.onnx_average_pool([2], [2], None, [1], 0, 0, "SAME_UPPER"))  # no dilation: no tail
    assert not avg.applies(A.onnx_average_pool([2], [1], None, [2], 1, 0, "SAME_UPPER"))  # ceil_mode: it asserts
    assert not avg.applies(A.onnx_average_pool([2], [1], [1, 1], [2], 0, 0, "NOTSET"))
    assert not avg.applies(A.onnx_max_pool([2], [1], None, [2], 0, "SAME_UPPER"))
    assert mx.applies(A.onnx_max_pool([2], [1], None, [2], 0, "SAME_LOWER"))
    assert mx.applies(A.onnx_max_pool([1], [2], None, [1], 0, "SAME_LOWER"))  # a stride takes _max_pool too
    assert not mx.applies(A.onnx_max_pool([2], [1], None, [1], 0, "SAME_LOWER"))  # CommonPool: the spec's
    assert not mx.applies(A.onnx_max_pool([2], [1], None, [2], 0, "SAME_UPPER"))
    assert not mx.applies(A.onnx_average_pool([2], [1], None, [2], 0, 0, "SAME_LOWER"))


# --------------------------------------------------------------------------- onnx.reference itself


def reference(op: str, x: np.ndarray, **attrs: object) -> np.ndarray:
    """``op`` run plainly by onnx.reference.ReferenceEvaluator (opset 22)."""
    return onnx_reference_run(op, x, **attrs)[0]


X6 = np.array([[[5, 6, 7, 8, 9, 10]]], dtype=np.float32)


def test_onnx_reference_average_zero_tail_is_named() -> None:
    attrs = {"kernel_shape": [2], "dilations": [3], "auto_pad": "SAME_LOWER", "count_include_pad": 1}
    got = reference("AveragePool", X6, **attrs)
    assert got.ravel().tolist() == [3.5, 6.5, 7.5, 8.5, 0.0, 0.0]  # measured, onnx 1.23.2
    spec = parse("AveragePool-22", attrs)
    assert replay(ENGINE, spec, X6, [], got, None).values.ravel().tolist() == [3.0, 3.5, 6.5, 7.5, 8.5, 4.0]
    d = diagnose_output(ENGINE, spec, X6, got, None)
    assert d.explained and d.klass == AVG_KEY and d.atoms == (AVG_KEY,), d


def test_onnx_reference_max_same_lower_is_named() -> None:
    attrs = {"kernel_shape": [2], "dilations": [3], "auto_pad": "SAME_LOWER"}
    got = reference("MaxPool", X6, **attrs)
    assert got.ravel().tolist() == [7.0, 8.0, 9.0, 10.0, 8.0, 9.0]  # measured, onnx 1.23.2
    spec = parse("MaxPool-22", attrs)
    d = diagnose_output(ENGINE, spec, X6, got, None)
    # stride 1: the same windows as same:swapped (placed first); the variant is its verified twin
    assert d.explained and {d.variants, *d.alternatives} == {("same:swapped",), (MAX_KEY,)}, d
    # stride 2 on an odd size: floor(5 / 2) = 2 outputs, which only this variant gives
    attrs = {"kernel_shape": [2], "dilations": [3], "strides": [2], "auto_pad": "SAME_LOWER"}
    x5 = X6[:, :, :5].copy()
    got = reference("MaxPool", x5, **attrs)
    assert got.ravel().tolist() == [8.0, 7.0]
    d = diagnose_output(ENGINE, parse("MaxPool-22", attrs), x5, got, None)
    assert d.explained and d.klass == MAX_KEY and not d.alternatives, d


def test_onnx_reference_average_valid_zero_tail_is_named() -> None:
    """The registry's onnx/onnx#4849 example: VALID, kernel 2, stride 2, dilation 3 on [1, 2, 3, 4]."""
    attrs = {"kernel_shape": [2], "strides": [2], "dilations": [3], "auto_pad": "VALID", "count_include_pad": 1}
    x = np.array([[[1, 2, 3, 4]]], dtype=np.float32)
    got = reference("AveragePool", x, **attrs)
    assert got.ravel().tolist() == [2.5, 0.0]  # measured, onnx 1.23.2 (the spec: one window, 2.5)
    d = diagnose_output(ENGINE, parse("AveragePool-22", attrs), x, got, None)
    assert d.explained and d.klass == VALID_KEY, d


def test_the_variants_replay_onnx_reference_exactly_on_a_grid() -> None:
    """Wherever a variant applies (and the reference gives an output without empty windows), it
    reproduces ReferenceEvaluator exactly; the spec's own placement does not everywhere."""
    differs = {AVG_KEY: 0, MAX_KEY: 0, VALID_KEY: 0}
    for size, k, s, d in ONE_D:
        x = x_of((1, 2, size))
        for mode in ("SAME_UPPER", "SAME_LOWER", "VALID"):
            base = {"kernel_shape": [k], "strides": [s], "dilations": [d], "auto_pad": mode}
            key = VALID_KEY if mode == "VALID" else AVG_KEY
            runs = [("AveragePool", key, {**base, "count_include_pad": inc}) for inc in (0, 1)]
            runs.append(("MaxPool", MAX_KEY, base))
            for op, key, attrs in runs:
                spec = parse(f"{op}-22", attrs)
                gv = next(g for g in GEOMETRY_VARIANTS if g.key == key)
                if not gv.applies(spec) or (mode == "VALID" and size < (k - 1) * d + 1):  # invalid: no output
                    continue
                try:
                    got = reference(op, x, **attrs)
                except ValueError:  # np.pad refuses a negative SAME pad: the variant has no output
                    assert predict(ENGINE, spec, x, [key]) is None
                    continue
                if np.isnan(got).any():
                    continue  # an empty max window: a policy, not this placement
                r = replay(ENGINE, spec, x, [key], got, None)
                assert r is not None and r.exact, (op, attrs, got)
                plain = replay(ENGINE, spec, x, [], got, None)
                differs[key] += plain is None or not plain.exact
    assert differs[AVG_KEY] > 20 and differs[MAX_KEY] > 20 and differs[VALID_KEY] > 20


def test_onnx_reference_lppool_zero_tail_is_named() -> None:
    """LpPool runs the average's path (the power average times the kernel size): the same tail."""
    from poolcheck.fuzz.diagnosis.family import _expected, diagnose_family

    attrs = {"kernel_shape": [3], "dilations": [2], "strides": [2], "auto_pad": "SAME_UPPER", "p": 2}
    got = reference("LpPool", X6, **attrs)
    assert got[0, 0, 2] == 0.0  # measured: the third output is never computed
    spec = parse("LpPool-22", attrs)
    assert diagnose_family(spec, X6, None, _expected(spec, X6), (got, None)) == [AVG_KEY]


def test_the_zero_tails_are_onnx_reference_lppool_on_a_grid() -> None:
    """LpPool runs the average's path (the power average times the kernel size), so both zero
    tails hold for it: each reproduces ReferenceEvaluator's LpPool wherever it gives an output,
    and has none where the reference raises (numpy.pad refusing a negative SAME pad)."""
    from poolcheck.fuzz.diagnosis.family import variant_outputs

    compared = raised = 0
    for (size, k, s, d), p in itertools.product(ONE_D, (1, 2)):
        x = x_of((1, 2, size))
        for mode in ("SAME_UPPER", "SAME_LOWER", "VALID"):
            if mode == "VALID" and size < (k - 1) * d + 1:
                continue  # the spec has no output
            attrs = {"kernel_shape": [k], "strides": [s], "dilations": [d], "auto_pad": mode, "p": p}
            out = variant_outputs(VALID_KEY if mode == "VALID" else AVG_KEY, parse("LpPool-22", attrs), x, None)
            try:
                got = reference("LpPool", x, **attrs)
            except ValueError:
                assert out is None, attrs
                raised += 1
                continue
            assert out is not None and out[0].shape == got.shape, attrs
            np.testing.assert_allclose(out[0], got, rtol=1e-5, err_msg=str(attrs))
            compared += 1
    assert compared > 300 and raised > 20


# --------------------------------------------------------------------------- planted


@pytest.mark.parametrize("op", ["avg", "max"])
def test_a_peer_following_the_spec_or_onnxruntime_is_not_given_these_names(op: str) -> None:
    """The spec's own output is 'same'; ONNX Runtime's SAME (same:undilated-kernel, measured) is
    named as such -- the new variant may be a verified alternative where it gives the very same
    output on that input, never the name."""
    key = AVG_KEY if op == "avg" else MAX_KEY
    named_ort = 0
    for size, k, s, d in ONE_D:
        if op == "avg":
            spec = A.onnx_average_pool([k], [s], None, [d], 0, 1, "SAME_LOWER")
        else:
            spec = A.onnx_max_pool([k], [s], None, [d], 0, "SAME_LOWER")
        x = x_of((1, 1, size))
        own = predict(ENGINE, spec, x, [])
        assert own is not None
        assert diagnose_output(ENGINE, spec, x, *own).klass == "same"
        ort = predict(ENGINE, spec, x, ["same:undilated-kernel"])
        if ort is None or 0 in ort[0].shape:
            continue
        named = diagnose_output(ENGINE, spec, x, *ort)
        if named.klass == "same":
            continue
        assert named.explained and key not in named.atoms, (size, k, s, d, named)
        for alt in named.alternatives:
            if key in alt:  # a verified twin: it reproduces this output exactly
                r = replay(ENGINE, spec, x, list(alt), *ort)
                assert r is not None and r.exact
        named_ort += 1
    assert named_ort > 10


def test_the_zero_tail_combines_with_a_policy_variant() -> None:
    """The reference drops NaN from an average without counted padding (avg=nan-skipped, on record
    for this peer): the tail is carried through the policy search as well."""
    attrs = {"kernel_shape": [2], "dilations": [2], "auto_pad": "SAME_UPPER", "count_include_pad": 0}
    x = np.array([[[1, np.nan, 4, 8, 16, 32, 64]]], dtype=np.float32)
    got = reference("AveragePool", x, **attrs)
    assert got[0, 0, -1] == 0.0 and not np.isnan(got).any()  # measured: NaN dropped, the tail 0
    d = diagnose_output(ENGINE, parse("AveragePool-22", attrs), x, got, None)
    assert d.explained and set(d.atoms) == {AVG_KEY, "avg=nan-skipped"}, d


def test_a_dilation_risk_points_at_the_zero_tail_registry_entries() -> None:
    """`poolcheck audit` points a dilated pooling at the registry entries of its risk: the
    zero-tail classes are dilation classes (their names say 'undilated-kernel', not 'dilations')."""
    from poolcheck.corpus import KNOWN_DIR
    from poolcheck.fuzz.known import known_entries
    from poolcheck.models.risk import Risk, known_matches

    entries, errors = known_entries([KNOWN_DIR])
    assert not errors
    found = {m.signature for m in known_matches("avg", [Risk.DILATION], entries)}
    assert f"peer|avg|onnx_reference|{VALID_KEY}" in found
