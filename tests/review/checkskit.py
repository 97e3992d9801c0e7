"""A repository whose checks are tiny shell commands: ``check.py`` sums ``a.txt`` and
``b.txt`` and fails at 10 or more, and a second check logs the tree it ran on."""

from __future__ import annotations

from pathlib import Path

from tests.gitkit import make_repo

CHECK = (
    "import sys\n"
    "a = int(open('a.txt').read())\n"
    "b = int(open('b.txt').read())\n"
    "print('sum is', a + b)\n"
    "sys.exit(1 if a + b >= 10 else 0)\n"
)
FILES = {"a.txt": "1\n", "b.txt": "1\n", "c.txt": "one\ntwo\nthree\nfour\nfive\n"}


def checks_toml(log: Path, extra: str = "") -> str:
    """``[checks]``: the sum (python one-liner) and a line naming the tree, in ``log``."""
    return (
        "[checks]\n"
        f'run = ["python3 check.py", {{ run = "echo $GITPATCH_CHECK_TREE >> {log}", '
        'name = "log", timeout = 30 }]\n' + extra
    )


def checked_repo(root: Path, branch: str = "main") -> tuple[Path, Path]:
    """(the repository, the log of trees checked) on ``branch``, all committed."""
    log = root.parent / f"{root.name}-checked.log"
    files = {**FILES, "check.py": CHECK, ".gitpatch.toml": checks_toml(log)}
    return make_repo(root, files, branch), log


def checked(log: Path) -> list[str]:
    """The trees the checks ran on, in order."""
    return log.read_text().split() if log.exists() else []
