"""The test processes of `make test-fast` each take a Redis database of their own, downwards from
the one the tests were given, and never database 0 (a service beside the tests uses it)."""

from __future__ import annotations

import pytest

from tests.parallel_env import broker_for_worker


def test_each_test_process_takes_the_next_database_down():
    given = "redis://127.0.0.1:6379/15"

    assert [broker_for_worker(given, index) for index in range(3)] == [
        "redis://127.0.0.1:6379/15",
        "redis://127.0.0.1:6379/14",
        "redis://127.0.0.1:6379/13",
    ]


def test_a_process_that_would_reach_database_0_is_refused_saying_what_to_do():
    with pytest.raises(RuntimeError, match="higher database number, or fewer processes"):
        broker_for_worker("redis://127.0.0.1:6379/2", 2)


def test_a_broker_that_is_not_redis_over_tcp_is_refused():
    with pytest.raises(RuntimeError, match="redis:// broker URL"):
        broker_for_worker("redis+socket:///tmp/redis.sock", 1)
