"""The runtime and converter-chain peers added after the first four: tract, JAX/XLA, OpenVINO's
ONNX frontend (openvino-onnx) and the PyTorch ONNX exporter run by ONNX Runtime (torch-onnx).

Each is checked against the NumPy engine on a spread of configurations it supports (minus its
diagnosed divergences, each pinned by its own test), on the reasons it declines the rest, and, for
the chains, on the attribution of a wrong converted attribute to the step that wrote it. Peers
that are not installed are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import support
from support import ROOT, available_peer

from poolcheck.api import run_spec
from poolcheck.peers.base import PeerDeclined
from poolcheck.peers.onnx_model import to_onnx
from poolcheck.spec import attributes as A
from poolcheck.spec import dtypes
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.operators import allowed_dtypes
from poolcheck.spec.shape import resolve

NEW = ["tract", "jax", "openvino-onnx", "torch-onnx"]


# --------------------------------------------------------------------------- the spread


def spread(seed: int, n: int) -> list[tuple[PoolSpec, np.ndarray]]:
    """The shared spread in float32, without the index attributes."""
    return support.spread(seed, n, index_attrs=False)


def _out(spec: PoolSpec, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return resolve(spec, shape).output_shape
    except ValueError:
        return None


def known_divergence(peer: str, spec: PoolSpec, x: np.ndarray) -> str | None:
    """Configurations where ``peer`` parts ways with the engine (cases/known/<peer>.yaml)."""
    geom = resolve(spec, x.shape)
    if peer in ("tract", "openvino-onnx") and any(a.pad_begin < 0 or a.pad_end < 0 for a in geom.axes):
        return "ONNX SAME with a stride past the dilated kernel: the peer clamps the negative pad_shape at 0"
    if peer == "openvino-onnx":
        if spec.auto_pad != "explicit" and spec.convention == "onnx" and spec.ceil_mode:
            return "OpenVINO's ONNX frontend applies ceil_mode=1 under VALID / SAME_* (the ONNX formulas do not)"
        if spec.op == "avg" and not spec.exclude_pad and any(a.overhang for a in geom.axes):
            return "OpenVINO divides an overhanging ceil window by the full kernel"
        ceil_written = spec.rounding_type != "floor" or (spec.convention == "onnx" and spec.ceil_mode)
        if ceil_written and _out(spec.replace(rounding_type="ceil"), x.shape) != geom.output_shape:
            return "the frontend writes rounding_type=ceil for ceil_mode=1 (and for ceil_torch)"
    return None


@pytest.mark.parametrize("name", NEW)
def test_new_peer_agrees_with_the_engine_where_it_runs(name: str) -> None:
    peer = available_peer(name)
    items = [(s, x) for s, x in spread(7, 120) if peer.supports(s, x.shape, x.dtype)[0]]
    assert len(items) >= 30, f"{name} declined too much of the spread"
    outs = peer.run_many(items)
    compared = 0
    for (spec, x), out in zip(items, outs, strict=True):
        if known_divergence(name, spec, x):
            continue
        assert not isinstance(out, Exception), f"{name} {spec}: {out}"
        want_values, want_indices = run_spec(spec, x)
        np.testing.assert_allclose(out.values, want_values, rtol=1e-5, atol=1e-5, err_msg=f"{name} {spec}")
        if out.indices is not None:
            np.testing.assert_array_equal(out.indices, want_indices, err_msg=f"{name} {spec}")
        compared += 1
    assert compared >= 25


# --------------------------------------------------------------------------- declines


def test_jax_gives_values_only_and_declines_integer_averages() -> None:
    peer = available_peer("jax")
    spec = A.openvino_max_pool([2], [1], [0], [0])
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 4)
    out = peer.run(spec, x)
    assert out.indices is None and out.values.tolist() == [[[1.0, 2.0, 3.0]]]
    ok, why = peer.supports(A.openvino_avg_pool([2], [1], [0], [0], False), (1, 1, 4), np.dtype("int32"))
    assert not ok and "the openvino average takes float16, float32, float64, not int32" in why


def test_jax_expresses_ceil_rounding_through_padding_exactly() -> None:
    """ceil_torch / ONNX ceil_mode=1 grow the XLA high padding (or crop the input) to give the
    spec's windows; OpenVINO ceil keeping a window wholly in the end padding is declined."""
    peer = available_peer("jax")
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 6)
    for spec, want in ((A.openvino_avg_pool([2], [2], [1], [1], True, "ceil_torch"), [0.0, 1.5, 3.5, 5.0]),
                       (A.openvino_avg_pool([2], [2], [1], [1], False, "ceil_torch"), [0.0, 1.5, 3.5, 2.5]),
                       (A.openvino_max_pool([3], [2], [0], [0], None, "ceil_torch"), [2.0, 4.0, 5.0]),
                       (A.openvino_max_pool([2], [3], [0], [0], None, "floor"), [1.0, 4.0])):
        out = peer.run(spec, x)
        assert out.values.ravel().tolist() == want, spec
        np.testing.assert_array_equal(out.values, run_spec(spec, x)[0])
    ok, why = peer.supports(A.openvino_avg_pool([2], [2], [1], [1], True, "ceil"), (1, 1, 5), np.dtype("float32"))
    assert not ok and "no input element" in why


def _jax_shared_and_xla() -> tuple[Any, Any]:
    """Two fresh jax peers: the default windows=shared, and windows=xla (XLA's own window arithmetic)."""
    from poolcheck.peers.jax_peer import JaxPeer

    available_peer("jax")
    shared, xla = JaxPeer(persistent_cache=False), JaxPeer(persistent_cache=False)
    xla.configure({"windows": "xla"})
    return shared, xla


def test_jax_one_compile_serves_every_shape_pad_stride_and_dilation_of_a_window() -> None:
    """windows=shared: the compile depends on the reduction, the type, the window shape and the
    block only; values stay the spec's (int8 extremes, padding, strides, dilations, ceil), and
    windows=xla (strides and dilations in reduce_window) agrees on every one."""

    shared, xla = _jax_shared_and_xla()
    rng = np.random.default_rng(5)
    items = []
    for size in (3, 5, 8, 12):
        for stride in (1, 2, 3):
            for dil in (1, 2, 3):
                for pb, pe in ((0, 0), (1, 0), (1, 1)):
                    spec = A.openvino_max_pool([2], [stride], [pb], [pe], [dil], "ceil_torch")
                    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), size)
                    x = rng.integers(-128, 128, shape).astype(np.int8)
                    x.flat[0] = -128
                    if _out(spec, shape) is not None and shared.supports(spec, shape, x.dtype)[0]:
                        items.append((spec, x))
    assert len(items) > 60
    got = shared.run_many(items)
    for (spec, x), out in zip(items, got, strict=True):
        assert not isinstance(out, Exception), (spec, out)
        np.testing.assert_array_equal(out.values, run_spec(spec, x)[0], err_msg=str(spec))
    assert len(shared._fns) == 1  # one window (2,), one type, one block: one compile
    for (spec, _x), a, b in zip(items, got, xla.run_many(items), strict=True):
        np.testing.assert_array_equal(a.values, b.values, err_msg=str(spec))
    assert len(xla._fns) == 9  # one compile per (strides, dilations): 3 x 3
    # averages: float16, padding counted or not, a dilated 2-D window split by residue
    avg = A.onnx_average_pool([2, 2], [2, 1], [1, 0, 0, 1], [2, 1], 1, 0)
    x = (rng.standard_normal((2, 3, 7, 6)) * 8).astype(np.float16)
    np.testing.assert_allclose(shared.run(avg, x).values.astype(np.float64),
                               run_spec(avg, x)[0].astype(np.float64), rtol=2e-3, atol=2e-3)


def test_jax_folds_one_element_window_axes_into_the_compile_of_the_rest() -> None:
    """A window of one element along an axis takes each position alone: the axis joins the rows,
    so (1, 3, 1), (3, 1) and (3,) windows share one compile (a campaign draws many such windows);
    every value is still the spec's, as windows=xla (no layout of poolcheck's) gives it."""

    available_peer("jax")
    shared, xla = _jax_shared_and_xla()
    rng = np.random.default_rng(11)
    items = []
    for kernel, shape in (([1, 3, 1], (2, 3, 4, 9, 5)), ([3, 1], (1, 2, 7, 6)), ([3], (2, 2, 10)),
                          ([1, 1, 3], (1, 3, 3, 2, 8)), ([1, 3], (2, 1, 5, 6))):
        n = len(kernel)
        for stride, dil, pad in ((1, 1, 0), (2, 1, 1), (1, 2, 1), (3, 2, 0)):
            pads = [pad if k > 1 else 0 for k in kernel]  # a window of one tap wholly in padding is declined
            spec = A.openvino_max_pool(kernel, [stride] * n, pads, [0] * n, [dil] * n, "ceil_torch")
            x = rng.integers(-128, 128, shape).astype(np.int8)
            if _out(spec, shape) is not None and shared.supports(spec, shape, x.dtype)[0]:
                items.append((spec, x))
    assert len(items) == 20
    for (spec, x), a, b in zip(items, shared.run_many(items), xla.run_many(items), strict=True):
        assert not isinstance(a, Exception) and not isinstance(b, Exception), (spec, a, b)
        np.testing.assert_array_equal(a.values, run_spec(spec, x)[0], err_msg=str(spec))
        np.testing.assert_array_equal(a.values, b.values, err_msg=str(spec))
    assert {key.window for key in shared._fns} == {(3,)}  # type: ignore[union-attr]
    assert len({key.dtype for key in shared._fns}) == 1  # type: ignore[union-attr]


def test_jax_max_by_axis_gives_the_values_of_one_reduce_window_call_over_the_whole_window() -> None:
    """windows=shared takes a max one window axis at a time (JaxPeer._by_axis): on a spread
    of 1-3-D windows, strides, dilations, pads and rounding, in float16, bfloat16, float32, int8
    and uint64 (where the convention takes them), with infinities, signed zeros and the types'
    extremes in the input (NaN runs plainly: the next test), every
    value equals windows=xla's (one reduce_window call over the whole window, XLA's own window
    arithmetic) under the judgement (NaN equals NaN, -0.0 equals 0.0) and the spec's; the
    compiles are keyed by window length, so 2-D and 3-D windows compile 1-D reductions only."""
    from poolcheck.judgement import same_values

    available_peer("jax")
    shared, xla = _jax_shared_and_xla()
    rng = np.random.default_rng(23)
    items = []
    for i, (spec, x32) in enumerate(support.spread(23, 160, index_attrs=False)):
        if spec.op != "max":
            continue
        types = [t for t in ("float16", "float32", "int8", "uint64", "bfloat16")
                 if t in allowed_dtypes(spec.op, spec.convention)]
        dt = np.dtype(dtypes.BFLOAT16 if types[i % len(types)] == "bfloat16" else types[i % len(types)])
        if dt.kind in "iu":
            info = np.iinfo(dt)
            x = rng.integers(int(info.min), int(info.max), x32.shape, dtype=dt, endpoint=True)
        else:
            x = dtypes.cast(x32.astype(np.float64), dt)
            special = np.array([np.inf, -np.inf, -0.0, 0.0, float(dtypes.finfo(dt).max)])
            mask = rng.random(x.shape) < 0.3
            x[mask] = dtypes.cast(rng.choice(special, int(mask.sum())), dt)
        if shared.supports(spec, x.shape, x.dtype)[0]:
            items.append((spec, x))
    # rows longer than a segment (SEGMENT): cut into overlapping segments
    for kernel, strides, shape in (([5], [1], (1, 2, 200)), ([3, 4], [1, 2], (1, 1, 70, 90)),
                                   ([2, 2, 7], [1, 1, 3], (1, 1, 3, 4, 131))):
        n = len(kernel)
        items.append((A.openvino_max_pool(kernel, strides, [1] * n, [0] * n),
                      rng.standard_normal(shape).astype(np.float32)))
    assert len(items) > 40
    assert sum(len(spec.kernel) > 1 for spec, _ in items) > 20
    for (spec, x), a, b in zip(items, shared.run_many(items), xla.run_many(items), strict=True):
        assert not isinstance(a, Exception) and not isinstance(b, Exception), (spec, a, b)
        assert same_values(b.values, a.values).all(), spec
        assert same_values(run_spec(spec, x)[0], a.values).all(), spec
    assert {len(key.window) for key in shared._fns} == {1}  # type: ignore[union-attr]


def test_jax_average_by_axis_stays_within_the_average_rule_as_one_reduce_window_call_does() -> None:
    """windows=shared sums an average's window one axis at a time too (JaxPeer._by_axis): on a
    spread of 1-3-D windows, strides, dilations, pads, rounding and both divisors, in float16,
    bfloat16, float32 and float64, with infinities and signed zeros in the input, every value is
    within the average rule (the judgement's tolerance, :func:`poolcheck.judgement.tolerance_for`)
    of the spec's, as windows=xla's (one reduce_window call over the whole window) is, and NaN,
    +inf and -inf fall where they fall there; the compiles are 1-D sums keyed by window length."""
    from poolcheck.engines import get_engine
    from poolcheck.judgement import close_values, same_values, tolerance_for

    available_peer("jax")
    shared, xla = _jax_shared_and_xla()
    engine = get_engine("numpy")
    rng = np.random.default_rng(29)
    items = []
    for i, (spec, x32) in enumerate(support.spread(29, 200, index_attrs=False)):
        if spec.op != "avg":
            continue
        name = ("float16", "float32", "float64", "bfloat16")[i % 4]
        if name not in allowed_dtypes(spec.op, spec.convention):
            continue
        dt = np.dtype(dtypes.BFLOAT16 if name == "bfloat16" else name)
        x = dtypes.cast(x32.astype(np.float64) * 8, dt)
        special = np.array([np.inf, -np.inf, -0.0, 0.0])
        mask = rng.random(x.shape) < 0.1
        x[mask] = dtypes.cast(rng.choice(special, int(mask.sum())), dt)
        if shared.supports(spec, x.shape, x.dtype)[0]:
            items.append((spec, x))
    for kernel, strides, shape in (([5], [1], (1, 2, 200)), ([3, 4], [1, 2], (1, 1, 70, 90))):
        n = len(kernel)
        items.append((A.onnx_average_pool(kernel, strides, [1] * n + [0] * n, None, 1, 0),
                      rng.standard_normal(shape).astype(np.float32)))
    assert len(items) > 40
    assert sum(len(spec.kernel) > 1 for spec, _ in items) > 20
    for (spec, x), a, b in zip(items, shared.run_many(items), xla.run_many(items), strict=True):
        assert not isinstance(a, Exception) and not isinstance(b, Exception), (spec, a, b)
        expected = run_spec(spec, x)[0]
        tol = tolerance_for(spec, x, resolve(spec, x.shape), expected, engine)
        assert close_values(expected, a.values, tol).all(), (spec, x.dtype)
        assert close_values(expected, b.values, tol).all(), (spec, x.dtype)
        nonfinite = ~np.isfinite(b.values.astype(np.float64))
        assert same_values(b.values[nonfinite], a.values[nonfinite]).all(), (spec, x.dtype)
    assert {key.op for key in shared._fns} == {"avg"}  # type: ignore[union-attr]
    assert {len(key.window) for key in shared._fns} == {1}  # type: ignore[union-attr]


def test_jax_max_over_an_input_with_nan_is_the_plain_reduce_window_call() -> None:
    """XLA picks its reduce_window kernel from the shapes (its loop emitter, or a YNNPACK fusion
    for strided windows over large inputs), and NaN handling can differ between them; so an input
    holding a NaN runs plainly, on its own layout with XLA's strides, and the peer's values are a
    plain reduce_window call's, bit for bit, on small inputs and on a (1, 64, 8, 8) one."""
    import jax
    from jax import lax

    from poolcheck.peers.jax_peer import JaxPeer

    available_peer("jax")
    peer = JaxPeer(persistent_cache=False)
    rng = np.random.default_rng(3)
    spec = A.onnx_max_pool([2, 2], [2, 2], [0, 0, 0, 0])
    for shape in ((1, 1, 8, 8), (1, 64, 8, 8), (2, 3, 9, 7)):
        x = rng.standard_normal(shape).astype(np.float32)
        x[rng.random(shape) < 0.2] = np.nan
        got = peer.run(spec, x).values
        h, w = (shape[2] - 2) // 2 + 1, (shape[3] - 2) // 2 + 1
        core = np.ascontiguousarray(x[:, :, :2 * h, :2 * w])
        plain = np.asarray(jax.jit(lambda a: lax.reduce_window(a, np.float32(-np.inf), lax.max, (1, 1, 2, 2),
                                                               (1, 1, 2, 2), "VALID"))(core))
        assert np.array_equal(got, plain, equal_nan=True), shape
    assert all(key[:2] == ("plain", "max") for key in peer._fns)  # type: ignore[index]


def test_jax_average_divides_by_the_count_of_every_tap_not_a_bfloat16_sum_of_ones() -> None:
    """The divisor is counted, not summed in the input's type: a 17x17 bfloat16 window counting
    its padding holds 289 taps, which a bfloat16 sum of ones stops at 256 (the peer gave
    81 / 256 at the corner, not 81 / 289, a divergence of the adapter's own)."""
    available_peer("jax")
    from poolcheck.peers.jax_peer import JaxPeer

    spec = A.onnx_average_pool([17, 17], [1, 1], [8, 8, 8, 8], count_include_pad=1)  # AveragePool-22: bfloat16
    x = dtypes.cast(np.ones((1, 1, 10, 10)), dtypes.BFLOAT16)
    got = JaxPeer(persistent_cache=False).run(spec, x).values
    assert float(got[0, 0, 0, 0]) == float(dtypes.cast(np.array(81 / 289), dtypes.BFLOAT16))
    np.testing.assert_array_equal(got.astype(np.float32), run_spec(spec, x)[0].astype(np.float32))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_jax_average_rounds_as_xla_divides(dtype: str) -> None:
    """``jax_peer.average`` (a float64 quotient rounded once) gives XLA's own ``total / count`` in
    the input's type bit for bit, for every count a window of a campaign holds: a quotient of two
    values of p bits, rounded to 53 bits, then to p, is the quotient rounded to p (p <= 24).
    (XLA's eager division by a broadcast scalar is not always correctly rounded: about a quarter
    of float32 quotients by a (1,) array differ by an ulp on this machine; the peer never did
    that, and a shape-for-shape division is.)"""
    jax = pytest.importorskip("jax")

    from poolcheck.peers.jax_peer import JaxNode, average

    jax.config.update("jax_enable_x64", True)
    divide = jax.jit(lambda a, b: a / b)  # the peer's division before: jitted, the counts an array
    dt = dtypes.BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(7)
    top = 256 if dtype == "bfloat16" else 2048
    for count in [*range(1, 65), *rng.integers(65, top + 1, 40)]:
        node = JaxNode("avg", (1, 1, int(count)), dt.name, (int(count),), (1,), (1,), (int(count),), ((0, 0),), None)
        total = dtypes.cast(rng.standard_normal((2, 3, 1)) * 10.0 ** rng.integers(-30, 4, (2, 3, 1)), dt)
        want = np.asarray(divide(total, np.full(total.shape, count, dtype=dt)))
        assert average(total, node).tobytes() == want.tobytes(), count


def test_jax_average_with_nan_and_infinities_keeps_the_shared_layout() -> None:
    """NaN and infinities leave an average's order free (``jax_peer._order_free``): such inputs run
    on the shared block and give what the input's own layout (a plain reduce_window call) gives; a
    finite part that can overflow runs on the input's own layout."""
    from poolcheck.peers import jax_peer
    from poolcheck.peers.jax_peer import JaxPeer, _order_free, to_jax

    available_peer("jax")
    peer = JaxPeer(persistent_cache=False)
    spec = A.openvino_avg_pool([2, 2], [1, 1], [1, 0], [0, 1], False, "floor", "explicit")
    rng = np.random.default_rng(3)
    cases = []
    for dtype in ("float16", "float32", "float64"):
        for specials in ([np.nan], [np.inf], [-np.inf], [np.inf, -np.inf], [np.nan, -np.inf]):
            x = rng.integers(-8, 9, (2, 3, 5, 4)).astype(dtype)  # small integers: every sum is exact
            x.flat[rng.choice(x.size, 2 * len(specials), replace=False)] = specials * 2
            assert _order_free(to_jax(spec, x.shape, x.dtype), x)
            cases.append((x, peer.run(spec, x).values))
    assert not [key for key in peer._fns if isinstance(key, tuple)]  # no plain call: the shared block
    for x, shared in cases:
        assert np.isnan(shared).any() or np.isinf(shared).any()
        np.testing.assert_array_equal(shared, jax_peer.average(peer._plain(node := to_jax(spec, x.shape, x.dtype), x), node))
    big = np.full((1, 1, 3, 3), 30000.0, dtype=np.float16)  # 4 x 30000 passes float16's 65504
    big[0, 0, 0, 0] = -np.inf
    assert not _order_free(to_jax(spec, big.shape, big.dtype), big)
    fresh = JaxPeer(persistent_cache=False)
    fresh.run(spec, big)
    assert [key[:2] for key in fresh._fns] == [("plain", "avg")]
    # bfloat16 too (ml_dtypes' type is NumPy kind 'V': it was taken for an integer, whose order is free)
    onnx_avg = A.onnx_average_pool([2, 2], [1, 1], [1, 0, 0, 1])
    bf = dtypes.cast(np.full((1, 1, 3, 3), 1.0e38), dtypes.BFLOAT16)
    assert not _order_free(to_jax(onnx_avg, bf.shape, bf.dtype), bf)
    assert _order_free(to_jax(onnx_avg, bf.shape, bf.dtype), dtypes.cast(np.ones((1, 1, 3, 3)), dtypes.BFLOAT16))


def test_jax_average_keeps_the_shared_layout_where_no_window_can_overflow() -> None:
    """One float16 60000 in each 2x2 window: the input's largest magnitude times four taps passes
    65504, but no window's own sum of magnitudes does, so no order of its additions overflows and
    the average runs on the shared block (no compile of its own), giving the plain call's values;
    two 60000 in one window send it to the input's own layout."""
    from poolcheck.peers import jax_peer
    from poolcheck.peers.jax_peer import JaxPeer, _order_free, to_jax

    available_peer("jax")
    spec = A.openvino_avg_pool([2, 2], [2, 2], [0, 0], [0, 0], False, "floor", "explicit")
    x = np.full((1, 2, 4, 6), 0.5, dtype=np.float16)
    x[:, :, ::2, ::2] = 60000.0
    x[0, 1, 1, 1] = -np.inf
    assert _order_free(to_jax(spec, x.shape, x.dtype), x)
    peer = JaxPeer(persistent_cache=False)
    got = peer.run(spec, x).values
    assert not [key for key in peer._fns if isinstance(key, tuple)]  # the shared block only
    np.testing.assert_array_equal(got, jax_peer.average(peer._plain(node := to_jax(spec, x.shape, x.dtype), x), node))
    assert got[0, 0, 0, 0] == np.float16((60000 + 1.5) / 4)
    x[0, 0, 1, 1] = 60000.0
    assert not _order_free(to_jax(spec, x.shape, x.dtype), x)
    # float64 magnitudes whose window sums pass its range: not free, and no RuntimeWarning
    # between a campaign's tables (seed 25, an every-peer campaign)
    import warnings

    huge = np.full((1, 1, 2, 2), 1.0e308)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert not _order_free(to_jax(spec, huge.shape, huge.dtype), huge)


def test_torch_onnx_declines_what_a_torch_module_cannot_write() -> None:
    peer = available_peer("torch-onnx")
    asym = A.openvino_max_pool([3], [1], [1], [0])
    ok, why = peer.supports(asym, (1, 1, 6), np.dtype("float32"))
    assert not ok and "symmetric" in why
    ok, why = peer.supports(A.openvino_max_pool([2], [1], [0], [0]), (1, 1, 6), np.dtype("int8"))
    assert not ok and "int8" in why


# --------------------------------------------------------------------------- attribution


def test_openvino_onnx_frontend_attribute_check_names_the_step() -> None:
    from poolcheck.peers.openvino_onnx_peer import attribute_mismatches

    node = to_onnx(A.onnx_max_pool([3], [2], [1, 1], None, 1), (1, 1, 6), np.dtype("float32"), "t")
    good = {"kernel": [3], "strides": [2], "dilations": [1], "pads_begin": [1], "pads_end": [1],
            "rounding_type": "ceil_torch"}
    assert attribute_mismatches(node, good) == []
    assert attribute_mismatches(node, dict(good, rounding_type="floor")) == [
        "OpenVINO ONNX frontend wrote rounding_type=floor for ceil_mode=1"
    ]


def test_torch_onnx_exporter_attribute_check_names_the_step() -> None:
    peer = available_peer("torch-onnx")
    from poolcheck.peers.torch_onnx_peer import attribute_mismatches

    spec = A.openvino_avg_pool([3, 3], [2, 2], [1, 1], [1, 1], False, "ceil_torch")
    node = peer.translate(spec, (1, 1, 6, 6), np.dtype("float32"))
    model = peer.export((node,))
    written = peer.written_attributes(model, 0)
    assert written is not None and attribute_mismatches(node, written) == []  # torch 2.13 writes it right
    dropped = {k: v for k, v in written.items() if k != "ceil_mode"}
    assert attribute_mismatches(node, dropped) == ["torch.onnx.export wrote ceil_mode=0 for ceil_mode=True"]


# --------------------------------------------------------------------------- doctor


def test_doctor_lists_the_new_peers() -> None:
    proc = subprocess.run([sys.executable, "-m", "poolcheck", "doctor", "--json"], capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)
    assert proc.returncode == 0, proc.stderr
    peers = {p["name"]: p for p in json.loads(proc.stdout)["peers"]}
    for name in NEW:
        assert name in peers, sorted(peers)
        assert peers[name]["kind"] == "built-in"
        assert peers[name]["available"] == (peers[name]["version"] is not None) or not peers[name]["available"]
        assert peers[name]["available"] or peers[name]["reason"]


def test_tract_max_pool_indices_on_every_onnx_max_type() -> None:
    """tract takes the ONNX models of the onnxruntime peer, indices output included."""
    peer = available_peer("tract")
    spec = A.onnx_max_pool([2, 2], [1, 2], [1, 0, 0, 1], None, 0, "NOTSET", 1)
    for dtype in ("float32", "float16", "float64", "int8", "uint8"):
        x = (np.arange(2 * 3 * 4 * 5) % 97).astype(dtype).reshape(2, 3, 4, 5)
        out = peer.run(spec, x)
        values, indices = run_spec(spec, x)
        np.testing.assert_array_equal(out.values, values, err_msg=dtype)
        np.testing.assert_array_equal(out.indices, indices, err_msg=dtype)


#: A model tract refuses at load: an Identity on bfloat16, a type tract has not (run in a fresh
#: interpreter, tract loaded as the peer loads it: Rust reads RUST_LIB_BACKTRACE once per process).
TRACT_REFUSAL = """
import os, sys, tempfile
from onnx import TensorProto, helper, save
from poolcheck.peers.tract_peer import _tract
tract = _tract()
graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [1, 4])])
with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "m.onnx")
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]), path)
    try:
        tract.onnx().load(path).into_model().into_runnable()
    except Exception as exc:
        print(repr(str(exc)))
        sys.exit(0)
sys.exit("tract loaded a bfloat16 model")
"""


def test_tract_has_no_bfloat16_and_the_peer_declines_it() -> None:
    """tract refuses any bfloat16 tensor, an Identity's too (the subprocess above, tract called
    plainly): a bfloat16 pool is declined with tract's words, not run and reported as a pooling
    refusal no reproducer could pin on the pool. Fails once a tract version takes bfloat16."""
    peer = available_peer("tract")
    proc = subprocess.run([sys.executable, "-c", TRACT_REFUSAL], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and "Unknown DatumType Bfloat16" in proc.stdout, proc.stdout + proc.stderr
    spec = A.onnx_max_pool([2, 2], [1, 1], [0, 0, 0, 0], None, 0, "NOTSET", 0)
    ok, why = peer.supports(spec, (1, 1, 4, 4), np.dtype(dtypes.BFLOAT16))
    assert not ok and "Unknown DatumType Bfloat16" in why
    assert "bfloat16" not in peer.element_types("max") and "float16" in peer.element_types("max")
    (result,) = peer.run_many([(spec, np.zeros((1, 1, 4, 4), dtype=dtypes.BFLOAT16))])
    assert isinstance(result, PeerDeclined)


@pytest.mark.parametrize("lib_backtrace", [None, "1"])
def test_a_tract_refusal_carries_no_backtrace_unless_asked(lib_backtrace: str | None) -> None:
    """With RUST_BACKTRACE=1 (set on many machines) tract's anyhow errors capture a backtrace:
    60-100 ms per refused model and 3,000 characters of message. The peer turns the capture
    off (RUST_LIB_BACKTRACE=0) unless the user set RUST_LIB_BACKTRACE; the refusal is the same."""
    available_peer("tract")
    env = {k: v for k, v in os.environ.items() if k != "RUST_LIB_BACKTRACE"}
    env["RUST_BACKTRACE"] = "1"
    if lib_backtrace is not None:
        env["RUST_LIB_BACKTRACE"] = lib_backtrace
    proc = subprocess.run([sys.executable, "-c", TRACT_REFUSAL], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    message = proc.stdout
    assert "Unknown DatumType Bfloat16" in message
    assert ("Stack backtrace" in message) == (lib_backtrace == "1")


def test_jax_rejects_a_configuration_without_output_like_a_runtime() -> None:
    """A kernel larger than the padded input has no output: the peer raises (a `rejects`
    result), it does not decline or invent an empty answer."""
    peer = available_peer("jax")
    spec = PoolSpec(op="max", kernel=(5,), strides=(1,), pads_begin=(0,), pads_end=(0,), dilations=(1,))
    assert peer.supports(spec, (1, 1, 3), np.dtype("float32"))[0]
    (res,) = peer.run_many([(spec, np.zeros((1, 1, 3), np.float32))])
    assert isinstance(res, ValueError) and "invalid configuration" in str(res)


def test_run_names_the_frontend_step_in_the_verdict(tmp_path) -> None:
    """Through the real command: a registered openvino-onnx case replays as a failure whose
    message attributes the wrong rounding to OpenVINO's ONNX frontend (run from another folder)."""
    available_peer("openvino-onnx")
    import yaml

    known = str(ROOT / "cases" / "known" / "openvino-onnx.yaml")
    with open(known) as fh:
        cases = yaml.safe_load(fh)["cases"]
    (case,) = [c for c in cases if c["id"] == "fuzz-openvino-onnx-max-rounding-ceil-torch-ceil-max-seeded-scan-3c4dc5"]
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump({"schema": "poolcheck.case/1", "cases": [case]}))
    # ONNX's ceil formula keeps that window and its own example drops it: an erratum, with the
    # seeded scan (unspecified) -- not a violation (docs/severity.md), so --fail-on names them
    proc = subprocess.run([sys.executable, "-m", "poolcheck", "run", str(path), "--peers", "openvino-onnx", "--json",
                           "--fail-on", "unspecified,erratum"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "OpenVINO ONNX frontend wrote rounding_type=ceil for ceil_mode=1" in proc.stdout
    assert '"severity": "unspecified"' in proc.stdout and '"severity": "violation"' not in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.yaml"]  # nothing written beside it


def test_torch_channels_last_max_pool3d_start_index_lacks_the_depth_term() -> None:
    # cases/known/torch.yaml::fuzz-torch-channels-last-max-lowest-value-depth-dropped: the scalar
    # channel tail of PyTorch's channels_last max_pool3d starts from h*W + w (no d*H*W), which shows
    # where no element beats the start value (here the only one is int8's lowest)
    peer = available_peer("torch:layout=channels_last")
    spec = A.openvino_max_pool([1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0], [1, 1, 1], "floor", "explicit")
    x = np.arange(1, 17, dtype=np.int8).reshape(1, 2, 2, 2, 2)
    x[0, 1, 1, 1, 1] = -128
    out = peer.run(spec, x)
    want_values, want_indices = run_spec(spec, x)
    np.testing.assert_array_equal(out.values, want_values)
    assert want_indices[0, 1, 1, 1, 1] == 15  # plane 1 starts at 8; (d, h, w) = (1, 1, 1) is 7 in it
    assert out.indices[0, 1, 1, 1, 1] == 8 + 1 * 2 + 1  # h*W + w only
    mask = np.ones(x.shape, dtype=bool)
    mask[0, 1, 1, 1, 1] = False
    np.testing.assert_array_equal(out.indices[mask], want_indices[mask])
    # the contiguous kernel is right
    np.testing.assert_array_equal(available_peer("torch").run(spec, x).indices, want_indices)
