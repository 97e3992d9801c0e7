"""The Proposal IR every edit language is parsed into, and what the engine gives back.

One tool call is one ``Proposal``: an ordered list of file operations. Parsers build it without
touching files; the engine applies it to a snapshot of file contents and returns a ``Changeset``
(new bytes per path, or a deletion) plus a report of where each edit landed and how.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gitpatch.core.spliced import Content
from gitpatch.errors import InvalidPatch

__all__ = [
    "AddFile",
    "Changeset",
    "DeleteFile",
    "Edit",
    "EditReport",
    "FileChange",
    "FileOp",
    "Format",
    "Hunk",
    "HunkLine",
    "InsertAfter",
    "Proposal",
    "Replace",
    "ReplaceLines",
    "SearchReplace",
    "UpdateFile",
    "WriteFile",
]

#: The edit language a proposal was written in; it selects the engine's semantics and the
#: matcher profile (``gitpatch.match.PROFILES`` is keyed by it).
Format = Literal["search_replace", "apply_patch", "patch_resource", "unified_diff"]


@dataclass(frozen=True)
class SearchReplace:
    """Replace the block of lines ``search`` (found once in the ORIGINAL file) by ``replace``.

    Lines carry no terminators. ``source_line`` is the 1-based line of the block's SEARCH marker
    in the edit text, for error messages. Pieces split from one block by ``...`` elision share
    the same ``block`` number.
    """

    search: tuple[str, ...]
    replace: tuple[str, ...]
    source_line: int = 0
    block: int = 0


@dataclass(frozen=True)
class HunkLine:
    """One hunk line: ``op`` is ``" "`` (context), ``"-"`` (remove) or ``"+"`` (add)."""

    op: Literal[" ", "-", "+"]
    text: str


@dataclass(frozen=True)
class Hunk:
    """An apply_patch / unified-diff hunk.

    ``anchor``: a line (or line prefix) above the hunk; the hunk is searched below it.
    ``line_hint``: 1-based line number of the hunk's first line in the file the agent read; it
    only chooses among content matches. ``end_of_file``: the hunk must match at the end.
    ``final_newline``: for an end-of-file hunk, whether the file ends with a newline afterwards
    (``None`` keeps the state it had; a unified diff's ``\\ No newline at end of file`` on one
    side only sets it).
    """

    lines: tuple[HunkLine, ...]
    anchor: str | None = None
    line_hint: int | None = None
    end_of_file: bool = False
    source_line: int = 0
    final_newline: bool | None = None

    @property
    def old_lines(self) -> tuple[str, ...]:
        """What the hunk expects in the file: context and removed lines."""
        return tuple(h.text for h in self.lines if h.op != "+")

    @property
    def new_lines(self) -> tuple[str, ...]:
        """What the hunk leaves there: context and added lines."""
        return tuple(h.text for h in self.lines if h.op != "-")


@dataclass(frozen=True)
class Replace:
    """patch_resource anchored replace: substring ``old`` becomes ``new`` (verbatim).

    An empty ``old`` is refused here, the one place for it: it would match everywhere.
    """

    old: str
    new: str
    replace_all: bool = False

    def __post_init__(self) -> None:
        if not self.old:
            raise InvalidPatch(
                "old_string is empty; it must be text found in the file",
                hint="Give the exact text to replace, with enough context to be unique, or use "
                "after_line to insert.",
            )


@dataclass(frozen=True)
class ReplaceLines:
    """patch_resource line-range replace: lines ``start``..``end`` (1-based, inclusive)."""

    start: int
    end: int
    new: str


@dataclass(frozen=True)
class InsertAfter:
    """patch_resource insertion: ``new`` goes after line ``line`` (1-based; 0 = very top)."""

    line: int
    new: str


Edit = SearchReplace | Hunk | Replace | ReplaceLines | InsertAfter


@dataclass(frozen=True)
class AddFile:
    """Create ``path`` (which must not exist) with ``content``; parents are created. ``mode``
    (``0o100755``) makes it executable, as a diff's ``new file mode 100755`` says."""

    path: str
    content: str
    mode: int | None = None


@dataclass(frozen=True)
class DeleteFile:
    """Delete the existing file ``path``."""

    path: str


@dataclass(frozen=True)
class UpdateFile:
    """Edit the existing file ``path``; with ``move_to`` the result lands at that new path.
    ``mode`` (``0o100644`` or ``0o100755``) sets its mode, as a diff's ``new mode`` says (None
    keeps it); an update may change only that."""

    path: str
    edits: tuple[Edit, ...] = ()
    move_to: str | None = None
    mode: int | None = None


@dataclass(frozen=True)
class WriteFile:
    """Set the whole bytes of ``path`` (text or binary): replace the existing file, or with
    ``create`` make a new one (which must not exist). The service's create/update tools."""

    path: str
    content: bytes
    create: bool = False


FileOp = AddFile | DeleteFile | UpdateFile | WriteFile


@dataclass(frozen=True)
class Proposal:
    """One tool call's worth of change: all operations land together or not at all."""

    operations: tuple[FileOp, ...]
    format: Format
    tool: str = ""
    message: str = ""
    #: The id of the proposal this one revises (a person rejected it or asked for changes).
    revises: str | None = None
    #: A digest of the tool call that made it, so a harness's retry of that very call is
    #: recognised as already applied (set by the MCP door; empty elsewhere).
    call: str = ""
    #: The operations ``core.paths.normalize_proposal`` returned, set by it alone: while they
    #: are still this proposal's operations, its paths are clean and later stages trust them.
    #: Not an argument, and ``dataclasses.replace`` drops it (new operations are checked again).
    normalized_ops: tuple[FileOp, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def normalized(self) -> bool:
        """True when the paths were normalised and the operations not replaced since."""
        return self.normalized_ops is self.operations

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the proposal reads or writes, in order, without repeats."""
        seen: dict[str, None] = {}
        for op in self.operations:
            seen[op.path] = None
            if isinstance(op, UpdateFile) and op.move_to:
                seen[op.move_to] = None
        return tuple(seen)


@dataclass(frozen=True)
class EditReport:
    """Where one edit landed: 1-based inclusive line range in the ORIGINAL file, and the level.

    For an insertion ``start_line`` is the line after which it went and ``end_line`` equals it.
    """

    path: str
    index: int
    start_line: int
    end_line: int
    level: str = "exact"


@dataclass(frozen=True)
class FileChange:
    """The new state of one path: ``content`` bytes (a large file's may be ``Spliced``: its old
    bytes with the replaced spans), or ``None`` for a deletion.

    ``source`` is set when the file was moved here from another path (which is then gone).
    ``mode`` (a git file mode) is set only when the mode itself changes (a recorded
    ``chmod +x``); None keeps the file's mode (a new file is a regular one).
    """

    path: str
    content: Content | None
    source: str | None = None
    mode: int | None = None


@dataclass(frozen=True)
class Changeset:
    """What a proposal does to a snapshot: one ``FileChange`` per path touched, and a report."""

    changes: tuple[FileChange, ...]
    report: tuple[EditReport, ...] = field(default=())

    @property
    def paths(self) -> tuple[str, ...]:
        """Paths whose state changes (sources of moves included)."""
        out: dict[str, None] = {}
        for ch in self.changes:
            if ch.source:
                out[ch.source] = None
            out[ch.path] = None
        return tuple(out)
