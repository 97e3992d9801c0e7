"""The package layout's rules, checked on the source: no import cycle, private modules stay
private, the library never imports a front end's dependencies, modules stay small, and only
``gitpatch.store`` holds the pygit2 repository."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gitpatch"
#: Front ends may use click and mcp; the library under them never does.
FRONT_ENDS = ("gitpatch.doors", "gitpatch.__main__")
#: Cohesion decides a module's size; past this a module is doing more than one job.
MAX_LINES = 800


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


def imports_of(name: str, path: Path, *, typing_only: bool = True) -> set[str]:
    """Every module ``name`` imports (anywhere, functions included), absolute; with
    ``typing_only=False``, only what it imports at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if not typing_only and _type_checking_only(node):
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
RUNTIME = {name: imports_of(name, path, typing_only=False) for name, path in MODULES.items()}
#: The stages in the order data flows; a module may import its own stage and earlier ones.
LAYERS = [
    "gitpatch.errors",
    "gitpatch.core",
    "gitpatch.formats",
    "gitpatch.match",
    "gitpatch.engine",
    "gitpatch.safety",
    "gitpatch.store",
    "gitpatch.checkout",
    "gitpatch.workspace",
    "gitpatch.review",
    "gitpatch.porcelain",
    "gitpatch.tools",
    "gitpatch.doors",
    "gitpatch.__main__",
    "gitpatch.gate",
]


def layer_of(module: str) -> int | None:
    for index, prefix in enumerate(LAYERS):
        if module == prefix or module.startswith(prefix + "."):
            return index
    return None


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


def test_no_import_runs_upward() -> None:
    upward = []
    for name, deps in GRAPH.items():
        mine = layer_of(name)
        for dep in deps:
            theirs = layer_of(dep)
            if mine is not None and theirs is not None and theirs > mine:
                upward.append((name, dep))
    assert upward == []


def test_the_layers_cover_every_module() -> None:
    # The package root is the lazy public facade: it names everything, imports nothing eagerly.
    assert [n for n in MODULES if layer_of(n) is None] == ["gitpatch"]


def test_the_checker_sees_type_only_imports() -> None:
    # A cycle through TYPE_CHECKING imports is still a cycle of meaning; the walk must see them.
    assert "gitpatch.core.model" in GRAPH["gitpatch"]
    assert "gitpatch.core.model" not in RUNTIME["gitpatch"]


def test_the_checker_sees_a_cycle_and_a_private_import() -> None:
    # The two checks above would pass vacuously if the import walk found nothing.
    assert "gitpatch.review" in GRAPH["gitpatch.porcelain.workspace"]
    assert "gitpatch.review._lifecycle" in GRAPH["gitpatch.review"]
    assert "gitpatch.store._repo" in GRAPH["gitpatch.store"]
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
        where = str(path.relative_to(ROOT))
        for dep in _private_imports(path.read_text(encoding="utf-8")):
            if not where.startswith(_OWN_TESTS.get(dep.rpartition(".")[0], "\0")):
                offenders.append((where, dep))
    assert offenders == []


#: A package whose private modules its own test folder may import (their unit tests); every
#: other test, and all of bench/, goes through the package's face.
_OWN_TESTS = {"gitpatch.store": "tests/store/", "gitpatch.review": "tests/review/"}


def _private_imports(text: str) -> set[str]:
    """The private gitpatch modules ``text`` imports, in any spelling (``from a._b import c``,
    ``import a._b``, ``from a import _b``)."""
    found: set[str] = set()
    try:
        tree = ast.parse(text)
    except SyntaxError:  # the scenarios' data files (a BOM), not code
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            named = [f"{node.module}.{alias.name}" for alias in node.names]
            found.update(m for m in [node.module, *named] if m in MODULES and _private(m))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in MODULES and _private(a.name))
    return found


def test_the_store_is_entered_only_through_its_face() -> None:
    # Every module under gitpatch/store/ is private: the rest of gitpatch, the tests of other
    # packages and bench/ import ``gitpatch.store`` and nothing below it.
    store = [n for n in MODULES if n.startswith("gitpatch.store.")]
    assert store and all(_private(n) for n in store)
    reach = [
        (name, dep)
        for name, deps in GRAPH.items()
        if not name.startswith("gitpatch.store")
        for dep in deps
        if dep.startswith("gitpatch.store.")
    ]
    assert reach == []
    assert _private_imports("from gitpatch.store import _refs") == {"gitpatch.store._refs"}
    assert _private_imports("import gitpatch.store._notes as n") == {"gitpatch.store._notes"}


#: What a door may import from the layers under it: the porcelain, the public review queries,
#: the result types, the settings, session names and the approval rule, and the stages that
#: hold no state (errors, core, formats, match, engine), the tools and the package's own facade.
DOOR_TAKES = (
    "gitpatch.porcelain",
    "gitpatch.review.queries",
    "gitpatch.workspace.results",
    "gitpatch.workspace.config",
    "gitpatch.workspace.sessions",
    "gitpatch.workspace.gate",
    "gitpatch.errors",
    "gitpatch.core",
    "gitpatch.formats",
    "gitpatch.match",
    "gitpatch.engine",
    "gitpatch.tools",
)
#: The doors that take the plumbing too: the hosted service (its write queue, generations and
#: maintenance) and the git hooks (the approval rule on raw refs).
PLUMBING_DOORS = ("gitpatch.doors.hosted", "gitpatch.doors.hooks")
PLUMBING = ("gitpatch.workspace", "gitpatch.store", "gitpatch.checkout", "gitpatch.safety")


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_doors_take_only_the_porcelain_the_review_queries_and_the_results() -> None:
    offenders = []
    for name, deps in GRAPH.items():
        if not name.startswith("gitpatch.doors"):
            continue
        for dep in deps & MODULES.keys():
            if dep in ("gitpatch", name) or _under(dep, ("gitpatch.doors", *DOOR_TAKES)):
                continue
            if _under(name, PLUMBING_DOORS) and _under(dep, PLUMBING):
                continue
            offenders.append((name, dep))
    assert sorted(offenders) == []


def test_the_doors_rule_sees_a_reach_around() -> None:
    # the rule would pass vacuously if doors imported nothing it checks
    assert "gitpatch.review.queries" in GRAPH["gitpatch.doors.web.views"]
    assert "gitpatch.workspace" in GRAPH["gitpatch.doors.hosted.direct"]
    assert not _under("gitpatch.workspace", DOOR_TAKES)
    assert not _under("gitpatch.review", DOOR_TAKES)


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
    allowed = ("gitpatch.store", "gitpatch.checkout.worktree")
    users = []
    for name, path in MODULES.items():
        if name.startswith(allowed):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("repo", "_repo"):
                users.append(f"{name}:{node.lineno}")
    assert users == []


def _libgit2_errors_named(tree: ast.AST) -> list[int]:
    """Lines naming one of pygit2's exception classes (``except``, ``suppress``, ``isinstance``,
    an import): only the store's one translation may know them."""
    lines = []
    for node in ast.walk(tree):
        named = (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "pygit2"
            and node.attr.endswith("Error")
        )
        imported = isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pygit2")
        if named or (imported and any(a.name.endswith("Error") for a in node.names)):
            lines.append(node.lineno)
    return lines


def _opens_a_repository(tree: ast.AST) -> list[int]:
    opens = ("Repository", "init_repository", "discover_repository", "clone_repository")
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "pygit2"
        and node.func.attr in opens
    ]


def test_libgit2_errors_are_caught_only_in_the_store() -> None:
    # Everywhere else they pass through the store's one translation (``git_errors``), and no
    # one else opens a repository (whose errors would then be theirs to translate).
    catchers = []
    for name, path in MODULES.items():
        if name.startswith("gitpatch.store"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        catchers += [f"{name}:{line}" for line in _libgit2_errors_named(tree)]
        catchers += [f"{name}:{line} opens" for line in _opens_a_repository(tree)]
    assert catchers == []
    # the checks see the spellings that slipped past an ``except``-only check before
    seen = ast.parse("with contextlib.suppress(KeyError, pygit2.GitError):\n    pass")
    assert _libgit2_errors_named(seen) == [1]
    assert _libgit2_errors_named(ast.parse("from pygit2 import GitError")) == [1]
    assert _opens_a_repository(ast.parse("r = pygit2.Repository(path)")) == [1]


def test_the_review_page_reads_through_the_review_api() -> None:
    # The page is a front end of the review loop: it asks the Workspace and
    # gitpatch.review.lifecycle, never the store under them.
    users = []
    for name, path in MODULES.items():
        if not name.startswith("gitpatch.doors.web"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "store":
                users.append(f"{name}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "gitpatch.store"
            ):
                users.append(f"{name}:{node.lineno}")
    assert users == []


def _layout_entries() -> dict[str, str]:
    """docs/architecture.md's Layout block: each entry (``core/``, ``errors.py``) and its text."""
    doc = ROOT.joinpath("docs", "architecture.md").read_text(encoding="utf-8")
    block = doc.split("\n## Layout\n", 1)[1].split("```", 2)[1]
    entries: dict[str, str] = {}
    current = ""
    for line in block.splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            current, _, text = line.strip().partition(" ")
            entries[current] = text
        elif current and line.startswith("   "):
            entries[current] += " " + line.strip()
    return entries


def test_the_architecture_layout_names_every_package_and_module() -> None:
    # The layout section is how a newcomer finds their way: it must match the tree.
    entries = _layout_entries()
    packages = {
        p.parent.relative_to(PACKAGE).as_posix() + "/"
        for p in PACKAGE.rglob("__init__.py")
        if p.parent != PACKAGE
    }
    top_modules = {p.name for p in PACKAGE.glob("*.py")}
    assert set(entries) == packages | top_modules, "update docs/architecture.md's Layout"
    unnamed = []
    for package in packages:
        words = set(re.findall(r"[A-Za-z_]+", entries[package]))
        for module in PACKAGE.joinpath(package).glob("*.py"):
            if module.stem != "__init__" and module.stem not in words:
                unnamed.append(f"{package}{module.name}")
    assert unnamed == [], "name each module in its package's entry"
