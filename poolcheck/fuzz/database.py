"""The hypothesis example database behind ``--database``: a folder or a Redis server.

Every shard and every machine of a campaign replays the finds already in the database before it
generates anything new, so a divergence found once is re-checked everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from poolcheck.errors import AttributeValueError, PoolcheckError

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
#: Keys of poolcheck's examples in a shared Redis database start with this.
REDIS_PREFIX = b"poolcheck-fuzz:"


def is_redis(spec: str | Path | None) -> bool:
    return spec is not None and str(spec).startswith(REDIS_SCHEMES)


def check_database(spec: str) -> str:
    """``spec`` when it is a folder or a Redis URL; a URL of any other scheme (``http://...``,
    once taken for a folder of that name) is a usage error."""
    scheme, sep, _ = spec.partition("://")
    if sep and not is_redis(spec):
        raise AttributeValueError("--database", f"expected a folder or redis://HOST:6379/0, got a {scheme}:// URL "
                                                f"({spec!r})")
    return spec


def example_database(spec: str | Path | None) -> Any:
    """``--database``: a folder (``DirectoryBasedExampleDatabase``) or ``redis://HOST:PORT/DB``
    (hypothesis' ``RedisExampleDatabase``, shared by every worker and machine)."""
    if spec is None:
        return None
    text = check_database(str(spec))
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
        return SharedDatabase(RedisExampleDatabase(client, key_prefix=REDIS_PREFIX))
    return SharedDatabase(DirectoryBasedExampleDatabase(text))


class SharedDatabase(ExampleDatabase):
    """An example database shared by runs that see different things: one run never erases
    another run's find.

    Hypothesis deletes a saved failure that no longer fails when replayed. With one database
    behind several machines, peers and ISAs that is wrong: a divergence that shows only on an
    AVX-512 machine would be erased by the next AVX2 machine that replays it. So a run deletes
    (or moves) only what it saved itself -- its own intermediate shrinking steps -- and leaves the
    rest; Redis entries still expire after hypothesis' default eight days.
    """

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner
        self._mine: set[tuple[bytes, bytes]] = set()

    def __repr__(self) -> str:
        return f"SharedDatabase({self.inner!r})"

    def save(self, key: bytes, value: bytes) -> None:
        self._mine.add((key, value))
        self.inner.save(key, value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self.inner.fetch(key)

    def delete(self, key: bytes, value: bytes) -> None:
        if (key, value) in self._mine:
            self._mine.discard((key, value))
            self.inner.delete(key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        if (src, value) in self._mine:
            self._mine.discard((src, value))
            self.inner.move(src, dest, value)
        else:
            self.inner.save(dest, value)  # a copy: the other run's entry stays where it was
        self._mine.add((dest, value))
