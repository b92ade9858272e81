"""The webhooks clients register for their runs' updates (`gateway.core.queries.Webhooks`): kept in the store per
run, under a key of the route, the caller and the run, so that any replica reads them and no caller reaches
another's. Only hosts and ports the route allows are taken, and at most so many per run."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import urlsplit

from pydantic import TypeAdapter, ValidationError

from gateway.conversations.store import ConversationStore, scoped_key
from gateway.core.errors import InvalidRequest
from gateway.core.queries import Webhook

_WEBHOOKS = TypeAdapter(list[Webhook])
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Origin(NamedTuple):
    """Where a webhook is: what the route allows, and what hangs when a webhook does."""

    scheme: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def origin_of(url: str) -> Origin | None:
    """A webhook URL's origin, its port the scheme's own when it names none; None for what is no http or https
    URL with a host."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:  # a port that is no number, or past 65535
        return None
    if parts.scheme not in _DEFAULT_PORTS or not host:
        return None
    return Origin(parts.scheme, host, port or _DEFAULT_PORTS[parts.scheme])


class RouteWebhooks:
    def __init__(self, route: str, store: ConversationStore, *, allows: Callable[[str, int], bool],
                 max_webhooks: int) -> None:
        self.route = route
        self.store = store
        self.allows = allows
        """Whether a webhook may be on a host, at a port."""
        self.max_webhooks = max_webhooks

    def caller(self, principal: str) -> CallerWebhooks:
        return CallerWebhooks(self, principal)

    def check(self, url: str) -> None:
        """Refuse a webhook the route would not call (raises `InvalidRequest`)."""
        origin = origin_of(url)
        if origin is None:
            raise InvalidRequest(f"a webhook is an http or https URL, not {url[:200]!r}")
        if not self.allows(origin.host, origin.port):
            raise InvalidRequest(f"this agent sends no notifications to {str(origin)[:200]}: its operator lists the "
                                 "hosts and ports it calls")


class CallerWebhooks:
    """One caller's runs' webhooks (`gateway.core.queries.Webhooks`; raises `StoreError`)."""

    def __init__(self, webhooks: RouteWebhooks, principal: str) -> None:
        self._webhooks = webhooks
        self._principal = principal

    @property
    def principal(self) -> str:
        """Whose webhooks these are: whose share of the process's deliveries they take."""
        return self._principal

    async def add(self, run_id: str, webhook: Webhook) -> None:
        self._webhooks.check(webhook.url)
        found = [w for w in await self.all(run_id) if w.id != webhook.id]
        if len(found) >= self._webhooks.max_webhooks:
            raise InvalidRequest(f"a task has at most {self._webhooks.max_webhooks} push notification configs: "
                                 "delete one first")
        await self._save(run_id, [*found, webhook])

    async def get(self, run_id: str, webhook_id: str) -> Webhook | None:
        return next((w for w in await self.all(run_id) if w.id == webhook_id), None)

    async def all(self, run_id: str) -> list[Webhook]:
        raw = await self._webhooks.store.get(self._key(run_id))
        if raw is None:
            return []
        try:
            return _WEBHOOKS.validate_json(raw)
        except ValidationError:
            return []

    async def delete(self, run_id: str, webhook_id: str) -> bool:
        found = await self.all(run_id)
        kept = [w for w in found if w.id != webhook_id]
        if len(kept) == len(found):
            return False
        await self._save(run_id, kept)
        return True

    async def _save(self, run_id: str, webhooks: list[Webhook]) -> None:
        store = self._webhooks.store
        if webhooks:
            await store.put(self._key(run_id), _WEBHOOKS.dump_json(webhooks),
                            scoped_key("webhooks", self._webhooks.route, self._principal))
        else:
            await store.delete(self._key(run_id))

    def _key(self, run_id: str) -> str:
        return scoped_key("webhook", self._webhooks.route, self._principal, run_id)
