"""Bearer-token credentials: the TOML file, token lookup, and ``credentials add``.

The file holds one ``[[credential]]`` table per credential::

    [[credential]]
    token_sha256 = "<hex sha256 of the bearer token>"
    user = "ada"                 # omit for an organization credential (no personal space)
    organization = "acme"
    teams = ["web", "infra"]     # teams bound to this credential
    manage = ["web"]             # bound teams it may change
    scopes = ["read", "edit"]
    cpu_seconds = 2.0            # optional: the budget of each call (gitpatch.core.budget);
    wall_seconds = 5.0           # omitted, the service's defaults apply

Tokens are never stored in clear: a presented token is hashed and looked up. The file is
re-read when its modification time, size, inode or mode changes (one ``stat`` per lookup), so a
revoked token stops working on the next request without a restart. It fails closed: a file
that does not parse whole (a broken table header, a byte-order mark, a key this module does
not know, a value of the wrong type), that cannot be read, or whose mode lets anyone but its
owner read it, refuses every token until it is fixed; the reason is logged once per change of
the file. The last good file is never served past a broken one. This module knows nothing of
HTTP or MCP; it does not decide what a credential may do (``gitpatch.doors.hosted.access``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
import secrets
import stat
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

from gitpatch.doors.hosted.watched import WatchedFile
from gitpatch.errors import InvalidArguments
from gitpatch.safety.atomic import write_atomic

__all__ = [
    "SCOPES",
    "Credential",
    "CredentialFile",
    "add_credential",
    "hash_token",
    "load_credentials",
    "require_private",
    "valid_name",
]

_log = logging.getLogger("gitpatch.doors.hosted")

#: The scopes a credential may carry: ``read`` (read, grep, list) and ``edit`` (every change).
SCOPES = ("read", "edit")

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")


@dataclasses.dataclass(frozen=True)
class Credential:
    """Who a token represents and what it is bound to."""

    token_sha256: str
    user: str | None = None
    organization: str | None = None
    teams: tuple[str, ...] = ()
    manage: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ("read",)
    #: The CPU and wall seconds each of its calls may take (None: the service's default).
    cpu_seconds: float | None = None
    wall_seconds: float | None = None

    @property
    def fingerprint(self) -> str:
        """A short, stable, non-secret name for the credential (logs, session ownership)."""
        return self.token_sha256[:12]

    @property
    def personal(self) -> bool:
        """A user's own credential, bound to no organization: it can address no team."""
        return self.user is not None and self.organization is None


def hash_token(token: str) -> str:
    """The hex sha256 of a bearer token, as the credentials file stores it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def valid_name(name: object) -> bool:
    """True for a valid user, organization or team name (see ``check_name``)."""
    return isinstance(name, str) and bool(_NAME.match(name)) and not name.endswith(".git")


def check_name(kind: str, name: str) -> str:
    """``name`` when it is a valid user, organization or team name; ``invalid_arguments``
    otherwise (names become directory names of spaces, so they are kept plain)."""
    if not valid_name(name):
        raise InvalidArguments(
            f"{kind} name {name!r} is not valid",
            hint="Use 1-63 lowercase letters, digits, '.', '_' or '-', starting with a letter "
            "or digit (and not ending in .git).",
            details={kind: name},
        )
    return name


def _strings(table: dict[str, object], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: {key} must be a list of strings")
    return tuple(value)


#: The keys a ``[[credential]]`` table may hold: any other is a typo that must not pass silently.
_KEYS = frozenset(
    {
        "token_sha256",
        "user",
        "organization",
        "teams",
        "manage",
        "scopes",
        "cpu_seconds",
        "wall_seconds",
    }
)


def _credential(table: dict[str, object], where: str) -> Credential:
    if not isinstance(table, dict):
        raise ValueError(f"{where}: must be a [[credential]] table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown} (known: {', '.join(sorted(_KEYS))})")
    digest = table.get("token_sha256")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ValueError(f"{where}: token_sha256 must be 64 lowercase hex digits")
    user, org = table.get("user"), table.get("organization")
    for key, value in (("user", user), ("organization", org)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{where}: {key} must be a string")
    teams = _strings(table, "teams", where)
    manage = _strings(table, "manage", where)
    scopes = _strings(table, "scopes", where) if "scopes" in table else ("read",)
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown:
        raise ValueError(f"{where}: unknown scopes {unknown} (known: {', '.join(SCOPES)})")
    if not set(manage) <= set(teams):
        raise ValueError(f"{where}: manage lists teams that are not in teams")
    if user is None and org is None:
        raise ValueError(f"{where}: a credential needs a user or an organization")
    names = [("user", user), ("organization", org), *(("team", t) for t in teams)]
    for kind, name in names:
        if name is not None and not valid_name(name):
            raise ValueError(f"{where}: {kind} name {name!r} is not valid")
    budget = [table.get(key) for key in ("cpu_seconds", "wall_seconds")]
    for key, value in zip(("cpu_seconds", "wall_seconds"), budget, strict=True):
        if value is not None and (
            not isinstance(value, int | float) or isinstance(value, bool) or not value > 0
        ):
            raise ValueError(f"{where}: {key} must be a positive number of seconds")
    cpu, wall = (None if v is None else float(v) for v in budget)  # type: ignore[arg-type]
    return Credential(digest, user, org, teams, manage, scopes, cpu, wall)  # type: ignore[arg-type]


def load_credentials(path: Path) -> dict[str, Credential]:
    """Every credential of the file at ``path``, by token hash (ValueError when malformed)."""
    with path.open("rb") as f:
        return _parse(tomllib.load(f), path)


def _parse(data: dict[str, object] | None, path: Path) -> dict[str, Credential]:
    """The credentials of a parsed file by token hash; no file (None) holds none."""
    if data is not None and set(data) - {"credential"}:
        raise ValueError(f"{path}: only [[credential]] tables belong here, not {sorted(data)}")
    tables = [] if data is None else data.get("credential", [])
    if not isinstance(tables, list):
        raise ValueError(f"{path}: [[credential]] must be an array of tables")
    found: dict[str, Credential] = {}
    for number, table in enumerate(tables, 1):
        cred = _credential(table, f"{path}: credential {number}")
        found[cred.token_sha256] = cred
    return found


class CredentialFile:
    """The credentials of one file, re-read whenever the file changes (``WatchedFile``); a
    file that is broken or open to others grants nothing until it changes again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = WatchedFile(path, self._parse, required=True, on_error=self._fail_closed)

    def _parse(self, data: dict[str, object] | None) -> dict[str, Credential]:
        require_private(self.path, "credentials file", error=ValueError)
        return _parse(data, self.path)

    def _fail_closed(self, exc: Exception) -> dict[str, Credential]:
        """What a file that no longer reads, parses or stays private grants: nothing."""
        _log.error(
            "credentials file %s refused, every token is denied until it is fixed: %s",
            self.path,
            exc,
        )
        return {}

    def lookup(self, token: str) -> Credential | None:
        """The credential of ``token``, or None (unknown, revoked, the file is gone, broken
        or no longer private: see the module docstring)."""
        return self._file.get().get(hash_token(token))


def require_private(
    path: Path, what: str, *, error: Callable[[str], Exception] | None = None
) -> None:
    """Refuse (``invalid_arguments``, or ``error(message)`` when given) a file or directory
    that others than its owner may read, write or enter: it holds token hashes or every
    tenant's data."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if mode & 0o077:
        wanted = "700" if path.is_dir() else "600"
        if error is not None:
            raise error(f"{what} {path} is open to other users (mode {mode:o}): chmod {wanted}")
        raise InvalidArguments(
            f"{what} {path} is open to other users (mode {mode:o})",
            hint=f"Restrict it to its owner, e.g. chmod {wanted} {path}, and start again.",
            details={"path": str(path), "mode": f"{mode:o}"},
        )


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _toml_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


def add_credential(
    path: Path,
    *,
    user: str | None,
    organization: str | None,
    teams: Sequence[str] = (),
    manage: Sequence[str] = (),
    scopes: Sequence[str] = ("read", "edit"),
) -> tuple[str, Credential]:
    """Append a new credential to ``path`` (created if missing); returns the token, which is
    stored only as its hash, and the credential. The file is replaced atomically."""
    if user is None and organization is None:
        raise InvalidArguments(
            "a credential needs a user or an organization",
            hint="Pass --user, --organization, or both.",
        )
    for kind, name in (("user", user), ("organization", organization)):
        if name is not None:
            check_name(kind, name)
    for team in [*teams, *manage]:
        check_name("team", team)
    table = {"user": user, "organization": organization, "teams": list(teams)}
    token = "gp_" + secrets.token_urlsafe(32)
    lines = ["", "[[credential]]", f"token_sha256 = {_toml_string(hash_token(token))}"]
    for key in ("user", "organization"):
        if table[key] is not None:
            lines.append(f"{key} = {_toml_string(str(table[key]))}")
    lines += [
        f"teams = {_toml_list(teams)}",
        f"manage = {_toml_list(manage)}",
        f"scopes = {_toml_list(scopes)}",
    ]
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    new = old + ("\n" if old and not old.endswith("\n") else "") + "\n".join(lines) + "\n"
    try:  # never write a file the server would refuse
        parsed = tomllib.loads(new)
        cred = _credential(parsed["credential"][-1], str(path))
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise InvalidArguments(str(exc), hint="Fix the options (or the file) and retry.") from exc
    # tokens' hashes: the owner's alone, from the first byte (the temp file is created 0600)
    write_atomic(path, new.encode("utf-8"), 0o600)
    return token, cred
