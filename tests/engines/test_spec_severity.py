"""The severity table: one rule per class and convention, derived from cited sentences, used alike
by the fuzzer's diagnosis and by ``poolcheck run --peers`` checks; docs/severity.md generated."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support import ROOT

from poolcheck.api import run_spec
from poolcheck.cases import load_paths, write_cases
from poolcheck.peers.base import PeerOutput, PeerResult
from poolcheck.results import Severity
from poolcheck.runner import check_peer_output
from poolcheck.spec import attributes as A
from poolcheck.spec.operators import parse
from poolcheck.spec.policy import Policy
from poolcheck.spec.severity import SEVERITY_RULES, severity_of, severity_rule, severity_table_markdown
from poolcheck.spec.sources import SENTENCES

OV_MAX = A.openvino_max_pool([2], [2], [1], [1])
ONNX_MAX = A.onnx_max_pool([2], [2], [1, 1])
OV_AVG_INCL = A.openvino_avg_pool([2], [2], [1], [1], exclude_pad=False)
OV_AVG_EXCL = A.openvino_avg_pool([2], [2], [1], [1], exclude_pad=True)
ONNX_AVG_INCL = A.onnx_average_pool([2], [2], [1, 1], count_include_pad=1)
ONNX_AVG_EXCL = A.onnx_average_pool([2], [2], [1, 1], count_include_pad=0)
ALL = (OV_MAX, ONNX_MAX, OV_AVG_INCL, OV_AVG_EXCL, ONNX_AVG_INCL, ONNX_AVG_EXCL)


def test_every_rule_cites_sentences_that_exist() -> None:
    for r in SEVERITY_RULES:
        assert all(sid in SENTENCES for sid in r.sentences), r
        assert r.why, r.key
        if r.severity is Severity.VIOLATION:
            assert r.sentences, f"{r.key}: a violation cites the sentence it contradicts"
        if r.severity is Severity.ERRATUM:
            assert len(r.sentences) >= 2, f"{r.key}: an erratum cites both contradicting sentences"


@pytest.mark.parametrize("prefix", ["nan=", "empty_max=", "empty_index=", "empty_avg=", "avg=", "max="])
def test_nan_empty_windows_and_accumulation_are_never_violations(prefix: str) -> None:
    keys = {r.key for r in SEVERITY_RULES if r.key.startswith(prefix)}
    assert keys
    for key in keys:
        for spec in ALL:
            assert severity_of([key], spec) is not Severity.VIOLATION, (key, spec)


@pytest.mark.parametrize("atoms, spec, expected", [
    # the overstated cases of the findings issue
    (["avg=input-type-sum"], OV_AVG_INCL, Severity.UNSPECIFIED),  # float32/16 sums overflowing (tract, jax)
    (["avg=input-type-sum"], ONNX_AVG_EXCL, Severity.UNSPECIFIED),
    (["same:clamped"], ONNX_MAX, Severity.ERRATUM),  # ONNX negative SAME pads clamped
    (["same:negative-pads"], ONNX_MAX, Severity.ERRATUM),
    (["same:rounding-applied"], OV_MAX, Severity.ERRATUM),  # OpenVINO's H_out = H
    (["same:rounding-applied"], ONNX_MAX, Severity.VIOLATION),
    (["nan=-inf"], OV_MAX, Severity.UNSPECIFIED),  # float16 NaN read as -inf
    (["empty_max=lowest", "empty_index=-1-per-axis"], ONNX_MAX, Severity.UNSPECIFIED),  # torch-onnx combination
    (["divisor=full"], OV_AVG_INCL, Severity.UNSPECIFIED),
    (["divisor=full"], ONNX_AVG_INCL, Severity.UNSPECIFIED),
    (["divisor=full"], OV_AVG_EXCL, Severity.VIOLATION),
    (["divisor=valid"], OV_AVG_INCL, Severity.VIOLATION),
    (["rounding:ceil_torch->ceil"], OV_MAX, Severity.VIOLATION),
    (["rounding:ceil_torch->ceil"], ONNX_MAX, Severity.ERRATUM),
    (["precision:float32"], OV_MAX, Severity.VIOLATION),
    (["precision:float32"], OV_AVG_INCL, Severity.UNSPECIFIED),
    (["avg=input-type-sum", "divisor=full"], OV_AVG_EXCL, Severity.VIOLATION),
    (["rejects: pads >= kernel"], ONNX_MAX, Severity.LIMITATION),
    (["something nobody named"], ONNX_MAX, Severity.VIOLATION),
])
def test_class_severities(atoms: list[str], spec: A.PoolSpec, expected: Severity) -> None:
    assert severity_of(atoms, spec) is expected


def test_rule_depends_on_the_convention_not_on_who_runs_it() -> None:
    r_ov, r_onnx = severity_rule("same:swapped", OV_MAX), severity_rule("same:swapped", ONNX_MAX)
    assert r_ov is not None and r_onnx is not None
    assert r_ov.sentences == ("OV-SAME-SPLIT",) and r_onnx.sentences == ("ONNX-SAME-SPLIT",)


def _case(tmp_path: Path, op: str, attributes: dict, x: list) -> object:
    shape = run_spec(parse(op, attributes), np.asarray(x, dtype=np.float32))[0].shape
    path = write_cases(tmp_path / "c.yaml", [{"id": "c", "op": op, "attributes": attributes, "dtype": "float32",
                                               "input": x, "expected": {"shape": list(shape)}}])
    cases, errors = load_paths([path])
    assert not errors, errors
    return cases[0]


def _check(case, policy: Policy):  # type: ignore[no-untyped-def]
    v, i = run_spec(case.spec, case.input, engine="numpy", policy=policy)
    return check_peer_output(case, "plugin", None, PeerResult("ok", PeerOutput(v, i)))


@pytest.mark.parametrize("op, attributes", [
    ("AvgPool-14", {"kernel": [3], "strides": [2], "pads_begin": [1], "pads_end": [1], "rounding_type": "ceil",
                    "exclude_pad": False}),
    ("AveragePool-22", {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1,
                        "count_include_pad": 1}),
])
def test_run_checks_weigh_divisor_full_as_the_fuzzer_does(tmp_path: Path, op: str, attributes: dict) -> None:
    """``divisor=full`` with padding counted: unspecified for any runner of either convention
    (before, a run check called it a violation, the fuzzer unspecified)."""
    case = _case(tmp_path, op, attributes, [[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]])
    check = _check(case, Policy(divisor="full"))
    assert check.verdict == "fail", check
    assert check.severity == severity_of(["divisor=full"], case.spec).value == "unspecified"
    assert "divisor=full" in (check.diagnosis or "") and "ONNX-DIVISOR" in (check.diagnosis or "")
    excluded = _case(tmp_path, op, {**attributes, **({"exclude_pad": True} if op.startswith("Avg") else
                                                    {"count_include_pad": 0})}, [[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]])
    assert _check(excluded, Policy(divisor="full")).severity == "violation"


def test_run_checks_weigh_a_combination_of_open_behaviours_as_open(tmp_path: Path) -> None:
    """An empty window's value and index both chosen differently: two open points, unspecified."""
    case = _case(tmp_path, "MaxPool-14", {"kernel": [2], "strides": [2], "pads_begin": [1], "pads_end": [1],
                                          "rounding_type": "ceil"}, [[[1.0, 2.0, 3.0, 4.0, 5.0]]])
    check = _check(case, Policy(empty_max="lowest", empty_index=0))
    assert check.verdict == "fail" and check.severity == "unspecified", check
    # named as the fuzzer names it (the seeded scan, or the two open points together)
    assert (check.diagnosis or "").startswith(("max=seeded-scan", "empty_max=lowest+empty_index=0")), check


def test_docs_severity_table_is_up_to_date() -> None:
    """docs/severity.md is generated: `python -m poolcheck.spec.severity > docs/severity.md`."""
    assert (ROOT / "docs" / "severity.md").read_text(encoding="utf-8") == severity_table_markdown()


def test_docs_table_shows_every_rule_and_sentence() -> None:
    text = severity_table_markdown()
    for r in SEVERITY_RULES:
        assert f"| `{r.key}` | {r.condition} | {r.severity.value} |" in text
        for sid in r.sentences:
            assert f"### {sid}" in text
    assert np.all([SENTENCES[s].text[:30] in text for r in SEVERITY_RULES for s in r.sentences])


@pytest.mark.slow
def test_run_checks_of_registry_entries_weigh_as_their_class() -> None:
    """``poolcheck run cases/known --peers openvino,openvino-onnx``: each entry's check on its own
    peer has the severity the table gives its class (the shape classes were 'output contract'
    violations, the accumulation and seeded-scan classes violations)."""
    pytest.importorskip("openvino")
    from poolcheck.corpus import KNOWN_DIR
    from poolcheck.fingerprint import cpu_features
    from poolcheck.fuzz.known import known_entries
    from poolcheck.peers.openvino_onnx_peer import OpenVinoOnnxPeer
    from poolcheck.peers.openvino_peer import OpenVinoPeer
    from poolcheck.runner import peer_checks

    entries, errors = known_entries([KNOWN_DIR])
    assert not errors
    mine = [e for e in entries if e.peer in ("openvino", "openvino-onnx") and not e.cpu_unmet(cpu_features())]
    assert len(mine) > 30
    checks = peer_checks([e.case for e in mine], [OpenVinoPeer(), OpenVinoOnnxPeer()], timeout=300)
    wrong = []
    for e in mine:
        check = next(k for k in checks[e.case.id] if k.runner == e.peer)
        # the run names the divergence as the fuzzer does (the recorded class among the named
        # behaviours) and weighs the named behaviours by the table
        named = (check.diagnosis or "").removeprefix("output shape: ").split(": ", 1)[0].split("+")
        if e.sig.detail not in named:
            named = [a for a in e.sig.detail.split("+") if a]
        want = severity_of(named, e.case.spec)
        if check.severity != want:
            wrong.append(f"{e.case.id}: {check.severity} ({check.diagnosis}), the table: {want.value}")
    assert not wrong, "\n".join(wrong)


def test_a_saved_find_names_its_severity_and_quotes_the_sentences() -> None:
    """The notes of a find written as a case file: the weight, the rule's reason and the words
    of each sentence it cites."""
    from poolcheck.fuzz.known import severity_lines
    from poolcheck.fuzz.oracles import Finding
    from poolcheck.fuzz.strategies import FuzzCase

    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    case = FuzzCase("avg", {}, OV_AVG_EXCL, x, {})
    f = Finding(kind="peer", op="avg", subject="plugin", klass="divisor=full", text="t", detail="d", case=case,
                severity=severity_of(["divisor=full"], OV_AVG_EXCL))
    lines = severity_lines(f)
    assert lines[0].startswith("severity: violation -- divisor=full: exclude_pad=true: padding is not counted")
    assert "[OV14-AVG-EXCLUDE-PAD]" in lines[0]
    assert lines[1].startswith("[OV14-AVG-EXCLUDE-PAD] \u201cWhether or not to include zero padding")
    open_find = Finding(kind="peer", op="avg", subject="plugin", klass="avg=input-type-sum", text="t", detail="d",
                        case=case, severity=severity_of(["avg=input-type-sum"], OV_AVG_EXCL))
    assert severity_lines(open_find) == ["severity: unspecified -- avg=input-type-sum: the text gives no "
                                         "accumulation type or order for the average's sum"]
