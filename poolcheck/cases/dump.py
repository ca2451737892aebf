"""Write cases back as YAML (fuzz reproducers, regression and known-divergence registries)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml

from poolcheck.files import write_text_atomic
from poolcheck.spec import dtypes


class _Dumper(yaml.SafeDumper):
    """Block style for mappings, flow style for lists of numbers (tensors stay readable)."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(not isinstance(v, dict) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(str, _represent_str)


def plain(value: Any) -> Any:
    """Convert arrays and NumPy scalars into YAML-safe Python values (NaN/inf as floats)."""
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating) or (isinstance(value, np.generic) and dtypes.is_float(value.dtype)):
        return float(value)  # bfloat16 scalars (ml_dtypes) are no np.floating
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def dump_cases(cases: list[dict[str, Any]]) -> str:
    """Render case mappings (as in docs/case-format.md) to YAML text."""
    doc = {"schema": "poolcheck.case/1", "cases": [plain(c) for c in cases]}
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def write_cases(path: str | Path, cases: list[dict[str, Any]]) -> Path:
    return write_text_atomic(path, dump_cases(cases))
