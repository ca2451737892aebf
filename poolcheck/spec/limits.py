"""Documented magnitude limits, checked where attributes and geometries are validated.

No spec bounds its integers, but every runtime stores them in 32 or 64 bits, and a reference
engine that takes a 2^62 stride or a 10^12 kernel at face value overflows its index arithmetic
or runs for hours. poolcheck refuses such configurations up front with an
:class:`~poolcheck.errors.AttributeValueError` naming the attribute:

- every kernel, stride, dilation and pad value, and every per-axis padded extent and dilated
  kernel extent, is at most ``MAX_EXTENT`` (2^31 - 1, the int32 range every runtime accepts);
- the input, the output and the padded input each hold at most ``MAX_ELEMENTS`` elements
  (the same cap as a case file's input);
- the work, output elements x kernel taps, is at most ``MAX_TAPS``.

The C engine checks its own bounds again (defence in depth), whatever its caller passed.
"""

from __future__ import annotations

MAX_EXTENT: int = 2**31 - 1
MAX_ELEMENTS: int = 50_000_000
MAX_TAPS: int = 2**32
