"""Check an agent card's signatures with `a2a-sdk`'s own verifier, as an A2A client that trusts a key would.

Runs in the a2a peer's venv (`tests/peers/requirements-a2a.txt`, with the SDK's `signing` extra: PyJWT):

    .peers/a2a/bin/python tests/peers/a2a_card_check.py http://127.0.0.1:8000/a2a --key "$PUBLIC_JWK_OR_PEM" \
        --alg ES256 [--version 0.3] [--card-file card.json]

The SDK does the work: `A2ACardResolver.get_agent_card(signature_verifier=...)` fetches
`<url>/.well-known/agent-card.json` (with `A2A-Version: <version>`), reads it with `parse_agent_card` and calls the
verifier of `create_signature_verifier`, whose key provider returns the key given (a JWK as `PyJWK`, a PEM as is)
whatever the signature's `kid`. With `--card-file`, the card is read from the file instead of fetched.

stdout, one JSON object: {"valid": true, "payload": <the canonical payload the SDK checked>} or
{"valid": false, "error": "<ExceptionType>: <message>"}. Exit status 0 either way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import httpx
from a2a.client import A2ACardResolver
from a2a.client.card_resolver import parse_agent_card
from a2a.types.a2a_pb2 import AgentCard
from a2a.utils.signing import _canonicalize_agent_card, create_signature_verifier
from jwt.api_jwk import PyJWK


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--key", required=True, help="the public key: a JWK (JSON) or a PEM")
    parser.add_argument("--alg", required=True)
    parser.add_argument("--version", default="1.0")
    parser.add_argument("--card-file")
    args = parser.parse_args()
    key: Any = PyJWK(json.loads(args.key)) if args.key.lstrip().startswith("{") else args.key
    verify = create_signature_verifier(lambda kid, jku: key, [args.alg])
    checked: list[AgentCard] = []

    def verifier(card: AgentCard) -> None:
        checked.append(card)
        verify(card)

    try:
        if args.card_file:
            with open(args.card_file) as file:
                verifier(parse_agent_card(json.load(file)))
        else:
            async with httpx.AsyncClient(timeout=10) as http:
                await A2ACardResolver(http, args.url).get_agent_card(
                    http_kwargs={"headers": {"A2A-Version": args.version}}, signature_verifier=verifier)
    except Exception as exc:
        print(json.dumps({"valid": False, "error": f"{type(exc).__name__}: {exc}"}))
        return
    print(json.dumps({"valid": True, "payload": _canonicalize_agent_card(checked[0])}, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
