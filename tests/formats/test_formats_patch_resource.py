"""patch_resource edits: each addressing mode gives its IR edit; refusals name the field path."""

from __future__ import annotations

from typing import Any

import pytest

from gitpatch.core.model import Edit, InsertAfter, Proposal, Replace, ReplaceLines, UpdateFile
from gitpatch.errors import GitpatchError
from gitpatch.formats import patch_resource
from tests.formats.formats_kit import refusal

# (id, edits, expected IR edits)
CASES: list[tuple[str, Any, list[Edit]]] = [
    ("anchored replace", [{"old_string": "a", "new_string": "b"}], [Replace("a", "b")]),
    (
        "replace_all",
        [{"old_string": "a", "new_string": "b", "replace_all": True}],
        [Replace("a", "b", replace_all=True)],
    ),
    (
        "replace_all false with a line range",
        [{"start_line": 1, "end_line": 1, "new_string": "", "replace_all": False}],
        [ReplaceLines(1, 1, "")],
    ),
    (
        "line range",
        [{"start_line": 2, "end_line": 4, "new_string": "x\n"}],
        [ReplaceLines(2, 4, "x\n")],
    ),
    (
        "insertion at top",
        [{"after_line": 0, "new_string": "## 1.3.0\n\n"}],
        [InsertAfter(0, "## 1.3.0\n\n")],
    ),
    (
        "spec example, in order",
        [
            {"old_string": "version: 1.2.0", "new_string": "version: 1.3.0"},
            {"after_line": 0, "new_string": "## 1.3.0 — latest\n\n"},
        ],
        [Replace("version: 1.2.0", "version: 1.3.0"), InsertAfter(0, "## 1.3.0 — latest\n\n")],
    ),
    (
        "nulls count as absent",
        [
            {
                "old_string": None,
                "start_line": None,
                "end_line": None,
                "after_line": 3,
                "replace_all": None,
                "new_string": "z",
            }
        ],
        [InsertAfter(3, "z")],
    ),
    (
        "CRLF in strings becomes LF",
        [{"old_string": "a\r\nb", "new_string": "c\r\n"}],
        [Replace("a\nb", "c\n")],
    ),
    ("lone CR kept", [{"old_string": "a\rb", "new_string": "c"}], [Replace("a\rb", "c")]),
    ("tuple of edits", ({"after_line": 1, "new_string": "x"},), [InsertAfter(1, "x")]),
    (
        "validated models",
        [patch_resource.ResourceEdit(after_line=1, new_string="x")],
        [InsertAfter(1, "x")],
    ),
]


@pytest.mark.parametrize(("items", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parses(items: Any, expected: list[Edit]) -> None:
    got = patch_resource.parse("docs/CHANGELOG.md", items)
    assert got == Proposal(
        (UpdateFile("docs/CHANGELOG.md", tuple(expected)),), format="patch_resource"
    )


# (id, edits, code, message fragment, field path)
ERRORS: list[tuple[str, Any, str, str, str | None]] = [
    ("empty list", [], "empty_edits", "edits is empty", "edits"),
    ("empty tuple", (), "empty_edits", "edits is empty", "edits"),
    (
        "not a list",
        {"old_string": "a", "new_string": "b"},
        "invalid_arguments",
        "edits: Input should be a valid list",
        "edits",
    ),
    ("a string", "[]", "invalid_arguments", "valid list", "edits"),
    ("null", None, "invalid_arguments", "valid list", "edits"),
    (
        "item not an object",
        [{"after_line": 0, "new_string": ""}, 3],
        "invalid_arguments",
        "edits[1]",
        "edits[1]",
    ),
    (
        "missing new_string",
        [{"old_string": "a"}],
        "invalid_arguments",
        "edits[0].new_string: Field required",
        "edits[0].new_string",
    ),
    (
        "unknown field",
        [{"old_string": "a", "new_string": "b", "path": "x"}],
        "invalid_arguments",
        "edits[0].path: Extra inputs are not permitted",
        "edits[0].path",
    ),
    (
        "string line number",
        [{"start_line": "2", "end_line": 3, "new_string": ""}],
        "invalid_arguments",
        "edits[0].start_line",
        "edits[0].start_line",
    ),
    (
        "bool line number",
        [{"after_line": True, "new_string": ""}],
        "invalid_arguments",
        "edits[0].after_line",
        "edits[0].after_line",
    ),
    (
        "float line number",
        [{"after_line": 1.0, "new_string": ""}],
        "invalid_arguments",
        "edits[0].after_line",
        "edits[0].after_line",
    ),
    (
        "start_line 0",
        [{"start_line": 0, "end_line": 1, "new_string": ""}],
        "invalid_arguments",
        "greater than or equal to 1",
        "edits[0].start_line",
    ),
    (
        "negative after_line",
        [{"after_line": -1, "new_string": ""}],
        "invalid_arguments",
        "greater than or equal to 0",
        "edits[0].after_line",
    ),
    (
        "replace_all not bool",
        [{"old_string": "a", "new_string": "", "replace_all": "yes"}],
        "invalid_arguments",
        "edits[0].replace_all",
        "edits[0].replace_all",
    ),
    (
        "new_string number",
        [{"old_string": "a", "new_string": 5}],
        "invalid_arguments",
        "edits[0].new_string",
        "edits[0].new_string",
    ),
    ("no mode", [{"new_string": "x"}], "invalid_patch", "edits[0]: exactly one of", "edits[0]"),
    (
        "two modes",
        [
            {"after_line": 0, "new_string": ""},
            {"old_string": "a", "after_line": 2, "new_string": ""},
        ],
        "invalid_patch",
        "found old_string and after_line",
        "edits[1]",
    ),
    (
        "three modes",
        [{"old_string": "a", "start_line": 1, "end_line": 1, "after_line": 1, "new_string": ""}],
        "invalid_patch",
        "old_string and start_line and after_line",
        "edits[0]",
    ),
    (
        "start without end",
        [{"start_line": 2, "new_string": ""}],
        "invalid_patch",
        "start_line requires end_line",
        "edits[0].end_line",
    ),
    (
        "end without start",
        [{"after_line": 2, "end_line": 3, "new_string": ""}],
        "invalid_patch",
        "end_line only goes with start_line",
        "edits[0].end_line",
    ),
    (
        "end before start",
        [{"start_line": 5, "end_line": 4, "new_string": ""}],
        "invalid_patch",
        "end_line 4 is before start_line 5",
        "edits[0].end_line",
    ),
    (
        "replace_all with a range",
        [{"start_line": 1, "end_line": 2, "new_string": "", "replace_all": True}],
        "invalid_patch",
        "replace_all only goes with old_string",
        "edits[0].replace_all",
    ),
    (
        "lone surrogate",
        [{"old_string": "a", "new_string": "x\ud800"}],
        "invalid_arguments",
        "not valid Unicode",
        "edits[0].new_string",
    ),
    ("generator of nothing", (x for x in ()), "empty_edits", "edits is empty", "edits"),
    (
        "empty old_string",
        [{"old_string": "", "new_string": "x"}],
        "invalid_patch",
        "old_string is empty",
        "edits[0].old_string",
    ),
]


@pytest.mark.parametrize(
    ("items", "code", "fragment", "field"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_refusals(items: Any, code: str, fragment: str, field: str | None) -> None:
    err = refusal(lambda: patch_resource.parse("notes.md", items), code, fragment)
    assert err.details.get("field") == field


def test_schema_errors_list_every_field() -> None:
    with pytest.raises(GitpatchError) as info:
        patch_resource.parse("n", [{"old_string": 1, "new_string": 2}, {"zzz": 1}])
    fields = [e["field"] for e in info.value.details["errors"]]
    assert fields == [
        "edits[0].old_string",
        "edits[0].new_string",
        "edits[1].new_string",
        "edits[1].zzz",
    ]


def test_path_must_be_a_string() -> None:
    with pytest.raises(GitpatchError) as info:
        patch_resource.parse(3, [{"after_line": 0, "new_string": ""}])  # type: ignore[arg-type]
    assert info.value.code == "invalid_arguments"


def test_json_schema_is_published() -> None:
    schema = patch_resource.edits_json_schema()
    assert schema["type"] == "array"
    item = schema["$defs"]["ResourceEdit"]
    assert item["additionalProperties"] is False
    assert item["required"] == ["new_string"]
    assert set(item["properties"]) == {
        "old_string",
        "new_string",
        "replace_all",
        "start_line",
        "end_line",
        "after_line",
    }
