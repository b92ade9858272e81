"""The deployment examples: deploy/kubernetes/ (and its Sentinel variant, sentinel/) against the Kubernetes API
schemas, each way the docs apply them as a whole, and each against what the gateway does (its config loads, its
probes ask the right endpoints, its grace period fits the drain), and docker-compose.yml the same way."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from helpers import ROOT

from gateway.config import parse_config

KUBERNETES = "1.32.0"
"""The Kubernetes whose API schemas the manifests are checked against (preStop's `sleep`, which they use, is on by
default from 1.30)."""
MANIFESTS = sorted((ROOT / "deploy" / "kubernetes").rglob("*.yaml"))


def documents(paths: list[Path] = MANIFESTS) -> list[dict[str, Any]]:
    return [doc for path in paths for doc in yaml.safe_load_all(path.read_text()) if doc]


def find(kind: str, name: str) -> dict[str, Any]:
    return next(doc for doc in documents() if doc["kind"] == kind and doc["metadata"]["name"] == name)


def applied() -> dict[str, list[Path]]:
    """The files each `kubectl apply -f ...` of docs/operations.md applies (a directory: its own files, as
    `kubectl apply -f` without -R reads it), by command."""
    commands = re.findall(r"kubectl apply((?: -f [^\s`]+)+)", (ROOT / "docs" / "operations.md").read_text())
    return {command.strip(): [file for path in command.split()[1::2] for file in
                              (sorted((ROOT / path).glob("*.yaml")) if (ROOT / path).is_dir() else [ROOT / path])]
            for command in commands}


@pytest.mark.parametrize("document", documents(), ids=lambda doc: f"{doc['kind']}/{doc['metadata']['name']}")
def test_every_manifest_is_valid_kubernetes_to_the_letter(document: dict[str, Any]) -> None:
    kubernetes_validate.validate(document, KUBERNETES, strict=True)  # unknown fields fail too


def gateway_container() -> dict[str, Any]:
    pod = find("Deployment", "agent-gateway")["spec"]["template"]["spec"]
    return next(c for c in pod["containers"] if c["name"] == "gateway")


def test_the_docs_apply_the_gateway_with_one_redis_or_with_redis_behind_sentinel() -> None:
    assert {tuple(path.relative_to(ROOT).as_posix() for path in paths) for paths in applied().values()} == {
        ("deploy/kubernetes/gateway.yaml", "deploy/kubernetes/redis.yaml"),
        ("deploy/kubernetes/gateway.yaml", "deploy/kubernetes/sentinel/redis-sentinel.yaml")}


@pytest.mark.parametrize("command", applied())
def test_each_way_the_docs_apply_the_manifests_defines_each_object_once(command: str) -> None:
    """Two Redis applied together would each say where the gateway's store is, the last one winning."""
    named = [(doc["kind"], doc["metadata"]["name"]) for doc in documents(applied()[command])]
    assert len(named) == len(set(named)), named


@pytest.mark.parametrize("command", applied())
def test_the_configmap_is_a_gateway_config_that_loads_with_the_pods_environment(command: str) -> None:
    """The pod's variables as Kubernetes gives them: a value, or a key of a ConfigMap applied with it."""
    scheme = "redis+sentinel://" if "sentinel" in command else "redis://"
    maps = {doc["metadata"]["name"]: doc["data"] for doc in documents(applied()[command]) if doc["kind"] == "ConfigMap"}
    environment = {e["name"]: e["value"] if "value" in e else
                   maps[e["valueFrom"]["configMapKeyRef"]["name"]][e["valueFrom"]["configMapKeyRef"]["key"]]
                   for e in gateway_container()["env"]}
    config = parse_config(maps["agent-gateway"]["gateway.yaml"], "configmap", environ=environment)
    assert config.store.url.startswith(scheme) and config.routes[0].ready_needs_upstream


def test_one_redis_is_where_its_service_is() -> None:
    redis = documents([ROOT / "deploy" / "kubernetes" / "redis.yaml"])
    [url] = [doc["data"]["url"] for doc in redis if doc["metadata"]["name"] == "agent-gateway-store"]
    [service] = [doc for doc in redis if doc["kind"] == "Service"]
    assert url == f"redis://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}/0"


def test_liveness_asks_healthz_and_readiness_readyz_on_the_gateways_port() -> None:
    container = gateway_container()
    port = container["ports"][0]["name"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port}
    assert "--port" in container["args"] and container["ports"][0]["containerPort"] == int(
        container["args"][container["args"].index("--port") + 1])


def test_the_grace_period_holds_the_prestop_wait_and_the_whole_drain() -> None:
    pod = find("Deployment", "agent-gateway")["spec"]["template"]["spec"]
    drain = parse_config(find("ConfigMap", "agent-gateway")["data"]["gateway.yaml"], "configmap",
                         environ={"AGENT_URL": "http://a/", "AGENT_GATEWAY_STORE": "memory://"}).drain_seconds
    wait = gateway_container()["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert wait + drain + 3 <= pod["terminationGracePeriodSeconds"]  # 3 s to end the rest in band and exit


def test_compose_gives_the_gateway_time_to_drain_and_checks_its_readiness() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    gateway = compose["services"]["gateway"]
    drain = parse_config(Path(ROOT / "config" / "compose.yaml").read_text(), "compose.yaml", environ={}).drain_seconds
    assert int(gateway["stop_grace_period"].removesuffix("s")) >= drain + 3
    assert "/readyz" in " ".join(gateway["healthcheck"]["test"])


def test_the_image_is_named_in_one_place_and_both_containers_run_it() -> None:
    pod = find("Deployment", "agent-gateway")["spec"]["template"]["spec"]
    [image] = {container["image"] for container in pod["containers"]}
    assert (ROOT / "deploy" / "kubernetes" / "gateway.yaml").read_text().count(image) == 1


def test_the_manifests_say_the_kubernetes_their_prestop_sleep_needs() -> None:
    """preStop's `sleep` is on by default from Kubernetes 1.30: an older cluster refuses the manifest."""
    assert gateway_container()["lifecycle"]["preStop"]["sleep"]
    text = (ROOT / "deploy" / "kubernetes" / "gateway.yaml").read_text()
    operations = (ROOT / "docs" / "operations.md").read_text()
    assert "needs Kubernetes 1.30 or later" in text and "Kubernetes 1.30 or later" in operations
