"""The packed ONNX models (poolcheck.peers.onnx_model.build_model) against the same models built by
onnx.helper, byte for byte: the peers that run ONNX (ONNX Runtime, onnx.reference, tract,
OpenVINO's ONNX frontend, onnx backends), repro scripts and exported test directories see
exactly the model the helpers would give, for packs of every drawn configuration, with and
without output ranks, with and without indices, bfloat16 included."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from poolcheck.fuzz import strategies as S
from poolcheck.peers.base import PeerDeclined
from poolcheck.peers.onnx_model import IR_VERSION, OPSET, OnnxNode, build_model, to_onnx

onnx = pytest.importorskip("onnx")


def helper_model(nodes: Sequence[OnnxNode], *, output_ranks: bool = False) -> Any:
    """The model as onnx.helper builds it (build_model's former body)."""
    from onnx import TensorProto, helper

    graph_nodes, inputs, outputs = [], [], []
    for i, node in enumerate(nodes):
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(node.dtype))
        outs = [f"y{i}"]
        out_shape = [f"y{i}_d{k}" for k in range(len(node.shape))] if output_ranks else None
        outputs.append(helper.make_tensor_value_info(f"y{i}", elem, out_shape))
        if node.with_indices:
            outs.append(f"i{i}")
            idx_shape = [f"i{i}_d{k}" for k in range(len(node.shape))] if output_ranks else None
            outputs.append(helper.make_tensor_value_info(f"i{i}", TensorProto.INT64, idx_shape))
        graph_nodes.append(helper.make_node(node.op_type, [f"x{i}"], outs, name=f"pool{i}", **node.attrs()))
        inputs.append(helper.make_tensor_value_info(f"x{i}", elem, list(node.shape)))
    graph = helper.make_graph(graph_nodes, "poolcheck", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="poolcheck")
    model.ir_version = IR_VERSION
    return model


def _node(case: S.FuzzCase) -> OnnxNode | None:
    try:
        return to_onnx(case.spec, case.x.shape, case.x.dtype, "test")
    except PeerDeclined:
        return None


@settings(max_examples=150, suppress_health_check=list(HealthCheck), deadline=None)
@given(cases=st.lists(S.pool_configs(), min_size=1, max_size=8), output_ranks=st.booleans())
def test_a_pack_is_the_model_onnx_helper_builds(cases: list[S.FuzzCase], output_ranks: bool) -> None:
    nodes = [n for n in map(_node, cases) if n is not None]
    if not nodes:
        return
    got = build_model(nodes, output_ranks=output_ranks)
    assert got.SerializeToString() == helper_model(nodes, output_ranks=output_ranks).SerializeToString()
    if output_ranks:  # the strict checker wants a shape on every output
        onnx.checker.check_model(got)


def test_every_attribute_kind_a_node_may_hold() -> None:
    # ints, int lists, strings, and (through onnx.helper) anything else, in the order make_node
    # sorts them; a bool and a NumPy integer are written as make_attribute writes them.
    node = OnnxNode("MaxPool", (("auto_pad", "SAME_UPPER"), ("ceil_mode", True), ("kernel_shape", (2, np.int64(3))),
                                ("p", 2.5), ("storage_order", np.int32(1))), (1, 2, 5, 6), "bfloat16", True)
    assert build_model([node]).SerializeToString() == helper_model([node]).SerializeToString()
    assert build_model([node, node], output_ranks=True).SerializeToString() == \
        helper_model([node, node], output_ranks=True).SerializeToString()
