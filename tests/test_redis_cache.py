"""The Redis cache with one client per connection pool (``core.redis_cache``): Django's cache
API unchanged, against a real (private) Redis server, and no new client per operation."""

from __future__ import annotations

import threading

from core.redis_cache import RedisCache
from tests.redis_server import running_redis_server


def test_the_cache_works_as_djangos_and_reuses_one_client():
    with running_redis_server() as server:
        cache = RedisCache(server.url, {})
        assert cache.get("missing", "default") == "default"
        cache.set("k", {"a": [1, 2]}, 30)
        assert cache.get("k") == {"a": [1, 2]}
        assert cache.add("k", "other") is False and cache.add("new", 1) is True
        assert cache.incr("new", 4) == 5
        cache.delete("k")
        assert cache.get("k") is None
        assert cache.get_many(["new", "k"]) == {"new": 5}
        client = cache._cache.get_client()
        assert cache._cache.get_client("any") is client  # one per pool, not one per call
        assert cache._cache.get_client(write=True) is client  # one server: one pool

        def count(n: int) -> None:
            for _ in range(50):
                cache.incr("shared")

        cache.set("shared", 0, 30)
        threads = [threading.Thread(target=count, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert cache.get("shared") == 200  # the shared client from four threads at once
