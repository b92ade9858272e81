"""The bytes an agent card's signatures sign: the card as a2a-sdk 1.3.0 reads it, canonicalized as it does, so a card
the gateway signs verifies with the SDK's `create_signature_verifier`, and a card the SDK signs verifies here.

The SDK does not follow spec 1.0 §8.4.1 to the letter: it parses the JSON into its protobuf `AgentCard` first,
which keeps only the fields the 1.0 proto knows (0.3's `url`, `preferredTransport`, `protocolVersion` are gone),
turns the numbers of an extension's `params` into doubles and leaves out a `false` that has no presence; then it
drops `signatures`, every `""`, `[]`, `{}` and `null` (a REQUIRED field too), and writes RFC 8785 (JCS). The
same steps here, on the JSON, with the 0.3 spellings its card reader maps first. One consequence: the 1.0 and the
0.3 forms of the gateway's card have one payload, so one signature covers both.
"""

from __future__ import annotations

import re
from typing import Any

import rfc8785

_SCHEMA: dict[str, dict[str, str | None]] = {
    "AgentCard": {"name": None, "description": None, "supportedInterfaces": "AgentInterface[]",
                  "provider": "AgentProvider", "version": None, "documentationUrl": None,
                  "capabilities": "AgentCapabilities", "securitySchemes": "SecurityScheme{}",
                  "securityRequirements": "SecurityRequirement[]", "defaultInputModes": None,
                  "defaultOutputModes": None, "skills": "AgentSkill[]", "iconUrl": None},
    "AgentInterface": {"url": None, "protocolBinding": None, "tenant": None, "protocolVersion": None},
    "AgentProvider": {"url": None, "organization": None},
    "AgentCapabilities": {"streaming": None, "pushNotifications": None, "extensions": "AgentExtension[]",
                          "extendedAgentCard": None},
    "AgentExtension": {"uri": None, "description": None, "required": "bool", "params": "Struct"},
    "AgentSkill": {"id": None, "name": None, "description": None, "tags": None, "examples": None,
                   "inputModes": None, "outputModes": None, "securityRequirements": "SecurityRequirement[]"},
    "SecurityRequirement": {"schemes": "StringList{}"},
    "StringList": {"list": None},
    "SecurityScheme": {"apiKeySecurityScheme": "APIKeySecurityScheme",
                       "httpAuthSecurityScheme": "HTTPAuthSecurityScheme",
                       "oauth2SecurityScheme": "OAuth2SecurityScheme",
                       "openIdConnectSecurityScheme": "OpenIdConnectSecurityScheme",
                       "mtlsSecurityScheme": "MutualTlsSecurityScheme"},
    "APIKeySecurityScheme": {"description": None, "location": None, "name": None},
    "HTTPAuthSecurityScheme": {"description": None, "scheme": None, "bearerFormat": None},
    "OAuth2SecurityScheme": {"description": None, "flows": "OAuthFlows", "oauth2MetadataUrl": None},
    "OpenIdConnectSecurityScheme": {"description": None, "openIdConnectUrl": None},
    "MutualTlsSecurityScheme": {"description": None},
    "OAuthFlows": {"authorizationCode": "AuthorizationCodeOAuthFlow", "clientCredentials": "ClientCredentialsOAuthFlow",
                   "implicit": "ImplicitOAuthFlow", "password": "PasswordOAuthFlow",
                   "deviceCode": "DeviceCodeOAuthFlow"},
    "AuthorizationCodeOAuthFlow": {"authorizationUrl": None, "tokenUrl": None, "refreshUrl": None, "scopes": None,
                                   "pkceRequired": "bool"},
    "ClientCredentialsOAuthFlow": {"tokenUrl": None, "refreshUrl": None, "scopes": None},
    "DeviceCodeOAuthFlow": {"deviceAuthorizationUrl": None, "tokenUrl": None, "refreshUrl": None, "scopes": None},
    "ImplicitOAuthFlow": {"authorizationUrl": None, "refreshUrl": None, "scopes": None},
    "PasswordOAuthFlow": {"tokenUrl": None, "refreshUrl": None, "scopes": None},
}
"""`lf.a2a.v1.AgentCard` (spec v1.0.0's a2a.proto) by JSON name, less `signatures`: a field's message (`X[]`
repeated, `X{}` a map of them), `Struct` (free JSON, numbers as doubles), `bool` (no presence: `false` is left out),
or None (a string, an optional bool, a list of strings, a map of strings: kept as written)."""

_LEGACY_SCHEMES = {"apiKey": "apiKeySecurityScheme", "http": "httpAuthSecurityScheme",
                   "oauth2": "oauth2SecurityScheme", "openIdConnect": "openIdConnectSecurityScheme",
                   "mutualTLS": "mtlsSecurityScheme"}


def payload(card: dict[str, Any]) -> bytes:
    """The canonical bytes of the card (UTF-8): what its signatures sign, with the detached-payload JWS."""
    cleaned = _clean(_message("AgentCard", _as_sdk_reads(card)))
    return rfc8785.dumps(cleaned if cleaned is not None else {})


def _as_sdk_reads(card: dict[str, Any]) -> dict[str, Any]:
    """A copy of the card with 0.3's spellings moved where a2a-sdk's card reader (`parse_agent_card`) moves them."""
    card = dict(card)
    capabilities = card.get("capabilities")
    if card.pop("supportsAuthenticatedExtendedCard", None) and (capabilities is None or isinstance(capabilities, dict)):
        card["capabilities"] = {"extendedAgentCard": True, **(capabilities or {})}
    url, version = card.pop("url", None), card.pop("protocolVersion", "0.3.0")
    transport, more = card.pop("preferredTransport", "JSONRPC"), card.pop("additionalInterfaces", None) or []
    if "supportedInterfaces" not in card and url:
        card["supportedInterfaces"] = [{"url": url, "protocolBinding": transport, "protocolVersion": version}] + [
            {"url": each.get("url"), "protocolBinding": each.get("transport"), "protocolVersion": version}
            for each in more if isinstance(each, dict)]
    security = card.pop("security", None)
    if "securityRequirements" not in card and isinstance(security, list):
        card["securityRequirements"] = _requirements(security)
    if isinstance(card.get("skills"), list):
        card["skills"] = [_skill(skill) if isinstance(skill, dict) else skill for skill in card["skills"]]
    schemes = card.get("securitySchemes")
    if isinstance(schemes, dict):
        card["securitySchemes"] = {name: _scheme(scheme) if isinstance(scheme, dict) else scheme
                                   for name, scheme in schemes.items()}
    return card


def _skill(skill: dict[str, Any]) -> dict[str, Any]:
    skill = dict(skill)
    security = skill.pop("security", None)
    if "securityRequirements" not in skill and isinstance(security, list):
        skill["securityRequirements"] = _requirements(security)
    return skill


def _requirements(legacy: list[Any]) -> list[Any]:
    return [{"schemes": {name: {"list": scopes} for name, scopes in each.items()}} if isinstance(each, dict) else each
            for each in legacy]


def _scheme(scheme: dict[str, Any]) -> dict[str, Any]:
    scheme = dict(scheme)
    kind = scheme.pop("type", None)
    if kind not in _LEGACY_SCHEMES:
        return scheme
    if kind == "apiKey" and "in" in scheme:
        scheme["location"] = scheme.pop("in")
    return {_LEGACY_SCHEMES[kind]: scheme}


def _message(name: str, value: Any) -> Any:
    """The fields of the proto message `name` in `value`, under their JSON names (protobuf's JSON reader takes the
    proto's own snake_case names too); what the message does not have is left out."""
    if not isinstance(value, dict):
        return value  # the SDK would not parse it: no signature verifies
    out: dict[str, Any] = {}
    for field, kind in _SCHEMA[name].items():
        found = value.get(field, value.get(_snake(field)))
        if found is None:
            continue
        if kind is None:
            out[field] = found
        elif kind == "bool":
            if found is not False:
                out[field] = found
        elif kind == "Struct":
            out[field] = _doubles(found)
        elif kind.endswith("[]"):
            out[field] = [_message(kind[:-2], each) for each in found] if isinstance(found, list) else found
        elif kind.endswith("{}"):
            out[field] = {key: _message(kind[:-2], each) for key, each in found.items()} \
                if isinstance(found, dict) else found
        else:
            out[field] = _message(kind, found)
    return out


def _snake(field: str) -> str:
    return re.sub(r"([A-Z])", r"_\1", field).lower()


def _doubles(value: Any) -> Any:
    """`google.protobuf.Struct` holds every number as a double."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {key: _doubles(each) for key, each in value.items()}
    if isinstance(value, list):
        return [_doubles(each) for each in value]
    return value


def _clean(value: Any) -> Any:
    """Without `""`, `[]`, `{}` and `null`, and the containers they leave empty (None: nothing is left)."""
    if isinstance(value, dict):
        kept = {key: cleaned for key, each in value.items() if (cleaned := _clean(each)) is not None}
        return kept or None
    if isinstance(value, list):
        items = [cleaned for each in value if (cleaned := _clean(each)) is not None]
        return items or None
    if value == "" and isinstance(value, str):
        return None
    return value
