"""The inspector's server side: never reachable without its key, refused beyond loopback without one, bounded in
runs and bytes, nothing kept (and nothing added to a run) when it is off or nobody watches, and what people said
shown only where the route allows it. The page itself is tested in a browser (test_inspector_page.py)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from e2e import post, request_body, user_message
from helpers import ROOT
from servers import Served
from test_failover import Switch

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.inspector import app as inspector_app
from gateway.inspector.app import InspectorApp
from gateway.inspector.options import InspectorOptions
from gateway.inspector.ring import InspectedRun, RunRing
from gateway.inspector.views import summary
from gateway.recordings.capture import RunCapture
from gateway.recordings.exchange import parse
from gateway.server.app import create_app
from gateway.server.operations.record import AccessRecord
from gateway.server.route import RouteHandler

KEY = "the-inspectors-own-key-0123"
AUTH = {"authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def agent() -> Iterator[str]:
    with Served(create_agent_app("ag-ui", test_hooks=False)) as served:
        yield served.url


def _config(agent: str, inspector: dict[str, Any] | None, **route: Any) -> GatewayConfig:
    return GatewayConfig.model_validate({
        "routes": [{"name": "r", "paths": ["/agui"], "client_dialects": ["ag-ui"],
                    "upstream": {"url": f"{agent}/agui", "dialect": "ag-ui"}, **route}],
        "store": {"url": "memory://"}, **({"inspector": inspector} if inspector is not None else {})})


def _ask(http: httpx.Client, gateway: Served, text: str = "hello", conversation: str = "c") -> None:
    response = post(http, f"{gateway.url}/agui", request_body("ag-ui", [user_message("ag-ui", text)], conversation))
    assert response.status_code == 200


def _runs(http: httpx.Client, gateway: Served) -> list[dict[str, Any]]:
    response = http.get(f"{gateway.url}/_inspector/api/runs", headers=AUTH)
    assert response.status_code == 200
    return list(response.json()["runs"])


def test_without_its_key_the_inspector_answers_nothing(agent: str) -> None:
    with Served(create_app(_config(agent, {"key": KEY, "capture": "always"}))) as gateway, httpx.Client() as http:
        _ask(http, gateway)
        paths = ["/_inspector", "/_inspector/", "/_inspector/assets/inspector.js", "/_inspector/api/runs",
                 "/_inspector/api/runs/1", "/_inspector/api/runs/1/recording", "/_inspector/api/live"]
        for path in paths:
            for headers in ({}, {"authorization": "Bearer not-the-key"}, {"x-inspector-key": KEY[:-1]},
                            {"cookie": "agent_gateway_inspector=forged"}):
                response = http.get(f"{gateway.url}{path}", headers=headers)
                assert response.status_code == 401, (path, headers)
                assert b"hello" not in response.content
        assert http.get(f"{gateway.url}/_inspector/api/runs/1", headers=AUTH).status_code == 200
        entered = http.get(f"{gateway.url}/_inspector/?key={KEY}", follow_redirects=False)
        assert entered.status_code == 303 and KEY not in entered.headers["location"]
        cookie = entered.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/_inspector" in cookie
        assert KEY not in cookie
        page = http.get(f"{gateway.url}/_inspector/")  # the cookie it set
        assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
        assert b"http://" not in page.content and b"https://" not in page.content  # nothing from elsewhere


def test_the_page_carries_its_own_icon_so_a_browser_asks_the_gateway_for_no_favicon(agent: str) -> None:
    """Without one, every load of the page costs a `GET /favicon.ico`, and the gateway's log a 404 line."""
    import re

    with Served(create_app(_config(agent, {"key": KEY}))) as gateway:
        page = httpx.get(f"{gateway.url}/_inspector/", headers=AUTH)
    icons = re.findall(rb'<link rel="icon" href="([^"]*)">', page.content)
    assert icons and all(icon.startswith(b"data:") for icon in icons)
    assert "img-src 'self' data:" in page.headers["content-security-policy"]  # the page's icon may be shown


def _entered(url: str, verify: ssl.SSLContext | bool = True, **headers: str) -> str:
    """The Set-Cookie header of a browser's first visit, with the key in the address."""
    entered = httpx.get(f"{url}/_inspector/?key={KEY}", headers=headers, follow_redirects=False, verify=verify)
    assert entered.status_code == 303
    return entered.headers["set-cookie"]


def _cookie(set_cookie: str) -> str:
    name, _, value = set_cookie.split(";")[0].partition("=")
    assert name == inspector_app.COOKIE
    return value


def _runs_with(url: str, cookie: str) -> int:
    return httpx.get(f"{url}/_inspector/api/runs", headers={"cookie": f"{inspector_app.COOKIE}={cookie}"}).status_code


def test_the_inspectors_cookie_lets_a_browser_in_for_12_hours_and_only_where_it_was_set(
        agent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(agent, {"key": KEY})
    with Served(create_app(config)) as gateway, Served(create_app(config)) as restarted:
        set_cookie = _entered(gateway.url)
        assert "max-age=43200" in set_cookie.lower()
        cookie = _cookie(set_cookie)
        assert _runs_with(gateway.url, cookie) == 200
        assert _runs_with(restarted.url, cookie) == 401  # another process, or this one after a restart
        expires, _, signature = cookie.partition(".")
        assert _runs_with(gateway.url, f"{int(expires) + 3600}.{signature}") == 401
        fixed = hmac.new(KEY.encode(), b"agent-gateway inspector session", hashlib.sha256).hexdigest()
        assert _runs_with(gateway.url, fixed) == 401  # what the cookie was when it was the key's alone
        monkeypatch.setattr("gateway.inspector.session.SESSION_SECONDS", -1)
        assert _runs_with(gateway.url, _cookie(_entered(gateway.url))) == 401  # set expired: past its time


def test_the_inspectors_cookie_is_secure_when_the_page_is_reached_over_https(agent: str, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    config = _config(agent, {"key": KEY})
    with Served(create_app(config), ssl_certfile=str(cert), ssl_keyfile=str(key)) as over_tls, \
            Served(create_app(config)) as plain:
        assert over_tls.url.startswith("https://")
        assert "; secure" in _entered(over_tls.url, verify=ssl.create_default_context(cafile=cert)).lower()
        assert "secure" not in _entered(plain.url).lower()
        # Behind a proxy that ends TLS: uvicorn takes its X-Forwarded-Proto from the addresses it trusts (loopback).
        assert "; secure" in _entered(plain.url, **{"x-forwarded-proto": "https"}).lower()


def test_a_listener_beyond_loopback_refuses_an_inspector_without_a_key() -> None:
    with pytest.raises(ValueError, match=r"inspector\.key"):
        InspectorOptions().key_for("0.0.0.0")
    assert len(InspectorOptions().key_for("127.0.0.1")) >= 16
    assert InspectorOptions(key=KEY).key_for("0.0.0.0") == KEY
    with pytest.raises(ValueError, match="16 characters"):
        InspectorOptions(key="short")
    result = subprocess.run([sys.executable, "-m", "gateway", "serve", "--inspector", "--host", "0.0.0.0",
                             "--upstream", "http://127.0.0.1:9/agui", "--upstream-dialect", "ag-ui",
                             "--store", "memory://", "--log-format", "human"],
                            capture_output=True, text=True, timeout=60, cwd=ROOT,
                            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2
    assert "needs inspector.key" in result.stderr and "Traceback" not in result.stderr


def test_the_inspector_keeps_the_last_max_runs(agent: str) -> None:
    config = _config(agent, {"key": KEY, "max_runs": 3, "capture": "always"})
    with Served(create_app(config)) as gateway, httpx.Client(timeout=30) as http:
        for index in range(5):
            _ask(http, gateway, f"hello {index}", f"c{index}")
        runs = _runs(http, gateway)
    assert [run["id"] for run in runs] == [5, 4, 3]
    assert [run["conversation_id"] for run in runs] == ["c4", "c3", "c2"]


def test_past_max_bytes_the_oldest_captures_go_and_a_run_too_large_is_cut(agent: str) -> None:
    config = _config(agent, {"key": KEY, "max_bytes": 12_000, "capture": "always"}, inspector_bodies=True)
    with Served(create_app(config)) as gateway, httpx.Client(timeout=30) as http:
        for index in range(6):
            _ask(http, gateway, f"hello {index}", f"c{index}")
        runs = _runs(http, gateway)
        assert runs[0]["captured"] and not runs[-1]["captured"]  # the newest kept whole, the oldest's freed
        _ask(http, gateway, "hello " + "x" * 20_000, "big")
        big = _runs(http, gateway)[0]
        assert big["captured"] and big["truncated"]
        detail = http.get(f"{gateway.url}/_inspector/api/runs/{big['id']}", headers=AUTH).json()
        assert detail["truncated"] and len(detail["rows"]) < big["events_in"]
        # What was not kept is still counted: a cut run's line says how many frames and events it had.
        assert big["frames_in"] > len([row for row in detail["rows"] if row["source"] == "upstream"])
        assert big["events_out"] == big["events_in"] - 1  # the agent's usage report rides on AG-UI's run end


def test_runs_are_captured_only_while_the_page_watches(agent: str) -> None:
    with Served(create_app(_config(agent, {"key": KEY}))) as gateway, httpx.Client(timeout=30) as http:
        _ask(http, gateway, "unwatched", "c1")
        assert not _runs(http, gateway)[0]["captured"]
        watching = threading.Event()
        stop = threading.Event()

        def watch() -> None:
            with httpx.Client(timeout=30) as viewer, \
                    viewer.stream("GET", f"{gateway.url}/_inspector/api/live", headers=AUTH) as feed:
                watching.set()
                for _ in feed.iter_raw():
                    if stop.is_set():
                        return

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        assert watching.wait(10)
        time.sleep(0.3)
        _ask(http, gateway, "watched", "c2")
        stop.set()
        thread.join(10)
        runs = _runs(http, gateway)
    assert runs[0]["conversation_id"] == "c2" and runs[0]["captured"]
    assert runs[1]["conversation_id"] == "c1" and not runs[1]["captured"]
    assert runs[1]["events_in"] > 0 and runs[1]["status"] == 200  # its line is all there is of it


def test_nothing_is_kept_or_added_to_a_run_when_the_inspector_is_off(agent: str) -> None:
    app = create_app(_config(agent, None))
    handlers = [handler for handler, _ in app.handlers.values()]
    assert handlers and all(isinstance(h, RouteHandler) and h.observer is None for h in handlers)
    with Served(app) as gateway, httpx.Client(timeout=30) as http:
        _ask(http, gateway)
        assert http.get(f"{gateway.url}/_inspector/", headers=AUTH).status_code == 404


def test_without_bodies_the_inspector_shows_what_was_said_as_its_shape(agent: str) -> None:
    config = _config(agent, {"key": KEY, "capture": "always"})
    with Served(create_app(config)) as gateway, httpx.Client(timeout=30) as http:
        _ask(http, gateway, "my private words", "c1")
        detail = http.get(f"{gateway.url}/_inspector/api/runs/1", headers=AUTH)
        text = detail.text
        assert "private words" not in text and "You said" not in text
        assert '\\"type\\":\\"TEXT_MESSAGE_CONTENT\\"' in text and "TextDelta" in text
        assert detail.json()["client_request"]["body"]["messages"][0]["content"] == "[16 characters]"
        download = http.get(f"{gateway.url}/_inspector/api/runs/1/recording", headers=AUTH)
        assert download.status_code == 403 and "private" not in download.text


@pytest.mark.parametrize("bodies", [False, True])
def test_a_body_nested_deeper_than_any_route_takes_is_shown_as_text_never_a_500(agent: str, bodies: bool) -> None:
    """A client's body is captured before its depth is checked: one nested as deep as the parser goes is refused,
    and the inspector shows it as text (or its length) rather than failing to walk it; one that also holds a
    credential, which could not be written back without it, as `[redacted]` whole."""
    deep = '{"threadId": "t", "runId": "r", "messages": [], "state": ' + '{"d": ' * 900 + "1" + "}" * 901
    with_token = deep[:-1] + ', "token": "a-token-never-shown"}'
    config = _config(agent, {"key": KEY, "capture": "always"}, inspector_bodies=bodies)
    with Served(create_app(config)) as gateway, httpx.Client(timeout=30) as http:
        for body in (deep, with_token):
            refused = http.post(f"{gateway.url}/agui", content=body, headers={"content-type": "application/json"})
            assert refused.status_code == 400
        shown = [http.get(f"{gateway.url}/_inspector/api/runs/{n}", headers=AUTH) for n in (1, 2)]
        assert [r.status_code for r in shown] == [200, 200], shown[0].text[:200]
        assert shown[0].json()["client_request"]["body"] == (deep if bodies else f"[{len(deep)} bytes]")
        assert shown[1].json()["client_request"]["body"] == ("[redacted]" if bodies else "[10 characters]")


def test_a_live_view_sends_an_ended_runs_line_once_until_its_capture_is_freed(monkeypatch: pytest.MonkeyPatch
                                                                               ) -> None:
    ring = RunRing(10, 1_000_000)
    app = InspectorApp(ring, KEY, "/_inspector", lambda run: None)
    ended = ring.begin(_record("r1"), RunCapture("r1", "r", limit=1000), False)
    going = ring.begin(_record("r2"), None, False)
    built: list[int] = []

    def counted(run: InspectedRun) -> dict[str, Any]:
        built.append(run.number)
        return summary(run)

    monkeypatch.setattr(inspector_app, "summary", counted)
    monkeypatch.setattr(inspector_app, "LIVE_TICK", 0.01)

    async def watch() -> None:
        feed = app._feed(0, 0)
        assert await anext(feed) == b"retry: 1000\n\n"
        first = _events(await anext(feed))
        assert {line["id"]: line["in_flight"] for line in first["runs"]} == {1: True, 2: True}
        ended.end()
        assert [(line["id"], line["in_flight"]) for line in _runs_of(await anext(feed))] == [(1, False)]
        built.clear()
        for events in range(1, 4):  # the other run changes, tick after tick: the ended one is not built again
            going.record.events = events
            assert [line["id"] for line in _runs_of(await anext(feed))] == [2]
        assert 1 not in built
        ended.capture = None  # what the ring does past max_bytes: the line says it is no longer captured
        assert [(line["id"], line["captured"]) for line in _runs_of(await anext(feed))] == [(1, False)]
        await feed.aclose()

    asyncio.run(watch())
    assert ring.watchers == 0


def test_a_live_view_tells_the_page_which_runs_the_ring_forgot() -> None:
    ring = RunRing(2, 1_000_000)
    app = InspectorApp(ring, KEY, "/_inspector", lambda run: None)
    for request_id in ("r1", "r2"):
        ring.begin(_record(request_id), None, False)

    async def watch() -> None:
        feed = app._feed(0, 0)
        await anext(feed)
        assert _events(await anext(feed))["kept"] == [1, 2]  # a page holding runs from before drops the others
        ring.begin(_record("r3"), None, False)  # past max_runs: run 1 is forgotten
        news = _events(await anext(feed))
        assert news["gone"] == [1] and [line["id"] for line in news["runs"]] == [3]
        await feed.aclose()

    asyncio.run(watch())


def _record(request_id: str) -> AccessRecord:
    return AccessRecord(request_id=request_id, route="r", upstream_dialect="ag-ui")


def _events(chunk: bytes) -> dict[str, Any]:
    """A live view's chunk: each event's name and its data."""
    found = {}
    for message in chunk.decode().split("\n\n"):
        if message.startswith("event: "):
            name, _, data = message.partition("\ndata: ")
            found[name.removeprefix("event: ")] = orjson.loads(data)
    return found


def _runs_of(chunk: bytes) -> list[dict[str, Any]]:
    return list(_events(chunk)["runs"])


def test_past_the_live_views_it_allows_the_inspector_refuses_another(agent: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inspector_app, "MAX_WATCHERS", 1)
    monkeypatch.setattr(inspector_app, "LIVE_SECONDS", 5.0)  # a view let in by mistake ends soon
    with Served(create_app(_config(agent, {"key": KEY}))) as gateway, httpx.Client(timeout=30) as http, \
            http.stream("GET", f"{gateway.url}/_inspector/api/live", headers=AUTH) as first:
        pieces = first.iter_raw()  # kept: a reader let go closes its stream, and the view with it
        assert next(pieces).startswith(b"retry:")  # watching now
        refused = http.get(f"{gateway.url}/_inspector/api/live", headers=AUTH)
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_watchers"


def test_a_run_that_moved_lists_the_upstream_that_failed_it_before_the_one_that_answered() -> None:
    """The run's own upstream request and answer are the fallback's; the primary's are an attempt, with why it failed.
    The fallback's configured headers are kept out as the primary's are."""
    primary = Switch(create_agent_app("ag-ui"))
    primary.mode = "503"
    with Served(primary) as agui, Served(create_agent_app("vercel", test_hooks=False)) as vercel:
        vercel_url = vercel.url + registry.get("vercel").paths[0]
        config = GatewayConfig.model_validate({
            "routes": [{"name": "kit", "paths": ["/kit"], "client_dialects": ["ag-kit"], "inspector_bodies": True,
                        "upstream": {"url": f"{agui.url}/agui", "dialect": "ag-ui"},
                        "fallbacks": [{"url": vercel_url, "dialect": "vercel", "name": "vercel-twin",
                                       "headers": {"X-Twin-Secret": "twin-secret-value"}}]}],
            "store": {"url": "memory://"}, "inspector": {"key": KEY, "capture": "always"}})
        with Served(create_app(config)) as gateway, httpx.Client(timeout=30) as http:
            reply = post(http, f"{gateway.url}/kit", request_body("ag-kit", [user_message("ag-kit", "hi")], "moved"))
            assert reply.status_code == 200 and primary.runs == 1
            shown = http.get(f"{gateway.url}/_inspector/api/runs/1", headers=AUTH)
            recording = http.get(f"{gateway.url}/_inspector/api/runs/1/recording", headers=AUTH)
    detail = shown.json()
    assert (detail["run"]["upstream"], detail["run"]["failovers"]) == ("vercel-twin", "primary: status")
    (attempt,) = detail["attempts"]
    assert {key: attempt[key] for key in ("upstream", "dialect", "url", "reason", "error", "status")} == {
        "upstream": "primary", "dialect": "ag-ui", "url": f"{agui.url}/agui", "reason": "status",
        "error": "upstream_error", "status": 503}
    assert attempt["response"]["status"] == 503 and attempt["took_ms"] >= 0
    assert attempt["request"]["url"] == f"{agui.url}/agui" and "hi" in str(attempt["request"]["body"])
    assert detail["upstream_request"]["url"] == vercel_url and detail["upstream_response"]["status"] == 200
    assert attempt["began_ms"] + attempt["took_ms"] <= detail["upstream_request"]["sent_ms"]
    assert "twin-secret-value" not in shown.text and "x-twin-secret" not in shown.text.lower()

    exchange = parse(recording.content, "download")  # what the fallback answered, as replay reads it
    assert exchange.upstream_dialect == "vercel" and exchange.upstream_response.status == 200
    assert [(a["upstream"], a["reason"], a["status"]) for a in exchange.raw["attempts"]] == [
        ("primary", "status", 503)]
