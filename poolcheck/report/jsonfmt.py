"""The JSON report: the result model as a ``poolcheck.result/2`` document (docs/report-format.md,
machine-checkable schema in docs/report-schema.json), and loading a saved one back.

The text is strict JSON (no NaN/Infinity tokens: non-finite floats become the strings "nan",
"inf", "-inf", as the runner stores them). Objects are indented; arrays of numbers (tensors,
positions) and short objects stay on one line so a saved report diffs well in version control.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

from poolcheck.errors import PoolcheckError
from poolcheck.results import READABLE_SCHEMAS, SCHEMA, FuzzSummary, RunResult

#: Objects whose one-line form is at most this long are written on one line.
INLINE_WIDTH = 120


class ReportError(PoolcheckError, ValueError):
    """A saved result cannot be read (missing, not JSON, or not a poolcheck.result/2 or /1 document)."""


def plain(value: Any) -> Any:
    """A JSON-safe copy: non-finite floats as strings, tuples as lists, keys as strings."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    item = getattr(value, "item", None)  # NumPy scalars
    if callable(item):
        return plain(item())
    return str(value)


def _is_tensor(value: Any) -> bool:
    if isinstance(value, list):
        return all(_is_tensor(v) for v in value)
    return not isinstance(value, dict)


def _encode(value: Any, indent: int) -> str:
    one_line = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))
    if not isinstance(value, (dict, list)) or not value or _is_tensor(value) or len(one_line) <= INLINE_WIDTH - indent:
        return one_line
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {_encode(v, indent + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + _encode(v, indent + 2) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def result_document(result: RunResult) -> dict[str, Any]:
    """The result as a JSON-safe ``poolcheck.result/2`` mapping (``schema`` first)."""
    data = plain(result.to_dict())
    return {"schema": data.pop("schema"), **data}


#: Characters JSON may carry raw but a terminal or viewer could act on (C1 controls, DEL, the
#: JavaScript line separators); written as \\u escapes, so ``cat result.json`` is inert and the
#: data reads back unchanged. (json.dumps escapes C0 controls, ESC included, itself.)
_INERT = re.compile("[\x7f-\x9f\u2028\u2029]")


def to_json(result: RunResult) -> str:
    """Render ``result`` as a ``poolcheck.result/2`` JSON text (ends with a newline)."""
    text = _encode(result_document(result), 0) + "\n"
    return _INERT.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def from_json(text: str, *, name: str = "<input>") -> RunResult:
    """Parse a ``poolcheck.result/2`` (or ``/1``) JSON text; every problem is a :class:`ReportError`."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{name}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise ReportError(f"{name}: expected a JSON object with schema {SCHEMA!r}, got {type(data).__name__}")
    if data.get("schema") not in READABLE_SCHEMAS:
        raise ReportError(f"{name}: not a {SCHEMA} (or poolcheck.result/1) document (schema={data.get('schema')!r})")
    problem = _shape_problem(data)
    if problem:
        raise ReportError(f"{name}: malformed {SCHEMA} document: {problem}")
    try:
        return RunResult.from_dict(data)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ReportError(f"{name}: malformed {SCHEMA} document: {exc}") from None


def load_result(path: str | Path) -> RunResult:
    """Read a saved result file (as written by ``--report-dir`` or ``poolcheck run --json``)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ReportError(f"{path}: cannot read: {reason}") from None
    return from_json(text, name=str(path))


def _shape_problem(data: dict[str, Any]) -> str:
    """The first structural problem the renderers would trip over ('' when none)."""
    if not isinstance(data.get("command", ""), str):
        return "'command' must be a string"
    cases = data.get("cases", [])
    if not isinstance(cases, list):
        return "'cases' must be a list"
    extra = data.get("extra", {})
    if not isinstance(extra, dict):
        return "'extra' must be an object"
    fuzz = data.get("fuzz", extra.get("fuzz"))
    if fuzz is not None:
        if not isinstance(fuzz, dict):
            return "'fuzz' must be an object or null"
        for f in dataclasses.fields(FuzzSummary):
            want = dict if f.type.startswith("dict") else list if f.type.startswith("list") else None
            if want is not None and f.name in fuzz and not isinstance(fuzz[f.name], want):
                return f"'fuzz.{f.name}' must be {'an object' if want is dict else 'a list'}"
    for i, case in enumerate(cases):
        where = f"cases[{i}]"
        if not isinstance(case, dict):
            return f"{where} must be an object"
        for key in ("case_id", "verdict"):
            if not isinstance(case.get(key), str):
                return f"{where}.{key} must be a string"
        checks = case.get("checks", [])
        if not isinstance(checks, list):
            return f"{where}.checks must be a list"
        for j, check in enumerate(checks):
            cw = f"{where}.checks[{j}]"
            if not isinstance(check, dict):
                return f"{cw} must be an object"
            for key in ("runner", "kind", "verdict"):
                if not isinstance(check.get(key), str):
                    return f"{cw}.{key} must be a string"
            diffs = check.get("diffs", [])
            if not isinstance(diffs, list) or not all(isinstance(d, dict) and "output" in d for d in diffs):
                return f"{cw}.diffs must be a list of objects with 'output'"
            for d in diffs:
                window = d.get("window")
                if window is not None and not (
                    isinstance(window, list) and all(isinstance(w, dict) and "coords" in w and "kind" in w for w in window)
                ):
                    return f"{cw}.diffs[].window must be a list of cells with 'coords' and 'kind'"
    return ""
