"""A2A push notifications: a webhook's port is part of what `allow_hosts` allows. Over real HTTP, in front of the
built-in agent."""

from __future__ import annotations

from typing import Any

from servers import Served
from test_a2a_tasks import Receiver, config, error_of, message, rpc, wait_for

from gateway.agent.server import create_agent_app
from gateway.server.app import create_app

KEY_A, KEY_B = "key-a-0123456789", "key-b-0123456789"


def pushed(url: str, key: str, webhook: str, text: str = "hello") -> dict[str, Any]:
    """A task of `key`'s, its updates pushed to `webhook`."""
    answer = rpc(url, "SendMessage", {"message": message(text), "configuration": {
        "taskPushNotificationConfig": {"url": webhook}}}, headers={"authorization": f"Bearer {key}"})
    assert "result" in answer, answer
    task: dict[str, Any] = answer["result"]["task"]
    return task


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

