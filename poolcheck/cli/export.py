"""``poolcheck export``: cases as ONNX backend test directories."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
