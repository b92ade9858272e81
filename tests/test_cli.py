from __future__ import annotations

import contextlib
import io
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from helpers import fixture_path
from servers import wait_answering

from gateway.cli import main


def test_translate_with_no_input_uses_the_built_in_sample(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["translate", "--to", "vercel"]) == 0
    out = capsysbinary.readouterr().out
    assert out.startswith(b'data: {"type":"start"}') and out.endswith(b"data: [DONE]\n\n")


def test_translate_a_recorded_stream_into_one_json_body(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    path = str(fixture_path("pydantic_vercel_weather.sse"))
    assert main(["translate", path, "--from", "vercel", "--to", "agent-respond"]) == 0
    assert b'"name":"get_weather"' in capsysbinary.readouterr().out


def test_a_failed_run_exits_non_zero(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    path = str(fixture_path("pydantic_agui_fail.sse"))
    assert main(["translate", path, "--from", "ag-ui", "--to", "agent-respond"]) == 1


class Demo:
    """`agent-gateway demo` running, and what it printed."""

    def __init__(self) -> None:
        import subprocess

        from helpers import ROOT
        from servers import free_port

        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([sys.executable, "-m", "gateway", "demo", "--port", str(self.port)], cwd=ROOT,
                                        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
        self.printed: list[str] = []
        self._reading = threading.Thread(target=self._read, daemon=True)
        self._reading.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.printed.append(line)

    def wait_until_serving(self) -> None:
        deadline = time.monotonic() + 20
        wait_answering(self.process, f"{self.base}/healthz", what="demo")
        while not any(line.startswith("curl") and "/v1/responses" in line for line in self.printed):
            assert time.monotonic() < deadline, "demo did not print its requests"
            time.sleep(0.05)

    @property
    def out(self) -> str:
        return "".join(self.printed)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        self._reading.join(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture(scope="module")
def demo() -> Iterator[Demo]:
    running = Demo()
    try:
        running.wait_until_serving()
        yield running
    finally:
        running.stop()


def test_demo_answers_the_printed_request_of_every_dialect(demo: Demo) -> None:
    """What the README promises a newcomer: `agent-gateway demo`, then the curl commands it prints."""
    import httpx
    from helpers import decode

    from gateway.commands.demo import DEMO_REQUESTS
    from gateway.core.events import RunFinished, TextDelta

    base = demo.base
    for dialect, (path, body) in DEMO_REQUESTS.items():
        response = httpx.post(base + path, content=body, headers={"content-type": "application/json"}, timeout=10)
        events = decode(dialect, response.content)
        assert isinstance(events[-1], RunFinished), dialect
        said = "".join(e.delta for e in events if isinstance(e, TextDelta))
        assert said or events[-1].outcome == "interrupt", dialect  # "approve" stops for the human
    assert httpx.get(f"{base}/demo-agent/_requests").status_code == 404  # what people typed stays theirs
    path, body = DEMO_REQUESTS["ag-ui"]
    for host, status in ((f"localhost:{demo.port}", 200), (f"127.0.0.1:{demo.port}", 200), ("rebound.example", 400)):
        asked = httpx.post(base + path, content=body, timeout=10,  # what a browser on each of those names sends
                           headers={"content-type": "application/json", "host": host})
        assert asked.status_code == status, host
    assert f"curl -N {base}/agui" in demo.out
    assert "silent     sends nothing for an hour (through the gateway: a 504" in demo.out


def test_the_demos_requests_are_what_each_client_sends_where_it_sends_it(demo: Demo) -> None:
    """LangGraph's SDKs post a run under the server's URL, its thread in the path; OpenAI's clients name a model
    that the gateway's own list of models holds."""
    import httpx

    from gateway.commands.demo import DEMO_REQUESTS

    path, body = DEMO_REQUESTS["langgraph"]
    assert path.startswith("/langgraph/threads/") and path.endswith("/runs/stream") and "thread_id" not in body
    assert f"curl -N {demo.base}{path} " in demo.out
    listed = {model["id"] for model in httpx.get(f"{demo.base}/v1/models", timeout=10).json()["data"]}
    named = {orjson.loads(sent).get("model") for _, sent in DEMO_REQUESTS.values()} - {None}
    assert named and named <= listed, (named, listed)


def test_the_demo_says_which_keywords_its_agent_cannot_show_and_which_dialect_would(demo: Demo) -> None:
    lines = {line.split()[0]: line for line in demo.printed if line.startswith("  ")}
    assert lines["think"].rstrip().endswith("(ag-kit cannot carry it: try --agent-dialect ag-ui)")
    assert lines["state"].rstrip().endswith("(ag-kit cannot carry it: try --agent-dialect ag-ui)")
    assert "cannot carry" not in lines["weather"] + lines["approve"]


def test_a_path_the_demos_agent_does_not_serve_is_a_json_404_naming_where_it_answers(demo: Demo) -> None:
    import httpx

    missing = httpx.get(f"{demo.base}/demo-agent/nope", timeout=10)
    wrong_method = httpx.get(f"{demo.base}/demo-agent/send-message", timeout=10)
    assert missing.status_code == 404 and missing.json()["error"] == {
        "code": "not_found", "message": "nothing is served at /demo-agent/nope; the agent answers at "
                                        "/demo-agent/send-message"}
    assert wrong_method.status_code == 405 and wrong_method.json()["error"]["code"] == "method_not_allowed"


def test_bad_flags_and_bad_config_get_one_line_saying_what_and_where(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["serve", "--bogus"])
    assert caught.value.code == 2
    assert capsys.readouterr().err == ("agent-gateway serve: unrecognized arguments: --bogus "
                                       "(see agent-gateway serve --help)\n")
    config = tmp_path / "bad.yaml"
    config.write_text("routes:\n  - upstream: {url: 'http://x', dialect: acp}\n")
    assert main(["serve", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{config}:2: routes[0].upstream.dialect: Input should be" in err
    line = orjson.loads(err)  # the default log format: every line on stderr is JSON
    assert line["level"] == "error" and line["msg"].startswith(f"{config}:2:")


@pytest.mark.parametrize(("argv", "expected"), [
    (["serve", "--prot", "9"], "unrecognized arguments: --prot 9, did you mean --port?"),
    (["agent", "--dialect", "ag-ui", "--pace", "-1"], "argument --pace: -1: use 0 to 60 seconds"),
    (["check", "http://a/x", "--dialect", "ag-ui", "--time-out", "3"], "did you mean --timeout?"),
    (["serve", "--upstream-dialect", "agkit"], "invalid choice: 'agkit' (choose from 'ag-ui', 'ag-kit', "),
    (["serve", "--upstream-dialect", "agkit"], "; did you mean 'ag-kit'? (see agent-gateway serve --help)"),
])
def test_a_mistyped_or_impossible_flag_is_named_with_a_guess(argv: list[str], expected: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    err = capsys.readouterr().err
    assert caught.value.code == 2 and expected in err and err.count("\n") == 1, err


def test_the_bare_command_shows_what_it_can_do(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: agent-gateway") and "serve" in out and "demo" in out


def test_serve_with_workers_shares_the_work_and_sums_the_metrics(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    import httpx
    from e2e import Reply, post, request_body, user_message
    from helpers import ROOT
    from prometheus_client.parser import text_string_to_metric_families
    from servers import Served, free_port

    from gateway.agent.server import create_agent_app

    port = free_port()
    with Served(create_agent_app("ag-ui")) as agent:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway", "serve", "--workers", "2", "--port", str(port), "--upstream",
             agent.url + "/agui", "--upstream-dialect", "ag-ui", "--store", f"sqlite:///{tmp_path}/c.db"],
            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_answering(process, f"{base}/healthz", seconds=30, what="serve")
            with httpx.Client(timeout=10) as http:
                for index in range(6):
                    reply = Reply("vercel", post(http, f"{base}/api/chat", request_body("vercel", [
                        user_message("vercel", "hello")], f"w{index}")))
                    assert "You said: hello" in reply.text
                total = sum(s.value for family in text_string_to_metric_families(http.get(f"{base}/metrics").text)
                            for s in family.samples if s.name == "agent_gateway_requests_total")
            assert total == 6
        finally:
            process.terminate()
            process.communicate(timeout=15)


@pytest.mark.parametrize("workers", [1, 2])
def test_metrics_on_an_address_of_their_own_are_every_workers_and_nothing_else(tmp_path: Path, workers: int) -> None:
    import os
    import subprocess
    import sys

    import httpx
    from e2e import Reply, post, request_body, user_message
    from helpers import ROOT
    from prometheus_client.parser import text_string_to_metric_families
    from servers import Served, free_port

    from gateway.agent.server import create_agent_app

    port, metrics_port = free_port(), free_port()
    with Served(create_agent_app("ag-ui")) as agent:
        config = tmp_path / "gateway.yaml"
        config.write_text(f"routes:\n  - upstream: {{url: '{agent.url}/agui', dialect: ag-ui}}\n"
                          f"store: {{url: 'sqlite:///{tmp_path}/c.db'}}\n"
                          f"metrics: {{listen: '127.0.0.1:{metrics_port}'}}\n")
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway", "serve", "--workers", str(workers), "--port", str(port), "--config",
             str(config)], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        try:
            base, scrape = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{metrics_port}"
            wait_answering(process, f"{base}/healthz", f"{scrape}/metrics", seconds=30, what="serve")
            for index in range(4):  # a connection each, spread across the workers
                with httpx.Client(timeout=10) as http:
                    reply = Reply("vercel", post(http, f"{base}/api/chat", request_body("vercel", [
                        user_message("vercel", "hello")], f"m{index}")))
                assert "You said: hello" in reply.text
            with httpx.Client(timeout=10) as http:
                beside = http.get(f"{base}/metrics")
                assert beside.status_code == 404
                assert "/metrics" not in beside.json()["error"]["message"].partition("you may use")[2]
                for _ in range(4 * workers):  # whichever worker answers, it counts every worker's requests
                    read = httpx.get(f"{scrape}/metrics", timeout=10).text
                    total = sum(s.value for family in text_string_to_metric_families(read)
                                for s in family.samples if s.name == "agent_gateway_requests_total")
                    assert total == 4
                run = post(http, f"{scrape}/api/chat", request_body("vercel", [user_message("vercel", "hello")]))
                assert run.status_code == 404 and "serves /metrics only" in run.json()["error"]["message"]
                assert http.get(f"{scrape}/healthz").status_code == 404
        finally:
            process.terminate()
            process.communicate(timeout=15)


@pytest.mark.parametrize(("argv", "expected"), [
    (["serve", "--port", "70000", "--upstream", "http://a/x", "--upstream-dialect", "ag-kit"],
     "argument --port: 70000 is not a port: use 1-65535"),
    (["serve", "--workers", "0", "--upstream", "http://a/x", "--upstream-dialect", "ag-kit"],
     "argument --workers: 0: at least 1 worker"),
    (["serve", "--upstream", "not-a-url", "--upstream-dialect", "ag-kit"],
     "agent-gateway serve: --upstream: must be an http:// or https:// URL with a host"),
    (["serve", "--upstream", "http://a/x", "--upstream-dialect", "ag-kit", "--store", "mysql://x"],
     "agent-gateway serve: --store: must be memory://, sqlite:///<path>"),
])
def test_a_flag_mistake_is_one_line_naming_the_flag(argv: list[str], expected: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with contextlib.suppress(SystemExit):
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_port_in_use_is_said_before_anything_says_listening(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        assert main(["serve", "--port", port, "--store", "memory://", "--upstream", "http://a/x",
                     "--upstream-dialect", "ag-kit"]) == 2
        err = capsys.readouterr().err
        assert f"127.0.0.1:{port} is in use: try --port" in err and "listening" not in err
        assert err.count("\n") == 1, err  # the routes it would have served are not said either
        assert main(["agent", "--dialect", "ag-ui", "--port", port]) == 2  # the built-in agent: the same
        assert f"127.0.0.1:{port} is in use: try --port" in capsys.readouterr().err


def test_a_store_that_cannot_be_opened_is_one_line_before_anything_binds(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    for workers in ("1", "2"):
        assert main(["serve", "--port", "9", "--workers", workers, "--store", f"sqlite:///{blocker}/x.db",
                     "--upstream", "http://a/x", "--upstream-dialect", "ag-kit", "--log-format", "human"]) == 2
        err = capsys.readouterr().err
        assert "ERROR   the store cannot be opened: cannot open SQLite store" in err, err
        assert len(err.strip().splitlines()) == 1 and "listening" not in err and "Traceback" not in err


def test_translate_of_input_in_another_dialect_says_so_once_and_what_it_reads_as(
        capsys: pytest.CaptureFixture[str]) -> None:
    path = str(fixture_path("pydantic_vercel_weather.sse"))
    for target in ("ag-ui", "ag-kit", "agent-respond"):
        assert main(["translate", path, "--from", "ag-ui", "--to", target]) == 1
        err = capsys.readouterr().err
        assert err.startswith("agent-gateway translate: 17 frames are not ag-ui ('start', 'start-step'"), err
        assert "the input reads as vercel: try --from vercel" in err and err.count("\n") == 1


@pytest.mark.parametrize(("content", "said"), [
    (b"", "is empty: nothing to translate"),
    (b"\n \n", "is empty: nothing to translate"),
    (bytes(range(256)) * 4, "is not text: a recorded stream is SSE or JSON in UTF-8"),
], ids=["empty", "blank", "binary"])
def test_translate_of_an_input_that_holds_no_stream_says_why_and_writes_nothing(
        content: bytes, said: str, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    given = tmp_path / "given.sse"
    given.write_bytes(content)
    with pytest.raises(SystemExit) as caught:
        main(["translate", str(given), "--from", "ag-ui"])
    out, err = capsysbinary.readouterr()
    assert caught.value.code == 2 and out == b""
    assert err.decode() == f"agent-gateway translate: {given} {said} (see agent-gateway translate --help)\n"


@pytest.mark.parametrize("target", ["ag-ui", "ag-kit", "vercel", "agent-respond"])
def test_translate_exits_on_the_runs_outcome_whatever_the_target(target: str) -> None:
    assert main(["translate", str(fixture_path("pydantic_agui_fail.sse")), "--from", "ag-ui", "--to", target]) == 1


@pytest.mark.parametrize(("argv", "expected"), [
    (["serve", "--config", "config/agui-to-agkit.yaml", "--upstream", "http://a/x"],
     "--upstream: only without --config; with --config, set routes[].upstream.url in the file"),
    (["serve", "--config", "config/agui-to-agkit.yaml", "--store", "memory://"],
     "--store: only without --config; with --config, set store.url in the file"),
    (["serve", "--config", "c.yaml", "--store", "memory://", "--upstream-dialect", "ag-ui"],
     "--upstream-dialect, --store: only without --config; with --config, set routes[].upstream.dialect and store.url "
     "in the file"),
    (["translate", "--to", "ag-ui", "--variant", "inkeep"], "--variant inkeep is a vercel variant"),
])
def test_flags_that_would_be_ignored_are_an_error(argv: list[str], expected: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2 and expected in capsys.readouterr().err


@pytest.mark.parametrize(("where", "folder"), [("--record", "a-file/sub"), ("--record", "/proc/nope"),
                                               ("record.dir", "a-file/sub")])
@pytest.mark.parametrize("checking", [True, False], ids=["check", "start"])
def test_a_folder_recordings_cannot_go_to_stops_check_and_start_in_one_line(
        where: str, folder: str, checking: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from servers import free_port

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("")
    (tmp_path / "gateway.yaml").write_text(
        f"routes:\n  - upstream: {{url: 'http://127.0.0.1:9/agui', dialect: ag-ui}}\n    record: {{dir: '{folder}'}}\n"
        "store: {url: 'memory://'}\n")
    argv = ["serve", "--config", "gateway.yaml"] if where == "record.dir" else [
        "serve", "--upstream", "http://127.0.0.1:9/agui", "--upstream-dialect", "ag-ui", "--store", "memory://",
        "--record", folder]
    argv += ["--log-format", "human", "--port", str(free_port()), *(["--check"] if checking else [])]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert f"ERROR   cannot record into {folder}: " in captured.err
    assert len(captured.err.strip().splitlines()) == 1, captured.err
    assert "listening" not in captured.err and "Traceback" not in captured.err and captured.out == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("terminal", "flags", "json_lines"), [
    (True, [], False), (False, [], True), (True, ["--log-format", "json"], True),
    (False, ["--log-format", "human"], False)])
def test_serves_own_errors_are_lines_for_people_at_a_terminal_and_json_otherwise(
        terminal: bool, flags: list[str], json_lines: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(["serve", "--upstream", "http://a/x", "--upstream-dialect", "ag-kit", "--store", "memory://",
                 "--workers", "2", *flags]) == 2
    [line] = stderr.getvalue().splitlines()
    said = "--workers > 1 needs a store the workers share"
    if json_lines:
        assert orjson.loads(line)["msg"].startswith(said)
    else:
        assert line.split(maxsplit=2)[1:] == ["ERROR", f"{said}: sqlite:///... or redis://..."], line


def test_serve_check_says_an_upstream_url_that_stops_where_its_dialects_path_goes_on(
        capsys: pytest.CaptureFixture[str]) -> None:
    """An OpenAI base URL, `.../v1`, connects: the note says what it likely meant, which `--send-request` would
    find answering 404 (see test_check)."""
    from servers import Served

    from gateway.agent.server import create_agent_app

    with Served(create_agent_app("openai-chat")) as agent:
        base = f"{agent.url}/v1"
        assert main(["serve", "--upstream", base, "--upstream-dialect", "openai-chat", "--store", "memory://",
                     "--check"]) == 0
        assert main(["serve", "--upstream", f"{base}/chat/completions", "--upstream-dialect", "openai-chat",
                     "--store", "memory://", "--check"]) == 0
    first, second = capsys.readouterr().out.split("configuration: ok")[1:]
    assert f"route0: note: {base} looks like a base URL, not an endpoint: did you mean {base}/chat/completions " \
           "(openai-chat)?" in first
    assert "note" not in second
