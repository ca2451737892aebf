"""Translation helpers shared by the adapters: declining, rounding checks, index conversion,
NumPy arrays to and from torch tensors."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from poolcheck.errors import AttributeValueError, PoolcheckError
from poolcheck.peers.base import PeerDeclined
from poolcheck.spec import dtypes
from poolcheck.spec.indices import index_layout
from poolcheck.spec.poolspec import AUTO_PADS, ROUNDING_TYPES, PoolSpec
from poolcheck.spec.shape import resolve


def _outs(spec: PoolSpec, shape: Sequence[int]) -> tuple[int, ...] | None:
    try:
        return resolve(spec, shape).output_shape
    except (AttributeValueError, ArithmeticError, IndexError):  # invalid configurations (fuzzer)
        return None


def ceil_as_ceil_torch(spec: PoolSpec, shape: Sequence[int]) -> str | None:
    """Why OpenVINO ``rounding_type=ceil`` cannot be written as ceil_torch / ceil_mode for
    ``shape``, or None when both give the same windows.

    OpenVINO: under ceil_torch the last window cannot start in the padding [OV-CEIL-TORCH]. Plain ``ceil`` keeps that window, and ONNX
    ``ceil_mode`` and PyTorch ``ceil_mode`` have no way to keep it.
    """
    if spec.rounding_type != "ceil":
        return None
    ceil_out = _outs(spec, shape)
    torch_out = _outs(spec.replace(rounding_type="ceil_torch"), shape)
    if ceil_out == torch_out:
        return None
    return (
        f"rounding_type=ceil keeps a last window that starts in the end padding (output {list(ceil_out or ())}), "
        f"ceil_mode drops it (output {list(torch_out or ())})"
    )


def check_expressible(spec: PoolSpec, shape: Sequence[int], peer: str, runtime: str) -> None:
    """Decline values that ``runtime`` (ONNX, PyTorch) has no spelling for: a rounding_type or
    auto_pad outside the canonical sets, or an out-of-range OpenVINO ``axis`` (poolcheck would
    convert the indices for it, and there is no valid conversion)."""
    if spec.rounding_type not in ROUNDING_TYPES:
        raise PeerDeclined(peer, f"{runtime} has no rounding_type={spec.rounding_type!r}")
    if spec.auto_pad not in AUTO_PADS:
        raise PeerDeclined(peer, f"{runtime} has no auto_pad={spec.auto_pad!r}")
    rank = len(shape)
    if spec.op == "max" and not -rank <= spec.axis < rank:
        raise PeerDeclined(peer, f"axis={spec.axis} is outside [-{rank}, {rank - 1}]; {runtime} has no axis "
                                 "attribute, and its indices cannot be converted to it")


def convert_flat_indices(
    flat: np.ndarray,
    spec: PoolSpec,
    shape: Sequence[int],
    *,
    per_plane: bool = False,
    source_order: str = "C",
) -> tuple[np.ndarray, list[str]]:
    """Turn a peer's flat indices into poolcheck's canonical indices for ``spec``.

    ``flat`` holds indices over the whole input (``(n*C + c)*S + spatial``, as ONNX MaxPool and
    OpenVINO with ``axis=0`` report them) or, with ``per_plane``, over each (n, c) plane only
    (PyTorch); ``spatial`` is flattened in ``source_order`` ("C" row-major, "F" column-major).
    Negative entries (no element chosen) pass through unchanged. Returns the converted indices
    and a note for every conversion applied.
    """
    shape = tuple(int(v) for v in shape)
    spatial = shape[2:]
    plane = math.prod(spatial)
    layout = index_layout(spec, shape)
    idx = np.asarray(flat).astype(np.int64, copy=True)
    valid = idx >= 0
    notes: list[str] = []
    if per_plane:
        nc = np.arange(shape[0] * shape[1], dtype=np.int64).reshape((shape[0], shape[1]) + (1,) * len(spatial))
        idx = np.where(valid, idx + nc * plane, idx)
        notes.append("indices converted from per-plane to whole-tensor flat indices")
    if layout.order != source_order:
        nc_part, sp = np.divmod(np.where(valid, idx, 0), plane)
        coords = np.unravel_index(sp, spatial, order=source_order)  # type: ignore[call-overload]
        moved = np.ravel_multi_index(coords, spatial, order=layout.order)  # type: ignore[call-overload]
        idx = np.where(valid, nc_part * plane + moved, idx)
        names = {"C": "row-major", "F": "column-major"}
        notes.append(f"indices converted from {names[source_order]} to {names[layout.order]} spatial order")
    total = math.prod(shape)
    if layout.modulus != total:
        idx = np.where(valid, idx % layout.modulus, idx)
        notes.append(f"indices converted to axis={spec.axis} by taking them modulo {layout.modulus}")
    if layout.dtype != np.dtype(np.int64):
        notes.append(f"indices cast to {layout.dtype.name}")
    return idx.astype(layout.dtype), notes


def short_message(exc: BaseException, limit: int = 600) -> str:
    """A one-paragraph message for a peer's exception: ``Type: text``, shortened."""
    text = " ".join(str(exc).split())
    if not isinstance(exc, PoolcheckError):
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def negative_same_pads(spec: PoolSpec, shape: Sequence[int]) -> str | None:
    """Why an ONNX SAME configuration has no spelling in OpenVINO-shaped attributes, or None.

    ONNX's ``pad_shape`` goes negative when the stride is larger than the dilated kernel (the
    windows start inside the input); OpenVINO's same_upper/same_lower clamp it at 0 and its
    explicit pads are non-negative, so an OpenVINO-shaped peer cannot be asked for it."""
    if spec.convention != "onnx" or spec.auto_pad not in ("same_upper", "same_lower"):
        return None
    try:
        geom = resolve(spec, shape)
    except PoolcheckError:
        return None
    negative = [i for i, a in enumerate(geom.axes) if a.pad_begin < 0 or a.pad_end < 0]
    if not negative:
        return None
    a = geom.axes[negative[0]]
    return (f"ONNX {spec.auto_pad.upper()} gives pad_shape {a.pad_begin + a.pad_end} < 0 on axis {negative[0]} "
            "(stride past the dilated kernel); OpenVINO-shaped attributes clamp it at 0 and take no negative pads")


def torch_from_numpy(arr: np.ndarray) -> Any:
    """``arr`` as a torch tensor sharing its memory; bfloat16 (ml_dtypes, which torch cannot read)
    through its bits: an int16 tensor viewed as torch.bfloat16 (the same 16-bit layout)."""
    import torch

    if arr.dtype == dtypes.BFLOAT16:
        return torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(arr)


def torch_to_numpy(t: Any) -> np.ndarray:
    """A torch tensor's values as a fresh NumPy array (torch.bfloat16 -> ml_dtypes bfloat16, bit for bit)."""
    import torch

    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(dtypes.BFLOAT16).copy()
    return t.numpy().copy()
