"""Fixed-window counters in the cache: one atomic increment that creates the key with its expiry.

Every rate limit (the API throttles in `common.throttling`, the login / sign-up policy in
`common.throttle`, the CSP report rate in `common.views`) finds its window with :func:`fixed_window`
and counts request n of it with :func:`window_incr`. On Redis (Django's `RedisCache`, production) it is one round trip: a Lua script
(`INCR`, then `EXPIRE` when the key was just created), atomic on the server, so parallel requests get
distinct counts (tests/security/test_accounts.py, 100 parallel requests). Django's own `add` + `incr`
took three round trips (`SET NX`, then `EXISTS` + `INCR`) and could lose a key that expired between
the two. Any other cache (LocMem in development) keeps `add` + `incr`, atomic within one process.
"""
from __future__ import annotations

import math
import time
from typing import Any

from django.core.cache.backends.redis import RedisCacheClient
from redis.commands.core import Script

# KEYS[1] the counter, ARGV[1] its lifetime in seconds, set once: when this call created it.
_INCR_LUA = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n
"""
_script: Script | None = None


def fixed_window(window: int) -> tuple[int, int]:
    """The current `window`-second window of every rate limit: its start (a multiple of `window`, part
    of the counter's key) and the whole seconds left in it (at least 1, a refusal's Retry-After)."""
    now = time.time()
    start = int(now // window) * window
    return start, max(1, math.ceil(start + window - now))


def window_incr(cache: Any, key: str, timeout: int) -> int:
    """Add one to the counter `key` (created at 1 with a `timeout`-second expiry) and return its value."""
    global _script
    backend = getattr(cache, "_cache", None)  # RedisCache's client wrapper (a dict on LocMemCache)
    if isinstance(backend, RedisCacheClient):
        full = cache.make_and_validate_key(key)
        # Django builds a new redis.Redis around the shared pool on every call (~half this function's
        # CPU); the writer's client is kept on the cache's client wrapper instead (one per thread, as
        # Django's caches are; redis.Redis over a pool is safe to reuse).
        client = backend.__dict__.get("_window_client")
        if client is None:
            client = backend.__dict__["_window_client"] = backend.get_client(full, write=True)
        if _script is None:
            _script = client.register_script(_INCR_LUA)  # EVALSHA, loaded on the server on first use
        return int(_script(keys=[full], args=[int(timeout)], client=client))
    if cache.add(key, 1, timeout=timeout):
        return 1
    return int(cache.incr(key))
