"""Load and validate YAML case files, reporting every problem with file, line, case and field.

The text is parsed once (libyaml's C parser where available): composed into a node graph (which
gives line numbers and is checked for depth and alias expansion before anything is built), then
constructed with PyYAML's safe constructor.
"""

from __future__ import annotations

import errno
import math
import os
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from poolcheck.cases.model import Case
from poolcheck.cases.onnx_import import find_backend_dirs, load_backend_dir
from poolcheck.errors import AttributeValueError, CaseFileError
from poolcheck.files import resolve_path
from poolcheck.spec import dtypes, operators
from poolcheck.spec.family import FamilySpec, check_unpool_indices, unpool_shape

CASE_SUFFIXES = (".yaml", ".yml")

TOP_KEYS = {"schema", "cases"}
CASE_KEYS = {
    "id", "title", "source", "op", "convention", "attributes", "dtype", "input", "expected",
    "tolerance", "erratum", "transcription", "notes", "tags", "inputs",
}
EXPECTED_KEYS = {"values", "indices", "shape"}
RECIPES = ("arange", "zeros", "ones", "random", "randint", "constant")

#: Validate attributes for an operator version (e.g. ``"MaxPool-14"``) into the canonical spec:
#: the catalogue's :func:`~poolcheck.spec.operators.parse`, under the name callers know.
build_spec = operators.parse


#: Most elements an input (inline or from a recipe) may hold.
MAX_ELEMENTS = 50_000_000
#: Keys of an input recipe mapping.
RECIPE_KEYS = {"shape", "recipe", "seed", "start", "value", "low", "high"}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number(recipe: dict[str, Any], key: str, default: float, dtype: np.dtype, *, integer: bool = False) -> Any:
    """A finite recipe number that fits ``dtype`` (an integer when ``integer`` or for integer dtypes)."""
    v = recipe.get(key, default)
    if not _is_number(v) or (isinstance(v, float) and not math.isfinite(v)):
        raise AttributeValueError(f"input.{key}", f"expected a finite number, got {v!r}{_text_number_hint(v)}")
    if integer or dtype.kind in "iu":
        if isinstance(v, float):
            if not v.is_integer():
                raise AttributeValueError(f"input.{key}", f"expected an integer, got {v!r}")
            v = int(v)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            if not info.min <= v <= info.max + (1 if key == "high" else 0):
                raise AttributeValueError(f"input.{key}", f"{v} is out of range for {dtype.name} [{info.min}, {info.max}]")
        return v
    try:
        return float(v)
    except OverflowError:
        raise AttributeValueError(f"input.{key}", f"{_short(v)} is out of range for float64") from None


def make_input(recipe: dict[str, Any], dtype: np.dtype) -> np.ndarray:
    """Generate an input from ``{shape, recipe, seed?, start?, value?, low?, high?}``."""
    unknown = sorted(str(k) for k in set(recipe) - RECIPE_KEYS)
    if unknown:
        raise AttributeValueError(f"input.{unknown[0]}", f"unknown recipe key (allowed: {', '.join(sorted(RECIPE_KEYS))})")
    shape = recipe.get("shape")
    if not isinstance(shape, list) or not shape or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in shape):
        raise AttributeValueError("input.shape", f"expected a list of positive integers, got {shape!r}")
    if math.prod(shape) > MAX_ELEMENTS:
        raise AttributeValueError("input.shape", f"{shape} is too large for a case file (over {MAX_ELEMENTS:,} elements)")
    name = recipe.get("recipe", "arange")
    if not isinstance(name, str) or name not in RECIPES:
        raise AttributeValueError("input.recipe", f"expected one of {', '.join(RECIPES)}, got {name!r}")
    seed = recipe.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise AttributeValueError("input.seed", f"expected an integer in [0, 2**64), got {seed!r}")
    count = math.prod(shape)
    if name == "arange":
        start = _number(recipe, "start", 0, np.dtype(np.float64))
        data = np.arange(start, start + count, dtype=np.float64).reshape(shape)
    elif name == "zeros":
        data = np.zeros(shape)
    elif name == "ones":
        data = np.ones(shape)
    elif name == "constant":
        data = np.full(shape, _number(recipe, "value", 0, dtype))
    elif name == "random":
        low, high = _number(recipe, "low", -1.0, np.dtype(np.float64)), _number(recipe, "high", 1.0, np.dtype(np.float64))
        if not low <= high:
            raise AttributeValueError("input.low", f"low must not exceed high, got low={low} high={high}")
        data = np.random.default_rng(seed).uniform(low, high, size=shape)
    else:  # randint
        int_type = dtype if dtype.kind in "iu" else np.dtype(np.int64)
        low = _number(recipe, "low", -100, int_type, integer=True)
        high = _number(recipe, "high", 100, int_type, integer=True)
        if not low < high:
            raise AttributeValueError("input.low", f"the range [low, high) is empty: low={low}, high={high}")
        data = np.random.default_rng(seed).integers(low, high, size=shape, dtype=np.int64 if high <= 2**63 - 1 else np.uint64)
    if dtype.kind in "iu":  # the cast would wrap
        info = np.iinfo(dtype)
        if data.min() < info.min or data.max() > info.max:
            raise AttributeValueError("input", f"recipe {name} gives values from {data.min()} to {data.max()}, out of "
                                               f"range for {dtype.name} [{info.min}, {info.max}]")
    return _in_range(data, dtype, "input", f"recipe {name} gives values")


def _in_range(data: np.ndarray, dtype: np.dtype, what: str, which: str) -> np.ndarray:
    """``data`` cast to the float or integer ``dtype``; a finite float value the cast would make
    infinite (float16 70000) is an error naming ``what``."""
    with np.errstate(all="ignore"):
        out = dtypes.cast(data, dtype)
    if dtype.kind not in "iu":
        overflow = np.isfinite(data) & ~np.isfinite(out.astype(np.float64))
        if overflow.any():
            first, largest = float(data[overflow][0]), float(dtypes.finfo(dtype).max)
            raise AttributeValueError(what, f"{which} out of range for {dtype.name} (first {first!r}; "
                                            f"the largest finite value is {largest!r})")
    return out


# --------------------------------------------------------------------------- YAML with lines

#: The YAML loader: libyaml's C parser where PyYAML was built with it, else the pure-Python one.
Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: Most nested collections a case file may hold (a case needs about ten levels: cases, a case,
#: input, and one list per input dimension). Deeper text is refused before any recursion.
MAX_DEPTH = 64
#: Most nodes a document may expand to once aliases are followed: the input element cap. A YAML
#: "billion laughs" (anchors of anchors) is refused while composing, before anything is built.
MAX_NODES = 50_000_000


class _YAMLRefused(Exception):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


_MERGE = "tag:yaml.org,2002:merge"
_PLAIN_COLLECTION_TAGS = {"tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"}
_IMMUTABLE = (int, float, str, bool, type(None))


class _Open:
    """A collection being built: its Python value, path, pending mapping key, expanded size."""

    __slots__ = ("anchor", "key", "key_line", "merged", "path", "size", "value")

    def __init__(self, value: Any, path: tuple[Any, ...] | None, anchor: str | None) -> None:
        self.value = value
        self.path = path
        self.key: Any = _Open  # _Open itself marks "no key yet"
        self.key_line = 0
        self.size = 1
        self.anchor = anchor
        self.merged: set[Any] = set()  # keys that came from a merge (<<); explicit keys override them


def parse_yaml(text: str) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """Parse one YAML document once and return its data and a line index.

    Events come from libyaml's C parser when available (:data:`Loader`); the data is built from
    them iteratively, so nothing recurses (libyaml's own composer recurses in C and crashes on
    deep nesting). Refused with :class:`_YAMLRefused`, before anything large is built: nesting
    deeper than :data:`MAX_DEPTH`, alias expansion beyond :data:`MAX_NODES` nodes ("billion
    laughs"), a collection as a mapping key, duplicate keys, explicit collection tags. Scalars
    are resolved and constructed by PyYAML's safe constructor (cached per distinct text).

    The line index maps paths like ``("cases", 0)`` and ``("cases", 0, "attributes", "kernel")``
    to 1-based lines: mapping keys down to five levels, list items of top-level lists.
    """
    loader = Loader(text)
    lines: dict[tuple[Any, ...], int] = {}
    cache: dict[tuple[Any, ...], Any] = {}
    anchors: dict[str, tuple[Any, int]] = {}
    open_anchors: set[str] = set()
    stack: list[_Open] = []
    root: Any = None
    total = 0
    try:
        loader.get_event()  # StreamStart
        if loader.check_event(yaml.StreamEndEvent):
            return None, lines
        loader.get_event()  # DocumentStart
        while True:
            event = loader.get_event()
            kind = type(event)
            if kind is yaml.DocumentEndEvent:
                break
            if kind is yaml.ScalarEvent:
                key = (event.value, event.implicit, event.tag, event.style if not event.implicit[0] else None)
                try:
                    value = cache[key]
                except KeyError:
                    tag = event.tag
                    if tag is None or tag == "!":
                        tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
                    if tag == _MERGE:
                        value = _MERGE_KEY
                    else:
                        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
                        value = loader.construct_object(node, deep=True)
                    if isinstance(value, _IMMUTABLE) or value is _MERGE_KEY:
                        cache[key] = value
                size = 1
                if event.anchor is not None:
                    anchors[event.anchor] = (value, 1)
            elif kind is yaml.AliasEvent:
                if event.anchor in open_anchors:
                    raise _YAMLRefused(f"alias *{event.anchor} refers to a collection that contains it",
                                       event.start_mark.line + 1)
                if event.anchor not in anchors:
                    raise _YAMLRefused(f"found undefined alias *{event.anchor}", event.start_mark.line + 1)
                value, size = anchors[event.anchor]
            elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
                line = event.start_mark.line + 1
                if event.tag not in (None, "!") and event.tag not in _PLAIN_COLLECTION_TAGS:
                    raise _YAMLRefused(f"tag {event.tag} is not supported in case files", line)
                if len(stack) >= MAX_DEPTH:
                    raise _YAMLRefused(f"nested deeper than {MAX_DEPTH} levels", line)
                path = _child_path(stack)
                if event.anchor is not None:
                    open_anchors.add(event.anchor)
                stack.append(_Open([] if kind is yaml.SequenceStartEvent else {}, path, event.anchor))
                if path is not None and path not in lines:
                    lines[path] = line
                total += 1
                continue
            elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
                done = stack.pop()
                value, size = done.value, done.size
                if done.anchor is not None:
                    open_anchors.discard(done.anchor)
                    anchors[done.anchor] = (value, size)
                total -= 1  # counted when it opened; added again below with its whole size
                if kind is yaml.MappingEndEvent and done.key is not _Open:
                    raise _YAMLRefused("mapping key without a value", done.key_line)
            else:  # pragma: no cover - libyaml emits nothing else inside a document
                continue
            total += size
            if total > MAX_NODES:
                raise _YAMLRefused(f"expands to more than {MAX_NODES:,} nodes (aliases of aliases?)",
                                   event.start_mark.line + 1)
            if not stack:
                root = value
                continue
            top = stack[-1]
            if type(top.value) is list:  # the common case (tensors): inline
                if top.path is not None and len(top.path) <= 1:  # an item of a top-level list (a case)
                    lines.setdefault((*top.path, len(top.value)), event.start_mark.line + 1)
                top.size += size
                top.value.append(value)
            else:
                _add(top, value, size, event, lines)
        if not loader.check_event(yaml.StreamEndEvent):
            event = loader.get_event()
            raise _YAMLRefused("expected a single document, found another", event.start_mark.line + 1)
    finally:
        loader.dispose()
    return root, lines


class _MergeKey:
    def __repr__(self) -> str:
        return "<<"


_MERGE_KEY = _MergeKey()


def _child_path(stack: list[_Open]) -> tuple[Any, ...] | None:
    """The path of the next value in the innermost open collection (None when not indexed)."""
    if not stack:
        return ()
    top = stack[-1]
    if top.path is None:
        return None
    if isinstance(top.value, list):
        return (*top.path, len(top.value)) if len(top.path) <= 1 else None
    if len(top.path) < 5 and isinstance(top.key, (str, int)) and top.key is not _Open:
        return (*top.path, top.key)
    return None


def _add(top: _Open, value: Any, size: int, event: Any, lines: dict[tuple[Any, ...], int]) -> None:
    top.size += size
    if isinstance(top.value, list):
        top.value.append(value)
        return
    line = event.start_mark.line + 1
    if top.key is _Open:
        if isinstance(value, (list, dict)):
            raise _YAMLRefused("a mapping key must be a scalar, not a collection", line)
        top.key = value
        top.key_line = line
        if top.path is not None and len(top.path) < 5 and isinstance(value, (str, int)):
            lines[(*top.path, value)] = line
        return
    key, top.key = top.key, _Open
    if key is _MERGE_KEY:
        sources = value if isinstance(value, list) else [value]
        if not all(isinstance(m, dict) for m in sources):
            raise _YAMLRefused("a merge key (<<) needs a mapping or a list of mappings", line)
        for m in sources:
            for k, v in m.items():
                if k not in top.value:
                    top.value[k] = v
                    top.merged.add(k)
        return
    if key in top.value and key not in top.merged:
        raise _YAMLRefused(f"duplicate key {key!r}", top.key_line)
    top.merged.discard(key)
    top.value[key] = value


#: Bidirectional embeddings, overrides and isolates: reports show them escaped (report/text.py).
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

_SPECIAL_FLOATS = {"nan": math.nan, ".nan": math.nan, "inf": math.inf, "+inf": math.inf, ".inf": math.inf,
                   "+.inf": math.inf, "-inf": -math.inf, "-.inf": -math.inf}


def _array(value: Any, dtype: np.dtype, what: str) -> np.ndarray:
    """A nested list of numbers as an array of ``dtype``; every problem is an AttributeValueError
    naming ``what`` (ragged rows, non-numbers, NaN/inf or fractions for integer types, values out
    of range, more than :data:`MAX_ELEMENTS` elements). Iterative: no recursion on depth."""
    shape: list[int] = []
    level = [value]
    while level and isinstance(level[0], list):
        n = len(level[0])
        if any(not isinstance(v, list) or len(v) != n for v in level):
            raise AttributeValueError(what, "ragged nested list (rows of different lengths)")
        shape.append(n)
        if len(level) * n > MAX_ELEMENTS:
            raise AttributeValueError(what, f"more than {MAX_ELEMENTS:,} elements")
        level = [x for v in level for x in v]
    if any(isinstance(v, list) for v in level):
        raise AttributeValueError(what, "ragged nested list (rows of different lengths)")
    flat: list[Any] = []
    integer = dtype.kind in "iu"
    for v in level:
        if isinstance(v, str):
            if v.lower() not in _SPECIAL_FLOATS:
                raise AttributeValueError(what, f"expected numbers, got the string {v!r}{_text_number_hint(v)}")
            v = _SPECIAL_FLOATS[v.lower()]
        elif not _is_number(v):
            raise AttributeValueError(what, f"expected numbers, got {v!r}")
        if integer:
            if isinstance(v, float):
                if not math.isfinite(v):
                    raise AttributeValueError(what, f"{v} cannot be stored in the integer type {dtype.name}")
                if not v.is_integer():
                    raise AttributeValueError(what, f"non-integer value {v} for integer type {dtype.name}")
                v = int(v)
            info = np.iinfo(dtype)
            if not info.min <= v <= info.max:
                raise AttributeValueError(what, f"value {_short(v)} out of range for {dtype.name}")
        elif isinstance(v, int):
            try:
                float(v)
            except OverflowError:
                raise AttributeValueError(what, f"value {_short(v)} out of range for {dtype.name}") from None
        flat.append(v)
    with np.errstate(all="ignore"):
        arr = np.array(flat, dtype=dtype if integer else np.float64).reshape(shape)
    if not integer:
        _in_range(arr, dtype, what, "value")  # a value the case's type cannot hold
    return arr


def _text_number_hint(value: Any) -> str:
    """For a string that reads as a finite number (``1e-6``: YAML 1.1 takes a float only with a
    dot and a signed exponent), how to write it so that it is one; else ""."""
    try:
        number = float(value) if isinstance(value, str) else math.nan
    except ValueError:
        return ""
    if not math.isfinite(number):
        return ""
    written = yaml.safe_dump(number).split("\n", 1)[0]
    return f" (YAML reads {value} as text; write it as {written})"


def _shape(value: Any, what: str) -> tuple[int, ...]:
    """A documented output shape: a list of integers >= 0."""
    if not isinstance(value, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in value):
        raise AttributeValueError(what, f"expected a list of integers, got {_short(value)}")
    if any(n < 0 for n in value):
        raise AttributeValueError(what, f"every dimension must be >= 0, got {_short(value)}")
    return tuple(value)


def _short(v: Any, limit: int = 40) -> str:
    """``repr`` cut to ``limit`` characters (a 400-digit integer stays readable)."""
    text = repr(v)
    return text if len(text) <= limit else f"{text[:limit - 12]}...({len(text)} chars)"


def supported_dtypes(op: str) -> tuple[str, ...]:
    """The element types ``op`` allows (the spec's lists; anything else is refused at load)."""
    return operators.operator(op).dtypes


def _non_string_key(raw: dict[Any, Any]) -> tuple[Any, Any] | None:
    """The first (path, key) of a mapping key that is not a string, in ``raw`` or its sub-mappings."""
    for key, value in raw.items():
        if not isinstance(key, str):
            return key, key
        if isinstance(value, dict):
            for sub in value:
                if not isinstance(sub, str):
                    return key, sub
                inner = value[sub]
                if isinstance(inner, dict):
                    for k in inner:
                        if not isinstance(k, str):
                            return key, k
    return None


def _shape_clash(outputs: dict[str, Any]) -> tuple[str, str] | None:
    """(key, why) when documented outputs disagree on the output's shape (values, indices and
    shape are one output's): a document contradicting itself, not something to judge."""
    shapes = [(k, tuple(outputs[k]) if k == "shape" else np.shape(outputs[k])) for k in ("values", "indices", "shape")
              if k in outputs]
    for k, shape in shapes[1:]:
        if shape != shapes[0][1]:
            return k, f"shape {list(shape)} differs from {shapes[0][0]}' {list(shapes[0][1])} (one output's)"
    return None


def parse_case(raw: Any, *, path: str, index: int, lines: dict[tuple[Any, ...], int]) -> Case:
    """Validate one raw case mapping; every error is a CaseFileError with file, line, case, field."""
    base = ("cases", index)
    line = lines.get(base, 0)
    if not isinstance(raw, dict):
        raise CaseFileError(f"each case must be a mapping, got {type(raw).__name__}", path=path, line=line)
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not case_id.strip():
        raise CaseFileError("every case needs a non-empty string 'id'", path=path, line=line, field="id")
    if any(unicodedata.category(ch) in ("Cc", "Zl", "Zp", "Cs") or ch in _BIDI_CONTROLS for ch in case_id):
        # every renderer shows these escaped, so no replay command could name the case
        raise CaseFileError(f"an id must not hold control characters (bidirectional overrides included) or line "
                            f"breaks, got {case_id!r}", path=path, line=lines.get((*base, "id"), line), field="id")

    def err(field: str, message: str, *sub: Any) -> CaseFileError:
        return CaseFileError(message, path=path, line=lines.get((*base, field, *sub), lines.get((*base, field), line)),
                             case_id=case_id, field=".".join([field, *map(str, sub)]))

    bad_key = _non_string_key(raw)
    if bad_key is not None:
        where, key = bad_key
        sub: tuple[Any, ...] = () if where == key else (key,)
        raise CaseFileError(f"keys must be strings, got {_short(key)}", path=path,
                            line=lines.get((*base, where, *sub), lines.get((*base, where), line)),
                            case_id=case_id, field=str(where))
    unknown = sorted(set(raw) - CASE_KEYS)
    if unknown:
        raise err(unknown[0], f"unknown key (allowed: {', '.join(sorted(CASE_KEYS))})")
    op = raw.get("op")
    written = raw.get("convention") if isinstance(raw.get("convention"), str) else None
    try:
        # "MaxPool-8" with convention onnx is the catalogue's onnx:MaxPool-8
        op = operators.lookup(op, written).name
    except AttributeValueError:
        raise err("op", f"expected one of {', '.join(operators.OPERATORS)}, got {_short(op)}") from None
    convention = operators.OPERATORS[op].convention
    if "convention" in raw and raw["convention"] != convention:
        raise err("convention", f"{op} is an {convention} operator, got convention {raw['convention']!r}")
    attrs = raw.get("attributes")
    if not isinstance(attrs, dict):
        raise err("attributes", "expected a mapping of attribute names to values")
    try:
        spec = build_spec(op, attrs)
    except AttributeValueError as exc:
        if exc.attribute in attrs:
            raise err("attributes", exc.reason, exc.attribute) from None
        raise err("attributes", str(exc)) from None
    except (TypeError, ValueError, OverflowError, ArithmeticError) as exc:
        # A wrong-typed attribute the spec layer did not name: still one line, never a traceback.
        raise err("attributes", f"invalid attribute value ({type(exc).__name__}: {_short(str(exc), 200)})") from None

    dtype_name = raw.get("dtype", "float32")
    allowed = supported_dtypes(op)
    if not isinstance(dtype_name, str) or dtype_name not in allowed:
        shown = dtype_name if isinstance(dtype_name, str) else _short(dtype_name)
        raise err("dtype", f"{op} does not allow {shown[:40]}; allowed: {', '.join(allowed)}")
    dtype = np.dtype(dtype_name)

    recipe = None
    raw_input = raw.get("input")
    try:
        if isinstance(raw_input, dict):
            recipe = raw_input
            x = make_input(raw_input, dtype)
        elif isinstance(raw_input, list):
            x = dtypes.cast(_array(raw_input, dtype, "input"), dtype)
        else:
            raise AttributeValueError("input", "expected a nested list or {shape, recipe}")
        operators.check_input(spec, x.shape, dtype, operators.OPERATORS[op])
    except AttributeValueError as exc:
        if exc.attribute == "output_shape" and exc.attribute in attrs:  # judged against the input
            raise err("attributes", exc.reason, exc.attribute) from None
        if exc.attribute.startswith("input."):
            raise err("input", exc.reason, exc.attribute.split(".", 1)[1]) from None
        field = "dtype" if exc.attribute == "dtype" else "input"
        raise err(field, exc.reason if exc.attribute.split(".")[0] in ("dtype", "input") else str(exc)) from None

    extra = _extra_inputs(raw.get("inputs"), spec, x, attrs, err)

    expected_raw = raw.get("expected")
    if not isinstance(expected_raw, dict) or not expected_raw:
        raise err("expected", "expected a mapping with values, indices and/or shape")
    bad = sorted(set(expected_raw) - EXPECTED_KEYS)
    if bad:
        raise err("expected", f"unknown output {bad[0]!r} (allowed: values, indices, shape)", bad[0])
    # MaxPool-1 (both conventions) has one output too; the catalogue row says which versions have two
    has_indices = spec.op != "avg" and operators.OPERATORS[op].indices_output
    no_indices = f"{operators.OPERATORS[op].title} has no indices output"
    if "indices" in expected_raw and not has_indices:
        raise err("expected", no_indices, "indices")
    expected: dict[str, Any] = {}
    try:
        if "values" in expected_raw:
            expected["values"] = dtypes.cast(_array(expected_raw["values"], dtype, "expected.values"), dtype)
        if "indices" in expected_raw:
            expected["indices"] = _array(expected_raw["indices"], np.dtype(np.int64), "expected.indices")
        if "shape" in expected_raw:
            expected["shape"] = _shape(expected_raw["shape"], "expected.shape")
    except AttributeValueError as exc:
        field_name = exc.attribute.split(".")[-1]
        raise err("expected", exc.reason, field_name) from None
    clash = _shape_clash(expected)
    if clash:
        raise err("expected", clash[1], clash[0])

    tol = raw.get("tolerance", {}) or {}
    if not isinstance(tol, dict) or set(tol) - {"rtol", "atol"}:
        raise err("tolerance", "expected a mapping with rtol and/or atol")
    for k, v in tol.items():
        if not _is_number(v) or not math.isfinite(float(v)) or v < 0:
            raise err("tolerance", f"{k} must be a non-negative number, got {v!r}{_text_number_hint(v)}", k)

    erratum = raw.get("erratum")
    if erratum is not None:
        if not isinstance(erratum, dict) or not {"says", "correct", "why"} <= set(erratum):
            raise err("erratum", "expected a mapping with 'says', 'correct' and 'why'")
        stray = sorted(str(k) for k in set(erratum) - {"says", "correct", "why"})
        if stray:  # a misspelt key would be ignored: the erratum's reasoning lost without a word
            raise err("erratum", "unknown key (allowed: correct, says, why)", stray[0])
        for key in ("says", "why"):  # text, as the result model (and `poolcheck report`) requires
            if not isinstance(erratum[key], str):
                raise err("erratum", "expected a string", key)
        correct = erratum["correct"]
        if not isinstance(correct, dict) or not correct or set(correct) - EXPECTED_KEYS:
            raise err("erratum", "'correct' must map values/indices/shape to the right output", "correct")
        if "indices" in correct and not has_indices:
            raise err("erratum", no_indices, "correct")
        conv: dict[str, Any] = {}
        try:
            for k, v in correct.items():
                if k == "shape":
                    conv[k] = _shape(v, "erratum.correct.shape")
                else:
                    conv[k] = _array(v, dtype if k == "values" else np.dtype(np.int64), f"erratum.correct.{k}")
        except AttributeValueError as exc:
            raise err("erratum", exc.reason, "correct") from None
        except TypeError as exc:
            raise err("erratum", str(exc), "correct") from None
        clash = _shape_clash(conv)
        if clash:
            raise err("erratum", f"{clash[0]}: {clash[1]}", "correct")
        erratum = {**erratum, "correct": conv}

    source = raw.get("source", {}) or {}
    if not isinstance(source, dict):
        raise err("source", "expected a mapping (document, section, example, copies)")
    tags = raw.get("tags", []) or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise err("tags", "expected a list of strings")
    for key in ("title", "notes", "transcription"):
        if key in raw and not isinstance(raw[key], str):
            raise err(key, "expected a string")

    field_lines = {k: v for k, v in ((f, lines.get((*base, f))) for f in CASE_KEYS) if v}
    return Case(
        id=case_id, op=op, convention=convention, spec=spec, attributes=dict(attrs), dtype=dtype, input=x,
        expected=expected, path=path, line=line, title=raw.get("title", ""), source=source,
        rtol=float(tol.get("rtol", 0.0)), atol=float(tol.get("atol", 0.0)), erratum=erratum,
        transcription=raw.get("transcription", ""), notes=raw.get("notes", ""), tags=list(tags),
        input_recipe=recipe, field_lines=field_lines, inputs=extra,
    )


def _extra_inputs(raw: Any, spec: Any, x: np.ndarray, attrs: dict[str, Any], err: Any) -> dict[str, np.ndarray]:
    """A case's inputs beyond the first: MaxUnpool's index tensor ``I`` (required there, refused
    elsewhere), checked against X and the output shape."""
    wants_indices = isinstance(spec, FamilySpec) and spec.op == "unpool"
    if raw is None:
        if wants_indices:
            raise err("inputs", "MaxUnpool needs its second input: inputs: {I: [...]}")
        return {}
    if not wants_indices:
        raise err("inputs", "this operator takes one input (only MaxUnpool has inputs: {I: ...})")
    if not isinstance(raw, dict) or set(raw) != {"I"}:
        raise err("inputs", "expected a mapping with exactly the key I (the MaxPool indices)")
    try:
        indices = _array(raw["I"], np.dtype(np.int64), "inputs.I")
        return {"I": check_unpool_indices(indices, x.shape, unpool_shape(spec, x.shape))}
    except AttributeValueError as exc:
        if exc.attribute in attrs or exc.attribute in ("output_shape", "pads"):
            raise err("attributes", exc.reason, exc.attribute) from None
        raise err("inputs", exc.reason, "I") from None


def _load(path: str | Path) -> tuple[list[Case], list[CaseFileError]]:
    p = Path(path)
    shown = str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [CaseFileError(f"cannot read: {exc}", path=shown)]
    try:
        data, lines = parse_yaml(text)
    except _YAMLRefused as exc:
        return [], [CaseFileError(f"refused YAML: {exc}", path=shown, line=exc.line)]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        return [], [CaseFileError(f"invalid YAML: {problem}", path=shown,
                                  line=mark.line + 1 if mark is not None else None)]
    except (Exception, RecursionError) as exc:
        return [], [CaseFileError(f"cannot read this YAML ({type(exc).__name__}: {_short(str(exc), 200)})",
                                  path=shown)]
    if not isinstance(data, dict) or "cases" not in data:
        return [], [CaseFileError("expected a mapping with a 'cases' list at the top", path=shown, line=1)]
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        return [], [CaseFileError(f"unknown top-level key {unknown[0]!r}", path=shown,
                                  line=lines.get((unknown[0],), 1))]
    if data.get("schema", "poolcheck.case/1") != "poolcheck.case/1":
        return [], [CaseFileError(f"unsupported schema {data['schema']!r} (expected poolcheck.case/1)",
                                  path=shown, line=lines.get(("schema",), 1))]
    raw_cases = data["cases"]
    if not isinstance(raw_cases, list):
        return [], [CaseFileError("'cases' must be a list", path=shown, line=lines.get(("cases",), 1))]
    cases: list[Case] = []
    errors: list[CaseFileError] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_cases):
        try:
            case = parse_case(raw, path=shown, index=i, lines=lines)
        except CaseFileError as exc:
            errors.append(exc)
            continue
        except (Exception, RecursionError) as exc:  # the per-case boundary: one bad case never ends the load
            case_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else None
            errors.append(CaseFileError(f"cannot load this case ({type(exc).__name__}: {_short(str(exc), 200)})",
                                        path=shown, line=lines.get(("cases", i)), case_id=case_id))
            continue
        if case.id in seen:
            errors.append(CaseFileError(f"duplicate id (first at line {seen[case.id]})", path=shown,
                                        line=case.line, case_id=case.id, field="id"))
            continue
        seen[case.id] = case.line
        cases.append(case)
    return cases, errors


def load_file(path: str | Path) -> list[Case]:
    """Load every case in one YAML file (a top-level mapping with a ``cases`` list); raise the
    first problem as a CaseFileError."""
    cases, errors = _load(path)
    if errors:
        raise errors[0]
    return cases


def split_target(text: str) -> tuple[str, str | None]:
    """``FILE::ID`` (a replay command's target) -> (FILE, ID); a plain path -> (path, None). The
    split is at the first ``::`` after which an existing file ends, so an id may hold ``::``
    itself; without such a file, at the last ``::``. A path that exists is a path (a folder
    named ``a::b``)."""
    if "::" not in text or os.path.exists(text):
        return text, None
    i = text.find("::")
    while i != -1:
        if os.path.isfile(text[:i]):
            return text[:i], text[i + 2:]
        i = text.find("::", i + 1)
    head, _, tail = text.rpartition("::")
    return head, tail


def iter_case_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Expand files and folders (recursively, sorted) into case files."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.suffix in CASE_SUFFIXES and f.is_file())
            if any(p.rglob("model.onnx")):  # ONNX backend test directories (poolcheck/cases/onnx_import.py)
                found += find_backend_dirs(p)
            if not found:  # a mistyped folder must not pass as "0 cases"
                raise CaseFileError("no case files (*.yaml, *.yml) and no ONNX backend test folder of a "
                                    "pooling node here", path=str(raw))
            yield from found
        elif p.is_file():
            yield p
        else:
            why = _link_error(p) if os.path.islink(p) else ""
            raise CaseFileError(f"cannot read: {why}" if why else "no such file or folder", path=str(raw))


def _link_error(path: Path) -> str:
    """Why a symbolic link cannot be followed when that is not a plain missing target (a loop)."""
    try:
        path.stat()
    except OSError as exc:
        return "" if exc.errno == errno.ENOENT else exc.strerror or str(exc)
    return ""


def _file_key(path: Path) -> Path:
    try:
        return resolve_path(path)
    except OSError:  # a loop of symbolic links: loading it reports why
        return path.absolute()


def load_paths(paths: Iterable[str | Path]) -> tuple[list[Case], list[CaseFileError]]:
    """Load every case under ``paths``. A bad file or case becomes an error entry; the rest still
    load. Duplicate ids across files are errors too."""
    cases: list[Case] = []
    errors: list[CaseFileError] = []
    ids: dict[str, Case] = {}
    files: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:  # a missing or unreadable path is one error; the other paths still load
        try:
            for f in iter_case_files([raw]):
                key = _file_key(f)
                if key not in seen:  # a file named twice (a folder and a file in it) is read once
                    seen.add(key)
                    files.append(f)
        except CaseFileError as exc:
            errors.append(exc)
        except OSError as exc:
            errors.append(CaseFileError(f"cannot list: {exc.strerror or exc}", path=str(raw)))
    for f in files:
        # a directory here is an ONNX backend test directory
        loaded, file_errors = load_backend_dir(f) if f.is_dir() else _load(f)
        errors.extend(file_errors)
        for c in loaded:
            if c.id in ids:
                errors.append(CaseFileError(f"duplicate id, also defined at {ids[c.id].location}",
                                            path=c.path, line=c.line, case_id=c.id))
                continue
            ids[c.id] = c
            cases.append(c)
    return cases, errors
