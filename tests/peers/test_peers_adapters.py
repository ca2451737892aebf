"""Each built-in peer against the NumPy engine on a spread of configurations it supports, and
the reasons it declines the rest. Peers that are not installed are skipped with the reason."""

from __future__ import annotations

import numpy as np
import pytest
import support
from support import available_peer

from poolcheck.api import run_spec
from poolcheck.peers import PeerDeclined, call_peer, call_peer_many
from poolcheck.peers._convert import convert_flat_indices
from poolcheck.spec import attributes as A
from poolcheck.spec.attributes import PoolSpec
from poolcheck.spec.shape import resolve

BUILTINS = ["onnxruntime", "openvino", "torch", "onnx_reference"]


@pytest.fixture(scope="module", params=BUILTINS)
def peer(request: pytest.FixtureRequest):
    return available_peer(request.param)


# --------------------------------------------------------------------------- the spread


def spread(seed: int, n: int) -> list[tuple[PoolSpec, np.ndarray]]:
    """The shared spread with the index attributes and the integer types MaxPool takes."""
    return support.spread(seed, n, max_dtypes=("float32", "float32", "float16", "int8", "uint8"),
                          avg_dtypes=("float32", "float32", "float16"))


def known_divergence(peer: str, spec: PoolSpec, x: np.ndarray) -> str | None:
    """Configurations where ``peer`` is known to part ways with the engine, kept out of the
    agreement test. Each is a poolcheck finding (docs/peers.md); the main ones are pinned by
    their own tests at the end of this file."""
    geom = resolve(spec, x.shape)
    if peer == "onnxruntime" and spec.auto_pad.startswith("same") and any(d > 1 for d in spec.dilations):
        return "ORT computes SAME_* pads from the undilated kernel"
    sizes = zip(geom.output_shape[2:], spec.strides, spec.kernel, x.shape[2:])
    if peer == "onnxruntime" and spec.auto_pad.startswith("same") and any((o - 1) * st + k < n for o, st, k, n in sizes):
        return "ORT shifts SAME_* windows by a negative pad instead of clamping it to 0"
    if peer == "onnxruntime" and spec.auto_pad == "valid" and spec.convention == "onnx" and spec.ceil_mode:
        return "ORT rounds up under VALID + ceil_mode=1 (the ONNX formula does not)"
    if peer == "openvino":
        if spec.op == "avg" and not spec.exclude_pad and any(a.overhang for a in geom.axes):
            return "OpenVINO divides an overhanging ceil window by the full kernel"
        if spec.auto_pad.startswith("same") and spec.rounding_type == "ceil":
            return "OpenVINO applies ceil rounding to same_* output sizes"
    if peer == "torch" and spec.op == "avg" and spec.spatial_rank == 3 and any(
        size < k for size, k in zip(x.shape[2:], spec.kernel)
    ):
        return "torch avg_pool3d rejects an input smaller than the kernel, padding or not"
    if peer == "onnx_reference":
        return _onnx_reference_divergence(spec, x)
    return None


def _onnx_reference_divergence(spec: PoolSpec, x: np.ndarray) -> str | None:
    """onnx.reference (onnx 1.23) pooling bugs, each confirmed by hand against the ONNX text."""
    if spec.auto_pad != "explicit" and spec.convention == "onnx" and spec.ceil_mode:
        return "rejects ceil_mode=1 with any auto_pad"
    if spec.auto_pad.startswith("same"):
        return "SAME_*: wrong output sizes (MaxPool), negative indices or wrong windows (AveragePool)"
    if spec.auto_pad == "valid" and any(d > 1 for d in spec.dilations):
        return "VALID with dilations: output size from the undilated kernel"
    if spec.rounding_type != "floor" and resolve(spec, x.shape) != resolve(spec.replace(rounding_type="floor"), x.shape):
        return "ceil_mode adding a window: windows shifted (AveragePool), wrong indices (MaxPool 3-D)"
    if spec.op == "max":
        if any(spec.pads_begin) or any(spec.pads_end):
            return "MaxPool with pads: IndexError"
        if all(st == 1 for st in spec.strides) and (x.shape[0] * x.shape[1] > 1 or spec.spatial_rank == 3):
            return "MaxPool with strides 1: per-plane indices, and wrong 3-D indices"
        if x.dtype == np.int8 and spec.spatial_rank >= 2 and all(st == 1 for st in spec.strides):
            return "MaxPool on int8, strides 1, 2-D/3-D: ValueError (NaN cannot be converted to integer)"
    return None


def _assert_same(spec: PoolSpec, x: np.ndarray, output, label: str) -> None:
    values, indices = run_spec(spec, x)
    got = output.values
    assert got.shape == values.shape, f"{label}: shape {got.shape}, engine {values.shape}"
    assert got.dtype == values.dtype, f"{label}: dtype {got.dtype}, engine {values.dtype}"
    if spec.op == "max":
        np.testing.assert_array_equal(got, values, err_msg=label)
        assert output.indices is not None, label
        assert output.indices.dtype == indices.dtype, f"{label}: index dtype {output.indices.dtype}"
        np.testing.assert_array_equal(output.indices, indices, err_msg=label)
    else:
        tol = 4e-3 if x.dtype == np.float16 else 2e-6
        np.testing.assert_allclose(got.astype(np.float64), values.astype(np.float64), rtol=tol, atol=tol, err_msg=label)


def test_peer_agrees_with_engine_on_spread(peer) -> None:
    items = spread(seed=20, n=160)
    results = call_peer_many(peer, items, isolated=False)
    compared = declined = 0
    for (spec, x), res in zip(items, results):
        label = f"{peer.name}: {spec.describe()} ({spec.convention}) on {x.dtype}{list(x.shape)}"
        if res.status == "declined":
            declined += 1
            continue
        if known_divergence(peer.name, spec, x):
            continue
        assert res.status == "ok", f"{label}: {res.verdict}"
        _assert_same(spec, x, res.output, label)
        compared += 1
    # The spread must really exercise the peer.
    assert compared >= 40, f"{peer.name}: only {compared} configurations compared ({declined} declined)"


def test_single_and_batched_calls_agree(peer) -> None:
    items = spread(seed=21, n=12)
    batched = call_peer_many(peer, items, isolated=False)
    for (spec, x), res in zip(items, batched):
        one = call_peer(peer, spec, x, isolated=False)
        assert one.status == res.status
        if one.status == "ok":
            np.testing.assert_array_equal(one.output.values, res.output.values)


# --------------------------------------------------------------------------- declines


def _declines(peer_name: str, spec: PoolSpec, shape: tuple[int, ...], dtype: str, reason_part: str) -> None:
    peer = available_peer(peer_name)
    ok, why = peer.supports(spec, shape, np.dtype(dtype))
    assert not ok and reason_part in why, f"{peer_name}: {spec.describe()} -> {ok}, {why!r}"
    with pytest.raises(PeerDeclined, match=reason_part.replace("(", r"\(").replace(")", r"\)")):
        peer.run(spec, np.zeros(shape, dtype))
    result = call_peer(peer, spec, np.zeros(shape, dtype), isolated=False)
    assert result.status == "declined" and reason_part in result.message


OV_CEIL = A.openvino_max_pool([1], [3], rounding_type="ceil")  # size 5: last window starts at 6 > 5 - 1


@pytest.mark.parametrize(
    ("peer_name", "spec", "shape", "dtype", "reason"),
    [
        ("onnxruntime", A.openvino_max_pool([2], [1]), (1, 1, 4), "int32", "ONNX MaxPool-22 has no int32"),
        ("onnxruntime", OV_CEIL, (1, 1, 5), "float32", "rounding_type=ceil keeps a last window"),
        ("onnx_reference", OV_CEIL, (1, 1, 5), "float32", "ONNX has no equivalent"),
        ("openvino", A.onnx_average_pool([2, 2], dilations=[2, 1]), (1, 1, 4, 4), "float32", "no dilations"),
        ("torch", A.openvino_max_pool([3], [1], [1], [0]), (1, 1, 5), "float32", "padding is symmetric"),
        ("torch", A.openvino_max_pool([3], [1], [2], [2]), (1, 1, 5), "float32", "pad <= kernel / 2"),
        ("torch", A.openvino_max_pool([2], [1], auto_pad="same_upper"), (1, 1, 5), "float32", "no auto_pad=same_upper"),
        ("torch", A.onnx_average_pool([2], dilations=[2]), (1, 1, 5), "float32", "avg_pool has no dilations"),
        ("torch", OV_CEIL, (1, 1, 5), "float32", "PyTorch has no equivalent"),
        ("torch", A.openvino_max_pool([2], [1]), (1, 1, 5), "uint32", "no PyTorch CPU kernel"),
    ],
)
def test_declines_with_reason(peer_name, spec, shape, dtype, reason) -> None:
    _declines(peer_name, spec, shape, dtype, reason)


@pytest.mark.parametrize("peer_name", ["onnxruntime", "torch", "onnx_reference"])
def test_openvino_ceil_is_taken_where_it_equals_ceil_torch(peer_name) -> None:
    # size 7, kernel 1, stride 3: ceil((7 - 1) / 3) + 1 = 3 windows, the last starts at 6 < 7,
    # so ceil == ceil_torch.
    peer = available_peer(peer_name)
    spec = A.openvino_max_pool([1], [3], rounding_type="ceil")
    x = np.arange(7, dtype=np.float32).reshape(1, 1, 7)
    result = call_peer(peer, spec, x, isolated=False)
    assert result.status == "ok", result.verdict
    _assert_same(spec, x, result.output, peer_name)


# --------------------------------------------------------------------------- index conversion


def test_convert_flat_indices_axis_order_and_type() -> None:
    shape = (2, 3, 2, 4)
    spec = A.openvino_max_pool([1, 1], [1, 1], axis=1, index_element_type="i32")
    flat = np.arange(np.prod(shape)).reshape(shape)
    got, notes = convert_flat_indices(flat, spec, shape)
    # "The upper bound is the product of dimensions starting from the one pointed by 'axis'"
    np.testing.assert_array_equal(got, flat % (3 * 2 * 4))
    assert got.dtype == np.int32 and any("modulo 24" in n for n in notes)

    onnx = A.onnx_max_pool([1, 1], storage_order=1)
    per_plane = np.broadcast_to(np.arange(8).reshape(1, 1, 2, 4), shape)
    got, _ = convert_flat_indices(per_plane, onnx, shape, per_plane=True)
    # Column-major within each plane: element (h, w) of a 2x4 plane is w * 2 + h.
    h, w = np.meshgrid(np.arange(2), np.arange(4), indexing="ij")
    plane = (np.arange(6).reshape(2, 3, 1, 1)) * 8
    np.testing.assert_array_equal(got, plane + (w * 2 + h))
    neg, _ = convert_flat_indices(np.full(shape, -1), onnx, shape, per_plane=True)
    assert (neg == -1).all()


# --------------------------------------------------------------------------- divergences found
# Each test below pins one real divergence between a runtime and the engine, and shows which
# engine policy (if any) reproduces the runtime. A failure means the runtime changed.


def _run(peer_name: str, spec: PoolSpec, x: np.ndarray):
    result = call_peer(available_peer(peer_name), spec, x, isolated=False)
    assert result.status == "ok", result.verdict
    return result.output


def test_openvino_overhanging_ceil_window_divides_by_full_kernel() -> None:
    from poolcheck.spec.policy import Policy

    spec = A.openvino_avg_pool([3], [2], [1], [1], exclude_pad=False, rounding_type="ceil_torch")
    x = np.ones((1, 1, 6), np.float32)
    out = _run("openvino", spec, x)
    engine = run_spec(spec, x)[0]
    assert engine[0, 0, -1] == pytest.approx(0.5)  # one input + one pad element, clipped window
    assert out.values[0, 0, -1] == pytest.approx(1 / 3)
    np.testing.assert_allclose(out.values, run_spec(spec, x, policy=Policy(divisor="full"))[0], rtol=1e-6)


def test_openvino_same_with_ceil_rounding_adds_a_window() -> None:
    spec = A.openvino_max_pool([1], [3], auto_pad="same_upper", rounding_type="ceil")
    x = np.array([[[1.0, 2.0]]], np.float32)
    assert run_spec(spec, x)[0].shape == (1, 1, 1)  # "ceil(input / stride)" = 1
    assert _run("openvino", spec, x).values.shape == (1, 1, 2)


def test_openvino_lowest_value_index() -> None:
    spec = A.openvino_max_pool([1], [2])
    x = np.array([[[5, -3, -128, 100]]], np.int8)
    engine_idx = run_spec(spec, x)[1]
    out = _run("openvino", spec, x)
    np.testing.assert_array_equal(out.values, [[[5, -128]]])
    assert engine_idx[0, 0, 1] == 2 and out.indices[0, 0, 1] == 0


def test_openvino_computes_int64_in_32_bits() -> None:
    spec = A.openvino_max_pool([2], [2])
    x = np.array([[[2**40 + 1, 2**40, 3, 2**33]]], np.int64)
    out = _run("openvino", spec, x)
    np.testing.assert_array_equal(run_spec(spec, x)[0], [[[2**40 + 1, 2**33]]])
    assert not np.array_equal(out.values, [[[2**40 + 1, 2**33]]])


def test_onnxruntime_same_pads_ignore_dilation() -> None:
    spec = A.onnx_average_pool([3], [3], dilations=[2], auto_pad="SAME_UPPER", count_include_pad=1)
    x = np.array([[[1.0, 2.0]]], np.float32)
    # Engine: dilated kernel 5, total pad (1-1)*3 + 5 - 2 = 3 -> begin 1, end 2; window taps
    # -1, 1, 3 -> one input element (2.0), three inside the padded input -> 2/3.
    assert run_spec(spec, x)[0][0, 0, 0] == pytest.approx(2 / 3)
    assert _run("onnxruntime", spec, x).values[0, 0, 0] == pytest.approx(0.5)


def test_onnxruntime_wholly_padded_max_window_is_lowest_finite() -> None:
    from poolcheck.spec.policy import Policy

    spec = A.openvino_max_pool([2], [2], [1], [1], dilations=[2], rounding_type="ceil_torch")
    x = np.array([[[7.0]]], np.float32)  # taps -1 and 1: both outside the input
    out = _run("onnxruntime", spec, x)
    assert run_spec(spec, x)[0][0, 0, 0] == -np.inf
    np.testing.assert_array_equal(out.values, run_spec(spec, x, policy=Policy(empty_max="lowest"))[0])


def test_onnx_reference_maxpool_stride_one_indices_are_per_plane() -> None:
    spec = A.onnx_max_pool([2])
    x = np.arange(12, dtype=np.float32).reshape(1, 2, 6)
    out = _run("onnx_reference", spec, x)
    engine_idx = run_spec(spec, x)[1]
    # "the values in indices are in [0, N x C x D1 x ... x Dn)": channel 1 starts at 6.
    assert engine_idx[0, 1, 0] == 7
    assert out.indices[0, 1, 0] == 1


def test_onnx_same_upper_negative_pad_moves_the_window_in_the_engine_and_onnxruntime() -> None:
    spec = A.onnx_max_pool([1], [3], auto_pad="SAME_UPPER")
    x = np.array([[[1.0, 2.0, 3.0]]], np.float32)
    # "pad_shape = (output - 1) * stride + kernel - input" = 0 * 3 + 1 - 3 = -2, applied as written:
    # pads -1/-1, the window starts at position 1.
    assert run_spec(spec, x)[0][0, 0, 0] == 2.0
    assert _run("onnxruntime", spec, x).values[0, 0, 0] == 2.0


def test_onnxruntime_valid_with_ceil_mode_rounds_up() -> None:
    spec = A.onnx_max_pool([2], [2], auto_pad="VALID", ceil_mode=1)
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    # "VALID: output_spatial_shape[i] = ceil((5 - 2 + 1) / 2)" = 2
    assert run_spec(spec, x)[0].shape == (1, 1, 2)
    assert _run("onnxruntime", spec, x).values.shape == (1, 1, 3)


def test_torch_avg_pool3d_rejects_input_smaller_than_kernel_despite_padding() -> None:
    peer = available_peer("torch")
    spec = A.openvino_avg_pool([3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1])
    x = np.ones((1, 1, 2, 2, 2), np.float32)
    assert run_spec(spec, x)[0].shape == (1, 1, 2, 2, 2)
    result = call_peer(peer, spec, x, isolated=False)
    assert result.status == "rejects" and "smaller than kernel" in result.message
    spec2 = A.openvino_avg_pool([3, 3], [1, 1], [1, 1], [1, 1])  # the 2-D kernel takes it
    assert call_peer(peer, spec2, x[:, :, 0], isolated=False).status == "ok"


def test_a_batch_is_translated_once_per_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    # supports() translates every item of an in-process call and run_many() used to translate
    # it again: the translation is kept for the call (the results unchanged), a declined item
    # is translated once and declined, and new options drop whatever was kept.
    peer = available_peer("onnxruntime")
    calls: list[tuple[int, ...]] = []
    translate = type(peer).translate

    def counting(self, spec, shape, dtype):  # type: ignore[no-untyped-def]
        calls.append(tuple(shape))
        return translate(self, spec, shape, dtype)

    monkeypatch.setattr(type(peer), "translate", counting)
    items = spread(5, 6)
    spec0, x0 = items[0]
    items.append((spec0, x0.astype(np.int16)))  # ONNX MaxPool/AveragePool-22 take no int16
    alone = [call_peer_many(peer, [item], isolated=False)[0] for item in items]
    calls.clear()
    batched = call_peer_many(peer, items, isolated=False)
    assert len(calls) == len(items)
    assert batched[-1].status == "declined"
    for a, b in zip(alone, batched):
        assert (a.status, a.message) == (b.status, b.message)
        if a.output is not None and b.output is not None:
            np.testing.assert_array_equal(a.output.values, b.output.values)
    peer.configure({})
    assert "_translations" not in peer.__dict__
