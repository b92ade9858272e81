"""The `a2a:` section of the configuration: what holds for A2A across the gateway rather than per route."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class A2ASettings(BaseModel):
    """A2A across the gateway: the port of its gRPC binding, and the keys that sign the agent cards the gateway
    serves and check the cards it reads of its upstreams."""

    model_config = ConfigDict(extra="forbid")

    grpc_port: int | None = Field(None, gt=0, lt=65536, description="where the A2A routes are also served over "
                                  "gRPC (`pip install 'agent-gateway[grpc]'`), on the gateway's host; unset: no gRPC, "
                                  "and the cards list none")
    card_signing_key: str | None = Field(None, description="a private key, as a JWK (JSON) or PEM, usually "
                                         "`${VAR}` from the environment: every agent card the gateway serves is "
                                         "signed with it (a JWS in the card's `signatures`)")
    trusted_card_keys: list[str] = Field([], description="public keys (JWK or PEM) an upstream's agent card must be "
                                         "signed by: a card signed by none of them, or not signed, is refused")
