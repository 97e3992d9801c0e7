"""Large blobs read and written as loose objects (``gitpatch.store._loose``), checked with git."""

from __future__ import annotations

import subprocess
import zlib
from pathlib import Path

import pygit2
import pytest

from gitpatch.core.model import FileChange as F
from gitpatch.core.spliced import Spliced
from gitpatch.errors import RepositoryError
from gitpatch.store import Store
from gitpatch.store import _loose as loose
from tests.gitkit import git, make_repo

BIG = b"".join(b"line %07d of a large file\n" % n for n in range(60_000))  # ~1.6 MB


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"big.txt": BIG, "small.txt": "small\n"})


def _rev(repo: Path, name: str) -> str:
    return git(repo, "rev-parse", name).strip()


def _loose_file(repo: Path, hexid: str) -> Path:
    return repo / ".git" / "objects" / hexid[:2] / hexid[2:]


def test_a_large_blob_written_here_is_the_blob_git_reads(repo: Path) -> None:
    store = Store.open(repo)
    changed = BIG.replace(b"line 0000042", b"LINE 0000042")
    tree = store.build_tree(store.ref_target("refs/heads/work"), [F("big.txt", changed)])
    hexid = _rev(repo, f"{tree}:big.txt")
    assert hexid == str(pygit2.hash(changed))
    assert _loose_file(repo, hexid).is_file()
    shown = subprocess.run(["git", "cat-file", "blob", hexid], cwd=repo, capture_output=True)
    assert shown.returncode == 0 and shown.stdout == changed
    assert "error" not in git(repo, "fsck", "--no-dangling")
    leftovers = [p for p in (repo / ".git" / "objects").iterdir() if p.name.startswith("tmp_")]
    assert leftovers == []


def test_writing_a_spliced_content_equals_writing_the_whole(tmp_path: Path) -> None:
    objects = tmp_path / "objects"
    spliced = Spliced(BIG, [(5, 9, b"LINE"), (100, 100, b"inserted "), (200, 230, b"")])
    whole = bytes(spliced)
    assert len(spliced) == len(whole) and spliced == whole
    first = loose.write_blob(objects, whole)
    again = loose.write_blob(objects, spliced)  # the same object: kept as it is
    assert first == again == str(pygit2.hash(whole)) == loose.blob_id(spliced)
    assert loose.read_blob(objects, first) == whole
    assert [p for p in objects.iterdir() if p.name.startswith("tmp_")] == []


def test_the_compression_level_follows_git_config(repo: Path) -> None:
    git(repo, "config", "core.looseCompression", "0")  # stored, not deflated
    store = Store.open(repo)
    tree = store.build_tree(None, [F("big.txt", BIG + b"more\n")])
    hexid = _rev(repo, f"{tree}:big.txt")
    assert _loose_file(repo, hexid).stat().st_size > len(BIG)


def test_a_large_blob_is_read_from_its_loose_object(repo: Path) -> None:
    hexid = _rev(repo, "HEAD:big.txt")
    assert loose.read_blob(repo / ".git" / "objects", hexid) == BIG
    assert Store.open(repo).read(pygit2.Oid(hex=head_of(repo)), "big.txt") == BIG


def head_of(repo: Path) -> str:
    return _rev(repo, "HEAD")


def test_a_packed_blob_is_read_by_libgit2(repo: Path) -> None:
    git(repo, "gc", "-q", "--prune=now")
    hexid = _rev(repo, "HEAD:big.txt")
    assert not _loose_file(repo, hexid).exists()
    assert loose.read_blob(repo / ".git" / "objects", hexid) is None
    assert Store.open(repo).read(pygit2.Oid(hex=head_of(repo)), "big.txt") == BIG


def test_a_corrupt_loose_blob_is_refused_not_returned(repo: Path) -> None:
    hexid = _rev(repo, "HEAD:big.txt")
    path = _loose_file(repo, hexid)
    forged = BIG.replace(b"line 0000007", b"LINE 0000007")  # same size, other bytes
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"blob %d\0" % len(forged) + forged, 1))
    assert loose.read_blob(repo / ".git" / "objects", hexid) is None
    with pytest.raises(RepositoryError):
        Store.open(repo).read(pygit2.Oid(hex=head_of(repo)), "big.txt")


@pytest.mark.parametrize(
    "content",
    [b"tree 12\0" + b"x" * 12, b"blob 99\0short", b"blob x\0", b"not zlib at all"],
)
def test_what_is_not_a_whole_loose_blob_is_left_to_libgit2(tmp_path: Path, content: bytes) -> None:
    objects = tmp_path / "objects"
    hexid = "ab" + "0" * 38
    (objects / "ab").mkdir(parents=True)
    raw = content if content.startswith(b"not") else zlib.compress(content)
    (objects / "ab" / hexid[2:]).write_bytes(raw)
    assert loose.read_blob(objects, hexid) is None


def test_the_fingerprint_hash_is_reused_by_the_write(tmp_path: Path) -> None:
    objects = tmp_path / "objects"
    content = BIG + b"tail\n"
    hexid = loose.blob_id(content)
    assert hexid == str(pygit2.hash(content))
    assert loose.write_blob(objects, content) == hexid
    assert loose.read_blob(objects, hexid) == content
