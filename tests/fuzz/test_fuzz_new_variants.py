"""The variants issue 20's examples needed, each found and verified by replay on an output the
planted kernels (tests/planted_kernels/, written independently of the variants) compute: the
diagnosis names the variant, or lists it among the explanations that reproduce the example."""

from __future__ import annotations

import runpy
from typing import Any

import numpy as np
import pytest
from support import KERNELS

from poolcheck.engines import get_engine
from poolcheck.fuzz.diagnosis import diagnose_output, replay
from poolcheck.spec import attributes as A

ENGINE = get_engine("auto")


def keywords(spec: A.PoolSpec) -> dict[str, Any]:
    return {"kernel": list(spec.kernel), "strides": list(spec.strides), "pads_begin": list(spec.pads_begin),
            "pads_end": list(spec.pads_end), "dilations": list(spec.dilations), "rounding_type": spec.rounding_type,
            "auto_pad": spec.auto_pad, "axis": spec.axis, "index_element_type": spec.index_element_type}


def x_of(shape: tuple[int, ...], dtype: str = "float32", offset: int = 0) -> np.ndarray:
    n = int(np.prod(shape))
    return (np.random.default_rng(3).permutation(n) - offset).reshape(shape).astype(dtype)


CASES = [
    ("k02_int_max_pad_zero", A.openvino_max_pool([2], [1], [1], [1]), x_of((1, 1, 4), "int8", 10),
     "int_max:pad-zero"),
    ("k09_index_planes_c_major", A.openvino_max_pool([2, 2], [2, 2]), x_of((2, 3, 4, 4)), "index:planes-c*N+n"),
    ("k10_negative_axis_off_by_one", A.openvino_max_pool([2, 2], [2, 2], axis=-2), x_of((2, 2, 4, 4)),
     "index:negative-axis-off-by-one"),
    ("k11_last_tap_dropped", A.openvino_max_pool([3], [1]), x_of((1, 2, 7)), "window:last-tap-dropped"),
    ("k16_int8_max_seeded_at_lowest_plus_one", A.openvino_max_pool([2], [2]),
     np.array([[[-128, -128, 3, -128]]], dtype=np.int8), "int_max:seed-lowest+1"),
]


@pytest.mark.parametrize(("kernel", "spec", "x", "variant"), CASES, ids=[c[0] for c in CASES])
def test_the_variant_explains_the_planted_kernel(kernel: str, spec: A.PoolSpec, x: np.ndarray, variant: str) -> None:
    values, indices = runpy.run_path(str(KERNELS / f"{kernel}.py"))["max_pool"](x, **keywords(spec))
    d = diagnose_output(ENGINE, spec, x, np.asarray(values), np.asarray(indices))
    assert d.explained, d.text
    assert variant in d.variants or any(variant in alt for alt in d.alternatives), (d.klass, d.alternatives)
    r = replay(ENGINE, spec, x, [variant], np.asarray(values), np.asarray(indices))
    assert r is not None and r.exact  # the name alone reproduces the kernel
    spec_only = replay(ENGINE, spec, x, [], np.asarray(values), np.asarray(indices))
    assert spec_only is None or not spec_only.exact  # and the kernel does differ from the spec here


@pytest.mark.parametrize("engine", ["numpy", "c"])
def test_a_one_tap_window_has_no_tap_to_drop(engine: str) -> None:
    """``window:last-tap-dropped`` on a kernel of 1 would place windows of no tap (kernel 0, a
    negative pad): it predicts no output there, on either engine. (The C engine refused that
    geometry with a ValueError that ended a fuzz campaign against onnx_reference in a traceback,
    while grouping tested a cause on a neighbour configuration.)"""
    from poolcheck.fuzz.diagnosis.replay import predict

    spec = A.onnx_average_pool([1], [2], dilations=[2], auto_pad="SAME_LOWER", count_include_pad=0)
    x = x_of((3, 2, 2))
    assert predict(get_engine(engine), spec, x, ("window:last-tap-dropped",)) is None
    assert predict(get_engine(engine), spec, x, ()) is not None


@pytest.mark.parametrize("engine", ["numpy", "c"])
def test_an_index_a_negative_pad_crops_away_has_no_padded_coordinate(engine: str) -> None:
    """ONNX Runtime's output on an ONNX MaxPool with SAME_LOWER whose dilated kernel is longer than
    the input (a negative SAME pad): re-encoding the reference's indices in padded coordinates met
    an element the crop removed, and ``np.ravel_multi_index`` raised (a 30 s ONNX Runtime campaign
    ended in a traceback). Such an element has no padded index: the diagnosis goes on."""
    spec = A.onnx_max_pool([1, 2, 3], strides=[3, 3, 4], dilations=[1, 3, 1], auto_pad="SAME_LOWER")
    x = np.full((1, 1, 2, 2, 4), -4, dtype=np.int8)
    x[0, 0, 1, 0, 2] = -128
    values = np.full((1, 1, 1, 1, 1), -4, dtype=np.int8)
    indices = np.zeros((1, 1, 1, 1, 1), dtype=np.int64)
    d = diagnose_output(get_engine(engine), spec, x, values, indices, {"same:undilated-kernel": 5})
    assert d.klass
