"""docker-compose.sentinel.yml, the Sentinel variant over docker-compose.yml, checked without Docker: its wiring read
from the file, then its sentinels' own configuration run by real `redis-server --sentinel` processes on 127.0.0.1
(service names and ports turned into local ones), with the gateway's mounted config and the variant's store URL
finding the primary through them.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import yaml
from helpers import ROOT
from redis_sentinel import RedisSentinels
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import load_config
from gateway.conversations.store.redis_servers import sentinel_url
from gateway.server.app import create_app

BASE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
VARIANT: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.sentinel.yml").read_text())["services"]
SENTINELS = sorted(name for name in VARIANT if name.startswith("sentinel-"))


def sentinel_conf(service: str) -> str:
    """The configuration file a sentinel service's command writes, as it writes it."""
    script = VARIANT[service]["command"][-1]
    found = re.search(r"<<'CONF'\n(.*?)\nCONF\n", script, re.S)
    assert found, script
    return found.group(1)


def test_the_variant_adds_a_replica_and_three_sentinels_watching_the_redis_service() -> None:
    assert set(VARIANT) == {"gateway", "redis-replica", *SENTINELS} and len(SENTINELS) == 3
    assert VARIANT["redis-replica"]["command"] == ["redis-server", "--replicaof", "redis", "6379"]
    for service in SENTINELS:
        conf = sentinel_conf(service).splitlines()
        assert "port 26379" in conf and "sentinel resolve-hostnames yes" in conf  # `redis` is a service name
        [monitor] = [line.split() for line in conf if line.startswith("sentinel monitor")]
        assert monitor[2:5] == ["mymaster", "redis", "6379"] and int(monitor[5]) <= len(SENTINELS) // 2 + 1
        assert VARIANT[service]["image"] == BASE["redis"]["image"]


def test_the_gateway_finds_the_primary_through_every_sentinel_service_once_they_are_healthy() -> None:
    gateway = VARIANT["gateway"]
    store = gateway["environment"]["AGENT_GATEWAY_STORE"]
    config = load_config(ROOT / "config" / "compose.yaml", environ={"AGENT_GATEWAY_STORE": store})
    found = sentinel_url(config.store.url)
    assert found.sentinels == tuple((name, 26379) for name in SENTINELS) and found.service == "mymaster"
    assert {name: {"condition": "service_healthy"} for name in SENTINELS}.items() <= gateway["depends_on"].items()


def test_the_variants_sentinels_run_here_and_the_gateway_finds_their_primary() -> None:
    def local(port: int, primary: int) -> str:
        return sentinel_conf(SENTINELS[0]).replace("port 26379", f"port {port}").replace(
            "mymaster redis 6379", f"mymaster 127.0.0.1 {primary}")

    with RedisSentinels(conf=local) as redis, Served(create_agent_app("ag-ui")) as agent:
        store = VARIANT["gateway"]["environment"]["AGENT_GATEWAY_STORE"]
        for name, port in zip(SENTINELS, redis.ports, strict=True):
            store = store.replace(f"{name}:26379", f"127.0.0.1:{port}")
        config = load_config(ROOT / "config" / "compose.yaml",
                             environ={"AGENT_GATEWAY_STORE": store, "AGENT_URL": f"{agent.url}/agui"})
        with Served(create_app(config)) as gateway:
            ready = httpx.get(f"{gateway.url}/readyz", timeout=10).json()
    assert ready["redis"] == {"kind": "sentinel", "primary": f"127.0.0.1:{redis.primary.port}", "reachable": True}
