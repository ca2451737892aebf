"""Planted bug: a family kernel (MaxUnpool): where two elements of X are sent to one output
position, the first one written stays (the reference keeps the last, as the ONNX reference's loop
does; issue 23's "collisions in MaxUnpool").

Condition: MaxUnpool with indices that collide. Expected diagnosis: unpool:first-write-wins.
The plugin defines ``onnx_max_unpool`` only (docs/peers.md): it receives I as its second
argument.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import poolcheck

PEER_NAME = "planted-k19-unpool-first-write-wins"
#: The class(es) the diagnosis should give ("unexplained" for none of the named variants).
EXPECTED = ("unpool:first-write-wins",)
OPS = ("unpool",)
#: Its class is unspecified (the text does not say which of two writes stays): it fails the run
#: only under --fail-on all.
FUZZ_ARGS = ("--ops", "unpool", "--fail-on", "all")


def onnx_max_unpool(x: Any, indices: Any, kernel_shape: Any, strides: Any = None, pads: Any = None,
                    output_shape: Any = None) -> Any:
    x, indices = np.asarray(x), np.asarray(indices)
    # Reversing the order of the writes makes the reference's "last write stays" keep the first.
    reversed_x = x.reshape(-1)[::-1].reshape(x.shape)
    reversed_i = indices.reshape(-1)[::-1].reshape(indices.shape)
    return poolcheck.onnx_max_unpool(reversed_x, reversed_i, kernel_shape, strides=strides, pads=pads,
                                     output_shape=output_shape)
