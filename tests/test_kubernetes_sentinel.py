"""deploy/kubernetes/sentinel/, the Kubernetes manifests' Sentinel variant: its wiring read from the file (the
schemas are test_deploy.py's), then its pods run here by sentinel_pods.py, with the manifest's commands and
bootstrap script, as real `redis-server` and `redis-server --sentinel` processes on 127.0.0.1: the first pod boots as
the primary and the next as its replicas, and a node that comes back follows the primary the sentinels chose."""

from __future__ import annotations

import re

import httpx
import redis
import yaml
from helpers import ROOT
from sentinel_pods import HOST, SCRIPT, STATEFULSET, SentinelPods, cli, container, environment, find
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import parse_config
from gateway.conversations.store.redis_servers import sentinel_url
from gateway.server.app import create_app

SERVICE = find("Service", "agent-gateway-redis-sentinel")
STORE: str = find("ConfigMap", "agent-gateway-store")["data"]["url"]
POD = STATEFULSET["spec"]["template"]["spec"]
GATEWAY: str = next(doc["data"]["gateway.yaml"] for doc in yaml.safe_load_all((ROOT / "deploy" / "kubernetes" /
                    "gateway.yaml").read_text()) if doc["kind"] == "ConfigMap")
"""The Kubernetes gateway's configuration, which takes its store from the variant's agent-gateway-store."""


def port(container_name: str) -> int:
    [declared] = container(container_name)["ports"]
    return int(declared["containerPort"])


def pod_names() -> list[str]:
    """Each pod's name in the headless Service, as the other pods and the gateway reach it."""
    name, service = STATEFULSET["metadata"]["name"], SERVICE["metadata"]["name"]
    return [f"{name}-{index}.{service}" for index in range(STATEFULSET["spec"]["replicas"])]


def test_every_pod_is_known_by_its_name_in_a_headless_service_that_publishes_it_before_it_is_ready() -> None:
    assert STATEFULSET["spec"]["serviceName"] == SERVICE["metadata"]["name"]
    assert SERVICE["spec"]["clusterIP"] == "None" and SERVICE["spec"]["publishNotReadyAddresses"] is True
    assert SERVICE["spec"]["selector"] == STATEFULSET["spec"]["selector"]["matchLabels"]
    assert {p["targetPort"] for p in SERVICE["spec"]["ports"]} == {"redis", "sentinel"}
    for name in ("redis", "sentinel"):
        env = {e["name"]: e for e in container(name)["env"]}
        assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
        assert env["SELF_HOST"]["value"] == f"$(POD_NAME).{SERVICE['metadata']['name']}"


def test_the_sentinels_the_script_asks_are_the_gateways_and_pod_0_is_the_first_primary() -> None:
    settings = environment("redis")
    sentinels = [f"{name}:{port('sentinel')}" for name in pod_names()]
    assert settings["SENTINELS"].split() == sentinels
    assert settings["FIRST_PRIMARY"] == f"{pod_names()[0]}:{port('redis')}"
    assert STATEFULSET["spec"]["podManagementPolicy"] == "OrderedReady"  # pod -0 answers before -1 starts
    store = sentinel_url(STORE)
    assert [f"{host}:{p}" for host, p in store.sentinels] == sentinels
    assert store.service == settings["MASTER_NAME"]
    assert int(settings["QUORUM"]) == len(sentinels) // 2 + 1  # a majority: one pod lost still fails over


def test_both_containers_run_the_bootstrap_from_its_configmap_with_every_setting_it_needs() -> None:
    [mount] = [m for m in container("redis")["volumeMounts"] if m["name"] == "bootstrap"]
    [volume] = [v for v in POD["volumes"] if v["name"] == "bootstrap"]
    assert volume["configMap"]["name"] == "agent-gateway-redis-sentinel"
    required = set(re.findall(r"\$\{(\w+):\?\}", SCRIPT))
    assert required == {"SELF_HOST", "SENTINELS", "FIRST_PRIMARY"}
    [plain] = [doc for doc in yaml.safe_load_all((ROOT / "deploy" / "kubernetes" / "redis.yaml").read_text())
               if doc["kind"] == "Deployment"]
    for name in ("redis", "sentinel"):  # the Redis of redis.yaml, whose image has redis-cli and a POSIX sh
        assert container(name)["image"] == plain["spec"]["template"]["spec"]["containers"][0]["image"]
        command = container(name)["command"]
        assert command[:3] == ["sh", f"{mount['mountPath']}/bootstrap.sh", name]
        assert required <= {e["name"] for e in container(name)["env"]}
    # The startup probe outlasts a restarted primary's wait for its failover; the grace period, a stopping
    # primary's wait for its step-down and then Redis's own wait for its replicas (shutdown-timeout, 10 s).
    startup = container("redis")["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] > int(environment("redis")["FAILOVER_WAIT"])
    assert int(environment("redis")["STEP_DOWN_WAIT"]) + 10 < POD["terminationGracePeriodSeconds"]
    assert container("redis")["lifecycle"]["preStop"]["exec"]["command"][:3] == [
        "sh", f"{mount['mountPath']}/bootstrap.sh", "step-down"]


def test_the_first_pod_boots_as_the_primary_the_others_as_its_replicas_and_the_gateway_finds_it() -> None:
    with SentinelPods() as pods, Served(create_agent_app("ag-ui")) as agent:
        pods.boot()
        assert pods[0].replication()["role"] == "master"
        for pod in pods.pods[1:]:
            assert pods.replication_of(pod) == pods[0].redis_port
        for pod in pods.pods:  # each known by its name, not its IP
            assert pods.named_primary(pod) == pods[0].redis_port
            sentinel = redis.Redis(host="127.0.0.1", port=pod.sentinel_port, decode_responses=True)
            with sentinel:
                replicas = {(r["ip"], r["port"]) for r in sentinel.sentinel_slaves(pods.service)}
                others = {(s["ip"], s["port"]) for s in sentinel.sentinel_sentinels(pods.service)}
            assert replicas == {(HOST, other.redis_port) for other in pods.pods[1:]}
            assert others == {(HOST, other.sentinel_port) for other in pods.pods if other is not pod}
        config = parse_config(GATEWAY, "configmap",
                              environ={"AGENT_GATEWAY_STORE": pods.url(STORE), "AGENT_URL": f"{agent.url}/agui"})
        with Served(create_app(config)) as gateway:
            ready = httpx.get(f"{gateway.url}/readyz", timeout=10).json()
    # The primary by its name, which the gateway resolves: a restarted pod keeps it, where its IP changes.
    assert ready["redis"] == {"kind": "sentinel", "primary": f"{HOST}:{pods[0].redis_port}", "reachable": True}


def test_an_old_primary_restarted_after_its_failover_comes_back_as_a_replica_of_the_new_one() -> None:
    with SentinelPods() as pods:
        pods.boot()
        cli(pods[0].redis_port, "SET", "before", "1")
        pods.wait(lambda: pods.in_sync(pods[0], "before"), "the replicas to have the write")
        pods[0].kill()  # the pod is lost: its Redis and its sentinel
        pods.wait(lambda: pods.named_primary(pods[1]) not in (None, pods[0].redis_port), "a failover")
        promoted = pods.named_primary(pods[1])

        # Its sentinel first: had it trusted the first boot, it would name its own Redis to it.
        pods[0].start_sentinel()
        pods.wait(lambda: pods[0].answers("sentinel"), "the old primary's sentinel to start")
        assert pods.named_primary(pods[0]) == promoted
        pods[0].start_redis()
        pods.wait(lambda: pods[0].answers("redis"), "the old primary to start")
        assert pods.replication_of(pods[0]) == promoted, "back as a second primary"
        new = next(pod for pod in pods.pods if pod.redis_port == promoted)
        pods.wait(lambda: pods.in_sync(new, "before"), "the old primary to copy the new one")
        pods.wait(lambda: all(pods.named_primary(pod) == promoted and pods.sees_all(pod) for pod in pods.pods),
                  "every sentinel to know the old primary as a replica")


def test_a_primary_restarted_before_the_sentinels_notice_waits_for_their_failover_and_keeps_what_was_written() -> None:
    """Back at once as the primary, and empty, it would have its replicas copy its emptiness."""
    with SentinelPods() as pods:
        pods.boot()
        cli(pods[0].redis_port, "SET", "before", "1")
        pods.wait(lambda: pods.in_sync(pods[0], "before"), "the replicas to have the write")
        pods[0].kill("redis")  # its container restarts, in the same pod: its sentinel stays
        pods[0].start_redis()
        pods.wait(lambda: pods[0].answers("redis"), "the old primary to start")
        # Its bootstrap waited on the first sentinel that answers; the others hear of the failover a moment later,
        # and one that had not yet heard may fail over once more: what counts is the primary they settle on.
        pods.wait(lambda: pods.agreed_primary("before") not in (None, pods[0].redis_port),
                  "every sentinel to name a promoted replica and every node to follow it")
        promoted = pods.named_primary(pods[1])
        assert promoted is not None and promoted != pods[0].redis_port
        assert cli(promoted, "GET", "before") == "1"


def test_a_primary_that_stops_has_the_sentinels_promote_a_replica_before_it_goes() -> None:
    """A rolling update or a drained node: the failover is at once, not once the sentinels judge the primary down."""
    with SentinelPods() as pods:
        pods.boot()
        pods[1].pre_stop()  # a replica: nothing to hand over
        assert pods.named_primary(pods[1]) == pods[0].redis_port
        pods[0].pre_stop()  # returns once a sentinel names another: the others hear of it from that one
        pods.wait(lambda: all(pods.named_primary(pod) not in (None, pods[0].redis_port) for pod in pods.pods),
                  "every sentinel to name another primary")
        promoted = pods.named_primary(pods[1])
        pods.wait(lambda: pods.replication_of(pods[0]) == promoted, "the old primary to follow the new")
