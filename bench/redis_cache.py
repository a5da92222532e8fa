"""The API's rate-limit cache operations with Django's Redis cache against ``core.redis_cache``
(one client per pool) (issue 31).

    .venv/bin/python bench/redis_cache.py [--pairs 5000] [--redis redis://127.0.0.1:6379/12]

Each API request does a ``get`` and a ``set`` of its rate-limit entry. This times ``--pairs``
such pairs with each backend, alternated in rounds, against the same Redis, and prints the CPU
and wall microseconds per pair and the ratio (Django's / ours). The database the URL names is
written to (keys ``bench-redis-cache:*``) and those keys are deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _pairs(cache, n: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    for k in range(n):
        key = f"bench-redis-cache:{k % 50}"
        history = cache.get(key, [])
        cache.set(key, [*history[-5:], k], 60)
    return (time.perf_counter() - wall) * 1e6 / n, (time.process_time() - cpu) * 1e6 / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/12")
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

    from core.redis_cache import RedisCache

    caches = {"django": DjangoRedisCache(args.redis, {}), "concord": RedisCache(args.redis, {})}
    for cache in caches.values():
        _pairs(cache, 200)  # connections opened, code warm
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in caches}
    for _ in range(args.rounds):
        for name, cache in caches.items():
            results[name].append(_pairs(cache, args.pairs))
    best = {name: (min(r[0] for r in rs), min(r[1] for r in rs)) for name, rs in results.items()}
    for name, (wall, cpu) in best.items():
        print(
            f"{name:<8} get + set: {wall:7.1f} µs wall, {cpu:7.1f} µs CPU (best of {args.rounds})"
        )
    ratio_wall = best["django"][0] / best["concord"][0]
    ratio_cpu = best["django"][1] / best["concord"][1]
    print(f"Django's / ours: {ratio_wall:.2f}x wall, {ratio_cpu:.2f}x CPU")
    client = caches["concord"]._cache.get_client(write=True)
    for key in client.scan_iter("*bench-redis-cache:*"):
        client.delete(key)


if __name__ == "__main__":
    main()
