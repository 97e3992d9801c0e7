"""Helpers shared by the format parser tests: hunk lines and the refusal checks of their tables."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gitpatch.core.model import HunkLine
from gitpatch.errors import GitpatchError


def hl(*specs: str) -> tuple[HunkLine, ...]:
    """Hunk lines from their patch spelling: ``" ctx"``, ``"-old"``, ``"+new"``."""
    return tuple(HunkLine(s[0], s[1:]) for s in specs)  # type: ignore[arg-type]


def refusal(parse: Callable[[], object], code: str, fragment: str) -> GitpatchError:
    """The error ``parse`` raises, checked for ``code``, ``fragment`` in its message, a hint."""
    with pytest.raises(GitpatchError) as info:
        parse()
    err = info.value
    assert err.code == code
    assert fragment in err.message
    assert err.hint
    return err


def assert_refused_at(
    parse: Callable[[], object], code: str, fragment: str, line: int | None
) -> None:
    """``parse`` is refused as ``refusal`` checks, naming ``line`` in details and message."""
    err = refusal(parse, code, fragment)
    assert err.details.get("line") == line
    if line is not None:
        assert err.message.startswith(f"line {line}: ")
