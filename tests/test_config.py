from __future__ import annotations

from pathlib import Path

import pytest

from adapters import registry
from gateway.config import ConfigError, Push, load_config, parse_config

CONFIGS = sorted((Path(__file__).parent.parent / "config").glob("*.yaml"))

MINIMAL = """
routes:
  - upstream:
      url: http://127.0.0.1:9000/send-message
      dialect: ag-kit
"""


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_example_config_loads(path: Path) -> None:
    config = load_config(path, environ={})
    assert config.routes


def test_defaults_mount_the_client_dialects_conventional_paths() -> None:
    route = parse_config(MINIMAL, environ={}).routes[0]
    assert route.paths == ["/a2a", "/agent/respond", "/agui", "/api/chat", "/langgraph", "/mcp", "/send-message",
                           "/v1/chat/completions", "/v1/responses"]
    assert route.name == "route0" and route.timeouts.first_event == 60


def test_environment_variables_fill_in_secrets_and_urls() -> None:
    text = MINIMAL.replace("http://127.0.0.1:9000/send-message", "${URL}") + \
        "      headers:\n        Authorization: Bearer ${TOKEN:-none}\n"
    upstream = parse_config(text, environ={"URL": "http://agent:9000/x", "TOKEN": "s3cret"}).routes[0].upstream
    assert (upstream.url, upstream.headers) == ("http://agent:9000/x", {"authorization": "Bearer s3cret"})
    assert parse_config(text, environ={"URL": "http://a/"}).routes[0].upstream.headers["authorization"] == \
        "Bearer none"


def test_unset_variable_is_named_with_its_line() -> None:
    text = MINIMAL.replace("http://127.0.0.1:9000/send-message", "${AGENT_URL}")
    with pytest.raises(ConfigError, match=r"gw.yaml:4: routes\[0\].upstream.url: environment variable AGENT_URL"):
        parse_config(text, "gw.yaml", environ={})


def test_bad_value_is_reported_with_file_line_and_key() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(MINIMAL.replace("ag-kit", "acp"), "gw.yaml", environ={})
    assert str(caught.value).startswith("gw.yaml:5: routes[0].upstream.dialect: Input should be 'ag-ui'")


def test_unknown_key_and_bad_yaml_are_reported_with_their_line() -> None:
    with pytest.raises(ConfigError,
                       match=r"gw.yaml:5: routes\[0\].upstream.timeout: unknown key; did you mean timeouts\?"):
        parse_config(MINIMAL.replace("      dialect: ag-kit", "      timeout: 5\n      dialect: ag-kit"), "gw.yaml",
                     environ={})
    with pytest.raises(ConfigError, match=r"gw\.yaml:3: not valid YAML"):
        parse_config("routes:\n  - a: [1\n  - b", "gw.yaml", environ={})


def test_credentials_are_forwarded_only_when_listed_and_hop_headers_never() -> None:
    route = parse_config(MINIMAL + "    forward_headers: [Authorization]\n", environ={}).routes[0]
    assert route.forward_headers == ["authorization"]
    with pytest.raises(ConfigError, match="transfer-encoding cannot be forwarded"):
        parse_config(MINIMAL + "    forward_headers: [Transfer-Encoding]\n", environ={})


def test_two_routes_on_one_path_are_refused() -> None:
    with pytest.raises(ConfigError, match="routes: path /a2a is served by both route0 and route1"):
        parse_config(MINIMAL + MINIMAL.split("\n", 2)[2], environ={})


def test_two_routes_of_one_name_are_refused_by_their_name() -> None:
    named = MINIMAL.replace("  - upstream:", "  - name: chat\n    upstream:")
    with pytest.raises(ConfigError) as caught:
        parse_config(named + named.split("\n", 2)[2], "gw.yaml", environ={})
    assert str(caught.value) == "gw.yaml:2: routes: two routes are named chat: give each a name of its own"


def test_a_mistyped_dialect_gets_a_guess() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(MINIMAL.replace("ag-kit", "agkit"), "gw.yaml", environ={})
    assert str(caught.value).endswith("'openai-responses' or 'mcp'; did you mean 'ag-kit'?")


def test_missing_file_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        load_config(tmp_path / "nope.yaml")


def test_a_file_that_is_not_utf8_is_one_line_naming_where(tmp_path: Path) -> None:
    config = tmp_path / "latin1.yaml"
    config.write_bytes(MINIMAL.replace("dialect: ag-kit", "dialect: ag-kit  # caf\xe9").encode("latin-1"))
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert str(caught.value) == f"{config}:5: not UTF-8 text (byte 0xe9): save the file as UTF-8"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_example_config_starts_and_serves(path: Path, tmp_path: Path) -> None:
    """Each use case's config, its upstream played by the built-in agent of the configured dialect."""
    import httpx
    from e2e import Reply, post, request_body, user_message
    from servers import Served, free_port

    from gateway.agent.server import create_agent_app
    from gateway.core.events import RunFinished
    from gateway.server.app import create_app

    upstream = load_config(path, environ={}).routes[0].upstream
    with Served(create_agent_app(upstream.dialect)) as agent:
        url = agent.url + httpx.URL(upstream.url).path
        environ = {name: url for name in ("AGKIT_URL", "VERCEL_AGENT_URL", "AGENT_URL")}
        environ["AGENT_GATEWAY_STORE"] = f"sqlite:///{tmp_path}/conversations.db"
        environ["A2A_GRPC_PORT"] = str(free_port())
        config = load_config(path, environ=environ)
        route = config.routes[0]
        with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
            for client in route.dialects:
                path_for_client = next(p for p in registry.get(client).paths if p in route.paths)
                body = request_body(client, [user_message(client, "what is the weather in Paris")], f"cfg-{client}",
                                    agent=route.name)
                reply = Reply(client, post(http, gateway.url + path_for_client, body))
                assert isinstance(reply.events[-1], RunFinished), (path.name, client)
                assert "sunny, 21C in Paris" in reply.text


def test_every_mistake_is_a_line_of_its_own_and_an_unknown_key_is_named_with_a_guess() -> None:
    text = "routes:\n  - upstrem: {url: 'http://a/', dialect: ag-ui}\n    timeouts: {conect: 5}\n"
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "gw.yaml", environ={})
    lines = str(caught.value).splitlines()
    assert "gw.yaml:2: routes[0].upstrem: unknown key; did you mean upstream?" in lines
    assert "gw.yaml:3: routes[0].timeouts.conect: unknown key; did you mean connect?" in lines
    assert "gw.yaml:2: routes[0].upstream: Field required" in lines
    assert not any("literal[" in line or "list[" in line or "more)" in line for line in lines)


def test_push_allow_hosts_name_one_port_or_any_port_of_a_host() -> None:
    push = Push.model_validate({"allow_hosts": ["hooks.example.com", "Ports.Example.com:8443", "[::1]:9000", "::2",
                                                "*.internal.example.com:443", "[fe80::1]"]})
    assert push.allow_hosts == ["hooks.example.com", "ports.example.com:8443", "[::1]:9000", "::2",
                                "*.internal.example.com:443", "fe80::1"]
    assert push.allows("hooks.example.com", 80) and push.allows("hooks.example.com", 9999)
    assert push.allows("ports.example.com", 8443) and not push.allows("ports.example.com", 443)
    assert push.allows("::1", 9000) and push.allows("[::1]", 9000) and not push.allows("::1", 9001)
    assert push.allows("::2", 1) and push.allows("fe80::1", 65535)
    assert push.allows("a.internal.example.com", 443) and not push.allows("a.internal.example.com", 8443)
    assert not push.allows("internal.example.com", 443) and not push.allows("evil.example.com", 80)


@pytest.mark.parametrize("entry", ["", "a/b", "user@host", "*", "host:", "host:0", "host:65536", "host:http",
                                   "host:\uff18\uff10", "[::1", "[::1]8443", "[example.com]:80", "::g", "*.:80"])
def test_push_allow_hosts_refuse_what_is_no_host_or_no_port(entry: str) -> None:
    with pytest.raises(ValueError, match="allow_hosts"):
        Push.model_validate({"allow_hosts": [entry]})


def test_each_principals_share_of_pending_push_notifications_is_half_the_process_unless_set() -> None:
    assert Push.model_validate({"allow_hosts": ["h"]}).pending_share == 5000
    assert Push.model_validate({"allow_hosts": ["h"], "max_pending": 30}).pending_share == 15
    assert Push.model_validate({"allow_hosts": ["h"], "max_pending": 1}).pending_share == 1
    assert Push.model_validate({"allow_hosts": ["h"], "max_pending_per_principal": 50}).pending_share == 50


def test_a_dialect_s_own_section_is_read_and_checked_with_the_file() -> None:
    config = parse_config(MINIMAL + "a2a:\n  grpc_port: 50051\n", "gw.yaml", environ={})
    assert config.settings_of("a2a").grpc_port == 50051
    assert parse_config(MINIMAL, environ={}).settings_of("a2a").grpc_port is None
    assert config.settings_of("ag-ui") is None
    with pytest.raises(ConfigError, match=r"gw.yaml:\d+: a2a.grpc_prt: unknown key; did you mean grpc_port\?"):
        parse_config(MINIMAL + "a2a:\n  grpc_prt: 50051\n", "gw.yaml", environ={})


def test_fallbacks_are_upstreams_of_any_dialect_named_once_per_route() -> None:
    text = MINIMAL + """    fallbacks:
      - {url: http://127.0.0.1:9001/api/chat, dialect: vercel}
      - {url: http://127.0.0.1:2024, dialect: langgraph, name: graph}
"""
    route = parse_config(text, environ={}).routes[0]
    assert [u.dialect for u in route.upstreams] == ["ag-kit", "vercel", "langgraph"]
    assert (route.eject_after, route.eject_for) == (3, 30.0)
    with pytest.raises(ConfigError, match=r"the upstream name 'graph' is given twice"):
        parse_config(text.replace("dialect: vercel}", "dialect: vercel, name: graph}"), "gw.yaml", environ={})
