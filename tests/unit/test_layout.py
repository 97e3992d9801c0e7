"""The package layout's rules, checked on the source: no import cycle, private modules stay
private, the library never imports a front end's dependencies, modules stay small, and only
``gitpatch.store`` holds the pygit2 repository."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gitpatch"
#: Front ends may use click and mcp; the library under them never does.
FRONT_ENDS = ("gitpatch.cli", "gitpatch.mcp_server", "gitpatch.__main__", "gitpatch.demo")
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(name: str, path: Path) -> set[str]:
    """Every module ``name`` imports at run time (anywhere, functions included), absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if _type_checking_only(node):
            continue
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name if is_package(name) else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}".strip(".")
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in MODULES else base)
    return found


GRAPH = {name: imports_of(name, path) for name, path in MODULES.items()}


def test_every_module_imports() -> None:
    for name in MODULES:
        importlib.import_module(name)


def test_no_import_cycle() -> None:
    internal = {n: {m for m in deps if m in MODULES and m != n} for n, deps in GRAPH.items()}
    done: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            cycles.append([*path[path.index(node) :], node])
            return
        if node in done:
            return
        for dep in sorted(internal[node]):
            visit(dep, [*path, node])
        done.add(node)

    for node in sorted(internal):
        visit(node, [])
    assert cycles == []


def test_the_checker_sees_a_cycle_and_a_private_import() -> None:
    # The two checks above would pass vacuously if the import walk found nothing.
    assert "gitpatch.review" in GRAPH["gitpatch.workspace"]
    assert "gitpatch.store._errors" in GRAPH["gitpatch.store"]
    assert "gitpatch.match.cascade" in GRAPH["gitpatch.match"]


def _private(module: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in module.split("."))


def test_private_modules_are_imported_only_inside_their_package() -> None:
    offenders = []
    for name, deps in GRAPH.items():
        for dep in deps:
            if dep in MODULES and _private(dep):
                package = dep.rpartition(".")[0]
                if not name.startswith(package + ".") and name != package:
                    offenders.append((name, dep))
    for path in sorted(
        [*ROOT.joinpath("tests").rglob("*.py"), *ROOT.joinpath("bench").rglob("*.py")]
    ):
        text = path.read_text(encoding="utf-8")
        for dep in MODULES:
            if _private(dep) and (f"from {dep} import" in text or f"import {dep}" in text):
                offenders.append((str(path.relative_to(ROOT)), dep))
    assert offenders == []


@pytest.mark.parametrize("front_end_only", ["click", "mcp"])
def test_library_never_imports_a_front_end_dependency(front_end_only: str) -> None:
    library = [n for n in GRAPH if not n.startswith(FRONT_ENDS)]
    users = [n for n in library if any(d.split(".")[0] == front_end_only for d in GRAPH[n])]
    assert users == []


def test_modules_stay_small() -> None:
    sizes = {n: len(p.read_text(encoding="utf-8").splitlines()) for n, p in MODULES.items()}
    assert {n: lines for n, lines in sizes.items() if lines > MAX_LINES} == {}


def test_only_the_store_touches_the_pygit2_repository() -> None:
    # The working tree owns the index and is handed the repository once (WorkingTree.of).
    allowed = ("gitpatch.store", "gitpatch.repo.worktree")
    users = []
    for name, path in MODULES.items():
        if name.startswith(allowed):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "repo":
                users.append(f"{name}:{node.lineno}")
    assert users == []


def test_the_readme_layout_names_every_module_and_package() -> None:
    # The README's Layout section is how a newcomer finds their way: it must match the tree.
    readme = ROOT.joinpath("README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    listed: set[str] = set()
    for line in block.splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            listed.add(line.split()[0])
    actual = {
        p.name + ("/" if p.is_dir() else "")
        for p in PACKAGE.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"
    }
    assert listed == actual, "update the README's Layout section"
