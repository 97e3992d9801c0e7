"""What real-repository support costs per auto-mode proposal, by kind of checkout.

A plain checkout must pay nothing for it (no git process is started); checkouts with line-ending
or filter attributes, or a sparse checkout, pay for the `git` processes that make the result
exact. Prints the median time of a one-line edit in a 500-file repository of each kind.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import GIT_ENV, GIT_QUIET, median_ms_of_calls  # noqa: E402
from gitpatch import Workspace  # noqa: E402
from gitpatch.core.model import Proposal, Replace, UpdateFile  # noqa: E402

FILES = 500
RUNS = 30


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", *GIT_QUIET, *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True
    )


def _repo(root: Path, kind: str) -> Path:
    root.mkdir()
    _git(root, "init", "-q", "-b", "work")
    for i in range(FILES):
        folder = root / f"d{i // 50:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:03d}.txt").write_text("".join(f"line {n}\n" for n in range(40)))
    if kind == "eol=crlf":
        (root / ".gitattributes").write_text("* text=auto eol=crlf\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "init")
    if kind == "autocrlf":
        _git(root, "config", "core.autocrlf", "true")
    if kind == "sparse":
        _git(root, "sparse-checkout", "set", "d00")
    if kind in ("autocrlf", "eol=crlf"):
        _git(root, "rm", "-q", "-r", "--cached", ".")
        _git(root, "reset", "-q", "--hard")
    return root


def _edit(path: str, k: int) -> Proposal:
    return Proposal(
        (UpdateFile(path, (Replace(f"line {k}\n", f"LINE {k}\n"),)),), "patch_resource", tool="b"
    )


def main() -> None:
    """Print the median per kind of checkout."""
    print(f"auto-mode one-line edit, {FILES}-file repository, median of {RUNS}:")
    for kind in ("plain", "autocrlf", "eol=crlf", "sparse"):
        with tempfile.TemporaryDirectory() as tmp:
            repo = _repo(Path(tmp) / "r", kind)
            ws = Workspace.open(repo)
            target = "d00/f000.txt"
            ms = median_ms_of_calls(
                lambda k, ws=ws, target=target: ws.propose(_edit(target, k)), RUNS
            )
            print(f"  {kind:10s} {ms:7.2f} ms")


if __name__ == "__main__":
    main()
