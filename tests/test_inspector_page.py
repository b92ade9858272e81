"""The inspector's page in a real browser: Debian's Chromium, driven by Playwright, against a gateway on 127.0.0.1
in front of the built-in agent. What is checked is what a person sees: the runs appearing live, a click on a running
run that the list's updates do not lose, a run in flight filling its timeline, the translation side by side with what
was dropped, the keyboard, the filter, the download, and a browser without the key seeing nothing.

`INSPECTOR_SCREENSHOT=docs/inspector.png` also saves the run view (the picture in docs/inspector.md)."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from e2e import post, request_body, user_message
from gated_upstream import FIRST, REST, GatedAgent
from servers import Served
from test_failover import Switch
from test_judging import scripted_agent

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.recordings.exchange import read
from gateway.server.app import create_app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                  "--disable-background-networking", "--disable-component-update"]
"""As root here, and without reaching for the network that is not there."""
KEY = "inspector-key-for-the-browser-test"


def _browser_missing(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why}: CI installs it (scripts/test)")
    pytest.skip(f"{why} (scripts/test installs it; CI fails without it)")


try:
    from playwright.sync_api import Browser, ElementHandle, Page, expect, sync_playwright
except ImportError:  # pragma: no cover - what scripts/test installs
    sync_playwright = None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if sync_playwright is None:
        _browser_missing("the playwright package is not installed (pip install -e '.[test]')")
    if not Path(CHROMIUM).exists():
        _browser_missing(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


class Gateway:
    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=30)
        self.asked: list[threading.Thread] = []

    def ask(self, path: str, dialect: str, text: str, conversation: str) -> httpx.Response:
        body = request_body(dialect, [user_message(dialect, text)], conversation)
        return post(self.http, f"{self.url}{path}", body)

    def ask_later(self, path: str, dialect: str, text: str, conversation: str) -> threading.Thread:
        thread = threading.Thread(target=self.ask, args=(path, dialect, text, conversation), daemon=True)
        thread.start()
        self.asked.append(thread)
        return thread


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with Served(create_agent_app("ag-kit", pace=0.08, test_hooks=False)) as agkit, \
            Served(create_agent_app("ag-ui", test_hooks=False)) as agui:
        config = GatewayConfig.model_validate({
            "routes": [
                {"name": "chat", "paths": ["/agui"], "client_dialects": ["ag-ui"], "inspector_bodies": True,
                 "upstream": {"url": f"{agkit.url}/send-message", "dialect": "ag-kit",
                              "headers": {"X-Agent-Secret": "upstream-secret-value"}}},
                {"name": "eval", "paths": ["/agent/respond"], "client_dialects": ["agent-respond"],
                 "inspector_bodies": True, "upstream": {"url": f"{agui.url}/agui", "dialect": "ag-ui"}},
            ],
            "store": {"url": "memory://"}, "inspector": {"key": KEY}})
        with Served(create_app(config, store=MemoryStore())) as served:
            gateway = Gateway(served.url)
            yield gateway
            gateway.http.close()


@pytest.fixture
def page(browser: Browser, gateway: Gateway) -> Iterator[Page]:
    context = browser.new_context(accept_downloads=True, viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.goto(f"{gateway.url}/_inspector/?key={KEY}")
    expect(page.locator("#live")).to_have_text("live")
    yield page
    context.close()


def test_a_browser_without_the_key_sees_nothing_but_how_to_get_in(browser: Browser, gateway: Gateway) -> None:
    context = browser.new_context()
    page = context.new_page()
    for path in ("/_inspector/", "/_inspector/api/runs", "/_inspector/assets/inspector.js"):
        response = page.goto(f"{gateway.url}{path}")
        assert response is not None and response.status == 401
        expect(page.locator("body")).to_contain_text("the inspector needs its key")
    page.goto(f"{gateway.url}/_inspector/?key=not-the-key-at-all")
    expect(page.locator("body")).to_contain_text("that is not the inspector's key")
    context.close()


def test_the_key_is_taken_out_of_the_address_bar(page: Page) -> None:
    assert page.url.endswith("/_inspector/")
    assert KEY not in page.url


def test_a_run_shows_up_live_and_its_translation_side_by_side(page: Page, gateway: Gateway) -> None:
    gateway.ask("/agui", "ag-ui", "What is the weather in Paris?", "browser-1")
    row = page.locator("#runs tbody tr", has_text="chat").first
    expect(row).to_contain_text("ag-ui ← ag-kit")
    expect(row).to_contain_text("200")
    expect(row).to_contain_text("success")
    row.click()
    expect(page.locator("#run-title")).to_contain_text("chat · ag-ui ← ag-kit")
    expect(page.locator("#mapping")).to_contain_text("Conversation mapping: delta")
    expect(page.locator("#client-request")).to_contain_text("What is the weather in Paris?")
    expect(page.locator("#upstream-request")).to_contain_text('"conversationId"')
    expect(page.locator("#upstream-request")).not_to_contain_text("upstream-secret-value")
    expect(page.locator("#upstream-request")).not_to_contain_text("x-agent-secret")
    timeline = page.locator("#timeline")
    expect(timeline).to_contain_text('"type":"tool-call-start"')  # the upstream's AG-Kit frame
    expect(timeline).to_contain_text("ToolCallStart")  # the canonical event
    expect(timeline).to_contain_text('"type":"TOOL_CALL_START"')  # what the AG-UI client got
    expect(timeline.locator("tbody tr").first.locator("td").last).to_contain_text("ms")
    if (target := os.environ.get("INSPECTOR_SCREENSHOT")):
        page.set_viewport_size({"width": 1440, "height": 1700})
        page.screenshot(path=target, full_page=False)


def test_what_the_clients_dialect_dropped_is_marked_with_its_reason(page: Page, gateway: Gateway) -> None:
    gateway.ask("/agent/respond", "agent-respond", "think about it", "browser-2")
    row = page.locator("#runs tbody tr", has_text="eval").first
    expect(row).to_contain_text("agent-respond ← ag-ui")
    expect(row).to_contain_text("reasoning")
    row.click()
    expect(page.locator("#timeline .pill", has_text="dropped: reasoning").first).to_be_visible()


def test_the_keyboard_moves_opens_goes_back_and_filters(page: Page, gateway: Gateway) -> None:
    gateway.ask("/agui", "ag-ui", "hello", "browser-3")
    gateway.ask("/agent/respond", "agent-respond", "hello", "browser-4")
    page.reload()  # selects the newest run; the page kept selected the newest it had seen (another test's, or none)
    expect(page.locator("#live")).to_have_text("live")
    rows = page.locator("#runs tbody tr")
    expect(rows.first).to_contain_text("eval")
    expect(rows.first).to_have_attribute("aria-selected", "true")
    page.keyboard.press("j")
    expect(page.locator("#runs tbody tr[aria-selected=true]")).to_contain_text("chat")
    page.keyboard.press("Enter")
    expect(page.locator("#run-view")).to_be_visible()
    expect(page.locator("#run-title")).to_contain_text("chat")
    page.keyboard.press("Escape")
    expect(page.locator("#list-view")).to_be_visible()
    page.keyboard.press("/")
    page.keyboard.type("agent-respond")
    expect(page.locator("#runs tbody tr")).not_to_have_count(0)
    for text in page.locator("#runs tbody tr").all_inner_texts():
        assert "agent-respond ← ag-ui" in text
    expect(page.locator("#count")).to_contain_text(" of ")


@contextmanager
def _watching(browser: Browser, agent: GatedAgent) -> Iterator[tuple[Gateway, Page]]:
    """A gateway whose route `held` (`/agui`) is in front of `agent`, and a page open on its inspector. On the way
    out the gate is opened and the requests asked are waited for, so that no run outlives the test."""
    with Served(agent.app) as upstream:
        config = GatewayConfig.model_validate({
            "routes": [{"name": "held", "paths": ["/agui"], "client_dialects": ["ag-ui"], "inspector_bodies": True,
                        "upstream": {"url": f"{upstream.url}/agui", "dialect": "ag-ui"}}],
            "store": {"url": "memory://"}, "inspector": {"key": KEY}})
        with Served(create_app(config, store=MemoryStore())) as served:
            gateway = Gateway(served.url)
            context = browser.new_context(viewport={"width": 1440, "height": 1000})
            page = context.new_page()
            try:
                page.goto(f"{gateway.url}/_inspector/?key={KEY}")
                expect(page.locator("#live")).to_have_text("live")
                yield gateway, page
            finally:
                agent.gate.set()
                for thread in gateway.asked:
                    thread.join(30)
                context.close()
                gateway.http.close()


def test_a_run_in_flight_fills_its_timeline_as_it_goes(browser: Browser) -> None:
    """The run waits at its upstream's gate after its first words, until the page has shown it running with those
    words; what it says once let go then reaches the open page live. The gate, not a clock: a run paced to last
    seconds may end before a slow browser (Chromium with its CPU throttled 12x to 16x) has clicked its row."""
    agent = GatedAgent()
    with _watching(browser, agent) as (gateway, page):
        thread = gateway.ask_later("/agui", "ag-ui", "hello", "held")
        page.locator("#runs tbody tr.running", has_text="held").click()
        expect(page.locator("#facts")).to_contain_text("running")
        timeline, rows = page.locator("#timeline"), page.locator("#timeline tbody tr")
        expect(timeline).to_contain_text(FIRST)  # every row before the gate is shown
        early = rows.count()
        agent.gate.set()
        thread.join(30)
        expect(page.locator("#facts")).to_contain_text("success")
        expect(timeline).to_contain_text(REST.strip())
        assert rows.count() > early


def test_a_click_on_a_running_run_opens_it_though_the_list_was_redrawn_between_press_and_release(
        browser: Browser) -> None:
    """A run that keeps talking redraws the list at every update; a click is a press and a release on the same row,
    and a redraw between the two must not take that row away."""
    agent = GatedAgent(chatter=0.05)
    with _watching(browser, agent) as (gateway, page):
        gateway.ask_later("/agui", "ag-ui", "hello", "clicked")
        counts = page.locator("#runs tbody tr.running", has_text="held").locator("td").nth(7)
        box = counts.bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()
        before = counts.inner_text()
        expect(counts).not_to_have_text(before)  # the run said more, and the list was redrawn, as the button was down
        page.mouse.up()
        expect(page.locator("#run-view")).to_be_visible()
        expect(page.locator("#run-title")).to_contain_text("held")


def test_a_running_runs_row_stays_the_same_node_as_its_cells_change_and_new_runs_come_above_it(
        browser: Browser) -> None:
    agent = GatedAgent(chatter=0.05)
    with _watching(browser, agent) as (gateway, page):
        first = gateway.ask_later("/agui", "ag-ui", "hello", "first")
        row = page.locator('#runs tbody tr[data-id="1"]')
        node = row.element_handle()
        page.keyboard.press("j")  # the keyboard's focus is on it
        expect(row).to_be_focused()
        counts = row.locator("td").nth(7)
        before = counts.inner_text()
        expect(counts).not_to_have_text(before)
        assert _shown_as(node, '#runs tbody tr[data-id="1"]:focus')
        second = gateway.ask_later("/agui", "ag-ui", "hello", "second")
        expect(page.locator("#runs tbody tr").first).to_have_attribute("data-id", "2")
        assert _shown_as(node, '#runs tbody tr:nth-child(2):focus[aria-selected="true"]')
        agent.gate.set()
        first.join(30)
        second.join(30)
        expect(row).to_contain_text("success")
        assert _shown_as(node, "#runs tbody tr:nth-child(2):not(.running)")


def _shown_as(node: ElementHandle, selector: str) -> bool:
    """Whether `node` is still in the page, as the element `selector` finds."""
    return bool(node.evaluate("(node, selector) => node.isConnected && node === document.querySelector(selector)",
                              selector))


def test_a_run_downloads_as_a_recording_that_reads_back(page: Page, gateway: Gateway, tmp_path: Path) -> None:
    gateway.ask("/agui", "ag-ui", "hello there", "browser-6")
    page.locator("#runs tbody tr", has_text="chat").first.click()
    expect(page.locator("#download")).to_have_attribute("aria-disabled", "false")
    with page.expect_download() as download:
        page.keyboard.press("d")
    saved = tmp_path / "run.jsonl"
    download.value.save_as(saved)
    (exchange,) = read([saved])
    assert exchange.client_dialect == "ag-ui" and exchange.upstream_dialect == "ag-kit"
    assert b"hello there" in exchange.client_body
    raw: Any = orjson.loads(saved.read_bytes())
    assert "upstream-secret-value" not in saved.read_text()
    assert "x-agent-secret" not in raw["upstream"]["headers"]


def test_runs_the_inspector_forgot_leave_the_list(browser: Browser) -> None:
    with Served(create_agent_app("ag-ui", test_hooks=False)) as agent:
        config = GatewayConfig.model_validate({
            "routes": [{"name": "short", "paths": ["/agui"], "client_dialects": ["ag-ui"],
                        "upstream": {"url": f"{agent.url}/agui", "dialect": "ag-ui"}}],
            "store": {"url": "memory://"}, "inspector": {"key": KEY, "max_runs": 2}})
        with Served(create_app(config, store=MemoryStore())) as served:
            gateway = Gateway(served.url)
            context = browser.new_context()
            page = context.new_page()
            page.goto(f"{gateway.url}/_inspector/?key={KEY}")
            expect(page.locator("#live")).to_have_text("live")
            rows = page.locator("#runs tbody tr")
            for shown, conversation in enumerate(("first", "second"), 1):
                gateway.ask("/agui", "ag-ui", "hello", conversation)
                expect(rows).to_have_count(shown)
            gateway.ask("/agui", "ag-ui", "hello", "third")
            expect(page.locator('#runs tbody tr[data-id="3"]')).to_have_count(1)
            expect(page.locator('#runs tbody tr[data-id="1"]')).to_have_count(0)  # the ring keeps two
            expect(rows).to_have_count(2)  # the page shows no run it could no longer open
            context.close()
            gateway.http.close()


def test_a_run_that_moved_shows_the_upstream_that_failed_it_before_the_one_that_answered(browser: Browser) -> None:
    primary = Switch(create_agent_app("ag-ui", test_hooks=False))
    primary.mode = "503"
    with Served(primary) as agui, Served(create_agent_app("vercel", test_hooks=False)) as vercel:
        config = GatewayConfig.model_validate({
            "routes": [{"name": "moving", "paths": ["/kit"], "client_dialects": ["ag-kit"], "inspector_bodies": True,
                        "upstream": {"url": f"{agui.url}/agui", "dialect": "ag-ui"},
                        "fallbacks": [{"url": vercel.url + registry.get("vercel").paths[0], "dialect": "vercel",
                                       "name": "vercel-twin"}]}],
            "store": {"url": "memory://"}, "inspector": {"key": KEY}})
        with Served(create_app(config, store=MemoryStore())) as served:
            gateway = Gateway(served.url)
            context = browser.new_context()
            page = context.new_page()
            page.goto(f"{gateway.url}/_inspector/?key={KEY}")
            expect(page.locator("#live")).to_have_text("live")
            assert gateway.ask("/kit", "ag-kit", "hello", "moving").status_code == 200
            row = page.locator("#runs tbody tr", has_text="moving").first
            expect(row).to_contain_text("moved to vercel-twin")
            row.click()
            attempts = page.locator("#attempts")
            expect(attempts).to_be_visible()
            expect(attempts).to_contain_text("primary · ag-ui")
            expect(attempts).to_contain_text("status (HTTP 503) · upstream_error")
            expect(page.locator("#attempts ~ .requests #upstream-request-title")).to_have_text(  # after the attempts
                "Upstream request (vercel-twin)")
            expect(page.locator("#upstream-request")).to_contain_text("vercel · POST " + vercel.url)
            context.close()
            gateway.http.close()


def test_a_broken_rule_is_shown_beside_the_frame_that_broke_it(browser: Browser) -> None:
    with Served(scripted_agent()) as scripted:
        config = GatewayConfig.model_validate({
            "routes": [{"name": "judged", "paths": ["/judged"], "client_dialects": ["ag-ui"], "inspector_bodies": True,
                        "upstream": {"url": f"{scripted.url}/agui-unfinished", "dialect": "ag-ui"},
                        "judge": {"sample": 1}}],
            "store": {"url": "memory://"}, "inspector": {"key": KEY}})
        with Served(create_app(config, store=MemoryStore())) as served:
            gateway = Gateway(served.url)
            context = browser.new_context(viewport={"width": 1440, "height": 1000})
            page = context.new_page()
            page.goto(f"{gateway.url}/_inspector/?key={KEY}")
            expect(page.locator("#live")).to_have_text("live")
            gateway.ask("/judged", "ag-ui", "hello", "judged")
            row = page.locator("#runs tbody tr", has_text="judged").first
            expect(row).to_contain_text("2 rules broken")
            row.click()
            # The upstream's second event came in the timeline's fourth row (comments came before it): the rule it
            # broke is there, beside that frame, and only there.
            frame = page.locator("#timeline tbody tr").nth(3).locator("td.frame")
            expect(frame.locator("pre")).to_contain_text('"type":"TOOL_CALL_ARGS"')
            broken = frame.locator("ul.broken")
            expect(broken).to_contain_text("upstream · ag-ui tool-call-args-without-start (frame 2)")
            expect(broken).to_contain_text("which was never started (TOOL_CALL_START)")
            expect(page.locator("#timeline ul.broken li")).to_have_count(1)
            # What is about no frame (the stream's end) stays with the run.
            facts = page.locator("#facts")
            expect(facts).to_contain_text("no-terminal-event")
            expect(facts).to_contain_text("1 broken rule shown beside its frame in the timeline")
            expect(facts).not_to_contain_text("tool-call-args-without-start")
            context.close()
            gateway.http.close()
