"""The README is a front door: every page it and the docs link to exists, and every page in
docs/ is reachable from the README (directly or through another page)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _links(page: Path) -> set[Path]:
    found = set()
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target:
            continue
        found.add((page.parent / target).resolve())
    return found


def test_every_relative_link_resolves() -> None:
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = [
        f"{page.relative_to(ROOT)} -> {target}"
        for page in pages
        for target in _links(page)
        if not target.exists()
    ]
    assert broken == []


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    seen: set[Path] = set()
    todo = [(ROOT / "README.md").resolve()]
    while todo:
        page = todo.pop()
        if page in seen or page.suffix != ".md" or not page.exists():
            continue
        seen.add(page)
        todo.extend(_links(page))
    unreached = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.resolve() not in seen)
    assert unreached == []


def test_the_readme_stays_a_front_door() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_screen = "\n".join(text.splitlines()[:30])
    assert "make demo" in first_screen and "make test" in first_screen
    assert len(text.splitlines()) < 250
