"""A2A push notifications shared fairly: one principal's hung webhooks cannot starve another's deliveries, a
webhook's port is part of what `allow_hosts` allows, and a webhook that hangs is left alone for a while. Over real
HTTP, in front of the built-in agent; a hung webhook is a real socket that accepts and never answers."""

from __future__ import annotations

import logging
import socket
import threading
import time
from types import TracebackType
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.server.app import create_app
from tests.adapters.a2a.test_tasks import Receiver, config, error_of, message, rpc, wait_for

KEY_A, KEY_B = "key-a-0123456789", "key-b-0123456789"


class Hung:
    """A webhook on 127.0.0.1 that accepts every connection and never answers: each is held, unread, until the
    block ends."""

    def __init__(self) -> None:
        self._listening = socket.create_server(("127.0.0.1", 0), backlog=256)
        self._listening.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self._listening.getsockname()[1]}"
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def accepted(self) -> int:
        return len(self._held)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listening.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(connection)

    def __enter__(self) -> Hung:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(5)
        for connection in self._held:
            connection.close()
        self._listening.close()


def pushed(url: str, key: str, webhook: str, text: str = "hello") -> dict[str, Any]:
    """A task of `key`'s, its updates pushed to `webhook`."""
    answer = rpc(url, "SendMessage", {"message": message(text), "configuration": {
        "taskPushNotificationConfig": {"url": webhook}}}, headers={"authorization": f"Bearer {key}"})
    assert "result" in answer, answer
    task: dict[str, Any] = answer["result"]["task"]
    return task


def keyed(agent: str, push: dict[str, Any]) -> Any:
    """The gateway in front of `agent`, two keys on its A2A route."""
    return create_app(config(agent, push=push, auth={"keys": [KEY_A, KEY_B]}))


def outcomes(gateway: str) -> dict[str, float]:
    """The route's push notifications so far, by outcome, as `/metrics` counts them."""
    families = text_string_to_metric_families(httpx.get(gateway + "/metrics", timeout=10).text)
    return {s.labels["outcome"]: s.value for family in families for s in family.samples
            if s.name == "agent_gateway_push_notifications_total" and s.labels["route"] == "tasks"}


# -- shares --------------------------------------------------------------------------------------------------------


def test_one_keys_flood_for_a_hung_webhook_leaves_another_keys_deliveries_prompt() -> None:
    receiver = Receiver()
    push = {"allow_hosts": ["127.0.0.1"], "delivery_timeout": 5, "retries": 0, "max_pending": 100}
    with Hung() as hung, Served(receiver) as hook, Served(create_agent_app("ag-ui")) as agent, \
            Served(keyed(agent.url, push)) as gw:
        url = gw.url + "/a2a"
        for _ in range(14):  # 8 updates a task: more than the process holds
            pushed(url, KEY_B, hung.url + "/hook")
        asked = time.monotonic()
        task = pushed(url, KEY_A, hook.url + "/hook")
        wait_for(lambda: "TASK_STATE_COMPLETED" in receiver.states(), 5)
        took = time.monotonic() - asked
        flood_waiting = hung.accepted
    assert receiver.states()[-1:] == ["TASK_STATE_COMPLETED"], receiver.states()
    assert all(d["statusUpdate"]["taskId"] == task["id"] for _, d in receiver.deliveries if "statusUpdate" in d)
    assert took < 5 and flood_waiting > 0  # delivered while key B's updates still waited on its hung webhook


def test_one_keys_deliveries_in_flight_are_bounded_however_many_of_its_tasks_wait() -> None:
    receiver = Receiver()
    push = {"allow_hosts": ["127.0.0.1"], "delivery_timeout": 5, "retries": 0, "max_deliveries_per_principal": 3}
    with Hung() as hung, Served(receiver) as hook, Served(create_agent_app("ag-ui")) as agent, \
            Served(keyed(agent.url, push)) as gw:
        url = gw.url + "/a2a"
        for _ in range(8):
            pushed(url, KEY_B, hung.url + "/hook")
        wait_for(lambda: hung.accepted >= 3, 5)
        pushed(url, KEY_A, hook.url + "/hook")
        wait_for(lambda: "TASK_STATE_COMPLETED" in receiver.states(), 5)
        held = hung.accepted
    assert held == 3  # eight tasks waiting, three connections
    assert receiver.states()[-1:] == ["TASK_STATE_COMPLETED"]  # the other key's slots are its own


def test_one_keys_updates_past_its_share_are_dropped_and_counted() -> None:
    push = {"allow_hosts": ["127.0.0.1"], "delivery_timeout": 5, "retries": 0, "max_pending_per_principal": 5}
    with Hung() as hung, Served(create_agent_app("ag-ui")) as agent, Served(keyed(agent.url, push)) as gw:
        pushed(gw.url + "/a2a", KEY_B, hung.url + "/hook")
        counted = outcomes(gw.url)
    assert counted["dropped"] == 3  # 8 updates: 5 wait on the hung webhook


# -- ports ---------------------------------------------------------------------------------------------------------


def test_allow_hosts_with_a_port_takes_webhooks_on_that_port_and_refuses_others() -> None:
    receiver = Receiver()
    with Served(receiver) as hook, Served(create_agent_app("ag-ui")) as agent, \
            Served(create_app(config(agent.url, push={"allow_hosts": [f"127.0.0.1:{hook.port}"]}))) as gw:
        url = gw.url + "/a2a"
        other_port = f"http://127.0.0.1:{hook.port + 1 if hook.port < 65535 else hook.port - 1}/hook"
        task = pushed(url, KEY_A, hook.url + "/hook")
        wait_for(lambda: "TASK_STATE_COMPLETED" in receiver.states())
        created = rpc(url, "CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": hook.url + "/again"})
        refused = rpc(url, "CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": other_port})
        refused_with_message = rpc(url, "SendMessage", {"message": message("hello"), "configuration": {
            "taskPushNotificationConfig": {"url": other_port}}})
        default_port = rpc(url, "CreateTaskPushNotificationConfig", {"taskId": task["id"],
                                                                     "url": "http://127.0.0.1/hook"})
    assert receiver.states()[-1] == "TASK_STATE_COMPLETED"
    assert created["result"]["url"] == hook.url + "/again"
    for answer in (refused, refused_with_message):
        assert error_of(answer)[0] == -32602 and other_port.removesuffix("/hook") in answer["error"]["message"]
    assert error_of(default_port)[0] == -32602 and "http://127.0.0.1:80" in default_port["error"]["message"]


# -- cool-off ------------------------------------------------------------------------------------------------------


def test_a_webhook_that_timed_out_twice_in_a_row_is_left_alone_for_its_cool_off_and_counted(
        caplog: pytest.LogCaptureFixture) -> None:
    receiver = Receiver()
    push = {"allow_hosts": ["127.0.0.1"], "delivery_timeout": 0.5, "retries": 3, "cool_off": 2}
    with caplog.at_level(logging.INFO, logger="agent_gateway.push"), Hung() as hung, Served(receiver) as hook, \
            Served(create_agent_app("ag-ui")) as agent, Served(keyed(agent.url, push)) as gw:
        url = gw.url + "/a2a"
        pushed(url, KEY_B, hung.url + "/hook")
        wait_for(lambda: outcomes(gw.url).get("skipped") == 8, 5)
        cooling = time.monotonic()
        pushed(url, KEY_B, hung.url + "/hook")  # cooling off: not even tried
        pushed(url, KEY_B, hook.url + "/hook")  # another origin is not
        wait_for(lambda: "TASK_STATE_COMPLETED" in receiver.states())
        counted, tried_while_cooling = outcomes(gw.url), hung.accepted
        time.sleep(max(0.0, cooling + 2.1 - time.monotonic()))
        pushed(url, KEY_B, hung.url + "/hook")  # tried again once the cool-off is over
        wait_for(lambda: hung.accepted > 2, 5)
    said = [r.getMessage() for r in caplog.records if r.name == "agent_gateway.push"]
    assert tried_while_cooling == 2  # two timeouts, then the retries and the rest of the task were skipped
    assert counted == {"skipped": 16, "delivered": 8, "failed": 0, "dropped": 0}
    assert hung.accepted == 3
    assert len([m for m in said if "timed out 2 times in a row" in m and hung.url in m]) == 1
    assert len([m for m in said if "are sent again" in m and hung.url in m]) == 1
