"""The layering in ARCHITECTURE.md, checked from the imports read with `ast`: every `import` of every module, those
inside functions included; and for the server's layers and import cycles, the imports a module makes as it is
imported (those under `if TYPE_CHECKING:` and inside functions aside)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
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


PATHS = {_module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
MODULES = {module: _imports(path) for module, path in PATHS.items()}
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


def _as_imported(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports run when a module is imported: at its top, in its classes and in the branches it takes, not in
    its functions nor under `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            checking = isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            yield from _as_imported(node.orelse if checking else [*node.body, *node.orelse])
        elif isinstance(node, ast.Try):
            yield from _as_imported([*node.body, *node.orelse, *node.finalbody,
                                     *(line for handler in node.handlers for line in handler.body)])
        elif isinstance(node, ast.ClassDef | ast.With):
            yield from _as_imported(node.body)


def _modules_imported(module: str) -> set[str]:
    """The modules of ours that `module` imports as it is imported (a name imported from a module counts as the
    module, a module imported from a package as the module)."""
    path = PATHS[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _as_imported(ast.parse(path.read_text(), str(path)).body):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            while name and name not in PATHS:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


IMPORTED = {module: _modules_imported(module) for module in PATHS}

SERVER_LAYERS = ("operations", "connections", "stream", "request", "endpoints")
"""The server's layers, from the bottom: each may import those before it, and none after it. Directly in
`gateway/server/`, what puts them together: the app, a route's handler, and its resumable runs (which hand a new run
back to the handler)."""


def _server_layers_imported(layer: str) -> dict[str, list[str]]:
    """Each module of the server's `layer` with the other layers of the server it imports as it is imported."""
    found: dict[str, list[str]] = {}
    for module, imported in IMPORTED.items():
        if not _within(module, f"gateway.server.{layer}"):
            continue
        layers = sorted({name.split(".")[2] if _within(name, *_LAYER_PACKAGES) else name
                         for name in imported if _within(name, "gateway.server") and name != "gateway.server"
                         and not _within(name, f"gateway.server.{layer}")})
        if layers:
            found[module] = layers
    return found


_LAYER_PACKAGES = tuple(f"gateway.server.{layer}" for layer in SERVER_LAYERS)


def test_the_servers_operations_import_no_other_layer_of_the_server() -> None:
    assert _server_layers_imported("operations") == {}


def test_the_servers_connections_import_only_its_operations() -> None:
    assert {module: layers for module, layers in _server_layers_imported("connections").items()
            if set(layers) - {"operations"}} == {}


def test_the_stream_imports_the_connections_and_operations_below_it() -> None:
    assert {module: layers for module, layers in _server_layers_imported("stream").items()
            if set(layers) - {"connections", "operations"}} == {}


def test_the_request_imports_the_stream_and_the_layers_below_it() -> None:
    assert {module: layers for module, layers in _server_layers_imported("request").items()
            if set(layers) - {"stream", "connections", "operations"}} == {}


def test_the_endpoints_import_the_request_and_the_layers_below_it_never_the_app_or_a_route() -> None:
    assert {module: layers for module, layers in _server_layers_imported("endpoints").items()
            if set(layers) - {"request", "stream", "connections", "operations"}} == {}


def test_every_module_of_the_server_is_in_a_layer_but_the_app_and_the_route_handlers() -> None:
    directly = sorted(module for module in PATHS if module.count(".") == 2 and _within(module, "gateway.server")
                      and not _within(module, *_LAYER_PACKAGES))
    assert directly == ["gateway.server.app", "gateway.server.resumable", "gateway.server.route"]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for edge in edges:
                if edge not in index:
                    index[edge] = low[edge] = len(index)
                    stack.append(edge)
                    on_stack.add(edge)
                    work.append((edge, iter(sorted(graph[edge]))))
                    break
                if edge in on_stack:
                    low[node] = min(low[node], index[edge])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_of_the_gateway_or_a_dialect_imports_itself_through_others() -> None:
    assert _cycles(IMPORTED) == []
