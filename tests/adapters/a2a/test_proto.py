"""The A2A protobuf schema the gRPC binding is built on: the spec's v1.0.0 `a2a.proto`, as a2a-sdk 1.3.0 ships it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from adapters.a2a import proto

ROOT = Path(__file__).resolve().parents[3]


def test_the_schema_in_the_tree_is_what_the_pinned_sdk_gives() -> None:
    result = subprocess.run([sys.executable, "scripts/generate-a2a-proto", "--check"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr


def test_the_service_has_the_eleven_methods_of_a2a_1_0() -> None:
    service = proto.loaded().pool.FindServiceByName(proto.SERVICE)
    assert [method.name for method in service.methods] == [
        "SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask",
        "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
        "GetExtendedAgentCard", "DeleteTaskPushNotificationConfig"]


def test_a_message_written_here_is_read_by_the_sdks_own_classes() -> None:
    schema = proto.loaded()
    request = schema.json_format.ParseDict({"message": {"messageId": "m", "role": "ROLE_USER",
                                                        "parts": [{"text": "hi"}]}}, schema.SendMessageRequest())
    sdk = ROOT / ".peers" / "a2a" / "bin" / "python"
    read = subprocess.run([str(sdk), "-c", "import sys; from a2a.types import a2a_pb2; "
                           "m = a2a_pb2.SendMessageRequest.FromString(sys.stdin.buffer.read()); "
                           "print(m.message.parts[0].text, a2a_pb2.Role.Name(m.message.role))"],
                          input=request.SerializeToString(), capture_output=True, timeout=60, check=True)
    assert read.stdout.decode().split() == ["hi", "ROLE_USER"]
