"""Which run board a store calls for: every replica's, over the Redis a store the replicas share offers
(`RedisRunBoard`), else this process's (`RunBoard`)."""

from __future__ import annotations

from gateway.conversations.store import ConversationStore
from gateway.runs.board import KeptLimits, RunBoard
from gateway.runs.redis import RedisRunBoard


def open_board(store: ConversationStore, limits: KeptLimits) -> RunBoard:
    """Where resumable runs are known: every replica's when the store is shared, else this process's."""
    shared = store.shared_redis()
    return RunBoard(limits) if shared is None else RedisRunBoard(shared, limits)
