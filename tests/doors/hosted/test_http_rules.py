"""The patch_resource spec's rules over streamable HTTP, through the SDK's own client, against
a real ``gitpatch serve --http`` process on 127.0.0.1 (one server for the module)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from gitpatch.doors.hosted.credentials import add_credential, hash_token
from tests.doors.hosted.svckit import (
    CLIENT_TIMEOUT,
    PEOPLE,
    Server,
    call,
    make_credentials,
    run,
    space_refs,
    text_of,
)
from tests.gitkit import git

#: a gitpatch serve --http process: `make test-fast` leaves these out.
pytestmark = pytest.mark.slow

PEOPLE["rita"] = {"user": "rita", "organization": "acme", "teams": ["docs"], "manage": ["docs"]}
SPACES_TOML = """
[space."users/bob"]
max_file_bytes = 200
max_space_bytes = 500

[space."teams/docs"]
mode = "review"
"""


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    root = tmp_path_factory.mktemp("service")
    tokens = make_credentials(root / "credentials.toml")
    (root / "data").mkdir(mode=0o700)
    (root / "data" / "spaces.toml").write_text(SPACES_TOML)
    server = Server(root / "data", root / "credentials.toml")
    try:
        yield server, tokens
    finally:
        server.stop()


@pytest.fixture
def url(service: tuple[Server, dict[str, str]]) -> str:
    return service[0].url


@pytest.fixture
def tok(service: tuple[Server, dict[str, str]]) -> dict[str, str]:
    return service[1]


@pytest.fixture
def data(service: tuple[Server, dict[str, str]]) -> Path:
    return service[0].data


def code_of(result: Any) -> str:
    assert result.is_error, text_of(result)
    text = text_of(result)
    code = text.split(":", 1)[0]
    assert result.meta == {"code": code}
    assert result.structured_content is None
    return code


def test_lists_the_six_resource_tools(url: str, tok: dict[str, str]) -> None:
    async def scenario(c: ClientSession) -> Any:
        return (await c.list_tools()).tools

    names = {t.name for t in run(url, tok["ada"], scenario)}
    assert names == {
        "patch_resource",
        "read_resource",
        "create_resource",
        "update_resource",
        "grep_resource",
        "list_resources",
    }


def test_versions_are_generations_each_naming_one_commit(
    url: str, tok: dict[str, str], data: Path
) -> None:
    async def scenario(c: ClientSession) -> list[Any]:
        out = [await c.call_tool("create_resource", {"path": "v/a.md", "content": "one\ntwo\n"})]
        v = out[0].structured_content["version"]
        edit = {"old_string": "two", "new_string": "three"}
        out.append(
            await c.call_tool(
                "patch_resource", {"path": "v/a.md", "edits": [edit], "expected_version": v}
            )
        )
        out.append(await c.call_tool("read_resource", {"path": "v/a.md"}))
        return out

    created, patched, read = run(url, tok["ada"], scenario)
    first, second = created.structured_content, patched.structured_content
    assert second["version"] == first["version"] + 1
    assert second["id"] == first["id"]
    repo = data / "users" / "ada.git"
    assert git(repo, "rev-parse", "main").strip() == second["commit"]
    count = git(repo, "rev-list", "--first-parent", "--count", "main").strip()
    assert int(count) == second["version"]
    assert git(repo, "rev-parse", "main~1").strip() == first["commit"]
    assert read.structured_content["content"] == "one\nthree\n"
    message = git(repo, "log", "-1", "--format=%B", "main")
    fingerprint = hash_token(tok["ada"])[:12]
    assert f"Requested by ada (credential {fingerprint})" in message
    assert tok["ada"] not in message and "Gitpatch-Proposal:" in message
    assert read.structured_content["version"] == second["version"]


def test_stale_expected_version_is_a_conflict_and_writes_nothing(
    url: str, tok: dict[str, str], data: Path
) -> None:
    call(url, tok["ada"], "create_resource", path="c/x.md", content="a\nb\n")
    first = call(url, tok["ada"], "read_resource", path="c/x.md").structured_content["version"]
    edit = [{"old_string": "a", "new_string": "A"}]
    call(url, tok["ada"], "patch_resource", path="c/x.md", edits=edit, expected_version=first)
    before = space_refs(data)
    stale = [{"old_string": "b", "new_string": "B"}]
    result = call(
        url, tok["ada"], "patch_resource", path="c/x.md", edits=stale, expected_version=first
    )
    assert code_of(result) == "resource_conflict"
    assert space_refs(data) == before
    # another resource changing is not a conflict
    call(url, tok["ada"], "create_resource", path="c/other.md", content="z\n")
    now = call(url, tok["ada"], "read_resource", path="c/x.md").structured_content["version"]
    call(url, tok["ada"], "create_resource", path="c/other2.md", content="z\n")
    ok = call(url, tok["ada"], "patch_resource", path="c/x.md", edits=stale, expected_version=now)
    assert not ok.is_error, text_of(ok)


@pytest.mark.parametrize(
    ("who", "arguments", "code"),
    [
        ("ada", {"team": "infra"}, "forbidden"),  # bound, not managed
        ("ada", {"team": "ops"}, "team_not_found"),  # not bound
        ("ada", {"path": "team/ops/t.md"}, "team_not_found"),
        ("ada", {"path": "team/infra/t.md"}, "forbidden"),
        ("org", {}, "no_personal_space"),
        ("bob", {"team": "web"}, "personal_cannot_address_team"),
        ("bob", {"path": "team/web/t.md"}, "personal_cannot_address_team"),
        ("reader", {}, "forbidden"),  # no edit scope
    ],
)
def test_spec_refusals(
    url: str, tok: dict[str, str], data: Path, who: str, arguments: dict[str, Any], code: str
) -> None:
    before = space_refs(data)
    args = {"path": "t.md", "edits": [{"after_line": 0, "new_string": "x\n"}], **arguments}
    assert code_of(call(url, tok[who], "patch_resource", **args)) == code
    create = {"path": args["path"], "content": "x\n", **{k: v for k, v in arguments.items()}}
    assert code_of(call(url, tok[who], "create_resource", **create)) == code
    assert space_refs(data) == before


def test_team_spaces_by_argument_or_prefix_and_organization_credentials(
    url: str, tok: dict[str, str], data: Path
) -> None:
    made = call(url, tok["ada"], "create_resource", path="team/web/site.md", content="a\n")
    assert not made.is_error, text_of(made)
    edit = [{"old_string": "a", "new_string": "b"}]
    done = call(url, tok["org"], "patch_resource", path="site.md", team="web", edits=edit)
    assert not done.is_error, text_of(done)
    assert git(data / "teams" / "web.git", "show", "main:site.md") == "b\n"
    read = call(url, tok["ada"], "read_resource", path="site.md", team="infra")  # bound: may read
    assert code_of(read) == "resource_not_found"
    assert not (data / "teams" / "infra.git").exists()  # reads create nothing


def test_binary_and_non_utf8_resources(url: str, tok: dict[str, str], data: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    made = call(
        url,
        tok["ada"],
        "create_resource",
        path="img/logo.png",
        content=base64.b64encode(png).decode(),
        encoding="base64",
    )
    assert not made.is_error, text_of(made)
    edit = [{"after_line": 0, "new_string": "x"}]
    before = space_refs(data)
    assert code_of(call(url, tok["ada"], "patch_resource", path="img/logo.png", edits=edit)) == (
        "not_a_text_resource"
    )
    read = call(url, tok["ada"], "read_resource", path="img/logo.png").structured_content
    assert (read["encoding"], base64.b64decode(read["content"])) == ("base64", png)
    latin = base64.b64encode("café\n".encode("latin-1")).decode()
    call(url, tok["ada"], "create_resource", path="l1.txt", content=latin, encoding="base64")
    before = space_refs(data)
    result = call(url, tok["ada"], "patch_resource", path="l1.txt", edits=edit)
    assert code_of(result) == "resource_not_utf8"
    assert space_refs(data) == before
    new = base64.b64encode(png + b"\x01").decode()
    done = call(
        url, tok["ada"], "update_resource", path="img/logo.png", content=new, encoding="base64"
    )
    assert not done.is_error, text_of(done)
    assert done.structured_content["version"] == read["version"] + 2


def test_limits_per_space(url: str, tok: dict[str, str], data: Path) -> None:
    big = "x" * 150 + "\n"
    assert not call(url, tok["bob"], "create_resource", path="a.txt", content=big).is_error
    before = space_refs(data)
    grow = [{"after_line": 1, "new_string": "y" * 100 + "\n"}]
    result = call(url, tok["bob"], "patch_resource", path="a.txt", edits=grow)
    assert code_of(result) == "payload_too_large"
    assert "200 bytes" in text_of(result)
    for name in ("b.txt", "c.txt"):
        assert not call(url, tok["bob"], "create_resource", path=name, content=big).is_error
    before = space_refs(data)
    result = call(url, tok["bob"], "create_resource", path="d.txt", content=big)
    assert code_of(result) == "storage_limit_reached"
    assert space_refs(data) == before
    # shrinking is always allowed
    shrink = [{"start_line": 1, "end_line": 1, "new_string": "small\n"}]
    assert not call(url, tok["bob"], "patch_resource", path="a.txt", edits=shrink).is_error


def test_review_space_keeps_proposals_for_a_person(
    url: str, tok: dict[str, str], data: Path
) -> None:
    from gitpatch import Workspace

    result = call(url, tok["rita"], "create_resource", path="team/docs/guide.md", content="hi\n")
    assert not result.is_error, text_of(result)
    out = result.structured_content
    assert out["proposal_id"] and out["version"] == 0
    repo = data / "teams" / "docs.git"
    assert git(repo, "rev-parse", f"gitpatch/{out['proposal_id']}").strip() == out["commit"]
    assert git(repo, "rev-parse", "--verify", "-q", "main", check=False).strip() == ""
    read = call(url, tok["rita"], "read_resource", path="guide.md", team="docs")
    assert code_of(read) == "resource_not_found"  # nothing lands before approval
    Workspace.open(repo, "review", "main", protected=["main"]).approve(
        out["proposal_id"], by="A Person <p@example.com>"
    )
    read = call(url, tok["rita"], "read_resource", path="guide.md", team="docs")
    assert read.structured_content["content"] == "hi\n"


def test_grep_and_list(url: str, tok: dict[str, str]) -> None:
    call(url, tok["ada"], "create_resource", path="g/one.md", content="alpha\nbeta\n")
    call(url, tok["ada"], "create_resource", path="g/two.md", content="gamma\nalphabet\n")
    found = call(url, tok["ada"], "grep_resource", pattern="^alpha", path="g").structured_content
    assert [(m["path"], m["line"]) for m in found["matches"]] == [("g/one.md", 1), ("g/two.md", 2)]
    listed = call(url, tok["ada"], "list_resources", prefix="g").structured_content
    assert listed["resources"] == ["g/one.md", "g/two.md"]
    assert listed["version"] == found["version"]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("patch_resource", {"path": "a.md", "edits": "not a list"}),
        ("patch_resource", {"path": "a.md"}),
        ("patch_resource", {"path": "a.md", "edits": [], "expected_version": "four"}),
        ("patch_resource", {"path": "a.md", "edits": [{"new_string": "x", "bogus": 1}]}),
        ("create_resource", {"path": "a.md", "content": "x", "encoding": "latin-1"}),
        ("read_resource", {}),
    ],
)
def test_malformed_arguments_are_invalid_params(
    url: str, tok: dict[str, str], tool: str, arguments: dict[str, Any]
) -> None:
    with pytest.raises(MCPError) as caught:
        call(url, tok["ada"], tool, **arguments)
    assert caught.value.code == INVALID_PARAMS


def test_empty_edits_is_a_domain_error(url: str, tok: dict[str, str]) -> None:
    call(url, tok["ada"], "create_resource", path="e.md", content="x\n")
    assert code_of(call(url, tok["ada"], "patch_resource", path="e.md", edits=[])) == "empty_edits"


def _statuses(url: str, token: str | None) -> list[int]:
    """HTTP statuses the SDK client saw while trying to open a session with ``token``."""
    seen: list[int] = []

    async def record(response: httpx2.Response) -> None:
        seen.append(response.status_code)

    async def main() -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        from mcp.client.streamable_http import streamable_http_client

        with anyio.fail_after(30):
            async with (
                httpx2.AsyncClient(
                    headers=headers, event_hooks={"response": [record]}, timeout=CLIENT_TIMEOUT
                ) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()

    with pytest.raises(BaseException):  # noqa: B017 - the SDK wraps the HTTP error in groups
        anyio.run(main)
    return seen


def test_no_token_or_wrong_token_is_401_missing_scope_403(url: str, tok: dict[str, str]) -> None:
    assert _statuses(url, None)[:1] == [401]
    assert _statuses(url, "gp_not-a-token")[:1] == [401]
    assert _statuses(url, tok["ed"])[:1] == [403]  # edit only, no read scope


def test_a_revoked_token_stops_working_without_restart(
    service: tuple[Server, dict[str, str]], url: str
) -> None:
    creds = service[0].creds
    token, _ = add_credential(creds, user="temp", organization=None)
    assert not call(url, token, "list_resources").is_error
    text = creds.read_text()
    start = text.index(f'token_sha256 = "{hash_token(token)}"')
    head = text.rindex("[[credential]]", 0, start)
    end = text.find("[[credential]]", start)
    creds.write_text(text[:head] + (text[end:] if end != -1 else ""))
    assert _statuses(url, token)[:1] == [401]


def test_sessions_keep_working_across_calls(url: str, tok: dict[str, str]) -> None:
    async def scenario(c: ClientSession) -> list[bool]:
        out = []
        for n in range(3):
            r = await c.call_tool("create_resource", {"path": f"s/{n}.md", "content": "x\n"})
            out.append(r.is_error)
        return out

    assert run(url, tok["ada"], scenario) == [False, False, False]
