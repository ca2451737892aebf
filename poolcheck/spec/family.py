"""The rest of the pooling family: Lp pooling, global pooling, MaxUnpool and adaptive pooling.

Their configuration is a :class:`FamilySpec` (MaxPool and AveragePool keep
:class:`~poolcheck.spec.poolspec.PoolSpec`). Where an operator slides a window as the pooling
operators do (LpPool, MaxUnpool's inverse window), the window is a ``PoolSpec`` held in
:attr:`FamilySpec.window`, so the one shape rule (:func:`poolcheck.spec.shape.resolve`) applies.
The catalogue rows live in :mod:`poolcheck.spec.operators` with the others; this module parses,
spells and checks inputs for them. The sentences each rule comes from are quoted here, once.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

import numpy as np

from poolcheck.errors import AttributeValueError
from poolcheck.spec.limits import MAX_ELEMENTS, MAX_EXTENT
from poolcheck.spec.poolspec import INDEX_ELEMENT_TYPES, PoolSpec, choice, int_list, short_int
from poolcheck.spec.shape import resolve

FamilyOp = Literal["lp", "global_avg", "global_max", "global_lp", "unpool", "adaptive_avg", "adaptive_max"]
FAMILY_OPS: tuple[str, ...] = ("lp", "global_avg", "global_max", "global_lp", "unpool", "adaptive_avg",
                               "adaptive_max")
#: Operators with a second (index) output.
WITH_INDICES: tuple[str, ...] = ("adaptive_max",)

_LABELS = {"lp": "LpPool", "global_avg": "GlobalAveragePool", "global_max": "GlobalMaxPool",
           "global_lp": "GlobalLpPool", "unpool": "MaxUnpool", "adaptive_avg": "AdaptiveAvgPool",
           "adaptive_max": "AdaptiveMaxPool"}


@dataclass(frozen=True)
class FamilySpec:
    """One configuration of a family operator.

    - ``window``: LpPool's window (kernel, strides, pads, dilations, rounding, auto_pad) and
      MaxUnpool's (kernel, strides, pads of the MaxPool it inverts); None for the others.
    - ``p``: LpPool / GlobalLpPool's p [ONNX-LP-P].
    - ``output_shape``: AdaptiveAvgPool/AdaptiveMaxPool's spatial output sizes (OpenVINO input 2,
      "1D tensor describing output shape for spatial dimensions"); MaxUnpool's whole output shape
      (ONNX optional input 3) or None.
    - ``index_element_type``: AdaptiveMaxPool's index type ("i64" or "i32").
    - ``version``: the operator version the configuration was written for, when that is not the
      op's newest (a case of ``LpPool-11``, a model node at opset 9 ``MaxUnpool-9``): a peer that
      runs ONNX models builds its model at that opset, and the row of that version judges it.
      None: the newest version (what the fuzzer and the public functions write).
    """

    op: FamilyOp
    window: PoolSpec | None = None
    p: int = 2
    output_shape: tuple[int, ...] | None = None
    index_element_type: str = "i64"
    convention: Literal["openvino", "onnx"] = "onnx"
    version: int | None = None

    def replace(self, **changes: Any) -> FamilySpec:
        return dataclasses.replace(self, **changes)

    @property
    def spatial_rank(self) -> int | None:
        """Spatial axes the configuration fixes (None: any, for global pooling)."""
        if self.window is not None:
            return self.window.spatial_rank
        if self.op in ("adaptive_avg", "adaptive_max"):
            assert self.output_shape is not None
            return len(self.output_shape)
        return None

    def describe(self) -> str:
        """A one-line label, e.g. ``LpPool(p=3, kernel=[2, 2], strides=[1, 1])`` (an older
        version's named: ``LpPool-11(...)``)."""
        parts: list[str] = []
        if self.op in ("lp", "global_lp"):
            parts.append(f"p={self.p}")
        if self.window is not None:
            w = self.window
            parts += [f"kernel={list(w.kernel)}", f"strides={list(w.strides)}"]
            if any(d != 1 for d in w.dilations):
                parts.append(f"dilations={list(w.dilations)}")
            if w.auto_pad != "explicit":
                parts.append(w.auto_pad)
            elif any(w.pads_begin) or any(w.pads_end):
                parts.append(f"pads={list(w.pads_begin)}/{list(w.pads_end)}")
            if w.rounding_type != "floor":
                parts.append(w.rounding_type)
        if self.output_shape is not None:
            parts.append(f"output_shape={list(self.output_shape)}")
        if self.op == "adaptive_max" and self.index_element_type != "i64":
            parts.append(self.index_element_type)
        label = _LABELS[self.op] + (f"-{self.version}" if self.version is not None else "")
        return f"{label}({', '.join(parts)})"


def is_family(spec: Any) -> TypeGuard[FamilySpec]:
    return isinstance(spec, FamilySpec)


# --------------------------------------------------------------------------- parse


def p_value(value: Any) -> int:
    """``p``: an integer >= 1 (the Lp norm's root is 1/p; p = 0 has no norm)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise AttributeValueError("p", f"expected an integer, got {value!r}")
    if value < 1:
        raise AttributeValueError("p", f"must be >= 1 (the norm takes the 1/p-th root), got {short_int(value)}")
    if value > MAX_EXTENT:
        raise AttributeValueError("p", f"must be <= {MAX_EXTENT} (2^31 - 1), got {short_int(value)}")
    return int(value)


def spatial_sizes(name: str, value: Any) -> tuple[int, ...]:
    """An adaptive ``output_shape``: 1 to 3 sizes, each >= 1."""
    sizes = int_list(name, value, minimum=1, length=None)
    if not 1 <= len(sizes) <= 3:
        raise AttributeValueError(name, f"expected 1, 2 or 3 spatial sizes (inputs of rank 3, 4 or 5), got {len(sizes)}")
    return sizes


def full_shape(name: str, value: Any) -> tuple[int, ...]:
    """MaxUnpool's ``output_shape``: the whole output shape ``(N, C, *spatial)``."""
    shape = int_list(name, value, minimum=1, length=None)
    if not 3 <= len(shape) <= 5:
        raise AttributeValueError(name, f"expected the whole output shape (3, 4 or 5 values), got {len(shape)}")
    return shape


def parse_family(row: Any, a: Mapping[str, Any], window: PoolSpec | None) -> FamilySpec:
    """A family row's attribute values (defaults filled) -> :class:`FamilySpec`; ``window`` is the
    window the catalogue parsed from the pooling attributes (LpPool, MaxUnpool)."""
    op = row.op
    conv = row.convention
    if op in ("lp", "global_lp"):
        return FamilySpec(op, window, p=p_value(a["p"]), convention=conv)
    if op in ("global_avg", "global_max"):
        return FamilySpec(op, convention=conv)
    if op == "unpool":
        out = a.get("output_shape")
        return FamilySpec(op, window, output_shape=None if out is None else full_shape("output_shape", out),
                          convention=conv)
    sizes = spatial_sizes("output_shape", a["output_shape"])
    if op == "adaptive_max":
        it = choice("index_element_type", a["index_element_type"], tuple(INDEX_ELEMENT_TYPES))
        return FamilySpec(op, output_shape=sizes, index_element_type=it, convention=conv)
    return FamilySpec(op, output_shape=sizes, convention=conv)


def spell_family(row: Any, spec: FamilySpec, window_words: dict[str, Any]) -> dict[str, Any]:
    """``spec`` in ``row``'s words; ``window_words`` is the window already spelled by the catalogue."""
    if row.op != spec.op:
        raise AttributeValueError("op", f"{row.name} is {_LABELS[row.op]}, the configuration is {_LABELS[spec.op]}")
    out = dict(window_words)
    names = {a.name for a in row.attributes}
    if "p" in names:
        out["p"] = spec.p
    if "output_shape" in names and spec.output_shape is not None:
        out["output_shape"] = list(spec.output_shape)
    if "index_element_type" in names:
        out["index_element_type"] = spec.index_element_type
    return out


# --------------------------------------------------------------------------- inputs


def check_family_rank(spec: FamilySpec, shape: Sequence[int]) -> None:
    """The input rank ``spec`` takes: 3, 4 or 5 for global pooling, else N, C and one axis per
    spatial attribute value."""
    rank = spec.spatial_rank
    if rank is None:
        if not 3 <= len(shape) <= 5:
            raise AttributeValueError("input", f"global pooling takes an input of rank 3, 4 or 5, got rank {len(shape)}")
    elif len(shape) != rank + 2:
        what = "output_shape" if spec.op in ("adaptive_avg", "adaptive_max") else "kernel_shape"
        raise AttributeValueError(what, f"{rank} spatial value(s) need an input of rank {rank + 2}, "
                                        f"got rank {len(shape)} (shape {tuple(shape)})")


def check_family_input(spec: FamilySpec, shape: Sequence[int], allowed: Sequence[str], dtype: Any) -> np.dtype:
    """Validate a family operator's data input (rank, dimensions, element type)."""
    shape = tuple(int(v) for v in shape)
    check_family_rank(spec, shape)
    if any(v < 1 for v in shape):
        raise AttributeValueError("input", f"every dimension must be >= 1, got shape {shape}")
    if spec.op in ("adaptive_avg", "adaptive_max") and math.prod((*shape[:2], *(spec.output_shape or ()))) > MAX_ELEMENTS:
        raise AttributeValueError("output_shape", f"an output of shape {(*shape[:2], *(spec.output_shape or ()))} "
                                                  f"exceeds {MAX_ELEMENTS} elements")
    if math.prod(shape) > MAX_ELEMENTS:
        raise AttributeValueError("input", f"{math.prod(shape)} elements exceed the limit of {MAX_ELEMENTS}")
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise AttributeValueError("dtype", f"not a NumPy dtype: {dtype!r}") from exc
    if dt.name not in allowed:
        raise AttributeValueError("dtype", f"{_LABELS[spec.op]} does not allow {dt.name}; allowed: {', '.join(allowed)}")
    return dt


def global_window(spec: FamilySpec, shape: Sequence[int]) -> PoolSpec:
    """GlobalAveragePool / GlobalMaxPool / GlobalLpPool: "This is equivalent to AveragePool
    [MaxPool, LpPool] with kernel size equal to the spatial dimension of input tensor"."""
    spatial = tuple(int(v) for v in shape[2:])
    n = len(spatial)
    op = "max" if spec.op == "global_max" else "avg"
    return PoolSpec(op, spatial, (1,) * n, (0,) * n, (0,) * n, (1,) * n, "floor", "explicit",  # type: ignore[arg-type]
                    True, 0, "i64", 0, "onnx")


def adaptive_bins(size: int, out: int, first: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """AdaptiveAvgPool-8 / AdaptiveMaxPool-8: "h_start = floor(j * H_in / H_out)",
    "h_end = ceil((j + 1) * H_in / H_out)", in exact integer arithmetic. Every bin is
    non-empty: ceil((j + 1) H / O) >= (j + 1) H / O > j H / O >= floor(j H / O). ``first``: only
    the first bins (what a view shows of an axis of 2^31 bins, without building them all)."""
    j = np.arange(out if first is None else min(out, first), dtype=np.int64)
    start = (j * size) // out
    end = -((-(j + 1) * size) // out)
    return start, end


def unpool_shape(spec: FamilySpec, x_shape: Sequence[int]) -> tuple[int, ...]:
    """MaxUnpool's output shape: ``output_shape`` when given ("The shape of the output can be
    explicitly set which will cause pads values to be auto generated. If 'output_shape' is
    specified, 'pads' values are ignored."), else each spatial axis inverts the MaxPool shape
    rule: ``(in - 1) * stride + kernel - pad_begin - pad_end`` (the ONNX reference's inferred
    shape; the page states no formula)."""
    w = spec.window
    assert w is not None
    x_shape = tuple(int(v) for v in x_shape)
    if spec.output_shape is not None:
        out = spec.output_shape
        if len(out) != len(x_shape):
            raise AttributeValueError("output_shape", f"expected {len(x_shape)} values (the rank of X), got {len(out)}")
        if out[:2] != x_shape[:2]:
            raise AttributeValueError("output_shape", f"N and C must be those of X {list(x_shape[:2])}, got {list(out[:2])}")
        if math.prod(out) > MAX_ELEMENTS:
            raise AttributeValueError("output_shape", f"an output of {math.prod(out)} elements exceeds {MAX_ELEMENTS}")
        return out
    sizes = []
    for i in range(w.spatial_rank):
        size = (x_shape[2 + i] - 1) * w.strides[i] + w.kernel[i] - w.pads_begin[i] - w.pads_end[i]
        if size < 1:
            raise AttributeValueError("pads", f"the inferred output size of spatial axis {i} is {size} "
                                              f"((in - 1) * stride + kernel - pads); it must be >= 1")
        sizes.append(size)
    shape = (*x_shape[:2], *sizes)
    if math.prod(shape) > MAX_ELEMENTS:
        raise AttributeValueError("kernel_shape", f"an output of {math.prod(shape)} elements exceeds {MAX_ELEMENTS}")
    return shape


def family_output_shape(spec: FamilySpec, input_shape: Sequence[int]) -> tuple[int, ...]:
    """The output shape of ``spec`` on an input of ``input_shape`` (the hook for ``poolcheck
    shape``): LpPool by the pooling shape rule, global pooling ``(N, C, 1, ...)``, adaptive pooling
    ``(N, C, *output_shape)``, MaxUnpool by :func:`unpool_shape`."""
    shape = tuple(int(v) for v in input_shape)
    check_family_rank(spec, shape)
    if spec.op == "lp":
        assert spec.window is not None
        return resolve(spec.window, shape).output_shape
    if spec.op in ("global_avg", "global_max", "global_lp"):
        return (*shape[:2], *(1 for _ in shape[2:]))
    if spec.op in ("adaptive_avg", "adaptive_max"):
        assert spec.output_shape is not None
        return (*shape[:2], *spec.output_shape)
    return unpool_shape(spec, shape)


def check_unpool_indices(indices: Any, x_shape: Sequence[int], out_shape: Sequence[int]) -> np.ndarray:
    """MaxUnpool's I: "Dimensions must be the same as input tensor X. The indices are linear,
    i.e. computed considering the tensor as flattened 1-D tensor, assuming row-major storage.
    [...] So the values in indices are in the range [0, N x C x D1 x ... x Dn)." -- of the
    output, whose flattening the indices address."""
    arr = np.asarray(indices)
    if arr.dtype.kind not in "iu":
        raise AttributeValueError("indices", f"expected an int64 tensor, got dtype {arr.dtype}")
    if tuple(arr.shape) != tuple(x_shape):
        raise AttributeValueError("indices", f"shape {tuple(arr.shape)} must equal the shape of X {tuple(x_shape)}")
    total = math.prod(out_shape)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= total):
        bad = int(arr.min()) if int(arr.min()) < 0 else int(arr.max())
        raise AttributeValueError("indices", f"every index must lie in [0, {total}) for an output of shape "
                                             f"{tuple(out_shape)}, got {bad}")
    return np.ascontiguousarray(arr, dtype=np.int64)
