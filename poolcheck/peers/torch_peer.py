"""PyTorch (CPU) as a peer: ``F.max_pool{1,2,3}d`` and ``F.avg_pool{1,2,3}d``.

PyTorch pooling has one symmetric ``padding`` per axis, no auto_pad, no dilations for
averages, and one rounding switch (``ceil_mode``, OpenVINO's ``ceil_torch``); every other
configuration is declined. Indices come back per (n, c) plane and are converted to
poolcheck's whole-tensor flat indices (then to ``axis`` / ``storage_order`` / index type).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from poolcheck.peers._convert import (
    ceil_as_ceil_torch,
    check_expressible,
    convert_flat_indices,
    torch_from_numpy,
    torch_to_numpy,
)
from poolcheck.peers.adapter import RuntimePeer, Translated
from poolcheck.peers.base import BatchItem, PeerDeclined, PeerOption, PeerOutput
from poolcheck.peers.family_torch import TorchFamily, family_kernel_error
from poolcheck.spec.operators import any_convention_dtypes
from poolcheck.spec.poolspec import PoolSpec


def to_torch(spec: PoolSpec, shape: Sequence[int], peer: str = "torch") -> dict[str, Any]:
    """Keyword arguments of ``F.max_poolNd`` / ``F.avg_poolNd`` for ``spec``, or raise
    :class:`PeerDeclined`."""
    shape = tuple(int(v) for v in shape)
    check_expressible(spec, shape, peer, "PyTorch")
    if spec.auto_pad in ("same_upper", "same_lower"):
        raise PeerDeclined(peer, f"PyTorch pooling has no auto_pad={spec.auto_pad}")
    if spec.auto_pad == "valid":
        padding = (0,) * spec.spatial_rank
    else:
        if spec.pads_begin != spec.pads_end:
            raise PeerDeclined(
                peer,
                f"PyTorch padding is symmetric; pads_begin={list(spec.pads_begin)} != pads_end={list(spec.pads_end)}",
            )
        padding = spec.pads_begin
    if spec.op == "avg" and any(d != 1 for d in spec.dilations):
        raise PeerDeclined(peer, f"PyTorch avg_pool has no dilations (got {list(spec.dilations)})")
    for i, p in enumerate(padding):
        # ATen pool2d_shape_check: "pad should be smaller than or equal to half of kernel size"
        # -- the undilated kernel, for max and average pooling alike (max pooling also checks
        # the dilated kernel, which is never the stricter bound).
        if 2 * p > spec.kernel[i]:
            raise PeerDeclined(peer, f"axis {i}: PyTorch requires pad <= kernel / 2, got pad {p} for kernel {spec.kernel[i]}")
    why = ceil_as_ceil_torch(spec, shape)
    if why:
        raise PeerDeclined(peer, f"{why}; PyTorch has no equivalent")
    kwargs: dict[str, Any] = {
        "kernel_size": tuple(spec.kernel),
        "stride": tuple(spec.strides),
        "padding": tuple(padding),
        "ceil_mode": spec.applied_rounding != "floor",
    }
    if spec.op == "max":
        kwargs["dilation"] = tuple(spec.dilations)
        kwargs["return_indices"] = True
    else:
        kwargs["count_include_pad"] = not spec.exclude_pad
    return kwargs


@functools.cache
def _kernel_error(op: str, rank: int, dtype: str) -> str | None:
    """Whether PyTorch has a CPU kernel for ``op`` at spatial ``rank`` and ``dtype``: None, or
    its "not implemented" message. Probed once on a tiny tensor, since the set changes
    between PyTorch versions (torch 2.13: no uint16/32/64 pooling, no integer averages except
    int64, no float16 avg_pool3d)."""
    import torch.nn.functional as F

    x = torch_from_numpy(np.zeros((1, 1) + (2,) * rank, dtype=np.dtype(dtype)))
    try:
        if op == "max":
            getattr(F, f"max_pool{rank}d")(x, 1, return_indices=True)
        else:
            getattr(F, f"avg_pool{rank}d")(x, 1)
    except (RuntimeError, NotImplementedError) as exc:
        return " ".join(str(exc).split())
    return None


class TorchPeer(TorchFamily, RuntimePeer):
    """PyTorch CPU functional pooling, one thread, one configuration per call."""

    name = "torch"
    ref = "torch"
    module = "torch"
    install_hint = "pip install 'poolcheck[torch]'"
    accepted_options = (
        PeerOption("layout", "contiguous", "memory format of the input tensor: channels_last runs PyTorch's "
                   "NHWC / NDHWC kernels (2-D and 3-D pooling only)", ("contiguous", "channels_last")),
    )

    def __init__(self) -> None:
        self._ready = False
        self.options: dict[str, str] = {}

    def _setup(self) -> Any:
        import torch

        if not self._ready:
            torch.set_num_threads(1)
            self._ready = True
        return torch

    def element_types(self, op: str) -> tuple[str, ...]:
        """The types PyTorch has a CPU kernel of ``op`` for at some spatial rank (1-3): the probes
        :meth:`translate` declines by, at the configuration's own rank (float16 average pooling,
        for one, is there in 1-D and 2-D and not in 3-D)."""
        probe = _kernel_error if op in ("max", "avg") else family_kernel_error
        return tuple(d for d in any_convention_dtypes(op) if any(probe(op, rank, d) is None for rank in (1, 2, 3)))

    def translate(self, spec: PoolSpec, shape: tuple[int, ...], dtype: np.dtype) -> dict[str, Any]:
        kwargs = to_torch(spec, shape, self.name)
        if self.option("layout") == "channels_last" and spec.spatial_rank not in (2, 3):
            raise PeerDeclined(self.name, f"layout=channels_last needs 2-D or 3-D pooling (got {spec.spatial_rank}-D)")
        self._setup()
        err = _kernel_error(spec.op, spec.spatial_rank, np.dtype(dtype).name)
        if err is not None:
            raise PeerDeclined(self.name, f"no PyTorch CPU kernel: {err}")
        return kwargs

    def _tensor(self, arr: np.ndarray, rank: int) -> Any:
        """``arr`` as a torch tensor in the configured memory format."""
        torch = self._setup()
        # Peers get read-only inputs; PyTorch wants writable memory (it never writes a pool input).
        t = torch_from_numpy(arr if arr.flags.writeable else arr.copy())
        if self.option("layout") == "channels_last":
            t = t.contiguous(memory_format=torch.channels_last if rank == 2 else torch.channels_last_3d)
        return t

    def without_indices(self, node: dict[str, Any]) -> dict[str, Any]:
        return {**node, "return_indices": False} if "return_indices" in node else node

    def bind(self, node: dict[str, Any], spec: PoolSpec, arr: np.ndarray) -> Callable[[], object]:
        torch = self._setup()
        import torch.nn.functional as F

        n = spec.spatial_rank
        fn = getattr(F, f"{spec.op}_pool{n}d")
        t = self._tensor(arr, n)

        def call() -> object:
            with torch.no_grad():
                return fn(t, **node)

        return call

    def execute(self, group: Sequence[Translated], items: Sequence[BatchItem]) -> list[PeerOutput]:
        ((i, kwargs, arr),) = group  # batch_limit 1: one functional call per configuration
        spec = items[i][0]
        result = self.bind(kwargs, spec, arr)()
        if not isinstance(result, tuple):
            return [PeerOutput(torch_to_numpy(result))]
        values, plane_idx = result
        indices, notes = convert_flat_indices(plane_idx.numpy(), spec, arr.shape, per_plane=True)
        return [PeerOutput(torch_to_numpy(values), indices, notes)]
