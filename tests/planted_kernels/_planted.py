"""Shared plumbing of the planted-bug kernels (loaded by each kernel with ``runpy``, so a kernel
is one plugin file that ``poolcheck fuzz --peers FILE.py`` loads in any process).

A kernel is poolcheck's own engine behind the plugin signatures with one spec violation under one
condition. The helpers give it the configuration the keywords describe (``spec``/``geometry``),
the correct answer (``correct``), and the engine on a geometry of the kernel's own making
(``on_geometry``), so each bug is a few lines that only say what goes wrong.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import poolcheck
from poolcheck.engines import get_engine
from poolcheck.fuzz.reference import compute_expected
from poolcheck.spec.indices import index_layout
from poolcheck.spec.operators import parse
from poolcheck.spec.poolspec import PoolSpec
from poolcheck.spec.shape import Geometry, resolve

MAX_KEYS = ("kernel", "strides", "pads_begin", "pads_end", "dilations", "rounding_type", "auto_pad", "axis",
            "index_element_type")
AVG_KEYS = ("kernel", "strides", "pads_begin", "pads_end", "exclude_pad", "rounding_type", "auto_pad")


def spec(op: str, kw: dict[str, Any]) -> PoolSpec:
    """The canonical spec the plugin keywords spell (MaxPool-14 / AvgPool-14 words)."""
    attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in kw.items() if v is not None}
    return parse("MaxPool-14" if op == "max" else "AvgPool-14", attrs)


def geometry(op: str, x: np.ndarray, kw: dict[str, Any]) -> Geometry:
    return resolve(spec(op, kw), np.shape(x))


def correct(op: str, x: np.ndarray, kw: dict[str, Any]) -> Any:
    """What poolcheck computes: (values, indices) for max, values for avg."""
    if op == "max":
        return poolcheck.max_pool(x, **{k: kw[k] for k in MAX_KEYS if k in kw})
    return poolcheck.avg_pool(x, **{k: kw[k] for k in AVG_KEYS if k in kw})


def on_geometry(op: str, x: np.ndarray, geom: Geometry, kw: dict[str, Any]) -> Any:
    """The engine on ``geom`` (windows where the kernel puts them), indices in the spec's layout."""
    s = spec(op, kw)
    layout = index_layout(s, np.shape(x)) if op == "max" else None
    out = compute_expected(get_engine("numpy"), np.asarray(x), geom, op, exclude_pad=s.exclude_pad, layout=layout)
    if op == "max":
        assert out.indices is not None
        return out.values, out.indices.astype(np.int32 if s.index_element_type == "i32" else np.int64)
    return out.values


def keywords(names: tuple[str, ...], values: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(names, values))
