"""The package layering holds: imports run downward only.

The command line (the package ``maxsim/cli/``) is the top layer and the one part of ``maxsim/`` that may
import ``workloads`` (it hands the SGEMM's pieces to ``maxsim validate`` and ``maxsim plot``); no
other module of the simulator does, and the workload modules import each other without a circle.
Imports inside functions count as much as those at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = "maxsim.cli"


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path):
    """Every module ``path`` imports (relative imports resolved), at any depth of the file."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # `from pkg import module`
    return out


def _graph(package):
    return {_module_name(p): _imports(p) for p in sorted((ROOT / package).rglob("*.py"))}


def test_no_module_of_the_simulator_imports_a_workload():
    offenders = {mod: sorted(i for i in imps if i == "workloads" or i.startswith("workloads."))
                 for mod, imps in _graph("maxsim").items() if mod != TOP and not mod.startswith(TOP + ".")}
    assert {m: i for m, i in offenders.items() if i} == {}


def test_the_checker_sees_imports_inside_functions():
    """The command line's function-level imports of the SGEMM workload are found (so a stray one
    elsewhere would be too)."""
    imps = set().union(*(i for m, i in _graph("maxsim").items() if m == TOP or m.startswith(TOP + ".")))
    assert "workloads.sgemm.harness" in imps and "workloads.sgemm.validate" in imps


def _cycle(graph):
    """A circle of imports among the modules of ``graph`` (a list of names), or None."""
    edges = {m: {i for i in imps if i in graph and i != m} for m, imps in graph.items()}
    # `from package import name` also names the package itself: keep the module edges only
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == "open":
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = "done"
        return None

    for m in sorted(edges):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_circle_among_the_workloads():
    graph = {m: imps for m, imps in _graph("workloads").items() if m not in ("workloads", "workloads.sgemm")}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_circle_finder_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_harness_and_prediction_do_not_import_each_other():
    graph = _graph("workloads")
    assert "workloads.sgemm.harness" not in graph["workloads.sgemm.predict"]
    assert "workloads.sgemm.predict" not in graph["workloads.sgemm.harness"]


def _reaches(graph, start, target):
    """Whether ``start`` imports ``target``, directly or through other modules of ``graph``."""
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        for i in graph.get(m, ()):
            if i == target:
                return True
            if i in graph and i not in seen:
                seen.add(i)
                todo.append(i)
    return False


def test_the_compiled_memory_system_does_not_import_the_reference():
    """maxsim.timing.memory_system (the model in plain Python; ``MemorySystem(cfg)`` builds the
    compiled twin) imports maxsim.timing.memory_core; memory_core imports what they share from
    modules of their own (bandwidth servers, counters, address translation), not memory_system."""
    graph = _graph("maxsim")
    assert "maxsim.timing.memory_core" in graph["maxsim.timing.memory_system"]
    assert not _reaches(graph, "maxsim.timing.memory_core", "maxsim.timing.memory_system")


def test_the_reach_finder_follows_modules():
    assert _reaches({"a": {"b"}, "b": {"c"}}, "a", "c")
    assert not _reaches({"a": {"b"}, "b": set(), "c": {"a"}}, "a", "c")
