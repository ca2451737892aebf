"""Shape rules: poolcheck.output_shape, poolcheck.spec.resolve and axis_rules against the formulas
re-implemented in tests/oracle.py, and against the shapes printed in the source documents."""

from __future__ import annotations

from typing import Any

import numpy as np
import oracle
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import poolcheck
from poolcheck import spec as S
from poolcheck.api import run_spec
from poolcheck.engines import available_engines
from poolcheck.spec import attributes as A
from poolcheck.spec.shape import axis_rules, resolve
from poolcheck.spec.shape_report import only_runtime_rule, shape_report, symbolic_report

ROUNDINGS = ("floor", "ceil", "ceil_torch")
AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower")
ONNX_PAD = {"explicit": "NOTSET", "valid": "VALID", "same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER"}


@st.composite
def axis_params(draw: Any) -> dict[str, Any]:
    return dict(
        size=draw(st.integers(1, 40)),
        kernel=draw(st.integers(1, 8)),
        stride=draw(st.integers(1, 6)),
        dilation=draw(st.integers(1, 4)),
        pad_begin=draw(st.integers(0, 9)),
        pad_end=draw(st.integers(0, 9)),
        rounding=draw(st.sampled_from(ROUNDINGS)),
        auto_pad=draw(st.sampled_from(AUTO_PADS)),
    )


def _oracle_axis(p: dict[str, Any]) -> oracle.Axis | None:
    try:
        return oracle.openvino_axis(p["size"], p["kernel"], p["stride"], p["dilation"], p["pad_begin"],
                                    p["pad_end"], p["rounding"], p["auto_pad"])
    except oracle.OracleShapeError:
        return None


# --------------------------------------------------------------------------- output_shape / resolve


@given(axes=st.lists(axis_params(), min_size=1, max_size=3), batch=st.integers(1, 3), channels=st.integers(1, 3),
       data=st.data())
def test_output_shape_matches_formulas(axes: list[dict[str, Any]], batch: int, channels: int, data: Any) -> None:
    # one rounding / auto_pad per op: take the first axis's
    rounding, auto_pad = axes[0]["rounding"], axes[0]["auto_pad"]
    for p in axes:
        p["rounding"], p["auto_pad"] = rounding, auto_pad
    expected = [_oracle_axis(p) for p in axes]
    kw = dict(kernel=[p["kernel"] for p in axes], strides=[p["stride"] for p in axes],
              pads_begin=[p["pad_begin"] for p in axes], pads_end=[p["pad_end"] for p in axes],
              dilations=[p["dilation"] for p in axes], rounding_type=rounding, auto_pad=auto_pad)
    spatial = [p["size"] for p in axes]
    note(f"output_shape({spatial}, {kw})")
    if any(e is None for e in expected):
        with pytest.raises(poolcheck.AttributeValueError) as info:
            poolcheck.output_shape(spatial, **kw)
        assert info.value.attribute == "kernel"
        assert "kernel" in str(info.value)
        return
    outs = tuple(e.out for e in expected if e is not None)
    assert poolcheck.output_shape(spatial, **kw) == outs
    assert poolcheck.output_shape([batch, channels, *spatial], **kw) == (batch, channels, *outs)
    # the geometry the engines run on: the pads actually applied, too
    geom = S.resolve(S.openvino_max_pool(**kw), (batch, channels, *spatial))
    for g, e in zip(geom.axes, expected):
        assert e is not None
        assert (g.out, g.pad_begin, g.pad_end) == (e.out, e.pad_begin, e.pad_end)


@given(axes=st.lists(axis_params(), min_size=1, max_size=3), ceil_mode=st.sampled_from([0, 1]))
def test_onnx_geometry_matches_formulas(axes: list[dict[str, Any]], ceil_mode: int) -> None:
    auto_pad = ONNX_PAD[axes[0]["auto_pad"]]
    n = len(axes)
    kernel = [p["kernel"] for p in axes]
    strides = [p["stride"] for p in axes]
    dil = [p["dilation"] for p in axes]
    pads = [p["pad_begin"] for p in axes] + [p["pad_end"] for p in axes]
    spatial = [p["size"] for p in axes]
    try:
        expected = oracle.onnx_axes(spatial, kernel, strides, pads, dil, ceil_mode, auto_pad)
    except oracle.OracleShapeError:
        expected = None
    spec = S.onnx_max_pool(kernel, strides, pads, dil, ceil_mode, auto_pad)
    note(f"{spec.describe()} on {spatial}")
    if expected is None:
        with pytest.raises(poolcheck.AttributeValueError, match="kernel"):
            S.resolve(spec, (1, 1, *spatial))
        return
    geom = S.resolve(spec, (1, 1, *spatial))
    assert [(a.out, a.pad_begin, a.pad_end) for a in geom.axes] == [
        (e.out, e.pad_begin, e.pad_end) for e in expected
    ]
    assert len(geom.axes) == n


# --------------------------------------------------------------------------- axis_rules


def _rules(p: dict[str, Any]) -> dict[str, Any]:
    rows = axis_rules(p["size"], p["kernel"], p["stride"], p["dilation"], p["pad_begin"], p["pad_end"],
                      p["rounding"], p["auto_pad"])
    return {r.convention: r for r in rows}


def torch_out(p: dict[str, Any]) -> int | None:
    """PyTorch max_pool1d's output length (aten pooling_output_shape and pool*_shape_check):
    ``floor((size + 2 * pad - dk + (stride - 1 if ceil_mode)) / stride) + 1``, minus one when the
    last window starts in the end padding under ceil_mode; symmetric pads only, ``pad <= kernel // 2``,
    and at least one output."""
    if p["auto_pad"] in ("same_upper", "same_lower"):
        return None
    pb, pe = (0, 0) if p["auto_pad"] == "valid" else (p["pad_begin"], p["pad_end"])
    if pb != pe or 2 * pb > p["kernel"]:
        return None
    ceil_mode = p["rounding"] != "floor"
    dk = (p["kernel"] - 1) * p["dilation"] + 1
    out = (p["size"] + 2 * pb - dk + (p["stride"] - 1 if ceil_mode else 0)) // p["stride"] + 1
    if ceil_mode and (out - 1) * p["stride"] >= p["size"] + pb:
        out -= 1
    return out if out >= 1 else None


@given(p=axis_params())
def test_axis_rules_openvino_rows(p: dict[str, Any]) -> None:
    rows = _rules(p)
    note(f"{p} -> {rows}")
    runtime = _oracle_axis(p)
    assert rows["openvino-runtime"].out == (runtime.out if runtime else None)
    if runtime is not None:
        assert rows["openvino-runtime"].pads == (runtime.pad_begin, runtime.pad_end)
    try:
        written: int | None = oracle.openvino_written_axis(p["size"], p["kernel"], p["stride"], p["dilation"],
                                                           p["pad_begin"], p["pad_end"], p["rounding"], p["auto_pad"])
    except oracle.OracleShapeError:
        written = None
    assert rows["openvino-written"].out == written


@given(p=axis_params())
def test_axis_rules_onnx_row(p: dict[str, Any]) -> None:
    rows = _rules(p)
    note(f"{p} -> {rows}")
    ceil_mode = int(p["rounding"] != "floor")
    try:
        want = oracle.onnx_axis(p["size"], p["kernel"], p["stride"], p["dilation"], p["pad_begin"], p["pad_end"],
                                ceil_mode, ONNX_PAD[p["auto_pad"]])
    except oracle.OracleShapeError:
        want = None
    assert rows["onnx"].out == (want.out if want else None)
    if rows["onnx"].pads is not None and want is not None:
        assert rows["onnx"].pads == (want.pad_begin, want.pad_end)


@given(p=axis_params())
def test_axis_rules_torch_row_where_kernel_fits(p: dict[str, Any]) -> None:
    dk = (p["kernel"] - 1) * p["dilation"] + 1
    pads = 0 if p["auto_pad"] == "valid" else p["pad_begin"] + p["pad_end"]
    if p["size"] + pads < dk:
        return  # see test_axis_rules_torch_row_ceil_mode_kernel_past_input
    assert _rules(p)["torch"].out == torch_out(p)


def test_axis_rules_torch_row_ceil_mode_kernel_past_input() -> None:
    # max_pool1d(zeros(1, 1, 2), kernel_size=2, stride=2, padding=0, dilation=2, ceil_mode=True).shape[-1]
    # is 1 on torch 2.13.0 (measured): (2 + 0 - 3 + 1) // 2 + 1 = 1.
    p = dict(size=2, kernel=2, stride=2, dilation=2, pad_begin=0, pad_end=0, rounding="ceil", auto_pad="explicit")
    assert torch_out(p) == 1
    assert _rules(p)["torch"].out == 1


def test_torch_rule_matches_installed_torch() -> None:
    """The rule above, checked against the installed PyTorch on a grid."""
    torch = pytest.importorskip("torch")
    mismatches = []
    for size in range(1, 8):
        for kernel in range(1, 5):
            for stride in range(1, 4):
                for dilation in (1, 2):
                    for pad in range(3):
                        for ceil_mode in (False, True):
                            p = dict(size=size, kernel=kernel, stride=stride, dilation=dilation, pad_begin=pad,
                                     pad_end=pad, rounding="ceil" if ceil_mode else "floor", auto_pad="explicit")
                            try:
                                got: int | None = torch.nn.functional.max_pool1d(
                                    torch.zeros(1, 1, size), kernel, stride, pad, dilation, ceil_mode=ceil_mode
                                ).shape[-1]
                            except RuntimeError:
                                got = None
                            if got != torch_out(p):
                                mismatches.append((p, got))
    assert not mismatches, mismatches[:5]


# --------------------------------------------------------------------------- documented shapes

#: (source, input spatial shape, attributes, documented output spatial shape)
DOCUMENTED_SHAPES = [
    ("000 example 1", (3, 3), dict(kernel=[2, 2], strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1]), (4, 4)),
    ("000 example 2", (7,), dict(kernel=[3], strides=[1], auto_pad="valid"), (5,)),
    ("000 example 3", (3, 3), dict(kernel=[2, 2], strides=[1, 1], auto_pad="same_lower"), (3, 3)),
    ("000 example 4", (3, 3), dict(kernel=[2, 2], strides=[1, 1], auto_pad="same_upper"), (3, 3)),
    ("000 example 5", (3, 3), dict(kernel=[2, 2], strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
                                   rounding_type="ceil_torch"), (2, 2)),
    ("000 example 6", (3, 3), dict(kernel=[2, 2], strides=[2, 2], rounding_type="ceil", auto_pad="valid"), (2, 2)),
    ("000 example 7", (3, 3), dict(kernel=[2, 2], strides=[1, 1], dilations=[2, 2], pads_begin=[1, 1],
                                   pads_end=[1, 1]), (3, 3)),
    ("000 example 8", (3, 3), dict(kernel=[2, 2], strides=[1, 1]), (2, 2)),
    ("001 layer 2 (explicit)", (32, 32), dict(kernel=[2, 2], strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1]),
     (17, 17)),
    ("001 layer 3 (valid)", (32, 32), dict(kernel=[2, 2], strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
                                           auto_pad="valid"), (16, 16)),
]


@pytest.mark.parametrize("source, spatial, attrs, shape", DOCUMENTED_SHAPES, ids=[d[0] for d in DOCUMENTED_SHAPES])
def test_documented_shapes(source: str, spatial: tuple[int, ...], attrs: dict[str, Any], shape: tuple[int, ...]) -> None:
    n = len(spatial)
    kw = {"pads_begin": [0] * n, "pads_end": [0] * n, "dilations": [1] * n, **attrs}
    assert poolcheck.output_shape(spatial, **kw) == shape, source
    axes = oracle.openvino_axes(spatial, kw["kernel"], kw["strides"], kw["pads_begin"], kw["pads_end"],
                                kw["dilations"], kw.get("rounding_type", "floor"), kw.get("auto_pad", "explicit"))
    assert tuple(a.out for a in axes) == shape, source


def test_xml_same_upper_layer_erratum() -> None:
    """MaxPool-8 page, first <layer>: same_upper, kernel 2, strides 2 on 32x32 prints a 32x32
    output. The page's own rule "same_upper / same_lower: H_out = H" says so too, but the runtime
    (and ONNX: ceil(32 / 2)) gives 16: the written value is an erratum."""
    p = dict(size=32, kernel=2, stride=2, dilation=1, pad_begin=1, pad_end=1, rounding="floor", auto_pad="same_upper")
    rows = _rules(p)
    assert rows["openvino-written"].out == 32
    assert rows["openvino-runtime"].out == 16
    assert rows["openvino-runtime"].pads == (0, 0)  # (16 - 1) * 2 + 2 - 32 = 0: no padding at all
    assert rows["onnx"].out == 16
    assert poolcheck.output_shape((32, 32), [2, 2], [2, 2], [1, 1], [1, 1], auto_pad="same_upper") == (16, 16)


def test_valid_ceil_written_rule_contradicts_example() -> None:
    """The written valid rule ceil((H - dk + 1) / s) ignores rounding_type: 3, kernel 2, stride 2 gives
    1, while the MaxPool-8 page's example 5 (valid + ceil) shows a 2x2 output, as the runtime does."""
    p = dict(size=3, kernel=2, stride=2, dilation=1, pad_begin=0, pad_end=0, rounding="ceil", auto_pad="valid")
    rows = _rules(p)
    assert rows["openvino-written"].out == 1
    assert rows["openvino-runtime"].out == 2


def test_ceil_torch_drops_a_window_that_starts_in_padding() -> None:
    # ceil((3 + 1 + 1 - 2) / 2 + 1) = 3; the third window starts at 4 >= 3 + 1: dropped.
    assert poolcheck.output_shape((3,), [2], [2], [1], [1], rounding_type="ceil") == (3,)
    assert poolcheck.output_shape((3,), [2], [2], [1], [1], rounding_type="ceil_torch") == (2,)
    # the last window starting exactly at the last input element is kept: ceil((4 + 0 + 1 - 2) / 3 + 1) = 2,
    # start 3 < 4 + 0
    assert poolcheck.output_shape((4,), [2], [3], [0], [1], rounding_type="ceil_torch") == (2,)


def test_same_pads_hand_checked() -> None:
    # size 7, kernel 3, dilation 2 (dk 5), stride 2: out ceil(7 / 2) = 4, total (4 - 1) * 2 + 5 - 7 = 4
    g = S.resolve(S.openvino_max_pool([3], [2], dilations=[2], auto_pad="same_lower"), (1, 1, 7)).axes[0]
    assert (g.out, g.pad_begin, g.pad_end) == (4, 2, 2)
    # size 6, kernel 2, stride 1: total 1, odd -> at the end (upper) / the beginning (lower)
    up = S.resolve(S.openvino_max_pool([2], [1], auto_pad="same_upper"), (1, 1, 6)).axes[0]
    low = S.resolve(S.openvino_max_pool([2], [1], auto_pad="same_lower"), (1, 1, 6)).axes[0]
    assert (up.pad_begin, up.pad_end, low.pad_begin, low.pad_end) == (0, 1, 1, 0)
    # stride 3 > kernel 1: (2 - 1) * 3 + 1 - 5 = -1 -> clamped to 0
    g = S.resolve(S.openvino_max_pool([1], [3], auto_pad="same_upper"), (1, 1, 5)).axes[0]
    assert (g.out, g.pad_begin, g.pad_end) == (2, 0, 0)


def test_onnx_valid_with_ceil_mode_is_floor() -> None:
    # ONNX VALID with ceil_mode: ceil((5 - 2 + 1) / 3) = 2 == floor((5 - 2) / 3) + 1; explicit ceil: ceil(3 / 3 + 1) = 2
    spec = S.onnx_max_pool([2], [3], ceil_mode=1, auto_pad="VALID")
    # the spec keeps what was written (one rounding: ceil_mode=1 is ceil_torch); the rule applies floor
    assert (spec.rounding_type, spec.ceil_mode, spec.applied_rounding) == ("ceil_torch", 1, "floor")
    assert S.resolve(spec, (1, 1, 5)).output_shape == (1, 1, 2)
    # size 7: VALID with ceil_mode -> ceil((7 - 2 + 1) / 3) = 2; NOTSET with ceil_mode -> ceil(5 / 3 + 1) = 3
    # (the last window starts at 6 < 7 + 0: kept)
    assert S.resolve(S.onnx_max_pool([2], [3], ceil_mode=1, auto_pad="VALID"), (1, 1, 7)).output_shape == (1, 1, 2)
    assert S.resolve(S.onnx_max_pool([2], [3], ceil_mode=1), (1, 1, 7)).output_shape == (1, 1, 3)


# --------------------------------------------------------------------------- ONNX SAME, negative pads


@pytest.mark.parametrize(
    ("size", "kernel", "stride", "dilation", "mode", "pads", "starts"),
    [
        # pad_shape = (out - 1) * stride + ((kernel - 1) * dilation + 1) - size, as written:
        (6, 1, 3, 1, "same_upper", (-1, -1), [1, 4]),  # -2: split equally
        (5, 1, 3, 1, "same_upper", (0, -1), [0, 3]),  # -1: the odd unit at the end
        (5, 1, 3, 1, "same_lower", (-1, 0), [1, 4]),  # -1: the odd unit at the beginning
        (9, 2, 5, 1, "same_upper", (-1, -1), [1, 6]),
        (9, 2, 5, 2, "same_lower", (-1, 0), [1, 6]),  # dilated kernel 3: -1, odd unit at the beginning
        (7, 3, 2, 1, "same_upper", (1, 1), [-1, 1, 3, 5]),  # positive totals are unchanged
    ],
)
def test_onnx_same_applies_negative_pads_as_written(size, kernel, stride, dilation, mode, pads, starts) -> None:
    spec = onnx_spec = A.onnx_max_pool([kernel], [stride], None, [dilation], 0, mode.upper(), 0)
    g = resolve(onnx_spec, (1, 1, size)).axes[0]
    assert (g.pad_begin, g.pad_end) == pads
    assert [g.taps(o)[0] for o in range(g.out)] == starts
    # OpenVINO clamps the same total at 0 (measured on OpenVINO 2026.4.1 CPU).
    ov = A.openvino_max_pool([kernel], [stride], None, None, [dilation], "floor", mode, 0, "i64", version=14)
    g_ov = resolve(ov, (1, 1, size)).axes[0]
    assert g_ov.pad_begin >= 0 and g_ov.pad_end >= 0 and g_ov.out == g.out
    # Both engines follow the geometry; the values are the window maxima of an arange.
    x = np.arange(size, dtype=np.float32).reshape(1, 1, size)
    for engine in available_engines():
        values, indices = run_spec(spec, x, engine=engine)
        expected = [max(p for p in (s + j * dilation for j in range(kernel)) if 0 <= p < size) for s in starts]
        assert values.ravel().tolist() == expected
        assert indices.ravel().tolist() == expected


def test_shape_report_is_computed_in_the_spec_layer() -> None:
    report = shape_report([7], [2], [3], None, None, None, "ceil_torch", "explicit")
    # ceil((7 - 2) / 3 + 1) = 3; the last window starts at 6 < 7: kept
    assert report["output"] == [3]
    [axis] = report["axes"]
    outs = {r["convention"]: r["out"] for r in axis["rules"]}
    assert outs["openvino-runtime"] == outs["onnx"] == 3
    assert axis["agree"] == (len({v for v in outs.values() if v is not None}) == 1)
    assert [r["convention"] for r in only_runtime_rule(report)["axes"][0]["rules"]] == ["openvino-runtime"]
    sym = symbolic_report([2], [3], None, None, None, "floor", "valid")
    assert sym["axes"][0]["formula"] == "H_out = floor((H - 2) / 3 + 1)  (pads 0)"


def test_resolve_refuses_every_time_and_shares_a_geometry_only_between_equal_arguments() -> None:
    # resolve keeps its geometries (a fuzzed configuration is resolved several times): a refusal
    # is raised on every call, equal (spec, shape) share one geometry equal to a fresh one, and
    # specs that differ only in their convention keep their own (ONNX SAME pads may be negative,
    # OpenVINO's are clamped to 0).
    from poolcheck.spec import shape as shape_mod

    spec = A.openvino_max_pool([3], [1], [0], [0], [1], "floor", "explicit")
    for _ in range(2):
        with pytest.raises(poolcheck.AttributeValueError):
            resolve(spec, (1, 1, 2))
    geom = resolve(spec, [1, 1, 5])
    assert resolve(spec, (1, 1, 5)) is geom
    assert geom == shape_mod._resolve(spec, (1, 1, 5))
    assert geom.output_shape == (1, 1, 3) and geom.input_shape == (1, 1, 5)
    same = A.openvino_max_pool([1], [3], [0], [0], [1], "floor", "same_upper")
    onnx = same.replace(convention="onnx")
    assert resolve(same, (1, 1, 5)).pads_end == (0,)
    assert resolve(onnx, (1, 1, 5)).pads_end == (-1,)
