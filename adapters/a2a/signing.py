"""Signed agent cards (A2A 1.0 §8.4): the gateway signs each card it serves with `a2a.card_signing_key`, and
refuses an upstream's card that no key of `a2a.trusted_card_keys` signed.

A signature is a JWS with a detached payload: `protected` (its header, `{alg, kid, typ: "JOSE"}`, base64url) and
`signature`, over `canonical.payload(card)`. `alg` comes from the key (ES256 for P-256, ES384, ES512, EdDSA for
Ed25519, RS256 for RSA unless its JWK names another), `kid` from its JWK, else its RFC 7638 thumbprint. The keys
are JWKs (JSON; for trusted keys a JWKS too) or PEMs (a certificate's public key too). joserfc signs and checks,
on `cryptography`: the `signing` extra, imported only when a key is configured.
"""

from __future__ import annotations

import base64
import json
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwa import ESAlgorithm
from joserfc.jwk import ECKey, OKPKey, RSAKey
from joserfc.jws import JWSRegistry

from .canonical import payload

Key = ECKey | OKPKey | RSAKey
_KINDS: dict[str, type[ECKey] | type[OKPKey] | type[RSAKey]] = {"EC": ECKey, "OKP": OKPKey, "RSA": RSAKey}

_CURVES = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}
_RSA = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
CACHED_CARDS = 256
"""Distinct cards whose signatures a signer keeps (they differ by Host and version): a card asked for again costs
no signing, and a client that invents Host names (with `agent.url` unset) costs a signing each but no memory past
this."""


class _SameEverywhere(ESAlgorithm):
    """ECDSA with the nonce derived from the key and the message (RFC 6979), not drawn at random: a card is signed
    alike by every worker and replica, so its bytes and `ETag` are the same wherever a client asks."""

    def sign(self, msg: bytes, key: ECKey) -> bytes:
        try:
            der = key.get_op_key("sign").sign(msg, ec.ECDSA(self.hash_alg(), deterministic_signing=True))
        except UnsupportedAlgorithm:  # a `cryptography` on an OpenSSL older than 3.2: random nonces, still valid
            return super().sign(msg, key)
        r, s = decode_dss_signature(der)
        size = (key.curve_key_size + 7) // 8
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")


class _Registry(JWSRegistry):
    """joserfc's algorithms, ECDSA signing alike everywhere, and room for a card as large as the gateway reads."""

    algorithms = {**JWSRegistry.algorithms, "ES256": _SameEverywhere("ES256", "P-256", 256),
                  "ES384": _SameEverywhere("ES384", "P-384", 384), "ES512": _SameEverywhere("ES512", "P-521", 512)}
    max_payload_length = 512 * 1024


@dataclass(frozen=True, slots=True)
class _Loaded:
    key: Key
    kid: str
    algorithms: tuple[str, ...]
    """The first is the one it signs with."""


def _load(text: str, private: bool) -> list[_Loaded]:
    """The keys `text` holds (a JWK, a JWKS, a PEM), or ValueError saying what is wrong, never what it holds."""
    text = text.strip()
    if text.startswith("{"):
        try:
            found = json.loads(text)
        except ValueError:
            raise ValueError("not valid JSON (a JWK, or a PEM)") from None
        jwks = found.get("keys") if isinstance(found, dict) else None
        entries = jwks if isinstance(jwks, list) and not private else [found]
        return [_from_jwk(entry, private) for entry in entries]
    if text.startswith("-----BEGIN"):
        return [_from_pem(text.encode(), private)]
    raise ValueError("neither a JWK (JSON) nor a PEM")


def _from_jwk(entry: Any, private: bool) -> _Loaded:
    if not isinstance(entry, dict) or entry.get("kty") not in ("EC", "OKP", "RSA"):
        raise ValueError("a JWK of kty EC, OKP or RSA is needed (a shared secret cannot sign a public card)")
    try:
        key = _KINDS[entry["kty"]].import_key(entry)
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"not a usable JWK ({exc})") from None
    return _described(key, private, entry.get("kid"), entry.get("alg"))


def _from_pem(pem: bytes, private: bool) -> _Loaded:
    try:
        if b"CERTIFICATE" in pem.split(b"\n", 1)[0]:
            loaded: Any = x509.load_pem_x509_certificate(pem).public_key()
            pem = loaded.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        elif b"PRIVATE" in pem.split(b"\n", 1)[0]:
            loaded = serialization.load_pem_private_key(pem, password=None)
        else:
            loaded = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a PEM key this can read ({str(exc).split('.')[0]})") from None
    if isinstance(loaded, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey):
        kty = "EC"
    elif isinstance(loaded, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        kty = "RSA"
    elif isinstance(loaded, ed25519.Ed25519PrivateKey | ed25519.Ed25519PublicKey | ed448.Ed448PrivateKey
                    | ed448.Ed448PublicKey):
        kty = "OKP"
    else:
        raise ValueError("an EC, Ed25519 or RSA key is needed")
    try:
        key = _KINDS[kty].import_key(pem)
    except (JoseError, ValueError) as exc:
        raise ValueError(f"not a usable key ({exc})") from None
    return _described(key, private, None, None)


def _described(key: Key, private: bool, kid: Any, alg: Any) -> _Loaded:
    if private and not key.is_private:
        raise ValueError("a public key: signing needs the private one")
    if isinstance(alg, str):
        algorithms: tuple[str, ...] = (alg,)
    elif isinstance(key, ECKey):
        if key.curve_name not in _CURVES:
            raise ValueError(f"the curve {key.curve_name} is not one JWS names (P-256, P-384, P-521)")
        algorithms = (_CURVES[key.curve_name],)
    elif isinstance(key, OKPKey):
        if key.curve_name not in ("Ed25519", "Ed448"):
            raise ValueError(f"{key.curve_name} is not a signing curve (Ed25519)")
        algorithms = ("EdDSA", "Ed25519") if key.curve_name == "Ed25519" else ("EdDSA", "Ed448")
    else:
        algorithms = _RSA
    return _Loaded(key, kid if isinstance(kid, str) and kid else key.thumbprint(), algorithms)


@contextmanager
def _quiet() -> Iterator[None]:
    """joserfc warns that RFC 9864 deprecates the name `EdDSA`; a2a-sdk's PyJWT knows no other."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*deprecated via RFC 9864")
        yield


class CardSigner:
    """Signs the cards the gateway serves with one key, each distinct payload once: the 1.0 and the 0.3 form of a
    card share their signature, and a card served again costs a lookup, not a canonicalization."""

    def __init__(self, text: str) -> None:
        loaded = _load(text, private=True)[0]
        self.key = loaded.key
        self.kid = loaded.kid
        self.algorithm = loaded.algorithms[0]
        self._by_card: OrderedDict[bytes, dict[str, str]] = OrderedDict()
        self._by_payload: OrderedDict[bytes, dict[str, str]] = OrderedDict()

    def signed(self, card: dict[str, Any]) -> dict[str, Any]:
        """The card with its `signatures`: this key's, after those it had."""
        seen = orjson.dumps(card, option=orjson.OPT_SORT_KEYS)
        signature = _recall(self._by_card, seen)
        if signature is None:
            signed = payload(card)
            signature = _recall(self._by_payload, signed) or self._sign(signed)
            _remember(self._by_payload, signed, signature)
            _remember(self._by_card, seen, signature)
        return {**card, "signatures": [*card.get("signatures", ()), signature]}

    def _sign(self, signed: bytes) -> dict[str, str]:
        header = {"alg": self.algorithm, "kid": self.kid, "typ": "JOSE"}
        with _quiet():
            protected, _, signature = jws.serialize_compact(
                header, signed, self.key, registry=_Registry(algorithms=[self.algorithm])).split(".")
        return {"protected": protected, "signature": signature}


def _recall(cache: OrderedDict[bytes, dict[str, str]], key: bytes) -> dict[str, str] | None:
    found = cache.get(key)
    if found is not None:
        cache.move_to_end(key)
    return found


def _remember(cache: OrderedDict[bytes, dict[str, str]], key: bytes, signature: dict[str, str]) -> None:
    cache[key] = signature
    if len(cache) > CACHED_CARDS:
        cache.popitem(last=False)


class CardTrust:
    """The keys an upstream's card must be signed by, one at least."""

    def __init__(self, texts: list[str]) -> None:
        self.keys = [loaded for text in texts for loaded in _load(text, private=False)]

    def refusal(self, card: Any) -> str | None:
        """Why the card is refused, or None when one of its signatures is a trusted key's over the card as it is."""
        signatures = card.get("signatures") if isinstance(card, dict) else None
        if not isinstance(signatures, list) or not signatures:
            return "its agent card is not signed"
        try:
            signed = payload(card)
        except (ValueError, TypeError, RecursionError):
            return "its agent card cannot be canonicalized to check its signatures"
        kids = []
        for entry in signatures:
            header = _protected(entry)
            if header is None:
                continue
            kids.append(f"kid {header['kid']}" if isinstance(header.get("kid"), str) else "no kid")
            alg = header.get("alg")
            # The key its kid names first, then the others: a signer's kid need not be the one configured here.
            for loaded in sorted(self.keys, key=lambda loaded: loaded.kid != header.get("kid")):
                if alg not in loaded.algorithms:
                    continue
                try:
                    with _quiet():
                        jws.deserialize_compact(f"{entry['protected']}..{entry['signature']}", loaded.key,
                                                registry=_Registry(algorithms=[alg]), payload=signed)
                except (JoseError, ValueError, TypeError):
                    continue
                return None
        if not kids:
            return "its agent card's signatures cannot be read"
        return f"no signature of its agent card ({', '.join(kids)}) verifies with a key of a2a.trusted_card_keys"


def _protected(entry: Any) -> dict[str, Any] | None:
    """A signature's protected header, or None for a signature that is not one."""
    if not isinstance(entry, dict) or not isinstance(entry.get("protected"), str) or \
            not isinstance(entry.get("signature"), str):
        return None
    try:
        encoded = entry["protected"]
        header = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except ValueError:
        return None
    return header if isinstance(header, dict) else None
