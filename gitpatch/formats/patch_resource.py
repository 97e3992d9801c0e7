"""patch_resource edit objects: JSON in, Proposal out.

The pydantic model ``ResourceEdit`` is the input schema only (types, field names, bounds), so a
tool layer can publish it and map its violations to ``invalid_arguments``. The rules that need
several fields at once (exactly one addressing mode, ``replace_all`` only with ``old_string``,
``start_line <= end_line``) are the spec's ``invalid_patch`` and are checked by ``parse``.

A ``\\r\\n`` inside ``old_string`` or ``new_string`` is read as ``\\n``: matching is modulo line
endings, and the engine writes inserted line breaks in the file's own style, so a model that
sends CRLF never mixes line endings into an LF file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from gitpatch.core.model import Edit, InsertAfter, Proposal, Replace, ReplaceLines, UpdateFile
from gitpatch.errors import EmptyEdits, InvalidArguments, InvalidPatch
from gitpatch.formats._common import require_text

__all__ = ["EDITS_ADAPTER", "ResourceEdit", "edits_json_schema", "parse"]

_MODES_HINT = (
    "Give exactly one of: old_string (anchored replace, optionally with replace_all), "
    "start_line with end_line (line-range replace), or after_line (insertion); new_string is "
    "always required."
)


class ResourceEdit(BaseModel):
    """One entry of patch_resource's ``edits``: exactly one addressing mode plus ``new_string``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    old_string: str | None = Field(
        default=None,
        description="Anchored replace: the exact substring to find (unique unless replace_all).",
    )
    new_string: str = Field(
        description="The replacement/inserted text, verbatim. Empty to delete.",
    )
    replace_all: bool | None = Field(
        default=None,
        description="Replace every occurrence of old_string instead of requiring one match.",
    )
    start_line: int | None = Field(
        default=None, ge=1, description="Line-range replace: first line (1-based, inclusive)."
    )
    end_line: int | None = Field(
        default=None, ge=1, description="Line-range replace: last line (1-based, inclusive)."
    )
    after_line: int | None = Field(
        default=None, ge=0, description="Insertion: insert after this line (0 = the very top)."
    )


#: Validates the whole ``edits`` array (a JSON list of edit objects).
EDITS_ADAPTER: TypeAdapter[list[ResourceEdit]] = TypeAdapter(list[ResourceEdit])


def edits_json_schema() -> dict[str, Any]:
    """The JSON schema of the ``edits`` array, for publishing in a tool's input schema."""
    return EDITS_ADAPTER.json_schema()


def parse(path: str, edits: object) -> Proposal:
    """Validate patch_resource ``edits`` for ``path`` into a Proposal (its format is
    ``patch_resource``)."""
    path = require_text(path, "path")
    try:
        items = EDITS_ADAPTER.validate_python(_as_list(edits))
    except ValidationError as exc:
        raise _schema_error(exc) from None
    if not items:
        raise EmptyEdits(
            "edits is empty",
            hint="Pass at least one edit: {old_string, new_string}, {start_line, end_line, "
            "new_string} or {after_line, new_string}.",
            details={"field": "edits"},
        )
    for index, item in enumerate(items):
        for name in ("old_string", "new_string"):
            value = getattr(item, name)
            if value is not None:
                require_text(value, _field((index, name)))
    ops = tuple(_to_edit(item, index) for index, item in enumerate(items))
    return Proposal(operations=(UpdateFile(path, ops),), format="patch_resource")


def _as_list(edits: object) -> object:
    """Accept a tuple (from Python callers) as the JSON array."""
    if isinstance(edits, tuple):
        return list(edits)
    return edits


def _field(loc: Sequence[int | str]) -> str:
    """``(2, "start_line")`` -> ``edits[2].start_line``."""
    out = "edits"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _schema_error(exc: ValidationError) -> InvalidArguments:
    """Turn pydantic's errors into one ``invalid_arguments`` naming each field path."""
    problems = [
        {"field": _field(err["loc"]), "message": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False)
    ]
    shown = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return InvalidArguments(
        f"edits do not match the schema: {shown}{more}",
        hint=_MODES_HINT,
        details={"field": problems[0]["field"], "errors": problems},
    )


def _semantic(
    message: str, index: int, name: str | None = None, hint: str = _MODES_HINT
) -> InvalidPatch:
    """An ``invalid_patch`` about edit ``index`` (and one of its fields)."""
    where = _field((index, name) if name else (index,))
    return InvalidPatch(f"{where}: {message}", hint=hint, details={"field": where})


def _to_edit(item: ResourceEdit, index: int) -> Edit:
    """Check one validated edit's addressing mode and build its IR edit."""
    modes = [
        name
        for name, value in (
            ("old_string", item.old_string),
            ("start_line", item.start_line),
            ("after_line", item.after_line),
        )
        if value is not None
    ]
    if len(modes) != 1:
        found = " and ".join(modes) if modes else "none of them"
        raise _semantic(
            f"exactly one of old_string, start_line or after_line is required; found {found}",
            index,
        )
    if item.replace_all and item.old_string is None:
        raise _semantic("replace_all only goes with old_string", index, "replace_all")
    if item.end_line is not None and item.start_line is None:
        raise _semantic("end_line only goes with start_line", index, "end_line")
    new = item.new_string.replace("\r\n", "\n")
    if item.old_string is not None:
        try:
            return Replace(item.old_string.replace("\r\n", "\n"), new, bool(item.replace_all))
        except InvalidPatch as exc:  # the IR refuses an empty old_string: point at the field
            raise _semantic(exc.message, index, "old_string") from None
    if item.start_line is not None:
        if item.end_line is None:
            raise _semantic("start_line requires end_line", index, "end_line")
        if item.end_line < item.start_line:
            raise _semantic(
                f"end_line {item.end_line} is before start_line {item.start_line}",
                index,
                "end_line",
                "start_line and end_line are 1-based and inclusive, so end_line >= start_line: "
                "to replace only line N give start_line N and end_line N.",
            )
        return ReplaceLines(item.start_line, item.end_line, new)
    return InsertAfter(item.after_line or 0, new)
