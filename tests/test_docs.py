"""What the project says of itself against what it is: the package's description names every dialect, the README
quotes the configuration error the gateway writes, and the example configurations' comments name every path their
routes serve. A dialect added to the registry fails these until the words catch up."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from helpers import ROOT

from adapters import registry
from gateway.config import ConfigError, load_config, parse_config

NAMED_AS = {"ag-ui": "AG-UI", "ag-kit": "AG-Kit", "vercel": "Vercel AI SDK", "agent-respond": "agent-respond",
            "a2a": "A2A", "langgraph": "LangGraph", "openai-chat": "OpenAI Chat Completions",
            "openai-responses": "OpenAI Responses"}
"""How prose names each dialect."""


def test_the_package_description_names_every_dialect() -> None:
    description = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    missing = [name for name in registry.DIALECTS if NAMED_AS[name] not in description]
    assert not missing, f"pyproject.toml's description leaves out {missing}"


def test_the_readme_quotes_the_configuration_error_the_gateway_writes() -> None:
    config = "routes:\n  - name: chat\n    upstream:\n      url: http://127.0.0.1:9000/x\n      dialect: agkit\n"
    with pytest.raises(ConfigError) as caught:
        parse_config(config, "gateway.yaml", environ={})
    assert f"`{caught.value}`" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("path", sorted((ROOT / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_configuration_names_the_paths_its_routes_serve(path: Path) -> None:
    text = path.read_text()
    served = {served for route in load_config(path, environ={}).routes for served in route.paths}
    assert not [served for served in sorted(served) if served not in text]
