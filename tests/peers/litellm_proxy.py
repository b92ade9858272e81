"""LiteLLM's proxy (`litellm[proxy]`), a third-party OpenAI-compatible server, offline: its models answer with
LiteLLM's own mock responses (`litellm_config.yaml`), streamed as LiteLLM streams a real model's. `/healthz` is added
for the test harness; the key is the config's master key."""

import os

os.environ.setdefault("CONFIG_FILE_PATH", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "litellm_config.yaml"))

from litellm.proxy.proxy_server import app


@app.get("/healthz")
async def healthz() -> str:
    return "ok"
