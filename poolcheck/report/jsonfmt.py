"""The JSON report: the result model as a ``poolcheck.result/2`` document (docs/report-format.md,
machine-checkable schema in docs/report-schema.json), and loading a saved one back.

The text is strict JSON (no NaN/Infinity tokens: non-finite floats become the strings "nan",
"inf", "-inf", as the runner stores them). Objects are indented; arrays of numbers (tensors,
positions) and short objects stay on one line so a saved report diffs well in version control.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

from poolcheck.errors import PoolcheckError
from poolcheck.report.text import BIDI_CONTROLS, safe
from poolcheck.results import SCHEMA, ResultDocumentError, RunResult

#: Objects whose one-line form is at most this long are written on one line.
INLINE_WIDTH = 120


class ReportError(PoolcheckError, ValueError):
    """A saved result cannot be read (missing, not JSON, or not a poolcheck.result/2 or /1 document)."""


#: Lone surrogates (a path that was not UTF-8): no UTF-8 text can hold them, nor JSON readers.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: str) -> str:
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", value) if _SURROGATE.search(value) else value


def plain(value: Any) -> Any:
    """A JSON-safe copy: non-finite floats as strings, tuples as lists, keys as strings, a lone
    surrogate as the text ``\\udcff``."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {_text(str(k)): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (int, bool)):
        return value
    item = getattr(value, "item", None)  # NumPy scalars
    if callable(item):
        return plain(item())
    return _text(str(value))


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
#: JavaScript line separators, the bidirectional overrides and isolates that reorder a line as
#: displayed); written as \\u escapes, so ``cat result.json`` is inert and the data reads back
#: unchanged. (json.dumps escapes C0 controls, ESC included, itself.)
_INERT = re.compile(f"[\x7f-\x9f\u2028\u2029{BIDI_CONTROLS}]")


def to_json(result: RunResult) -> str:
    """Render ``result`` as a ``poolcheck.result/2`` JSON text (ends with a newline)."""
    text = _encode(result_document(result), 0) + "\n"
    return _INERT.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


#: The largest result file ``poolcheck report`` reads (a full corpus run with stored tensors is
#: under 1 MB; a campaign's result a few MB).
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


def from_json(text: str | bytes, *, name: str = "<input>") -> RunResult:
    """Parse a ``poolcheck.result/2`` (or ``/1``) JSON text and check it against the result model;
    every problem is a :class:`ReportError` of one line naming ``name`` and the field.

    The parser (pydantic-core's) refuses nesting past 200 levels and integers past 4300 digits
    instead of recursing or converting without end; the model bounds integers further."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ReportError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    import pydantic_core  # the result model's dependency; imported when a document is read

    try:
        data = pydantic_core.from_json(text, allow_inf_nan=True)
    except ValueError as exc:
        raise ReportError(f"{name}: not JSON ({safe(exc)})") from None
    try:
        return RunResult.from_dict(data)
    except ResultDocumentError as exc:
        where = f"{safe(exc.field)}: " if exc.field else ""
        raise ReportError(f"{name}: malformed {SCHEMA} document: {where}{safe(exc.problem)}") from None


def read_document(path: str | Path, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of a saved result: a regular file (a FIFO, device or folder is refused before it
    is read), at most ``limit`` bytes."""
    name = safe(str(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ReportError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise ReportError(f"{name}: cannot read: {kind} (a result is a JSON file)")
        if st.st_size > limit:
            raise ReportError(f"{name}: cannot read: {st.st_size} bytes, more than the {limit} a result may have")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as exc:
        raise ReportError(f"{name}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ReportError(f"{name}: cannot read: more than the {limit} bytes a result may have")
    return data


def load_result(path: str | Path) -> RunResult:
    """Read a saved result file (as written by ``--report-dir`` or ``poolcheck run --json``)."""
    return from_json(read_document(path), name=safe(str(path)))
