"""Where ``gitpatch hooks install`` may write: never, unasked, into a hooks folder the team
shares through git.

``core.hooksPath`` often names a folder of the working tree that is committed (husky's
``.husky``, a ``githooks/`` folder). The shims hold this machine's interpreter path, and a
foreign hook is kept as ``NAME.local``: written there they would rewrite tracked hooks and add
files ``git add -A`` commits for everybody. So the install refuses, naming the files, and offers
the two ways out: ``--into-tracked`` (write there anyway) or ``--local`` (install into the
repository's own ``hooks`` folder, which git runs only when the shared hooks call it: the
install prints the line each needs).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

from gitpatch.errors import RepositoryError

__all__ = ["call_line", "hooks_path", "local_hooks_dir", "refuse_visible"]


def _git(directory: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=directory, input=stdin, capture_output=True, text=True, check=False
    )


def hooks_path(directory: Path) -> str | None:
    """The value of ``core.hooksPath`` as configured (None when unset)."""
    out = _git(directory, "config", "--get", "core.hooksPath")
    return out.stdout.strip() or None if out.returncode == 0 else None


def local_hooks_dir(directory: Path) -> Path:
    """The repository's own hooks folder (``$GIT_COMMON_DIR/hooks``), whatever
    ``core.hooksPath`` says."""
    out = _git(directory, "rev-parse", "--path-format=absolute", "--git-common-dir")
    return Path(out.stdout.strip()) / "hooks"


def _visible(root: Path, paths: list[str]) -> tuple[list[str], list[str]]:
    """(tracked, new and not ignored) among ``paths`` (relative to ``root``): what git would
    show as changed or untracked once written."""
    listed = _git(root, "ls-files", "-z", "--full-name", "--", *paths).stdout
    tracked = [p for p in listed.split("\0") if p]
    rest = [p for p in paths if p not in tracked]
    ignored_out = _git(root, "check-ignore", "--no-index", "-z", "--stdin", stdin="\0".join(rest))
    ignored = set(filter(None, ignored_out.stdout.split("\0")))
    return tracked, [p for p in rest if p not in ignored and not (root / p).exists()]


def refuse_visible(root: Path | None, where: Path, writes: Iterable[str]) -> None:
    """``RepositoryError`` (reason ``hooks_path_tracked``) when writing the hook files
    ``writes`` (names in ``where``) would change or add files git shows in ``root``'s
    working tree; nothing is written either way."""
    if root is None:
        return
    try:
        rel = where.resolve().relative_to(root.resolve())
    except ValueError:
        return  # outside the working tree: git never sees it
    if rel.parts[:1] == (".git",):
        return
    paths = [(rel / name).as_posix() for name in writes]
    tracked, added = _visible(root, paths)
    if not tracked and not added:
        return
    folder = rel.as_posix()
    said = []
    if tracked:
        said.append(f"rewrite the tracked {', '.join(tracked)}")
    if added:
        said.append(f"add {', '.join(added)} (not ignored)")
    raise RepositoryError(
        f"core.hooksPath is {folder}/, a folder of the working tree git tracks (husky and "
        f"similar tools share hooks this way): installing there would {' and '.join(said)}, "
        "holding this machine's interpreter path, which `git commit -a` or `git add -A` would "
        "share with the team; nothing was changed",
        hint=(
            "Run `gitpatch hooks install --local` to install into this repository's own "
            ".git/hooks and call them from the shared hooks (it prints the line each needs), "
            "or `gitpatch hooks install --into-tracked` to write into "
            f"{folder}/ anyway and keep those files out of your commits."
        ),
        details={
            "reason": "hooks_path_tracked",
            "hooks_path": folder,
            "tracked": tracked,
            "untracked": added,
        },
    )


def call_line(hook: Path) -> str:
    """The shell line a shared hook runs ``hook`` (a shim in the repository's own hooks
    folder) with: its arguments and standard input, stopping on refusal; a no-op on clones
    without gitpatch's hooks."""
    name = hook.name
    return (
        f'h="$(git rev-parse --path-format=absolute --git-common-dir)/hooks/{name}"; '
        '[ ! -x "$h" ] || "$h" "$@" || exit $?'
    )
