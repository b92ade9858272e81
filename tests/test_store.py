"""The conversation store: one behaviour for all three backends, plus what only one of them promises."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import stat
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import redis.asyncio as aioredis
from redis_cluster import RedisCluster
from redis_server import RedisServer, RedisServerMissing
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.cli import main
from gateway.config import GatewayConfig
from gateway.conversations.store import (
    ConversationStore,
    MemoryStore,
    RedisStore,
    SQLiteStore,
    StoreError,
    open_store,
    redact_url,
)
from gateway.conversations.store.redis import CLUSTER_SHARDS, shared_bound
from gateway.server.app import create_app

T = TypeVar("T")
MakeStore = Callable[..., ConversationStore]


def run(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())


@contextlib.contextmanager
def running_redis(password: str | None = None) -> Iterator[RedisServer]:
    try:
        with RedisServer(password=password) as server:
            yield server
    except RedisServerMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """One server for the module; each test gets its own key prefix, so they never see each other's data."""
    with running_redis() as server:
        yield server


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[RedisCluster]:
    """Three primaries, no replicas: what a store's operations need of a cluster (its failovers are tested in
    test_redis_cluster.py)."""
    try:
        with RedisCluster(replicas=0) as cluster:
            yield cluster
    except RedisServerMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(params=["memory", "sqlite", "redis", "redis-cluster"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> MakeStore:
    if request.param == "memory":
        return MemoryStore
    if request.param == "sqlite":
        return lambda **bounds: SQLiteStore(tmp_path / "conversations.db", **bounds)
    url = (request.getfixturevalue("redis_server") if request.param == "redis"
           else request.getfixturevalue("redis_cluster")).url
    prefix = f"test:{uuid.uuid4().hex}:"
    return lambda **bounds: RedisStore(url, prefix=prefix, **bounds)


async def _closing(store: ConversationStore, body: Callable[[ConversationStore], Awaitable[Any]]) -> None:
    try:
        await body(store)
    finally:
        await store.close()


def test_round_trip(make_store: MakeStore) -> None:
    async def body(store: ConversationStore) -> None:
        assert await store.get("thread-1") is None
        await store.put("thread-1", b"first")
        assert await store.get("thread-1") == b"first"
        await store.put("thread-1", b"second")
        assert await store.get("thread-1") == b"second"
        await store.put("thread-2", b"other")
        await store.delete("thread-1")
        assert await store.get("thread-1") is None
        assert await store.get("thread-2") == b"other"
        await store.delete("never-written")

    run(_closing(make_store(), body))


def test_values_are_opaque_bytes_and_keys_any_str(make_store: MakeStore) -> None:
    every_byte = bytes(range(256)) * 4
    keys = ["ünïcødé/🙂", "with space", "a:b:c", "index", ""]

    async def body(store: ConversationStore) -> None:
        for key in keys:
            await store.put(key, every_byte + key.encode())
        await store.put("empty", b"")
        for key in keys:
            assert await store.get(key) == every_byte + key.encode()
        assert await store.get("empty") == b""

    run(_closing(make_store(), body))


def test_ttl_expires_and_put_restarts_it(make_store: MakeStore) -> None:
    async def body(store: ConversationStore) -> None:
        await store.put("a", b"1")
        await store.put("b", b"1")
        await asyncio.sleep(0.15)
        await store.put("a", b"2")  # rewritten: a new TTL from now
        await asyncio.sleep(0.2)
        assert await store.get("b") is None
        assert await store.get("a") == b"2"
        await asyncio.sleep(0.2)
        assert await store.get("a") is None

    run(_closing(make_store(ttl=0.3), body))


def _skip_where_bounds_are_shared(request: pytest.FixtureRequest) -> None:
    if request.node.callspec.params.get("make_store") == "redis-cluster":
        pytest.skip("a cluster keeps each bound per shard, with a margin (test_a_cluster_keeps_its_bounds...)")


def test_evicts_the_least_recently_written(make_store: MakeStore, request: pytest.FixtureRequest) -> None:
    _skip_where_bounds_are_shared(request)

    async def body(store: ConversationStore) -> None:
        for key in "abc":
            await store.put(key, key.encode())
        await store.put("a", b"a2")  # written again: now the newest
        assert await store.get("b") == b"b"  # reading does not count
        await store.put("d", b"d")
        assert await store.get("b") is None
        assert [await store.get(k) for k in "acd"] == [b"a2", b"c", b"d"]
        await store.put("e", b"e")
        assert await store.get("c") is None
        assert [await store.get(k) for k in "ade"] == [b"a2", b"d", b"e"]

    run(_closing(make_store(max_entries=3), body))


def test_a_group_lists_newest_first_in_pages_that_never_repeat_or_skip(make_store: MakeStore) -> None:
    async def body(store: ConversationStore) -> None:
        for key in "abcdefg":
            await store.put(key, key.encode(), group="mine")
            await asyncio.sleep(0.002)  # distinct write times on every backend
        await store.put("other", b"x", group="theirs")
        await store.put("c", b"c2", group="mine")  # written again: now the newest
        await store.delete("e")
        seen: list[tuple[str, bytes]] = []
        after = None
        while page := await store.newest("mine", after, 2):
            seen += [(item.key, item.value) for item in page]
            after = page[-1].cursor
        assert seen == [("c", b"c2"), ("g", b"g"), ("f", b"f"), ("d", b"d"), ("b", b"b"), ("a", b"a")]
        assert await store.newest("nobody", None, 5) == []
        assert [item.key for item in await store.newest("mine", "not a cursor", 1)] == ["c"]

    run(_closing(make_store(), body))


def test_a_group_listing_leaves_out_what_expired(make_store: MakeStore) -> None:
    async def body(store: ConversationStore) -> None:
        await store.put("old", b"1", group="g")
        await asyncio.sleep(0.35)
        await store.put("new", b"2", group="g")
        assert [item.key for item in await store.newest("g", None, 10)] == ["new"]

    run(_closing(make_store(ttl=0.3), body))


def test_a_group_over_its_quota_evicts_its_own_oldest_and_nobody_elses(make_store: MakeStore,
                                                                        request: pytest.FixtureRequest) -> None:
    _skip_where_bounds_are_shared(request)

    async def body(store: ConversationStore) -> None:
        await store.put("kept", b"k", group="protected")
        for index in range(6):
            await store.put(f"anon-{index}", b"a", group="anonymous")
        assert await store.get("kept") == b"k"
        assert [await store.get(f"anon-{index}") for index in range(6)] == [None, None, None, b"a", b"a", b"a"]
        await store.put("anon-3", b"again", group="anonymous")  # written again: its group's newest
        await store.put("anon-6", b"a", group="anonymous")
        assert await store.get("anon-4") is None and await store.get("anon-3") == b"again"
        assert await store.get("kept") == b"k"

    run(_closing(make_store(max_entries=10, max_per_group=3), body))


def test_expired_entries_do_not_count_against_the_limit(make_store: MakeStore) -> None:
    async def body(store: ConversationStore) -> None:
        await store.put("a", b"a")
        await store.put("b", b"b")
        await asyncio.sleep(0.25)
        await store.put("c", b"c")
        await store.put("d", b"d")
        assert [await store.get(k) for k in "cd"] == [b"c", b"d"]

    run(_closing(make_store(ttl=0.2, max_entries=2), body))


def test_oversize_value_raises_and_keeps_the_old_one(make_store: MakeStore) -> None:
    async def body(store: ConversationStore) -> None:
        await store.put("k", b"x" * 10)
        with pytest.raises(StoreError, match="11 bytes"):
            await store.put("k", b"x" * 11)
        assert await store.get("k") == b"x" * 10

    run(_closing(make_store(max_value_bytes=10), body))


def test_1000_concurrent_callers_all_succeed(make_store: MakeStore) -> None:
    """More callers at once than any backend keeps connections for (redis-py's pool refuses its 101st by
    default): they wait their turn, none fails."""
    async def body(store: ConversationStore) -> None:
        await asyncio.gather(*(store.put(f"k{i}", str(i).encode()) for i in range(1000)))
        values = await asyncio.gather(*(store.get(f"k{i}") for i in range(1000)))
        assert values == [str(i).encode() for i in range(1000)]

    run(_closing(make_store(), body))


def test_ping_and_closed_store(make_store: MakeStore) -> None:
    async def body() -> None:
        store = make_store()
        assert await store.ping() is True
        await store.close()
        await store.close()  # twice is fine
        assert await store.ping() is False
        with pytest.raises(StoreError):
            await store.get("k")
        with pytest.raises(StoreError):
            await store.put("k", b"v")

    run(body())


@pytest.mark.parametrize("setting", ["ttl", "max_entries", "max_value_bytes"])
def test_rejects_unbounded_settings(setting: str) -> None:
    bounds: dict[str, Any] = {"ttl": 60, "max_entries": 10, "max_value_bytes": 10, setting: 0}
    with pytest.raises(ValueError, match=setting):
        open_store("memory://", **bounds)


# SQLite


def test_sqlite_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "conversations.db"  # parents are created

    async def first_life() -> None:
        store = SQLiteStore(path, max_entries=2)
        await store.put("a", b"1")
        await store.put("b", b"2")
        await store.put("c", b"3")
        await store.close()

    async def second_life() -> None:
        store = SQLiteStore(path, max_entries=2)
        assert [await store.get(k) for k in "abc"] == [None, b"2", b"3"]
        await store.put("d", b"4")  # the row count was read back: still bounded
        assert await store.get("b") is None
        await store.close()

    run(first_life())
    run(second_life())
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT key FROM conversations ORDER BY key").fetchall() == [("c",), ("d",)]
    conn.close()


def test_sqlite_purges_expired_rows_on_put(tmp_path: Path) -> None:
    path = tmp_path / "conversations.db"

    async def body() -> None:
        store = SQLiteStore(path, ttl=0.1)
        await store.put("old", b"1")
        await asyncio.sleep(0.15)
        await store.put("new", b"2")
        await store.close()

    run(body())
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT key FROM conversations").fetchall() == [("new",)]
    conn.close()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_sqlite_files_are_made_readable_by_their_owner_only_and_so_is_a_folder_the_store_makes(
        tmp_path: Path) -> None:
    made, existing = tmp_path / "made" / "store", tmp_path / "existing"
    existing.mkdir()
    existing.chmod(0o750)  # the operator's: left as it is
    umask = os.umask(0o022)
    try:
        with Served(create_agent_app("ag-ui")) as agent:
            for folder in (made, existing):
                config = GatewayConfig.model_validate({"store": {"url": f"sqlite:///{folder}/conversations.db"},
                                                       "routes": [{"paths": ["/agui"], "upstream": {
                                                           "url": agent.url + "/agui", "dialect": "ag-ui"}}]})
                with Served(create_app(config)) as gateway:
                    answered = httpx.post(f"{gateway.url}/agui", json={
                        "threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": "hi"}]})
                    assert answered.status_code == 200
                    files = [folder / f"conversations.db{end}" for end in ("", "-wal", "-shm")]
                    assert {path.name: _mode(path) for path in files} == {path.name: 0o600 for path in files}
    finally:
        os.umask(umask)
    assert _mode(made) == 0o700 and _mode(existing) == 0o750


def test_sqlite_file_that_cannot_be_opened(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StoreError, match="cannot open"):
        SQLiteStore(tmp_path / "file" / "conversations.db")


# Redis


def test_redis_replicas_share_conversations(redis_server: RedisServer) -> None:
    prefix = f"test:{uuid.uuid4().hex}:"

    async def body() -> None:
        one = RedisStore(redis_server.url, max_entries=2, prefix=prefix)
        two = RedisStore(redis_server.url, max_entries=2, prefix=prefix)
        try:
            await one.put("x", b"from one")
            assert await two.get("x") == b"from one"
            await two.put("x", b"from two")
            assert await one.get("x") == b"from two"
            await two.put("y", b"y")
            await one.put("z", b"z")  # one index for both: x, written longest ago, goes
            assert await two.get("x") is None
            await one.delete("y")
            assert await two.get("y") is None
        finally:
            await one.close()
            await two.close()

    run(body())


def test_a_cluster_keeps_its_bounds_per_shard_so_the_newest_stay_and_the_whole_stays_near_the_bound(
        redis_cluster: RedisCluster) -> None:
    bound, written = 256, 2000
    per_shard = shared_bound(bound, CLUSTER_SHARDS)

    async def body() -> None:
        store = RedisStore(redis_cluster.url, prefix=f"test:{uuid.uuid4().hex}:", max_entries=bound)
        try:
            for n in range(written):
                await store.put(f"conversation-{n}", b"x", group="g")
            kept = await store.newest("g", None, written)
            assert {listed.key for listed in kept} >= {f"conversation-{n}" for n in range(written - bound, written)}
            assert bound <= len(kept) <= per_shard * CLUSTER_SHARDS
        finally:
            await store.close()

    run(body())
    assert per_shard * CLUSTER_SHARDS < 3 * bound


def test_a_shards_share_of_a_bound_is_the_bound_on_one_server_and_a_margin_over_an_even_share_on_a_cluster() -> None:
    assert shared_bound(100_000, 1) == 100_000
    assert 100_000 / 64 < shared_bound(100_000, 64) < 1.1 * 100_000 / 64
    assert shared_bound(3, 64) <= 3


def test_a_cluster_spreads_conversations_over_its_primaries(redis_cluster: RedisCluster) -> None:
    async def body() -> None:
        store = RedisStore(redis_cluster.url, prefix=f"test:{uuid.uuid4().hex}:")
        try:
            for n in range(200):
                await store.put(f"conversation-{n}", b"x")
        finally:
            await store.close()
        for port in redis_cluster.primary_ports():
            raw = aioredis.Redis(host="127.0.0.1", port=port)
            try:
                assert await raw.dbsize() > 0
            finally:
                await raw.aclose()

    run(body())


def test_redis_index_forgets_expired_keys(redis_server: RedisServer) -> None:
    prefix = f"test:{uuid.uuid4().hex}:"

    async def body() -> None:
        store = RedisStore(redis_server.url, ttl=0.1, prefix=prefix)
        raw = aioredis.Redis.from_url(redis_server.url)
        try:
            await store.put("a", b"1")
            await store.put("b", b"1")
            await asyncio.sleep(0.15)
            await store.put("c", b"1")
            assert await raw.zrange(f"{prefix}index", 0, -1) == [f"{prefix}v:c".encode()]
        finally:
            await store.close()
            await raw.aclose()

    run(body())


def test_redis_outage_and_recovery() -> None:
    with running_redis(password="s3cret") as server:

        async def body() -> None:
            store = RedisStore(server.url, timeout=1.0)
            try:
                await store.put("k", b"before")
                server.restart()  # the pooled connection died with the server: retried on a new one, not an error
                assert await store.get("k") is None
                await store.put("k", b"before")
                server.stop()
                assert await store.ping() is False
                for attempt in (store.get("k"), store.put("k", b"during"), store.delete("k")):
                    with pytest.raises(StoreError, match="unreachable") as caught:
                        await attempt
                    assert f"127.0.0.1:{server.port}" in str(caught.value)
                    assert "s3cret" not in str(caught.value)
                server.start()  # same port; no persistence, so the old data is gone
                assert await store.get("k") is None
                await store.put("k", b"after")  # the put script is loaded again
                assert await store.get("k") == b"after"
                assert await store.ping() is True
            finally:
                await store.close()

        run(body())


def test_redis_wrong_password_is_a_store_error() -> None:
    with running_redis(password="right") as server:

        async def body() -> None:
            store = RedisStore(server.url.replace(":right@", ":wrong@"))
            try:
                with pytest.raises(StoreError) as caught:
                    await store.get("k")
                assert "wrong" not in str(caught.value)
                assert await store.ping() is False
            finally:
                await store.close()

        run(body())


# Picking a backend


def test_open_store_picks_the_backend_from_the_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    bounds: dict[str, Any] = {"ttl": 60, "max_entries": 10, "max_value_bytes": 1000}

    async def body() -> None:
        stores = [
            open_store("memory://", **bounds),
            open_store("sqlite:///rel/conv.db", **bounds),
            open_store(f"sqlite:///{tmp_path}/abs.db", **bounds),  # tmp_path is absolute: four slashes
            open_store("sqlite:///:memory:", **bounds),
            open_store("redis://127.0.0.1:1/0", **bounds),
            open_store("rediss://user:pw@127.0.0.1:1/2", **bounds),
        ]
        try:
            kinds = [MemoryStore, SQLiteStore, SQLiteStore, SQLiteStore, RedisStore, RedisStore]
            assert [type(s) for s in stores] == kinds
            paths = [s.path for s in stores if isinstance(s, SQLiteStore)]
            assert paths == ["rel/conv.db", f"{tmp_path}/abs.db", ":memory:"]
            for store in stores[:4]:
                await store.put("k", b"v")
                assert await store.get("k") == b"v"
        finally:
            for store in stores:
                await store.close()

    run(body())
    assert (tmp_path / "rel" / "conv.db").exists()
    assert (tmp_path / "abs.db").exists()


@pytest.mark.parametrize("url", ["postgres://db/x", "", "memory", "sqlite:relative.db"])
def test_open_store_rejects_other_urls(url: str) -> None:
    with pytest.raises(ValueError, match=r"memory://.*sqlite:///.*redis://"):
        open_store(url, ttl=60, max_entries=10, max_value_bytes=10)


def without_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the `redis` extra were not installed: every redis module, imported or not, fails to import."""
    for name in [name for name in sys.modules if name == "redis" or name.startswith("redis.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "redis", None)


@pytest.mark.parametrize("url", ["redis://127.0.0.1:1/0", "rediss://user:pw@127.0.0.1:1/2"])
def test_a_redis_store_without_the_redis_package_says_how_to_install_it(url: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    without_redis(monkeypatch)
    with pytest.raises(StoreError) as raised:
        open_store(url)
    assert str(raised.value) == "the redis store needs the redis package: pip install 'agent-gateway[redis]'"
    run(open_store("sqlite:///:memory:").close())  # the other backends need nothing more


def test_serve_without_the_redis_package_fails_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    without_redis(monkeypatch)
    config = tmp_path / "gateway.yaml"
    config.write_text("routes:\n  - upstream: {url: 'http://127.0.0.1:9/agui', dialect: ag-ui}\n"
                      "store:\n  url: redis://127.0.0.1:6379/0\n")
    needs = "the redis store needs the redis package: pip install 'agent-gateway[redis]'"
    assert main(["serve", "--config", str(config), "--log-format", "human"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith(f"ERROR   {config}:4: store.url: {needs}\n"), err
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--check", "--upstream", "http://127.0.0.1:9/agui", "--upstream-dialect", "ag-ui",
              "--store", "redis://127.0.0.1:6379/0"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"agent-gateway serve: --store: {needs} (see agent-gateway serve --help)\n"


def test_redact_url() -> None:
    assert redact_url("redis://user:pw@host:6380/1") == "redis://user@host:6380/1"
    assert redact_url("rediss://:pw@host/0?password=pw") == "rediss://host/0"
    assert redact_url("redis://host:6379/0") == "redis://host:6379/0"
