"""``await tool.acall(...)`` and cancellation; serialised calls; no lost updates across tools.

Synchronisation is by events only: a storage wrapper blocks inside the write until the test
releases it, so a cancellation provably arrives while the write is under way.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gitpatch import MemoryStorage, Workspace, patch_resource_tool, patch_tool
from gitpatch.tools.storage.base import Applied, Target
from gitpatch.tools.storage.mounts import as_storage
from tests.gitkit import git, head, mounted, sr, state, status_porcelain


class SlowWriter(MemoryStorage):
    """A MemoryStorage whose writer blocks half-way until ``release`` is set."""

    def __init__(self, files: dict[str, str]) -> None:
        self.writing = threading.Event()
        self.release = threading.Event()
        self.release.set()
        super().__init__(files)
        self.writing.clear()

    @contextmanager
    def writer(self) -> Iterator[dict[str, bytes | None]]:
        with super().writer() as staged:
            yield staged
            self.writing.set()
            assert self.release.wait(30)


class GateSpy:
    """Any storage, with the before-write callback reported and held: after the tool's
    callback let the write start, ``passed`` is set and the write waits for ``release``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.root = inner.root
        self.passed = threading.Event()
        self.release = threading.Event()

    def resolve(self, path: str, cwd: str | None = None) -> Target:
        found: Target = self.inner.resolve(path, cwd)
        return Target(self, found.key, found.shown, found.address)

    def read(self, key: str) -> Any:
        return self.inner.read(key)

    def read_bytes(self, key: str) -> bytes:
        data: bytes = self.inner.read_bytes(key)
        return data

    def stat(self, key: str) -> Any:
        return self.inner.stat(key)

    def list(self, prefix: str = "") -> list[str]:
        return list(self.inner.list(prefix))

    def apply(
        self, proposal: Any, *, before_write: Callable[[], None] | None = None, **kw: Any
    ) -> Applied:
        def held() -> None:
            if before_write is not None:
                before_write()
            self.passed.set()
            assert self.release.wait(30)

        applied: Applied = self.inner.apply(proposal, before_write=held, **kw)
        return applied


async def _turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def test_acall_returns_the_same_result_as_a_call() -> None:
    mem = MemoryStorage({"a.txt": "a\n"})
    res = asyncio.run(patch_tool(mem, mem).acall(path="a.txt", edits=sr("a\n", "b\n")))
    assert res.ok and str(res) == "Applied 1 edit to a.txt.\nVersion: 2"


def test_cancel_during_the_write_waits_for_it_to_settle() -> None:
    mem = SlowWriter({"a.txt": "one\ntwo\n"})
    mem.release.clear()
    tool = patch_tool(mem, mem)

    async def main() -> None:
        task = asyncio.ensure_future(tool.acall(path="a.txt", edits=sr("one\ntwo\n", "1\n2\n")))
        assert await asyncio.to_thread(mem.writing.wait, 30)
        task.cancel()
        await _turns()
        assert not task.done(), "the cancellation propagated before the write settled"
        mem.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert mem.read_bytes("a.txt") == b"1\n2\n"
    # The lock was released: the next call runs.
    assert tool(path="a.txt", edits=sr("1\n", "x\n")).ok


def test_cancel_before_the_write_changes_nothing() -> None:
    mem = MemoryStorage({"a.txt": "a\n"})
    entered, release = threading.Event(), threading.Event()

    def unsaved() -> list[str]:
        entered.set()
        assert release.wait(30)
        return []

    tool = patch_tool(mem, mem, unsaved=unsaved)

    async def main() -> None:
        task = asyncio.ensure_future(tool.acall(path="a.txt", edits=sr("a\n", "b\n")))
        assert await asyncio.to_thread(entered.wait, 30)
        task.cancel()
        await _turns()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert mem.read_bytes("a.txt") == b"a\n"


def test_cancel_during_a_workspace_write_leaves_no_half_written_file(tmp_path) -> None:
    big = "".join(f"line {i}\n" for i in range(20000))
    repo, ws, _fs = mounted(tmp_path / "r", {"big.txt": big})
    spy = GateSpy(as_storage(ws))
    tool = patch_tool(spy, spy)
    old = head(repo)

    async def main() -> None:
        edits = sr("line 0\n", "LINE ZERO\n")
        task = asyncio.ensure_future(tool.acall(path="big.txt", edits=edits))
        assert await asyncio.to_thread(spy.passed.wait, 30)
        task.cancel()
        await _turns()
        assert not task.done()
        spy.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert (repo / "big.txt").read_text() == big.replace("line 0\n", "LINE ZERO\n", 1)
    assert head(repo) != old and status_porcelain(repo) == ""
    git(repo, "fsck", "--strict")


def test_cancel_before_a_workspace_write_changes_nothing(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    before = state(repo)
    entered, release = threading.Event(), threading.Event()

    def unsaved() -> list[str]:
        entered.set()
        assert release.wait(30)
        return []

    tool = patch_tool(fs, fs, unsaved=unsaved)

    async def main() -> None:
        task = asyncio.ensure_future(tool.acall(path="a.txt", edits=sr("a\n", "b\n")))
        assert await asyncio.to_thread(entered.wait, 30)
        task.cancel()
        await _turns()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert state(repo) == before


def test_one_instance_serialises_its_calls() -> None:
    mem = MemoryStorage({"log.txt": ""})
    tool = patch_resource_tool(mem, mem)
    barrier = threading.Barrier(4)
    results: list[bool] = []

    def work(n: int) -> None:
        barrier.wait()
        for i in range(10):
            read = mem.read("log.txt")
            res = tool(
                path="log.txt",
                edits=[{"after_line": 0, "new_string": f"{n}-{i}\n"}],
                expected_version=read.version,
            )
            results.append(res.ok or res.code == "resource_conflict")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results) and len(results) == 40


def test_separate_instances_lose_no_update(tmp_path) -> None:
    repo, _ws, _fs = mounted(tmp_path / "r", {"log.txt": "start\n"})
    barrier = threading.Barrier(4)
    landed: list[str] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        ws = Workspace.open(repo)
        tool = patch_resource_tool(ws, ws)
        barrier.wait()
        for i in range(6):
            line = f"{n}-{i}"
            res = tool(path="log.txt", edits=[{"after_line": 1, "new_string": line + "\n"}])
            assert res.ok or res.code == "resource_conflict", str(res)
            if res.ok:
                with lock:
                    landed.append(line)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = (repo / "log.txt").read_text().splitlines()
    assert lines[0] == "start"
    assert sorted(lines[1:]) == sorted(landed) and landed
    assert status_porcelain(repo) == ""
