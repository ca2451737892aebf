"""Loader for the optional C engine (``poolcheck.engines._cpool``).

Not built yet: ``AVAILABLE`` is False and ``engine="c"`` raises EngineUnavailableError.
"""

from __future__ import annotations

AVAILABLE = False
UNAVAILABLE_REASON = "the C extension poolcheck.engines._cpool is not built in this version"
NAME = "c"
