"""The service's parts without HTTP: credentials, access rules, spaces, versions, races."""

from __future__ import annotations

import contextvars
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from unittest import mock

import anyio
import pytest

from gitpatch.core.model import DeleteFile, Proposal, UpdateFile, WriteFile
from gitpatch.doors.hosted import (
    Credential,
    CredentialFile,
    ResourceService,
    Spaces,
    add_credential,
    hash_token,
    load_credentials,
    locate,
)
from gitpatch.doors.hosted.limits import DEFAULT_MAX_FILE_BYTES, SpacesConfig
from gitpatch.doors.hosted.watched import checked_once
from gitpatch.errors import GitpatchError, InvalidArguments
from gitpatch.formats import patch_resource as edit_objects
from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import git, git_env, wait_until

# -- credentials --------------------------------------------------------------------------------


def test_add_stores_only_the_hash_and_lookup_finds_the_token(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    token, cred = add_credential(path, user="ada", organization="acme", teams=["web"])
    assert token not in path.read_text()
    assert hash_token(token) in path.read_text()
    assert CredentialFile(path).lookup(token) == cred
    assert CredentialFile(path).lookup(token + "x") is None
    assert oct(path.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(
    "options",
    [
        {"user": None, "organization": None},
        {"user": "../ada", "organization": None},
        {"user": "ada", "organization": "acme", "teams": ["web"], "manage": ["ops"]},
        {"user": "ada", "organization": "acme", "teams": ["x.git"]},
    ],
)
def test_add_refuses_bad_credentials_and_writes_nothing(tmp_path: Path, options: dict) -> None:
    path = tmp_path / "c.toml"
    with pytest.raises(InvalidArguments):
        add_credential(path, **options)
    assert not path.exists()


def test_the_file_is_reread_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    first, _ = add_credential(path, user="ada", organization=None)
    creds = CredentialFile(path)
    second, _ = add_credential(path, user="bob", organization=None)
    assert creds.lookup(second) is not None  # added: works at once
    good = path.read_text()
    path.write_text(good + "\n[[credential]]\ntoken_sha256 = 'nonsense'\n")
    assert creds.lookup(first) is None  # malformed: nobody, not the last good contents
    path.write_text(good.replace(hash_token(first), "0" * 64))
    assert creds.lookup(second) is not None  # fixed: works again
    assert creds.lookup(first) is None  # revoked without a restart
    path.unlink()
    assert creds.lookup(second) is None  # no file: nobody


def test_a_file_that_stops_parsing_or_opens_up_fails_closed_in_process(tmp_path: Path) -> None:
    """Not the last good contents (WatchedFile's default), nor the blocks still whole: nothing,
    until the file parses whole and is private again."""
    path = tmp_path / "c.toml"
    kept, _ = add_credential(path, user="ada", organization=None)
    removed, _ = add_credential(path, user="bob", organization=None)
    creds = CredentialFile(path)
    assert creds.lookup(removed) is not None
    good = path.read_text()
    blocks = good.split("[[credential]]")
    path.write_text("[[credential]]".join(blocks[:2]) + "[[credential]]\nuser = = 'x'\n")
    assert creds.lookup(kept) is None
    assert creds.lookup(removed) is None
    path.write_text(good)
    assert creds.lookup(kept) is not None
    path.chmod(0o640)
    assert creds.lookup(kept) is None
    path.chmod(0o600)
    assert creds.lookup(kept) is not None


def test_the_body_limit_follows_the_limits_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "spaces.toml"
    config = SpacesConfig(path)
    assert config.largest_file_limit() == DEFAULT_MAX_FILE_BYTES
    path.write_text(f'[space."teams/w"]\nmax_file_bytes = {4 * DEFAULT_MAX_FILE_BYTES}\n')
    assert config.largest_file_limit() == 4 * DEFAULT_MAX_FILE_BYTES  # no settings() first


def test_within_one_request_each_file_is_checked_once(tmp_path: Path) -> None:
    """``checked_once`` (each HTTP request): the first use checks the file, later uses of
    the request (in its worker threads too) take that answer; the next request sees a
    change, and outside a request every use looks."""
    path = tmp_path / "c.toml"
    first, _ = add_credential(path, user="ada", organization=None)
    creds = CredentialFile(path)
    stats: list[str] = []
    real = os.stat

    def counted(where: Any, *args: Any, **kw: Any) -> Any:
        stats.append(str(where))
        return real(where, *args, **kw)

    with mock.patch.object(os, "stat", counted):
        with checked_once():
            assert creds.lookup(first) is not None
            path.chmod(0o644)  # fails closed, from the next request on
            assert creds.lookup(first) is not None
            in_thread: list[Any] = []
            context = contextvars.copy_context()
            worker = threading.Thread(
                target=lambda: in_thread.append(context.run(creds.lookup, first))
            )
            worker.start()
            worker.join()
            assert in_thread[0] is not None
            assert stats.count(str(path)) == 1
        with checked_once():
            assert creds.lookup(first) is None
        path.chmod(0o600)
        assert creds.lookup(first) is not None
        before = stats.count(str(path))
        assert creds.lookup(first) is not None  # outside a request: each use looks
        assert stats.count(str(path)) == before + 1


def test_each_http_request_has_its_own_scope_and_the_lifespan_none() -> None:
    """The server's lifespan (the SDK's session manager runs in it as long as the server
    does) must never check a file once for good; each HTTP request checks afresh."""
    from gitpatch.doors.hosted import watched

    scopes: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        scopes.append(watched._CHECKED.get())

    async def nothing() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def main() -> None:
        watch = watched.CheckedPerRequest(app)
        await watch({"type": "lifespan"}, nothing, nothing)
        for method in ("GET", "POST", "POST"):
            await watch({"type": "http", "method": method}, nothing, nothing)

    anyio.run(main)
    assert scopes[0] is None
    assert all(isinstance(s, dict) for s in scopes[1:])
    assert len({id(s) for s in scopes[1:]}) == 3


@pytest.mark.parametrize(
    "text",
    [
        "[[credential]]\ntoken_sha256 = 'abc'\nuser = 'a'\n",
        f"[[credential]]\ntoken_sha256 = '{'a' * 64}'\n",
        f"[[credential]]\ntoken_sha256 = '{'a' * 64}'\nuser = 'a'\nscopes = ['admin']\n",
        f"[[credential]]\ntoken_sha256 = '{'a' * 64}'\nuser = 'a/../b'\n",
    ],
)
def test_malformed_files_are_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ValueError):
        load_credentials(path)


# -- access ---------------------------------------------------------------------------------------

ADA = Credential("a" * 64, "ada", "acme", ("web", "infra"), ("web",), ("read", "edit"))
ORG = Credential("b" * 64, None, "acme", ("web",), ("web",), ("read", "edit"))
BOB = Credential("c" * 64, "bob", None, (), (), ("read", "edit"))
READER = Credential("d" * 64, "carl", None, (), (), ("read",))


@pytest.mark.parametrize(
    ("cred", "path", "team", "write", "expected"),
    [
        (ADA, "a.md", None, True, ("users/ada", "a.md")),
        (ADA, "a.md", "web", True, ("teams/web", "a.md")),
        (ADA, "team/web/a.md", None, True, ("teams/web", "a.md")),
        (ADA, "team/web/a.md", "web", True, ("teams/web", "a.md")),
        (ADA, "a.md", "infra", False, ("teams/infra", "a.md")),
        (ADA, "a.md", "infra", True, "forbidden"),
        (ADA, "a.md", "ops", False, "team_not_found"),
        (ADA, "team/web/a.md", "infra", True, "invalid_arguments"),
        (ORG, "a.md", None, False, "no_personal_space"),
        (ORG, "a.md", "web", True, ("teams/web", "a.md")),
        (BOB, "a.md", "web", False, "personal_cannot_address_team"),
        (BOB, "team/web/a.md", None, False, "personal_cannot_address_team"),
        (READER, "a.md", None, False, ("users/carl", "a.md")),
        (READER, "a.md", None, True, "forbidden"),
    ],
)
def test_locate(cred: Credential, path: str, team: str | None, write: bool, expected) -> None:
    if isinstance(expected, str):
        with pytest.raises(GitpatchError) as caught:
            locate(cred, path, team, write=write)
        assert caught.value.code == expected
    else:
        found = locate(cred, path, team, write=write)
        assert (found.space, found.path) == expected


# -- spaces and versions ------------------------------------------------------------------------


def _write(spaces: Spaces, name: str, path: str, data: bytes, create: bool = False, **kw):
    op = WriteFile(path, data, create)
    return spaces.get(name).storage.apply(Proposal((op,), "patch_resource"), **kw)


def test_spaces_are_created_on_first_write_and_versions_are_generations(tmp_path: Path) -> None:
    spaces = Spaces(tmp_path)
    space = spaces.get("users/ada")
    assert space.storage.list() == [] and not space.exists()
    versions = [_write(spaces, "users/ada", "a.txt", b"1\n", create=True).version]
    for n in range(2, 6):
        versions.append(_write(spaces, "users/ada", "a.txt", f"{n}\n".encode()).version)
    assert versions == [1, 2, 3, 4, 5]
    repo = tmp_path / "users" / "ada.git"
    assert git(repo, "rev-parse", "--is-bare-repository").strip() == "true"
    for v in versions:
        assert space.storage.commit_of(v) == git(repo, "rev-parse", f"main~{5 - v}").strip()
    # a fresh process (new Spaces) computes the same numbers from git alone
    again = Spaces(tmp_path).get("users/ada").storage
    assert again.read("a.txt").version == 5
    assert again.commit_of(3) == space.storage.commit_of(3)


def _outside(tmp_path: Path) -> Workspace:
    """A writer that does not queue with the service (a person, another host): the Workspace
    on the space's repository itself. (Service processes queue on the space's flock.)"""
    return Workspace.open(tmp_path / "users" / "ada.git", "auto", "refs/heads/main", protected=[])


def test_a_change_made_while_preparing_is_a_conflict(tmp_path: Path) -> None:
    mine = Spaces(tmp_path)
    _write(mine, "users/ada", "a.txt", b"one\n", create=True)
    before = git(tmp_path / "users" / "ada.git", "rev-parse", "main")

    def meanwhile() -> None:
        _outside(tmp_path).propose(Proposal((WriteFile("a.txt", b"theirs\n", False),), "x"))

    with pytest.raises(GitpatchError) as caught:
        _write(mine, "users/ada", "a.txt", b"mine\n", before_write=meanwhile)
    assert caught.value.code == "resource_conflict"
    assert git(tmp_path / "users" / "ada.git", "show", "main:a.txt") == "theirs\n"
    assert git(tmp_path / "users" / "ada.git", "rev-parse", "main~1") == before


def test_deleted_and_recreated_while_preparing_is_not_found(tmp_path: Path) -> None:
    mine = Spaces(tmp_path)
    _write(mine, "users/ada", "a.txt", b"one\n", create=True)

    def meanwhile() -> None:
        other = _outside(tmp_path)
        other.propose(Proposal((DeleteFile("a.txt"),), "patch_resource"))
        other.propose(Proposal((WriteFile("a.txt", b"replacement\n", True),), "x"))

    with pytest.raises(GitpatchError) as caught:
        _write(mine, "users/ada", "a.txt", b"mine\n", before_write=meanwhile)
    assert caught.value.code == "resource_not_found"
    assert git(tmp_path / "users" / "ada.git", "show", "main:a.txt") == "replacement\n"


def test_a_call_keeps_the_authorization_it_started_with(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    token, _ = add_credential(path, user="ada", organization=None)
    creds = CredentialFile(path)
    service = ResourceService(Spaces(tmp_path / "data"))
    cred = creds.lookup(token)
    assert cred is not None
    service.create_resource(cred, "a.txt", "one\n")
    path.write_text("")  # revoked while the call is being prepared
    edit = [{"old_string": "one", "new_string": "two"}]
    result = service.patch_resource(cred, "a.txt", edit)
    assert result.ok, str(result)
    repo = tmp_path / "data" / "users" / "ada.git"
    assert git(repo, "show", "main:a.txt") == "two\n"  # applied whole, not half
    assert creds.lookup(token) is None  # the next request is refused


def test_limits_config_defaults_overrides_and_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "spaces.toml"
    config = SpacesConfig(path)
    assert config.settings("users/a").max_file_bytes == DEFAULT_MAX_FILE_BYTES
    path.write_text('[defaults]\nmax_file_bytes = 10\n[space."teams/w"]\nmode = "review"\n')
    assert config.settings("users/a").max_file_bytes == 10
    assert config.settings("teams/w").mode == "review"
    assert config.settings("teams/w").max_file_bytes == 10
    path.write_text("[defaults]\nmax_file_bytes = -1\n")
    assert config.settings("users/a").max_file_bytes == 10  # the last good settings stay
    with pytest.raises(ValueError):
        SpacesConfig(path)  # but a server does not start on a bad file


def test_versions_past_the_history_walk_limit(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("gitpatch.store._history.HISTORY_DEPTH", 3)  # walks stop every 3 commits
    spaces = Spaces(tmp_path)
    _write(spaces, "users/ada", "a.txt", b"0\n", create=True)
    for n in range(1, 11):
        _write(spaces, "users/ada", "a.txt", f"{n}\n".encode())
    repo = tmp_path / "users" / "ada.git"
    fresh = Spaces(tmp_path).get("users/ada").storage  # nothing cached
    assert fresh.version() == 11
    assert fresh.commit_of(1) == git(repo, "rev-list", "--max-parents=0", "main").strip()
    assert fresh.commit_of(7) == git(repo, "rev-parse", "main~4").strip()
    assert fresh.commit_of(12) is None and fresh.commit_of(0) is None


def test_the_space_limit_counts_exactly_across_creates_updates_and_deletes(
    tmp_path: Path,
) -> None:
    # each change's size is carried to the next from the one before (no diff): it must be
    # the exact byte count, or the limit moves
    (tmp_path / "spaces.toml").write_text("[defaults]\nmax_space_bytes = 100\n")
    spaces = Spaces(tmp_path)
    _write(spaces, "users/ada", "a.txt", b"a" * 40, create=True)
    _write(spaces, "users/ada", "b.txt", b"b" * 30, create=True)
    _write(spaces, "users/ada", "a.txt", b"a" * 10)
    space = spaces.get("users/ada")
    space.storage.apply(Proposal((DeleteFile("b.txt"),), "patch_resource"))
    space.storage.apply(Proposal((UpdateFile("a.txt", move_to="e.txt"),), "patch_resource"))
    assert _write(spaces, "users/ada", "c.txt", b"c" * 90, create=True).version == 6  # 100
    head = space.head()
    for storage in (space.storage, Spaces(tmp_path).get("users/ada").storage):  # and afresh
        with pytest.raises(GitpatchError) as refused:
            storage.apply(Proposal((WriteFile("d.txt", b"d", True),), "patch_resource"))
        assert refused.value.code == "storage_limit_reached"
        assert refused.value.details["used"] == 100
        assert space.head() == head


def test_changes_queued_together_are_one_batch_each_its_own_commit(tmp_path: Path) -> None:
    spaces = Spaces(tmp_path)
    _write(spaces, "users/ada", "a.txt", b"a\n", create=True)
    _write(spaces, "users/ada", "b.txt", b"b\n", create=True)
    space = spaces.get("users/ada")
    repo = tmp_path / "users" / "ada.git"
    results: dict[str, Any] = {}

    def change(name: str, proposal: Proposal) -> None:
        try:
            results[name] = space.storage.apply(proposal)
        except GitpatchError as exc:
            results[name] = exc

    def edit(path: str, old: str, new: str) -> Proposal:
        return edit_objects.parse(path, [{"old_string": old, "new_string": new}])

    others = [
        threading.Thread(target=change, args=("a2", edit("a.txt", "a", "a2"))),
        threading.Thread(target=change, args=("bad", edit("a.txt", "missing", "x"))),
        threading.Thread(target=change, args=("a3", edit("a.txt", "a2", "a3"))),
    ]

    def hold() -> None:  # the running batch waits until the next one has all three
        for n, t in enumerate(others, 1):
            t.start()  # each queued before the next starts: the batch keeps their order
            wait_until(lambda n=n: space.queue.waiting() == n, f"change {n} queued")
        # and a writer outside the service moves main meanwhile: the batch is built again
        _outside(tmp_path).propose(Proposal((WriteFile("c.txt", b"c\n", True),), "x"))

    first = space.storage.apply(
        Proposal((WriteFile("b.txt", b"b2\n", False),), "patch_resource"), before_write=hold
    )
    for t in others:
        t.join()
    assert first.version == 4  # built again on the outside commit (version 3)
    assert results["bad"].code == "match_not_found"
    assert [results["a2"].version, results["a3"].version] == [5, 6]
    assert git(repo, "show", "main:a.txt") == "a3\n"
    assert git(repo, "show", "main:b.txt") == "b2\n" and git(repo, "show", "main:c.txt") == "c\n"
    for n, path in enumerate(["a.txt", "a.txt", "b.txt", "c.txt"]):
        assert git(repo, "diff", "--name-only", f"main~{n + 1}", f"main~{n}").split() == [path]


def test_many_writers_of_one_space_each_get_their_own_change_back(tmp_path: Path) -> None:
    """Threads queueing on one space while batches run: each is woken once its batch ran, or
    to run the next batch itself, never left waiting; every change lands once, in order."""
    spaces = Spaces(tmp_path)
    for n in range(4):
        _write(spaces, "users/ada", f"r{n}.txt", b"end\n", create=True)
    space = spaces.get("users/ada")
    results: dict[int, Any] = {}

    def change(i: int) -> None:
        proposal = edit_objects.parse(f"r{i % 4}.txt", [{"after_line": 0, "new_string": f"{i}\n"}])
        for _ in range(3):  # three changes per thread, each queued after the one before
            results.setdefault(i, []).append(space.storage.apply(proposal).version)

    threads = [threading.Thread(target=change, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    versions = sorted(v for got in results.values() for v in got)
    assert versions == list(range(5, 5 + 72))  # 4 creates, then one version per change
    assert all(got == sorted(got) for got in results.values())
    assert space.queue.waiting() == 0
    for n in range(4):
        lines = git(tmp_path / "users" / "ada.git", "show", f"main:r{n}.txt").split()
        assert sorted(lines[:-1], key=int) == sorted(
            [str(i) for i in range(24) if i % 4 == n] * 3, key=int
        )


def test_a_process_opening_the_space_keeps_the_objects_a_batch_is_writing(tmp_path: Path) -> None:
    """A second service process (``--workers 2``) opens a space, and sweeps libgit2's
    half-written object files no live operation owns, while this process's batch writes its
    objects: the batch is such an operation, so the file it is writing stays."""
    spaces = Spaces(tmp_path)
    _write(spaces, "users/ada", "a.txt", b"one\n", create=True)
    objects = tmp_path / "users" / "ada.git" / "objects"
    writing = objects / "tmp_object_git2_inflight"  # the name libgit2 gives an object it writes

    def meanwhile() -> None:  # the batch is running: its objects come next
        writing.write_bytes(b"")
        opened = "from gitpatch.doors.hosted import Spaces; Spaces(Path(sys.argv[1]))"
        code = f"import sys; from pathlib import Path; {opened}.get('users/ada').workspace()"
        subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)], check=True, env=git_env(tmp_path)
        )
        assert writing.exists()

    assert _write(spaces, "users/ada", "a.txt", b"two\n", before_write=meanwhile).version == 2
    assert git(tmp_path / "users" / "ada.git", "show", "main:a.txt") == "two\n"


# -- connections ---------------------------------------------------------------------------------


class _Conn:
    """A connection as the guard sees it."""

    def __init__(self, guard: Any, address: str, busy: bool = False) -> None:
        self.guard, self.address, self.running, self.dropped = guard, address, busy, False

    def busy(self) -> bool:
        return self.running

    def drop(self) -> None:
        self.dropped = True
        self.guard.forget(self, self.address)


def test_the_guard_closes_the_oldest_idle_connection_of_an_address_never_a_busy_one() -> None:
    from gitpatch.doors.hosted.connections import Guard

    guard = Guard(per_address=3, max_connections=100)
    busy = _Conn(guard, "10.0.0.1", busy=True)
    assert guard.admit(busy, busy.address)
    idle = [_Conn(guard, "10.0.0.1") for _ in range(2)]
    for conn in idle:
        assert guard.admit(conn, conn.address)
    other = _Conn(guard, "10.0.0.2")
    assert guard.admit(other, other.address)  # another address has its own count
    newest = _Conn(guard, "10.0.0.1")
    assert guard.admit(newest, newest.address)
    assert [c.dropped for c in (busy, *idle, other, newest)] == [False, True, False, False, False]
    # every other connection of the address busy: the new one is refused, nothing else closed
    for conn in (idle[1], newest):
        conn.running = True
    late = _Conn(guard, "10.0.0.1")
    assert not guard.admit(late, late.address)
    assert not any(c.dropped for c in (busy, idle[1], newest, other))
    assert len(guard.by_address["10.0.0.1"]) == 3 and len(guard.open) == 4


def test_the_guard_keeps_a_reserve_of_descriptors_over_every_address() -> None:
    import resource

    from gitpatch.doors.hosted.connections import Guard, reserve_for

    guard = Guard(per_address=1000, max_connections=4)
    conns = [_Conn(guard, f"10.0.0.{n}") for n in range(6)]
    for conn in conns:
        assert guard.admit(conn, conn.address)
    assert [c.dropped for c in conns] == [True, True, False, False, False, False]
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert Guard.for_process(10, 256).max_connections == soft - reserve_for(soft)
    assert reserve_for(1024) == 256 and reserve_for(100) == 64


def test_accept_errors_are_logged_once_per_interval_with_a_count() -> None:
    import logging

    from gitpatch.doors.hosted.connections import AcceptErrorFilter

    kept = AcceptErrorFilter()

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, None)

    passed = [kept.filter(record("socket.accept() out of system resource")) for _ in range(1000)]
    assert passed.count(True) == 1 and passed[0]
    assert kept.filter(record("something else"))
    kept._last -= 3600  # as if the interval had passed
    again = record("socket.accept() out of system resource")
    assert kept.filter(again) and "(999 more since the last one)" in again.getMessage()
