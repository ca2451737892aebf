"""The C engine: the same interface and results as :mod:`poolcheck.engines.numpy_engine`,
computed by the optional extension ``poolcheck.engines._cpool``.

The extension is chosen once, here, at import (the markupsafe/msgpack pattern); nothing else in
poolcheck branches on it. ``AVAILABLE`` says whether it loaded and ``UNAVAILABLE_REASON`` why
not. ``POOLCHECK_PURE_PYTHON=1`` forces the pure NumPy engine. The extension runs one of its
instruction-set paths (portable, avx2, avx512), the fastest this CPU runs unless
``POOLCHECK_ISA`` names one; every path gives the same bits.

Agreement with the NumPy engine (tested in tests/engines/test_c_engine*.py):

- Max values and indices: bit for bit, for every dtype, NaN policy, layout and geometry. The one
  exception is the NumPy engine's values-only fast path for float32/float64 (no indices, NaN
  policy ``propagate``): it reduces with ``np.maximum``, whose SIMD loops return the *second*
  operand of a ``+0.0``/``-0.0`` tie and may return either operand's NaN payload. The C engine
  always returns the element a row-major strict ``>`` scan chooses (the first), as both engines
  do whenever indices are requested. Values compare equal (``-0.0 == 0.0``; NaN where NaN).
- Averages: float64 accumulation in the NumPy engine's order (last spatial axis first, taps in
  order), one division, one rounding to the input type -- identical results (0 ULP) for
  float32 and float64. float16 inputs are widened to float32 (exact), accumulated in float64,
  and the float64 mean is rounded to float16 by NumPy, as the NumPy engine does. Global
  pooling (one window covering each whole plane) sums each plane in 16 (float32 input; 8 for
  the others) interleaved float64 partial sums instead: within ``(m - 1) 2^-53 sum|x|`` of the exact sum of the plane's m
  elements, as the NumPy engine's pairwise global sum is (docs/benchmarks.md states the bound).
- float16 max runs on the float32 kernel through :func:`~poolcheck.spec.dtypes.widen_half` and
  :func:`~poolcheck.spec.dtypes.narrow_half`, which keep every bit pattern (a signalling NaN
  too, which NumPy's own casts return quiet on AArch64).
- bfloat16 (no kernel of its own): max runs on the float32 kernel (bfloat16 widens to float32
  exactly, and narrows back exactly); averages run as float16's do (float32 in, the float64
  mean out), rounded once to bfloat16 by :func:`poolcheck.spec.dtypes.cast`, the
  NumPy engine's rounding.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from types import ModuleType

import numpy as np

from poolcheck.engines.numpy_engine import empty_max_value
from poolcheck.errors import AttributeValueError, EngineUnavailableError
from poolcheck.spec import dtypes
from poolcheck.spec.indices import IndexLayout
from poolcheck.spec.policy import SPEC, Policy
from poolcheck.spec.shape import Geometry

NAME = "c"
PURE_ENV = "POOLCHECK_PURE_PYTHON"
#: Forces the C engine's instruction-set path: portable, avx2 or avx512 (default: the fastest
#: this CPU runs). A path the CPU or build cannot run makes the engine unavailable.
ISA_ENV = "POOLCHECK_ISA"

_cpool: ModuleType | None
#: True when POOLCHECK_ISA named a path the extension refused: then engine "auto" fails too,
#: instead of quietly running the NumPy engine.
ISA_REFUSED = False
if os.environ.get(PURE_ENV, "") not in ("", "0"):
    _cpool = None
    UNAVAILABLE_REASON = f"{PURE_ENV} is set, forcing the pure NumPy engine"
else:
    try:
        from poolcheck.engines import _cpool

        UNAVAILABLE_REASON = ""
    except ImportError as exc:
        _cpool = None
        ISA_REFUSED = str(exc).startswith(ISA_ENV)
        UNAVAILABLE_REASON = str(exc) if ISA_REFUSED else (
            f"the C extension poolcheck.engines._cpool could not be imported ({exc}); "
            "it is built by `pip install` when a C compiler is present"
        )
AVAILABLE = _cpool is not None


def active_isa() -> str | None:
    """The instruction-set path the C engine's kernels run on ("portable", "avx2" or
    "avx512"), or None when the extension is not available."""
    if _cpool is None:
        return None
    return str(_cpool.isa())


def available_isas() -> tuple[str, ...]:
    """Every instruction-set path this CPU and build can run, slowest first."""
    return () if _cpool is None else tuple(_cpool.ISAS)


#: What setup.py writes beside the extension it built (setup.py, _record_build): the wall time
#: of the compile and link, the CPUs it ran on, and when.
BUILD_RECORD_NAME = "_cpool.build.json"


def build_record_path() -> Path | None:
    """Where setup.py recorded this extension's build, or None when no extension is loaded."""
    if _cpool is None or not getattr(_cpool, "__file__", None):
        return None
    return Path(str(_cpool.__file__)).with_name(BUILD_RECORD_NAME)


def switch_isa(name: str) -> str:
    """Run the C engine's kernels on path ``name`` from now on, in this whole process, and return
    the path it ran before (for benchmarks and tests that compare paths in one process; not while
    another thread is computing). ValueError names the paths this CPU and build run."""
    if _cpool is None:
        raise EngineUnavailableError(UNAVAILABLE_REASON)
    return str(_cpool._set_isa(name))

# The extension's code tables (its module attributes, defined once in _cpool_src/module.c):
# element type -> max kernel, NaN policy, divisor rule, average kind (input -> output type).
# float16 max runs on the float32 kernel (exact widening); float16 averages as float32 -> float64.
_MAX_CODES: dict[str, int] = dict(_cpool.MAX_TYPES) if _cpool is not None else {}
_NAN_CODES: dict[str, int] = dict(_cpool.NAN_MODES) if _cpool is not None else {}
_DIVISOR_CODES: dict[str, int] = dict(_cpool.DIVISOR_RULES) if _cpool is not None else {}
_AVG_KINDS: dict[str, int] = dict(_cpool.AVG_KINDS) if _cpool is not None else {}


def _max_code(dtype: np.dtype) -> int | None:
    """The max kernel of an element type."""
    return _MAX_CODES.get(dtypes.name_of(dtype))


@functools.lru_cache(maxsize=256)
def _geometry_args(geom: Geometry) -> tuple[int, ...]:
    """``(N*C, then per axis: size, kernel, stride, dilation, pad_begin, pad_end, out)``."""
    args = [geom.batch * geom.channels]
    for a in geom.axes:
        args += [a.size, a.kernel, a.stride, a.dilation, a.pad_begin, a.pad_end, a.out]
    return tuple(args)


@functools.lru_cache(maxsize=256)
def _fill_bytes(dtype: np.dtype, run_dtype: np.dtype, policy: Policy) -> bytes:
    # The fill is chosen for the caller's dtype (float16 "lowest" is -65504) and is exactly
    # representable in the dtype the kernel runs on.
    return np.asarray(np.asarray(empty_max_value(dtype, policy), dtype=dtype), dtype=run_dtype).tobytes()


def _require() -> ModuleType:
    if _cpool is None:
        raise EngineUnavailableError(f"engine 'c' is not available: {UNAVAILABLE_REASON}")
    return _cpool


def max_pool(
    x: np.ndarray,
    geom: Geometry,
    layout: IndexLayout | None,
    policy: Policy = SPEC,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Max pooling; ``layout=None`` skips the index output. Same contract as
    :func:`poolcheck.engines.numpy_engine.max_pool`."""
    lib = _require()
    dtype = x.dtype
    run = np.ascontiguousarray(x)
    if dtype == np.float16:
        run = dtypes.widen_half(run)  # exact, NaN payloads too; comparisons are unchanged
    elif dtype == dtypes.BFLOAT16:
        run = run.astype(np.float32)  # exact (ml_dtypes shifts the bits); comparisons are unchanged
    code = _max_code(run.dtype)
    if code is None:
        raise AttributeValueError("dtype", f"the C engine has no max pooling for {dtype}")
    if tuple(run.shape) != geom.input_shape:
        raise AttributeValueError("input", f"shape {run.shape} does not match the geometry {geom.input_shape}")
    out = np.empty(geom.output_shape, dtype=run.dtype)
    idx = None if layout is None else np.empty(geom.output_shape, dtype=layout.dtype)
    lib.max_pool(
        run, out, idx, _geometry_args(geom), code, _NAN_CODES[policy.nan], _fill_bytes(dtype, run.dtype, policy),
        int(policy.empty_index), 1 if layout is not None and layout.order == "F" else 0,
        int(layout.modulus) if layout is not None else 1,
    )
    if dtype == np.float16:
        out = dtypes.narrow_half(out)  # exact: every output is an input element or the fill
    elif dtype == dtypes.BFLOAT16:
        out = dtypes.narrow_bfloat16(out)  # exact: every output is an input element or the fill
    return out, idx


def avg_pool(x: np.ndarray, geom: Geometry, exclude_pad: bool, policy: Policy = SPEC) -> np.ndarray:
    """Average pooling. Same contract as :func:`poolcheck.engines.numpy_engine.avg_pool`:
    float64 sums (last spatial axis first, taps in order), one division, one rounding."""
    lib = _require()
    dtype = x.dtype
    run = np.ascontiguousarray(x)
    out_dtype: np.dtype
    if dtype == np.float32:
        kind, out_dtype = _AVG_KINDS["float32"], np.dtype(np.float32)
    elif dtype == np.float64:
        kind, out_dtype = _AVG_KINDS["float64"], np.dtype(np.float64)
    elif dtype in (np.float16, dtypes.BFLOAT16):
        run = dtypes.widen_half(run) if dtype == np.float16 else run.astype(np.float32)
        kind, out_dtype = _AVG_KINDS["float32_to_float64"], np.dtype(np.float64)
    else:
        raise AttributeValueError("dtype", f"average pooling needs a floating-point input, got {dtype}")
    if tuple(run.shape) != geom.input_shape:
        raise AttributeValueError("input", f"shape {run.shape} does not match the geometry {geom.input_shape}")
    rule = policy.divisor
    if rule == "attribute":
        rule = "valid" if exclude_pad else "padded"
    out = np.empty(geom.output_shape, dtype=out_dtype)
    empty = 0.0 if policy.empty_avg == "zero" else float("nan")
    lib.avg_pool(run, out, _geometry_args(geom), kind, _DIVISOR_CODES[rule], empty)
    if dtype in (np.float16, dtypes.BFLOAT16):
        out = dtypes.cast(out, dtype)  # one rounding, as the NumPy engine's
    return out
