"""The inspector's HTTP side: the page and its assets, the runs as JSON, a live feed (SSE), and a run as a recording.

Every request needs the inspector's key: `?key=` on the page's address (which sets a cookie for the inspector's
path only, `HttpOnly`, `SameSite=Strict`, `Secure` over https, good for 12 hours and this process only: `session`;
and sends the browser on without the key in its address bar), or
`Authorization: Bearer <key>` / `X-Inspector-Key: <key>`. Nothing is ever loaded from elsewhere (the content
security policy says so to the browser too).
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import AsyncIterator, Callable
from importlib import resources
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route

from gateway.inspector.ring import InspectedRun, RunRing
from gateway.inspector.session import SESSION_SECONDS, Sessions
from gateway.inspector.views import detail, summary
from gateway.recordings.exchange import dumps

COOKIE = "agent_gateway_inspector"
MAX_WATCHERS = 16
"""Live views open at once; past it a new one is refused (429)."""
LIVE_SECONDS = 600.0
"""How long one live view's stream lasts; the page opens another (EventSource reconnects by itself)."""
LIVE_TICK = 0.2
"""How often a live view looks for news."""
PING_SECONDS = 15.0
ASSETS = {"inspector.css": "text/css; charset=utf-8", "inspector.js": "text/javascript; charset=utf-8"}
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff", "referrer-policy": "no-referrer", "cache-control": "no-store",
    "x-frame-options": "DENY",
}


def _asset(name: str) -> bytes:
    return resources.files("gateway.inspector").joinpath("page", name).read_bytes()


class InspectorApp:
    """The inspector's routes, under `path`."""

    def __init__(self, ring: RunRing, key: str, path: str,
                 recording_of: Callable[[InspectedRun], dict[str, Any] | None]) -> None:
        self.ring = ring
        self.path = path
        self._key = key.encode()
        self._sessions = Sessions()
        self._recording_of = recording_of
        self._page = _asset("index.html").replace(b"{{base}}", path.encode())

    def routes(self) -> list[BaseRoute]:
        return [Mount(self.path, routes=[
            Route("/", self.page, methods=["GET"]),
            Route("/assets/{name}", self.asset, methods=["GET"]),
            Route("/api/runs", self.runs, methods=["GET"]),
            Route("/api/runs/{number:int}", self.run, methods=["GET"]),
            Route("/api/runs/{number:int}/recording", self.recording, methods=["GET"]),
            Route("/api/live", self.live, methods=["GET"]),
        ]), Route(self.path, self.page, methods=["GET"])]

    def _allowed(self, request: Request) -> bool:
        given = request.headers.get("x-inspector-key") or ""
        authorization = request.headers.get("authorization", "")
        if authorization[:7].lower() == "bearer ":
            given = authorization[7:].strip()
        if given:
            return hmac.compare_digest(given.encode(), self._key)
        return self._sessions.valid(request.cookies.get(COOKIE, ""))

    async def page(self, request: Request) -> Response:
        offered = request.query_params.get("key")
        if offered is not None:
            if not hmac.compare_digest(offered.encode(), self._key):
                return _refused("that is not the inspector's key")
            response = RedirectResponse(f"{self.path}/", status_code=303, headers=SECURITY_HEADERS)
            # The scheme is the request's as uvicorn saw it: https when it served TLS itself, or when a proxy it
            # trusts (FORWARDED_ALLOW_IPS, loopback by default) said so in X-Forwarded-Proto.
            response.set_cookie(COOKIE, self._sessions.issue(), max_age=SESSION_SECONDS, path=self.path,
                                httponly=True, samesite="strict", secure=request.url.scheme == "https")
            return response
        if not self._allowed(request):
            return _refused("open the address the gateway printed, with its ?key=")
        return Response(self._page, media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)

    async def asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        if not self._allowed(request):
            return _refused("the inspector's key is needed")
        if name not in ASSETS:
            return _json({"error": {"code": "not_found", "message": f"no asset {name}"}}, 404)
        return Response(_asset(name), media_type=ASSETS[name], headers=SECURITY_HEADERS)

    async def runs(self, request: Request) -> Response:
        if not self._allowed(request):
            return _refused("the inspector's key is needed")
        return _json({"runs": [summary(run) for run in self.ring], "watched": self.ring.watched})

    async def run(self, request: Request) -> Response:
        if not self._allowed(request):
            return _refused("the inspector's key is needed")
        run = self.ring.get(request.path_params["number"])
        if run is None:
            return _json({"error": {"code": "not_found", "message": "no such run: it may have been forgotten "
                                                                    "(the inspector keeps the last runs)"}}, 404)
        return _json(detail(run))

    async def recording(self, request: Request) -> Response:
        if not self._allowed(request):
            return _refused("the inspector's key is needed")
        run = self.ring.get(request.path_params["number"])
        if run is None or run.capture is None:
            why = ("no such run" if run is None else "this run was not captured: runs are captured from when the "
                   "page is open (or with inspector.capture: always)")
            return _json({"error": {"code": "not_found", "message": why}}, 404)
        if not run.bodies:
            return _json({"error": {"code": "forbidden", "message": "this route does not let the inspector show "
                                    "bodies (inspector_bodies: true), and a recording is all bodies"}}, 403)
        exchange = self._recording_of(run)
        if exchange is None:
            return _json({"error": {"code": "not_ready", "message": "the run has not ended yet"}}, 409)
        name = f"run-{run.record.request_id}.jsonl".replace('"', "")
        return Response(dumps(exchange), media_type="application/x-ndjson",
                        headers={**SECURITY_HEADERS, "content-disposition": f'attachment; filename="{name}"'})

    async def live(self, request: Request) -> Response:
        if not self._allowed(request):
            return _refused("the inspector's key is needed")
        if self.ring.watchers >= MAX_WATCHERS:
            return _json({"error": {"code": "too_many_watchers", "message": f"{MAX_WATCHERS} live views are open"}},
                         429)
        try:
            number = int(request.query_params.get("run") or 0)
            after = int(request.query_params.get("after") or 0)
        except ValueError:
            return _json({"error": {"code": "bad_request", "message": "run and after are numbers"}}, 400)
        return StreamingResponse(self._feed(number, after), media_type="text/event-stream",
                                 headers={**SECURITY_HEADERS, "x-accel-buffering": "no"})

    async def _feed(self, number: int, after: int) -> AsyncIterator[bytes]:
        """What changed, as it changes: first the numbers of the runs kept (`kept`), then run lines (`runs`), runs
        the ring forgot (`gone`), and the followed run's new rows (`run`). Bounded by `LIVE_SECONDS`; the page comes
        back for more."""
        ring = self.ring
        ring.watch()
        shown: dict[int, bytes] = {}
        # Ended runs whose last line was sent, with the capture it showed: such a line changes no more unless the
        # ring frees that capture, so it is not built again each tick.
        settled: dict[int, object] = {}
        version = -1
        whole_sent = False
        first = True
        started = last = time.monotonic()
        try:
            yield b"retry: 1000\n\n"
            while time.monotonic() - started < LIVE_SECONDS:
                changed = []
                for run in ring:
                    if run.ended:
                        seen = (run.capture, run.violations)  # a judge's verdict comes after the end
                        if run.number in settled and settled[run.number] == seen:
                            continue
                        settled[run.number] = seen
                    line = summary(run)
                    packed = orjson.dumps(line)
                    if shown.get(run.number) != packed:
                        shown[run.number] = packed
                        changed.append(line)
                news = []
                if first:  # the page may hold runs the ring has forgotten since it last looked
                    news.append(b"event: kept\ndata: " + orjson.dumps(list(ring.runs)) + b"\n\n")
                    first = False
                gone = sorted(set(shown) - set(ring.runs))
                for forgotten in gone:
                    del shown[forgotten]
                    settled.pop(forgotten, None)
                if gone:
                    news.append(b"event: gone\ndata: " + orjson.dumps(gone) + b"\n\n")
                if changed:
                    news.append(b"event: runs\ndata: " + orjson.dumps(changed) + b"\n\n")
                followed = ring.get(number) if number else None
                capture = followed.capture if followed is not None else None
                if followed is not None and capture is not None and capture.version != version:
                    version = capture.version
                    # The last row shown may have been written since; once the run has ended, every row may have
                    # been (a one-body reply is written at its end): then the whole timeline, once.
                    start = 0 if capture.client_done and not whole_sent else max(0, after - 1)
                    whole_sent = whole_sent or capture.client_done
                    view = detail(followed, start)
                    after = start + len(view.get("rows", ()))
                    news.append(b"event: run\ndata: " + orjson.dumps(view) + b"\n\n")
                if news:
                    last = time.monotonic()
                    yield b"".join(news)
                elif time.monotonic() - last > PING_SECONDS:
                    last = time.monotonic()
                    yield b": ping\n\n"
                await asyncio.sleep(LIVE_TICK)
        finally:
            ring.unwatch()


def _json(value: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(value), status_code=status, media_type="application/json", headers=SECURITY_HEADERS)


def _refused(why: str) -> Response:
    return PlainTextResponse(f"401: the inspector needs its key: {why}\n", status_code=401, headers=SECURITY_HEADERS)
