"""A space's disk account: a measure that runs while changes are written (in the background,
``Maintenance``) keeps what they wrote meanwhile, instead of setting the figure back to what
its walk saw. Real spaces in temp dirs; the walk is the real one, with a change written in
the middle of it (as another thread's would be)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch.core.model import Proposal, WriteFile
from gitpatch.doors.hosted import Space, Spaces
from gitpatch.doors.hosted import maintenance as maintenance_module
from gitpatch.doors.hosted import spaces as spaces_module
from gitpatch.doors.hosted.maintenance import Maintenance


def _write(space: Space, path: str, data: bytes, create: bool = False) -> None:
    space.storage.apply(Proposal((WriteFile(path, data, create),), "patch_resource"))


def test_a_measure_keeps_what_a_change_wrote_during_its_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    space = Spaces(tmp_path).get("users/ada")  # the service keeps one Space per space
    _write(space, "a.txt", b"one\n", create=True)
    real = spaces_module.disk_bytes
    assert space.disk_used is not None  # measured for the first change's quota, then counted

    counted: dict[str, int] = {}

    def walk_while_a_change_lands(path: Path) -> int:
        counted["seen"] = real(path)
        before = space.disk_used
        _write(space, "b.txt", b"two\n" * 100, create=True)  # after the walk saw its files
        assert before is not None and space.disk_used is not None
        counted["written"] = space.disk_used - before
        return counted["seen"]

    for module in (spaces_module, maintenance_module):  # wherever the walk is looked up
        monkeypatch.setattr(module, "disk_bytes", walk_while_a_change_lands)
    Maintenance(grace="now").pack(space)  # measures again once packed
    monkeypatch.undo()
    assert counted["written"] > 0  # the change counted what it wrote
    assert space.disk_used == counted["seen"] + counted["written"]  # and the measure kept it
    space.measure()  # nothing written meanwhile: exactly what is there
    assert space.disk_used == real(space.path)
