"""Ejection shared by the replicas over the Redis their store shares (`SharedEjection`), beside each process's own
(`Ejection`): three keys per upstream of a route with fallbacks, each expiring.

```
agw:eject:{route:upstream}:f   its failures in a row, on any replica (expires after eject_for)
agw:eject:{route:upstream}:e   set while it is ejected (expires after eject_for)
agw:eject:{route:upstream}:t   set by the one replica whose run tries it again once its ejection is over
```

The braces are a hash tag: on a Redis Cluster an upstream's three keys are in one slot, for one `DEL` of them all.

A replica writes a failure as it happens, and reads every upstream's ejection at most once a `LOOK_SECONDS` per
route, before a run. Redis failing leaves each replica its own ejection: logged, never a run's failure.
"""

from __future__ import annotations

import logging
import time

from gateway.conversations.store import SharedRedis, StoreError

log = logging.getLogger("agent_gateway.proxy")

LOOK_SECONDS = 1.0
"""How long a replica goes on what it last read of the others' ejections before it reads again."""
PREFIX = "agw:eject:"


class SharedEjection:
    """One route's upstreams' failures and ejections, as every replica sees them."""

    def __init__(self, redis: SharedRedis, route: str, after: int, seconds: float) -> None:
        self._redis = redis
        self._route = route
        self._after = after
        self._ms = max(1, round(seconds * 1000))
        self._looked_at = -LOOK_SECONDS

    def _key(self, name: str, which: str) -> str:
        return f"{PREFIX}{{{self._route}:{name}}}:{which}"

    async def failed(self, name: str) -> bool:
        """Count a failure of the upstream: whether it is ejected now (it has failed `after` runs in a row)."""
        failures, ejected = self._key(name, "f"), self._key(name, "e")
        try:
            with self._redis.errors():
                async with self._redis.client.pipeline(transaction=False) as pipe:
                    pipe.incr(failures)
                    pipe.pexpire(failures, self._ms)
                    count, _ = await pipe.execute()
                if int(count) < self._after:
                    return False
                async with self._redis.client.pipeline(transaction=False) as pipe:
                    pipe.set(ejected, "1", px=self._ms)
                    pipe.delete(failures, self._key(name, "t"))
                    await pipe.execute()
                return True
        except StoreError as exc:
            log.warning("a failure of upstream %s was not shared with the other replicas: %s", name, exc)
            return False

    async def may_try(self, name: str) -> bool:
        """Whether this replica's run is the one that tries the upstream again after its ejection: the first to ask
        is, for `eject_for` seconds (or until that run ends). Redis failing: each replica decides for itself."""
        try:
            with self._redis.errors():
                return bool(await self._redis.client.set(self._key(name, "t"), "1", nx=True, px=self._ms))
        except StoreError as exc:
            log.warning("whether another replica tries upstream %s again could not be read: %s", name, exc)
            return True

    async def succeeded(self, name: str) -> None:
        """The upstream answered: its failures in a row, and its ejection, are over on every replica."""
        try:
            with self._redis.errors():
                await self._redis.client.delete(self._key(name, "f"), self._key(name, "e"),
                                                self._key(name, "t"))
        except StoreError as exc:
            log.warning("upstream %s answering again was not shared with the other replicas: %s", name, exc)

    async def look(self, names: list[str]) -> tuple[dict[str, float], set[str]] | None:
        """Seconds each ejected upstream has left, and the upstreams failing, as the replicas share them; None when
        it is not time to look again (or Redis did not answer)."""
        now = time.monotonic()
        if now - self._looked_at < LOOK_SECONDS:
            return None
        self._looked_at = now
        try:
            with self._redis.errors():
                async with self._redis.client.pipeline(transaction=False) as pipe:
                    for name in names:
                        pipe.pttl(self._key(name, "e"))
                        pipe.exists(self._key(name, "f"))
                    replies = await pipe.execute()
        except StoreError as exc:
            log.warning("the replicas' ejected upstreams could not be read: %s", exc)
            return None
        left, failing = replies[0::2], replies[1::2]
        return ({name: int(ms) / 1000 for name, ms in zip(names, left, strict=True) if int(ms) > 0},
                {name for name, found in zip(names, failing, strict=True) if found})
