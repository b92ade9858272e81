# syntax=docker/dockerfile:1
#
# agent-gateway: docker build -t agent-gateway . && docker run -p 127.0.0.1:8080:8080 agent-gateway
# The default config (/etc/agent-gateway/gateway.yaml, a copy of config/compose.yaml) reads AGENT_URL and
# AGENT_GATEWAY_STORE; mount another file there, or pass `serve --config /etc/agent-gateway/<file>.yaml ...`.

# Build stage: the project and every dependency as wheels, so the final stage installs without build tools.
FROM python:3.11-slim AS builder
WORKDIR /src
COPY pyproject.toml README.md ./
COPY gateway/ gateway/
COPY adapters/ adapters/
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 10001 gateway \
 && useradd --system --uid 10001 --gid gateway --home-dir /var/lib/agent-gateway --create-home \
      --shell /usr/sbin/nologin gateway
# The wheels are bind-mounted, not copied, so they never land in a layer of the final image.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels agent-gateway
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
