"""Fuzzing in batches changes no verdict (poolcheck/fuzz/batching.py, poolcheck/peers/packs.py).

The same configurations (drawn with a fixed seed) are asked of each installed runtime peer in one
batched call, again in one call after the peer has compiled them (served from the packed models
it holds, with other inputs), and one at a time from a fresh peer: the PeerResults agree bit for
bit, and a session judging the batch finds what sessions judging each configuration alone find,
with the same severities. A planted refusal inside a batch is bisected back to its configuration.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from poolcheck.engines import get_engine
from poolcheck.fuzz.batching import (
    ENGINE_CHECK_EVERY,
    EXAMPLE_CONFIGS,
    default_batch,
    engine_checked,
    example_lists,
)
from poolcheck.fuzz.reference import expected_for
from poolcheck.fuzz.session import FuzzOptions, Session
from poolcheck.fuzz.strategies import FuzzCase, config_batches, make_input
from poolcheck.peers.adapter import RuntimePeer
from poolcheck.peers.base import PeerOutput, PeerResult
from poolcheck.peers.isolation import run_in_process
from poolcheck.peers.packs import PackIndex, named_position
from poolcheck.peers.registry import resolve_peer
from tests.support import available_peer

#: The packing runtime peers (onnx_reference runs one node per model: nothing to batch).
PACKING = ("onnxruntime", "openvino", "openvino-onnx", "torch-onnx", "tract")


def drawn(n: int, dtypes: Sequence[str] = ("float32", "float16", "float64", "int8", "uint8")) -> list[FuzzCase]:
    """``n`` configurations of a seeded hypothesis run (the same ones on every call)."""
    cases: list[FuzzCase] = []

    @seed(20261126)
    @settings(max_examples=40, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck),
              derandomize=True)
    @given(config_batches(("max", "avg"), (3, 4, 5), tuple(dtypes), ("openvino", "onnx"), max_configs=16))
    def collect(batch: list[FuzzCase]) -> None:
        cases.extend(batch)

    collect()
    assert len(cases) >= n
    return cases[:n]


def other_input(case: FuzzCase, seed_: int) -> np.ndarray:
    return make_input(case.x.shape, case.x.dtype, "random", seed_, [(0, 0)])


def same(a: PeerResult, b: PeerResult) -> bool:
    if a.status != b.status:
        return False
    if a.status != "ok":
        return _blank(a.message) == _blank(b.message)
    assert a.output is not None and b.output is not None
    if a.output.notes != b.output.notes:
        return False
    if not np.array_equal(a.output.values, b.output.values, equal_nan=a.output.values.dtype.kind in "fc"):
        return False
    if (a.output.indices is None) != (b.output.indices is None):
        return False
    return a.output.indices is None or np.array_equal(a.output.indices, b.output.indices)


def _blank(message: str) -> str:
    """A runtime message with the serial numbers it gives its objects (``MaxPool_66715``) blanked."""
    return re.sub(r"_\d+\b", "_N", message)


@pytest.mark.parametrize("name", PACKING)
def test_batched_calls_give_the_peer_results_of_single_calls(name: str) -> None:
    available_peer(name)
    n = 24 if name in ("openvino-onnx", "torch-onnx") else 48
    cases = drawn(n)
    batched_peer = resolve_peer(name)
    # eight nodes asked again in the same call on other inputs: compiled once, run on each
    items = [(c.spec, c.x) for c in cases] + [(c.spec, other_input(c, 99)) for c in cases[:8]]
    batched = run_in_process(batched_peer, items)
    # some of the same nodes, in another order, on other inputs (one of them twice): served from
    # the packs the first call compiled, zero inputs at the positions not asked
    picked = [*cases[::-3], cases[0]]
    again = [(c.spec, other_input(c, k)) for k, c in enumerate(picked)]
    reused = run_in_process(batched_peer, again)
    single_peer = resolve_peer(name)
    for (spec, x), got in zip(items, batched, strict=True):
        (alone,) = run_in_process(single_peer, [(spec, x)])
        assert same(got, alone), (spec, got.verdict, alone.verdict)
    for (spec, x), got in zip(again, reused, strict=True):
        (alone,) = run_in_process(single_peer, [(spec, x)])
        assert same(got, alone), (spec, got.verdict, alone.verdict)
    assert sum(r.status == "ok" for r in batched) >= n // 3  # the comparison compared outputs


def _findings(session: Session, batch: list[FuzzCase]) -> list[tuple[int, str, str]]:
    index = {id(c): k for k, c in enumerate(batch)}
    out = []
    for f in session.check_batch(batch):
        for ff in f.focused():
            out.append((index[id(ff.case)], ff.signature, ff.weight.value))
    return sorted(out)


@pytest.mark.parametrize("name", ["onnxruntime", "openvino"])
def test_a_session_judging_a_batch_finds_what_single_configurations_find(name: str) -> None:
    available_peer(name)
    cases = drawn(40)
    options = FuzzOptions(peers=(name,), isolated=False, engine_checks="all",
                          oracles=frozenset({"peers", "shapes", "engines", "metamorphic"}))
    batched = Session(options, [resolve_peer(name)])
    got = _findings(batched, cases)
    single = Session(options, [resolve_peer(name)])
    want = sorted((k, sig, weight) for k, c in enumerate(cases) for _, sig, weight in _findings(single, [c]))
    assert got == want
    assert any(sig.startswith("peer|") for _, sig, _ in got)  # the peer diverged somewhere: findings compared


# --------------------------------------------------------------------------- planted refusals


class PlantedRefusals(RuntimePeer):
    """The engine packed as a runtime: a model holding a configuration whose kernel's first axis
    is ``refuse`` fails as a whole (the message names the node when ``named``), as a runtime
    refusing one node fails a model."""

    name = "planted-refusals"
    module = "numpy"
    batch_limit = 32
    cache_size = 64

    def __init__(self, refuse: int, *, named: bool) -> None:
        self.refuse, self.named = refuse, named
        self.compiled: set[tuple[Any, ...]] = set()
        self.compiles = 0

    def translate(self, spec: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return (spec, shape, dtype.str)

    def execute(self, group: Any, items: Any) -> list[PeerOutput]:
        nodes = tuple(node for _, node, _ in group)
        if nodes not in self.compiled:
            self.compiles += 1
            for k, (spec, _shape, _dt) in enumerate(nodes):
                if spec.kernel[0] == self.refuse:
                    where = f"node pool{k} " if self.named else ""
                    raise RuntimeError(f"{where}kernel {self.refuse} refused")
            self.compiled.add(nodes)
        engine = get_engine("numpy")
        outs = []
        for i, _node, arr in group:
            exp, _geom = expected_for(engine, FuzzCase(op_name=items[i][0].op, attributes={}, spec=items[i][0],
                                                       x=arr, recipe={}))
            outs.append(PeerOutput(exp.values, exp.indices))
        return outs


@pytest.mark.parametrize("named", [False, True])
def test_a_planted_refusal_inside_a_batch_is_attributed_to_its_configuration(named: bool) -> None:
    cases = [c for c in drawn(60, ("float32",)) if c.mutation is None][:32]
    refuse = cases[5].spec.kernel[0]
    planted = PlantedRefusals(refuse, named=named)
    results = planted.run_many([(c.spec, c.x) for c in cases])
    for c, r in zip(cases, results, strict=True):
        if c.spec.kernel[0] == refuse:
            assert isinstance(r, RuntimeError)
            assert str(r) == ("node pool0 " if named else "") + f"kernel {refuse} refused"  # its own, alone
        else:
            assert isinstance(r, PeerOutput), r
            exp, _ = expected_for(get_engine("numpy"), c)
            assert np.array_equal(r.values, exp.values, equal_nan=True)
    compiles = planted.compiles
    # asked again with other inputs: every node is served by a pack that ran or by its known refusal
    again = planted.run_many([(c.spec, other_input(c, 7)) for c in cases])
    assert planted.compiles == compiles
    for c, r in zip(cases, again, strict=True):
        assert isinstance(r, RuntimeError) == (c.spec.kernel[0] == refuse)


@pytest.mark.parametrize("named", [False, True])
def test_a_node_asked_for_with_several_inputs_in_one_call_is_compiled_once(named: bool) -> None:
    """The fuzzer feeds each geometry several inputs: the repeats run through the model that
    holds the node's first ask, one compile in all, and a refused node refuses each of them."""
    cases = [c for c in drawn(60, ("float32",)) if c.mutation is None][:12]
    refuse = cases[3].spec.kernel[0]
    alone = PlantedRefusals(refuse, named=named)
    alone.run_many([(c.spec, c.x) for c in cases])
    planted = PlantedRefusals(refuse, named=named)
    items = [(c.spec, other_input(c, k)) for k in range(3) for c in cases]
    results = planted.run_many(items)
    assert planted.compiles == alone.compiles  # the repeats added no compile
    for (spec, x), r in zip(items, results, strict=True):
        if spec.kernel[0] == refuse:
            assert isinstance(r, RuntimeError)
        else:
            assert isinstance(r, PeerOutput), r
            exp, _ = expected_for(get_engine("numpy"), FuzzCase(op_name=spec.op, attributes={}, spec=spec, x=x,
                                                                recipe={}))
            assert np.array_equal(r.values, exp.values, equal_nan=True)


@dataclass(frozen=True)
class KindNode:
    """A planted node with the attributes a refusal's kind is read from (packs.kind_of)."""

    spec: Any
    shape: tuple[int, ...]
    dtype: str
    op: str


class PlantedTypeRefusals(PlantedRefusals):
    """A runtime refusing every model holding a float16 node, without naming it (tract refuses
    every bfloat16 model at load so)."""

    def translate(self, spec: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return KindNode(spec, shape, dtype.name, spec.op)

    def execute(self, group: Any, items: Any) -> list[PeerOutput]:
        nodes = tuple(node for _, node, _ in group)
        if nodes not in self.compiled and any(n.dtype == "float16" for n in nodes):
            self.compiles += 1
            raise RuntimeError("float16 refused")
        return super().execute([(i, (n.spec, n.shape, n.dtype), arr) for i, n, arr in group], items)


def test_a_kind_refused_before_runs_alone_and_the_others_compile_once() -> None:
    """After the runtime refused float16 nodes, a new call's float16 nodes run alone: the other
    nodes' model compiles once instead of being bisected, and every answer is an unbatched one."""
    cases = [c for c in drawn(160, ("float32", "float16")) if c.mutation is None]
    first, second = cases[:24], cases[24:56]
    assert any(c.x.dtype == np.float16 for c in first)
    halves = sum(c.x.dtype == np.float16 for c in second)
    assert 0 < halves < len(second)
    planted = PlantedTypeRefusals(refuse=-1, named=False)
    planted.run_many([(c.spec, c.x) for c in first])
    before = planted.compiles
    results = planted.run_many([(c.spec, c.x) for c in second])
    assert planted.compiles - before == 1 + halves  # one model for the rest, each float16 node alone
    alone = PlantedTypeRefusals(refuse=-1, named=False)
    for c, r in zip(second, results, strict=True):
        (want,) = alone.run_many([(c.spec, c.x)])
        if c.x.dtype == np.float16:
            assert isinstance(r, RuntimeError) and str(r) == str(want) == "float16 refused"
        else:
            assert isinstance(r, PeerOutput) and isinstance(want, PeerOutput)
            assert np.array_equal(r.values, want.values, equal_nan=True)


def test_a_pack_index_places_a_node_by_what_its_kind_did() -> None:
    a, b = KindNode(None, (1,), "float16", "max"), KindNode(None, (2,), "float16", "max")
    other = KindNode(None, (1,), "float32", "max")
    index = PackIndex(capacity=4)
    assert index.placement(a) == "pack"
    index.refused(a, RuntimeError("no"))
    assert index.placement(b) == "alone" and index.placement(other) == "pack"
    index.register([b], [None], [np.zeros(2)])  # type: ignore[list-item]
    assert index.placement(b) == "apart"  # refused as often as it ran
    index.register([KindNode(None, (3,), "float16", "max")], [None], [np.zeros(3)])  # type: ignore[list-item]
    assert index.placement(b) == "pack"  # refused one in three


@pytest.mark.parametrize("name", PACKING)
def test_nodes_of_a_refused_kind_get_the_answers_of_single_calls(name: str) -> None:
    """bfloat16 (refused by ONNX Runtime, which has no bfloat16 pooling kernel, and by OpenVINO's CPU
    plugin for MaxPool with indices; tract declines it):
    a second call's nodes, placed by the kinds the first call's refusals taught, answer as alone."""
    available_peer(name)
    cases = drawn(48, ("float32", "bfloat16", "float16"))
    batched_peer = resolve_peer(name)
    run_in_process(batched_peer, [(c.spec, c.x) for c in cases[:24]])
    got = run_in_process(batched_peer, [(c.spec, c.x) for c in cases[24:]])
    single_peer = resolve_peer(name)
    for c, r in zip(cases[24:], got, strict=True):
        (alone,) = run_in_process(single_peer, [(c.spec, c.x)])
        assert same(r, alone), (c.spec, r.verdict, alone.verdict)


def test_named_position_reads_the_node_a_runtime_error_names() -> None:
    assert named_position(RuntimeError("Node (pool3) Op (MaxPool) failed"), 8) == 3
    assert named_position(RuntimeError("While validating node 'AvgPool' (Parameter x12[0]:f32[1,1,3])"), 16) == 12
    assert named_position(RuntimeError("Unsupported operation of type: MaxPool name: y5 Details"), 8) == 5
    assert named_position(RuntimeError("Unsupported operation of type: MaxPool name: i2 Details"), 8) == 2
    assert named_position(RuntimeError("index_element_type i32 pool9 is not in a pack of 4"), 4) is None
    assert named_position(RuntimeError("maxpool3d failed"), 8) is None


def test_a_pack_index_serves_each_node_once_per_run_and_forgets_evicted_packs() -> None:
    cases = [c for c in drawn(40, ("float32",)) if c.mutation is None]
    a, b, c = cases[0], cases[1], cases[2]
    index = PackIndex(capacity=1)
    index.register(["A", "B"], [a.spec, b.spec], [a.x, b.x])
    todo = [(0, "A", a.x), (1, "A", a.x), (2, "C", c.x)]
    reuses, rest = index.plan(todo, [(a.spec, a.x), (a.spec, a.x), (c.spec, c.x)])
    assert rest == [todo[2]]
    assert [sorted(r.asked.values()) for r in reuses] == [[0], [1]]  # one input per position per run
    filler = reuses[0].items[1][1]
    assert filler.shape == b.x.shape and not filler.any()
    index.register(["C"], [c.spec], [c.x])  # capacity 1: the first pack is gone
    assert index.plan([(0, "A", a.x)], [(a.spec, a.x)])[1] == [(0, "A", a.x)]


def test_long_examples_shrink_to_the_one_configuration_and_checks_stay_dense() -> None:
    from hypothesis import find
    from hypothesis import strategies as st

    found = find(example_lists(st.integers(0, 100), 64), lambda xs: any(x > 50 for x in xs) and len(xs) > 1,
                 settings=settings(database=None, max_examples=500))
    assert found == [0, 51]
    lengths: list[int] = []

    @seed(1)
    @settings(max_examples=60, database=None, phases=[Phase.generate])
    @given(example_lists(st.just(0), 64))
    def collect(xs: list[int]) -> None:
        lengths.append(len(xs))

    collect()
    assert sum(lengths) / len(lengths) > 16  # st.lists drew about 6 whatever the bound
    assert [k for k in range(9) if engine_checked(k, "first")] == [0, ENGINE_CHECK_EVERY, 2 * ENGINE_CHECK_EVERY]


def test_a_nan_only_variant_replayed_on_an_integer_max_is_no_replay() -> None:
    """Grouping replays a row's causes on each new example: ``nan=-inf`` (a float-only reading)
    on an int8 max example once reached the C engine as an unknown NaN mode (a KeyError that ended
    an openvino campaign); it reproduces nothing there."""
    from poolcheck.engines import available_engines
    from poolcheck.fuzz.diagnosis.replay import replay

    case = next(c for c in drawn(60, ("int8",)) if c.mutation is None and c.op == "max")
    for name in available_engines():
        exp, _ = expected_for(get_engine(name), case)
        assert replay(get_engine(name), case.spec, case.x, ["nan=-inf"], exp.values, exp.indices) is None


def test_the_default_batch_is_the_smallest_the_peers_ask_for() -> None:
    """Every built-in peer, and a plugin built on the adapter, asks for examples of up to 64
    configurations (measured in docs/fuzzing.md, "Batches"), alone and together; a plugin that
    does not say keeps the campaign at EXAMPLE_CONFIGS, and a peer asking for fewer sets them."""
    builtin = [resolve_peer(n) for n in ("openvino", "openvino-onnx", "onnxruntime", "torch-onnx", "jax", "torch",
                                         "tract", "onnx_reference", "onnx-backend:onnxruntime.backend")]
    assert default_batch(builtin) == 64
    for one in builtin:
        assert default_batch([one]) == 64, one.name

    class Adapted(RuntimePeer):
        name = "adapted"

    class Short(RuntimePeer):
        name = "short"
        fuzz_batch = 16

    assert default_batch([*builtin, Adapted()]) == 64
    assert default_batch([*builtin, Short()]) == 16
    assert default_batch([*builtin, object()]) == EXAMPLE_CONFIGS
    assert default_batch([]) == EXAMPLE_CONFIGS
