"""Calls to an upstream over a transport this client does not speak (gRPC, over HTTP/2), made by whoever speaks it
(a dialect's `UpstreamTransport`): the pool hands a target's calls to its `Transport`, and reads the answer as one
of its own responses, its failures as its own errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from gateway.upstream.errors import ConnectError, ConnectionBroken, ConnectTimeout, HTTPError
from gateway.upstream.response import Response


class Answer(Protocol):
    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    async def read(self) -> bytes: ...

    def release(self) -> None: ...


class Transport(Protocol):
    async def call(self, url: str, connect_timeout: float, method: str, path: str | None, body: bytes,
                   headers: Mapping[str, str]) -> Answer: ...

    async def close(self) -> None: ...


async def call(transport: Transport, url: str, connect_timeout: float, method: str, path: str | None, body: bytes,
               headers: Mapping[str, str]) -> Response:
    """The transport's answer as a `Response`; no connection within the timeout a `ConnectTimeout`, none at all a
    `ConnectError`."""
    try:
        answer = await transport.call(url, connect_timeout, method, path, body, headers)
    except TimeoutError:
        raise ConnectTimeout(f"no connection within {connect_timeout:g}s") from None
    except ConnectionError as exc:
        raise ConnectError(str(exc) or "no connection could be made") from exc
    return ForeignResponse(answer)


class ForeignResponse(Response):
    """A transport's answer, read as a response of the pool's: the body as it comes, a broken call a
    `ConnectionBroken`. Nothing goes back to the pool: `release()` ends the call if it has not ended. The
    readers that take bytes in the connection's callback (`offer`) are never offered any: they read them."""

    __slots__ = ("_answer",)

    def __init__(self, answer: Answer) -> None:  # no connection: Response's own state is left unset
        self._answer = answer
        self.status = answer.status
        self.headers = dict(answer.headers)
        self.offer = self.splice = None
        self.complete = False
        self.keep_alive = False
        self._error = None  # `drain` reads what is left of the call's end, as a connection's

    async def read(self) -> bytes:
        if self.complete:
            return b""
        try:
            data = await self._answer.read()
        except ConnectionError as exc:
            raise ConnectionBroken(exc) from exc
        if not data:
            self.complete = True
        return data

    def release(self) -> None:
        self._answer.release()


__all__ = ["Answer", "ForeignResponse", "HTTPError", "Transport", "call"]
