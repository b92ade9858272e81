# syntax=docker/dockerfile:1
#
# agent-gateway: docker build -t agent-gateway .
#   Try it alone (the built-in agent behind the gateway):
#     docker run --rm -p 127.0.0.1:8080:8080 agent-gateway demo --host 0.0.0.0 --port 8080
#   In front of your agent (the default config, a copy of config/compose.yaml, reads two variables):
#     docker run --rm -p 127.0.0.1:8080:8080 -e AGENT_URL=http://host.docker.internal:8000/agui \
#       -e AGENT_GATEWAY_STORE=memory:// --add-host host.docker.internal:host-gateway agent-gateway
#   AGENT_URL is an AG-UI agent (default http://agent:8000/agui, compose's service); AGENT_GATEWAY_STORE is
#   memory://, sqlite:///<path> or redis://host:6379/0 (default redis://redis:6379/0). Mount another config at
#   /etc/agent-gateway/gateway.yaml for another dialect.

# Build stage: the project and every dependency as wheels, so the final stage installs without build tools. The
# extras: [redis] for the default store (compose's Redis service), [otel] so tracing is one environment variable away,
# [grpc] and [signing] so that the A2A configuration (/etc/agent-gateway/a2a-to-agui.yaml) serves gRPC and signs cards.
# The project's wheel is the compiled build (mypyc compiles the per-event modules into C extensions, which needs a C
# compiler here and nothing in the final stage); `--build-arg COMPILE=0` builds pure Python instead.
# `agent-gateway --version` says which build runs.
FROM python:3.11-slim AS builder
ARG COMPILE=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md setup.py ./
COPY gateway/ gateway/
COPY adapters/ adapters/
RUN AGENT_GATEWAY_COMPILE=$COMPILE pip wheel --no-cache-dir --wheel-dir /wheels ".[otel,redis,grpc,signing]"

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 10001 gateway \
 && useradd --system --uid 10001 --gid gateway --home-dir /var/lib/agent-gateway --create-home \
      --shell /usr/sbin/nologin gateway
# The wheels are bind-mounted, not copied, so they never land in a layer of the final image.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels "agent-gateway[otel,redis,grpc,signing]"
COPY config/ /etc/agent-gateway/
COPY config/compose.yaml /etc/agent-gateway/gateway.yaml
# The working directory is the user's own: a relative sqlite:/// store is written here.
WORKDIR /var/lib/agent-gateway
USER 10001:10001
EXPOSE 8080
# No curl in slim images: the stdlib fetches /healthz (an HTTP error or no answer exits non-zero). It checks port
# 8080: a container started with another --port needs its own healthcheck, as the agent has in docker-compose.yml.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2)"]
ENTRYPOINT ["agent-gateway"]
# 0.0.0.0 inside the container only: publish the port to the host's loopback (-p 127.0.0.1:8080:8080).
CMD ["serve", "--config", "/etc/agent-gateway/gateway.yaml", "--host", "0.0.0.0", "--port", "8080"]
