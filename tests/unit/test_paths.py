"""Lexical path safety: every refusal has its code and changes nothing (nothing is read)."""

from __future__ import annotations

import pytest

from gitpatch.errors import GitpatchError
from gitpatch.paths import normalize


@pytest.mark.parametrize(
    ("raw", "root", "expected"),
    [
        ("a.txt", None, "a.txt"),
        ("./src//x.py", None, "src/x.py"),
        ("src/../lib/y.py", None, "lib/y.py"),
        ("/workspace/a/b.txt", "/workspace", "a/b.txt"),
        ("/repo/dir/f", "/repo/", "dir/f"),
        ("  spaced.txt ", None, "spaced.txt"),
        (".github/workflows/ci.yml", None, ".github/workflows/ci.yml"),
    ],
)
def test_normalize(raw: str, root: str | None, expected: str) -> None:
    assert normalize(raw, root) == expected


@pytest.mark.parametrize(
    ("raw", "root", "code"),
    [
        ("", None, "invalid_arguments"),
        ("   ", None, "invalid_arguments"),
        (".", None, "invalid_arguments"),
        ("a\x00b", None, "path_unsafe"),
        ("../etc/passwd", None, "path_unsafe"),
        ("a/../../b", None, "path_unsafe"),
        (".git/config", None, "path_unsafe"),
        ("sub/.GIT/hooks/pre-commit", None, "path_unsafe"),
        ("/etc/passwd", None, "path_unsafe"),
        ("/etc/passwd", "/workspace", "path_unsafe"),
        ("/workspacex/a", "/workspace", "path_unsafe"),
    ],
)
def test_refusals(raw: str, root: str | None, code: str) -> None:
    with pytest.raises(GitpatchError) as err:
        normalize(raw, root)
    assert err.value.code == code
    assert err.value.hint
