"""The docs: the README a newcomer reads, the pages it sends them on to, and the site they make.

The README stays short (at most 400 lines) and holds the two commands of a fresh machine word for word: the demo,
and the tests CI runs. Every page of `mkdocs.yml` is there and every page there is in it; the configuration
reference is what the models say; what the pages, the package's description and the example configurations say of
the gateway is what it is (a dialect added to the registry fails these until the words catch up); and the site
builds with `mkdocs build --strict`, which fails on a broken link or anchor. scripts/test runs this file as its
`docs` stage.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from helpers import ROOT

from adapters import registry
from gateway.config import ConfigError, load_config, parse_config, reference
from gateway.config.model import Model
from gateway.inspector.options import InspectorOptions
from gateway.recordings.options import RecordOptions

README = ROOT / "README.md"
DOCS = ROOT / "docs"

DEMO = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/agent-gateway demo"
"""Installs and runs the gateway on a fresh machine, on the built-in agent: no agent of one's own needed."""
TESTS = "scripts/test"
"""Installs what the tests need and runs them, as CI does (`.ci/run`)."""
NAMED_AS = {"ag-ui": "AG-UI", "ag-kit": "AG-Kit", "vercel": "Vercel AI SDK", "agent-respond": "agent-respond",
            "a2a": "A2A", "langgraph": "LangGraph", "openai-chat": "OpenAI Chat Completions",
            "openai-responses": "OpenAI Responses", "mcp": "MCP"}
"""How prose names each dialect."""


def _hooks() -> ModuleType:
    """scripts/mkdocs_hooks.py, which names the pages the site makes of the files at the repository's root."""
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _section(text: str, heading: str) -> str:
    """A `## ` section of a Markdown text, without its heading."""
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = README.read_text()
    lines = len(text.splitlines())
    assert lines <= 400, f"the README is {lines} lines: it is for a newcomer, so move the details to a page of docs/"
    assert re.findall(r"^## .*", text, re.MULTILINE)[0] == "## Try it", "the two commands come first"
    blocks = [block.strip() for block in re.findall(r"```bash\n(.*?)```", _section(text, "Try it"), re.DOTALL)]
    assert DEMO in blocks and TESTS in blocks, blocks
    assert os.access(ROOT / TESTS, os.X_OK)
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_the_readmes_routes_are_configurations_the_gateway_takes() -> None:
    route, fallbacks = re.findall(r"```yaml\n(.*?)```", README.read_text(), re.DOTALL)
    config = parse_config(route, "README.md", environ={})
    assert config.routes[0].upstream.dialect == "ag-kit"
    config = parse_config(fallbacks, "README.md", environ={})
    assert [u.dialect for u in config.routes[0].upstreams] == ["langgraph", "vercel"]


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in _nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    raise AssertionError(f"not a nav entry: {nav!r}")


def test_every_page_of_the_site_is_in_its_nav_and_there() -> None:
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = _nav_pages(site["nav"])
    made = _hooks().ROOT_PAGES
    assert all((ROOT / source).is_file() for source in made), made
    written = sorted(str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md"))
    assert sorted(pages) == sorted([*written, *made.values()])


def test_the_configuration_reference_is_what_the_models_say() -> None:
    assert reference.missing_descriptions() == []
    page = ROOT / reference.PAGE
    assert page.read_text() == reference.page(), f"{reference.PAGE} is stale: run `python -m gateway.config.reference`"


def _models(base: type[Model]) -> set[type[Model]]:
    return {sub for direct in base.__subclasses__() for sub in {direct, *_models(direct)}}


def test_the_configuration_reference_names_every_key_of_every_section() -> None:
    sections = list(reference.sections())
    documented = {model for section in sections for model in section.model.__mro__}  # GatewayConfig: made from a base
    assert documented >= {*_models(Model), InspectorOptions, RecordOptions}
    text = (ROOT / reference.PAGE).read_text()
    for section in sections:
        for name in section.model.model_fields:
            key = f"{section.path}.{name}" if section.path else name
            assert f"| `{key}` |" in text, key


def test_the_configuration_page_quotes_the_gateways_own_error() -> None:
    with pytest.raises(ConfigError) as error:
        parse_config("routes:\n  - name: chat\n    upstream:\n      url: http://127.0.0.1:9000/send-message\n"
                     "      dialect: agkit\n", "gateway.yaml", environ={})
    assert f"`{error.value}`" in (DOCS / "configuration.md").read_text()


def test_the_site_builds_strict(tmp_path: Path) -> None:
    """A broken link or anchor, a page left out of the nav or a nav entry with no page fails the build."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        why = "MkDocs and its Material theme are not installed (the `docs` extra, in `dev`)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}: CI installs them (scripts/test)")
        pytest.skip(f"{why}; scripts/test installs them, and CI fails without them")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                           cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
                           timeout=120)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "index.html").is_file() and (tmp_path / "reference" / "configuration" / "index.html").is_file()


def test_the_package_description_names_every_dialect() -> None:
    description = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    missing = [name for name in registry.DIALECTS if NAMED_AS[name] not in description]
    assert not missing, f"pyproject.toml's description leaves out {missing}"


@pytest.mark.parametrize("path", sorted((ROOT / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_configuration_names_the_paths_its_routes_serve(path: Path) -> None:
    text = path.read_text()
    served = {served for route in load_config(path, environ={}).routes for served in route.paths}
    assert not [served for served in sorted(served) if served not in text]
