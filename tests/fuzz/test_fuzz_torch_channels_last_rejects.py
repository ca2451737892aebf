"""PyTorch's channels_last max pooling refuses an input plane larger than its lane index type
(``rejects: plane over the element-width index``).

``cpu_max_pool_channels_last`` (aten/src/ATen/native/cpu/MaxPoolKernel.cpp) keeps the in-plane
indices in ``int_same_size_t<opmath_t>`` and checks ``input_depth * input_height * input_width``
against that integer's maximum: int8/uint8 inputs refuse a plane of more than 127 elements,
int16 more than 32767, and only with C > 1 (a C = 1 tensor is also contiguous: the NCHW kernel
runs). The oracle below is that sentence of the source, checked against torch called plainly;
the diagnosis of torch's own message names the rule exactly where torch raises, and never a
configuration the rule does not cover or another message.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from poolcheck.fuzz.diagnosis import diagnose_rejection
from poolcheck.results import Severity
from poolcheck.spec.operators import parse

KEY = "rejects: plane over the element-width index"
MESSAGE = ("RuntimeError: Expected input_depth * input_height * input_width <= "
           "std::numeric_limits<integer_t>::max() to be true, but got false.")


def refuses(dtype: str, c: int, sizes: tuple[int, ...]) -> bool:
    """The oracle, from the source: an 8-bit integer's lanes index at most 127 elements, a
    16-bit one's 32767; the channels_last kernel runs only for C > 1."""
    limit = {"int8": 127, "uint8": 127, "int16": 32767}.get(dtype)
    return limit is not None and c > 1 and math.prod(sizes) > limit


def spec_of(rank: int, k: int = 1, pad: int = 0, ceil: bool = False):  # type: ignore[no-untyped-def]
    return parse("MaxPool-14", {"kernel": [k] * rank, "strides": [1] * rank, "pads_begin": [pad] * rank,
                                "pads_end": [pad] * rank, "dilations": [1] * rank,
                                "rounding_type": "ceil_torch" if ceil else "floor"})


SIZES = [(1, 1, 127), (1, 1, 128), (4, 4, 8), (3, 6, 7), (2, 8, 8), (1, 9, 14), (1, 8, 16), (127, 1, 1),
         (128, 1, 1), (5, 5, 5), (6, 5, 5)]


def test_the_rule_is_the_oracle() -> None:
    """The diagnosis' condition on torch's message is the oracle's (2-D and 3-D, N and C, types)."""
    for sizes, (n, c), dtype in itertools.product(SIZES + [s[1:] for s in SIZES],
                                                 ((1, 1), (2, 1), (1, 2), (2, 3), (1, 40)),
                                                 ("int8", "uint8", "int16", "int32", "float16", "float32")):
        x = np.zeros((n, c, *sizes), dtype=dtype)
        diag = diagnose_rejection(spec_of(len(sizes)), x, MESSAGE)
        assert (diag.klass == KEY) == refuses(dtype, c, sizes), (dtype, n, c, sizes, diag.klass)
    x = np.zeros((1, 2, 1, 1, 32768), dtype="int16")
    assert diagnose_rejection(spec_of(3), x, MESSAGE).klass == KEY


def test_the_name_needs_the_message() -> None:
    """Planted: another message on a configuration the rule covers keeps its own class."""
    x = np.zeros((1, 2, 4, 4, 8), dtype=np.int8)
    diag = diagnose_rejection(spec_of(3), x, "RuntimeError: something else entirely")
    assert diag.klass != KEY and not diag.explained


torch = pytest.importorskip("torch")
F = torch.nn.functional


def torch_message(x: np.ndarray, k: int = 1, pad: int = 0, ceil: bool = False, *, channels_last: bool = True,
                  indices: bool = True) -> str | None:
    """torch called plainly: F.max_pool2d / F.max_pool3d on a channels_last tensor; its refusal
    as the peer reports it (``Type: message``), or None."""
    rank = x.ndim - 2
    t = torch.from_numpy(x.copy())
    if channels_last:
        t = t.contiguous(memory_format=torch.channels_last if rank == 2 else torch.channels_last_3d)
    try:
        getattr(F, f"max_pool{rank}d")(t, k, stride=1, padding=pad, ceil_mode=ceil, return_indices=indices)
    except RuntimeError as e:
        return f"{type(e).__name__}: {' '.join(str(e).split())}"
    return None


def test_torch_refuses_exactly_where_the_oracle_says() -> None:
    """torch 2.13 CPU over 2-D and 3-D planes around the bound, N, C, kernel, padding, ceil_mode,
    with and without indices (measured wider: see rejections._plane_over_element_index)."""
    refused = 0
    for sizes, (n, c), dtype, (k, pad, ceil), indices in itertools.product(
            SIZES + [s[1:] for s in SIZES], ((1, 1), (2, 1), (1, 2), (3, 5)), ("int8", "uint8", "int16", "float32"),
            ((1, 0, False), (3, 1, True)), (True, False)):
        if min(sizes) < 3 and k == 3:
            continue
        x = np.zeros((n, c, *sizes), dtype=dtype)
        message = torch_message(x, k, pad, ceil, indices=indices)
        assert (message is not None) == refuses(dtype, c, sizes), (dtype, n, c, sizes, k, pad, ceil, message)
        if message is not None:
            refused += 1
            diag = diagnose_rejection(spec_of(len(sizes), k, pad, ceil), x, message)
            assert diag.klass == KEY and diag.explained and diag.severity == Severity.LIMITATION, diag
        # the contiguous layout never refuses
        assert torch_message(x, k, pad, ceil, channels_last=False, indices=indices) is None
    assert refused > 50


def test_int16_refuses_past_32767() -> None:
    assert torch_message(np.zeros((1, 2, 1, 32767), dtype=np.int16)) is None
    message = torch_message(np.zeros((1, 2, 1, 32768), dtype=np.int16))
    assert message is not None
    assert diagnose_rejection(spec_of(2), np.zeros((1, 2, 1, 32768), dtype=np.int16), message).klass == KEY
