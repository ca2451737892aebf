"""``poolcheck bench`` on the rest of the family (F1-F3, timed when named): the peers' prepared
family configurations (``RuntimePeer.prepare`` on a ``FamilySpec``), each contender checked
against ``run_family`` by the judgement's family rule before it is timed. No timing is asserted."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from support import available_peer, invoke

from poolcheck.bench import workloads
from poolcheck.bench.contenders import all_contenders
from poolcheck.bench.measure import run_bench
from poolcheck.bench.workloads import Workload
from poolcheck.peers.base import PeerDeclined
from poolcheck.spec.operators import parse

TINY = [
    Workload("TF1", "tiny LpPool p2", parse("LpPool-22", {"kernel_shape": [3, 2], "strides": [2, 1]}), (1, 3, 9, 10)),
    Workload("TF1p3", "tiny LpPool p3", parse("LpPool-22", {"kernel_shape": [3, 2], "strides": [2, 1], "p": 3}),
             (1, 3, 9, 10)),
    Workload("TF2", "tiny GlobalAveragePool", parse("GlobalAveragePool-22", {}), (1, 8, 5, 5)),
    Workload("TF3", "tiny AdaptiveAvgPool", parse("AdaptiveAvgPool-8", {"output_shape": [3, 4]}), (1, 4, 7, 9)),
    Workload("TF4", "tiny GlobalLpPool-2", parse("GlobalLpPool-2", {"p": 2}), (1, 4, 7, 9)),
]


def test_every_contender_is_checked_on_family_workloads() -> None:
    run = run_bench(TINY, reps=3, budget_s=0.2, warmup=1, block=1, contenders=all_contenders())
    for w in run.workloads:
        statuses = {r.key: r.status for r in w.results}
        assert statuses["c"] == statuses["numpy"] == "ok", w.name
        for r in w.results:
            if (w.name, r.key) == ("TF1p3", "torch"):
                # torch's lp_pool raises x (not |x|) to the p-th power: NaN for a negative sum
                assert r.status == "wrong" and "nan" in r.message, r.message
            else:
                assert r.status in ("ok", "n/a", "absent"), f"{w.name} {r.label}: {r.status} {r.message}"
            if r.status != "ok":
                assert r.message
        assert statuses["torch-cl"] in ("n/a", "absent")
    by = {w.name: {r.key: r.status for r in w.results} for w in run.workloads}
    assert by["TF4"]["onnxruntime"] in ("ok", "absent")  # GlobalLpPool-2: ONNX Runtime has that kernel
    assert by["TF3"]["onnxruntime"] in ("n/a", "absent")  # AdaptiveAvgPool is OpenVINO's


def test_a_runtime_peer_prepares_a_family_configuration() -> None:
    peer = available_peer("onnxruntime")
    spec = parse("LpPool-11", {"kernel_shape": [2, 2], "p": 3})
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 6)).astype(np.float32)
    prepared = peer.prepare(spec, x.shape, x.dtype)
    assert np.array_equal(prepared.run(x).values, peer.run(spec, x).values)
    assert np.array_equal(np.asarray(prepared.bind(x)().values), peer.run(spec, x).values)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="prepared for float32"):
        prepared.run(x[:, :, :4])
    with pytest.raises(PeerDeclined, match="MaxUnpool takes two"):
        peer.prepare(parse("MaxUnpool-22", {"kernel_shape": [2]}), (1, 1, 4), np.float32)


def test_family_workloads_are_named_not_default() -> None:
    assert [w.name for w in workloads.select(None)] == ["W1", "W1i", "W2", "W3", "W4", "W5", "W6"]
    f1, f2, f3 = workloads.select(["f1", "F2", "F3"])
    assert f1.output_shape == (1, 64, 27, 27) and f2.output_shape == (1, 2048, 1, 1) and f3.output_shape == (1, 512, 7, 7)
    assert f2.bytes_moved == 4 * 2048 * 49 + 4 * 2048


def test_cli_times_a_family_workload() -> None:
    proc = invoke("bench", "--workloads", "F2", "--reps", "3", "--time-budget", "0.1s", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout[proc.stdout.index("{"):proc.stdout.rindex("}") + 1])
    [w] = data["workloads"]
    assert w["name"] == "F2" and w["op"] == "global_avg"
    status = {r["contender"]: r["status"] for r in w["results"]}
    assert status["c"] == status["numpy"] == "ok"
    assert status.get("onnxruntime") in ("ok", "absent")


def test_no_empty_targets_table_for_family_workloads() -> None:
    """F1-F3 have no target beyond the ratios: neither the terminal nor the Markdown shows an
    empty "More targets" table (a blank surface, issue 21)."""
    from rich.console import Console

    from poolcheck.bench import render

    run = run_bench(TINY[2:3], reps=3, budget_s=0.2, warmup=1, block=1, contenders=all_contenders())
    assert render.evaluate(run) == []
    markdown = render.to_markdown(run)
    assert render.TARGETS_TITLE not in markdown and "\n\n\n" not in markdown
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(render.renderable(run))
    assert render.TARGETS_TITLE not in console.export_text()
