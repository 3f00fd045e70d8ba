"""The layering the README and docs/architecture.md promise, read from the source: the core
(`podracer`) imports no runtime, algorithm, network or wiring; the two runtimes (`sebulba`,
`anakin`) are peers on it and import neither each other nor any algorithm code (`agents`,
`networks`) nor the wiring (`experiments`); `agents` and `networks` import only the core (and
agents the networks), never a runtime; and no module imports itself back through a chain of
imports (function-level imports included: a local import is how a cycle hides). The tools
(`scripts`, the user's; `benchmarks`, the measurements) stand on the library, which never
imports them, and neither imports the other but for one leaf: the benchmarks' tables take their
seed statistics from `scripts.analysis.scores` (pure functions of arrays, importing no repo
module), so every table in the repo computes its IQM and interval one way. In the wiring, the
runtimes' drivers are peers too: neither imports the other, and the neutral wiring imports them
only where it picks one (sections.DRIVERS)."""
from __future__ import annotations

import pathlib

import pytest

from tests.architecture.imports import imported_names, module_name

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("podracer", "sebulba", "anakin", "agents", "networks", "experiments", "scripts",
            "benchmarks")
TOOLS = {"scripts", "benchmarks"}
FORBIDDEN = {  # importer package -> packages it may not import
    "podracer": {"sebulba", "anakin", "agents", "networks", "experiments"} | TOOLS,
    "sebulba": {"anakin", "agents", "networks", "experiments"} | TOOLS,
    "anakin": {"sebulba", "agents", "networks", "experiments"} | TOOLS,
    "networks": {"sebulba", "anakin", "agents", "experiments"} | TOOLS,
    "agents": {"sebulba", "anakin", "experiments"} | TOOLS,
    "experiments": TOOLS,
    "scripts": {"benchmarks"},
    "benchmarks": {"scripts"},
}
# Leaves a forbidden package lends: importer package -> modules it may import all the same.
SHARED = {"benchmarks": {"scripts.analysis.scores"}}


def _modules() -> dict[str, pathlib.Path]:
    return {module_name(p, ROOT): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
            if "configs" not in p.parts}


def _imports(name: str, path: pathlib.Path, known: set[str]) -> set[str]:
    """The repo modules `name` imports anywhere in its file (resolved to known modules)."""
    out: set[str] = set()
    for t in imported_names(path.read_text(), name, path.name == "__init__.py"):
        while t and t not in known:  # `from pkg import name`: name may be a symbol
            t = t.rpartition(".")[0]
        if t and t != name:
            out.add(t)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def test_the_graph_is_read():
    graph = _graph()
    assert "sebulba.runner" in graph and "experiments.wiring.run" in graph
    assert "sebulba.runner" in graph["experiments.wiring.drivers.sebulba"]
    assert "anakin.loop" in graph["experiments.wiring.drivers.anakin"]
    assert "podracer.agent" in graph["agents.impala"] and "podracer.agent" in graph["anakin.actor"]
    assert "scripts.analysis.rundir" in graph["scripts.plot"]
    assert "benchmarks.harness.measures" in graph["benchmarks.throughput"]


def test_every_package_has_its_rule():
    """A new top-level package must say what it may import: the table above is complete."""
    assert set(FORBIDDEN) == set(PACKAGES)


@pytest.mark.parametrize("importer", sorted(FORBIDDEN))
def test_no_layer_imports_a_layer_above_it(importer):
    bad = sorted(f"{m} -> {t}" for m, targets in _graph().items()
                 if m.split(".")[0] == importer for t in targets
                 if t.split(".")[0] in FORBIDDEN[importer]
                 and t not in SHARED.get(importer, ()))
    assert not bad, f"{importer} must not import {sorted(FORBIDDEN[importer])}: {bad}"


def test_a_shared_leaf_imports_no_repo_module():
    """What SHARED lends stays a leaf: lending it lends nothing else of its package."""
    graph = _graph()
    for module in set().union(*SHARED.values()):
        assert module in graph, f"{module} (SHARED) is not a module of the repo"
        assert not graph[module], f"{module} is lent by SHARED but imports {graph[module]}"


def test_no_import_cycles():
    """Cycles between modules; a package's __init__ importing its own submodules (which then
    import names back from the package) is how Python packages export, not a cycle."""
    graph = _graph()

    def edges(m):
        # A submodule importing its parent package's __init__ is the normal export pattern.
        return {t for t in graph[m] if not m.startswith(t + ".")}

    index, low, stack, on_stack, cycles = {}, {}, [], set(), []
    counter = [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges(v):
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
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


DRIVERS = "experiments.wiring.drivers"


def test_the_drivers_are_peers():
    """A driver (drivers/<runtime>.py and its helpers drivers/<runtime>_*.py) imports the
    protocol and the neutral wiring, never another runtime's driver; the drivers package's
    __init__ (which every driver's import runs) imports none; in the neutral wiring only
    sections.py (the map from config.runtime to a driver) imports a driver."""
    graph = _graph()
    drivers = {m for m in graph if m.startswith(DRIVERS + ".") and m != DRIVERS + ".protocol"}
    assert {DRIVERS + ".sebulba", DRIVERS + ".anakin"} <= drivers, drivers

    def runtime(module: str) -> str:
        return module.rpartition(".")[2].partition("_")[0]

    bad = sorted(f"{m} -> {t}" for m in drivers for t in graph[m]
                 if t in drivers and runtime(t) != runtime(m))
    assert not bad, f"a driver imports another: {bad}"
    assert not graph[DRIVERS] & drivers, graph[DRIVERS]
    wiring = {m for m in graph if m.startswith("experiments.wiring") and m not in drivers}
    picking = sorted(m for m in wiring for t in graph[m] if t in drivers)
    # The package's __init__ re-exports Sebulba's host_envs (scripts play runs on the host).
    assert set(picking) <= {"experiments.wiring.sections", "experiments.wiring"}, picking
