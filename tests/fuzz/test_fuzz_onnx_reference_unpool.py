"""onnx.reference 1.23's MaxUnpool with an output_shape input (``op_max_unpool.py``): X is
scattered into a zero array of the shape inferred from kernel, strides and pads, each flat index
read in that shape, and the result fills the start of each axis of an output_shape zero array.
``unpool:inferred-then-padded`` is that reading: on every configuration ReferenceEvaluator, called
plainly here, either answers what the variant replays or refuses one the variant has no output for
(an index past the inferred array: "IndexError: index 2 is out of bounds for axis 0 with size 2",
a negative inferred size, an inferred axis longer than output_shape's), so its refusals join the
one finding. 60 s every-peer family campaigns (seeds 11, 12) had the values 'unexplained' and the
IndexError a NEW finding of its own, about 860 configurations each."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from poolcheck.fuzz.diagnosis.family import diagnose_family, rejection_explained, replay_family
from poolcheck.fuzz.family import FamilyCase, expected
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.operators import parse

KEY = "unpool:inferred-then-padded"


def reference(x: np.ndarray, indices: np.ndarray, out_shape: list[int], **attrs: object) -> np.ndarray:
    """MaxUnpool-22 run by onnx.reference.ReferenceEvaluator on a model built with onnx.helper."""
    pytest.importorskip("onnx.reference")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
         helper.make_tensor_value_info("i", TensorProto.INT64, list(indices.shape)),
         helper.make_tensor_value_info("s", TensorProto.INT64, [len(out_shape)])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return ReferenceEvaluator(model).run(None, {"x": x, "i": indices, "s": np.array(out_shape, np.int64)})[0]


def test_the_variant_is_onnx_reference_or_its_refusal() -> None:
    rng = np.random.default_rng(11)
    answered = refused = named = 0
    for _ in range(300):
        n = int(rng.integers(1, 3))
        kernel = [int(v) for v in rng.integers(1, 4, n)]
        strides = [int(v) for v in rng.integers(1, 4, n)]
        pads = [int(rng.integers(0, k)) for k in kernel * 2]
        sizes = [int(v) for v in rng.integers(1, 4, n)]
        shape = (1, int(rng.integers(1, 3)), *sizes)
        inferred = [(h - 1) * s + k - pads[i] - pads[n + i] for i, (h, s, k) in enumerate(zip(sizes, strides, kernel))]
        out = [*shape[:2], *(max(1, v + int(rng.integers(-1, 3))) for v in inferred)]
        x = (rng.permutation(math.prod(shape)) + 1).astype(np.float32).reshape(shape)
        indices = rng.choice(math.prod(out), size=math.prod(shape), replace=math.prod(out) < math.prod(shape))
        indices = indices.reshape(shape).astype(np.int64)
        attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads}
        spec = parse("MaxUnpool-22", {**attrs, "output_shape": out})
        assert isinstance(spec, FamilySpec)
        try:
            got = reference(x, indices, out, **attrs)
        except (IndexError, ValueError):
            refused += 1
            assert rejection_explained([KEY], spec, shape, indices), (attrs, out, shape)
            continue
        answered += 1
        assert replay_family(spec, x, indices, [KEY], (got, None)), (attrs, out, shape)
        case = FamilyCase("MaxUnpool-22", {**attrs, "output_shape": out}, spec, x, {}, indices=indices)
        want = expected(case, "numpy")
        if not np.array_equal(want[0], got):
            named += KEY in diagnose_family(spec, x, indices, want, (got, None))
    assert answered > 20 and refused > 20 and named > 10, (answered, refused, named)
