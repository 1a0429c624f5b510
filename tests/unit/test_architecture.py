"""The import graph shows the architecture: ``monitor.core`` at the bottom, capabilities above it, adapters and
wiring on top, and no cycle between packages; the local development stack is imported by the wiring alone.

Nodes are ``alerts``, ``collectors``, ``dashboards`` and each direct child of ``monitor`` (``monitor.core``,
``monitor.api``, ``monitor.serve``...). Every import counts: module level, inside functions, under
``TYPE_CHECKING``, and ``importlib.import_module("...")`` with a literal name, because an import that dodges a
cycle is still a cycle. Within one node the same holds between its modules (``module_graph``): none is excused.

The test harness (``tests/harness``) is not the product: no product module imports ``tests.*``, and the wheel built
from the checkout holds no harness module.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("alerts", "collectors", "dashboards", "monitor")
BASE = "monitor.core"

pytestmark = pytest.mark.unit


def node_of(module: str) -> str | None:
    """The graph node a dotted module name belongs to; None for the ``monitor`` package itself and third parties."""
    parts = module.split(".")
    if parts[0] not in PACKAGES:
        return None
    if parts[0] == "monitor":
        return f"monitor.{parts[1]}" if len(parts) > 1 else None
    return parts[0]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, int]]:
    """Every module name an AST imports, with its line: ``from a import b`` yields ``a.b`` as well as ``a`` (b may
    be a module), relative imports resolved against ``module``."""
    out: list[tuple[str, int]] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out += [(a.name, n.lineno) for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - n.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            out.append((base, n.lineno))
            out += [(f"{base}.{a.name}", n.lineno) for a in n.names]
        elif (
            isinstance(n, ast.Call)
            and isinstance(n.func, (ast.Attribute, ast.Name))
            and getattr(n.func, "attr", getattr(n.func, "id", None)) == "import_module"
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and isinstance(n.args[0].value, str)
        ):
            out.append((n.args[0].value, n.lineno))
    return out


def import_graph() -> dict[str, dict[str, list[str]]]:
    """node -> imported node -> ["file:line", ...], over every .py of the project's packages."""
    graph: dict[str, dict[str, list[str]]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = _module_name(path)
            source = node_of(module)
            if source is None:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            for name, line in _imported(tree, module, path.name == "__init__.py"):
                target = node_of(name)
                if target and target != source:
                    graph.setdefault(source, {}).setdefault(target, []).append(f"{path.relative_to(ROOT)}:{line}")
    return graph


def module_graph(sources: dict[str, tuple[str, bool, str]]) -> dict[str, dict[str, list[str]]]:
    """module -> imported module of the same node -> ["where:line", ...]; ``sources`` maps each module name to
    (its source, whether it is a package's ``__init__``, where it is). An import of a name that is not a module
    counts as one of the module that holds it (``from pkg import X`` runs ``pkg/__init__.py``)."""
    graph: dict[str, dict[str, list[str]]] = {}
    for module, (source, is_package, where) in sources.items():
        node = node_of(module)
        for name, line in _imported(ast.parse(source), module, is_package):
            if name in sources and name != module and node is not None and node_of(name) == node:
                graph.setdefault(module, {}).setdefault(name, []).append(f"{where}:{line}")
    return graph


def project_sources() -> dict[str, tuple[str, bool, str]]:
    return {
        _module_name(path): (path.read_text(), path.name == "__init__.py", str(path.relative_to(ROOT)))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def find_cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one node (Tarjan), as a closed path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_path_within(graph, comp) for comp in components]


def _path_within(graph: dict[str, dict[str, list[str]]], comp: list[str]) -> list[str]:
    """A closed path through the component from its first node (breadth-first back to the start)."""
    start, members = comp[0], set(comp)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in graph.get(v, {}):
                if w == start:
                    path = [start]
                    while v != start:
                        path.insert(1, v)
                        v = parents[v]
                    return [*path, start]
                if w in members and w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def _explain(graph, path: list[str]) -> str:
    return (
        " -> ".join(path)
        + "\n"
        + "\n".join(f"  {a} -> {b}: {', '.join(graph[a][b][:3])}" for a, b in zip(path, path[1:]))
    )


def test_no_cycle_between_packages():
    graph = import_graph()
    cycles = find_cycles(graph)
    assert not cycles, "import cycles between packages:\n" + "\n".join(_explain(graph, c) for c in cycles)


def test_no_cycle_between_modules_of_a_package():
    graph = module_graph(project_sources())
    cycles = find_cycles(graph)
    assert not cycles, "import cycles between modules:\n" + "\n".join(_explain(graph, c) for c in cycles)


def test_a_cycle_dodged_by_a_function_level_import_is_found():
    sources = {
        "alerts.detectors": ("from alerts.detectors.types import Ctx\n", True, "d/__init__.py"),
        "alerts.detectors.types": ("X = 1\n", False, "d/types.py"),
        "alerts.detectors.lag": ("from alerts.detectors import Ctx\n", False, "d/lag.py"),
        "alerts.registry": ("def all():\n    from alerts.detectors import lag\n", False, "registry.py"),
    }
    assert find_cycles(module_graph(sources)) == []
    sources["alerts.detectors"] = (
        sources["alerts.detectors"][0] + "def all():\n    from . import lag\n",
        True,
        "d/__init__.py",
    )
    assert find_cycles(module_graph(sources)) == [["alerts.detectors", "alerts.detectors.lag", "alerts.detectors"]]


# The local development cluster (Kafka, Prometheus, Alertmanager for the demo and the tests) is imported by the
# wiring that plugs it in as the last configuration fallback and by the demo that runs it; nothing else.
STACK = "monitor.stack"
STACK_IMPORTERS = {"monitor.cli", "monitor.demo"}


def test_no_capability_imports_the_local_stack():
    graph = import_graph()
    assert "monitor.cli" in {n for n, targets in graph.items() if STACK in targets}, "wrong node name?"
    offenders = {
        node: targets[STACK] for node, targets in graph.items() if STACK in targets and node not in STACK_IMPORTERS
    }
    assert not offenders, f"only {sorted(STACK_IMPORTERS)} may import {STACK}: {offenders}"


# The test harness (tests/harness: fault injection, slow links, Java clients, the serve launcher, the shared fakes)
# is not the product: the product never imports it and the wheel does not ship it.
HARNESS = ("tests", "faults", "slow_link", "javaclients", "launch", "fake_source", "REPO_ROOT")


def test_the_product_imports_no_test_code():
    offenders = [
        f"{where}:{line} {name}"
        for module, (source, is_package, where) in project_sources().items()
        for name, line in _imported(ast.parse(source), module, is_package)
        if name == "tests" or name.startswith("tests.")
    ]
    assert not offenders, offenders


def wheel_modules(tmp: Path) -> list[str]:
    """The files of a wheel built from the checkout's files as git sees them (tracked, or new and not ignored),
    copied to ``tmp`` first, so the build neither writes into the shared checkout nor reads a stale build/ there."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    src = tmp / "src"
    for name in filter(None, (f.decode() for f in files)):
        path = ROOT / name
        if path.is_file() or path.is_symlink():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink():
                (src / name).symlink_to(path.readlink())
            else:
                shutil.copy2(path, src / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(src)],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        return z.namelist()


def harness_in(names: list[str]) -> list[str]:
    return [n for n in names if n.endswith(".py") and (n.startswith("tests/") or Path(n).stem in HARNESS)]


def test_the_wheel_holds_no_harness(tmp_path):
    names = wheel_modules(tmp_path)
    assert "monitor/cli.py" in names and "alerts/engine.py" in names, "not the product's wheel?"
    assert harness_in(names) == []


def test_harness_in_finds_the_harness():
    assert harness_in(
        [
            "monitor/cli.py",
            "tests/harness/__init__.py",
            "monitor/stack/faults.py",
            "monitor/api/launch.py",
            "monitor/stack/deploy/kafka/pom.xml",
        ]
    ) == ["tests/harness/__init__.py", "monitor/stack/faults.py", "monitor/api/launch.py"]


def test_core_imports_no_other_package():
    graph = import_graph()
    assert BASE in {n for targets in graph.values() for n in targets}, "nothing imports monitor.core: wrong root?"
    assert graph.get(BASE, {}) == {}, f"{BASE} must import nothing else of the project: {graph[BASE]}"


def test_pure_alert_types_do_not_pull_in_the_orm():
    """The state machine and its types are pure: importing them must not import SQLAlchemy (alerts.models)."""
    for module in ("alerts/types.py", "alerts/state.py", "alerts/mute.py"):
        names = {n for n, _ in _imported(ast.parse((ROOT / module).read_text()), module, False)}
        assert not any(n == "sqlalchemy" or n.startswith(("sqlalchemy.", "alerts.models")) for n in names), module


# The checker itself, on small graphs: it must find what it exists to find.


@pytest.mark.parametrize(
    "n, graph, expected",
    [
        (1, {"a": {"b": []}, "b": {"c": []}}, []),
        (2, {"a": {"b": []}, "b": {"a": []}}, [["a", "b", "a"]]),
        (3, {"a": {"b": []}, "b": {"c": []}, "c": {"a": []}, "d": {"a": []}}, [["a", "b", "c", "a"]]),
        (4, {"a": {"b": []}, "b": {"a": []}, "c": {"d": []}, "d": {"c": []}}, [["a", "b", "a"], ["c", "d", "c"]]),
    ],
)
def test_find_cycles_table(n, graph, expected):
    assert sorted(find_cycles(graph)) == expected, n


def test_imports_are_all_counted():
    src = (
        "import alerts.engine\n"
        "from monitor.core import config\n"
        "from monitor import schema\n"
        "def f():\n    from monitor.api import app\n"
        "if TYPE_CHECKING:\n    from monitor.tenants.views import x\n"
        "importlib.import_module('monitor.reports.cli')\n"
        "from . import sibling\n"
    )
    found = {node_of(n) for n, _ in _imported(ast.parse(src), "monitor.advisor.views", False)} - {None}
    assert found == {
        "alerts",
        "monitor.core",
        "monitor.schema",
        "monitor.api",
        "monitor.tenants",
        "monitor.reports",
        "monitor.advisor",
    }
