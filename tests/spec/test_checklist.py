"""The spec checklist is complete and names only tests that exist.

``checklist.md`` has one entry per paragraph of each spec (numbered 1..N, N recorded in the
section title); each entry is a heading or lists at least one test. Every ``file::test`` must
be a test function in that file, and every ``[format/NNN_name]`` a scenario folder. When the
shared spec folder is on this machine, N must also be its real paragraph count.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKLIST = Path(__file__).with_name("checklist.md")
# The shared material sits beside the project root (for CI too: ../shared beside the clone).
SPEC_DIR = Path(os.environ.get("GITPATCH_SPEC_DIR", ROOT.parent / "shared" / "spec"))
SECTION = re.compile(r"^## (\S+\.md) \((\d+) paragraphs\)$")
ENTRY = re.compile(r"^- ¶(\d+) (.+)$")
ITEM = re.compile(r"^  - (.+)$")


def _parse() -> dict[str, tuple[int, dict[int, list[str]]]]:
    out: dict[str, tuple[int, dict[int, list[str]]]] = {}
    spec = None
    entry = None
    for line in CHECKLIST.read_text("utf-8").splitlines():
        if m := SECTION.match(line):
            spec = m.group(1)
            out[spec] = (int(m.group(2)), {})
        elif (m := ENTRY.match(line)) and spec is not None:
            entry = int(m.group(1))
            out[spec][1][entry] = ["heading"] if m.group(2).endswith("— heading") else []
        elif (m := ITEM.match(line)) and spec is not None and entry is not None:
            out[spec][1][entry].append(m.group(1))
    return out


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    return {
        n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
    }


def test_every_paragraph_has_an_entry() -> None:
    found = _parse()
    assert set(found) == {"patch-tool.md", "apply-patch.md", "patch-resource.md"}
    for spec, (count, entries) in found.items():
        assert sorted(entries) == list(range(1, count + 1)), spec
        for number, items in entries.items():
            assert items, f"{spec} ¶{number} lists no test"
            tests = [i for i in items if not i.startswith(("heading", "deferred:"))]
            assert tests or items == ["heading"], f"{spec} ¶{number} has no test, only {items}"


def test_paragraph_counts_match_the_specs_when_present() -> None:
    if not SPEC_DIR.is_dir():
        return  # the shared folder is not on this machine; the numbering was checked when made
    for spec, (count, _entries) in _parse().items():
        text = (SPEC_DIR / spec).read_text("utf-8")
        paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
        assert len(paragraphs) == count, spec


def test_every_named_test_exists() -> None:
    named = 0
    for _spec, (_count, entries) in _parse().items():
        for items in entries.values():
            for item in items:
                if item.startswith(("heading", "deferred:")):
                    continue
                named += 1
                file, _, rest = item.partition("::")
                name, _, case = rest.partition("[")
                assert name in _tests_in(ROOT / file), item
                if case:
                    folder = ROOT / "tests" / "scenarios" / case.rstrip("]")
                    assert folder.is_dir(), item
                    # The tool runner takes single-file SEARCH/REPLACE cases only.
                    if folder.parent.name == "search_replace":
                        assert (folder / "args.json").exists(), item
    assert named >= 100
