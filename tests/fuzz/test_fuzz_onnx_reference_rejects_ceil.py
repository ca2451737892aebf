"""onnx.reference's refusal of a negative SAME pad total, and its explicit pads + ceil_mode path:

- an oracle written here from onnx 1.23's source (``op_pool_common.py``: ``CommonPool._run``,
  ``get_output_shape_auto_pad``, ``get_pad_shape``), not from poolcheck's, says where
  ReferenceEvaluator raises numpy.pad's "index can't contain negative values"; the runtime itself
  (a model built with onnx.helper, no poolcheck in between) raises exactly there, and the
  diagnosis names it ``rejects: negative SAME pad total`` -- not ONNX Runtime's
  ``same:undilated-kernel gives no output``;
- planted: ONNX Runtime's refusal keeps its names, and another message on the same
  configuration is not given this one."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from support import onnx_reference_run

from poolcheck.fuzz.diagnosis import diagnose_rejection
from poolcheck.spec import attributes as A
from poolcheck.spec.operators import parse

NEG_KEY = "rejects: negative SAME pad total"
NUMPY_PAD = "ValueError: index can't contain negative values"


# --------------------------------------------------------------------------- the oracle


def onnx_reference_same_raises(op: str, sizes: tuple[int, ...], kernel: list[int], strides: list[int],
                               ceil_mode: int) -> str | None:
    """What onnx.reference 1.23 raises for ``op`` under SAME_UPPER/SAME_LOWER, read off its source:
    AveragePool and LpPool (``op_pool_common.CommonPool._run``) assert ``ceil_mode`` is 0, then
    size the output ``math.floor((size - 1) / stride) + 1`` and pad ``(out - 1) * stride + kernel
    - size`` (the kernel as given, no dilation) split into two widths, one of them negative when
    the total is; ``np.pad`` refuses a negative width. MaxPool pads nothing with numpy under SAME
    (``_max_pool`` for a stride > 1). None: no refusal of these two kinds."""
    if op == "MaxPool":
        return None
    if ceil_mode:
        return "AssertionError"
    for size, k, s in zip(sizes, kernel, strides):
        out = math.floor((size - 1) / s) + 1
        if (out - 1) * s + k - size < 0:
            return NUMPY_PAD
    return None


def x_of(sizes: tuple[int, ...]) -> np.ndarray:
    return np.arange(1, 1 + math.prod(sizes), dtype=np.float32).reshape(1, 1, *sizes)


SHAPES = [(n,) for n in range(1, 8)] + [(1, 2), (3, 5), (4, 2)]


def _attrs(op: str, sizes: tuple[int, ...], k: int, s: int, d: int, ceil: int, mode: str,
           include: int) -> dict[str, object]:
    r = len(sizes)
    ks, ss = ([k, 1 + k % 3], [s, 1 + s % 4]) if r == 2 else ([k] * r, [s] * r)
    attrs: dict[str, object] = {"kernel_shape": ks, "strides": ss, "dilations": [d] * r, "auto_pad": mode}
    if op != "LpPool":
        attrs["ceil_mode"] = ceil
    if op == "AveragePool":
        attrs["count_include_pad"] = include
    return attrs


@pytest.mark.parametrize("op", ["AveragePool", "LpPool", "MaxPool"])
def test_onnx_reference_raises_where_its_own_same_formula_is_negative(op: str) -> None:
    """ReferenceEvaluator raises numpy.pad's message exactly where the oracle says (measured on a
    wider grid: sizes 1-8 and 2-D, kernels 1-3, strides 1-4, dilations 1-3: 0 mismatches)."""
    raised = 0
    for sizes, k, s, d, ceil, mode, include in itertools.product(
            SHAPES, (1, 2, 3), (1, 2, 3, 4), (1, 3), (0, 1), ("SAME_UPPER", "SAME_LOWER"), (0, 1)):
        if (op == "LpPool" and ceil) or (op != "AveragePool" and include):
            continue
        attrs = _attrs(op, sizes, k, s, d, ceil, mode, include)
        want = onnx_reference_same_raises(op, sizes, attrs["kernel_shape"], attrs["strides"],  # type: ignore[arg-type]
                                          ceil)
        try:
            onnx_reference_run(op, x_of(sizes), outputs=2 if op == "MaxPool" else 1, **attrs)
            got = None
        except (ValueError, AssertionError) as e:
            got = NUMPY_PAD if str(e) == "index can't contain negative values" else type(e).__name__
        except IndexError:  # MaxPool's stride-1 path on some SAME shapes: another refusal, not this one
            assert op == "MaxPool"
            got = None
        assert got == want, (op, sizes, attrs)
        raised += got == NUMPY_PAD
    assert op == "MaxPool" or raised > 100


def test_the_rule_names_onnx_reference_refusals_and_no_others() -> None:
    """Wherever ReferenceEvaluator raises numpy.pad's message, the diagnosis of that message names
    the rule; a configuration without a negative total is never given the rule's name, whatever
    the message."""
    named = 0
    for sizes, k, s, d, mode in itertools.product(SHAPES, (1, 2, 3), (1, 2, 3, 4), (1, 2, 3),
                                                   ("SAME_UPPER", "SAME_LOWER")):
        attrs = _attrs("AveragePool", sizes, k, s, d, 0, mode, 1)
        spec = parse("AveragePool-22", attrs)
        x = x_of(sizes)
        try:
            onnx_reference_run("AveragePool", x, **attrs)
            message = None
        except ValueError as e:
            message = f"{type(e).__name__}: {e}"
        if message is not None:
            assert diagnose_rejection(spec, x, message).klass == NEG_KEY, (sizes, attrs)
            named += 1
        else:  # a planted refusal with the same message where the total is not negative: not named so
            assert diagnose_rejection(spec, x, NUMPY_PAD).klass != NEG_KEY, (sizes, attrs)
    assert named > 100


def test_the_registry_examples_are_named_by_their_cause() -> None:
    """The two registry rows of the seed-21 campaign: numpy.pad's refusal (AvgPool-14 k1 s2 on
    [1, 2], the total -1) is the rule; onnx.reference's ceil_mode assertion under SAME is its own
    message, no longer ONNX Runtime's 'same:undilated-kernel gives no output'."""
    spec = A.openvino_avg_pool([1], [2], [0], [0], auto_pad="same_upper", exclude_pad=False)
    x = np.array([[[1.0, 2.0]]], dtype=np.float32)
    with pytest.raises(ValueError, match="index can't contain negative values"):
        onnx_reference_run("AveragePool", x, kernel_shape=[1], strides=[2], auto_pad="SAME_UPPER")
    d = diagnose_rejection(spec, x, NUMPY_PAD)
    assert d.klass == NEG_KEY and d.explained, d

    attrs = {"kernel_shape": [1, 4], "strides": [1, 3], "dilations": [1, 3], "ceil_mode": 1,
             "auto_pad": "SAME_LOWER", "count_include_pad": 1}
    x = np.ones((1, 1, 1, 1), dtype=np.float32)
    with pytest.raises(AssertionError) as e:
        onnx_reference_run("AveragePool", x, **attrs)
    d = diagnose_rejection(parse("AveragePool-22", attrs), x, f"AssertionError: {e.value}")
    assert d.klass == "rejects: AssertionError: ceil_mode is not supported with auto_pad", d


# --------------------------------------------------------------------------- planted


ORT_FULL = ("Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running AveragePool node. "
            "Name:'pool0' Status Message: pool_attributes.h:236 int64_t onnxruntime::PoolAttributes::ComputeOutputSize"
            "(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) const out_size >= 0 was false. Calculated output "
            "dimension is negative. Check kernel_shape, pads, strides and dilations.")


def test_onnxruntime_refusals_keep_their_names() -> None:
    """ONNX Runtime refuses a dilated SAME configuration its undilated arithmetic sizes negative
    (measured, 1.31: size 1, kernel 2, dilation 3); its full message names the dilations rule and
    the bare sentence ``same:undilated-kernel`` -- as before -- never the numpy.pad rule, even where
    onnx.reference's total is negative too."""
    for op in ("avg", "max"):
        spec = (A.onnx_average_pool([2], [1], None, [3], 0, 1, "SAME_UPPER") if op == "avg"
                else A.onnx_max_pool([2], [1], None, [3], 0, "SAME_UPPER"))
        x = np.ones((1, 1, 1), dtype=np.float32)
        assert diagnose_rejection(spec, x, ORT_FULL).klass == "rejects: dilations"
        assert diagnose_rejection(spec, x, "Calculated output dimension is negative.").klass == \
            "rejects: same:undilated-kernel gives no output"
    # stride 3 on 2 elements: onnx.reference's total is negative; ONNX Runtime's message is not numpy's
    spec = A.onnx_average_pool([1], [3], None, [2], 0, 1, "SAME_UPPER")
    x = np.ones((1, 1, 2), dtype=np.float32)
    assert diagnose_rejection(spec, x, NUMPY_PAD).klass == NEG_KEY
    assert diagnose_rejection(spec, x, "Calculated output dimension is negative.").klass != NEG_KEY


def test_a_variant_without_output_names_only_the_refusal_it_models() -> None:
    """same:undilated-kernel predicts no output here (size 1, kernel 4, dilation 3); a peer that
    refuses with a message about something else is classed by its message, not given the
    variant's name."""
    spec = A.onnx_average_pool([4], [3], None, [3], 0, 1, "SAME_LOWER")
    x = np.ones((1, 1, 1), dtype=np.float32)
    assert diagnose_rejection(spec, x, "Calculated output dimension is negative.").klass == \
        "rejects: same:undilated-kernel gives no output"
    for message in ("AssertionError: ceil_mode is not supported with auto_pad", "RuntimeError: something 12"):
        assert "same:undilated-kernel" not in diagnose_rejection(spec, x, message).klass
