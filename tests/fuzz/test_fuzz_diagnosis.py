"""The diagnosis names only what a replay reproduces, says which variant explains which elements,
and weighs every class.

Planted peers here are slow loops written from the behaviour they model (not poolcheck's engine
under a policy), so a diagnosis that names a variant must have found the same behaviour.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from poolcheck.corpus import KNOWN_DIR
from poolcheck.engines import get_engine
from poolcheck.fuzz import diagnosis as D
from poolcheck.fuzz.diagnosis import diagnose_output, diagnose_rejection, replay, search, severity_of, variants
from poolcheck.fuzz.known import known_entries
from poolcheck.results import FindingKind, Severity
from poolcheck.spec import attributes as A
from poolcheck.spec import dtypes
from poolcheck.spec.shape import resolve

ENGINE = get_engine("auto")
FMAX = float(np.finfo(np.float32).max)


def taps(o: int, stride: int, pad_begin: int, kernel: int, dilation: int = 1) -> list[int]:
    return [o * stride - pad_begin + j * dilation for j in range(kernel)]


# --------------------------------------------------------------------------- planted combinations


def avg_padded_divisor_nan_empty(x: np.ndarray, kernel: int, stride: int, pb: int, pe: int, out: int,
                                 count_padding: bool = True) -> np.ndarray:
    """An average that divides by the taps inside the padded input (padding counted) or by the
    input elements only, and gives NaN for a window holding no input element."""
    size = x.shape[-1]
    res = np.zeros((1, 1, out), dtype=x.dtype)
    for o in range(out):
        t = taps(o, stride, pb, kernel)
        inside = [i for i in t if 0 <= i < size]
        padded = [i for i in t if -pb <= i < size + pe]
        div = len(padded) if count_padding else len(inside)
        res[0, 0, o] = np.nan if not inside else sum(float(x[0, 0, i]) for i in inside) / div
    return res


def test_divisor_and_empty_window_are_both_named_with_their_elements() -> None:
    spec = A.openvino_avg_pool([3], [2], [3], [2], exclude_pad=False, rounding_type="floor")
    x = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)
    out = resolve(spec, x.shape).output_shape[-1]
    peer = avg_padded_divisor_nan_empty(x, 3, 2, 3, 2, out, count_padding=False)
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert d.explained, d
    assert set(d.atoms) == {"divisor=valid", "empty_avg=nan"}
    # independent counts: windows without an input element; windows whose padded count differs
    empty = sum(1 for o in range(out) if not [i for i in taps(o, 2, 3, 3) if 0 <= i < 7])
    padded = sum(1 for o in range(out) if (lambda t: [i for i in t if 0 <= i < 7]
                                           and len([i for i in t if -3 <= i < 9]) != len([i for i in t if 0 <= i < 7])
                                           )(taps(o, 2, 3, 3)))
    assert dict((k, nv) for k, nv, _ni in d.attribution) == {"empty_avg=nan": empty, "divisor=valid": padded}
    assert f"values at {empty} position" in d.text and f"values at {padded} position" in d.text
    assert d.severity is Severity.VIOLATION  # padding not counted although exclude_pad is false


def max_nan_ignored_empty_lowest(x: np.ndarray, kernel: int, stride: int, pb: int, out: int
                                 ) -> tuple[np.ndarray, np.ndarray]:
    """Max where numbers win over NaN and a window wholly in padding gives -FLT_MAX (index -1)."""
    size = x.shape[-1]
    vals = np.zeros((1, 1, out), dtype=np.float32)
    idx = np.full((1, 1, out), -1, dtype=np.int64)
    for o in range(out):
        inside = [i for i in taps(o, stride, pb, kernel) if 0 <= i < size]
        nums = [i for i in inside if not math.isnan(x[0, 0, i])]
        if not inside:
            vals[0, 0, o] = -FMAX
        elif not nums:
            vals[0, 0, o], idx[0, 0, o] = np.nan, inside[0]
        else:
            best = max(nums, key=lambda i: (x[0, 0, i], -i))
            vals[0, 0, o], idx[0, 0, o] = x[0, 0, best], best
    return vals, idx


def test_nan_and_empty_window_combination_attributed() -> None:
    spec = A.openvino_max_pool([2], [2], [2], [0])
    x = np.asarray([1, np.nan, np.nan, 4, 5, np.nan], dtype=np.float32).reshape(1, 1, 6)
    out = resolve(spec, x.shape).output_shape[-1]
    vals, idx = max_nan_ignored_empty_lowest(x, 2, 2, 2, out)
    d = diagnose_output(ENGINE, spec, x, vals, idx)
    assert d.explained and set(d.atoms) == {"nan=ignore", "empty_max=lowest"}
    by_key = {k: (nv, ni) for k, nv, ni in d.attribution}
    assert by_key["empty_max=lowest"] == (1, 0)  # window 0: taps -2, -1
    mixed = sum(1 for o in range(out) if (lambda v: any(np.isnan(v)) and not all(np.isnan(v)))(
        [x[0, 0, i] for i in taps(o, 2, 2, 2) if 0 <= i < 6]))
    assert mixed == 3 and by_key["nan=ignore"][0] == mixed  # (1, nan), (nan, 4), (5, nan)
    assert d.severity is Severity.UNSPECIFIED
    # the bounded combination search finds the same pair on its own
    placement = D.Placement(resolve(spec, x.shape))
    found = search._combinations(ENGINE, spec, x, [(None, placement)], [None], vals, idx, {}, float("inf"))
    assert found is not None and set(found.atoms) == {"nan=ignore", "empty_max=lowest"}


# --------------------------------------------------------------------------- torch's empty-window index


def torch_like_max(x: np.ndarray, kernel: int, stride: int, pad: int, dilation: int, out: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's CPU max_pool1d loop: the scan starts at the first tap >= 0 (moved up by whole
    dilations), its index is the start even when no tap lies in the input."""
    size = x.shape[-1]
    vals = np.zeros((1, 1, out), dtype=x.dtype)
    idx = np.zeros((1, 1, out), dtype=np.int64)
    for o in range(out):
        start = o * stride - pad
        end = min(start + (kernel - 1) * dilation + 1, size)
        while start < 0:
            start += dilation
        best, where = -np.inf, start
        for h in range(start, end, dilation):
            if x[0, 0, h] > best or math.isnan(x[0, 0, h]):
                best, where = x[0, 0, h], h
        vals[0, 0, o], idx[0, 0, o] = best, where
    return vals, idx


def test_torch_dilated_empty_window_is_its_index_rule_not_dilations_ignored() -> None:
    spec = A.openvino_max_pool([2], [1], [2], [2], dilations=[3])
    x = np.asarray([5.0, 7.0], dtype=np.float32).reshape(1, 1, 2)
    out = resolve(spec, x.shape).output_shape[-1]
    vals, idx = torch_like_max(x, 2, 1, 2, 3, out)
    d = diagnose_output(ENGINE, spec, x, vals, idx)
    assert d.klass == "empty_index=first-tap", d
    assert "dilations" not in d.klass
    assert d.severity is Severity.UNSPECIFIED
    rep = replay(ENGINE, spec, x, ["dilations:ignored"], vals, idx)
    assert rep is None or not rep.exact  # the old name does not reproduce torch


def test_real_torch_empty_dilated_window() -> None:
    torch = pytest.importorskip("torch")
    spec = A.openvino_max_pool([2], [1], [1], [1], dilations=[2])  # one window: taps -1 and 1, no element
    x = np.asarray([5.0], dtype=np.float32).reshape(1, 1, 1)
    vals, idx = torch.nn.functional.max_pool1d(torch.from_numpy(x), 2, 1, 1, 2, return_indices=True)
    assert idx.item() == 1  # the measured behaviour this class names
    d = diagnose_output(ENGINE, spec, x, vals.numpy(), idx.numpy().astype(np.int64))
    assert d.klass == "empty_index=first-tap", d


def test_torch_last_nan_index() -> None:
    spec = A.openvino_max_pool([3], [3])
    x = np.asarray([np.nan, 1, np.nan, 2, 3, 4], dtype=np.float32).reshape(1, 1, 6)
    vals, idx = torch_like_max(x, 3, 3, 0, 1, 2)
    d = diagnose_output(ENGINE, spec, x, vals, idx)
    assert d.klass == "nan=last-index" and d.explained
    assert d.attribution == (("nan=last-index", 0, 1),)


# --------------------------------------------------------------------------- verification


def test_partial_explanation_names_only_what_replays() -> None:
    spec = A.openvino_avg_pool([3], [2], [2], [2], exclude_pad=True)
    x = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)
    out = resolve(spec, x.shape).output_shape[-1]
    peer = avg_padded_divisor_nan_empty(x, 3, 2, 2, 2, out)
    peer[0, 0, 2] += 100.0  # a window inside the input: nothing explains this
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert not d.explained
    assert "divisor=padded" not in d.atoms  # a partial match names nothing ...
    assert "unexplained values (window inside the input)" in d.atoms
    assert "closest" in d.text and "divisor" in d.text  # ... it is only a lead in the text
    assert ("divisor=padded", 2, 0) in d.attribution
    assert d.severity is Severity.VIOLATION


def test_a_wrong_name_from_the_search_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search claiming a full explanation that does not replay: the class is unexplained."""
    spec = A.openvino_avg_pool([3], [2], [2], [2], exclude_pad=True)
    x = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)
    out = resolve(spec, x.shape).output_shape[-1]
    peer = avg_padded_divisor_nan_empty(x, 3, 2, 2, 2, out)
    real = search._explain_on

    def wrong(*args, **kwargs):  # type: ignore[no-untyped-def]
        ex = real(*args, **kwargs)
        ex.keys[:] = ["empty_avg=nan"]  # changes nothing here: cannot reproduce the peer
        ex.value_mask = np.zeros_like(ex.value_mask)
        return ex

    monkeypatch.setattr(search, "_explain_on", wrong)
    monkeypatch.setattr(variants, "POLICY_VARIANTS", ())  # no combination search to fall back on either
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert not d.explained
    assert "empty_avg=nan" not in d.atoms
    assert any(a.startswith("unexplained values") for a in d.atoms)


def test_unexplained_empty_window_value() -> None:
    spec = A.openvino_max_pool([2], [2], [2], [0])
    x = np.asarray([1, 2, 3, 4], dtype=np.float32).reshape(1, 1, 4)
    ref = replay(ENGINE, spec, x, [], np.zeros((1, 1, 3), np.float32), None)
    assert ref is not None
    peer = ref.values.copy()
    peer[0, 0, 0] = 42.0  # no rule gives 42 for a window wholly in padding
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert d.atoms == ("unexplained values (window wholly in padding)",)
    assert not d.explained


# --------------------------------------------------------------------------- severity


def every_key() -> set[str]:
    keys = {gv.key for gv in D.GEOMETRY_VARIANTS} | {v.key for v in D.POLICY_VARIANTS}
    keys |= {v.key for v in D.INDEX_VARIANTS} | {k for k, _ in D.EMPTY_INDEX_VARIANTS}
    return keys | {f"precision:{t}" for t in set(D.NARROWER.values())}


def test_every_named_variant_has_a_severity_and_violations_quote_the_spec() -> None:
    table = {r.key for r in D.SEVERITY_RULES}
    assert every_key() <= table
    for rule in D.SEVERITY_RULES:
        if rule.severity is Severity.VIOLATION:
            assert rule.quote and rule.why, rule.key
        else:
            assert rule.why, rule.key


def test_severity_depends_on_the_attributes_it_contradicts() -> None:
    excl = A.openvino_avg_pool([2], [2], [1], [1], exclude_pad=True)
    incl = A.openvino_avg_pool([2], [2], [1], [1], exclude_pad=False)
    assert severity_of(["divisor=full"], excl) is Severity.VIOLATION
    assert severity_of(["divisor=full"], incl) is Severity.UNSPECIFIED
    assert severity_of(["avg=input-type-sum", "divisor=full"], excl) is Severity.VIOLATION
    assert severity_of(["nan=ignore"], excl) is Severity.UNSPECIFIED


def test_rejection_is_a_limitation() -> None:
    spec = A.onnx_max_pool([2], [1], [2, 2])
    x = np.zeros((1, 1, 4), dtype=np.float32)
    d = diagnose_rejection(spec, x, "Pad should be smaller than kernel")
    assert d.klass == "rejects: pads >= kernel" and d.severity is Severity.LIMITATION


def test_onnxruntime_same_undilated_kernel_with_negative_end_pad() -> None:
    """Measured (ONNX Runtime 1.32, fuzz find): SAME_UPPER, kernel 2, stride 4, dilation 2 on size 3:
    the undilated-kernel pad total is -1, which cuts the last input element from the window."""
    spec = A.onnx_average_pool([2], [4], None, [2], 0, 1, "SAME_UPPER")
    x = np.arange(1, 13, dtype=np.float32).reshape(2, 2, 3)
    peer = np.asarray([[[1.0], [4.0]], [[7.0], [10.0]]], dtype=np.float32)
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert d.klass == "same:undilated-kernel-cropped" and d.severity is Severity.VIOLATION


# --------------------------------------------------------------------------- measured peer behaviours


def test_openvino_float64_average_in_float32_saturates_both_ways() -> None:
    """Measured (OpenVINO 2026.4, fuzz find): float64 converted to float32 with saturation (inf and
    DBL_MAX become FLT_MAX), summed in float32, and an overflowing result handed back as FLT_MAX.
    It used to be misnamed 'pads:swapped' / 'pads:begin-both-ends' plus unexplained values."""
    spec = A.onnx_average_pool([1, 1, 3], [1, 2, 1], None, None, 0, 1, "VALID")
    x = np.arange(1, 21, dtype=np.float64).reshape(1, 1, 4, 1, 5)
    x[0, 0, 3, 0, 1], x[0, 0, 3, 0, 2] = np.inf, np.finfo(np.float64).max
    peer = np.asarray([[[[[2.0, 3.0, 4.0]], [[7.0, 8.0, 9.0]], [[12.0, 13.0, 14.0]],
                         [[FMAX, FMAX, 1.1342744887950962e+38]]]]])
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert set(d.atoms) == {"precision:float32", "avg=input-type-sum"} and d.explained
    assert not any(a.startswith("pads") for a in d.atoms)
    assert d.severity is Severity.UNSPECIFIED


def test_onnxruntime_empty_window_is_lowest_and_minus_one_per_axis_not_the_seeded_scan() -> None:
    """Measured (ONNX Runtime 1.31): -FLT_MAX and the index of coordinate -1 on every axis; the
    seeded scan (index 0 of the plane) agrees on a few positions only and is not named."""
    spec = A.openvino_max_pool([1, 1, 2], [1, 1, 4], dilations=[1, 1, 2], rounding_type="ceil_torch",
                               auto_pad="same_lower", axis=1, index_element_type="i32")
    x = np.arange(1, 10, dtype=np.float32).reshape(3, 3, 1, 1, 1)
    vals = np.full((3, 3, 1, 1, 1), -FMAX, dtype=np.float32)
    idx = np.asarray([[-3, -2, -1], [0, 1, 2], [0, 1, 2]], dtype=np.int32).reshape(3, 3, 1, 1, 1)
    d = diagnose_output(ENGINE, spec, x, vals, idx)
    assert set(d.atoms) == {"empty_max=lowest", "empty_index=-1-per-axis"}, d


def test_torch_first_tap_index_wraps_with_axis() -> None:
    """PyTorch's first-tap index of an empty window, taken modulo the ``axis`` scope: index 0 of
    the plane and -1 per axis each reproduce some positions; the rule reproducing all is named."""
    spec = A.openvino_max_pool([2], [1], [1], [1], dilations=[2], axis=1)
    x = np.asarray([1.0, 2.0, 3.0, 4.0], dtype=np.float32).reshape(2, 2, 1)
    plane_vals, plane_idx = torch_like_max(x[:1, :1], 2, 1, 1, 2, 1)  # taps -1 and 1: no element
    assert plane_idx[0, 0, 0] == 1 and plane_vals[0, 0, 0] == -np.inf
    vals = np.full((2, 2, 1), -np.inf, dtype=np.float32)
    idx = (np.arange(4).reshape(2, 2, 1) + 1) % 2  # plane * W + 1, whole-tensor, modulo C * W (axis 1)
    d = diagnose_output(ENGINE, spec, x, vals, idx)
    assert d.atoms == ("empty_index=first-tap",), d


def test_onnx_reference_negative_same_pad_split_by_floor_division() -> None:
    """Measured (onnx.reference 1.23): SAME_UPPER, kernel 1, stride 2 on size 2 has pad total -1;
    Python's ``-1 // 2 == -1`` starts the window at element 1 (C division: element 0)."""
    spec = A.openvino_max_pool([1], [2], auto_pad="same_upper")
    x = np.asarray([1.0, 2.0], dtype=np.float32).reshape(1, 1, 2)
    d = diagnose_output(ENGINE, spec, x, np.asarray([[[2.0]]], np.float32), np.asarray([[[1]]]))
    assert d.atoms == ("same:negative-pads-floor-split",), d
    assert d.severity is Severity.UNSPECIFIED


def test_onnx_reference_empty_window_nan() -> None:
    spec = A.openvino_max_pool([1], [2], [0], [2])
    x = np.asarray([1.0], dtype=np.float32).reshape(1, 1, 1)
    d = diagnose_output(ENGINE, spec, x, np.asarray([[[1.0, np.nan]]], np.float32), np.asarray([[[0, -1]]]))
    assert d.atoms == ("empty_max=nan",) and d.attribution == (("empty_max=nan", 1, 0),)


def test_openvino_average_past_the_input_under_same_ceil() -> None:
    """Measured (OpenVINO 2026.4): SAME with ceil rounding adds windows past the input; one whose
    unclipped size is 0 on an axis gives NaN (0/0), one whose size is negative gives -0."""
    spec = A.openvino_avg_pool([1, 1], [2, 3], rounding_type="ceil", auto_pad="same_upper")
    x = np.arange(1, 11, dtype=np.float32).reshape(1, 1, 2, 5)
    peer = np.asarray([[[[1.0, 4.0, -0.0], [np.nan, np.nan, np.nan]]]], dtype=np.float32)
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert set(d.atoms) == {"same:rounding-applied", "empty_avg=signed-divisor"}, d
    assert dict((k, nv) for k, nv, _ni in d.attribution)["empty_avg=signed-divisor"] == 3


def test_openvino_average_past_the_input_excluding_padding() -> None:
    """Measured (OpenVINO 2026.4, poolcheck fuzz --peers onnxruntime,openvino --seed 1): with
    exclude_pad the per-axis size is clipped to the input on both sides, min(end, size) -
    max(start, 0); 0 on an axis gives NaN (0/0), -1 gives -0."""
    spec = A.openvino_avg_pool([2, 3], [3, 3], [0, 2], [1, 1], exclude_pad=True, rounding_type="ceil")
    x = np.arange(1, 31, dtype=np.float32).reshape(2, 3, 5, 1)
    peer = np.asarray([[[[1.5, np.nan], [4.5, np.nan], [-0.0, np.nan]], [[6.5, np.nan], [9.5, np.nan], [-0.0, np.nan]],
                        [[11.5, np.nan], [14.5, np.nan], [-0.0, np.nan]]],
                       [[[16.5, np.nan], [19.5, np.nan], [-0.0, np.nan]], [[21.5, np.nan], [24.5, np.nan],
                                                                           [-0.0, np.nan]],
                        [[26.5, np.nan], [29.5, np.nan], [-0.0, np.nan]]]], dtype=np.float32)
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert d.atoms == ("empty_avg=signed-divisor",), d
    assert dict((k, nv) for k, nv, _ni in d.attribution)["empty_avg=signed-divisor"] == 18


def test_rejection_messages_differing_only_in_a_shape_are_one_class() -> None:
    a = D.normalise_message("RuntimeError: output shape cannot be null or negative, out_shape=(1, -2), x")
    b = D.normalise_message("RuntimeError: output shape cannot be null or negative, out_shape=[3], x")
    assert a == b and "#" in a


def test_onnxruntime_empty_window_index_in_column_major() -> None:
    """Measured (ONNX Runtime 1.32): with storage_order=1 the coordinates -1 are flattened column-major
    (d + D * h + D * H * w = -1 - 2 - 2 on a 2x1x1 plane)."""
    spec = A.onnx_max_pool([1, 1, 2], [1, 1, 1], [0, 0, 1, 0, 0, 1], [1, 1, 2], storage_order=1)
    x = np.asarray([1.0, 2.0], dtype=np.float32).reshape(1, 1, 2, 1, 1)
    vals = np.full((1, 1, 2, 1, 1), -FMAX, dtype=np.float32)
    idx = np.full((1, 1, 2, 1, 1), -5, dtype=np.int64)
    d = diagnose_output(ENGINE, spec, x, vals, idx)
    assert set(d.atoms) == {"empty_max=lowest", "empty_index=-1-per-axis"}, d


def test_index_only_tie_goes_to_an_index_rule_and_then_to_history() -> None:
    """Torch on int8 with axis = the last axis: every empty-window rule gives index 0 (1 % 1). The
    values agree, so the seeded scan (a value policy) is not named; the history breaks the tie."""
    spec = A.openvino_max_pool([1, 2], [1, 4], [0, 1], [0, 1], dilations=[1, 2], axis=3)
    x = np.arange(1, 13, dtype=np.int8).reshape(1, 3, 4, 1)
    vals = np.full((1, 3, 4, 1), -128, dtype=np.int8)
    idx = np.zeros((1, 3, 4, 1), dtype=np.int64)
    assert diagnose_output(ENGINE, spec, x, vals, idx).atoms == ("empty_index=0",)
    seen = diagnose_output(ENGINE, spec, x, vals, idx, {"empty_index=first-tap": 3})
    assert seen.atoms == ("empty_index=first-tap",)


def test_average_leaving_nan_out_like_padding() -> None:
    """onnx.reference pads with NaN and drops every NaN before averaging (onnx/onnx#1384): with
    count_include_pad=0 a real NaN is neither summed nor counted."""
    spec = A.openvino_avg_pool([3], [3], [1], [1], exclude_pad=True)
    x = np.asarray([1.0, np.nan, 4.0, 6.0, 8.0], dtype=np.float32).reshape(1, 1, 5)
    out = resolve(spec, x.shape).output_shape[-1]
    peer = np.zeros((1, 1, out), dtype=np.float32)
    for o in range(out):
        vals = [float(x[0, 0, i]) for i in taps(o, 3, 1, 3) if 0 <= i < 5 and not np.isnan(x[0, 0, i])]
        peer[0, 0, o] = sum(vals) / len(vals) if vals else np.nan
    d = diagnose_output(ENGINE, spec, x, peer, None)
    assert d.atoms == ("avg=nan-skipped",) and d.severity is Severity.UNSPECIFIED


def test_each_focused_behaviour_keeps_its_own_severity() -> None:
    from poolcheck.fuzz import oracles as O
    from poolcheck.fuzz.strategies import FuzzCase
    from poolcheck.peers.base import PeerOutput, PeerResult

    spec = A.openvino_max_pool([2], [2], [2], [0])
    x = np.asarray([1, np.nan, np.nan, 4, 5, np.nan], dtype=np.float32).reshape(1, 1, 6)
    out = resolve(spec, x.shape).output_shape[-1]
    vals, idx = max_nan_ignored_empty_lowest(x, 2, 2, 2, out)
    case = FuzzCase("MaxPool-14", {}, spec, x, {})
    base, geom = O.expected_for(ENGINE, case)
    f = O.check_peer(case, "planted", PeerResult("ok", PeerOutput(vals, idx)), ENGINE, base, geom)
    assert f is not None and f.severity is Severity.UNSPECIFIED
    assert {c.atom: c.severity for c in f.focused()} == {"nan=ignore": Severity.UNSPECIFIED,
                                                          "empty_max=lowest": Severity.UNSPECIFIED}
    excl = A.openvino_avg_pool([3], [2], [3], [2], exclude_pad=False)
    x2 = np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)
    n2 = resolve(excl, x2.shape).output_shape[-1]
    peer = avg_padded_divisor_nan_empty(x2, 3, 2, 3, 2, n2, count_padding=False)
    case2 = FuzzCase("AvgPool-14", {}, excl, x2, {})
    base2, geom2 = O.expected_for(ENGINE, case2)
    f2 = O.check_peer(case2, "planted", PeerResult("ok", PeerOutput(peer, None)), ENGINE, base2, geom2)
    assert f2 is not None and f2.severity is Severity.VIOLATION
    assert {c.atom: c.severity for c in f2.focused()} == {"divisor=valid": Severity.VIOLATION,
                                                           "empty_avg=nan": Severity.UNSPECIFIED}


def test_torch_first_tap_index_goes_through_the_storage_order_conversion() -> None:
    """PyTorch's row-major first-tap index (h=0, w=1 -> 1 on a 3x1 plane) is converted to
    storage_order=1 like any index (read as element (1, 0): column-major 1)."""
    spec = A.onnx_max_pool([2, 2], [2, 4], [0, 1, 0, 1], [1, 2], storage_order=1)
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 1, 3, 1)
    vals = np.full((2, 1, 1, 1), -np.inf, dtype=np.float32)
    idx = np.asarray([1, 4]).reshape(2, 1, 1, 1)  # measured with torch 2.13 through poolcheck's adapter
    d = diagnose_output(ENGINE, spec, x, vals, idx)
    assert d.atoms == ("empty_index=first-tap",), d


def test_an_element_equal_to_the_lowest_value_keeps_index_0_under_the_seeded_scan() -> None:
    """OpenVINO CPU (measured, 2026.4.1): int8 [1, -128], kernel 1 -> indices [0, 0]: the scan starts
    from (lowest, index 0) with a strict '>', so -128 never replaces the seed. Values agree; the
    index difference is the seeded scan's own (no window is empty here)."""
    spec = A.openvino_max_pool([1], [1], [0], [0])
    x = np.array([[[1, -128]]], np.int8)
    d = diagnose_output(ENGINE, spec, x, x.copy(), np.array([[[0, 0]]], np.int64))
    assert d.atoms == ("max=seeded-scan",)


def known_history(peer: str) -> Counter[str]:
    """The history a fuzz session starts ``peer``'s diagnoses with: the registry's classes."""
    entries, errors = known_entries([KNOWN_DIR])
    assert not errors
    return Counter(e.sig.detail for e in entries if e.kind == FindingKind.PEER and e.sig.subject == peer)


# ONNX Runtime 1.32 MaxPool, measured on the 1-D input [1, 6, 8, 3, 2, 7, 5, 4][:size]: (size,
# kernel, stride, dilation, auto_pad, ceil_mode) -> values, indices. SAME pads from the undilated
# kernel, then the dilated windows; the output size from the explicit formula, ceil_mode honoured
# (ceil adds a last window where the division leaves a remainder: sizes 7 and 4 here).
ORT_DILATED_SAME = (
    ((8, 3, 1, 2, "SAME_UPPER", 0), [6.0, 8.0, 7.0, 8.0, 7.0, 5.0], [1, 2, 5, 2, 5, 6]),
    ((8, 3, 1, 2, "SAME_UPPER", 1), [6.0, 8.0, 7.0, 8.0, 7.0, 5.0], [1, 2, 5, 2, 5, 6]),
    ((7, 2, 3, 2, "SAME_UPPER", 0), [8.0, 7.0], [2, 5]),
    ((7, 2, 3, 2, "SAME_UPPER", 1), [8.0, 7.0, 5.0], [2, 5, 6]),
    ((4, 2, 3, 3, "SAME_UPPER", 0), [3.0], [3]),
    ((4, 2, 3, 3, "SAME_UPPER", 1), [3.0, 3.0], [3, 3]),
    ((5, 3, 2, 2, "SAME_LOWER", 0), [6.0, 6.0], [1, 1]),
    ((5, 3, 2, 2, "SAME_LOWER", 1), [6.0, 6.0], [1, 1]),
    ((8, 2, 3, 3, "SAME_LOWER", 0), [3.0, 5.0], [3, 6]),
    ((8, 2, 3, 3, "SAME_LOWER", 1), [3.0, 5.0, 5.0], [3, 6, 6]),
)


@pytest.mark.parametrize(("config", "values", "indices"), ORT_DILATED_SAME)
def test_onnxruntime_dilated_same_max_with_and_without_ceil_mode(config: tuple, values: list, indices: list) -> None:
    """Measured (ONNX Runtime 1.32): same:undilated-kernel reproduces its MaxPool under both
    ceil_modes, and on these inputs nothing else does (dilations ignored included) -- except on
    size 5, kernel 3, stride 2, dilation 2, SAME_LOWER, where onnx.reference's MaxPool placement
    (same:lower-as-upper-floor-size: pads 1/1 from the dilated kernel, floor(5 / 2) = 2 outputs)
    places the same two windows: a twin kept as the alternative, not the name."""
    size, kernel, stride, dilation, auto_pad, ceil_mode = config
    spec = A.onnx_max_pool([kernel], [stride], None, [dilation], ceil_mode, auto_pad)
    x = np.asarray([1, 6, 8, 3, 2, 7, 5, 4][:size], dtype=np.float32).reshape(1, 1, size)
    vals = np.asarray(values, dtype=np.float32).reshape(1, 1, -1)
    idx = np.asarray(indices, dtype=np.int64).reshape(1, 1, -1)
    rep = replay(ENGINE, spec, x, ["same:undilated-kernel"], vals, idx)
    assert rep is not None and rep.exact
    d = diagnose_output(ENGINE, spec, x, vals, idx)
    twin = config[:4] == (5, 3, 2, 2)
    assert d.atoms == ("same:undilated-kernel",), d
    assert d.alternatives == ((("same:lower-as-upper-floor-size",),) if twin else ()), d
    assert d.ambiguous == twin, d


def test_onnxruntime_dilated_same_ceil_with_nan_is_its_recorded_behaviours() -> None:
    """Measured (ONNX Runtime 1.32, the seed-4 fuzz find): MaxPool SAME_UPPER, kernel 2, stride 3,
    dilation 3, ceil_mode 1 on size 4 reads windows {0, 3} and {3} (SAME pads 0/1 from the
    undilated kernel, then dilated), and its scan keeps a NaN only as a window's first element.
    On this decreasing input 'dilations ignored' (windows {0, 1} and {3}) gives the same outputs
    with one variant instead of two. With ONNX Runtime's history (the registry records both
    behaviours of this peer, and never dilations ignored) the recorded pair is named."""
    spec = A.onnx_max_pool([1, 2], [1, 3], None, [1, 3], 1, "SAME_UPPER")
    x = -np.arange(1, 25, dtype=np.float32).reshape(2, 3, 1, 4)
    x[0, 2, 0, 3] = np.nan
    vals = np.asarray([[[[-1.0, -4.0]], [[-5.0, -8.0]], [[-9.0, np.nan]]],
                       [[[-13.0, -16.0]], [[-17.0, -20.0]], [[-21.0, -24.0]]]], dtype=np.float32)
    idx = np.asarray([[[[0, 3]], [[4, 7]], [[8, 11]]], [[[12, 15]], [[16, 19]], [[20, 23]]]], dtype=np.int64)
    recorded = replay(ENGINE, spec, x, ["same:undilated-kernel", "nan=first"], vals, idx)
    assert recorded is not None and recorded.exact
    history = known_history("onnxruntime")
    assert history["same:undilated-kernel"] and history["nan=first"] and not history["dilations:ignored"]
    d = diagnose_output(ENGINE, spec, x, vals, idx, history)
    assert set(d.atoms) == {"same:undilated-kernel", "nan=first"}, d
    assert d.ambiguous  # the other fit stays on record as a possibility


def test_openvino_int16_empty_window_is_named_by_the_empty_window_rule_not_a_seed_zero_scan() -> None:
    # the fuzz find (seed 1): every window wholly in padding; OpenVINO 2026.4.1 CPU, recorded,
    # gives 0 at index 0 (int16 pooled in int32: INT32_MIN's low 16 bits). A max scanned from 0
    # gives the same output here, but OpenVINO's partly padded windows of negatives are right.
    spec = A.openvino_max_pool([1, 1, 2], [1, 1, 4], [0, 0, 0], [0, 0, 0], dilations=[1, 1, 2],
                               rounding_type="ceil", auto_pad="same_lower", axis=-4)
    x = np.array([[[[[1]], [[2]], [[-32768]]]]], dtype=np.int16)
    vals = np.zeros((1, 1, 3, 1, 1), dtype=np.int16)
    idx = np.zeros((1, 1, 3, 1, 1), dtype=np.int64)
    d = diagnose_output(ENGINE, spec, x, vals, idx)
    assert d.explained, d
    assert "int_max:seed-zero" not in d.atoms
    assert set(d.atoms) == {"empty_max=int32-lowest-wrapped", "empty_index=0"}
    assert severity_of(d.atoms, spec) is Severity.UNSPECIFIED  # [OV-PAD-NEG-INF] leaves integers open


def test_int32_lowest_wrapped_fills_only_the_empty_windows_of_narrow_signed_types() -> None:
    # a window of negatives partly in padding keeps its own max; only the empty window wraps to 0
    spec = A.openvino_max_pool([2], [1], [1], [2])
    for dtype in (np.int8, np.int16):
        x = np.array([[[-5, -3, -7]]], dtype=dtype)
        low = np.iinfo(dtype).min
        vals = np.array([[[-5, -3, -3, -7, 0]]], dtype=dtype)
        idx = np.array([[[0, 1, 1, 2, 0]]], dtype=np.int64)
        d = diagnose_output(ENGINE, spec, x, vals, idx)
        assert d.explained and "empty_max=int32-lowest-wrapped" in d.atoms, (dtype, d)
        assert "int_max:seed-zero" not in d.atoms, d
        # the lowest value as the fill is the spec's own answer: nothing to explain
        vals[0, 0, 4] = low
        assert "empty_max=int32-lowest-wrapped" not in diagnose_output(ENGINE, spec, x, vals, idx).atoms


def test_a_bfloat16_seeded_scan_is_scanned_in_float32_and_rounded_back() -> None:
    """OpenVINO's CPU plugin without avx512_core computes a bfloat16 MaxPool with indices in
    float32 from float32's lowest value, which rounds to -inf in bfloat16: a window of NaN alone
    gives -inf and its plane's first index, an element equal to bfloat16's lowest value wins (it is
    above float32's). The seeded scan names that output (it was 'unexplained' and 'nan=skip' on an
    AVX2 EPYC), and the engine's own answer is not it."""
    bf16 = dtypes.BFLOAT16
    spec = A.onnx_max_pool([1], [1], [0, 0])
    low = float(dtypes.lowest(np.dtype(bf16)))
    x = np.array([[[1.0, np.nan, low], [np.nan, 2.0, 3.0]]]).astype(bf16)
    values = np.array([[[1.0, -np.inf, low], [-np.inf, 2.0, 3.0]]]).astype(bf16)
    indices = np.array([[[0, 0, 2], [3, 4, 5]]], np.int64)
    d = diagnose_output(ENGINE, spec, x, values, indices)
    assert d.atoms == ("max=seeded-scan",)
