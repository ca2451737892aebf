"""No bug: poolcheck's engine behind the plugin signatures (the control for the planted peers:
the fuzzer must find nothing here)."""

from __future__ import annotations

from poolcheck import avg_pool as avg_pool  # the correct ones: the plugin signatures are poolcheck's
from poolcheck import max_pool as max_pool

PEER_NAME = "planted-correct"
