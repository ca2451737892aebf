"""Every peer's element-type declaration (``element_types(op)``, read through ``declared_types``)
is true: for each installed peer and op, a type outside the declaration is declined by every
plain configuration of that op (in every convention and spatial rank that allows the type), and
each declared type is taken by at least one of them. ``poolcheck fuzz`` without ``--dtypes``
draws only declared types (``tests/fuzz/test_campaign_types.py``), so a declaration that said too
little would hide a peer's types from the fuzzer, and one that said too much would waste draws."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest
from support import PLANTED

from poolcheck.peers import resolve_peer
from poolcheck.peers.base import PeerLoadError, declared_types
from poolcheck.peers.plugin import FAMILY_FUNCTIONS
from poolcheck.peers.registry import BUILTIN_PEERS, TAKES_ARGUMENT
from poolcheck.spec import operators
from poolcheck.spec.family import FAMILY_OPS

#: One plain configuration of each op, by spatial rank: its catalogue row and attributes.
PLAIN: dict[str, list[tuple[str, Any]]] = {
    "max": [("MaxPool-14", lambda r: {"kernel": [2] * r, "strides": [1] * r, "pads_begin": [0] * r,
                                      "pads_end": [0] * r}),
            ("MaxPool-22", lambda r: {"kernel_shape": [2] * r})],
    "avg": [("AvgPool-14", lambda r: {"kernel": [2] * r, "strides": [1] * r, "pads_begin": [0] * r,
                                      "pads_end": [0] * r}),
            ("AveragePool-22", lambda r: {"kernel_shape": [2] * r})],
    "lp": [("LpPool-22", lambda r: {"kernel_shape": [2] * r})],
    "global_avg": [("GlobalAveragePool-22", lambda r: {})],
    "global_max": [("GlobalMaxPool-22", lambda r: {})],
    "global_lp": [("GlobalLpPool-22", lambda r: {})],
    "unpool": [("MaxUnpool-22", lambda r: {"kernel_shape": [2] * r, "strides": [2] * r})],
    "adaptive_avg": [("AdaptiveAvgPool-8", lambda r: {"output_shape": [1] * r})],
    "adaptive_max": [("AdaptiveMaxPool-8", lambda r: {"output_shape": [1] * r})],
}
OPS = ("max", "avg", *FAMILY_OPS)


def _peer_names() -> list[str]:
    names = [n for n in BUILTIN_PEERS if n not in TAKES_ARGUMENT]
    if importlib.util.find_spec("onnxruntime") is not None:
        names.append("onnx-backend:onnxruntime.backend")
    return names + [str(PLANTED / "correct.py"), str(PLANTED / "float32_only.py")]


def _configurations(op: str, dtype: str) -> list[tuple[Any, tuple[int, ...]]]:
    """Every plain configuration of ``op`` whose row allows ``dtype``, with an input shape."""
    out = []
    for row, attrs in PLAIN[op]:
        if dtype not in operators.operator(row).dtypes:
            continue
        for rank in (1, 2, 3):
            out.append((operators.parse(row, attrs(rank)), (1, 1) + (4,) * rank))
    return out


def _check_declaration(name: str, peer: Any) -> None:
    for op in OPS:
        declared = declared_types(peer, op)
        for dtype in operators.ELEMENT_TYPES:
            configurations = _configurations(op, dtype)
            if not configurations:
                continue  # no operator of this op allows the type: nothing to take or decline
            answers = [peer.supports(spec, shape, np.dtype(dtype)) for spec, shape in configurations]
            if declared is None or dtype in declared:
                assert any(ok for ok, _ in answers), (name, op, dtype, answers)
            else:
                assert not any(ok for ok, _ in answers), (name, op, dtype, declared)


@pytest.mark.parametrize("name", _peer_names(), ids=lambda n: n.rsplit("/", 1)[-1])
def test_each_declaration_is_what_the_peer_takes(name: str) -> None:
    try:
        peer = resolve_peer(name)
    except PeerLoadError as exc:
        pytest.skip(f"{name}: {exc}")
    ok, why = peer.available()
    if not ok:
        pytest.skip(f"{name} is not available: {why}")
    _check_declaration(name, peer)


@pytest.mark.parametrize("declared", ["", "ELEMENT_TYPES = ['float64', 'bfloat16', 'int8']"])
def test_a_family_plugin_declaration_is_what_it_takes(tmp_path: Any, declared: str) -> None:
    """A plugin with every family function (poolcheck's own), with and without ELEMENT_TYPES."""
    functions = ["max_pool", "avg_pool", *FAMILY_FUNCTIONS.values()]
    plugin = tmp_path / "family_plugin.py"
    plugin.write_text(f"from poolcheck import {', '.join(functions)}\n{declared}\n")
    peer = resolve_peer(str(plugin))
    _check_declaration("family_plugin", peer)
    if declared:
        assert declared_types(peer, "max") == ("float64", "int8")  # MaxPool-14's types among them
        assert declared_types(peer, "lp") == ("float64", "bfloat16")


def test_a_plugin_declaring_float32_declines_the_rest_saying_so() -> None:
    peer = resolve_peer(str(PLANTED / "float32_only.py"))
    assert declared_types(peer, "max") == ("float32",) and declared_types(peer, "lp") == ()
    ok, why = peer.supports(operators.parse("MaxPool-22", {"kernel_shape": [2]}), (1, 1, 4), np.dtype("int8"))
    assert not ok and why == "planted-float32-only takes float32 only (its ELEMENT_TYPES), not int8", why


@pytest.mark.parametrize("value", ["'float8'", "['float32', 3]", "[]", "42"])
def test_a_malformed_element_types_is_a_load_error_naming_it(tmp_path: Any, value: str) -> None:
    plugin = tmp_path / "mine.py"
    plugin.write_text(f"from poolcheck import max_pool\nELEMENT_TYPES = {value}\n")
    with pytest.raises(PeerLoadError, match="ELEMENT_TYPES must list some of float16"):
        resolve_peer(str(plugin))
