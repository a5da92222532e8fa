"""Django's Redis cache, with one Redis client per connection pool instead of one per call.

``django.core.cache.backends.redis.RedisCacheClient.get_client`` makes a new ``redis.Redis``
for every cache operation (its constructor fills a table of ~170 response callbacks): the API's
rate limit does a ``get`` and a ``set`` on every request, ~0.6 ms of a worker's CPU per request
(a 200-cycle profile of next + submit, issue 31). A ``redis.Redis`` is safe to share between
threads (it takes a connection from its pool per command), and its pool hands a forked worker
new connections, so one client per pool serves the whole process. Behaviour is otherwise
Django's; ``CACHES`` names :class:`RedisCache`."""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class _ClientPerPool(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        # Django's private helpers (not in django-stubs): the pool of this read or write, and the
        # client class (redis.Redis).
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        client = self._clients.get(id(pool))
        if client is None:
            client = self._client(connection_pool=pool)  # type: ignore[attr-defined]
            self._clients[id(pool)] = client
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server: Any, params: Any) -> None:
        super().__init__(server, params)
        self._class = _ClientPerPool
