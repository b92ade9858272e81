"""The records of runs their clients ask about (see `gateway.core.queries`), kept in the conversation store: one
per run, under a key of its route, its caller and its id, in a store group of the caller's runs on the route, so
that one caller's runs can be listed and never reach another's."""

from __future__ import annotations

import logging

from pydantic import TypeAdapter, ValidationError

from gateway.conversations.store import ConversationStore, scoped_key
from gateway.core.queries import RunRecord

log = logging.getLogger("agent_gateway.runs")

_RECORD = TypeAdapter(RunRecord)


class RunRecords:
    def __init__(self, store: ConversationStore) -> None:
        self.store = store

    async def save(self, route: str, principal: str, record: RunRecord) -> None:
        """Keep the record (raises `StoreError`)."""
        stored = RunRecord(record.run_id, record.conversation_id, record.status, record.document, record.requests)
        await self.store.put(_key(route, principal, record.run_id), _RECORD.dump_json(stored),
                             _group(route, principal))

    async def load(self, route: str, principal: str, run_id: str) -> RunRecord | None:
        """The caller's run of that id on the route (raises `StoreError`); None if there is none, or it cannot be
        read."""
        raw = await self.store.get(_key(route, principal, run_id))
        if raw is None:
            return None
        try:
            return _RECORD.validate_json(raw)
        except ValidationError as exc:
            log.warning("run %s unreadable: %s", run_id, exc)
            return None

    async def delete(self, route: str, principal: str, run_id: str) -> None:
        """Forget the caller's run of that id on the route (raises `StoreError`)."""
        await self.store.delete(_key(route, principal, run_id))

    async def newest(self, route: str, principal: str, after: str | None, limit: int) -> list[RunRecord]:
        """The caller's runs on the route, most recently changed first (raises `StoreError`)."""
        found: list[RunRecord] = []
        for item in await self.store.newest(_group(route, principal), after, limit):
            try:
                record = _RECORD.validate_json(item.value)
            except ValidationError:
                continue
            record.cursor = item.cursor
            found.append(record)
        return found


def _key(route: str, principal: str, run_id: str) -> str:
    return scoped_key("run", route, principal, run_id)


def _group(route: str, principal: str) -> str:
    return scoped_key("runs", route, principal)

