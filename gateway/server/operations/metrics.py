"""Prometheus metrics: what operators watch on a translating proxy.

Each app has its own registry, so several gateways in one process (tests) don't mix their counts. With several
worker processes (`serve --workers N`), `PROMETHEUS_MULTIPROC_DIR` is set and `/metrics` sums every worker.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess

from gateway.core.dropped import Dropped
from gateway.core.events import Usage

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MAX_KEY_LABELS = 10_000
"""Distinct (route, key) pairs the token and cost metrics label; past it, "other"."""
_TOKEN_KINDS = (("input", "input_tokens"), ("output", "output_tokens"), ("reasoning", "reasoning_tokens"),
                ("cached", "cached_input_tokens"))
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Series:
    """The children of one (route, client dialect, upstream dialect), looked up once: `labels()` takes a lock and
    builds a key per call, and a request would make five of them."""

    def __init__(self, metrics: Metrics, route: str, client: str, upstream: str) -> None:
        self._labels = (route, client, upstream)
        self._metrics = metrics
        self.events = metrics.events.labels(*self._labels)
        self.first_event = metrics.first_event.labels(*self._labels)
        self.upstream_latency = metrics.upstream_latency.labels(*self._labels)
        self.duration = metrics.duration.labels(*self._labels)
        self._by_status: dict[str, Counter] = {}
        self._dropped: dict[str, Counter] = {}

    def requests(self, status: str) -> Counter:
        child = self._by_status.get(status)
        if child is None:
            child = self._by_status[status] = self._metrics.requests.labels(*self._labels, status)
        return child

    def dropped(self, counts: dict[Dropped, int]) -> None:
        """What the client's dialect could not carry of one request's run (`Encoder.dropped`), by kind."""
        for kind, count in counts.items():
            child = self._dropped.get(kind)
            if child is None:
                child = self._dropped[kind] = self._metrics.events_dropped.labels(*self._labels[1:], kind)
            child.inc(count)


class PushOutcomes:
    """One route's push notification counts by outcome, looked up once."""

    def __init__(self, metrics: Metrics, route: str) -> None:
        counter = metrics.push_notifications
        self.delivered = counter.labels(route, "delivered")
        """A webhook answered a notification with a 2xx."""
        self.failed = counter.labels(route, "failed")
        """A webhook refused a notification, or its tries ran out."""
        self.dropped = counter.labels(route, "dropped")
        """An update was not queued: its principal's share, or the process, had too many waiting."""
        self.skipped = counter.labels(route, "skipped")
        """A notification was not sent, or no more retried: its webhook's origin is cooling off."""


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ids = ("route", "client_dialect", "upstream_dialect")
        self.requests = Counter("agent_gateway_requests", "Requests answered, by HTTP status.",
                                [*ids, "status"], registry=self.registry)
        self.in_flight = Gauge("agent_gateway_streams_in_flight", "Requests being answered right now.",
                               ["route"], registry=self.registry, multiprocess_mode="livesum")
        self.events = Counter("agent_gateway_events_translated", "Canonical events translated for clients.",
                              list(ids), registry=self.registry)
        self.first_event = Histogram("agent_gateway_time_to_first_event_seconds",
                                     "From the client's request to the upstream's first event.", list(ids),
                                     buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.upstream_latency = Histogram("agent_gateway_upstream_latency_seconds",
                                          "From sending the upstream request to its response headers.", list(ids),
                                          buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.duration = Histogram("agent_gateway_request_duration_seconds", "Whole requests, first byte to last.",
                                  list(ids), buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.errors = Counter("agent_gateway_errors", "Failed requests and runs, by error code.",
                              ["route", "kind"], registry=self.registry)
        self.tokens = Counter("agent_gateway_tokens", "Tokens the upstream reported its runs used, by the key that "
                              "asked (input, output, and of these reasoning and cached).",
                              ["route", "key_id", "kind"], registry=self.registry)
        self.cost = Counter("agent_gateway_cost", "What the tokens of the runs cost, by the key that asked, at the "
                            "route's pricing.", ["route", "key_id", "currency"], registry=self.registry)
        self.events_dropped = Counter(
            "agent_gateway_events_dropped", "Canonical events the client's dialect could not carry: left out, or "
            "approximated (the kind says which).", ["client_dialect", "upstream_dialect", "kind"],
            registry=self.registry)

        self.unread = Counter("agent_gateway_upstream_replies_unread", "Upstream replies of which the route's "
                              "upstream dialect read no event: is upstream.dialect right?",
                              ["route", "upstream_dialect"], registry=self.registry)
        self.push_notifications = Counter(
            "agent_gateway_push_notifications", "Push notifications (A2A's), by outcome: delivered, failed (refused, "
            "or its tries ran out), dropped (too many waiting), skipped (its webhook is cooling off).",
            ["route", "outcome"], registry=self.registry)
        self.failovers = Counter(
            "agent_gateway_failovers", "Runs that moved to the next of a route's upstreams before their first event, "
            "by the upstream they left, the one they went to, and why (unreachable, timeout, status, unavailable, "
            "ejected).", ["route", "from", "to", "reason"], registry=self.registry)
        self.upstream_ejected = Gauge(
            "agent_gateway_upstream_ejected", "1 while a route's upstream is skipped after failing runs in a row "
            "(`eject_after`), else 0.", ["route", "upstream"], registry=self.registry, multiprocess_mode="max")
        self.judged = Counter(
            "agent_gateway_conformance_judged_runs", "Runs of a route with `judge` whose both sides were judged by "
            "their dialects' rules.", ["route"], registry=self.registry)
        self.violations = Counter(
            "agent_gateway_conformance_violations", "Rules of its dialect a judged run's reply broke: `upstream`, "
            "what the upstream sent (the agent's); `client`, what the gateway wrote (the gateway's own).",
            ["route", "side", "dialect", "rule"], registry=self.registry)

        self._series: dict[tuple[str, str, str], Series] = {}
        self._keys: set[tuple[str, str]] = set()
        self._token_children: dict[tuple[str, str, str], Counter] = {}
        """`tokens`' children, looked up once (as `Series` does): bounded as the key labels are."""

    def key_label(self, route: str, key: str) -> str:
        """`key` as a metrics label: keys come from the configuration, so they are few; a tenant header's values
        come from a trusted front end, and past `MAX_KEY_LABELS` new ones are counted as "other"."""
        if (route, key) not in self._keys:
            if len(self._keys) >= MAX_KEY_LABELS:
                return "other"
            self._keys.add((route, key))
        return key

    def usage(self, route: str, key: str, usage: Usage) -> dict[str, int]:
        """Count a run's tokens under its key: the counts, by kind, for the access log."""
        counts = {kind: value for kind, field in _TOKEN_KINDS if (value := getattr(usage, field))}
        label = self.key_label(route, key)
        children = self._token_children
        for kind, value in counts.items():
            child = children.get((route, label, kind))
            if child is None:
                child = children[route, label, kind] = self.tokens.labels(route, label, kind)
            child.inc(value)
        return counts

    def series(self, route: str, client: str, upstream: str) -> Series:
        key = (route, client, upstream)
        found = self._series.get(key)
        if found is None:
            found = self._series[key] = Series(self, route, client, upstream)
        return found

    def exposition(self) -> bytes:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry)
        return generate_latest(self.registry)
