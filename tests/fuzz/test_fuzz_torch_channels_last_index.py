"""PyTorch's channels_last max_pool3d start index (``index:depthless-tail-start``).

``compute_internal`` in aten/src/ATen/native/cpu/MaxPoolKernel.cpp starts every channel's scan
from the type's lowest value at the window's first tap at or after coordinate 0; the vector
lanes store that start as ``d0*H*W + h0*W + w0``, the channels past the last whole 32-byte
vector (every channel when C is below 32 / element size) as ``h0*W + w0``. A window whose
elements all equal the lowest value, or that holds none, reports the start. PyTorch runs that
kernel on a 5-D channels_last_3d tensor with C > 1 and D*H*W > 1 (otherwise the tensor is also
contiguous). Measured on PyTorch 2.13.0 CPU (AVX512 machine): 716 random configurations
(int8/uint8/float32/float64, C 1-70, D/H/W 1-4, kernels 1-3, strides 1-3, dilations 1-2, inputs
near the lowest value, -inf, NaN) and 148 float16 ones: the loop model below equals
torch.nn.functional.max_pool3d on every one.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from poolcheck.engines import get_engine
from poolcheck.fuzz.diagnosis import diagnose_output, predict
from poolcheck.fuzz.diagnosis.indices import DEPTHLESS_TAIL
from poolcheck.spec.operators import parse

ENGINE = get_engine("numpy")
KEY = DEPTHLESS_TAIL


def lowest(dtype: np.dtype) -> float:
    return float(np.iinfo(dtype).min) if dtype.kind in "iu" else -math.inf


def torch_loops(x: np.ndarray, k: tuple[int, ...], s: tuple[int, ...], pb: tuple[int, ...], pe: tuple[int, ...],
                d: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The channels_last kernel as loops: values, whole-tensor row-major indices."""
    n_, c_, *sizes = x.shape
    lanes = 32 // x.dtype.itemsize
    cl = c_ > 1 and math.prod(sizes) > 1
    tail_from = c_ - c_ % lanes
    outs = [(n + b + e - dd * (kk - 1) - 1) // ss + 1 for n, kk, ss, b, e, dd in zip(sizes, k, s, pb, pe, d)]
    vals = np.zeros((n_, c_, *outs), dtype=x.dtype)
    idx = np.zeros((n_, c_, *outs), dtype=np.int64)
    plane = math.prod(sizes)
    for n, c, *o in itertools.product(range(n_), range(c_), *map(range, outs)):
        first, stop = [], []
        for oo, kk, ss, b, dd, size in zip(o, k, s, pb, d, sizes):
            a0 = oo * ss - b
            stop.append(min(a0 + (kk - 1) * dd + 1, size))
            while a0 < 0:
                a0 += dd
            first.append(a0)
        start = first[0] * sizes[1] * sizes[2] + first[1] * sizes[2] + first[2]
        if cl and c >= tail_from:
            start = first[1] * sizes[2] + first[2]
        best, at = lowest(x.dtype), start
        for zd in range(first[0], stop[0], d[0]):
            for zh in range(first[1], stop[1], d[1]):
                for zw in range(first[2], stop[2], d[2]):
                    v = float(x[n, c, zd, zh, zw])
                    if v > best or math.isnan(v):
                        best, at = v, (zd * sizes[1] + zh) * sizes[2] + zw
        vals[(n, c, *o)] = best
        idx[(n, c, *o)] = (n * c_ + c) * plane + at
    return vals, idx


def spec_of(k: tuple[int, ...], s: tuple[int, ...], pb: tuple[int, ...], pe: tuple[int, ...],
            d: tuple[int, ...]):  # type: ignore[no-untyped-def]
    return parse("MaxPool-14", {"kernel": list(k), "strides": list(s), "pads_begin": list(pb),
                                "pads_end": list(pe), "dilations": list(d), "axis": 0})


def near_lowest(shape: tuple[int, ...], dtype: str, seed: int, nan: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        lo = np.iinfo(dt).min
        return rng.integers(lo, lo + 2, shape, endpoint=True).astype(dt)
    x = rng.integers(-2, 2, shape).astype(dt)
    u = rng.random(shape)
    x[u < 0.4] = -np.inf
    if nan:
        x[u > 0.97] = np.nan
    return x


def grid(count: int, seed: int, nan: bool = True):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    made = 0
    while made < count:
        dtype = ("int8", "uint8", "float32", "float16")[made % 4]
        c = int(rng.choice([1, 2, 3, 7, 9, 17, 33]))
        sizes = tuple(int(v) for v in rng.integers(1, 4, 3, endpoint=True))
        k = tuple(int(v) for v in rng.integers(1, 3, 3, endpoint=True))
        d = tuple(int(v) for v in rng.integers(1, 2, 3, endpoint=True))
        s = tuple(int(v) for v in rng.integers(1, 3, 3, endpoint=True))
        p = tuple(int(rng.integers(0, kk // 2, endpoint=True)) for kk in k)
        if any(n + 2 * pp - dd * (kk - 1) - 1 < 0 for n, kk, pp, dd in zip(sizes, k, p, d)):
            continue
        made += 1
        yield near_lowest((int(rng.integers(1, 2, endpoint=True)), c, *sizes), dtype, made, nan), k, s, p, d


def test_the_variant_is_the_loop_model() -> None:
    shown = 0
    for x, k, s, p, d in grid(60, 1, nan=False):  # NaN: torch's nan=last-index, another variant
        got = predict(ENGINE, spec_of(k, s, p, p, d), x, [KEY])
        assert got is not None
        vals, idx = torch_loops(x, k, s, p, p, d)
        assert np.array_equal(got[0], vals, equal_nan=True)
        assert got[1] is not None and np.array_equal(got[1], idx), (x.shape, x.dtype, k, s, p, d)
        plain = predict(ENGINE, spec_of(k, s, p, p, d), x, [])
        assert plain is not None and plain[1] is not None
        shown += bool(((plain[1] != idx) & (plain[1] >= 0)).any())
    assert shown > 5  # windows holding elements, not only empty ones, differ from the spec


def test_the_vector_lanes_keep_the_depth_term() -> None:
    """C = 33 int8: channels 0-31 fill one 32-byte vector and report d*H*W + ...; channel 32 not."""
    x = np.full((1, 33, 2, 1, 1), -128, dtype=np.int8)
    spec = spec_of((1, 1, 1), (1, 1, 1), (0, 0, 0), (0, 0, 0), (1, 1, 1))
    got = predict(ENGINE, spec, x, [KEY])
    assert got is not None and got[1] is not None
    per_plane = got[1][0, :, 1, 0, 0] - np.arange(33) * 2
    assert per_plane.tolist() == [1] * 32 + [0]


torch = pytest.importorskip("torch")


def torch_channels_last(x: np.ndarray, k: tuple[int, ...], s: tuple[int, ...], p: tuple[int, ...],
                        d: tuple[int, ...], *, layout: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """torch.nn.functional.max_pool3d called plainly; indices made whole-tensor."""
    t = torch.from_numpy(x.copy())
    if layout:
        t = t.contiguous(memory_format=torch.channels_last_3d)
    v, i = torch.nn.functional.max_pool3d(t, k, s, p, d, return_indices=True)
    i = i.numpy()
    plane = math.prod(x.shape[2:])
    planes = np.arange(x.shape[0] * x.shape[1]).reshape(x.shape[0], x.shape[1], 1, 1, 1) * plane
    return v.numpy(), i + planes


REGISTRY = [  # the registry inputs once named 'unexplained indices (...)' and max=seeded-scan (torch.yaml)
    (np.arange(1, 41).reshape(2, 2, 2, 5, 1).astype(np.int8), (1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), 5),
    (np.arange(1, 17).reshape(1, 2, 2, 2, 2).astype(np.int8), (1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), 15),
    (np.arange(1, 109).reshape(3, 3, 3, 4, 1).astype(np.int8), (1, 1, 2), (1, 1, 3), (0, 0, 1), (1, 1, 2), None),
    (np.arange(1, 129).astype(np.int8).reshape(2, 2, 2, 4, 4), (1, 1, 2), (1, 1, 1), (0, 0, 1), (1, 1, 1), 127),
]


@pytest.mark.parametrize("case", range(len(REGISTRY)))
def test_torch_on_the_registry_inputs_is_named_with_no_remainder(case: int) -> None:
    x, k, s, p, d, low_at = REGISTRY[case]
    x = x.copy()
    if low_at is not None:
        x.reshape(-1)[low_at] = -128
    vals, idx = torch_channels_last(x, k, s, p, d)
    assert np.array_equal(vals, torch_loops(x, k, s, p, p, d)[0])
    assert np.array_equal(idx, torch_loops(x, k, s, p, p, d)[1])
    diag = diagnose_output(ENGINE, spec_of(k, s, p, p, d), x, vals, idx)
    assert diag.explained and diag.klass == KEY, diag


def test_torch_on_a_grid_is_named_with_no_remainder() -> None:
    named = 0
    for x, k, s, p, d in grid(40, 2):
        vals, idx = torch_channels_last(x, k, s, p, d)
        diag = diagnose_output(ENGINE, spec_of(k, s, p, p, d), x, vals, idx)
        assert "unexplained" not in diag.klass, (x.shape, x.dtype, k, s, p, d, diag)
        named += KEY in diag.klass
    assert named > 5


def test_the_spec_and_torch_contiguous_are_not_given_the_name() -> None:
    for x, k, s, p, d in grid(40, 3):
        spec = spec_of(k, s, p, p, d)
        plain = predict(ENGINE, spec, x, [])
        assert plain is not None and plain[1] is not None
        assert KEY not in diagnose_output(ENGINE, spec, x, plain[0], plain[1]).klass
        vals, idx = torch_channels_last(x, k, s, p, d, layout=False)
        assert KEY not in diagnose_output(ENGINE, spec, x, vals, idx).klass, (x.shape, x.dtype, k, s, p, d)


def test_a_seeded_scan_peer_is_still_named_so() -> None:
    """OpenVINO's seeded scan (index 0 of the plane for an element equal to the lowest value) is
    not this rule where the window's start is not the plane's first element."""
    x = np.arange(1, 17).reshape(1, 2, 2, 2, 2).astype(np.int8)
    x.reshape(-1)[15] = -128  # (c=1, d=1, h=1, w=1): depthless start 3, seeded scan 0
    spec = spec_of((1, 1, 1), (1, 1, 1), (0, 0, 0), (0, 0, 0), (1, 1, 1))
    got = predict(ENGINE, spec, x, ["max=seeded-scan"])
    assert got is not None and got[1] is not None and got[1].reshape(-1)[15] == 8
    diag = diagnose_output(ENGINE, spec, x, got[0], got[1])
    assert diag.klass == "max=seeded-scan", diag
