"""Who may address which space: the patch_resource spec's rules for teams and credentials.

- A credential with a user, naming no team, addresses that user's space (``users/<user>``).
  A userless organization credential must name a team (``no_personal_space``).
- A team is named by ``team`` or by a ``team/<name>/`` path prefix. A personal credential (a
  user bound to no organization) cannot name one (``personal_cannot_address_team``); otherwise
  the team must be bound to the credential (``team_not_found``) and, to change anything, be in
  its ``manage`` list (``forbidden``).
- Changing anything needs the ``edit`` scope, reading the ``read`` scope (``forbidden``).
- A request routed to one space (``ROUTED_SPACE``: the HTTP front end sets it from a
  ``/s/<space>/mcp`` URL) may address only that space (``wrong_space``): the router sent it to
  the host that owns that space, and no other space may be created there.

Pure: no I/O. The decision is taken once at the start of a call and the call keeps it.
"""

from __future__ import annotations

import dataclasses
from contextvars import ContextVar

from gitpatch.doors.hosted.credentials import Credential, valid_name
from gitpatch.errors import (
    Forbidden,
    InvalidArguments,
    NoPersonalSpace,
    PersonalCannotAddressTeam,
    TeamNotFound,
    WrongSpace,
)

__all__ = ["ROUTED_SPACE", "Location", "locate", "routed_space"]

#: The space the current request's URL names (``users/ada``, ``teams/web``), or None.
ROUTED_SPACE: ContextVar[str | None] = ContextVar("gitpatch_routed_space", default=None)

TEAM_PREFIX = "team/"


@dataclasses.dataclass(frozen=True)
class Location:
    """Where a call goes: the space (``users/ada``, ``teams/web``) and the path inside it."""

    space: str
    path: str
    team: str | None


def _split_prefix(path: str, team: str | None) -> tuple[str, str | None]:
    """``team/<name>/rest`` as (rest, name); the team argument and the prefix must agree."""
    if not isinstance(path, str) or not path.startswith(TEAM_PREFIX):
        return path, team
    name, _, rest = path[len(TEAM_PREFIX) :].partition("/")
    if team is not None and name != team:
        raise InvalidArguments(
            f"path {path!r} names team {name!r} but team is {team!r}",
            hint="Name the team once: either the team argument or a team/<name>/ path prefix.",
            details={"path": path, "team": team},
        )
    return rest, name


def routed_space(path: str) -> str | None:
    """The space of a ``/s/users/<user>/mcp`` or ``/s/teams/<team>/mcp`` URL path, else None."""
    parts = path.split("/")
    if len(parts) != 5 or parts[0] or parts[1] != "s" or parts[4] != "mcp":
        return None
    if parts[2] not in ("users", "teams") or not valid_name(parts[3]):
        return None
    return f"{parts[2]}/{parts[3]}"


def locate(credential: Credential, path: str, team: str | None, *, write: bool) -> Location:
    """The space and path a call addresses, or the spec's refusal."""
    loc = _locate(credential, path, team, write=write)
    routed = ROUTED_SPACE.get()
    if routed is not None and loc.space != routed:
        raise WrongSpace(
            f"this session's URL serves space {routed}, and this call addresses {loc.space}",
            hint=f"Open a session at /s/{loc.space}/mcp for {loc.space} (each space has its "
            f"own URL, which routes to the host that keeps it); here, address only {routed}.",
            details={"routed": routed, "space": loc.space},
        )
    return loc


def _locate(credential: Credential, path: str, team: str | None, *, write: bool) -> Location:
    scope = "edit" if write else "read"
    if scope not in credential.scopes:
        verb = "update" if write else "read"
        raise Forbidden(
            f"this credential isn't permitted to {verb} resources (it lacks the {scope!r} scope)",
            hint=f"Ask for a credential with the {scope!r} scope.",
            details={"scope": scope},
        )
    path, team = _split_prefix(path, team)
    if team is None:
        if credential.user is None:
            raise NoPersonalSpace(
                "this credential has no personal space",
                hint="Address a team instead: set team, or prefix the path with team/<name>/.",
            )
        return Location(f"users/{credential.user}", path, None)
    if credential.personal:
        raise PersonalCannotAddressTeam(
            f"a personal credential cannot address team {team!r}",
            hint="Omit team (and the team/ prefix) to use your own space.",
            details={"team": team},
        )
    if team not in credential.teams:
        bound = ", ".join(credential.teams) or "none"
        raise TeamNotFound(
            f"no team named {team!r} is bound to this credential",
            hint=f"Use one of the teams bound to it ({bound}).",
            details={"team": team},
        )
    if write and team not in credential.manage:
        raise Forbidden(
            f"this credential isn't permitted to update team {team!r}'s resources",
            hint="Ask for a credential that manages this team; it can still read them.",
            details={"team": team},
        )
    return Location(f"teams/{team}", path, team)
