"""The counters a store keeps (`ConversationStore.counters`): one behaviour for all three backends, shared by the
stores on one SQLite file or one Redis, as token budgets need."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from pathlib import Path

import pytest
from redis_server import RedisServer
from test_store import MakeStore, run
from test_store import make_store as make_store  # a fixture, used by its name
from test_store import redis_cluster as redis_cluster  # a fixture, used by its name
from test_store import redis_server as redis_server  # a fixture, used by its name

from gateway.conversations.store import RedisStore, SQLiteStore, StoreError


@pytest.fixture(params=["sqlite", "redis", "redis-cluster"])
def make_shared(request: pytest.FixtureRequest, tmp_path: Path) -> MakeStore:
    """Each call a store of its own on the same backend: as two worker processes on one file, or two replicas on
    one Redis (or one cluster), have."""
    if request.param == "sqlite":
        return lambda: SQLiteStore(tmp_path / "conversations.db")
    server: RedisServer = request.getfixturevalue("redis_server" if request.param == "redis" else "redis_cluster")
    return lambda: RedisStore(server.url)


def test_a_counter_adds_up_per_key(make_store: MakeStore) -> None:
    async def body() -> None:
        store = make_store()
        counters, key = store.counters(), f"test:{uuid.uuid4().hex}"
        try:
            assert await counters.get(key) == 0
            assert await counters.add(key, 3, 60) == 3
            assert await counters.add(key, 4, 60) == 7
            assert await counters.get(key) == 7
            assert await counters.get(key + ":other") == 0
        finally:
            await store.close()

    run(body())


def test_a_counter_is_gone_its_ttl_after_its_last_add(make_store: MakeStore) -> None:
    async def body() -> None:
        store = make_store()
        counters, key = store.counters(), f"test:{uuid.uuid4().hex}"
        try:
            await counters.add(key + ":a", 1, 0.3)
            await counters.add(key + ":b", 1, 0.3)
            await asyncio.sleep(0.15)
            assert await counters.add(key + ":a", 1, 0.3) == 2  # its TTL starts again
            await asyncio.sleep(0.2)
            assert await counters.get(key + ":b") == 0
            assert await counters.get(key + ":a") == 2
            await asyncio.sleep(0.2)
            assert await counters.get(key + ":a") == 0
            assert await counters.add(key + ":a", 5, 0.3) == 5  # counted afresh
        finally:
            await store.close()

    run(body())


def test_two_stores_on_one_backend_count_every_add_of_both(make_shared: MakeStore) -> None:
    async def body() -> None:
        one, two = make_shared(), make_shared()
        key = f"test:{uuid.uuid4().hex}"
        try:
            counts = await asyncio.gather(*(store.counters().add(key, 1, 60) for _ in range(100)
                                            for store in (one, two)))
            assert sorted(counts) == list(range(1, 201))  # each add saw the others: none lost, none counted twice
            assert await one.counters().get(key) == await two.counters().get(key) == 200
        finally:
            await one.close()
            await two.close()

    run(body())


def test_a_store_that_fails_fails_its_counters_with_a_store_error(make_shared: MakeStore) -> None:
    async def body() -> None:
        store = make_shared()
        await store.close()
        with pytest.raises(StoreError):
            await store.counters().add("test:closed", 1, 60)
        with pytest.raises(StoreError):
            await store.counters().get("test:closed")

    run(body())


def test_sqlite_counters_outlive_the_store_that_counted_them(tmp_path: Path) -> None:
    path = tmp_path / "conversations.db"

    async def count(n: int) -> int:
        store = SQLiteStore(path)
        try:
            return await store.counters().add("tokens", n, 60)
        finally:
            await store.close()

    assert run(count(3)) == 3
    assert run(count(4)) == 7


def test_sqlite_sweeps_expired_counters_as_it_adds(tmp_path: Path) -> None:
    path = tmp_path / "conversations.db"

    async def body() -> None:
        store = SQLiteStore(path)
        await store.counters().add("old", 1, 0.1)
        await asyncio.sleep(0.15)
        await store.counters().add("new", 1, 60)
        await store.close()

    run(body())
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT key, value FROM counters").fetchall() == [("new", 1)]
    conn.close()
