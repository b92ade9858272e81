"""Push notification configs: `CreateTaskPushNotificationConfig`, `GetTaskPushNotificationConfig`,
`ListTaskPushNotificationConfigs`, `DeleteTaskPushNotificationConfig`, and the config a `SendMessage` carries in
`configuration.taskPushNotificationConfig`. On a route that sends none (its card says `pushNotifications: false`)
each is `PushNotificationNotSupportedError` (-32003).

A delivery is the task's update as a stream response, POSTed with the config's `token` in
`X-A2A-Notification-Token` and its `authentication` as `Authorization: <scheme> <credentials>`.
"""

from __future__ import annotations

from typing import Any

from gateway.core.errors import InvalidRequest, RunNotFound, WebhooksNotSupported
from gateway.core.ids import new_id
from gateway.core.queries import CallerRuns, Webhook

from .params import param

NOT_SENT = ("this agent sends no push notifications (its card says capabilities.pushNotifications: false): follow "
            "a task with SubscribeToTask, or read it with GetTask")


async def answer_push(method: str, params: dict[str, Any], runs: CallerRuns) -> Any:
    webhooks = runs.webhooks
    if webhooks is None:
        raise WebhooksNotSupported(NOT_SENT)
    task_id = param(params, "taskId")
    if not isinstance(task_id, str) or not task_id:
        raise InvalidRequest(f"{method} needs params.taskId, the task's id")
    if await runs.find(task_id) is None:
        raise RunNotFound(f"there is no task {task_id!r}")
    if method == "CreateTaskPushNotificationConfig":
        webhook = webhook_of(params, task_id)
        await webhooks.add(task_id, webhook)
        return webhook.document
    if method == "ListTaskPushNotificationConfigs":
        return {"configs": [w.document for w in await webhooks.all(task_id)], "nextPageToken": ""}
    config_id = params.get("id")
    if not isinstance(config_id, str) or not config_id:
        raise InvalidRequest(f"{method} needs params.id, the config's id")
    if method == "GetTaskPushNotificationConfig":
        found = await webhooks.get(task_id, config_id)
        if found is None:
            raise RunNotFound(f"task {task_id!r} has no push notification config {config_id!r}")
        return found.document
    await webhooks.delete(task_id, config_id)  # deleting what is not there is done already
    return None


def webhook_of(config: dict[str, Any], task_id: str) -> Webhook:
    """A push notification config as the gateway keeps it: what a delivery sends, and the config to read back."""
    url = config.get("url")
    if not isinstance(url, str) or not url:
        raise InvalidRequest("a push notification config needs its url")
    config_id = config.get("id")
    config_id = config_id if isinstance(config_id, str) and config_id else new_id("push")
    document: dict[str, Any] = {"id": config_id, "taskId": task_id, "url": url}
    headers: dict[str, str] = {}
    token = config.get("token")
    if isinstance(token, str) and token:
        document["token"] = headers["x-a2a-notification-token"] = token
    authentication = config.get("authentication")
    if isinstance(authentication, dict):
        scheme, credentials = authentication.get("scheme"), authentication.get("credentials")
        if isinstance(scheme, str) and scheme:
            document["authentication"] = {"scheme": scheme}
            if isinstance(credentials, str) and credentials:
                document["authentication"]["credentials"] = credentials
                headers["authorization"] = f"{scheme} {credentials}"
    return Webhook(config_id, url, headers, document)


def request_webhooks(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The push notification config a `SendMessage` carries (1.0's `taskPushNotificationConfig`, or
    `pushNotificationConfig` as 0.3 and the specification's examples spell it)."""
    configuration = params.get("configuration")
    if not isinstance(configuration, dict):
        return []
    found = param(configuration, "taskPushNotificationConfig") or param(configuration, "pushNotificationConfig")
    return [found] if isinstance(found, dict) else []

