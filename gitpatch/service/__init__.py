"""The hosted service behind ``gitpatch serve --http``: spaces, credentials, limits, access.

- ``credentials``: the TOML credentials file (token hashes), re-read when it changes;
- ``limits``: per-space size limits and review mode (``DIR/spaces.toml``);
- ``spaces``: one bare repository per user or team, integer versions, limit checks;
- ``access``: which space a call addresses and whether the credential may (the spec's rules);
- ``resources``: the six resource tools for one caller;
- ``remote``: pushing proposal branches and notes to a git remote;
- ``listen``: the ``--http HOST:PORT`` address (loopback by default).

No MCP, HTTP or click here: ``gitpatch.mcp_server.serve_http`` (with its ``_service``) and
``gitpatch.cli._service`` are the front ends.
"""

from __future__ import annotations

from gitpatch.service.access import Location, locate
from gitpatch.service.credentials import (
    Credential,
    CredentialFile,
    add_credential,
    hash_token,
    load_credentials,
)
from gitpatch.service.limits import SpacesConfig, SpaceSettings
from gitpatch.service.resources import ResourceService
from gitpatch.service.spaces import Space, Spaces, SpaceStorage

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
