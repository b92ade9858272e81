"""Signed agent cards (`adapters/a2a/signing.py`, `canonical.py`): the cards the gateway serves checked by a2a-sdk
1.3.0's own verifier (`create_signature_verifier`, PyJWT: an implementation that shares nothing with the gateway's),
and upstream cards signed by a2a-sdk's own signer (`create_agent_card_signer`, in a real a2a-sdk server) accepted or
refused by the gateway. Install first: `.venv/bin/python tests/peers_env.py`."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from e2e import Reply, post, request_body, user_message
from peers_env import a2a_upstream, check_a2a_card, run_a2a_client
from servers import Served

from adapters.a2a.canonical import payload
from adapters.a2a.signing import CardSigner
from gateway.config import ConfigError, GatewayConfig, parse_config
from gateway.server.app import create_app

CARD = "/a2a/.well-known/agent-card.json"


def private_pem(key: Any) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def public_pem(key: Any) -> str:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def ed25519_jwk(key: ed25519.Ed25519PrivateKey, kid: str) -> str:
    """A private Ed25519 key as an OKP JWK (RFC 8037), written by hand: no JOSE library of the gateway's."""
    raw = serialization.Encoding.Raw
    public = key.public_key().public_bytes(raw, serialization.PublicFormat.Raw)
    private = key.private_bytes(raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    return json.dumps({"kty": "OKP", "crv": "Ed25519", "x": b64(public), "d": b64(private), "kid": kid})


def thumbprint(key: Any) -> str:
    """RFC 7638, by hand: SHA-256 of the public JWK's required members, sorted, no whitespace."""
    numbers = key.public_key().public_numbers()
    if isinstance(key, ec.EllipticCurvePrivateKey):
        members = {"crv": "P-256", "kty": "EC", "x": b64(numbers.x.to_bytes(32, "big")),
                   "y": b64(numbers.y.to_bytes(32, "big"))}
    else:
        members = {"e": b64(numbers.e.to_bytes((numbers.e.bit_length() + 7) // 8, "big")), "kty": "RSA",
                   "n": b64(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big"))}
    return b64(hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest())


KEYS = {"EC P-256, PEM": (ec.generate_private_key(ec.SECP256R1()), "ES256"),
        "Ed25519, JWK": (ed25519.Ed25519PrivateKey.generate(), "EdDSA"),
        "RSA 2048, PEM": (rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")}


def signing_key(name: str) -> str:
    key = KEYS[name][0]
    return ed25519_jwk(key, "gw-ed") if isinstance(key, ed25519.Ed25519PrivateKey) else private_pem(key)


def gateway(a2a: dict[str, Any], upstream: str = "http://127.0.0.1:9/agui", dialect: str = "ag-ui") -> Served:
    config = GatewayConfig.model_validate({"routes": [{"name": "signed", "upstream": {"url": upstream,
                                                                                      "dialect": dialect}}],
                                           "store": {"url": "memory://"}, "a2a": a2a})
    return Served(create_app(config))


def protected(card: dict[str, Any]) -> dict[str, Any]:
    encoded = card["signatures"][0]["protected"]
    header: dict[str, Any] = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    return header


# -- the cards the gateway serves


@pytest.mark.parametrize("name", list(KEYS))
def test_a_card_the_gateway_signs_verifies_with_a2a_sdks_verifier_in_both_versions(name: str) -> None:
    key, alg = KEYS[name]
    with gateway({"card_signing_key": signing_key(name)}) as gw, httpx.Client(timeout=10) as http:
        card = http.get(gw.url + CARD).json()
        old = http.get(gw.url + CARD, headers={"a2a-version": "0.3"}).json()
        checked = {version: check_a2a_card(gw.url + "/a2a", public_pem(key), alg, version=version)
                   for version in ("1.0", "0.3")}
    assert checked["1.0"]["valid"] and checked["0.3"]["valid"], checked
    assert protected(card)["alg"] == alg and protected(card)["typ"] == "JOSE"
    assert protected(card)["kid"] == ("gw-ed" if alg == "EdDSA" else thumbprint(key))  # the JWK's, or RFC 7638
    assert old["url"] == gw.url + "/a2a" and "url" not in card
    assert old["signatures"] == card["signatures"]  # one signature covers both forms
    assert checked["1.0"]["payload"] == payload(card).decode()  # byte for byte what the SDK rebuilt


def test_a_card_changed_by_one_character_is_refused_by_a2a_sdk() -> None:
    key, alg = KEYS["EC P-256, PEM"]
    with gateway({"card_signing_key": signing_key("EC P-256, PEM")}) as gw:
        card = httpx.get(gw.url + CARD, timeout=10).json()
    changed = {**card, "description": card["description"].replace("r", "R", 1)}
    assert check_a2a_card("", public_pem(key), alg, card=card)["valid"]
    refused = check_a2a_card("", public_pem(key), alg, card=changed)
    assert not refused["valid"] and refused["error"] == "InvalidSignaturesError: No valid signature found"


def test_a_card_is_signed_once_per_distinct_payload(monkeypatch: pytest.MonkeyPatch) -> None:
    signings: list[bytes] = []
    sign = CardSigner._sign

    def counted(signer: CardSigner, signed: bytes) -> dict[str, str]:
        signings.append(signed)
        return sign(signer, signed)

    monkeypatch.setattr(CardSigner, "_sign", counted)
    with gateway({"card_signing_key": signing_key("EC P-256, PEM")}) as gw, httpx.Client(timeout=10) as http:
        first, again = (http.get(gw.url + CARD).json() for _ in range(2))
        old = http.get(gw.url + CARD, headers={"a2a-version": "0.3"}).json()  # the same payload
        bare = http.get(gw.url + "/.well-known/agent-card.json").json()  # the same card
        assert len(signings) == 1 and bare == first
        other_host = http.get(gw.url + CARD, headers={"host": gw.url.removeprefix("http://").replace(
            "127.0.0.1", "localhost")}).json()
    assert len(signings) == 2 and first["signatures"] == again["signatures"] == old["signatures"]
    assert other_host["supportedInterfaces"][0]["url"].startswith("http://localhost:")
    assert other_host["signatures"] != first["signatures"]


def test_two_gateways_with_one_key_serve_the_same_card_and_etag() -> None:
    """ECDSA signs alike everywhere (RFC 6979): a client's conditional GET holds across workers and replicas."""
    def served() -> tuple[str, bytes]:
        config = GatewayConfig.model_validate({
            "routes": [{"name": "signed", "upstream": {"url": "http://127.0.0.1:9/agui", "dialect": "ag-ui"},
                        "agent": {"url": "https://agents.example.com/a2a"}}],
            "store": {"url": "memory://"}, "a2a": {"card_signing_key": signing_key("EC P-256, PEM")}})
        with Served(create_app(config)) as gw:
            card = httpx.get(gw.url + CARD, timeout=10)
        return card.headers["etag"], card.content

    assert served() == served()


LEGACY_CARD = {
    "name": "0.3 agent", "description": "A card of 0.3's only", "version": "0.1", "protocolVersion": "0.3.0",
    "url": "http://h/rpc", "preferredTransport": "JSONRPC", "additionalInterfaces": [
        {"url": "http://h/rpc", "transport": "JSONRPC"}, {"url": "http://h/rest", "transport": "HTTP+JSON"}],
    "capabilities": {"streaming": False}, "supportsAuthenticatedExtendedCard": True,
    "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Key"},
                        "oauth": {"type": "oauth2", "flows": {"authorizationCode": {
                            "authorizationUrl": "https://h/auth", "tokenUrl": "https://h/token", "scopes": {"r": ""},
                            "pkceRequired": False}}}},
    "security": [{"key": []}, {"oauth": ["r"]}],
    "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "s", "name": "S", "description": "Does S", "tags": ["s"], "security": [{"key": []}]}]}
"""What a2a-sdk's card reader maps before it canonicalizes: 0.3's interfaces, security and extended-card flag."""


@pytest.mark.parametrize("legacy", [False, True], ids=["1.0 with extras", "0.3"])
def test_what_the_sdk_canonicalizes_its_own_way_is_signed_its_way(legacy: bool) -> None:
    """Empty fields (REQUIRED ones too), 0.3's fields and unknown ones, an extension's numbers (doubles), `false`
    without presence, snake_case names and text outside ASCII; a card of 0.3's only: the SDK's verifier accepts the
    signature, over the payload it rebuilds byte for byte."""
    key = KEYS["EC P-256, PEM"][0]
    card = LEGACY_CARD if legacy else {
            "name": "gateway route ✓ café", "description": "", "version": "1.0.0", "documentationUrl": "",
            "supportedInterfaces": [{"url": "http://h/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0",
                                     "tenant": ""}],
            "capabilities": {"streaming": True, "pushNotifications": False, "extensions": [
                {"uri": "https://example.com/ext", "required": False,
                 "params": {"n": 1, "x": 1.5, "big": 10**10, "nested": {"empty": "", "list": [], "no": False,
                                                                     "nil": None, "keep": 0}, "𝄞": "clef", "é": 1}}]},
            "default_input_modes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "chat", "name": "Chat", "description": "Talk", "tags": ["chat"], "examples": []}],
            "url": "http://h/a2a", "preferredTransport": "JSONRPC", "protocolVersion": "0.3", "x-unknown": 1}
    signed = CardSigner(private_pem(key)).signed(card)
    checked = check_a2a_card("", public_pem(key), "ES256", card=signed)
    assert checked["valid"], checked
    assert checked["payload"] == payload(signed).decode()


@pytest.mark.parametrize(("key", "said"), [
    ("not a key", "neither a JWK (JSON) nor a PEM"),
    ('{"kty": "oct", "k": "c2VjcmV0"}', "a JWK of kty EC, OKP or RSA is needed (a shared secret cannot sign a "
                                        "public card)"),
    ('{"kty": "EC", "crv": "P-256"}', "not a usable JWK (key_parameter: 'x' is required)"),
    ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
     "not a PEM key this can read (Could not deserialize key data)"),
    (public_pem(KEYS["EC P-256, PEM"][0]), "a public key: signing needs the private one")])
def test_a_bad_signing_key_stops_the_configuration_with_one_line_naming_it(key: str, said: str) -> None:
    config = "routes:\n  - upstream: {url: 'http://a/', dialect: ag-ui}\na2a:\n  card_signing_key: ${KEY}\n"
    with pytest.raises(ConfigError) as refused:
        parse_config(config, "gw.yaml", environ={"KEY": key})
    assert str(refused.value) == f"gw.yaml:4: a2a.card_signing_key: {said}"


def test_without_the_signing_extra_a_key_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import adapters.a2a

    monkeypatch.delitem(sys.modules, "adapters.a2a.signing")
    monkeypatch.delattr(adapters.a2a, "signing")
    monkeypatch.setitem(sys.modules, "joserfc", None)  # as if not installed
    config = "routes:\n  - upstream: {url: 'http://a/', dialect: ag-ui}\na2a:\n  trusted_card_keys: ['{}']\n"
    with pytest.raises(ConfigError, match=r"^gw.yaml:4: a2a.trusted_card_keys: needs the signing extra: "
                                          r"pip install 'agent-gateway\[signing\]'$"):
        parse_config(config, "gw.yaml", environ={})


# -- the cards the gateway reads: an a2a-sdk server signing its own card


PEER_KEY = ec.generate_private_key(ec.SECP256R1())
OTHER_KEY = ec.generate_private_key(ec.SECP256R1())


@pytest.fixture(scope="module")
def signed_peer() -> Iterator[str]:
    with a2a_upstream(signing_key=private_pem(PEER_KEY)) as url:
        yield url


@pytest.fixture(scope="module")
def tampered_peer() -> Iterator[str]:
    with a2a_upstream(signing_key=private_pem(PEER_KEY), tampered=True) as url:
        yield url


@pytest.fixture(scope="module")
def unsigned_peer() -> Iterator[str]:
    with a2a_upstream() as url:
        yield url


def ask(upstream: str, trusted: list[str]) -> Reply:
    with gateway({"trusted_card_keys": trusted}, upstream, "a2a") as gw, httpx.Client(timeout=30) as http:
        body = request_body("ag-ui", [user_message("ag-ui", "hello there")], "thread-signed")
        return Reply("ag-ui", post(http, gw.url + "/agui", body))


def test_an_upstream_card_signed_by_a_trusted_key_is_called(signed_peer: str) -> None:
    reply = ask(signed_peer, [public_pem(PEER_KEY)])
    assert reply.error is None and "echo: hello there" in reply.text


def test_the_peer_signs_with_the_sdks_signer_and_its_own_verifier_agrees(signed_peer: str,
                                                                         tampered_peer: str) -> None:
    assert check_a2a_card(signed_peer, public_pem(PEER_KEY), "ES256")["valid"]
    assert not check_a2a_card(tampered_peer, public_pem(PEER_KEY), "ES256")["valid"]


@pytest.mark.parametrize(("peer", "trusted", "why"), [
    ("signed_peer", "other", "no signature of its agent card (kid peer-key) verifies with a key of "
                             "a2a.trusted_card_keys"),
    ("tampered_peer", "peer", "no signature of its agent card (kid peer-key) verifies with a key of "
                              "a2a.trusted_card_keys"),
    ("unsigned_peer", "peer", "its agent card is not signed")])
def test_an_upstream_card_not_signed_by_a_trusted_key_is_refused_with_one_log_line(
        peer: str, trusted: str, why: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture) -> None:
    url = request.getfixturevalue(peer)
    with caplog.at_level(logging.ERROR, logger="agent_gateway.discovery"):
        reply = ask(url, [public_pem(OTHER_KEY if trusted == "other" else PEER_KEY)])
    assert reply.response.status_code == 502 and reply.error is not None
    assert reply.error.message == f"the upstream is not called: {why}"
    assert [record.getMessage() for record in caplog.records] == [
        f"route signed: the upstream is refused: {why}; its runs fail until it is fixed"]


def test_an_a2a_client_is_told_why_in_its_own_error(unsigned_peer: str) -> None:
    with gateway({"trusted_card_keys": [public_pem(PEER_KEY)]}, unsigned_peer, "a2a") as gw:
        run = run_a2a_client(gw.url + "/a2a", "hello")
    assert run.error == "InternalError: the upstream is not called: its agent card is not signed"


def test_serve_check_says_in_one_line_which_upstream_card_is_refused_and_why(
        signed_peer: str, unsigned_peer: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.cli import main

    config = tmp_path / "gw.yaml"
    config.write_text(f"""routes:
  - name: trusted
    paths: [/one/agui]
    upstream: {{url: '{signed_peer}', dialect: a2a}}
  - name: unsigned
    paths: [/two/agui]
    upstream: {{url: '{unsigned_peer}', dialect: a2a}}
  - name: cardless
    paths: [/three/agui]
    upstream: {{url: '{unsigned_peer}/nothing-here', dialect: a2a}}
store: {{url: 'memory://'}}
a2a:
  trusted_card_keys: ['${{PEER_KEY}}']
""")
    monkeypatch.setenv("PEER_KEY", public_pem(PEER_KEY))
    assert main(["serve", "--check", "--config", str(config)]) == 1
    out = capsys.readouterr().out.splitlines()
    card = "/.well-known/agent-card.json"
    assert f"trusted: upstream {signed_peer}'s {card}: ok (accepted)" in out
    assert f"unsigned: upstream {unsigned_peer}'s {card}: FAILED (its agent card is not signed)" in out
    assert f"cardless: upstream {unsigned_peer}/nothing-here's {card}: FAILED (its agent card could not be read, and " \
           "a2a.trusted_card_keys asks for a signed one (HTTP 404))" in out
