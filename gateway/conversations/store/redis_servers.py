"""What a Redis store's URL names, and the clients that reach it: one server, the primary that sentinels name, or a
cluster.

```
redis://[user:password@]host:6379/0                     one server (rediss://: over TLS)
redis+sentinel://[user:password@]h1:26379,h2:26379/mymaster/0
                                                        the primary of `mymaster`, found through the sentinels
                                                        (rediss+sentinel://: primary and sentinels over TLS)
redis+cluster://[user:password@]h1:7000,h2:7001         a Redis Cluster, learnt from any of these nodes
                                                        (rediss+cluster://: over TLS)
```

Behind sentinels every command goes to the primary, so a request always reads what it wrote: each new connection
asks the sentinels where the primary is, and a failover is followed without a restart. An old primary that is still
up takes writes until the sentinels reconfigure it, seconds later, and those writes would be lost as it becomes a
replica: so each process listens to a sentinel for `+switch-master` (`follow`) and drops every connection the
moment one is announced. A write that still reaches a replica is refused `READONLY`, which redis-py takes as a
failover too: either way the connection comes back through the sentinels, to the new primary. A connection held for
long (a subscription) is moved by its holder, told of the switch (`on_switch`).

The user and password in the URL are the primary's; the sentinels' own, if they need any, are the query's
`sentinel_username` and `sentinel_password`. Other query options are redis-py's, as in a `redis://` URL.

A cluster's client learns the slots' primaries from the nodes named, follows a slot that moves (MOVED, ASK) and a
primary that fails over, and sends each command to its slot's primary, never a replica. Whoever uses it keeps the
keys that one operation touches in one slot (a hash tag: `agw:run:{key}:m`, `agw:run:{key}:s`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit

SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
SENTINEL_PORT = 26379
REDIS_PORT = 6379
Kind = Literal["single", "sentinel", "cluster"]
_SENTINEL_OPTIONS = ("sentinel_username", "sentinel_password")
"""Query options that are the sentinels' credentials, not the primary's."""


@dataclass(frozen=True, slots=True)
class Reach:
    """What `/readyz` and `serve --check` say of a Redis store: the kind of Redis found, the address of the server
    it writes to, and whether that answers."""

    kind: Kind
    primary: str | None
    """host:port (a cluster's primaries: host:port, host:port, ...); None when no sentinel names a primary, or no
    node of the cluster answers."""
    reachable: bool
    """Whether it answers (for a cluster: every primary)."""

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "primary": self.primary, "reachable": self.reachable}

    def line(self) -> str:
        return f"{self.kind}, {'primaries' if self.kind == 'cluster' else 'primary'} {self.primary or 'unknown'}"


@dataclass(frozen=True, slots=True)
class SentinelURL:
    """A `redis+sentinel://` URL, read: where the sentinels are, which primary they name, and how to connect to
    each."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    primary_options: dict[str, Any]
    """redis-py's connection options for the primary (credentials, db, TLS, the query's options)."""
    sentinel_options: dict[str, Any]
    """For the sentinels: TLS as the primary's, and their own credentials."""


def sentinel_url(url: str) -> SentinelURL:
    """A sentinel URL read, or a `ValueError` saying what is wrong with it (said as the configuration loads)."""
    from redis.asyncio.connection import parse_url

    parts = urlsplit(url)
    tls = parts.scheme.lower() == "rediss+sentinel"
    userinfo, at, hosts = parts.netloc.rpartition("@")
    sentinels = tuple(_host_port(host) for host in hosts.split(",") if host.strip())
    if not sentinels:
        raise ValueError("a sentinel URL names its sentinels: redis+sentinel://host1:26379,host2:26379/mymaster/0")
    service, _, db = parts.path.strip("/").partition("/")
    if not service:
        raise ValueError("a sentinel URL names the primary the sentinels watch: redis+sentinel://host:26379/mymaster/0")
    if db and not db.isdigit():
        raise ValueError(f"the database after the primary's name is a number, not {db!r}")
    query = parse_qsl(parts.query)
    own = {name: value for name, value in query if name in _SENTINEL_OPTIONS}
    rest = urlencode([(name, value) for name, value in query if name not in _SENTINEL_OPTIONS])
    options: dict[str, Any] = dict(parse_url(f"redis://{userinfo}{at}localhost/{db or 0}?{rest}"))
    options.pop("host", None)
    options.pop("port", None)
    tls_options = {name: value for name, value in options.items() if name.startswith("ssl_")}
    if tls:
        options["ssl"] = True
    sentinel_options: dict[str, Any] = {**tls_options, "ssl": True} if tls else {}
    sentinel_options.update({name.removeprefix("sentinel_"): value for name, value in own.items()})
    return SentinelURL(sentinels, service, options, sentinel_options)


@dataclass(frozen=True, slots=True)
class ClusterURL:
    """A `redis+cluster://` URL, read: the nodes to learn the cluster from, and how to connect to each node."""

    nodes: tuple[tuple[str, int], ...]
    options: dict[str, Any]


def cluster_url(url: str) -> ClusterURL:
    """A cluster URL read, or a `ValueError` saying what is wrong with it (said as the configuration loads)."""
    from redis.asyncio.connection import parse_url

    parts = urlsplit(url)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    nodes = tuple(_host_port(host, REDIS_PORT, "a cluster node's") for host in hosts.split(",") if host.strip())
    if not nodes:
        raise ValueError("a cluster URL names at least one of its nodes: redis+cluster://host1:7000,host2:7001")
    if parts.path.strip("/") not in ("", "0"):
        raise ValueError(f"a Redis Cluster has only database 0, not {parts.path.strip('/')!r}")
    options: dict[str, Any] = dict(parse_url(f"redis://{userinfo}{at}localhost/0?{parts.query}"))
    for name in ("host", "port", "db"):
        options.pop(name, None)
    if parts.scheme.lower() == "rediss+cluster":
        options["ssl"] = True
    return ClusterURL(nodes, options)


def _host_port(text: str, default_port: int = SENTINEL_PORT, what: str = "a sentinel's") -> tuple[str, int]:
    host, port = text.strip(), ""
    if host.startswith("["):
        host, _, port = host[1:].partition("]")
        port = port.removeprefix(":")
    elif host.count(":") == 1:
        host, _, port = host.partition(":")
    if not host or (port and not port.isdigit()):
        raise ValueError(f"{text!r} is not {what} host:port")
    return host, int(port) if port else default_port


def replicas_to_wait_for(url: str) -> tuple[str, int]:
    """The URL without its `wait_replicas` option, and that option: how many replicas must acknowledge a
    conversation's write (`WAIT`) before it counts as saved, so that a failover cannot lose it (0: none). A
    `ValueError` for one that is not a count."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    said = [value for name, value in query if name == "wait_replicas"]
    if not said:
        return url, 0
    if not said[-1].isdigit():
        raise ValueError(f"wait_replicas is a number of replicas, not {said[-1]!r}")
    rest = urlencode([(name, value) for name, value in query if name != "wait_replicas"])
    return parts._replace(query=rest).geturl(), int(said[-1])


def kind_of(url: str) -> Kind:
    scheme = url.partition("://")[0].lower()
    return "sentinel" if scheme in SENTINEL_SCHEMES else "cluster" if scheme in CLUSTER_SCHEMES else "single"


class RedisServers:
    """The Redis a store's URL names: the clients that reach it, and what is found of it (`reach`). Closing it
    closes what it opened to find the primary; each client is closed by whoever holds it."""

    def __init__(self, url: str, timeout: float) -> None:
        self._url = url
        self._timeout = timeout
        self.kind = kind_of(url)
        self._sentinel: Any = None
        self._service = ""
        self._clients: list[Any] = []
        self._following: asyncio.Task[None] | None = None
        self._switched: list[Callable[[], None]] = []
        if self.kind == "sentinel":
            from redis.asyncio.sentinel import Sentinel

            found = sentinel_url(url)
            self._service = found.service
            self._sentinel = Sentinel(found.sentinels, sentinel_kwargs={  # type: ignore[no-untyped-call]
                "socket_timeout": timeout, "socket_connect_timeout": timeout, **found.sentinel_options},
                **found.primary_options)

    def client(self, *, blocking_pool: bool, **options: Any) -> Any:
        """A client of the primary with these redis-py options (the URL's query wins over them). `blocking_pool`:
        a caller past `max_connections` waits up to `timeout` for one, instead of failing at once."""
        import redis.asyncio as aioredis

        if self.kind == "cluster":
            return _cluster_client(self._url, **options)
        if self._sentinel is None:
            if not blocking_pool:
                return aioredis.Redis.from_url(self._url, **options)
            return aioredis.Redis.from_pool(aioredis.BlockingConnectionPool.from_url(self._url, **options))
        from redis.asyncio.sentinel import SentinelConnectionPool

        pool_class = _blocking_sentinel_pool() if blocking_pool else SentinelConnectionPool
        kept = {name: value for name, value in options.items() if name not in self._sentinel.connection_kwargs}
        client = self._sentinel.master_for(self._service, connection_pool_class=pool_class, **kept)
        self._clients.append(client)
        return client

    def follow(self) -> None:
        """Behind sentinels, start listening for failovers in this event loop, unless that is being done already;
        nothing for one server. Cheap enough to call before each command."""
        if self._sentinel is None:
            return
        following = self._following
        if following is not None and not following.done() and following.get_loop() is asyncio.get_running_loop():
            return
        self._following = asyncio.create_task(self._switches())

    async def _switches(self) -> None:
        """Listen to one sentinel after another for `+switch-master` of this primary; on one, leave the old
        primary (`_leave`)."""
        while True:
            for sentinel in list(self._sentinel.sentinels):
                pubsub = sentinel.pubsub(ignore_subscribe_messages=True)
                try:
                    await pubsub.subscribe("+switch-master")
                    while True:
                        message = await pubsub.get_message(timeout=self._timeout)
                        if message is not None and _text(message["data"]).split(" ")[0] == self._service:
                            await self._leave()
                except asyncio.CancelledError:
                    raise
                except Exception:  # this sentinel is gone: the next one
                    pass
                finally:
                    with contextlib.suppress(Exception):
                        await pubsub.aclose()
            await asyncio.sleep(self._timeout)

    def on_switch(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` (in the loop that follows the sentinels) each time they name a new primary: a connection
        held for long, as a subscription is, stays on the old one until its holder leaves it. Returns what forgets
        the callback."""
        self._switched.append(callback)

        def forget() -> None:
            with contextlib.suppress(ValueError):
                self._switched.remove(callback)

        return forget

    async def reach(self, client: Any) -> Reach:
        """Where the primary is and whether it answers `client`, within the store's timeout. Never raises."""
        primary: str | None = None
        try:
            async with asyncio.timeout(self._timeout * (1 if self._sentinel is None else 2)):  # + asking them
                if self.kind == "cluster":
                    nodes = client.get_primaries() or (await client.initialize()).get_primaries()
                    primary = ", ".join(sorted(node.name for node in nodes))
                    answers = await asyncio.gather(*(client.execute_command("PING", target_nodes=node)
                                                     for node in nodes))
                    return Reach(self.kind, primary, all(answers))
                if self._sentinel is None:
                    kwargs = client.connection_pool.connection_kwargs
                    primary = f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
                else:
                    host, port = await self._sentinel.discover_master(self._service)
                    primary = f"{host}:{port}"
                return Reach(self.kind, primary, bool(await client.ping()))
        except Exception:
            return Reach(self.kind, primary, False)

    async def _leave(self) -> None:
        """Close the idle connections now, and those in use as they come back to their pool: closing one under a
        command could break it midway (its next write fails on a closed transport, outside redis-py's retry)."""
        for client in self._clients:
            pool = client.connection_pool
            await pool.disconnect(inuse_connections=False)
            for connection in list(pool._in_use_connections):
                # Where redis-py has it; where not, a connection in use is closed by the sentinels as they
                # reconfigure the old primary, or leaves it on its first write there (READONLY).
                mark = getattr(connection, "mark_for_reconnect", None)
                if mark is not None:
                    mark()
        for switched in list(self._switched):
            switched()

    async def close(self) -> None:
        if self._following is not None:
            self._following.cancel()
            with contextlib.suppress(BaseException):
                await self._following
        if self._sentinel is not None:
            for sentinel in self._sentinel.sentinels:
                with contextlib.suppress(Exception):
                    await sentinel.aclose()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def add_script(pipe: Any, script: Any, keys: list[Any], args: list[Any]) -> None:
    """Add a registered script's run to a pipeline: by its hash, loaded first where Redis lacks it; on a cluster's
    pipeline (which loads none) as its text, for a node that fails over to a replica lacks what its primary had."""
    scripts = getattr(pipe, "scripts", None)
    if scripts is None:
        pipe.eval(script.script, len(keys), *keys, *args)
    else:
        scripts.add(script)
        pipe.evalsha(script.sha, len(keys), *keys, *args)


class ClusterTurns:
    """A cluster client's callers: at most `bound` at once, for the client has no pool that makes them wait; and
    each once the client knows the slots. A command asked before that is sent to no node in particular, and the
    MOVED answers that follow make the client close connections other commands are using."""

    def __init__(self, client: Any, bound: int) -> None:
        self._client = client
        self._turns = asyncio.Semaphore(bound)

    async def __aenter__(self) -> None:
        await self._turns.acquire()
        try:
            await self._client.initialize()
        except BaseException:
            self._turns.release()
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self._turns.release()


CLUSTER_MAX_CONNECTIONS = 512
"""Per node and client, in each process. A cluster client opens a connection per command in flight and refuses one
past its bound (it has no pool that waits), so the bound is set past what a process has in flight."""


def _cluster_client(url: str, **options: Any) -> Any:
    """A cluster client: its nodes from the URL, its options the caller's with the URL's query winning. A command
    on a connection that broke is retried by the cluster client itself, after it has relearnt the slots."""
    from redis.asyncio.cluster import ClusterNode, RedisCluster

    found = cluster_url(url)
    bound = max(options.pop("max_connections", 0), CLUSTER_MAX_CONNECTIONS)
    options.pop("timeout", None)  # a blocking pool's wait: the cluster client does not wait for connections
    merged = {"max_connections": bound, **options, **found.options}
    return RedisCluster(startup_nodes=[ClusterNode(host, port) for host, port in found.nodes], **merged)


@functools.cache
def _blocking_sentinel_pool() -> type:
    """A sentinel's pool that, like `BlockingConnectionPool`, makes a caller wait for a free connection (made on
    first use: redis is an optional import)."""
    from redis.asyncio import BlockingConnectionPool
    from redis.asyncio.sentinel import SentinelConnectionPool

    return type("BlockingSentinelConnectionPool", (SentinelConnectionPool, BlockingConnectionPool), {})
