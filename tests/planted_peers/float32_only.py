"""No bug: poolcheck's engine behind the plugin signatures, declaring that it takes float32 only
(``ELEMENT_TYPES``): the peer declines every other type, and ``poolcheck fuzz`` without
``--dtypes`` draws float32 alone for a campaign against it."""

from __future__ import annotations

from poolcheck import avg_pool as avg_pool
from poolcheck import max_pool as max_pool

PEER_NAME = "planted-float32-only"
ELEMENT_TYPES = ("float32",)
