"""User text made safe for every renderer: case ids, paths, titles, notes, peer names and
messages are data, never markup or terminal control.

:func:`safe` shows C0 and C1 control characters (ESC, BEL, NUL, CSI ...) and DEL as escapes
(``\\x1b``), keeping newlines and tabs only where asked; also the bidirectional embeddings,
overrides and isolates (U+202A-U+202E, U+2066-U+2069: they reorder the rest of a line as
displayed, "Trojan Source"), the line separators, lone surrogates (a file name that is not UTF-8
decodes to them, and no UTF-8 output can hold them) and the noncharacters U+FFFE/U+FFFF (XML
cannot carry them). Renderers then escape for their own
syntax (rich: plain ``Text``; Markdown/HTML: entities; XML: ElementTree).
"""

from __future__ import annotations

import re

#: The bidirectional embeddings, overrides and isolates (a character class's body).
BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}\u2028\u2029\ud800-\udfff\ufffe\uffff]")
_CONTROL_NO_NEWLINES = re.compile(f"[\x00-\x1f\x7f-\x9f{BIDI_CONTROLS}\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: object, *, newlines: bool = False) -> str:
    """``text`` as a string with control characters shown escaped (``\\x1b``); newlines and tabs
    kept only when ``newlines``."""
    pattern = _CONTROL if newlines else _CONTROL_NO_NEWLINES
    return pattern.sub(_escape, str(text))
