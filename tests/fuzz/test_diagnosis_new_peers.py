"""Diagnosis rows added for the classes the new peers (jax, openvino-onnx) showed: an input-type
sum over windows that start inside the input (a negative ONNX SAME pad), and storage_order=1
applied by transposing the index tensor.

The peers' outputs here are written by hand from the behaviour they model (loops over the
windows, NumPy transposes), not by poolcheck's engine under a policy.
"""

from __future__ import annotations

import numpy as np

from poolcheck.engines import get_engine
from poolcheck.fuzz.diagnosis import diagnose_output, replay
from poolcheck.spec import attributes as A

ENGINE = get_engine("auto")


def test_input_type_sum_with_negative_same_pad() -> None:
    # kernel 2, stride 4, SAME_LOWER on 11 elements: 3 outputs, pad total (3-1)*4 + 2 - 11 = -1,
    # so the windows start inside the input: [1, 2], [5, 6], [9, 10] (element 0 is never read)
    spec = A.onnx_average_pool([2], [4], auto_pad="SAME_LOWER", count_include_pad=1)
    x = np.arange(1, 12, dtype=np.float16).reshape(1, 1, 11)
    x[0, 0, 0] = np.nan  # outside every window
    x[0, 0, 5] = 65504.0
    x[0, 0, 6] = 32.0  # 65504 + 32 rounds to inf in float16 (past 65520), not in a wide sum
    peer = np.empty((1, 1, 3), dtype=np.float16)
    for o, (a, b) in enumerate([(1, 2), (5, 6), (9, 10)]):
        with np.errstate(over="ignore"):
            peer[0, 0, o] = (x[0, 0, a] + x[0, 0, b]) / np.float16(2)  # summed in float16
    assert np.isinf(peer[0, 0, 1])
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert d.atoms == ("avg=input-type-sum",), d.text


def _row_major_argmax_2d(x: np.ndarray, kernel: tuple[int, int], strides: tuple[int, int]) -> np.ndarray:
    """Whole-tensor row-major argmax of each VALID window (no NaN in ``x``)."""
    n, c, h, w = x.shape
    oh, ow = (h - kernel[0]) // strides[0] + 1, (w - kernel[1]) // strides[1] + 1
    out = np.zeros((n, c, oh, ow), dtype=np.int64)
    for i in range(n):
        for j in range(c):
            for p in range(oh):
                for q in range(ow):
                    r0, c0 = p * strides[0], q * strides[1]
                    win = x[i, j, r0:r0 + kernel[0], c0:c0 + kernel[1]]
                    r, cc = np.unravel_index(int(np.argmax(win)), win.shape)
                    out[i, j, p, q] = (i * c + j) * h * w + (r0 + r) * w + (c0 + cc)
    return out


def test_storage_order_transposed_index_tensor() -> None:
    # OpenVINO's ONNX frontend: storage_order=1 -> Transpose(indices, [0, 1, 3, 2]) of row-major ones
    spec = A.onnx_max_pool([1, 1], [2, 1], auto_pad="VALID", storage_order=1)
    x = np.arange(2 * 6 * 3, dtype=np.float32).reshape(1, 2, 6, 3)
    values = x[:, :, ::2, :]
    row_major = _row_major_argmax_2d(x, (1, 1), (2, 1))
    peer_indices = np.transpose(row_major, (0, 1, 3, 2))
    d = diagnose_output(ENGINE, spec, x, values, peer_indices)
    assert d.atoms == ("index:storage_order-transposed",), d.text
    assert d.severity is not None and d.severity.value == "violation"
    r = replay(ENGINE, spec, x, ["index:storage_order-transposed"], values, peer_indices)
    assert r is not None and r.exact
    # real column-major indices are not mistaken for it
    col = np.zeros_like(row_major)
    for idx in np.ndindex(row_major.shape):
        plane, rest = divmod(int(row_major[idx]), 6 * 3)
        rr, cc = divmod(rest, 3)
        col[idx] = plane * 18 + cc * 6 + rr
    assert diagnose_output(ENGINE, spec, x, values, col).atoms == ()


def test_transposed_variant_needs_a_symmetric_output() -> None:
    # a 3x2 output transposed is 2x3: no index tensor of the values' shape, the variant does not apply
    spec = A.onnx_max_pool([1, 1], [2, 2], auto_pad="VALID", storage_order=1)
    x = np.arange(6 * 4, dtype=np.float32).reshape(1, 1, 6, 4)
    values = x[:, :, ::2, ::2]
    row_major = _row_major_argmax_2d(x, (1, 1), (2, 2))
    r = replay(ENGINE, spec, x, ["index:storage_order-transposed"], values, row_major)
    assert r is not None and not r.exact
    d = diagnose_output(ENGINE, spec, x, values, row_major)
    assert d.atoms == ("index:storage_order-ignored",), d.text


def test_input_type_sum_nested_by_axis() -> None:
    # XLA's reduce_window(add) sums each row along the last axis, then the row sums: a float16 row
    # that overflows to inf meets a -inf from the other row as NaN (a flat row-major scan stays -inf)
    spec = A.openvino_avg_pool([2, 2], [2, 2], [0, 0], [0, 0], False, "floor", "explicit")
    x = np.array([[[[-np.inf, 0.0], [65504.0, 40.0]]]], dtype=np.float16)
    with np.errstate(all="ignore"):
        rows = [np.float16(np.float16(0) + r[0]) + r[1] for r in x[0, 0]]  # 0 + a + b per row
        total = np.float16(np.float16(0) + rows[0]) + rows[1]
        peer = np.full((1, 1, 1, 1), total / np.float16(4), dtype=np.float16)
    assert np.isnan(peer).all()
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert d.atoms == ("avg=input-type-sum-by-axis",), d.text
    # where both orders agree, the flat one is named (it was registered first)
    y = np.array([[[[1.0, 2.0], [65504.0, 40.0]]]], dtype=np.float16)
    with np.errstate(all="ignore"):
        flat = np.full((1, 1, 1, 1), (((np.float16(0) + y[0, 0, 0, 0]) + y[0, 0, 0, 1]) + y[0, 0, 1, 0] + y[0, 0, 1, 1])
                       / np.float16(4), dtype=np.float16)
    assert np.isinf(flat).all()
    assert diagnose_output(ENGINE, spec, y, flat, None).atoms == ("avg=input-type-sum",)


def test_transposed_index_tensor_of_another_shape() -> None:
    # a 2x3 output: the frontend's Transpose gives a 3x2 index tensor; named, not passed silently
    spec = A.onnx_max_pool([1, 1], [2, 1], auto_pad="VALID", storage_order=1)
    x = np.arange(2 * 4 * 3, dtype=np.float32).reshape(1, 2, 4, 3)
    values = x[:, :, ::2, :]
    peer_indices = np.transpose(_row_major_argmax_2d(x, (1, 1), (2, 1)), (0, 1, 3, 2))
    assert peer_indices.shape == (1, 2, 3, 2)
    d = diagnose_output(ENGINE, spec, x, values, peer_indices)
    assert d.atoms == ("index:storage_order-transposed",), d.text
    # any other shape stays unexplained
    d = diagnose_output(ENGINE, spec, x, values, peer_indices[:, :, :2, :])
    assert d.atoms == ("shape: indices unexplained",) and not d.explained


def test_wide_sum_rounded_to_the_input_type() -> None:
    # tract: float16 summed in float32, the sum rounded to float16 before the division
    spec = A.openvino_avg_pool([3], [3], [0], [0], False, "floor", "explicit")
    x = np.array([[[65504.0, 8.0, 8.0]]], dtype=np.float16)
    with np.errstate(over="ignore"):
        peer = np.array([[[np.float16(np.float32(65504) + 8 + 8) / np.float16(3)]]], dtype=np.float16)
    assert np.isinf(peer).all()  # 65520 rounds to inf; a float16 running sum stays at 65504
    assert diagnose_output(ENGINE, spec, x, peer, None).atoms == ("avg=wide-sum-rounded",)


def test_an_overflow_in_another_order_is_the_input_type_sum() -> None:
    """-M + 1 + M + -M in float32 (M its largest value): row-major, -M; with the two -M added
    first, as XLA's reduce_window may, -inf. Which order a runtime takes the text leaves open: where
    the window's magnitudes reach past M, an inf, -inf or NaN answer is the input-type sum's, and
    a finite answer there, or an infinity where they do not reach, is not (a 90 s every-peer
    campaign, seed 15, had jax's and onnx.reference's 'unexplained values', a violation)."""
    big = float(np.finfo(np.float32).max)
    spec = A.openvino_avg_pool([4], [4], [0], [0], False, "floor", "explicit")
    x = np.array([[[-big, 1.0, big, -big, 1.0, 2.0, 3.0, 4.0]]], dtype=np.float32)
    other_order = np.array([[[-np.inf, 2.5]]], dtype=np.float32)
    d = diagnose_output(ENGINE, spec, x, other_order, None)
    assert d.atoms == ("avg=input-type-sum",) and d.explained, d.text
    # an infinity where no order overflows (the second window) is no such sum
    assert not diagnose_output(ENGINE, spec, x, np.array([[[-big / 4, np.inf]]], dtype=np.float32), None).explained
