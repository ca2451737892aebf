"""The rest of the family on PyTorch's functional API (the mixin :class:`TorchFamily` of the
torch peer): ``lp_pool{1,2,3}d`` for LpPool and GlobalLpPool (kernel = the whole plane),
``mean``/``amax`` over the spatial axes for GlobalAveragePool/GlobalMaxPool,
``max_unpool{1,2,3}d`` for MaxUnpool and ``adaptive_{avg,max}_pool{1,2,3}d`` for the adaptive
pools. What PyTorch cannot say is declined: LpPool padding or dilation, MaxUnpool's uneven
pads, i32 indices, an ONNX index that leaves its own (n, c) plane.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from poolcheck.peers._convert import ceil_as_ceil_torch, torch_from_numpy, torch_to_numpy
from poolcheck.peers.base import PeerDeclined, PeerOutput
from poolcheck.spec.family import FAMILY_OPS, FamilySpec, unpool_shape

#: The PyTorch function each op runs, by spatial rank ``{n}``.
TORCH_FUNCTIONS = {"lp": "lp_pool{n}d", "global_lp": "lp_pool{n}d", "global_avg": "mean", "global_max": "amax",
                   "unpool": "max_unpool{n}d", "adaptive_avg": "adaptive_avg_pool{n}d",
                   "adaptive_max": "adaptive_max_pool{n}d"}


@functools.cache
def family_kernel_error(op: str, rank: int, dtype: str) -> str | None:
    """None when PyTorch has a CPU kernel for family ``op`` at spatial ``rank`` and ``dtype``, else
    its message (probed once on a tiny tensor; the set changes between versions)."""
    import torch
    import torch.nn.functional as F

    t = torch.zeros((1, 1) + (2,) * rank, dtype=getattr(torch, dtype))
    try:
        if op in ("lp", "global_lp"):
            getattr(F, f"lp_pool{rank}d")(t, 2, 1)
        elif op == "unpool":
            getattr(F, f"max_unpool{rank}d")(t, torch.zeros(t.shape, dtype=torch.int64), 1)
        elif op in ("adaptive_avg", "adaptive_max"):
            getattr(F, f"{op}_pool{rank}d")(t, 1)
        else:
            getattr(torch, TORCH_FUNCTIONS[op])(t, dim=tuple(range(2, 2 + rank)), keepdim=True)
    except (RuntimeError, NotImplementedError, AttributeError, TypeError) as exc:
        return " ".join(str(exc).split())
    return None


class TorchFamily:
    """The family half of the torch peer (one functional call per configuration)."""

    name: str
    family_ops: tuple[str, ...] = FAMILY_OPS

    _setup: Callable[[], Any]  # from TorchPeer (an annotation only)

    def translate_family(self, spec: FamilySpec, shape: tuple[int, ...], dtype: np.dtype) -> dict[str, Any]:
        rank = len(shape) - 2
        if not 1 <= rank <= 3:
            raise PeerDeclined(self.name, f"PyTorch pools 1-D to 3-D inputs, got rank {len(shape)}")
        node: dict[str, Any] = {"fn": TORCH_FUNCTIONS[spec.op].format(n=rank), "rank": rank}
        if spec.op == "lp":
            node.update(self._lp_window(spec, shape))
        elif spec.op == "global_lp":
            node.update(norm_type=float(spec.p), kernel_size=tuple(shape[2:]))
        elif spec.op == "unpool":
            node.update(self._unpool_window(spec, shape))
        elif spec.op in ("adaptive_avg", "adaptive_max"):
            assert spec.output_shape is not None
            node["output_size"] = tuple(spec.output_shape)
            if spec.op == "adaptive_max":
                if spec.index_element_type != "i64":
                    raise PeerDeclined(self.name, "torch adaptive_max_pool returns int64 indices only "
                                                  f"(index_element_type {spec.index_element_type} asked)")
                node["return_indices"] = True
        if rank == 1 and spec.op in ("lp", "global_lp"):  # lp_pool1d takes "a single int" (it multiplies by it)
            node.update({k: node[k][0] for k in ("kernel_size", "stride") if k in node})
        self._setup()
        err = family_kernel_error(spec.op, rank, np.dtype(dtype).name)
        if err is not None:
            raise PeerDeclined(self.name, f"no PyTorch CPU kernel: {err}")
        return node

    def _lp_window(self, spec: FamilySpec, shape: tuple[int, ...]) -> dict[str, Any]:
        w = spec.window
        assert w is not None
        if any(d != 1 for d in w.dilations):
            raise PeerDeclined(self.name, "torch lp_pool has no dilation")
        if w.auto_pad in ("same_upper", "same_lower") or any(w.pads_begin) or any(w.pads_end):
            raise PeerDeclined(self.name, "torch lp_pool has no padding")
        why_not = ceil_as_ceil_torch(w, shape)
        if why_not:
            raise PeerDeclined(self.name, f"{why_not}; torch lp_pool's ceil_mode differs")
        return {"norm_type": float(spec.p), "kernel_size": tuple(w.kernel), "stride": tuple(w.strides),
                "ceil_mode": w.applied_rounding != "floor"}

    def _unpool_window(self, spec: FamilySpec, shape: tuple[int, ...]) -> dict[str, Any]:
        w = spec.window
        assert w is not None
        if tuple(w.pads_begin) != tuple(w.pads_end):
            raise PeerDeclined(self.name, "torch max_unpool takes one padding per axis (both ends alike), "
                                          f"got pads {list(w.pads_begin)}/{list(w.pads_end)}")
        out = unpool_shape(spec, shape)
        node: dict[str, Any] = {"kernel_size": tuple(w.kernel), "stride": tuple(w.strides),
                                "padding": tuple(w.pads_begin), "out_shape": out}
        if spec.output_shape is not None:
            node["output_size"] = tuple(spec.output_shape[2:])
        return node

    def execute_family(self, node: dict[str, Any], spec: FamilySpec, x: np.ndarray,
                       indices: np.ndarray | None) -> PeerOutput:
        torch = self._setup()
        import torch.nn.functional as F

        t = torch_from_numpy(x if x.flags.writeable else x.copy())
        kwargs = {k: v for k, v in node.items() if k not in ("fn", "rank", "out_shape")}
        with torch.no_grad():
            if spec.op in ("global_avg", "global_max"):
                result = getattr(torch, node["fn"])(t, dim=tuple(range(2, 2 + node["rank"])), keepdim=True)
            elif spec.op == "unpool":
                result = getattr(F, node["fn"])(t, self._plane_indices(node["out_shape"], x.shape, indices), **kwargs)
            else:
                result = getattr(F, node["fn"])(t, **kwargs)
        if isinstance(result, tuple):
            return PeerOutput(torch_to_numpy(result[0]), result[1].numpy().copy())
        return PeerOutput(torch_to_numpy(result))

    def _plane_indices(self, out_shape: tuple[int, ...], x_shape: tuple[int, ...], indices: np.ndarray | None) -> Any:
        """ONNX MaxUnpool's flat indices (over N x C x spatial) as PyTorch's (each (n, c) plane's
        own), or PeerDeclined where one leaves its plane (PyTorch cannot address it)."""
        import torch

        if indices is None:
            raise ValueError("MaxUnpool needs its second input I (indices=)")
        plane = int(np.prod(out_shape[2:]))
        base = (np.arange(x_shape[0] * x_shape[1], dtype=np.int64) * plane).reshape(x_shape[0], x_shape[1],
                                                                                   *[1] * (len(x_shape) - 2))
        local = np.asarray(indices, dtype=np.int64) - base
        if local.size and (local.min() < 0 or local.max() >= plane):
            raise PeerDeclined(self.name, "an index points outside its own (n, c) plane; torch max_unpool "
                                          "indices address one plane")
        return torch.from_numpy(np.ascontiguousarray(local))
