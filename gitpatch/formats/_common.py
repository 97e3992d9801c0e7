"""Small helpers the parsers share: splitting edit text into lines, path keys, error building."""

from __future__ import annotations

import posixpath
from typing import Any

from gitpatch.errors import InvalidArguments, InvalidPatch

__all__ = ["invalid", "is_fence", "path_key", "require_text", "text_lines"]


def require_text(text: object, what: str) -> str:
    """Return ``text`` if it is a string that UTF-8 can encode; otherwise refuse it."""
    if not isinstance(text, str):
        raise InvalidArguments(
            f"{what} must be a string, got {type(text).__name__}",
            hint=f"Pass the {what} as one string.",
            details={"field": what},
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # JSON can carry a lone surrogate ("\\ud800"); no file could be written with it.
        raise InvalidArguments(
            f"{what} is not valid Unicode text (a lone surrogate at character {exc.start})",
            hint=f"Send the {what} as valid UTF-8 text.",
            details={"field": what, "offset": exc.start},
        ) from None
    return text


def text_lines(text: str) -> list[str]:
    """The lines of edit text without terminators; CRLF counts as one line break.

    A lone ``\\r`` stays inside its line: it is content a model may really mean, and splitting
    on it would invent line breaks the file does not have.
    """
    if not text:
        return []
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def is_fence(line: str) -> bool:
    """True for a Markdown code fence line: ```` ``` ````, ```` ```python ````, ``~~~``."""
    s = line.strip()
    if not s.startswith(("```", "~~~")):
        return False
    rest = s.lstrip(s[0]).strip()
    return not rest or rest.replace("-", "").replace("+", "").replace(".", "").isalnum()


def path_key(path: str) -> str:
    """A comparison key for a path as written: ``./a//b`` and ``a/b`` name the same file."""
    return posixpath.normpath(path.strip())


def invalid(message: str, line: int | None, hint: str, **details: Any) -> InvalidPatch:
    """An ``InvalidPatch`` whose message starts with the edit-text line number, when known."""
    where = f"line {line}: " if line else ""
    info: dict[str, Any] = dict(details)
    if line:
        info["line"] = line
    return InvalidPatch(f"{where}{message}", hint=hint, details=info)
