"""The layering in ARCHITECTURE.md, checked from the imports: every `import` of every module, those inside
functions included, read with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGES = ("gateway", "adapters")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The modules of ours that `path` imports, as dotted names."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [f"{base}.{alias.name}" for alias in node.names]
            names.append(base)
        else:
            continue
        found.update(name for name in names if name.split(".")[0] in PACKAGES)
    return found


MODULES = {_module_name(path): _imports(path) for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
SHARED = {"openai_common": ("openai_chat", "openai_responses", "agent_respond")}
"""The packages under `adapters/` that are no dialect but what some dialects share, and the dialects that share
each: OpenAI's two APIs write usage, error objects and content parts alike, and the eval contract names usage as Chat
Completions does."""
DIALECT_PACKAGES = sorted({name.split(".")[1] for name in MODULES
                           if name.startswith("adapters.") and name != "adapters.registry"} - SHARED.keys())


def _within(name: str, *prefixes: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _breaking(module_prefix: str, allowed: tuple[str, ...]) -> dict[str, list[str]]:
    """Each module under `module_prefix` with the imports of ours that are not under an `allowed` prefix."""
    return {module: sorted(bad) for module, imported in MODULES.items() if _within(module, module_prefix)
            and (bad := [name for name in imported if not _within(name, *allowed) and not _top_level(name)])}


def _top_level(name: str) -> bool:
    """A package itself, or its `__version__`."""
    return name in PACKAGES or name.partition(".")[2].startswith("__")


def test_the_canonical_model_imports_nothing_of_ours() -> None:
    for module in ("gateway.core.events", "gateway.core.turn"):
        assert MODULES[module] == set(), module


def test_the_core_imports_only_the_core() -> None:
    assert _breaking("gateway.core", ("gateway.core",)) == {}


BUILDS_ON = {"ag_kit": ("adapters.ag_ui.decode",)}
"""The one dialect that reads another's stream: AG-Kit servers from cloudbase-agent-server 0.1.22 on answer
`send-message` in AG-UI events."""


@pytest.mark.parametrize("dialect", DIALECT_PACKAGES)
def test_a_dialect_imports_only_the_core_and_itself(dialect: str) -> None:
    shared = tuple(f"adapters.{package}" for package, sharing in SHARED.items() if dialect in sharing)
    allowed = ("gateway.core", f"adapters.{dialect}", *BUILDS_ON.get(dialect, ()), *shared)
    assert _breaking(f"adapters.{dialect}", allowed) == {}


@pytest.mark.parametrize("package", sorted(SHARED))
def test_what_dialects_share_imports_only_the_core_and_itself(package: str) -> None:
    assert _breaking(f"adapters.{package}", ("gateway.core", f"adapters.{package}")) == {}


def test_the_upstream_client_imports_only_itself() -> None:
    assert _breaking("gateway.upstream", ("gateway.upstream",)) == {}


def test_conversations_import_only_the_core_and_themselves() -> None:
    assert _breaking("gateway.conversations", ("gateway.core", "gateway.conversations")) == {}


def test_runs_import_only_the_store_the_core_and_themselves() -> None:
    assert _breaking("gateway.runs", ("gateway.core", "gateway.conversations.store", "gateway.runs")) == {}


def test_the_built_in_agent_knows_dialects_only_through_the_registry() -> None:
    assert _breaking("gateway.agent", ("gateway.core", "gateway.agent", "adapters.registry")) == {}


def test_recordings_import_only_the_core_the_registry_and_themselves() -> None:
    assert _breaking("gateway.recordings", ("gateway.core", "gateway.recordings", "adapters.registry")) == {}


def test_the_inspector_imports_only_recordings_the_core_and_itself() -> None:
    assert _breaking("gateway.inspector", ("gateway.core", "gateway.recordings", "gateway.inspector")) == {}


def test_the_server_does_not_reach_into_the_tools_above_it() -> None:
    allowed = ("gateway.core", "gateway.upstream", "gateway.conversations", "gateway.runs", "gateway.server",
               "gateway.config", "adapters.registry", "gateway.inspector", "gateway.recordings")
    assert _breaking("gateway.server", allowed) == {}


def test_outside_adapters_only_the_registry_is_imported() -> None:
    reaching = {module: sorted(name for name in imported
                               if _within(name, "adapters") and name != "adapters"
                               and not _within(name, "adapters.registry"))
                for module, imported in MODULES.items() if not _within(module, "adapters")}
    assert {module: names for module, names in reaching.items() if names} == {}


def test_every_dialect_package_is_in_the_registry() -> None:
    from adapters import registry

    registered = sorted(d.parse_request.__module__.rpartition(".")[0] for d in registry.DIALECTS.values())
    assert registered == [f"adapters.{d}" for d in DIALECT_PACKAGES]
