"""A peer refusing the input's element type itself is one finding per type, named by the type
(tract's words, "Unknown DatumType Bfloat16", with the shape and a backtrace in the message), not
one per message shape; a message that lists types without refusing one names nothing. (The tract
peer now declines bfloat16, a type tract has not: tests/peers/test_peers_new.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from poolcheck.fuzz.diagnosis.rejections import diagnose_rejection, refuses_element_type
from poolcheck.fuzz.family import FamilyCase, judge_family_peer
from poolcheck.peers.base import PeerResult
from poolcheck.spec import attributes as A
from poolcheck.spec import dtypes
from poolcheck.spec.operators import parse

BF16 = dtypes.BFLOAT16
#: tract 0.21's refusal of a bfloat16 model, as the tract peer records it (abridged).
TRACT = ("TractError: translating to fact: Tensor { elem_type: Bfloat16, shape: Some(TensorShapeProto { dim: "
         "[Dimension { denotation: \"\", value: Some(DimValue(1)) }] }) } Caused by: Unknown DatumType Bfloat16 "
         "Stack backtrace: 0: <anyhow::Error>::msg::<alloc::string::String>")


@pytest.mark.parametrize("message, dtype, refused", [
    (TRACT, BF16, True),
    (TRACT, np.dtype(np.float32), False),  # the message names another type than the input's
    ("bfloat16 is not supported", BF16, True),
    ("unsupported element type f16", np.dtype(np.float16), True),
    ("Unsupported type bfloat16", np.dtype(np.float16), False),  # bfloat16 is not float16
    ("Issues with types [float16, bfloat16] and attributes ['auto_pad']", BF16, False),  # a list refuses none
    ("pad should be smaller than kernel", BF16, False),
])
def test_a_refusal_names_the_element_type_only_where_the_message_refuses_it(message, dtype, refused) -> None:
    assert refuses_element_type(message, np.dtype(dtype)) is refused


def test_the_class_is_the_type_whatever_the_shape_and_op_in_the_message() -> None:
    x1, x2 = np.zeros((1, 2, 1), BF16), np.zeros((1, 1, 1, 2), BF16)
    other = TRACT.replace("DimValue(1)", "DimValue(7)")
    d_avg = diagnose_rejection(A.openvino_avg_pool([1], [4], exclude_pad=False), x1, TRACT)
    d_max = diagnose_rejection(A.openvino_max_pool([2, 4], [2, 4]), x2, other)
    assert d_avg.klass == d_max.klass == "rejects: element type bfloat16"
    assert d_avg.explained and "does not take bfloat16 tensors" in d_avg.text


def test_a_refusal_of_the_element_type_on_a_family_op_is_the_same_class() -> None:
    """The family's judgement names the refusal the same way (it was the message's first line,
    the shape included); any other refusal keeps the runtime's words."""
    spec = parse("GlobalAveragePool-22", {})
    x = np.zeros((1, 2, 3), BF16)
    case = FamilyCase("GlobalAveragePool-22", {}, spec, x, {})
    expected = (np.zeros((1, 2, 1), BF16), None)
    typed = judge_family_peer(case, "tract", PeerResult("rejects", None, TRACT), expected, None)
    assert typed is not None and typed.klass == "rejects: element type bfloat16" and typed.explained
    other = judge_family_peer(case, "tract", PeerResult("rejects", None, "no GlobalAveragePool for rank 3"),
                              expected, None)
    assert other is not None and other.klass == "rejects: no GlobalAveragePool for rank N" and not other.explained
