"""Token usage as OpenAI's APIs name it: Chat Completions' names (`prompt_tokens`, `completion_tokens`, also the eval
contract's) or Responses' (`input_tokens`, `output_tokens`), each with the details beside a count: reasoning tokens
within the output (`completion_tokens_details`, `output_tokens_details`), cached tokens within the input
(`prompt_tokens_details`, `input_tokens_details`). The counts themselves are the core's (`UsageTotals`)."""

from __future__ import annotations

from typing import Any, Literal

from gateway.core import events as canonical
from gateway.core.usage import UsageTotals

Names = Literal["chat", "responses"]
"""Chat Completions' names, or Responses'."""

_NAMES: dict[str, tuple[str, str]] = {"chat": ("prompt_tokens", "completion_tokens"),
                                      "responses": ("input_tokens", "output_tokens")}


def usage_object(totals: UsageTotals, names: Names, whole: bool = False) -> dict[str, Any] | None:
    """The counts as OpenAI names them; None when no count came. `whole`: every count a schema requires, 0 for one
    that never came (Chat Completions' three, and Responses' details too: the `openai` SDKs require
    `cache_write_tokens` beside `cached_tokens`)."""
    counts = totals.counts
    if not counts and not whole:
        return None
    prompt, completion = _NAMES[names]
    usage: dict[str, Any] = {}
    for ours, theirs in (("input_tokens", prompt), ("output_tokens", completion)):
        if ours in counts or whole:
            usage[theirs] = counts.get(ours, 0)
    if "total_tokens" in counts:
        usage["total_tokens"] = counts["total_tokens"]
    elif whole:
        usage["total_tokens"] = usage[prompt] + usage[completion]
    cached = {theirs: counts[ours] for ours, theirs in (("cached_input_tokens", "cached_tokens"),
                                                        ("cache_write_input_tokens", "cache_write_tokens"))
              if ours in counts}
    if whole and names == "responses":
        cached.setdefault("cached_tokens", 0)
        cached.setdefault("cache_write_tokens", 0)
    if cached:
        usage[f"{prompt}_details"] = cached
    if "reasoning_tokens" in counts or (whole and names == "responses"):
        usage[f"{completion}_details"] = {"reasoning_tokens": counts.get("reasoning_tokens", 0)}
    return usage


def read_usage(usage: dict[str, Any], names: Names, model: str | None = None) -> canonical.Usage:
    """A `usage` object as OpenAI names it, its details included."""
    prompt, completion = _NAMES[names]
    input_details, output_details = usage.get(f"{prompt}_details"), usage.get(f"{completion}_details")
    input_details = input_details if isinstance(input_details, dict) else {}
    output_details = output_details if isinstance(output_details, dict) else {}
    return canonical.Usage(input_tokens=_int(usage.get(prompt)), output_tokens=_int(usage.get(completion)),
                           total_tokens=_int(usage.get("total_tokens")), model=model,
                           reasoning_tokens=_int(output_details.get("reasoning_tokens")),
                           cached_input_tokens=_int(input_details.get("cached_tokens")),
                           cache_write_input_tokens=_int(input_details.get("cache_write_tokens")))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
