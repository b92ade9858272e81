"""The `a2a:` section of the configuration: what holds for A2A across the gateway rather than per route. The card
keys are read with the file, so a bad one stops the gateway at start with one line naming it; what they sign and
check is `signing.py`'s, which needs the `signing` extra only when a key is set."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

if TYPE_CHECKING:
    from .signing import CardSigner, CardTrust

EXTRA = "needs the signing extra: pip install 'agent-gateway[signing]'"


class A2ASettings(BaseModel):
    """A2A across the gateway: the port of its gRPC binding, and the keys that sign the agent cards the gateway
    serves and check the cards it reads of its upstreams."""

    model_config = ConfigDict(extra="forbid")

    grpc_port: int | None = Field(None, gt=0, lt=65536, description="where the A2A routes are also served over "
                                  "gRPC (`pip install 'agent-gateway[grpc]'`), on the gateway's host; unset: no gRPC, "
                                  "and the cards list none")
    card_signing_key: str | None = Field(None, description="a private key (EC P-256/384/521, Ed25519 or RSA) as a "
                                         "JWK (JSON) or PEM, usually `${VAR}` from the environment: every agent card "
                                         "the gateway serves carries a JWS signature by it in `signatures` (alg from "
                                         "the key, kid the JWK's or its RFC 7638 thumbprint); needs `pip install "
                                         "'agent-gateway[signing]'`")
    trusted_card_keys: list[str] = Field([], description="public keys (JWK, JWKS or PEM) an upstream's agent card "
                                         "must be signed by: a card signed by none of them, not signed, or that "
                                         "cannot be read is refused, and the route's runs fail until it is fixed; "
                                         "needs `pip install 'agent-gateway[signing]'`")

    _signer: CardSigner | None = PrivateAttr(None)
    _trust: CardTrust | None = PrivateAttr(None)

    @field_validator("card_signing_key")
    @classmethod
    def _signing_key(cls, text: str | None) -> str | None:
        if text is not None:
            _signing().CardSigner(text)
        return text

    @field_validator("trusted_card_keys")
    @classmethod
    def _trusted_keys(cls, texts: list[str]) -> list[str]:
        if texts:
            signing = _signing()
            for index, text in enumerate(texts):
                try:
                    signing.CardTrust([text])
                except ValueError as exc:
                    raise ValueError(f"key {index + 1}: {exc}") from None
        return texts

    def model_post_init(self, context: Any) -> None:
        if self.card_signing_key is not None:
            self._signer = _signing().CardSigner(self.card_signing_key)
        if self.trusted_card_keys:
            self._trust = _signing().CardTrust(self.trusted_card_keys)

    def signed(self, card: dict[str, Any]) -> dict[str, Any]:
        """The card as served: signed when a key is set."""
        return card if self._signer is None else self._signer.signed(card)

    def refusal(self, card: Any) -> str | None:
        """Why an upstream's card (None: it could not be read) is refused, when keys to trust are set."""
        if self._trust is None:
            return None
        if card is None:
            return "its agent card could not be read, and a2a.trusted_card_keys asks for a signed one"
        return self._trust.refusal(card)


def _signing() -> Any:
    try:
        from . import signing
    except ImportError:
        raise ValueError(EXTRA) from None
    return signing
