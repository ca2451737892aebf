"""Type stubs of the C engine extension (sources in _cpool_src/; the Python face is c_engine.py)."""

from typing import Final

from typing_extensions import Buffer

#: 1 when the portable kernels carry x86-64-v3 clones chosen by the loader.
MULTIVERSION: Final[int]
#: 1 when the AVX-512 kernels were switched on at import (CPU and build have them,
#: POOLCHECK_NO_AVX512 unset); _set_avx512 changes the setting, not this constant.
AVX512: Final[int]
#: Bytes of intermediate results one chunk of planes may use.
CHUNK_BYTES: Final[int]
#: Element type name (NumPy's) -> type code of max_pool.
MAX_TYPES: Final[dict[str, int]]
#: NaN policy name -> nan_mode of max_pool.
NAN_MODES: Final[dict[str, int]]
#: Divisor rule name -> divisor_rule of avg_pool.
DIVISOR_RULES: Final[dict[str, int]]
#: Average kind ("float32", "float64", "float32_to_float64": input -> output type) -> kind of avg_pool.
AVG_KINDS: Final[dict[str, int]]

def max_pool(
    x: Buffer,
    out: Buffer,
    indices: Buffer | None,
    geometry: tuple[int, ...],
    type_code: int,
    nan_mode: int,
    fill: bytes,
    empty_index: int,
    order_f: int,
    modulus: int,
    /,
) -> None:
    """Max pooling of C-contiguous ``x`` into ``out`` (and int32/int64 ``indices``).
    ``geometry`` is ``(N*C, then per axis: size, kernel, stride, dilation, pad_begin, pad_end, out)``."""

def avg_pool(x: Buffer, out: Buffer, geometry: tuple[int, ...], kind: int, divisor_rule: int, empty_avg: float, /) -> None:
    """Average pooling of C-contiguous ``x`` into ``out``; ``empty_avg`` fills windows with a zero divisor."""

def _set_avx512(flag: bool, /) -> bool:
    """Switch the AVX-512 kernels off or back on (benchmarking only); returns the previous setting."""
