"""The service's commands through the console script: credentials add, serve --http errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gitpatch.doors.hosted import CredentialFile, hash_token
from gitpatch.doors.hosted.listen import parse_listen
from gitpatch.errors import InvalidArguments
from tests.doors.mcp.mcpkit import console_script

#: the console script in a process per call: `make test-fast` leaves these out.
pytestmark = pytest.mark.slow


def gitpatch(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script(), *args], cwd=tmp_path, capture_output=True, text=True, check=False
    )


def test_credentials_add_prints_the_token_once_and_stores_its_hash(tmp_path: Path) -> None:
    out = gitpatch(
        tmp_path,
        "credentials",
        "add",
        "--file",
        "c.toml",
        "--user",
        "ada",
        "--organization",
        "acme",
        "--team",
        "web",
        "--manage",
        "web",
    )
    assert out.returncode == 0, out.stderr
    token = out.stdout.strip()
    text = (tmp_path / "c.toml").read_text()
    assert token not in text and hash_token(token) in text
    cred = CredentialFile(tmp_path / "c.toml").lookup(token)
    assert cred is not None and cred.teams == ("web",) and cred.scopes == ("read", "edit")
    again = gitpatch(tmp_path, "--json", "credentials", "add", "--file", "c.toml", "--user", "bob")
    data = json.loads(again.stdout)
    assert data["token_sha256"] == hash_token(data["token"])
    assert CredentialFile(tmp_path / "c.toml").lookup(token) is not None  # the first one stays


def test_credentials_add_refuses_bad_names_with_a_code(tmp_path: Path) -> None:
    out = gitpatch(tmp_path, "credentials", "add", "--file", "c.toml", "--user", "../x")
    assert out.returncode == 1 and out.stderr.startswith("invalid_arguments:")
    assert not (tmp_path / "c.toml").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["serve", "--http", "127.0.0.1:0"], "needs --data DIR and --credentials FILE"),
        (
            ["serve", "--http", "127.0.0.1:0", "--data", "d", "--credentials", "missing.toml"],
            "does not exist",
        ),
        (["serve", "--http", "host:port", "--data", "d", "--credentials", "c.toml"], "HOST:PORT"),
    ],
)
def test_serve_http_refuses_bad_options(tmp_path: Path, args: list[str], needle: str) -> None:
    (tmp_path / "c.toml").write_text("")
    out = gitpatch(tmp_path, *args)
    assert out.returncode == 1 and out.stderr.startswith("invalid_arguments:")
    assert needle in out.stderr
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8765", ("127.0.0.1", 8765)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
        ("[::1]:9000", ("::1", 9000)),
        (":8080", ("127.0.0.1", 8080)),
    ],
)
def test_listen_addresses_default_to_loopback(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["", "a:b", "1:99999", "localhost:"])
def test_bad_listen_addresses(text: str) -> None:
    with pytest.raises(InvalidArguments):
        parse_listen(text)


def test_the_documented_systemd_unit_verifies_and_names_real_options(tmp_path: Path) -> None:
    """docs/hosted-service.md's supervisor recipe: ``systemd-analyze verify`` finds nothing to
    say about it (where systemd is installed; else it is parsed), it restarts the service
    always, and every option of its command line is one ``gitpatch serve`` has."""
    import configparser
    import re
    import shlex
    import shutil

    text = (Path(__file__).parents[3] / "docs" / "hosted-service.md").read_text()
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    [unit] = [b for b in blocks if b.startswith("# /etc/systemd/system/gitpatch.service\n")]
    parsed = configparser.ConfigParser(strict=True, interpolation=None)
    parsed.optionxform = str  # type: ignore[assignment,method-assign]
    parsed.read_string(unit)
    assert {"Unit", "Service", "Install"} <= set(parsed.sections())
    service = parsed["Service"]
    assert service["Restart"] == "always" and service["UMask"] == "0077"
    command = shlex.split(service["ExecStart"])
    assert command[0] == "/usr/local/bin/gitpatch" and command[1:3] == ["serve", "--http"]
    known = set(re.findall(r"--[a-z-]+", gitpatch(tmp_path, "serve", "--help").stdout))
    assert {a for a in command if a.startswith("--")} <= known
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return
    path = tmp_path / "gitpatch.service"
    path.write_text(unit.replace("/usr/local/bin/gitpatch", console_script()))
    done = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stderr
