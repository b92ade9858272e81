"""The webhooks clients register for their runs' updates (`gateway.core.queries.Webhooks`): kept in the store per
run, under a key of the route, the caller and the run, so that any replica reads them and no caller reaches
another's. Only hosts the route allows are taken, and at most so many per run."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from pydantic import TypeAdapter, ValidationError

from gateway.conversations.store import ConversationStore, scoped_key
from gateway.core.errors import InvalidRequest
from gateway.core.queries import Webhook

_WEBHOOKS = TypeAdapter(list[Webhook])


class RouteWebhooks:
    def __init__(self, route: str, store: ConversationStore, *, allows: Callable[[str], bool],
                 max_webhooks: int) -> None:
        self.route = route
        self.store = store
        self.allows = allows
        """Whether a webhook may be on a host."""
        self.max_webhooks = max_webhooks

    def caller(self, principal: str) -> CallerWebhooks:
        return CallerWebhooks(self, principal)

    def check(self, url: str) -> None:
        """Refuse a webhook the route would not call (raises `InvalidRequest`)."""
        try:
            parts = urlsplit(url)
            host = parts.hostname or ""
        except ValueError:
            host, parts = "", urlsplit("")
        if parts.scheme not in ("http", "https") or not host:
            raise InvalidRequest(f"a webhook is an http or https URL, not {url[:200]!r}")
        if not self.allows(host):
            raise InvalidRequest(f"this agent sends no notifications to {host[:200]}: its operator lists the hosts "
                                 "it calls")


class CallerWebhooks:
    """One caller's runs' webhooks (`gateway.core.queries.Webhooks`; raises `StoreError`)."""

    def __init__(self, webhooks: RouteWebhooks, principal: str) -> None:
        self._webhooks = webhooks
        self._principal = principal

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
