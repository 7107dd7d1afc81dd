"""The shipped packages' import graph, read from the source (ast): no module imports itself back.

Two graphs: the imports a module runs when it is loaded (top level, ``TYPE_CHECKING`` blocks left out),
which must have no cycle at all, and every import including the deferred ones inside functions, whose
only cycles may be the ones listed in :data:`KNOWN_DEFERRED_CYCLES` (each says why it stays).
Importing ``a.b`` counts as an edge to ``a.b`` only, not to the package ``a`` around it.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("staticconsumer", "assignors")

KNOWN_DEFERRED_CYCLES: tuple[frozenset[str], ...] = (
    # OpenTelemetry's meter and tracer are named with the package version, read when first used
    # (``from staticconsumer import __version__`` inside telemetry functions), and the package's
    # __init__ imports the consumer, whose membership thread builds the telemetry observer.
    frozenset({
        "staticconsumer", "staticconsumer._groupless", "staticconsumer.consumer",
        "staticconsumer.runtime.thread", "staticconsumer.telemetry",
        "staticconsumer.telemetry.instruments", "staticconsumer.telemetry.observer",
        "staticconsumer.telemetry.records", "staticconsumer.telemetry.topics",
    }),
    # The rarer public errors subclass BrokerError and StaticConsumerError, so their module imports
    # ``staticconsumer.errors``, which loads it on first use of one of them (issue 26: import cost).
    frozenset({"staticconsumer.errors", "staticconsumer._errors_rare"}),
    # The built-in assignor classes (assignors._builtin) load their algorithm module on their first
    # assign, and that module re-exports the class under its public name (issue 26: a member joins
    # without the algorithms, which only the leader runs); ``userdata`` re-exports the one encoder of
    # the cooperative user data, which every member's join writes from ``_builtin``.
    frozenset({
        "assignors._builtin", "assignors.range", "assignors.roundrobin", "assignors.sticky",
        "assignors.userdata",
    }),
)  # fmt: skip


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(tree: ast.AST, deferred: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (i for child in node.orelse for i in _imports_in(child, deferred))
        else:
            yield from _imports_in(node, deferred)


def _imports_in(node: ast.AST, deferred: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and not deferred:
        return
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    yield from _imports(node, deferred)


@functools.cache
def import_graph(*, deferred: bool) -> dict[str, set[str]]:
    """Module -> the modules of the shipped packages it imports (``deferred``: inside functions too)."""
    modules = _modules()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in _imports(ast.parse(path.read_text()), deferred):
            if isinstance(node, ast.Import):
                targets.update(known(alias.name) for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:  # ``from a import b``: the submodule a.b when there is one
                targets.add(
                    known(f"{base}.{alias.name}") if f"{base}.{alias.name}" in modules else known(base)
                )
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def test_the_graph_is_read_whole() -> None:
    graph = import_graph(deferred=True)
    assert "staticconsumer._maven" in graph["staticconsumer.analytics.jars"]
    assert "staticconsumer._maven" in graph["staticconsumer.testing._jars"]
    assert "staticconsumer.consumer" in graph["staticconsumer"]
    assert "staticconsumer.testing._jars" in graph["staticconsumer.cli"]  # deferred, inside a function
    assert "staticconsumer.testing._jars" not in import_graph(deferred=False)["staticconsumer.cli"]


def test_cycles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": set()}
    assert sorted(map(sorted, cycles(graph))) == [["a", "b", "c"], ["d", "e"]]


def test_no_module_imports_itself_back_when_loaded() -> None:
    assert cycles(import_graph(deferred=False)) == []


def test_deferred_imports_make_no_cycle_but_the_known_ones() -> None:
    unexplained = [sorted(c) for c in cycles(import_graph(deferred=True)) if c not in KNOWN_DEFERRED_CYCLES]
    assert unexplained == []


def test_the_lab_and_the_tools_stay_apart() -> None:
    """analytics and the testing kit share only the neutral Maven module; no SDK module imports the
    testing kit, analytics or the tools at all."""
    graph = import_graph(deferred=True)
    for module, imported in graph.items():
        if module.startswith("staticconsumer.analytics"):
            assert not [m for m in imported if m.startswith("staticconsumer.testing")], module
        if module.startswith("staticconsumer.testing"):
            assert not [m for m in imported if m.startswith("staticconsumer.analytics")], module
    tools = (
        "staticconsumer.testing",
        "staticconsumer.analytics",
        "staticconsumer.demo",
        "staticconsumer.bounce",
    )
    sdk = [
        m for m in graph if not m.startswith((*tools, "staticconsumer.cli", "staticconsumer._bounce_member"))
    ]
    for module in sdk:
        assert not [m for m in graph[module] if m.startswith(tools)], module


def test_the_cli_loads_without_the_testing_kit() -> None:
    code = (
        "import sys, staticconsumer.cli as cli\n"
        "cli.build_parser().parse_args(['describe', 'orders'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('staticconsumer.testing')))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert run.stdout.strip() == "[]", run.stdout
