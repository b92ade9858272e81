"""docker-compose.yml and the Dockerfile, checked without Docker (none runs on the test machines).

The files are parsed and their wiring checked; then the services run as compose would run them, each with its own
command, the gateway with the mounted config and the compose environment, only with service names and container
ports turned into 127.0.0.1 and free ports. Each is started once the services it depends on pass their own
healthchecks, and requests of every dialect go through the gateway to the agent, conversations landing in Redis.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from fnmatch import fnmatch
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
import redis
import yaml
from helpers import ROOT, decode
from redis_server import RedisServer
from servers import free_port

from gateway import compiled
from gateway.commands.demo import DEMO_REQUESTS
from gateway.config import load_config
from gateway.core.events import Interrupt, RunFinished, TextDelta

COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
IMAGE_CONFIG = "/etc/agent-gateway/gateway.yaml"

# What the built-in agent answers to each DEMO_REQUESTS body.
EXPECTED_TEXT = {
    "ag-ui": "It is sunny, 21C in Paris.",
    "ag-kit": "You said: hello. (turn 1)",
    "vercel": "It is sunny, 21C in Berlin.",
    "agent-respond": "It is sunny, 21C in Rome.",
    "a2a": "After some thought: think.",
    "langgraph": "Delete /tmp/demo?",  # an interrupt: what it asks
    "openai-chat": "It is sunny, 21C in Paris.",
    "openai-responses": "You said: hello. (turn 1)",
    "mcp": "It is sunny, 21C in Berlin.",
}


def dockerfile_stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments), one list per stage (continuations joined)."""
    stages: list[list[tuple[str, str]]] = []
    logical = ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not logical and (not line or line.startswith("#")):
            continue
        if logical and line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        instruction, _, arguments = (logical + line).partition(" ")
        logical = ""
        if instruction.upper() == "FROM":
            stages.append([])
        stages[-1].append((instruction.upper(), arguments.strip()))
    return stages


def final_stage(instruction: str) -> list[str]:
    return [args for name, args in dockerfile_stages()[-1] if name == instruction]


def exec_form(arguments: str) -> list[str]:
    """A JSON-array instruction argument: shell form would run under /bin/sh and swallow signals."""
    value = json.loads(arguments)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), arguments
    return value


def image_entrypoint() -> list[str]:
    return exec_form(final_stage("ENTRYPOINT")[-1])


def image_cmd() -> list[str]:
    return exec_form(final_stage("CMD")[-1])


def image_healthcheck() -> list[str]:
    (healthcheck,) = final_stage("HEALTHCHECK")
    options, _, command = healthcheck.partition("CMD ")
    assert all(option.startswith("--") for option in options.split()), healthcheck
    return ["CMD", *exec_form(command)]


def environment(service: str) -> dict[str, str]:
    value = SERVICES[service].get("environment", {})
    if isinstance(value, list):
        value = dict(item.split("=", 1) for item in value)
    return {str(k): str(v) for k, v in value.items()}


def mounts(service: str) -> dict[str, Path]:
    """Bind mounts as container path -> host path (relative sources are relative to the compose file)."""
    found: dict[str, Path] = {}
    for volume in SERVICES[service].get("volumes", []):
        source, target, *_ = volume.split(":")
        assert source.startswith("./"), f"{service}: {volume} is not a bind mount of a file in the project"
        found[target] = ROOT / source
    return found


def service_command(service: str) -> list[str]:
    """What the service's container runs: its entrypoint and its command, the image's where compose sets none."""
    entrypoint = SERVICES[service].get("entrypoint", image_entrypoint())
    command = SERVICES[service].get("command", image_cmd())
    assert isinstance(entrypoint, list) and isinstance(command, list), "use exec form in docker-compose.yml"
    return [*entrypoint, *command]


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_compose_runs_the_gateway_the_example_agent_and_redis() -> None:
    assert set(SERVICES) == {"gateway", "agent", "redis"}
    assert SERVICES["gateway"]["build"] == "."
    # The agent is the gateway's own image, so `docker compose up --build` needs nothing but this repository.
    assert SERVICES["agent"]["image"] == SERVICES["gateway"]["image"]
    assert SERVICES["redis"]["image"] == "redis:7-alpine"
    assert service_command("agent") == ["agent-gateway", "agent", "--dialect", "ag-ui", "--host", "0.0.0.0",
                                        "--port", "8000"]


def test_the_image_is_built_once_and_never_pulled() -> None:
    """Two services building one tag build it twice; a local tag looked up on a registry fails or finds a stranger."""
    builders = [name for name, service in SERVICES.items() if "build" in service]
    assert builders == ["gateway"]
    local = SERVICES["gateway"]["image"]
    assert SERVICES["gateway"]["pull_policy"] == "build"
    for name, service in SERVICES.items():
        if name != "gateway" and service.get("image") == local:
            assert service.get("pull_policy") == "never", name


def test_the_gateway_starts_only_once_the_agent_and_redis_are_healthy() -> None:
    depends_on = SERVICES["gateway"]["depends_on"]
    assert depends_on == {"agent": {"condition": "service_healthy"}, "redis": {"condition": "service_healthy"}}
    for name, service in SERVICES.items():
        assert service["healthcheck"]["test"][0] == "CMD", f"{name}: no exec-form healthcheck"
    assert SERVICES["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


def test_only_the_gateway_is_published_and_only_on_the_host_loopback() -> None:
    assert SERVICES["gateway"]["ports"] == ["127.0.0.1:8080:8080"]
    assert [name for name, service in SERVICES.items() if "ports" in service] == ["gateway"]


def test_read_only_containers_keep_a_writable_tmp() -> None:
    """Python's tempfile needs one writable directory even when the root filesystem is read-only."""
    for name, service in SERVICES.items():
        if service.get("read_only"):
            assert "/tmp" in service.get("tmpfs", []), name


def test_the_gateway_environment_names_the_agent_and_redis_services() -> None:
    env = environment("gateway")
    agent = urlsplit(env["AGENT_URL"])
    assert (agent.scheme, agent.hostname, agent.path) == ("http", "agent", "/agui")
    assert str(agent.port) == option(service_command("agent"), "--port")
    store = urlsplit(env["AGENT_GATEWAY_STORE"])
    assert (store.scheme, store.hostname, store.port) == ("redis", "redis", 6379)


def test_the_mounted_config_is_the_one_the_gateway_serves_and_loads_with_the_compose_environment() -> None:
    files = mounts("gateway")
    assert set(files) == {IMAGE_CONFIG} and files[IMAGE_CONFIG] == ROOT / "config" / "compose.yaml"
    assert option(service_command("gateway"), "--config") == IMAGE_CONFIG
    env = environment("gateway")
    config = load_config(files[IMAGE_CONFIG], environ=env)
    (route,) = config.routes
    assert route.client_dialects == "auto"
    assert (route.upstream.url, route.upstream.dialect) == (env["AGENT_URL"], "ag-ui")
    assert config.store.url == env["AGENT_GATEWAY_STORE"]
    # The file's own defaults are the same services: the image's copy works under plain `docker run --network`.
    defaults = load_config(files[IMAGE_CONFIG], environ={})
    assert (defaults.routes[0].upstream.url, defaults.store.url) == (env["AGENT_URL"], env["AGENT_GATEWAY_STORE"])


def test_the_image_is_slim_runs_as_non_root_and_checks_its_own_health() -> None:
    stages = dockerfile_stages()
    assert all(stage[0][0] == "FROM" and stage[0][1].startswith("python:3.11-slim") for stage in stages)
    (user,) = final_stage("USER")
    assert user.split(":")[0] not in {"root", "0"}
    assert final_stage("EXPOSE") == ["8080"]
    assert image_entrypoint() == ["agent-gateway"]
    assert image_cmd() == ["serve", "--config", IMAGE_CONFIG, "--host", "0.0.0.0", "--port", "8080"]
    healthcheck = image_healthcheck()
    assert healthcheck[1:3] == ["python", "-c"] and "http://127.0.0.1:8080/healthz" in healthcheck[3]
    # The default config is baked in, so the image runs without a mount.
    assert "config/compose.yaml /etc/agent-gateway/gateway.yaml" in final_stage("COPY")


def test_the_image_installs_the_extras_its_configs_use() -> None:
    """The default store is compose's Redis (the [redis] extra), tracing is one variable away (the [otel] one), and
    the A2A config it carries serves gRPC and may sign its cards ([grpc], [signing])."""
    (builder, final) = dockerfile_stages()
    extras = "otel,redis,grpc,signing"
    assert ("RUN", f'AGENT_GATEWAY_COMPILE=$COMPILE pip wheel --no-cache-dir --wheel-dir /wheels ".[{extras}]"') \
        in builder
    assert any(name == "RUN" and args.endswith(f'"agent-gateway[{extras}]"') for name, args in final)
    assert load_config(ROOT / "config" / "compose.yaml", environ={}).store.url.startswith("redis://")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler: the compiled build cannot be made here")
def test_the_images_builder_makes_the_compiled_build_by_default(tmp_path: Path) -> None:
    """The builder stage's own commands, run outside Docker on what it copies: the project's wheel holds a C
    extension for every module the compiled build lists, and nothing of the final stage needs a compiler."""
    (builder, final) = dockerfile_stages()
    compile_default = next(args.partition("=")[2] for name, args in builder if name == "ARG"
                           and args.startswith("COMPILE="))
    assert compile_default == "1"
    context = tmp_path / "src"
    for name, args in builder:
        if name == "COPY":
            *sources, target = args.split()
            for source in sources:
                destination = context / target / (source.rstrip("/") if target.endswith("/") else "")
                if (ROOT / source).is_dir():
                    shutil.copytree(ROOT / source, context / target.rstrip("/"),
                                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
                else:
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(ROOT / source, destination)
    (command,) = [args for name, args in builder if name == "RUN" and "pip wheel" in args]
    argv = shlex.split(command.replace("$COMPILE", compile_default).replace("/wheels", str(tmp_path / "wheels")))
    environ = dict(os.environ, **dict(word.split("=", 1) for word in argv if "=" in word.split("/")[0]))
    argv = [sys.executable, "-m", *[word for word in argv if "=" not in word.split("/")[0]]]
    subprocess.run(argv, cwd=context, env=environ, check=True, capture_output=True, timeout=900)
    (wheel,) = (tmp_path / "wheels").glob("agent_gateway-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for module in (*compiled.modules(), *compiled.NATIVE):
        stem = module.replace(".", "/")
        assert any(name.startswith(stem + ".") and name.endswith(".so") for name in names), module
    assert not any("apt-get" in args for name, args in final)


def test_the_build_context_leaves_out_local_state_but_keeps_what_the_image_copies() -> None:
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    for path in (".venv", ".git", "tests/clients/node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache"):
        assert path in ignored, path
    copied = [source for stage in dockerfile_stages() for name, args in stage if name == "COPY"
              and not args.startswith("--from") for source in args.split()[:-1]]
    assert copied, "the Dockerfile copies nothing from the context"
    for source in copied:
        assert (ROOT / source).exists(), source
        assert not any(fnmatch(source.rstrip("/"), pattern) for pattern in ignored), f"{source} is ignored"


# Running the services outside Docker.

LOOPBACK = "127.0.0.1"


class Localhost:
    """Where each service's container ports live on this machine: (service, container port) -> local port."""

    def __init__(self) -> None:
        self.ports: dict[tuple[str, int], int] = {}

    def url(self, value: str) -> str:
        """A URL naming a service (http://agent:8000/agui) rewritten to its local address."""
        parts = urlsplit(value)
        if parts.hostname not in SERVICES:
            return value
        port = self.ports[(parts.hostname, parts.port or 0)]
        auth = parts.netloc.rpartition("@")[0]
        netloc = f"{auth}@{LOOPBACK}:{port}" if auth else f"{LOOPBACK}:{port}"
        return urlunsplit(parts._replace(netloc=netloc))

    def command(self, service: str, argv: list[str]) -> list[str]:
        """A service's command run here: Python instead of the console script, loopback, the local port, the host
        file behind each mounted path."""
        assert argv[0] == "agent-gateway", argv
        files = mounts(service)
        args = [str(files.get(arg, arg)) for arg in argv[1:]]
        args[args.index("--host") + 1] = LOOPBACK  # servers on this machine listen on the loopback only
        port = args.index("--port") + 1
        args[port] = str(self.ports[(service, int(args[port]))])
        return [sys.executable, "-m", "gateway", *args]

    def healthcheck(self, service: str, test: list[str]) -> list[str]:
        """A healthcheck's command run here, against the service's local port."""
        assert test[0] == "CMD", test
        argv = list(test[1:])
        for (name, container_port), port in self.ports.items():
            if name == service:
                argv = [arg.replace(f"{LOOPBACK}:{container_port}/", f"{LOOPBACK}:{port}/") for arg in argv]
        if argv[0] == "python":
            return [sys.executable, *argv[1:]]
        if argv[0] == "redis-cli":
            binary = shutil.which("redis-cli")
            assert binary, "redis-cli is not installed (it comes with redis-server)"
            return [binary, "-h", LOOPBACK, "-p", str(self.ports[(service, 6379)]), *argv[1:]]
        raise AssertionError(f"{service}: no local equivalent of {shlex.join(test)}")


def passes(argv: list[str]) -> bool:
    result = subprocess.run(argv, capture_output=True, timeout=5, check=False)
    if result.returncode != 0:
        return False
    return b"PONG" in result.stdout if "redis-cli" in argv[0] else True  # redis-cli exits 0 on an error reply


def wait_healthy(service: str, argv: list[str], process: subprocess.Popen[bytes] | None, log: Path | None) -> None:
    """Run the healthcheck until it passes, as `condition: service_healthy` waits for it."""
    deadline = time.monotonic() + 15
    while not passes(argv):
        if (process is not None and process.poll() is not None) or time.monotonic() > deadline:
            output = log.read_text(errors="replace")[-3000:] if log else ""
            raise AssertionError(f"{service} never became healthy ({shlex.join(argv)}):\n{output}")
        time.sleep(0.1)


@contextmanager
def running(argv: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(argv, cwd=log.parent, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_order() -> list[str]:
    """Services in an order compose could start them: each after everything it depends on."""
    order: list[str] = []
    while len(order) < len(SERVICES):
        ready = [name for name, service in SERVICES.items()
                 if name not in order and set(service.get("depends_on", {})) <= set(order)]
        assert ready, "depends_on has a cycle"
        order += sorted(ready)
    return order


def test_the_compose_services_run_here_with_their_own_commands_and_answer_every_dialect(tmp_path: Path) -> None:
    local = Localhost()
    redis_url = ""
    with ExitStack() as stack:
        for service in start_order():
            if service == "redis":  # the image's own command is redis-server; RedisServer runs the real binary
                server = stack.enter_context(RedisServer())
                local.ports[("redis", 6379)] = server.port
                redis_url = server.url
                wait_healthy(service, local.healthcheck(service, SERVICES[service]["healthcheck"]["test"]),
                             None, None)
                continue
            argv = service_command(service)
            local.ports[(service, int(option(argv, "--port")))] = free_port()
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            env |= {name: local.url(value) for name, value in environment(service).items()}
            log = tmp_path / service / "output.log"
            log.parent.mkdir()
            process = stack.enter_context(running(local.command(service, argv), env, log))
            wait_healthy(service, local.healthcheck(service, SERVICES[service]["healthcheck"]["test"]), process, log)
            if service == "gateway":  # the image's own HEALTHCHECK passes too
                wait_healthy(service, local.healthcheck(service, image_healthcheck()), process, log)

        gateway = f"http://{LOOPBACK}:{local.ports[('gateway', 8080)]}"
        for dialect, (path, body) in DEMO_REQUESTS.items():
            response = httpx.post(gateway + path, content=body, headers={"content-type": "application/json"},
                                  timeout=10)
            assert response.status_code == 200, (dialect, response.text)
            events = decode(dialect, response.content)
            assert isinstance(events[-1], RunFinished), (dialect, events[-1])
            said = "".join(e.delta if isinstance(e, TextDelta) else e.message or "" for e in events
                           if isinstance(e, TextDelta | Interrupt))
            assert EXPECTED_TEXT[dialect] in said, (dialect, said)
        # The conversations are in the Redis the compose environment names, not in some default store.
        client = redis.Redis.from_url(redis_url)
        try:
            assert client.dbsize() > 0
        finally:
            client.close()


@pytest.mark.parametrize("service", ["gateway", "agent"])
def test_the_servers_listen_on_all_interfaces_only_inside_their_containers(service: str) -> None:
    """0.0.0.0 is right in a container (the port is published to the loopback); the local runs rewrite it."""
    assert option(service_command(service), "--host") == "0.0.0.0"
    local = Localhost()
    local.ports[(service, int(option(service_command(service), "--port")))] = 1234
    argv = local.command(service, service_command(service))
    assert option(argv, "--host") == LOOPBACK and option(argv, "--port") == "1234"


def dockerfile_run_hints() -> list[list[str]]:
    """The `docker run` commands the Dockerfile's header comment tells a reader to try, as argv lists."""
    hints: list[str] = []
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        line = raw.lstrip("#").strip()
        if not raw.startswith("#"):
            break
        if hints and hints[-1].endswith("\\"):
            hints[-1] = hints[-1][:-1] + " " + line
        elif line.startswith("docker run "):
            hints.append(line)
    return [shlex.split(hint) for hint in hints]


def test_the_dockerfiles_docker_run_hints_work_as_written(tmp_path: Path) -> None:
    """Each hint is run here as the container would run it: the image's entrypoint with the hint's arguments (or
    the image's command), its -e variables, the agent it names on the Docker host played by the built-in one."""
    hints = dockerfile_run_hints()
    assert len(hints) == 2, hints
    with ExitStack() as stack:
        agent_port = free_port()
        agent_log = tmp_path / "agent" / "output.log"
        agent_log.parent.mkdir()
        stack.enter_context(running([sys.executable, "-m", "gateway", "agent", "--dialect", "ag-ui", "--port",
                                     str(agent_port)], {**os.environ, "PYTHONPATH": str(ROOT)}, agent_log))
        for number, hint in enumerate(hints):
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            published = ""
            words = iter(hint[2:])
            rest: list[str] = []
            for word in words:
                if word in ("-e", "-p", "--add-host"):
                    value = next(words)
                    if word == "-e":
                        name, _, setting = value.partition("=")
                        env[name] = setting.replace("host.docker.internal:8000", f"{LOOPBACK}:{agent_port}")
                    elif word == "-p":
                        published = value
                elif word != "--rm":
                    rest.append(word)
            image, *arguments = rest
            assert image == "agent-gateway" and published == "127.0.0.1:8080:8080", hint
            argv = arguments or image_cmd()
            assert option(argv, "--host") == "0.0.0.0" and option(argv, "--port") == "8080", hint
            port = free_port()
            argv = [str(ROOT / "config" / "compose.yaml") if arg == IMAGE_CONFIG else arg for arg in argv]
            argv[argv.index("--host") + 1], argv[argv.index("--port") + 1] = LOOPBACK, str(port)
            log = tmp_path / f"hint{number}" / "output.log"
            log.parent.mkdir()
            process = stack.enter_context(running([sys.executable, "-m", "gateway", *argv], env, log))
            health = [sys.executable, "-c", image_healthcheck()[3].replace(":8080/", f":{port}/")]
            wait_healthy(f"hint {number}", health, process, log)
            for dialect, (path, body) in DEMO_REQUESTS.items():
                response = httpx.post(f"http://{LOOPBACK}:{port}{path}", content=body, timeout=10,
                                      headers={"content-type": "application/json"})
                assert response.status_code == 200, (hint, dialect, response.text)
                events = decode(dialect, response.content)
                assert isinstance(events[-1], RunFinished), (hint, dialect, events[-1])
            assert "warning" not in log.read_text().lower(), log.read_text()
