"""The hypothesis example database behind ``--database``: a folder or a Redis server.

Every shard and every machine of a campaign replays the finds already in the database before it
generates anything new, so a divergence found once is re-checked everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from poolcheck.errors import AttributeValueError, PoolcheckError

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
#: Keys of poolcheck's examples in a shared Redis database start with this.
REDIS_PREFIX = b"poolcheck-fuzz:"


def is_redis(spec: str | Path | None) -> bool:
    return spec is not None and str(spec).startswith(REDIS_SCHEMES)


def example_database(spec: str | Path | None) -> Any:
    """``--database``: a folder (``DirectoryBasedExampleDatabase``) or ``redis://HOST:PORT/DB``
    (hypothesis' ``RedisExampleDatabase``, shared by every worker and machine)."""
    if spec is None:
        return None
    text = str(spec)
    if is_redis(text):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError:
            raise PoolcheckError("--database redis://... needs the redis client: pip install 'poolcheck[cluster]'"
                                 ) from None
        try:
            client = redis.Redis.from_url(text, socket_connect_timeout=10)
            client.ping()
        except (redis.RedisError, ValueError) as exc:
            raise AttributeValueError("--database", f"cannot reach {text}: {exc}") from None
        return RedisExampleDatabase(client, key_prefix=REDIS_PREFIX)
    from hypothesis.database import DirectoryBasedExampleDatabase

    return DirectoryBasedExampleDatabase(text)
