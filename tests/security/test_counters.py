"""Issue 23: the rate limits' fixed-window counter (common/counters.py) in one atomic Redis round trip."""
from __future__ import annotations

import threading
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis
from django.conf import settings
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache

from common import counters
from common.counters import window_incr


@pytest.fixture
def redis_cache() -> Any:
    assert settings.REDIS_URL, "the suite runs with REDIS_URL set, as in production"
    backend = RedisCache(settings.REDIS_URL, {"KEY_PREFIX": f"t{uuid.uuid4().hex[:8]}"})
    yield backend
    backend.clear()


def test_redis_counter_counts_expires_and_takes_one_round_trip(redis_cache: RedisCache,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    assert window_incr(redis_cache, "w:1", 61) == 1  # loads the script on the server if needed
    sent: list[tuple[Any, ...]] = []
    original = redis.Redis.execute_command

    def counting(self: redis.Redis, *args: Any, **options: Any) -> Any:
        sent.append(args)
        return original(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", counting)
    assert [window_incr(redis_cache, "w:1", 61) for _ in range(3)] == [2, 3, 4]
    assert len(sent) == 3 and all(str(args[0]).upper() == "EVALSHA" for args in sent)
    monkeypatch.setattr(redis.Redis, "execute_command", original)
    key = redis_cache.make_and_validate_key("w:1")
    client = redis_cache._cache.get_client(key, write=True)  # type: ignore[attr-defined]
    assert 0 < client.ttl(key) <= 61  # set when the key was created, never left without expiry
    # The same value Django's cache reads (an int is stored as is): other code may read the counter.
    assert redis_cache.get("w:1") == 4


def test_redis_counter_is_atomic_under_100_threads(redis_cache: RedisCache) -> None:
    counts: list[int] = []
    start = threading.Barrier(100)

    def call() -> None:
        start.wait()
        counts.append(window_incr(redis_cache, "w:race", 30))

    threads = [threading.Thread(target=call) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(counts) == list(range(1, 101))


def test_other_caches_keep_add_and_incr() -> None:
    local = LocMemCache(f"counters-{uuid.uuid4().hex}", {})
    assert [window_incr(local, "w", 60) for _ in range(3)] == [1, 2, 3]
    assert local.get("w") == 3


@pytest.mark.parametrize(("now", "window", "expected"), [
    (119.2, 60, (60, 1)),      # 0.8 s left: rounded up, never 0
    (120.0, 60, (120, 60)),    # a window's first instant
    (60.5, 60, (60, 60)),      # 59.5 s left, rounded up
    (7205.0, 3600, (7200, 3595)),
])
def test_fixed_window_start_and_seconds_left(monkeypatch: pytest.MonkeyPatch, now: float, window: int,
                                             expected: tuple[int, int]) -> None:
    monkeypatch.setattr(counters, "time", SimpleNamespace(time=lambda: now))
    assert counters.fixed_window(window) == expected


def test_every_rate_limit_takes_its_window_from_fixed_window() -> None:
    """One clock for every fixed window (the tests' `throttle_clock_frozen` holds it): no rate limit
    computes its own window start."""
    for module in ("common/throttling.py", "common/throttle.py", "common/views.py"):
        source = (Path(settings.BASE_DIR) / module).read_text()
        assert "fixed_window(" in source and "// window" not in source, module
