"""Token usage added up over a run: a run may report usage more than once (a step at a time), and the counts add
up. How a dialect names the counts is the dialect's (OpenAI's names: `adapters/openai_common/usage.py`)."""

from __future__ import annotations

from gateway.core.events import Usage

_COUNTS = ("input_tokens", "output_tokens", "total_tokens", "reasoning_tokens", "cached_input_tokens",
           "cache_write_input_tokens")


class UsageTotals:
    """The counts of a run's `Usage` events added up, with the last model and provider that said."""

    __slots__ = ("counts", "model", "provider")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.model: str | None = None
        self.provider: str | None = None

    def add(self, e: Usage) -> None:
        counts = self.counts
        for name in _COUNTS:
            value = getattr(e, name)
            if isinstance(value, int) and not isinstance(value, bool):
                counts[name] = counts.get(name, 0) + value
        self.model = e.model or self.model
        self.provider = e.provider or self.provider
