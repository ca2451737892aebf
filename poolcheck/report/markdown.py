"""The Markdown report: short enough for a pull-request comment.

Counts first, then verdicts per runner, a table of every case that did not pass, and collapsed
``<details>`` for the first few of them (differing positions, diagnosis, erratum, replay
command). The text is kept under ``max_chars`` (GitHub caps a comment at 65536 characters) by
dropping details and then table rows, always saying how many were left out.
"""

from __future__ import annotations

import re

from poolcheck.report.text import safe
from poolcheck.results import VERDICTS, CaseResult, Check, RunResult, machine_label

MAX_CHARS = 60_000
MAX_ROWS = 50
MAX_DETAILS = 12
MAX_DIFFS = 6
CELL_LIMIT = 120

#: Non-passing verdicts are listed most severe first; ``skip`` is not worth a row of its own.
LISTED = tuple(v for v in VERDICTS if v not in ("pass", "skip"))


#: Characters with a meaning in GitHub Markdown, backslash-escaped in user text.
_MD_SPECIAL = re.compile(r"([\\`*\[\]~|]|(?<!\w)_|_(?!\w))")


def _cell(text: object, limit: int = CELL_LIMIT) -> str:
    """User text as inert Markdown: one line, control characters shown escaped, HTML and
    Markdown syntax escaped (an id like ``x[/red]`` or ``<script>`` shows as written)."""
    s = safe(" ".join(str(text).split()))
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", s)


def _code(text: str) -> str:
    """User text as an inline code span: fenced by one backtick more than its longest run of
    backticks (a shorter fence inside the text would end the span early, leaving the rest live)."""
    text = safe(" ".join(str(text).split()))
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _pos(p: list[int] | None) -> str:
    return "shape" if p is None else "(" + ", ".join(map(str, p)) + ")"


def runners_of(result: RunResult) -> list[str]:
    names: list[str] = []
    for case in result.cases:
        for check in case.checks:
            if check.runner not in names:
                names.append(check.runner)
    return names


def counts_text(result: RunResult) -> str:
    counts = result.counts()
    parts = [f"{n} {v}" for v, n in counts.items() if n]
    return ", ".join(parts) if parts else "no cases"


def _runner_table(result: RunResult, runners: list[str]) -> list[str]:
    present = [v for v in VERDICTS if any(k.verdict == v for c in result.cases for k in c.checks)]
    if not runners or not present:
        return []
    lines = ["| runner | " + " | ".join(present) + " |", "|---|" + "---:|" * len(present)]
    for r in runners:
        row = [sum(1 for c in result.cases for k in c.checks if k.runner == r and k.verdict == v) for v in present]
        lines.append(f"| {_cell(r)} | " + " | ".join(str(n) for n in row) + " |")
    return lines


def case_group(case: CaseResult) -> str:
    """The corpus group of a case: the folder its file lies in (seeds, edge, known, ...)."""
    path = case.source.rsplit(":", 1)[0] if case.source else ""
    parts = path.replace("\\", "/").split("/")
    return parts[-2] if len(parts) >= 2 and parts[-2] else "other"


def _matrix(result: RunResult, runners: list[str]) -> list[str]:
    """The conformance matrix: runner x case group, conformant checks (pass, or the recorded
    erratum) of all checks that ran (skips left out)."""
    groups = sorted({case_group(c) for c in result.cases})
    if len(groups) < 2 or not runners:
        return []
    lines = ["### Conformance matrix (conformant / run; a skip is not counted)", "",
             "| runner | " + " | ".join(_cell(g) for g in groups) + " |", "|---|" + "---:|" * len(groups)]
    for r in runners:
        cells = []
        for g in groups:
            checks = [k for c in result.cases if case_group(c) == g for k in c.checks
                      if k.runner == r and k.verdict != "skip"]
            good = sum(1 for k in checks if k.verdict in ("pass", "erratum"))
            cells.append(f"{good} / {len(checks)}" if checks else "-")
        lines.append(f"| {_cell(r)} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _errata_table(result: RunResult) -> list[str]:
    """Documented examples that are wrong, as recorded (an engine check has verdict erratum)."""
    rows = [c for c in result.cases if c.erratum and any(k.verdict == "erratum" for k in c.checks)]
    if not rows:
        return []
    lines = [f"### Errata in the documents ({len(rows)})", "", "| case | source | the document says | why |",
             "|---|---|---|---|"]
    for c in rows[:MAX_ROWS]:
        e = c.erratum or {}
        lines.append(f"| {_cell(c.case_id, 80)} | {_cell(c.source, 80)} | {_cell(e.get('says', ''), 160)} | "
                     f"{_cell(e.get('why', ''), 240)} |")
    if len(rows) > MAX_ROWS:
        lines.append(f"\n… and {len(rows) - MAX_ROWS} more erratum case(s).")
    return [*lines, ""]


def _first_message(case: CaseResult) -> str:
    for check in case.checks:
        if check.verdict == case.verdict and check.message:
            return check.message
    return case.message


#: Severities, heaviest first.
SEVERITY_ORDER = ("violation", "limitation", "unspecified", "erratum")


def case_severity(case: CaseResult) -> str | None:
    """The heaviest severity among a case's checks."""
    found = [k.severity for k in case.checks if k.severity in SEVERITY_ORDER]
    return min(found, key=SEVERITY_ORDER.index) if found else None


def severity_text(result: RunResult) -> str:
    counts: dict[str, int] = {}
    for case in result.cases:
        for k in case.checks:
            if k.severity:
                counts[k.severity] = counts.get(k.severity, 0) + 1
    return ", ".join(f"{counts[s]} {s}" for s in SEVERITY_ORDER if s in counts)


def _case_table(cases: list[CaseResult], runners: list[str]) -> list[str]:
    head = "| case | op | verdict | " + "".join(f"{_cell(r)} | " for r in runners) + "message |"
    lines = [head, "|---|---|---|" + "---|" * len(runners) + "---|"]
    for case in cases:
        by = {k.runner: k.verdict for k in case.checks}
        cells = "".join(f"{by.get(r, '–')} | " for r in runners)
        sev = case_severity(case)
        lines.append(f"| {_cell(case.case_id, 80)} | {_cell(case.op)} | **{case.verdict}**{f' ({sev})' if sev else ''} | {cells}"
                     f"{_cell(_first_message(case))} |")
    return lines


def _check_details(check: Check) -> list[str]:
    severity = f" ({check.severity})" if check.severity else ""
    out = [f"**{_cell(check.runner)}**: {check.verdict}{severity}"
           + (f" — {_cell(check.message, 400)}" if check.message else "")]
    if check.diagnosis:
        out.append(f"> diagnosis: {_cell(check.diagnosis, 600)}")
    if check.diffs:
        out += ["", "| output | position | expected | actual |", "|---|---|---|---|"]
        for d in check.diffs[:MAX_DIFFS]:
            out.append(f"| {_cell(d.output)} | {_pos(d.position)} | {_cell(d.expected, 60)} | {_cell(d.actual, 60)} |")
        more = max(check.n_diffs, len(check.diffs)) - min(len(check.diffs), MAX_DIFFS)
        if more > 0:
            out.append(f"\n… and {more} more differing element(s)")
    return out


def case_details(case: CaseResult) -> str:
    """One collapsed ``<details>`` block for a case."""
    lines = [f"<details><summary><b>{_cell(case.case_id, 100)}</b> — {case.verdict}"
             + (f": {_cell(case.title, 100)}" if case.title else "") + "</summary>", ""]
    meta = []
    if case.source:
        meta.append(f"source {_code(case.source)}")
    if case.op:
        meta.append(f"{_cell(case.op)} on {_cell(case.dtype)} {case.input_shape}")
    if meta:
        lines += [" · ".join(meta), ""]
    for check in case.checks:
        if check.verdict in ("pass", "skip"):
            continue
        lines += _check_details(check) + [""]
    if case.erratum:
        lines += [f"Erratum: the document says {_cell(case.erratum.get('says', ''), 300)}; "
                  f"why: {_cell(case.erratum.get('why', ''), 400)}", ""]
    if case.message:
        lines += [_cell(case.message, 600), ""]
    if case.replay:
        lines += [f"Replay: {_code(case.replay)}", ""]
    lines.append("</details>")
    return "\n".join(lines)


def _details_or_error(case: CaseResult) -> str:
    """One case's details; a case that cannot be rendered says so instead of ending the report."""
    try:
        return case_details(case)
    except Exception as exc:
        return f"<details><summary><b>{_cell(case.case_id, 100)}</b> — cannot render: {_cell(exc)}</summary></details>"


def _coverage(result: RunResult) -> list[str]:
    """A fuzz campaign's hits per spec region: the most any runner had, and who stayed under."""
    fz = result.fuzz
    if fz is None or not fz.coverage_reachable:
        return []
    floor = max(1, fz.min_per_region)
    runners = sorted(fz.coverage)
    rows = ["<details><summary>Spec regions reached"
            + (f" ({len(gaps)} never hit by some runner)" if (gaps := [k for k in fz.coverage_reachable if any(
                not fz.coverage.get(r, {}).get(k) for r in runners)]) else "") + "</summary>", "",
            "| region | hits | " + (f"runners under {floor}" if floor > 1 else "never hit by") + " |",
            "| --- | ---: | --- |"]
    for key in fz.coverage_reachable:
        counts = {r: fz.coverage.get(r, {}).get(key, 0) for r in runners}
        short = []
        for r in runners:
            if counts[r] < floor:
                declined = fz.coverage_declined.get(r, {}).get(key, 0)
                short.append(f"{r} ({counts[r]}" + (f"; declined {declined}: cannot express)" if declined else ")"))
        rows.append(f"| {_cell(key)} | {max(counts.values(), default=0)} | {_cell(', '.join(short))} |")
    for key, why in fz.coverage_unreachable.items():
        rows.append(f"| {_cell(key)} | - | unreachable: {_cell(why)} |")
    return [*rows, "", "</details>", ""]


def to_markdown(result: RunResult, *, max_chars: int = MAX_CHARS) -> str:
    """Render ``result`` as Markdown of at most ``max_chars`` characters."""
    runners = runners_of(result)
    head = [f"## poolcheck {result.kind}: {len(result.cases)} case(s) — {counts_text(result)}", ""]
    if severity_text(result):
        head += [f"Severity of the non-passing checks: {severity_text(result)}.", ""]
    if result.interrupted:
        head += ["> **Interrupted**: partial result, not every case ran.", ""]
    table = _runner_table(result, runners)
    if table:
        head += [*table, ""]
    head += _matrix(result, runners)
    head += _errata_table(result)
    head += _coverage(result)
    listed = sorted((c for c in result.cases if c.verdict in LISTED), key=lambda c: LISTED.index(c.verdict))
    foot = ["", f"<sub>{_code(result.command)}" + (f" · {_cell(result.created)}" if result.created else "")
            + "".join(f" · {_cell(k)} {_cell(v)}" for k, v in result.versions.items())
            + (f" · machine {_cell(machine_label(result))}" if machine_label(result) else "") + "</sub>", ""]
    if not listed:
        return "\n".join([*head, "Every case passed.", *foot])

    rows, details = min(len(listed), MAX_ROWS), min(len(listed), MAX_DETAILS)
    while True:
        body = [f"### Not passing ({len(listed)})", "", *_case_table(listed[:rows], runners)]
        if rows < len(listed):
            body.append(f"\n… and {len(listed) - rows} more case(s) not shown (see the full report).")
        if details:
            body += ["", f"### Details (first {details})" if details < len(listed) else "### Details", ""]
            body += [_details_or_error(c) + "\n" for c in listed[:details]]
        text = "\n".join([*head, *body, *foot])
        if len(text) <= max_chars or rows <= 1:
            break
        if details:
            details -= 1
        else:
            rows = max(1, rows // 2)
    return text if len(text) <= max_chars else text[: max_chars - 20] + "\n\n… (truncated)\n"
