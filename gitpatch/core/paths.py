"""Turning the paths a caller sends into safe repository-relative paths and addresses.

Everything here is lexical: no file is read. A path that could leave the repository, reach into
``.git``, smuggle a NUL byte, or mean something else on another operating system (backslashes,
drive letters, UNC shares; device names for files it would create) is refused before any
content is looked at.
Checks that need the repository (symlinks, ignored files, directories) belong to the workspace.

Besides ordinary paths, two address families name content kept on refs instead of the working
tree: ``work://SESSION/rel/path`` (a session's scratch, on ``refs/gitpatch/work/SESSION``) and
``memory://ROOT-KEY/rel/path`` (on ``refs/gitpatch/memory/ROOT-KEY``). ``parse_address`` reads
them; bare (``work://``), root-only (``work://s1``) and union addresses (globs, several roots)
are refused as targets, and so is any other scheme.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from typing import Literal

from gitpatch.core.model import AddFile, FileOp, Proposal, UpdateFile
from gitpatch.errors import InvalidArguments, InvalidPatch, UnsafePath

__all__ = [
    "FAMILIES",
    "Address",
    "check_creatable",
    "check_portable",
    "normalize",
    "normalize_proposal",
    "parse_address",
]

#: Address families kept on refs, and the ref prefix of each.
FAMILIES: dict[str, str] = {"work": "refs/gitpatch/work/", "memory": "refs/gitpatch/memory/"}

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(//)?")
_DRIVE = re.compile(r"^[A-Za-z]:")
_ROOT_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_GLOB = re.compile(r"[*?\[\]{}]")
# Names Windows reserves for devices, with or without an extension (``con.txt`` too).
_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$", re.I)


def _unsafe(path: str, message: str, hint: str) -> UnsafePath:
    return UnsafePath(message, hint=hint, details={"path": path})


def check_portable(path: str) -> None:
    """Refuse what means something else on another system: ``\\``, drive letters, UNC shares,
    control characters and components ending in a dot or a space; and any
    ``scheme://`` address (the tools resolve ``work://`` and ``memory://`` before this)."""
    if _SCHEME.match(path) and "://" in path:
        raise _unsafe(
            path,
            f"path {path!r} is an address with a scheme, not a path in the repository",
            "Pass a path relative to the repository root (the tools take work:// and "
            "memory:// addresses; other schemes are refused).",
        )
    if "\\" in path:
        raise _unsafe(
            path,
            f"path {path!r} contains a backslash",
            "Use forward slashes: paths are POSIX paths relative to the repository root.",
        )
    if _DRIVE.match(path):
        raise _unsafe(
            path,
            f"path {path!r} starts with a drive letter",
            "Use a POSIX path relative to the repository root, without a drive letter.",
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise _unsafe(
            path,
            f"path {path!r} contains a control character",
            "Pass a plain file path without control characters (tabs, newlines, escapes).",
        )
    for part in path.split("/"):
        if part not in (".", "..") and part.rstrip(" .") != part:
            raise _unsafe(
                path,
                f"path {path!r} uses the unportable name {part!r}",
                "Rename the file: names ending in a dot or a space cannot be checked out "
                "everywhere.",
            )


def check_creatable(path: str) -> None:
    """Refuse creating a file under a name Windows reserves for a device (``CON``, ``aux.c``).

    Only new paths (an Add, a move destination) are checked: a tracked ``aux.c`` already in a
    Linux project stays editable, since refusing it would only stop the people who have it.
    """
    for part in path.split("/"):
        if _RESERVED.match(part):
            raise _unsafe(
                path,
                f"path {path!r} uses the reserved device name {part!r}",
                "Choose another name: device names (CON, NUL, AUX, COM1, LPT1, ...), with or "
                "without an extension, cannot be checked out on Windows.",
            )


def normalize(path: str, root: str | None = None) -> str:
    """Return ``path`` as a clean POSIX path relative to the repository root.

    ``root`` is the repository's absolute working directory (or a virtual root such as
    ``/workspace``): an absolute path must lie below it. Refuses empty paths, NUL bytes, escapes
    above the root, any component named ``.git`` (compared without case, as some file systems
    do) and the unportable forms ``check_portable`` names.
    """
    if not isinstance(path, str) or not path.strip():
        raise InvalidArguments("path is empty", hint="Pass the path of a file in the repository.")
    if "\x00" in path:
        raise UnsafePath(
            "path contains a NUL byte", hint="Pass a plain file path.", details={"path": path}
        )
    try:
        path.encode("utf-8")
    except UnicodeEncodeError as exc:  # bytes a file system gave back undecoded (surrogates)
        shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise UnsafePath(
            f'path "{shown}" is not valid UTF-8; gitpatch names files in UTF-8 only',
            hint="Rename the file to a UTF-8 name with git (`git mv`), then edit it.",
            details={"path": shown, "reason": "not_utf8"},
        ) from exc
    raw = path.strip()
    check_portable(raw)
    if raw.startswith("/"):
        base = posixpath.normpath(root) if root else None
        if base is None or not (raw == base or raw.startswith(base.rstrip("/") + "/")):
            raise UnsafePath(
                f"path {raw!r} is outside the repository",
                hint=f"Use a path relative to the repository root{f' ({root})' if root else ''}.",
                details={"path": path},
            )
        raw = raw[len(base) :].lstrip("/") if base else raw
    clean = posixpath.normpath(raw) if raw else "."
    if clean == "." or clean == "":
        raise InvalidArguments(
            f"path {path!r} names the repository root, not a file",
            hint="Pass the path of a file in the repository.",
            details={"path": path},
        )
    if clean == ".." or clean.startswith("../"):
        raise UnsafePath(
            f"path {path!r} escapes the repository",
            hint="Paths must stay inside the repository; remove the '..' components.",
            details={"path": path},
        )
    if any(_names_git(part) for part in clean.split("/")):
        raise UnsafePath(
            f"path {path!r} is inside .git",
            hint="Choose a path outside the .git directory: gitpatch never edits git's own files.",
            details={"path": path},
        )
    return clean


# Code points HFS+ ignores in names, so ".g\u200cit" is ".git" on a Mac (git refuses them too).
_IGNORABLE = dict.fromkeys(
    map(
        ord,
        "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u206a\u206b\u206c"
        "\u206d\u206e\u206f\ufeff",
    ),
)
_SHORT_NAME = re.compile(r"git~[0-9]+", re.IGNORECASE)


def _names_git(part: str) -> bool:
    """True when a path component is, on some file system, ``.git`` or a part of it: any case,
    trailing dots or spaces (Windows), ``GIT~1`` (an 8.3 short name), an NTFS stream
    (``.git::$INDEX_ALLOCATION``, any ``::$DATA``), or with code points HFS+ ignores."""
    if "::$" in part or part.lower().endswith(":$data"):
        return True
    name = part.split(":", 1)[0].translate(_IGNORABLE).rstrip(". ").lower()
    return name == ".git" or bool(_SHORT_NAME.fullmatch(name))


def normalize_proposal(
    proposal: Proposal, root: str | None = None, *, resolved: bool = False
) -> Proposal:
    """``proposal`` with every path and move destination normalised (see ``normalize``).

    The one normaliser: the workspace runs it with its root at its edge, and the engine runs
    it too, so no caller can make the engine write outside the repository or inside ``.git``.
    What it returns is marked (``Proposal.normalized``), so a proposal is normalised once: a
    marked one comes back as it is (its paths are clean relative paths, which every root
    leaves alone). A proposal with no operation is ``invalid_patch``, as every parser reports
    an edit text with none. ``resolved``: its paths are ``normalize``'s own output already (the
    keys a tool resolved its paths to, with the Workspace's normaliser): they are marked as
    they are, not normalised again; new paths are still checked (``check_creatable``).
    """
    if proposal.normalized:
        return proposal
    if not proposal.operations:
        raise InvalidPatch(
            "the proposal has no file operations", hint="Give at least one edit to apply."
        )
    ops: list[FileOp] = []
    for op in proposal.operations:
        clean = op if resolved else dataclasses.replace(op, path=normalize(op.path, root))
        if isinstance(clean, AddFile):
            check_creatable(clean.path)
        if isinstance(clean, UpdateFile) and clean.move_to is not None:
            destination = clean.move_to if resolved else normalize(clean.move_to, root)
            check_creatable(destination)
            clean = dataclasses.replace(clean, move_to=destination)
        ops.append(clean)
    done = proposal if resolved else dataclasses.replace(proposal, operations=tuple(ops))
    object.__setattr__(done, "normalized_ops", done.operations)
    return done


@dataclasses.dataclass(frozen=True)
class Address:
    """A file in an address family: ``work://SESSION/path`` or ``memory://ROOT-KEY/path``."""

    family: Literal["work", "memory"]
    root: str
    path: str

    @property
    def ref(self) -> str:
        """The ref holding this family root's content (``refs/gitpatch/work/SESSION``)."""
        return FAMILIES[self.family] + self.root

    def __str__(self) -> str:
        return f"{self.family}://{self.root}/{self.path}"


def parse_address(text: str) -> Address | None:
    """The family address ``text`` names, or None for an ordinary path.

    Refuses (``path_unsafe``) other schemes, bare and root-only addresses, globs and several
    roots, and any unsafe relative part (checked by ``normalize``).
    """
    if not isinstance(text, str):
        return None
    found = _SCHEME.match(text.strip())
    if found is None or (_DRIVE.match(text.strip()) and not found.group(2)):
        return None
    raw = text.strip()
    scheme = found.group(1).lower()
    if scheme not in FAMILIES or not found.group(2):
        raise _unsafe(
            text,
            f"{raw!r} uses the unsupported scheme {scheme}://",
            "Use a path in the workspace, work://SESSION/path or memory://ROOT-KEY/path; "
            "other resource families are read-only.",
        )
    rest = raw[found.end() :]
    root, _, rel = rest.partition("/")
    if not root:
        raise _unsafe(text, f"{raw!r} is a bare address", f"Name a file: {scheme}://ROOT/path.")
    if _GLOB.search(rest) or "," in root:
        raise _unsafe(
            text,
            f"{raw!r} is a union address (a glob or several roots), not one file",
            f"Name exactly one file: {scheme}://ROOT/path, without wildcards.",
        )
    if not _ROOT_KEY.match(root) or root.endswith(".lock") or ".." in root:
        raise _unsafe(
            text,
            f"{raw!r}: {root!r} is not a valid {scheme} root",
            "Roots are letters, digits, '.', '_' and '-' (at most 64).",
        )
    if not rel.strip("/"):
        raise _unsafe(
            text, f"{raw!r} names a root, not a file", f"Name a file: {scheme}://{root}/path."
        )
    family: Literal["work", "memory"] = "work" if scheme == "work" else "memory"
    return Address(family, root, normalize(rel))
