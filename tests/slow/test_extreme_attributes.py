"""Extreme attribute magnitudes never crash, hang or disagree (issue 8).

Both engines are driven with huge, boundary and overflowing values (near 2^31, 2^32, 2^62,
2^63, 400-digit integers) mixed with every auto_pad mode and rounding type. Each engine must
either refuse with ``ValueError`` or compute; when both compute they agree exactly (max) or
within the average bound. The drive runs in a subprocess, so a segfault or an abort in the C
engine fails this test instead of killing pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import poolcheck
from poolcheck.engines import available_engines
from poolcheck.spec import attributes as A
from poolcheck.spec.limits import MAX_ELEMENTS, MAX_EXTENT
from poolcheck.spec.shape import resolve

DRIVER = textwrap.dedent(
    r'''
    import sys
    import numpy as np
    from hypothesis import given, settings, strategies as st, HealthCheck
    import poolcheck

    EXTREME = st.sampled_from([0, 1, 2, 3, 7, 2**31 - 2, 2**31 - 1, 2**31, 2**32, 2**32 + 1,
                               2**62, 2**62 + 1, 2**63 - 1, 2**63, 2**64, 10**12, 10**400, -1, -2**63])
    SMALL = st.integers(1, 4)
    count = {"both": 0, "refused": 0}

    @settings(max_examples=int(sys.argv[1]), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(rank=st.integers(1, 3), data=st.data(), op=st.sampled_from(["max", "avg"]),
           auto_pad=st.sampled_from(["explicit", "valid", "same_upper", "same_lower"]),
           rounding=st.sampled_from(["floor", "ceil", "ceil_torch"]),
           dtype=st.sampled_from(["float32", "float64", "int8"]))
    def drive(rank, data, op, auto_pad, rounding, dtype):
        value = st.one_of(SMALL, EXTREME)
        kernel = data.draw(st.lists(value, min_size=rank, max_size=rank))
        strides = data.draw(st.lists(value, min_size=rank, max_size=rank))
        pb = data.draw(st.lists(st.one_of(st.just(0), value), min_size=rank, max_size=rank))
        pe = data.draw(st.lists(st.one_of(st.just(0), value), min_size=rank, max_size=rank))
        dil = data.draw(st.lists(st.one_of(st.just(1), value), min_size=rank, max_size=rank))
        shape = (1, 2, *data.draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
        if op == "avg" and dtype == "int8":
            dtype = "float32"
        x = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
        outs = []
        for engine in ("numpy", "c"):
            try:
                if op == "max":
                    outs.append(poolcheck.max_pool(x, kernel, strides, pb, pe, dil, rounding_type=rounding,
                                                   auto_pad=auto_pad, engine=engine))
                else:
                    outs.append((poolcheck.avg_pool(x, kernel, strides, pb, pe, rounding_type=rounding,
                                                    auto_pad=auto_pad, engine=engine), None))
            except ValueError as exc:
                outs.append(type(exc))
        a, b = outs
        if isinstance(a, type) or isinstance(b, type):
            assert a is b, f"one engine refused and the other did not: {a!r} / {b!r}"
            count["refused"] += 1
            return
        np.testing.assert_array_equal(a[0], b[0])
        if a[1] is not None:
            np.testing.assert_array_equal(a[1], b[1])
        count["both"] += 1

    drive()
    print("checked", count["both"], "refused", count["refused"])
    '''
)


@pytest.mark.slow
@pytest.mark.skipif("c" not in available_engines(), reason="the C engine is not built here")
def test_extreme_attributes_never_crash_and_engines_agree() -> None:
    proc = subprocess.run([sys.executable, "-c", DRIVER, "400"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"driver died with {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    checked, refused = (int(v) for v in proc.stdout.split()[1::2])
    assert refused > 0 and checked > 0, proc.stdout  # both branches were exercised


@pytest.mark.parametrize("engine", available_engines())
@pytest.mark.parametrize(
    ("call", "attribute"),
    [
        (lambda e: poolcheck.max_pool(np.ones((1, 1, 1), np.float32), [1], [2**62 + 1], [2**62 + 1], [0], engine=e),
         "strides"),
        (lambda e: poolcheck.max_pool(np.arange(6, dtype=np.float32).reshape(1, 1, 6), [4], [2**32],
                                      dilations=[2**62], auto_pad="same_upper", engine=e), "strides"),
        (lambda e: poolcheck.avg_pool(np.ones((1, 1, 4), np.float32), [2], [2**63 - 1], [2**63 - 5], [0], engine=e),
         "strides"),
        (lambda e: poolcheck.avg_pool(np.ones((1, 1, 4), np.float32), [10**12], [1], [0], [0],
                                      auto_pad="same_upper", engine=e), "kernel"),
        (lambda e: poolcheck.avg_pool(np.ones((1, 1, 4), np.float32), [2**30], [1], [0], [0],
                                      auto_pad="same_upper", engine=e), "pads_begin"),
        (lambda e: poolcheck.max_pool(np.ones((1, 1, 4), np.float32), [2], [1], [10**400], [0], engine=e),
         "pads_begin"),
        (lambda e: poolcheck.max_pool(np.ones((1, 1, 4, 4), np.float32), [2, 2], [1, 1], [10**7] * 2, [10**7] * 2,
                                      engine=e), "strides"),
        (lambda e: poolcheck.onnx_max_pool(np.ones((1, 1, 4), np.float32), [2], pads=[2**31, 0], engine=e), "pads"),
    ],
)
def test_issue_reproducers_are_refused_with_the_attribute_named(engine: str, call, attribute: str) -> None:
    with pytest.raises(poolcheck.AttributeValueError) as info:
        call(engine)
    assert info.value.attribute == attribute
    assert len(str(info.value)) < 300  # a 400-digit value is abbreviated, not spelled out


def test_limits_are_documented_values() -> None:
    assert MAX_EXTENT == 2**31 - 1 and MAX_ELEMENTS == 50_000_000
    # The largest value accepted: one below the limit works on every engine.
    x = np.ones((1, 1, 3), np.float32)
    for engine in available_engines():
        values, _ = poolcheck.max_pool(x, [2], [MAX_EXTENT], [0], [0], engine=engine)
        assert values.shape == (1, 1, 1)


@pytest.mark.parametrize(
    ("shape", "kernel", "strides", "pads", "dilations", "rounding"),
    [
        ((1, 2, 2), [1], [2**31 - 2], [0, 0], [1], "ceil"),  # the draw that once asked NumPy for 32 GiB
        ((1, 2, 5), [2], [2**31 - 2], [1, 1], [2], "ceil"),  # padding and dilation too
        ((2, 1, 3, 7), [2, 3], [1, 2**30], [0, 1, 1, 0], [1, 1], "ceil"),  # one packed axis, one not
        ((1, 1, 4, 4, 3), [1, 2, 1], [2**20, 3, 2**29], [0, 1, 0, 0, 1, 0], [1, 1, 1], "floor"),
    ],
)
def test_huge_strides_pack_the_padding(shape: tuple[int, ...], kernel: list[int], strides: list[int],
                                       pads: list[int], dilations: list[int], rounding: str) -> None:
    """A stride far longer than the input: every engine answers at once, from the input alone,
    the NumPy engine (which pads) with only the positions its windows read (_windows.packed);
    every path -- values only, the indexed scan, the general scan, averages -- agrees with the
    loop oracle."""
    import oracle

    from poolcheck.engines import numpy_engine
    from poolcheck.spec import Policy, index_layout

    r = len(kernel)
    x = np.random.default_rng(3).integers(-5, 6, shape).astype(np.float32)
    x.reshape(-1)[1] = 0.0
    x.reshape(-1)[-1] = -0.0
    spec = A.openvino_max_pool(kernel, strides, pads[:r], pads[r:], dilations, rounding)
    geom = resolve(spec, x.shape)
    layout = index_layout(spec, x.shape)
    for nan in ("propagate", "first"):
        policy = Policy(nan=nan)
        ov, oi = oracle.openvino_max_pool(x, kernel, strides, pads[:r], pads[r:], dilations, rounding, policy=policy)
        for lay in (None, layout):
            v, i = numpy_engine.max_pool(x, geom, lay, policy)
            np.testing.assert_array_equal(v, ov)
            if lay is not None:
                np.testing.assert_array_equal(i, oi)
    axes = oracle.openvino_axes(x.shape[2:], kernel, strides, pads[:r], pads[r:], dilations, rounding, "explicit")
    for exclude in (True, False):
        a = numpy_engine.avg_pool(x, geom, exclude, Policy())
        np.testing.assert_array_equal(a, oracle.avg_pool_loops(x, axes, exclude, Policy()))


@pytest.mark.skipif("c" not in available_engines(), reason="the C engine is not built here")
def test_c_engine_checks_its_own_bounds() -> None:
    """Defence in depth: the extension refuses out-of-range geometry tuples itself."""
    from poolcheck.engines import c_engine

    lib = c_engine._require()
    x = np.ones(1, np.float32)
    out = np.empty(1, np.float32)
    fill = np.float32(-np.inf).tobytes()
    for geo in [(1, 1, 1, 2**62 + 1, 1, 2**62 + 1, 0, 1), (1, 1, 4, 2**32, 2**62, 0, 0, 1),
                (2**40, 1, 1, 1, 1, 0, 0, 1),
                (1, 2**31 - 1, 1, 1, 1, 0, 0, 2**31 - 1, 2**31 - 1, 1, 1, 1, 0, 0, 2**31 - 1)]:
        with pytest.raises(ValueError):
            lib.max_pool(x, out, None, geo, 0, 0, fill, -1, 0, 1)
        with pytest.raises(ValueError):
            lib.avg_pool(x, out, geo, 0, 1, 0.0)


@pytest.mark.skipif("c" not in available_engines(), reason="the C engine is not built")
@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
def test_onnx_same_negative_pads_wide_rows_c_equals_numpy(auto_pad: str, dtype: str) -> None:
    """Rows of 16+ windows reach the C engine's vectorised and border-block kernels."""
    rng = np.random.default_rng(7)
    x = rng.integers(-50, 50, size=(2, 3, 37, 203)).astype(dtype)
    for kernel, strides, dil in (([1, 2], [3, 5], [1, 1]), ([2, 3], [5, 7], [2, 1]), ([1, 1], [4, 4], [1, 1])):
        kw = dict(kernel_shape=kernel, strides=strides, dilations=dil, auto_pad=auto_pad)
        g = resolve(A.onnx_max_pool(kernel_shape=kw["kernel_shape"], strides=kw["strides"], dilations=kw["dilations"], auto_pad=kw["auto_pad"]), x.shape)
        assert any(p < 0 for p in g.pads_begin + g.pads_end)
        v_np, i_np = poolcheck.onnx_max_pool(x, engine="numpy", **kw)
        v_c, i_c = poolcheck.onnx_max_pool(x, engine="c", **kw)
        np.testing.assert_array_equal(v_c, v_np)
        np.testing.assert_array_equal(i_c, i_np)
        if dtype != "int8":
            for cip in (0, 1):
                a_np = poolcheck.onnx_average_pool(x, count_include_pad=cip, engine="numpy", **kw)
                a_c = poolcheck.onnx_average_pool(x, count_include_pad=cip, engine="c", **kw)
                np.testing.assert_array_equal(a_c, a_np)


_C_INTERRUPT = textwrap.dedent('''
    import signal, sys
    import numpy as np
    from poolcheck import spec as S
    from poolcheck.engines import c_engine
    signal.signal(signal.SIGINT, signal.default_int_handler)
    x = np.ones((1, 64, 40, 40, 40), np.float32)
    geom = S.resolve(S.openvino_max_pool([12, 12, 12], [1, 1, 1]), x.shape)
    out = np.full(geom.output_shape, np.nan, np.float32)
    print("start", flush=True)
    try:  # NaN policy "first" on float32: the direct row-major scan, one plane at a time
        c_engine._cpool.max_pool(x, out, None, c_engine._geometry_args(geom), 0, 2,
                                 np.float32(-np.inf).tobytes(), -1, 0, 1)
    except KeyboardInterrupt:
        print("interrupted", int(np.isnan(out).sum()), "of", out.size, "outputs unwritten", flush=True)
        sys.exit(130)
    print("completed", flush=True)
''')


@pytest.mark.skipif("c" not in available_engines(), reason="the C engine is not built")
def test_c_engine_stops_on_ctrl_c_mid_computation() -> None:
    """SIGINT during a long C call raises KeyboardInterrupt from inside the call: the kernel stops
    with outputs still unwritten (not after finishing the whole computation)."""
    import signal
    import time

    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(poolcheck.__file__))
    proc = subprocess.Popen([sys.executable, "-c", _C_INTERRUPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "start"
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    words = out.split()
    assert words[0] == "interrupted" and int(words[1]) > 0, out
