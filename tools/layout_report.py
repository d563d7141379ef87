"""Counts that say how well the code keeps to its floors (docs/architecture.md).

Why a script: the layout issue asks for before/after figures (upward imports, cycles,
function-level imports, long modules, loose modules); measuring them by hand each time
would drift.  Reads the source with ``ast`` only, so it runs on any checkout.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

if __package__:
    from tools import code_figures
    from tools.private_names import absolute_import, module_files, module_name, scan
else:  # run as a file (python tools/layout_report.py), or imported with tools/ on sys.path
    import code_figures
    from private_names import absolute_import, module_files, module_name, scan

#: The floor of each top-level unit under ``vts`` (docs/architecture.md); unknown units are "loose".
FLOORS = {
    "cli": 7, "pytest_plugin": 7,
    "fuzz": 6, "soak": 6,
    "run": 5,
    "families": 4,
    "report": 3, "spec": 3,
    "model": 2, "ipc": 2,
    "results": 1, "bounds": 1,
    "hal": 0,
}


def imports_of(root: Path, path: Path) -> list[tuple[list[str], bool]]:
    """(the names one import statement may mean, inside a function) for each vts import of one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = module_name(root, path)
    found: list[tuple[list[str], bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend(([alias.name], in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                target = absolute_import(name, path.name == "__init__.py", child)
                found.append(([target] + [f"{target}.{alias.name}" for alias in child.names], in_function))
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                continue
            visit(child, nested)

    visit(tree, False)
    return [(targets, inner) for targets, inner in found if targets[0].split(".")[0] == "vts"]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _known(target: str, modules: set[str]) -> str:
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target


def _direction(source_unit: str, target_unit: str) -> str:
    """'upward', 'same floor' or '' (allowed or unclassified) for one import between units."""
    a, b = FLOORS.get(source_unit), FLOORS.get(target_unit)
    if source_unit == target_unit or a is None or b is None:
        return ""
    return "upward" if b > a else "same floor" if a == b else ""


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def connect(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for node in list(graph):
        if node not in index:
            connect(node)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=".", type=Path)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    files = sorted((root / "vts").rglob("*.py"))
    modules = {module_name(root, f) for f in files}
    edges: dict[str, set[str]] = defaultdict(set)
    function_level = 0
    long_modules, details = [], []
    for path in files:
        name = module_name(root, path)
        if sum(1 for _ in path.open(encoding="utf-8")) > 600:
            long_modules.append(name)
        for candidates, inner in imports_of(root, path):
            resolved = {_known(target, modules) for target in candidates} - {"", name}
            function_level += inner and bool(resolved)
            for target in sorted(resolved - edges[name]):
                edges[name].add(target)
                kind = _direction(unit_of(name), unit_of(target))
                if kind:
                    details.append(f"{kind}: {name} -> {target}")
    upward = sum(line.startswith("upward") for line in details)
    same_floor = sum(line.startswith("same floor") for line in details)
    package_graph: dict[str, set[str]] = defaultdict(set)
    for source, targets in edges.items():
        for target in targets:
            if unit_of(source) != unit_of(target):
                package_graph[unit_of(source)].add(unit_of(target))
    loose = sorted(m for m in modules if m.count(".") == 1 and unit_of(m) not in FLOORS)
    module_cycles = strongly_connected(edges)
    package_cycles = strongly_connected(package_graph)
    print(f"modules: {len(modules)}")
    print(f"upward imports: {upward}")
    print(f"imports between packages of one floor: {same_floor}")
    print(f"function-level imports: {function_level}")
    print(f"module import cycles (strongly connected groups): {len(module_cycles)}")
    print(f"package-level cycles: {len(package_cycles)}")
    print(f"modules over 600 lines: {len(long_modules)} {long_modules}")
    print(f"loose modules at vts/ top level: {len(loose)} {loose}")
    if args.verbose:
        for line in details:
            print("  " + line)
        for group in module_cycles + package_cycles:
            print("  cycle: " + " <-> ".join(group))
    _print_code_figures(root, edges, args.verbose)
    return 0


def _print_code_figures(root: Path, edges: dict[str, set[str]], verbose: bool) -> None:
    """The figures of issue 39 after the floor figures, each followed by its items under ``--verbose``."""
    files = module_files(root, ["vts"])
    with_all, without_all = code_figures.packages_with_all(files)
    long_functions = code_figures.long_functions(files)
    runners = code_figures.runner_constructions(files)
    runner_modules = sorted({item.split(":")[0] for item in runners})
    # (label, the count as printed, what follows it on the line, the items --verbose lists)
    figures: list[tuple[str, int, str, list[str]]] = []

    def add(label: str, items: list[str], count: int | None = None, tail: str = "") -> None:
        figures.append((label, len(items) if count is None else count, tail, items))

    add("imports between families", code_figures.imports_between_families(edges))
    add("private names imported across packages", [str(item) for item in scan(root)])
    add(f"functions over {code_figures.LONG_FUNCTION} lines", long_functions,
        tail=f" {[item.split(' (')[0] for item in long_functions]}")
    add("Runner constructions", runners, tail=f" {runner_modules}")
    add("public top-level names", code_figures.public_top_level_names(files))
    add("packages with __all__ in __init__", [f"without __all__: {name}" for name in without_all],
        count=len(with_all), tail=f" of {len(with_all) + len(without_all)}")
    add("design citations that do not resolve",
        code_figures.unresolved_citations(root, ["vts", "nnvts", "tests", "tools", "bench", "docs"]))
    for label, count, tail, items in figures:
        print(f"{label}: {count}{tail}")
        if verbose:
            for item in items:
                print("  " + item)

if __name__ == "__main__":
    raise SystemExit(main())
