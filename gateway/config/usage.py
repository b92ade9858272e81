"""What a route's runs cost and how many tokens a key may use: `pricing` and `limits.tokens_per_key`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gateway.config.model import Model

WINDOW_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


class Price(Model):
    """A model's price, per million tokens."""

    input: float = Field(ge=0, description="per million input tokens")
    output: float = Field(ge=0, description="per million output tokens")


class Pricing(Model):
    """What a route's runs cost, by model: `agent_gateway_cost_total` counts it. A run's price is the first found of
    the model its usage report names, the model the run asked its upstream for (the upstream's `model`, else the
    client's request's, else the route's name) and `default`."""

    currency: str = Field("USD", min_length=1, max_length=8, description="the currency the prices are in (a "
                          "label of `agent_gateway_cost_total`)")
    default: Price | None = None
    """The price of a run whose models are not in `models` (neither the one its usage report names nor the one it
    asked its upstream for); unset: such runs cost nothing."""
    models: dict[str, Price] = {}
    """Prices by model name: the one a run's usage report names, else the one the run asked its upstream for (the
    upstream's `model`, else the client's request's, else the route's name)."""

    def price(self, *names: str | None) -> Price | None:
        """The price of the first of `names` that `models` prices, else `default`."""
        for name in names:
            if name is not None and (found := self.models.get(name)) is not None:
                return found
        return self.default


class TokenBudget(Model):
    """Tokens (input and output together) a key may use in a window; past it, its requests are refused with a 429
    and `Retry-After` until the window turns. A run already started finishes, and its tokens count."""

    per: Literal["minute", "hour", "day"] = Field(description="the window: a calendar minute, hour or day (UTC)")
    max: int = Field(gt=0, description="tokens a key may use in one window")

    @property
    def seconds(self) -> int:
        return WINDOW_SECONDS[self.per]
