"""Which element types a campaign draws (``fuzz/campaign_types.py``): without --dtypes, only the
types some peer of the campaign takes for the fuzzed operators, every operator keeping one; an
explicit list as given, with a warning when no peer takes any of it."""

from __future__ import annotations

from typing import Any

from support import PLANTED

from poolcheck.fuzz.campaign_types import campaign_types
from poolcheck.fuzz.strategies import ALL_DTYPES, CONVENTIONS
from poolcheck.peers import resolve_peer

MAX_AVG = ("max", "avg")


class Declaring:
    """A user's peer object declaring ``types`` for every op (``element_types``)."""

    def __init__(self, name: str, types: Any, family_ops: tuple[str, ...] = ()) -> None:
        self.name, self.types, self.family_ops = name, types, family_ops

    def element_types(self, op: str) -> Any:
        if isinstance(self.types, Exception):
            raise self.types
        return self.types


class Undeclared:
    name = "undeclared"


def test_no_peers_draw_every_type_and_a_list_as_given() -> None:
    assert campaign_types(MAX_AVG, CONVENTIONS, [], None).dtypes == ALL_DTYPES
    assert campaign_types(MAX_AVG, CONVENTIONS, [], ["int8"]).dtypes == ("int8",)


def test_torch_onnx_campaigns_draw_what_the_chain_takes() -> None:
    """The declaration needs no torch: the chain's types are fixed (DTYPES)."""
    chain = resolve_peer("torch-onnx")
    drawn = campaign_types(MAX_AVG, CONVENTIONS, [chain], None)
    assert drawn.dtypes == ("float32", "float64") and drawn.warning is None
    # the family: MaxUnpool is not exported, LpPool is; MaxUnpool is still drawn, on the chain's types
    assert campaign_types(("lp", "unpool"), CONVENTIONS, [chain], None).dtypes == ("float32", "float64")


def test_onnx_runtime_campaigns_leave_out_the_types_onnx_has_not() -> None:
    drawn = campaign_types(MAX_AVG, CONVENTIONS, [resolve_peer("onnxruntime")], None).dtypes
    assert drawn == ("float32", "float16", "float64", "bfloat16", "int8", "uint8")
    # OpenVINO takes every type: a campaign with both draws all of them
    both = [resolve_peer("onnxruntime"), resolve_peer("openvino")]
    assert campaign_types(MAX_AVG, CONVENTIONS, both, None).dtypes == ALL_DTYPES


def test_the_union_over_peers_and_an_undeclaring_peer_takes_everything() -> None:
    peers = [Declaring("a", ("float64",)), Declaring("b", ["int8"])]
    assert campaign_types(MAX_AVG, CONVENTIONS, peers, None).dtypes == ("float64", "int8")
    assert campaign_types(MAX_AVG, CONVENTIONS, [*peers, Undeclared()], None).dtypes == ALL_DTYPES
    # a declaration that raises is no declaration: the peer is asked, and declines for itself
    assert campaign_types(MAX_AVG, CONVENTIONS, [Declaring("c", RuntimeError("x"))], None).dtypes == ALL_DTYPES


def test_an_operator_no_peer_takes_keeps_its_own_types() -> None:
    """A peer taking int8 only: maxpool draws int8, and averages (floating point only), which no
    peer takes, are still fuzzed on the engines with floating types -- narrowing never drops an
    operator from the campaign. The peer does take something drawn: no warning."""
    drawn = campaign_types(MAX_AVG, CONVENTIONS, [Declaring("ints", ("int8",))], None)
    assert drawn.dtypes == ("float32", "float16", "float64", "int8") and drawn.warning is None
    assert campaign_types(("max",), ("openvino",), [Declaring("ints", ("int8",))], None).dtypes == ("int8",)


def test_nothing_taken_is_one_warning_and_the_engines_still_fuzz() -> None:
    chain = resolve_peer("torch-onnx")
    explicit = campaign_types(MAX_AVG, CONVENTIONS, [chain], ["int8", "float16"])
    assert explicit.dtypes == ("int8", "float16")  # kept as given
    assert explicit.warning is not None and "torch-onnx" in explicit.warning and "int8, float16" in explicit.warning
    assert campaign_types(MAX_AVG, CONVENTIONS, [chain], ["float16", "float64"]).warning is None
    # no peer takes the op at all: every type of it, and the same warning
    unpool = campaign_types(("unpool",), CONVENTIONS, [chain], None)
    assert unpool.dtypes == ("float32", "float16", "float64", "bfloat16") and unpool.warning is not None


def test_a_plugin_file_declaring_float32() -> None:
    plugin = resolve_peer(str(PLANTED / "float32_only.py"))
    assert campaign_types(MAX_AVG, CONVENTIONS, [plugin], None).dtypes == ("float32",)
    assert campaign_types(MAX_AVG, CONVENTIONS, [plugin, resolve_peer(str(PLANTED / "correct.py"))],
                          None).dtypes == tuple(d for d in ALL_DTYPES if d != "bfloat16")
