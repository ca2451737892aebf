"""Run cases through the reference engines (and peers) and build the result model.

Verdicts per engine check:
- ``pass``    the engine reproduces every documented output;
- ``erratum`` the documented output differs, the case records an erratum, and the engine
  reproduces the erratum's corrected output (the document is wrong, as recorded);
- ``fail``    any other disagreement (including an erratum the document no longer contradicts);
- ``error``   the case itself cannot run (an invalid configuration that slipped past loading).
"""

from __future__ import annotations

import datetime as _dt
import shlex
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import poolcheck
from poolcheck import spec as S
from poolcheck.api import run_spec
from poolcheck.cases.model import Case
from poolcheck.errors import PoolcheckError
from poolcheck.fingerprint import machine_fingerprint
from poolcheck.results import CaseResult, Check, Diff, RunResult, Severity, WindowCell, worst
from poolcheck.spec.policy import Policy

MAX_DIFFS = 16
#: Tensors up to this many elements are stored whole in the result (for side-by-side views).
FULL_OUTPUT_LIMIT = 4096


def _scalar(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return repr(v)  # "nan", "inf", "-inf" survive JSON
    return v


def _tensor(a: np.ndarray | None) -> Any:
    if a is None or a.size > FULL_OUTPUT_LIMIT:
        return None
    return [_scalar(v) for v in a.reshape(-1)] if a.ndim == 0 else _nested(a)


def _nested(a: np.ndarray) -> Any:
    if a.ndim == 0:
        return _scalar(a[()])
    return [_nested(sub) for sub in a]


def window_cells(case_input: np.ndarray, geom: S.Geometry, position: Sequence[int],
                 chosen: int | None, layout: S.IndexLayout | None) -> list[WindowCell]:
    """The window of one output element over the padded input, with values and the chosen tap."""
    n, c = int(position[0]), int(position[1])
    plane = case_input[n, c]
    cells = []
    for coords, kind in S.window_taps(geom, position):
        value = _scalar(plane[coords]) if kind == "input" else None
        is_chosen = False
        if chosen is not None and kind == "input" and layout is not None:
            sizes = [a.size for a in geom.axes]
            flat = int(np.ravel_multi_index(coords, sizes, order=layout.order))
            nc = n * geom.channels + c
            is_chosen = (nc * int(np.prod(sizes)) + flat) % layout.modulus == chosen
        cells.append(WindowCell(list(coords), kind, value, is_chosen))
    return cells


def compare(
    name: str,
    expected: np.ndarray,
    actual: np.ndarray,
    *,
    rtol: float = 0.0,
    atol: float = 0.0,
) -> tuple[list[tuple[int, ...]], str]:
    """Positions where ``actual`` differs from ``expected`` (NaN equals NaN), and a shape message."""
    if tuple(expected.shape) != tuple(actual.shape):
        return [], f"{name}: shape {tuple(actual.shape)}, but should be {tuple(expected.shape)}"
    if expected.dtype.kind == "f" or actual.dtype.kind == "f":
        e = expected.astype(np.float64)
        a = actual.astype(np.float64)
        same = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True) | (a == e)
    else:
        same = expected.astype(np.int64) == actual.astype(np.int64)
    bad = np.argwhere(~same)
    return [tuple(int(i) for i in p) for p in bad], ""


def _diffs_for(case: Case, geom: S.Geometry, layout: S.IndexLayout | None, output: str,
               positions: list[tuple[int, ...]], expected: np.ndarray, actual: np.ndarray,
               indices: np.ndarray | None) -> list[Diff]:
    diffs = []
    for p in positions[:MAX_DIFFS]:
        chosen = int(indices[p]) if indices is not None else None
        diffs.append(Diff(output, list(p), _scalar(expected[p]), _scalar(actual[p]),
                          window_cells(case.input, geom, p, chosen, layout)))
    return diffs


def _against(case: Case, target: dict[str, Any], values: np.ndarray, indices: np.ndarray | None,
             geom: S.Geometry, layout: S.IndexLayout | None) -> tuple[list[Diff], int, list[str]]:
    """Compare engine outputs with a set of documented outputs (values / indices / shape)."""
    diffs: list[Diff] = []
    total = 0
    messages: list[str] = []
    if "shape" in target and tuple(target["shape"]) != tuple(values.shape):
        diffs.append(Diff("shape", None, list(target["shape"]), list(values.shape)))
        total += 1
        messages.append(f"out.shape={tuple(values.shape)}, but the document says {tuple(target['shape'])}")
    for output, actual in (("values", values), ("indices", indices)):
        if output not in target or actual is None:
            continue
        exp = np.asarray(target[output])
        positions, shape_msg = compare(output, exp, actual, rtol=case.rtol, atol=case.atol)
        if shape_msg:
            diffs.append(Diff("shape", None, list(exp.shape), list(actual.shape)))
            total += 1
            messages.append(shape_msg)
            continue
        if positions:
            total += len(positions)
            diffs.extend(_diffs_for(case, geom, layout, output, positions, exp, actual, indices))
            messages.append(f"{output}: {len(positions)} of {actual.size} elements differ")
    return diffs, total, messages


def check_engine(case: Case, engine: str) -> Check:
    """Run ``case`` on one engine and judge it against the document (and its erratum)."""
    try:
        return _check_engine(case, engine)
    except Exception as exc:  # the per-case boundary: the reason is kept, the run goes on
        return Check(engine, "engine", "error", f"{_reason(exc)} [engine={engine}]")


def _reason(exc: BaseException) -> str:
    """One line saying why: poolcheck's own errors as they are, anything else with its type."""
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return text if isinstance(exc, PoolcheckError) else f"{type(exc).__name__}: {text}".rstrip(": ")


def output_contract(case: Case, values: Any, indices: Any, *, peer: bool) -> str:
    """What is wrong with an output's types and shape, or "" (issue 9: values dtype = input dtype,
    indices dtype as the attributes say, the resolved output shape).

    OpenVINO MaxPool: "index_element_type ... the type of output tensor with indices" (i32/i64);
    ONNX MaxPool: "Indices tensor from max pooling across the input tensor ... T2 = tensor(int64)".
    A peer's output must also be a real numeric array (no complex, strings, objects, records).
    """
    out_shape = tuple(a.out for a in S.resolve(case.spec, case.input.shape).axes)
    want_shape = (case.input.shape[0], case.input.shape[1], *out_shape)
    problems = []
    for name, arr in (("values", values), ("indices", indices)):
        if arr is None:
            continue
        if not isinstance(arr, np.ndarray):
            problems.append(f"{name}: not an array ({type(arr).__name__})")
            continue
        if arr.dtype.kind not in "fiu":
            problems.append(f"{name}: element type {arr.dtype} is not a real number type")
            continue
        if tuple(arr.shape) != want_shape:
            problems.append(f"shape: {name} are {tuple(arr.shape)}, the attributes give {want_shape}")
    if problems:
        return "; ".join(problems)
    if isinstance(values, np.ndarray) and values.dtype != case.dtype:
        problems.append(f"dtype: values are {values.dtype}, the input is {case.dtype}")
    if isinstance(indices, np.ndarray) and case.spec.op == "max":
        want = S.index_layout(case.spec, case.input.shape).dtype
        if indices.dtype != want:
            rule = (f"index_element_type {case.spec.index_element_type} requires {want}"
                    if case.spec.convention == "openvino" else f"ONNX MaxPool requires {want}")
            problems.append(f"dtype: indices are {indices.dtype}, {rule}")
    return "; ".join(problems)


def _check_engine(case: Case, engine: str) -> Check:
    label = f"{case.spec.describe()} engine={engine}"
    try:
        values, indices = run_spec(case.spec, case.input, engine=engine)
        geom = S.resolve(case.spec, case.input.shape)
    except PoolcheckError as exc:
        return Check(engine, "engine", "error", f"{exc} [{label}]")
    contract = output_contract(case, values, indices, peer=False)
    if contract:
        return Check(engine, "engine", "fail", f"{contract} [{label}]", severity=Severity.VIOLATION.value,
                     diagnosis="output contract")
    layout = S.index_layout(case.spec, case.input.shape) if case.spec.op == "max" else None
    if indices is not None:
        indices = indices.astype(np.int64)
    expected = {k: _tensor(np.asarray(v)) for k, v in case.expected.items() if k != "shape"}
    actual = {"values": _tensor(values)}
    if indices is not None:
        actual["indices"] = _tensor(indices)
    diffs, total, messages = _against(case, case.expected, values, indices, geom, layout)
    if not diffs:
        if case.erratum is not None:
            return Check(engine, "engine", "fail",
                         "the case records an erratum, but the document agrees with the engine (stale erratum?)",
                         expected=expected, actual=actual, severity=Severity.VIOLATION.value)
        return Check(engine, "engine", "pass", expected=expected, actual=actual)
    if case.erratum is not None:
        # Outputs the erratum corrects must match its correction; the rest must match the document.
        corrected = {**case.expected, **case.erratum["correct"]}
        still, still_total, still_msgs = _against(case, corrected, values, indices, geom, layout)
        if not still:
            return Check(engine, "engine", "erratum", "; ".join(messages) + " (the document is wrong as the case's erratum records)",
                         diffs, total, expected=expected, actual=actual, severity=Severity.ERRATUM.value)
        return Check(engine, "engine", "fail",
                     "differs from the document and from the recorded erratum: " + "; ".join(still_msgs)
                     + f" [{label}]", still, still_total, expected=expected, actual=actual,
                     severity=Severity.VIOLATION.value)
    return Check(engine, "engine", "fail", "; ".join(messages) + f" [{label}]", diffs, total,
                 expected=expected, actual=actual, severity=Severity.VIOLATION.value)


def spec_dict(case: Case) -> dict[str, Any]:
    return {"op": case.op, **case.attributes}


def replay_command(case: Case, options: Sequence[str] = ()) -> str:
    """The command that re-runs exactly this case with the same options (engine, peers ...),
    pasteable from any working directory: the file by absolute path, the case by exact id."""
    target = f"{Path(case.path).resolve()}::{case.id}" if case.path != "<memory>" else case.id
    return " ".join(["poolcheck", "run", shlex.quote(target), *(shlex.quote(o) for o in options)])


def error_result(case: Case, reason: str, replay: str = "") -> CaseResult:
    """A case that could not be judged: verdict ``error`` with where and why."""
    return CaseResult(case_id=case.id, verdict="error", title=case.title, source=case.location,
                      convention=case.convention, op=case.op, dtype=getattr(case.dtype, "name", ""),
                      tags=list(case.tags), replay=replay, message=f"{case.location}: {reason}")


def run_case(case: Case, engines: Sequence[str], extra_checks: Iterable[Check] = (),
             replay_options: Sequence[str] = ()) -> CaseResult:
    """Judge ``case`` on every engine (plus checks already made, e.g. by peers). Never raises:
    anything that goes wrong inside the case becomes its ``error`` verdict, naming file, line and
    reason."""
    replay = ""
    try:
        replay = replay_command(case, replay_options)
        return _run_case(case, engines, list(extra_checks), replay)
    except Exception as exc:
        return error_result(case, _reason(exc), replay)


def _run_case(case: Case, engines: Sequence[str], extra_checks: list[Check], replay: str) -> CaseResult:
    checks = [check_engine(case, e) for e in engines]
    checks.extend(extra_checks)
    erratum = None
    if case.erratum is not None:
        erratum = {k: (_plain(v) if k == "correct" else v) for k, v in case.erratum.items()}
    verdict = worst([c.verdict for c in checks])
    # A case that could not be judged says where it is and why, whichever check failed.
    message = ""
    if verdict == "error":
        first = next(c for c in checks if c.verdict == "error")
        message = f"{case.location}: {first.runner}: {first.message}"
    return CaseResult(
        case_id=case.id,
        verdict=verdict,
        message=message,
        title=case.title,
        source=case.location,
        convention=case.convention,
        op=case.op,
        spec=spec_dict(case),
        input_shape=list(case.input.shape),
        dtype=case.dtype.name,
        checks=checks,
        erratum=erratum,
        tags=list(case.tags),
        replay=replay,
        geometry=geometry_dicts(case),
        input=_tensor(case.input),
    )


def geometry_dicts(case: Case) -> list[dict[str, int]] | None:
    """The resolved per-axis geometry of ``case`` (None when its configuration cannot resolve)."""
    try:
        geom = S.resolve(case.spec, case.input.shape)
    except Exception:
        return None
    return [{"size": a.size, "kernel": a.kernel, "stride": a.stride, "dilation": a.dilation,
             "pad_begin": a.pad_begin, "pad_end": a.pad_end, "out": a.out, "overhang": a.overhang}
            for a in geom.axes]


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, np.ndarray):
        return _tensor(v)
    if isinstance(v, tuple):
        return list(v)
    return v


def record_peer_versions(result: RunResult, peers: Sequence[Any]) -> None:
    """Each peer's version in ``result.versions`` ("unavailable" when it cannot say)."""
    for peer in peers:
        try:
            result.versions[peer.name] = peer.version() or "unavailable"
        except Exception:
            result.versions[peer.name] = "unavailable"


def environment_versions() -> dict[str, str]:
    return {"poolcheck": poolcheck.__version__, "python": sys.version.split()[0], "numpy": np.__version__}


def new_result(command: str, kind: str = "run") -> RunResult:
    return RunResult(
        command=command,
        versions=environment_versions(),
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        tool_version=poolcheck.__version__,
        kind=kind,
        extra={"fingerprint": machine_fingerprint().to_dict()},  # the machine (poolcheck/fingerprint.py)
    )


def select_cases(cases: list[Case], pattern: str | None) -> list[Case]:
    """``-k``: keep cases whose id contains any comma-separated substring (``not X`` excludes)."""
    if not pattern:
        return cases
    include = [p.strip() for p in pattern.split(",") if p.strip() and not p.strip().startswith("not ")]
    exclude = [p.strip()[4:].strip() for p in pattern.split(",") if p.strip().startswith("not ")]
    out = []
    for c in cases:
        if include and not any(p in c.id for p in include):
            continue
        if any(p in c.id for p in exclude):
            continue
        out.append(c)
    return out


# --------------------------------------------------------------------------- peers

#: Tolerances for comparing a peer's averages with the reference (float64-accumulated). Runtimes
#: accumulate in the input type, so a few units in the last place are expected; max pooling is
#: compared exactly.
PEER_RTOL = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}
PEER_ATOL = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-12}

STATUS_VERDICT = {"rejects": "rejects", "crash": "crash", "timeout": "timeout", "declined": "skip",
                  "unavailable": "skip", "invalid": "fail"}


def peer_tolerance(case: Case) -> tuple[float, float]:
    if case.spec.op == "max":
        return 0.0, 0.0
    return PEER_RTOL.get(case.dtype.name, 0.0), PEER_ATOL.get(case.dtype.name, 0.0)


def check_peer_output(case: Case, peer_name: str, version: str | None, result: Any) -> Check:
    """Judge one peer's :class:`~poolcheck.peers.base.PeerResult` against the reference engine."""
    try:
        return _check_peer_output(case, peer_name, version, result)
    except Exception as exc:  # the per-case boundary: a peer's oddity never ends the run
        return Check(peer_name, "peer", "error", f"{_reason(exc)} [peer={peer_name}]", version=version)


#: Peer statuses and the severity of the verdict they give: refusing a valid configuration is a
#: limitation; crashing or hanging on one is a violation (the spec promises an output).
STATUS_SEVERITY = {"rejects": Severity.LIMITATION, "crash": Severity.VIOLATION, "timeout": Severity.VIOLATION,
                   "invalid": Severity.VIOLATION}


def _as_output_array(value: Any) -> Any:
    """An ndarray as the peer gave it; other sequences through NumPy; anything else unchanged."""
    if value is None or isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value)
    except Exception:
        return value


def _check_peer_output(case: Case, peer_name: str, version: str | None, result: Any) -> Check:
    if result.status != "ok":
        verdict = STATUS_VERDICT.get(result.status, "rejects")
        sev = STATUS_SEVERITY.get(result.status)
        return Check(peer_name, "peer", verdict, f"{result.status}: {result.message}".rstrip(": "),
                     version=version, severity=sev.value if sev and verdict != "skip" else None)
    ref_values, ref_indices = run_spec(case.spec, case.input, engine="numpy")
    geom = S.resolve(case.spec, case.input.shape)
    layout = S.index_layout(case.spec, case.input.shape) if case.spec.op == "max" else None
    out = result.output
    raw_values = _as_output_array(getattr(out, "values", None))
    raw_indices = _as_output_array(getattr(out, "indices", None))
    contract = output_contract(case, raw_values, raw_indices, peer=True) if raw_values is not None else \
        "values: the peer returned no values"
    if contract:
        # Validated before any comparison: a complex, string or record array never reaches it.
        shape_diffs = []
        if isinstance(raw_values, np.ndarray) and raw_values.shape != ref_values.shape:
            shape_diffs.append(Diff("shape", None, list(ref_values.shape), list(raw_values.shape)))
        notes = "; ".join(str(n) for n in (getattr(out, "notes", []) or []))
        return Check(peer_name, "peer", "fail", contract + (f" ({notes})" if notes else ""), shape_diffs,
                     len(shape_diffs), version=version, severity=Severity.VIOLATION.value,
                     diagnosis="output contract")
    values = raw_values
    indices = None if raw_indices is None else raw_indices.astype(np.int64)
    rtol, atol = peer_tolerance(case)
    diffs: list[Diff] = []
    total = 0
    messages: list[str] = []
    outputs = [("values", ref_values, values)]
    if ref_indices is not None and indices is not None:
        outputs.append(("indices", ref_indices.astype(np.int64), indices))
    for output, exp, act in outputs:
        positions, shape_msg = compare(output, exp, act, rtol=rtol, atol=atol)
        if shape_msg:
            diffs.append(Diff("shape", None, list(exp.shape), list(act.shape)))
            total += 1
            messages.append(shape_msg)
            break
        if positions:
            total += len(positions)
            diffs.extend(_diffs_for(case, geom, layout, output, positions, exp, act,
                                    indices if indices is not None and indices.shape == exp.shape else None))
            messages.append(f"{output}: {len(positions)} of {exp.size} elements differ from the reference")
    expected = {"values": _tensor(ref_values)}
    actual = {"values": _tensor(values)}
    if ref_indices is not None:
        expected["indices"] = _tensor(ref_indices)
    if indices is not None:
        actual["indices"] = _tensor(indices)
    notes = "; ".join(str(n) for n in (getattr(out, "notes", []) or []))
    if not diffs:
        return Check(peer_name, "peer", "pass", notes, version=version, expected=expected, actual=actual)
    severity, why = peer_severity(case, values, indices)
    return Check(peer_name, "peer", "fail", "; ".join(messages) + (f" ({notes})" if notes else ""), diffs, total,
                 version=version, expected=expected, actual=actual, severity=severity.value, diagnosis=why)


#: Policy points the specs leave open (poolcheck/spec/policy.py): a peer whose output matches
#: the reference under one of them made a choice the spec allows, not an error.
OPEN_POLICIES: tuple[tuple[str, Policy], ...] = (
    ("nan=ignore", Policy(nan="ignore")),
    ("nan=first", Policy(nan="first")),
    ("empty_max=lowest", Policy(empty_max="lowest")),
    ("empty_max=zero", Policy(empty_max="zero")),
    ("empty_index=0", Policy(empty_index=0)),
    ("empty_avg=nan", Policy(empty_avg="nan")),
)
#: Largest input re-run under every open policy to classify a peer's divergence.
POLICY_SEARCH_LIMIT = 1_000_000
#: Accumulating an average in the input type (the specs name no accumulation type): a peer within
#: this tolerance of the float64-accumulated reference is unspecified, not a violation.
ACCUMULATION_RTOL = {"float16": 2e-2, "float32": 1e-4}


def peer_severity(case: Case, values: np.ndarray, indices: np.ndarray | None) -> tuple[Severity, str | None]:
    """How much a peer's divergence weighs: ``unspecified`` when the case is tagged so, when the
    peer matches the reference under a policy the spec leaves open (NaN, empty windows), or when
    an average differs only by accumulation precision; otherwise a ``violation``."""
    if "unspecified" in case.tags or any(t.startswith("severity:unspecified") for t in case.tags):
        return Severity.UNSPECIFIED, "the case is tagged unspecified"
    if case.input.size > POLICY_SEARCH_LIMIT:
        return Severity.VIOLATION, f"input too large to re-run under the open policies (> {POLICY_SEARCH_LIMIT:,})"
    for label, policy in OPEN_POLICIES:
        try:
            v, i = run_spec(case.spec, case.input, engine="numpy", policy=policy)
        except Exception:
            continue
        same_v = not compare("values", v, values)[0] and v.shape == values.shape
        same_i = indices is None or i is None or (i.shape == indices.shape and not compare("indices", i, indices)[0])
        if same_v and same_i:
            return Severity.UNSPECIFIED, f"matches the reference under {label} (the spec leaves it open)"
    rtol = ACCUMULATION_RTOL.get(case.dtype.name)
    if case.spec.op == "avg" and rtol is not None:
        ref, _ = run_spec(case.spec, case.input, engine="numpy")
        if ref.shape == values.shape and not compare("values", ref, values, rtol=rtol, atol=rtol)[0]:
            return Severity.UNSPECIFIED, f"within accumulation precision of {case.dtype.name} (rtol {rtol:g})"
    return Severity.VIOLATION, None


def _read_only(x: np.ndarray) -> np.ndarray:
    """A read-only copy: a peer that writes into its input fails loudly instead of changing the
    input every later check (and the report) sees."""
    y = np.array(x, copy=True)
    y.flags.writeable = False
    return y


def peer_checks(cases: Sequence[Case], peers: Sequence[Any], *, isolated: bool = True,
                timeout: float = 30.0) -> dict[str, list[Check]]:
    """Run every case on every peer (one batched call per peer); checks keyed by case id."""
    from poolcheck.peers.isolation import call_peer_many

    out: dict[str, list[Check]] = {c.id: [] for c in cases}
    for peer in peers:
        try:
            version = peer.version()
        except Exception:
            version = None
        try:
            results = call_peer_many(peer, [(c.spec, _read_only(c.input)) for c in cases], isolated=isolated,
                                     timeout=timeout)
        except Exception as exc:  # a peer layer failure is every case's error on this peer, not the run's end
            for case in cases:
                out[case.id].append(Check(peer.name, "peer", "error", f"{_reason(exc)} [peer={peer.name}]",
                                          version=version))
            continue
        for case, result in zip(cases, results):
            out[case.id].append(check_peer_output(case, peer.name, version, result))
    return out
