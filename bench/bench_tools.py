"""What the tool layer costs on top of the Workspace: `python -m bench.bench_tools`.

In a repository of 1,000 files (working tree and index, one commit) it measures, as medians:

- workspace: ``Workspace.propose`` of a one-line patch_resource change (auto mode);
- tool: the same change through ``patch_resource_tool`` on a ``MountedFilesystem`` (path
  resolution, policy, the edit, the result text and the resource id);
- read: ``read_tool`` of that file (numbered lines, version, id);
- memory: ``patch_tool`` on a ``MemoryStorage`` holding a 10,000-line file;
- id walk: the first resource-id lookup after 2,000 commits that did not touch the file
  (the walk back to its creation), and the next one (remembered).

Options: ``--runs N``, ``--dir PATH``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._common import git, make_repo, median_ms_of_calls, one_line, path_of
from gitpatch import (
    MemoryStorage,
    MountedFilesystem,
    Workspace,
    patch_resource_tool,
    patch_tool,
    read_tool,
)


def _edit(k: int) -> list[dict[str, str]]:
    return [{"old_string": f"rev {k}\n", "new_string": f"rev {k + 1}\n"}]


def bench_layers(root: Path, runs: int) -> dict[str, float]:
    repo, _ = make_repo(root, 1000)
    ws = Workspace.open(str(repo))
    fs = MountedFilesystem({"/workspace": ws})
    one, two = path_of(10), path_of(20)
    tool = patch_resource_tool(fs, fs)
    read = read_tool(fs)

    def via_workspace(k: int) -> None:
        ws.propose(one_line(one, f"rev {k}\n", f"rev {k + 1}\n"))

    def via_tool(k: int) -> None:
        res = tool(path=two, edits=_edit(k))
        assert res.ok, str(res)

    return {
        "workspace": median_ms_of_calls(via_workspace, runs),
        "tool": median_ms_of_calls(via_tool, runs),
        "read": median_ms_of_calls(lambda _k: read(path=two), runs),
    }


def bench_memory(runs: int) -> float:
    text = "".join(f"line {n}\n" for n in range(10_000))
    mem = MemoryStorage({"big.txt": text})
    tool = patch_tool(mem, mem)

    def edit(k: int) -> None:
        old, new = f"line {5000 + k}\n", f"LINE {5000 + k}\n"
        res = tool(path="big.txt", edits=f"<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n")
        assert res.ok, str(res)

    return median_ms_of_calls(edit, runs)


def bench_id_walk(root: Path, commits: int) -> tuple[float, float]:
    (root / "walk").mkdir()
    repo, _ = make_repo(root / "walk", 10)
    stream: list[str] = []
    for i in range(commits):
        stream += [
            "commit refs/heads/bench",
            f"committer Bench <bench@example.com> {1767225600 + i} +0000",
            "data 1",
            "x",
            *(["from refs/heads/bench^0"] if i == 0 else []),
            "M 100644 inline churn.txt",
            f"data {len(str(i)) + 1}",
            str(i),
            "",
        ]
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=repo,
        check=True,
        input="\n".join(stream).encode() + b"\n",
        capture_output=True,
    )
    git(repo, "reset", "-q", "--hard")
    fs = MountedFilesystem({"/w": Workspace.open(str(repo))})
    read = read_tool(fs)
    start = time.perf_counter()
    assert read(path=path_of(3)).ok
    first = (time.perf_counter() - start) * 1000
    return first, median_ms_of_calls(lambda _k: read(path=path_of(3)), 10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        layers = bench_layers(Path(tmp), args.runs)
        memory = bench_memory(args.runs)
        first, again = bench_id_walk(Path(tmp), 2000)
    print("1,000-file repository, one-line change, auto mode (medians)")
    print(f"  Workspace.propose            {layers['workspace']:7.2f} ms")
    print(f"  patch_resource_tool          {layers['tool']:7.2f} ms")
    print(f"  read_tool                    {layers['read']:7.2f} ms")
    print(f"patch_tool on a MemoryStorage, 10,000-line file: {memory:.2f} ms")
    print(f"resource id after 2,000 commits: first {first:.1f} ms, then {again:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
