"""Exceptions shared by every layer.

Domain code raises these; only the CLI turns them into messages and exit codes.
"""

from __future__ import annotations


class PoolcheckError(Exception):
    """Base class of every error poolcheck raises on purpose."""


class AttributeValueError(PoolcheckError, ValueError):
    """An operator attribute (or the input it is combined with) is invalid.

    ``attribute`` names the offending attribute, e.g. ``"kernel"`` or ``"pads_end"``.
    """

    def __init__(self, attribute: str, message: str) -> None:
        self.attribute = attribute
        self.reason = message
        super().__init__(f"{attribute}: {message}")


class EngineUnavailableError(PoolcheckError, RuntimeError):
    """The requested engine cannot run here (for example the C extension was not built)."""


class CaseFileError(PoolcheckError, ValueError):
    """A case file is malformed. Carries the file, line and (when known) case id and field."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        case_id: str | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.case_id = case_id
        self.field = field
        self.bare_message = message
        where = path or "<input>"
        if line is not None:
            where += f":{line}"
        parts = [where]
        if case_id:
            parts.append(f"case {case_id!r}")
        if field:
            parts.append(f"field {field!r}")
        super().__init__(": ".join(parts) + ": " + message)
