"""Recordings on disk: credentials never in them, bounded in the size and number of files, and what the command
line does with them (judge them offline, translate them, refuse what is not one)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from e2e import Reply, post, request_body, user_message
from helpers import ROOT, decode
from replaying import converse
from servers import Served, closed_port

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.codec import UpstreamRequest
from gateway.recordings import files as files_module
from gateway.recordings.capture import RunCapture
from gateway.recordings.exchange import Recorded, parse, read
from gateway.recordings.files import RecordingFiles
from gateway.recordings.options import RecordOptions
from gateway.recordings.replay import ReplayApp
from gateway.server.app import create_app
from gateway.server.operations.record import AccessRecord

CLIENT_KEY = "client-key-that-must-never-be-recorded"
UPSTREAM_SECRET = "upstream-secret-that-must-never-be-recorded"


@pytest.fixture(scope="module")
def agent() -> Iterator[str]:
    with Served(create_agent_app("ag-ui", test_hooks=False)) as served:
        yield served.url


def _gateway(agent: str, record: dict[str, Any], inspector: dict[str, Any] | None = None, **route: Any) -> Served:
    config = GatewayConfig.model_validate({"routes": [{
        "name": "rec", "paths": ["/agui"], "client_dialects": ["ag-ui"],
        "upstream": {"url": f"{agent}/agui", "dialect": "ag-ui"}, "record": record, **route}],
        "store": {"url": "memory://"}, **({"inspector": inspector} if inspector is not None else {})})
    return Served(create_app(config, store=MemoryStore()))


def _ask(gateway: Served, text: str, conversation: str, headers: dict[str, str] | None = None) -> httpx.Response:
    with httpx.Client(timeout=30) as http:
        return post(http, f"{gateway.url}/agui", request_body("ag-ui", [user_message("ag-ui", text)], conversation),
                    headers)


def test_credentials_and_the_routes_upstream_headers_never_reach_a_recording(agent: str, tmp_path: Path) -> None:
    route = {"auth": {"keys": [CLIENT_KEY]}, "forward_headers": ["x-session-token", "x-user-id"],
             "upstream": {"url": f"{agent}/agui?signature=query-secret", "dialect": "ag-ui",
                          "headers": {"X-Agent-Auth": UPSTREAM_SECRET, "X-Plain": "also-configured"}}}
    with _gateway(agent, {"dir": str(tmp_path)}, **route) as gateway:
        response = _ask(gateway, "hello", "secret-1", {"authorization": f"Bearer {CLIENT_KEY}",
                                                       "cookie": "session=cookie-secret",
                                                       "x-session-token": "token-secret", "x-user-id": "u-7"})
        assert response.status_code == 200
    text = b"".join(path.read_bytes() for path in tmp_path.glob("*.jsonl")).decode()
    for secret in (CLIENT_KEY, UPSTREAM_SECRET, "also-configured", "cookie-secret", "token-secret", "query-secret"):
        assert secret not in text
    (exchange,) = read(sorted(tmp_path.glob("*.jsonl")))
    upstream = exchange.raw["upstream"]
    assert "x-agent-auth" not in upstream["headers"] and "x-plain" not in upstream["headers"]
    assert upstream["headers"]["x-session-token"] == "[redacted]"
    assert upstream["headers"]["x-user-id"] == "u-7"
    assert upstream["url"] == f"{agent}/agui"
    assert "authorization" not in exchange.raw["client"]["headers"]
    assert b"hello" in exchange.client_body  # bodies are kept: replaying needs them


def test_a_run_every_upstream_failed_is_recorded_as_the_last_one_asked_with_each_attempt() -> None:
    """On a route with fallbacks: the last upstream failed before it was asked (its document unavailable), so the
    recording's upstream is the one before it, in that one's dialect; `attempts` says both."""
    now = [0.0]
    capture = RunCapture("r1", "kit", limit=100_000, clock=lambda: now[0], origin=0.0)
    capture.upstream_asked("http://127.0.0.1:1/agui?key=k", UpstreamRequest(b'{"threadId": "t"}'), {}, None)
    now[0] = 0.5
    capture.upstream_answered(503, [("content-type", "text/plain")])
    capture.upstream_failed("primary", "ag-ui", "http://127.0.0.1:1/agui", "status", "upstream_error", 0.0)
    now[0] = 0.75
    capture.upstream_failed("twin", "a2a", "http://user:pw@127.0.0.1:2/a2a?key=k", "unavailable", "upstream_error",
                            0.5)
    recorded = capture.exchange(AccessRecord(request_id="r1", route="kit", upstream_dialect="a2a"), "ag-kit", "a2a")
    assert recorded["upstream"]["dialect"] == "ag-ui" and recorded["upstream"]["url"] == "http://127.0.0.1:1/agui"
    assert recorded["upstream_response"]["status"] == 503
    assert recorded["attempts"] == [
        {"upstream": "primary", "dialect": "ag-ui", "url": "http://127.0.0.1:1/agui", "reason": "status",
         "error": "upstream_error", "began": 0.0, "ended": 0.5, "status": 503},
        {"upstream": "twin", "dialect": "a2a", "url": "http://127.0.0.1:2/a2a", "reason": "unavailable",
         "error": "upstream_error", "began": 0.5, "ended": 0.75, "status": None}]
    assert parse(orjson.dumps(recorded), "here").upstream_dialect == "ag-ui"


def test_a_run_that_moved_is_recorded_as_the_upstream_that_answered_and_replays_as_it(
        tmp_path: Path) -> None:
    fallback = create_agent_app("vercel", test_hooks=False)
    with Served(fallback) as vercel:
        url = vercel.url + registry.get("vercel").paths[0]
        route = {"upstream": {"url": f"http://127.0.0.1:{closed_port()}/agui", "dialect": "ag-ui"},
                 "fallbacks": [{"url": url, "dialect": "vercel", "name": "twin"}]}
        with _gateway("", {"dir": str(tmp_path)}, **route) as gateway:
            assert _ask(gateway, "hello", "moved").status_code == 200
    (exchange,) = read(sorted(tmp_path.glob("*.jsonl")))
    assert exchange.upstream_dialect == "vercel"
    assert [(a["upstream"], a["reason"]) for a in exchange.raw["attempts"]] == [("primary", "unreachable")]
    with Served(ReplayApp([exchange], speed=None)) as replay, httpx.Client(timeout=30) as http:
        replayed = http.post(f"{replay.url}{registry.get('vercel').paths[0]}", content=exchange.upstream_body,
                             headers={"content-type": "application/json"})
    assert replayed.status_code == 200 and replayed.content == exchange.upstream_response.body


PUSH_TOKEN = "push-token-that-must-never-be-recorded"
PUSH_CREDENTIALS = "push-credentials-that-must-never-be-recorded"
API_KEY = "api-key-in-a-body-that-must-never-be-recorded"
INSPECTOR = {"key": "the-inspectors-own-key-0123", "capture": "always"}


def _rpc(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = httpx.post(url, content=orjson.dumps(body), timeout=30,
                          headers={"content-type": "application/json", "a2a-version": "1.0"})
    assert response.status_code == 200 and "result" in response.json(), response.text
    answer: dict[str, Any] = response.json()["result"]
    return answer


def test_credentials_in_bodies_reach_neither_a_recording_nor_the_inspector_and_their_shape_is_kept(
        agent: str, tmp_path: Path) -> None:
    """An A2A push config's `token` and `credentials`, from the client's request and from the answer that reads it
    back, and a client's field passed on to the upstream, are `[redacted]`: their names and what is not a
    credential (token counts) are kept, and the recording still replays."""
    config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "inspector": INSPECTOR, "routes": [
        {"name": "tasks", "paths": ["/a2a"], "client_dialects": ["a2a"], "push": {"allow_hosts": ["127.0.0.1"]},
         "upstream": {"url": f"{agent}/agui", "dialect": "ag-ui"}, "record": {"dir": str(tmp_path / "a2a")},
         "inspector_bodies": True},
        {"name": "agui", "paths": ["/agui"], "client_dialects": ["ag-ui"],
         "upstream": {"url": f"{agent}/agui", "dialect": "ag-ui"}, "record": {"dir": str(tmp_path / "agui")},
         "inspector_bodies": True}]})
    push = {"url": f"{agent}/hook", "token": PUSH_TOKEN,
            "authentication": {"scheme": "Bearer", "credentials": PUSH_CREDENTIALS}}
    props = {"api_key": API_KEY, "session": {"accessToken": API_KEY, "refresh_token": None},
             "usage": {"input_tokens": 12, "max_tokens": 100}, "author": "Ada"}
    agui = request_body("ag-ui", [user_message("ag-ui", "hello")], "redacted", forwardedProps=props)
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=30) as http:
        task = _rpc(f"{gateway.url}/a2a", "SendMessage", {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "please interrupt"}]},
            "configuration": {"taskPushNotificationConfig": push}})["task"]
        listed = _rpc(f"{gateway.url}/a2a", "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
        assert listed["configs"][0]["token"] == PUSH_TOKEN  # the client is told what it registered
        answered = post(http, f"{gateway.url}/agui", agui)
        assert answered.status_code == 200
        auth = {"x-inspector-key": INSPECTOR["key"]}
        shown = [http.get(f"{gateway.url}/_inspector/api/runs/{n}", headers=auth) for n in (1, 2, 3)]
        downloads = [http.get(f"{gateway.url}/_inspector/api/runs/{n}/recording", headers=auth) for n in (1, 2, 3)]
    recorded = b"".join(path.read_bytes() for path in tmp_path.glob("*/*.jsonl")).decode()
    for text in (recorded, *(r.text for r in shown), *(r.text for r in downloads)):
        for secret in (PUSH_TOKEN, PUSH_CREDENTIALS, API_KEY):
            assert secret not in text
    assert all(r.status_code == 200 for r in shown + downloads)
    (a2a,) = read(sorted((tmp_path / "a2a").glob("*.jsonl")))
    sent_push = orjson.loads(a2a.client_body)["params"]["configuration"]["taskPushNotificationConfig"]
    assert sent_push == {**push, "token": "[redacted]", "authentication": {"scheme": "Bearer",
                                                                           "credentials": "[redacted]"}}
    assert shown[0].json()["client_request"]["body"]["params"]["configuration"]["taskPushNotificationConfig"] \
        == sent_push
    answer = orjson.loads(read_one_exchange(downloads[1].content).client_response.body)
    assert answer["result"]["configs"][0]["token"] == "[redacted]"
    (exchange,) = read(sorted((tmp_path / "agui").glob("*.jsonl")))
    kept = {**props, "api_key": "[redacted]", "session": {"accessToken": "[redacted]", "refresh_token": None}}
    assert orjson.loads(exchange.client_body)["forwardedProps"] == kept
    assert orjson.loads(exchange.upstream_body)["forwardedProps"] == kept
    with Served(ReplayApp([exchange], speed=None)) as replay, httpx.Client(timeout=30) as http:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"paths": ["/agui"], "upstream": {"url": f"{replay.url}/agui", "dialect": "ag-ui"}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            replayed = post(http, f"{gateway.url}/agui", agui)
    assert Reply("ag-ui", replayed).text == Reply("ag-ui", answered).text != ""


def read_one_exchange(data: bytes) -> Recorded:
    return parse(data.strip(), "download")


def _sizes(folder: Path) -> dict[str, int]:
    return {path.name: path.stat().st_size for path in folder.glob("*.jsonl")}


def test_past_max_files_the_oldest_conversations_file_goes(agent: str, tmp_path: Path) -> None:
    with _gateway(agent, {"dir": str(tmp_path), "max_files": 2}) as gateway:
        for conversation in ("first", "second", "third"):
            _ask(gateway, f"hello from {conversation}", conversation)
    kept = read(sorted(tmp_path.glob("*.jsonl")))
    assert sorted(e.raw["conversation"] for e in kept) == ["second", "third"]


def test_a_conversations_file_stops_growing_at_max_file_bytes(agent: str, tmp_path: Path) -> None:
    with _gateway(agent, {"dir": str(tmp_path / "measure")}) as gateway:
        _ask(gateway, "hello", "measure")
    one = sum(_sizes(tmp_path / "measure").values())
    limit = int(one * 1.5)
    with _gateway(agent, {"dir": str(tmp_path / "bounded"), "max_file_bytes": limit}) as gateway, \
            httpx.Client(timeout=30) as http:
        converse(http, f"{gateway.url}/agui", "ag-ui", "long", ("hello", "again", "and again"))
    sizes = _sizes(tmp_path / "bounded")
    assert len(sizes) == 1 and 0 < next(iter(sizes.values())) <= limit
    assert len(read(sorted((tmp_path / "bounded").glob("*.jsonl")))) == 1


def test_a_log_rotates_at_max_file_bytes_and_keeps_max_files(agent: str, tmp_path: Path) -> None:
    with _gateway(agent, {"dir": str(tmp_path / "measure"), "per": "log"}) as gateway:
        _ask(gateway, "hello 0", "log-0")
    one = sum(_sizes(tmp_path / "measure").values())
    limit = int(one * 1.5)
    with _gateway(agent, {"dir": str(tmp_path / "log"), "per": "log", "max_file_bytes": limit,
                          "max_files": 2}) as gateway:
        for index in range(5):
            _ask(gateway, f"hello {index}", f"log-{index}")
    sizes = _sizes(tmp_path / "log")
    assert len(sizes) == 2 and "rec.jsonl" in sizes
    assert all(size <= limit for size in sizes.values())
    kept = read(sorted((tmp_path / "log").glob("*.jsonl")))
    assert {e.raw["conversation"] for e in kept} <= {"log-3", "log-4"}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_recordings_are_made_readable_by_their_owner_only_and_so_is_a_folder_the_gateway_makes(
        agent: str, tmp_path: Path) -> None:
    made, existing = tmp_path / "made" / "recordings", tmp_path / "existing"
    existing.mkdir()
    existing.chmod(0o750)  # the operator's: left as it is
    umask = os.umask(0o022)
    try:
        with _gateway(agent, {"dir": str(made)}) as gateway:
            _ask(gateway, "hello", "modes")
        one = sum(_sizes(made).values())
        with _gateway(agent, {"dir": str(existing), "per": "log", "max_file_bytes": int(one * 1.5)}) as gateway:
            for index in range(3):  # the log rotates
                _ask(gateway, f"hello {index}", "modes")
    finally:
        os.umask(umask)
    assert _mode(made) == 0o700 and _mode(existing) == 0o750
    files = [*made.iterdir(), *existing.iterdir()]
    names = sorted(path.name for path in files)
    assert names.count(".rec.lock") == 2 and names.count("rec.jsonl") == 1 and len(names) >= 5  # a log rotated
    assert {path.name: _mode(path) for path in files} == {path.name: 0o600 for path in files}


def test_the_inspectors_bytes_never_cut_a_recorded_run(agent: str, tmp_path: Path) -> None:
    inspector = {"key": "the-inspectors-own-key-0123", "max_bytes": 4000, "capture": "always"}
    with _gateway(agent, {"dir": str(tmp_path)}, inspector, inspector_bodies=True) as gateway:
        response = _ask(gateway, "hello " + "x" * 20_000, "big")  # its capture alone is past the inspector's bytes
        assert response.status_code == 200
        runs = httpx.get(f"{gateway.url}/_inspector/api/runs", headers={"x-inspector-key": inspector["key"]})
        assert not runs.json()["runs"][0]["truncated"]
    (exchange,) = read(sorted(tmp_path.glob("*.jsonl")))
    assert not exchange.raw["truncated"]
    assert exchange.client_response.body == response.content


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", *args], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli")
    with Served(create_agent_app("ag-kit", test_hooks=False)) as agkit:
        config = GatewayConfig.model_validate({"routes": [{
            "name": "cli", "paths": ["/agui"], "client_dialects": ["ag-ui"],
            "upstream": {"url": f"{agkit.url}/send-message", "dialect": "ag-kit"}, "record": {"dir": str(folder)}}],
            "store": {"url": "memory://"}})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            _ask(gateway, "What is the weather in Paris?", "cli")
    (path,) = folder.glob("*.jsonl")
    return path


def test_check_recording_judges_both_replies_by_their_own_dialects(recording: Path, tmp_path: Path) -> None:
    result = _cli("check", "--recording", str(recording))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS" in result.stdout and "upstream (ag-kit)" in result.stdout and "client (ag-ui)" in result.stdout
    broken: Any = orjson.loads(recording.read_bytes())
    broken["client_response"]["frames"] = broken["client_response"]["frames"][1:]  # no RUN_STARTED
    tampered = tmp_path / "broken.jsonl"
    tampered.write_bytes(orjson.dumps(broken) + b"\n")
    result = _cli("check", "--recording", str(tampered), "--json")
    assert result.returncode == 1
    report = orjson.loads(result.stdout)
    assert report["fail"] == 1 and report["results"][1]["outcome"] == "fail"


def test_check_recording_counts_the_events_of_each_reply_not_its_writes(recording: Path) -> None:
    """The gateway writes a client many events at once: a reply recorded as one write is still 20-odd events."""
    (exchange,) = read([recording])
    counts = [len(decode(dialect, response.body)) for dialect, response in (
        (exchange.upstream_dialect, exchange.upstream_response), (exchange.client_dialect, exchange.client_response))]
    result = _cli("check", "--recording", str(recording))
    assert f"upstream (ag-kit): {counts[0]} events" in result.stdout, result.stdout
    assert f"client (ag-ui): {counts[1]} events" in result.stdout, result.stdout
    assert len(exchange.client_response.frames) < counts[1]
    report = orjson.loads(_cli("check", "--recording", str(recording), "--json").stdout)
    assert [entry["events"] for entry in report["results"]] == counts


def test_translate_reads_a_recording_in_its_recorded_dialect(recording: Path) -> None:
    result = _cli("translate", str(recording), "--to", "vercel")
    assert result.returncode == 0, result.stderr
    assert '"type":"tool-input-available"' in result.stdout and "data: [DONE]" in result.stdout
    wrong = _cli("translate", str(recording), "--from", "vercel", "--to", "ag-ui")
    assert wrong.returncode == 2 and "the recording's upstream spoke ag-kit" in wrong.stderr


def test_what_is_not_a_recording_is_one_line_naming_the_file(tmp_path: Path) -> None:
    stream = tmp_path / "stream.sse"
    stream.write_text('data: {"type":"text","content":"hi"}\n\n')
    result = _cli("replay", str(stream))
    assert result.returncode == 2
    assert f"{stream}:1: not JSON: not a recording" in result.stderr
    assert "Traceback" not in result.stderr
    result = _cli("check", "--recording", str(tmp_path / "missing.jsonl"))
    assert result.returncode == 2 and "cannot read it" in result.stderr


def test_exchanges_waiting_for_the_disk_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(files_module, "MAX_QUEUED_BYTES", 100)
    disk = threading.Event()
    write = RecordingFiles._write

    def slow(self: RecordingFiles, line: bytes, name: str) -> None:
        disk.wait(10)
        write(self, line, name)

    monkeypatch.setattr(RecordingFiles, "_write", slow)
    files = RecordingFiles(RecordOptions(dir=str(tmp_path)), "slow")
    try:
        assert files.add(b"x" * 60 + b"\n", "one")
        assert not files.add(b"y" * 60 + b"\n", "two")  # no run waits for the disk: this one is not recorded
        assert "written slower than they come" in caplog.text
        disk.set()
        files.flush()
    finally:
        disk.set()
        files.close()
    assert [path.read_bytes() for path in tmp_path.glob("*.jsonl")] == [b"x" * 60 + b"\n"]
