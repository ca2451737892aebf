"""The JUnit XML report: every (case, runner) pair is one ``<testcase>``, so any CI system lists
them as tests.

Layout (what Jenkins, GitLab, GitHub test-report actions and Azure DevOps read; it satisfies the
common Jenkins ``junit-10.xsd``):

- ``<testsuites name tests failures errors skipped>`` holds one ``<testsuite>`` per runner
  (``poolcheck.numpy``, ``poolcheck.onnxruntime``, ...) and ``poolcheck.cases`` for cases that
  could not run at all (a bad case file);
- ``<testcase name=CASE-ID classname=poolcheck.RUNNER.FILE-STEM file=...>``;
- verdicts: ``fail`` -> ``<failure type="fail">``; ``error``, ``crash``, ``timeout`` ->
  ``<error type=VERDICT>``; ``skip`` and ``rejects`` (the runner refuses the configuration) ->
  ``<skipped>``; ``pass`` and ``erratum`` (the document is wrong, as recorded, and the runner
  agrees with the correction) pass, the erratum noted in ``<system-out>``.

No ``time`` attributes: poolcheck does not time cases, and the attribute is optional.
"""

from __future__ import annotations

import datetime as _dt
import re
import xml.etree.ElementTree as ET
from pathlib import PurePath

from poolcheck.report.text import safe
from poolcheck.results import CaseResult, Check, RunResult, machine_label

FAILURE_VERDICTS = frozenset({"fail"})
ERROR_VERDICTS = frozenset({"error", "crash", "timeout"})
SKIPPED_VERDICTS = frozenset({"skip", "rejects"})
#: Suite for cases without any check (the case itself could not be loaded or run).
CASE_SUITE = "cases"
MESSAGE_LIMIT = 500
MAX_DIFF_LINES = 8

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    """User text for XML 1.0: control characters (which XML cannot carry, or a terminal would
    act on) shown escaped (``\\x1b``); the rest of the escaping is ElementTree's job."""
    return _INVALID_XML.sub("", safe(text, newlines=True))


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= MESSAGE_LIMIT else line[: MESSAGE_LIMIT - 3] + "..."


def _file_stem(source: str) -> str:
    path = source.rsplit(":", 1)[0] if re.search(r":\d+$", source) else source
    stem = PurePath(path).stem if path else ""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", stem) or "cases"


def _timestamp(created: str) -> str | None:
    """xs:dateTime as the JUnit XSD wants it (UTC, no zone suffix)."""
    try:
        t = _dt.datetime.fromisoformat(created)
    except ValueError:
        return None
    if t.tzinfo is not None:
        t = t.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return t.isoformat(timespec="seconds")


def _pos(p: list[int] | None) -> str:
    return "-" if p is None else "(" + ", ".join(map(str, p)) + ")"


def check_details(case: CaseResult, check: Check | None) -> str:
    """The text body of a failure/error/skipped element: what differs, where, and how to replay."""
    lines: list[str] = []
    if case.title:
        lines.append(case.title)
    if check is not None:
        if check.severity:
            lines.append(f"severity: {check.severity}")
        if check.message:
            lines.append(check.message)
        if check.diagnosis:
            lines.append(f"diagnosis: {check.diagnosis}")
        for d in check.diffs[:MAX_DIFF_LINES]:
            lines.append(f"{d.output} at {_pos(d.position)}: expected {d.expected}, got {d.actual}")
        more = max(check.n_diffs, len(check.diffs)) - min(len(check.diffs), MAX_DIFF_LINES)
        if more > 0:
            lines.append(f"... and {more} more differing element(s)")
    if case.message:
        lines.append(case.message)
    if case.erratum:
        lines.append(f"erratum: the document says {case.erratum.get('says')}; why: {case.erratum.get('why')}")
    if case.source:
        lines.append(f"source: {case.source}")
    if case.replay:
        lines.append(f"replay: {case.replay}")
    return _clean("\n".join(lines))


def _testcase(parent: ET.Element, case: CaseResult, suite: str, check: Check | None) -> str:
    verdict = check.verdict if check is not None else case.verdict
    attrs = {"name": _clean(case.case_id), "classname": f"poolcheck.{_clean(suite)}.{_file_stem(case.source)}"}
    if case.source:
        attrs["file"] = _clean(re.sub(r":\d+$", "", case.source))
    el = ET.SubElement(parent, "testcase", attrs)
    message = _clean(_first_line((check.message if check is not None else "") or case.message or verdict))
    if check is not None and check.severity:
        message = f"[{check.severity}] {message}"
    if verdict in FAILURE_VERDICTS:
        ET.SubElement(el, "failure", {"message": message, "type": verdict}).text = check_details(case, check)
    elif verdict in ERROR_VERDICTS:
        ET.SubElement(el, "error", {"message": message, "type": verdict}).text = check_details(case, check)
    elif verdict in SKIPPED_VERDICTS:
        ET.SubElement(el, "skipped", {"message": f"{verdict}: {message}" if verdict != "skip" else message})
    elif verdict == "erratum":
        ET.SubElement(el, "system-out").text = "erratum (document wrong, as recorded)\n" + check_details(case, check)
    return verdict


def _testcase_or_error(parent: ET.Element, case: CaseResult, suite: str, check: Check | None) -> str:
    """A testcase; one that cannot be rendered becomes an error testcase saying why."""
    try:
        return _testcase(parent, case, suite, check)
    except Exception as exc:
        el = ET.SubElement(parent, "testcase", {"name": _clean(str(case.case_id)), "classname": f"poolcheck.{_clean(suite)}"})
        ET.SubElement(el, "error", {"message": _clean(f"cannot render this case: {type(exc).__name__}: {exc}"),
                                    "type": "error"})
        return "error"


def _counts(verdicts: list[str]) -> dict[str, str]:
    return {
        "tests": str(len(verdicts)),
        "failures": str(sum(v in FAILURE_VERDICTS for v in verdicts)),
        "errors": str(sum(v in ERROR_VERDICTS for v in verdicts)),
        "skipped": str(sum(v in SKIPPED_VERDICTS for v in verdicts)),
    }


def to_junit(result: RunResult) -> str:
    """Render ``result`` as JUnit XML text (UTF-8 declaration, ends with a newline)."""
    suites: dict[str, list[tuple[CaseResult, Check | None]]] = {}
    for case in result.cases:
        if not case.checks:
            suites.setdefault(CASE_SUITE, []).append((case, None))
        for check in case.checks:
            suites.setdefault(check.runner, []).append((case, check))

    root = ET.Element("testsuites", {"name": f"poolcheck {result.kind}"})
    stamp = _timestamp(result.created) if result.created else None
    all_verdicts: list[str] = []
    for name, items in suites.items():
        suite = ET.SubElement(root, "testsuite", {"name": f"poolcheck.{_clean(name)}"})
        if stamp:
            suite.set("timestamp", stamp)
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", {"name": "command", "value": _clean(result.command)})
        if result.interrupted:
            ET.SubElement(props, "property", {"name": "interrupted", "value": "true"})
        runner_versions = {c.version for _, c in items if c is not None and c.version}
        for v in sorted(runner_versions):
            ET.SubElement(props, "property", {"name": f"{_clean(name)}.version", "value": _clean(v)})
        for key, value in result.versions.items():
            ET.SubElement(props, "property", {"name": f"version.{_clean(key)}", "value": _clean(str(value))})
        if machine_label(result):
            ET.SubElement(props, "property", {"name": "machine", "value": _clean(machine_label(result) or "")})
        verdicts = [_testcase_or_error(suite, case, name, check) for case, check in items]
        for k, v in _counts(verdicts).items():
            suite.set(k, v)
        all_verdicts.extend(verdicts)
    for k, v in _counts(all_verdicts).items():
        root.set(k, v)
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
