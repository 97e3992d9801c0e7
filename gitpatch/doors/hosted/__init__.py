"""The hosted service behind ``gitpatch serve --http``: spaces, credentials, limits, access.

- ``credentials``: the TOML credentials file (token hashes), re-read when it changes;
- ``limits``: per-space size limits and review mode (``DIR/spaces.toml``);
- ``watched``: the one way both files are re-read when they change;
- ``spaces``: one bare repository per user or team, integer versions, limit checks;
- ``direct``: a change to an auto space as one commit and one compare-and-swap (no note);
- ``generations``: commit <-> integer version, with the index kept in the repository;
- ``access``: which space a call addresses and whether the credential may (the spec's rules);
- ``resources``: the six resource tools for one caller;
- ``remote``: pushing proposal branches and notes to a git remote;
- ``listen``: the ``--http HOST:PORT`` address (loopback by default);
- ``connections``: how many connections a client may hold before it sent a request;
- ``calls``: each call's budget, heavy-call slots and stops; ``workers``: the pool of
  processes that runs calls' heavy pure work; ``grepping``: grep_resource's search.

No MCP, HTTP or click here: ``gitpatch.doors.mcp.serve_http`` (with its ``_hosted_http``) and
``gitpatch.doors.cli._hosted`` are the front ends.
"""

from __future__ import annotations

from gitpatch.doors.hosted.access import Location, locate
from gitpatch.doors.hosted.credentials import (
    Credential,
    CredentialFile,
    add_credential,
    hash_token,
    load_credentials,
)
from gitpatch.doors.hosted.limits import SpacesConfig, SpaceSettings
from gitpatch.doors.hosted.resources import ResourceService
from gitpatch.doors.hosted.spaces import Space, Spaces, SpaceStorage

__all__ = [
    "Credential",
    "CredentialFile",
    "Location",
    "ResourceService",
    "Space",
    "SpaceSettings",
    "SpaceStorage",
    "Spaces",
    "SpacesConfig",
    "add_credential",
    "hash_token",
    "load_credentials",
    "locate",
]
