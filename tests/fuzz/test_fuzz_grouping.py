"""One root cause, one finding (poolcheck/fuzz/grouping.py): a peer's divergences that one
explanation reproduces are one group, named only by an explanation that reproduces every example;
rows from separate runs that share an explanation merge in ``report merge``."""

from __future__ import annotations

import runpy
from typing import Any

import numpy as np
from support import KERNELS

from poolcheck.engines import get_engine
from poolcheck.fuzz import oracles as O
from poolcheck.fuzz.diagnosis import shape_symptom
from poolcheck.fuzz.grouping import distinguish, group_all, group_finding, join_by_cause
from poolcheck.fuzz.strategies import FuzzCase
from poolcheck.peers.base import PeerOutput, PeerResult
from poolcheck.report.merge import merge_results
from poolcheck.results import CaseResult, RunResult, Verdict
from poolcheck.spec import attributes as A

ENGINE = get_engine("auto")
K01 = runpy.run_path(str(KERNELS / "k01_ceil_torch_last_window_vs_h.py"))


def kernel(spec: A.PoolSpec, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The k01 kernel (ceil_torch's last-window test against H) on ``x``."""
    kw: dict[str, Any] = {"kernel": list(spec.kernel), "strides": list(spec.strides),
                          "pads_begin": list(spec.pads_begin), "pads_end": list(spec.pads_end),
                          "dilations": list(spec.dilations), "rounding_type": spec.rounding_type,
                          "auto_pad": spec.auto_pad, "axis": spec.axis, "index_element_type": spec.index_element_type}
    values, indices = K01["max_pool"](x, **kw)
    return np.asarray(values), np.asarray(indices)


def finding(spec: A.PoolSpec, x: np.ndarray, peer: str = "planted-k01") -> O.Finding:
    """The k01 kernel's output on ``x``, judged on the fuzzer's own path."""
    case = FuzzCase("MaxPool-14", {}, spec, x, {})
    values, indices = kernel(spec, x)
    base, geom = O.expected_for(ENGINE, case)
    f = O.check_peer(case, peer, PeerResult("ok", PeerOutput(values, indices)), ENGINE, base, geom)
    assert f is not None
    return f.focused()[0]


def ceil_torch(stride: int) -> A.PoolSpec:
    return A.openvino_max_pool([2], [stride], [2], [0], rounding_type="ceil_torch")


X = np.arange(1, 4, dtype=np.float32).reshape(1, 1, 3)


def test_a_coincidental_name_gives_way_to_the_one_that_fits_every_example() -> None:
    # stride 4: the bug drops the window ceil adds, exactly as floor rounding would
    coincidence = finding(ceil_torch(4), X)
    assert ("rounding:ceil->floor",) in [(coincidence.atom,), *coincidence.extra["alternatives"]]
    # stride 1: ceil and floor agree, the bug still drops a window: only the real cause fits
    telling = finding(ceil_torch(1), X)
    grouping = group_all(ENGINE, [coincidence, telling])
    (group,) = grouping.groups
    # (pads_end is 0 here: a test against H + pads_end is the same test, and stays a candidate)
    assert group.causes[0] == ("rounding:ceil_torch-last-window-vs-H",)
    assert ("rounding:ceil->floor",) not in group.causes
    row = group_finding(group, coincidence, examples=2)
    assert row.klass == "rounding:ceil_torch-last-window-vs-H" and row.extra["examples"] == 2
    assert row.text.startswith("shape: spatial axis 0 has 1 window(s), expected 2")


def test_bfloat16_examples_group_as_any_float_does() -> None:
    """A bfloat16 output (NumPy kind 'V', ml_dtypes' type) is replayed like any float: the two
    examples are one group under the cause that fits both (they were two, each keeping the name
    of its own diagnosis: a 60 s family campaign, seed 11, had torch's LpPool overflow on bfloat16
    both as lp:input-type-average and as lp:no-root, a violation, on all-inf outputs)."""
    from poolcheck.spec import dtypes

    xb = dtypes.cast(X, dtypes.BFLOAT16)
    grouping = group_all(ENGINE, [finding(ceil_torch(4), xb), finding(ceil_torch(1), xb)])
    (group,) = grouping.groups
    assert group.causes[0] == ("rounding:ceil_torch-last-window-vs-H",)


def test_several_causes_that_fit_every_example_are_all_shown() -> None:
    (group,) = group_all(ENGINE, [finding(ceil_torch(4), X)]).groups
    assert len(group.causes) > 1
    assert "ambiguous: also consistent with" in group_finding(group, group.members[0], 1).text


def test_separate_peers_are_separate_groups() -> None:
    groups = group_all(ENGINE, [finding(ceil_torch(1), X, "a"), finding(ceil_torch(1), X, "b")]).groups
    assert len(groups) == 2


def test_shape_symptom_names_the_axis_the_window_and_where_it_starts() -> None:
    text = shape_symptom(ceil_torch(1), (1, 1, 3), (1, 1, 3))
    assert text == ("shape: spatial axis 0 has 3 window(s), expected 4: window 3, starting at input position 1 "
                    "(inside the input, 2 element(s) before its end; H 3, pads_begin 2, pads_end 0, stride 1), "
                    "is missing")
    assert shape_symptom(ceil_torch(1), (1, 1, 3), (1, 1, 4)) == ""


def _row(case_id: str, subject: str, detail: str, also: list[str]) -> CaseResult:
    tags = ["fuzz", "new", "peer", f"signature:peer|max|{subject}|{detail}", f"cause:{detail}",
            *(f"cause:{a}" for a in also)]
    return CaseResult(case_id=case_id, verdict=Verdict.FAIL, tags=tags, input_shape=[1, 1, 3])


def test_report_merge_joins_rows_that_share_a_cause() -> None:
    a = RunResult(command="a", kind="fuzz", cases=[_row("x", "p", "rounding:ceil->floor",
                                                         ["rounding:ceil_torch-last-window-vs-H"])])
    b = RunResult(command="b", kind="fuzz", cases=[_row("y", "p", "rounding:ceil_torch-last-window-vs-H", []),
                                                   _row("z", "q", "rounding:ceil->floor", [])])
    merged = merge_results([("a.json", a), ("b.json", b)])
    assert len(merged.cases) == 2  # p's two rows are one root cause; q is another peer
    keys = {"1": ("p", ["cause:A", "cause:B"]), "2": ("p", ["cause:B"]), "3": ("p", ["cause:C"])}
    assert join_by_cause(keys) == {"1": "1", "2": "1", "3": "3"}


def test_the_peer_tells_apart_causes_that_fit_every_example() -> None:
    """pads_end is 0 in the example: a last-window test against H and against H + pads_end agree
    there. Asked on a neighbouring configuration (pads_end 1..3) where they part, the kernel
    answers as "against H", and the other cause is dropped."""
    (group,) = group_all(ENGINE, [finding(ceil_torch(1), X)]).groups
    assert ("rounding:ceil_torch-last-window-vs-H+pads_end",) in group.causes
    asked = []

    def ask(spec: A.PoolSpec, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None] | None:
        asked.append(spec)
        return kernel(spec, x)

    refuted = distinguish(ENGINE, group, ask)
    assert group.causes == [("rounding:ceil_torch-last-window-vs-H",)]
    assert ("rounding:ceil_torch-last-window-vs-H+pads_end",) in refuted
    assert 1 <= len(asked) <= 24
