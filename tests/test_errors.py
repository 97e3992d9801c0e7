"""The error tree: stable codes, the spec's codes present, one class per code."""

from __future__ import annotations

import pytest

from gitpatch import errors
from gitpatch.errors import CODES, GitpatchError, error_for_code

SPEC_CODES = {
    "invalid_patch",
    "resource_not_found",
    "not_a_text_resource",
    "resource_conflict",
    "payload_too_large",
    "storage_limit_reached",
    "team_not_found",
    "forbidden",
    "personal_cannot_address_team",
    "no_personal_space",
    "resource_not_utf8",
    "empty_edits",
    "invalid_arguments",
    "internal_error",
}
MATCH_CODES = {"match_not_found", "match_ambiguous", "edit_overlap", "no_change"}


def test_every_spec_and_matching_code_exists() -> None:
    assert SPEC_CODES | MATCH_CODES <= CODES


@pytest.mark.parametrize("code", sorted(CODES))
def test_error_for_code_builds_the_owning_class(code: str) -> None:
    err = error_for_code(code, "msg", "hint", {"k": 1})
    assert isinstance(err, GitpatchError)
    assert err.code == code
    assert err.to_dict() == {"code": code, "message": "msg", "hint": "hint", "details": {"k": 1}}


def test_codes_are_stable_lowercase_words() -> None:
    for code in CODES:
        assert code == code.lower() and " " not in code


def test_unknown_code_is_internal() -> None:
    assert isinstance(error_for_code("nope", "x"), errors.InternalError)


def test_base_takes_code_first() -> None:
    err = GitpatchError("custom_code", "it failed", hint="do this")
    assert err.code == "custom_code" and "do this" in str(err)


def test_all_is_complete() -> None:
    public = {
        n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, GitpatchError)
    }
    assert public - {"_Coded"} <= set(errors.__all__)


GROUPS = [
    errors.InvalidInput,
    errors.MatchError,
    errors.ResourceError,
    errors.LimitExceeded,
    errors.AccessDenied,
    errors.StateError,
]


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: g.__name__)
def test_a_group_class_cannot_be_raised(group: type[errors.GitpatchError]) -> None:
    with pytest.raises(TypeError, match="raise a leaf class"):
        group("x")  # type: ignore[call-arg]
    # and no code resolves to a group: each code belongs to exactly one leaf
    assert all(type(error_for_code(code, "m")) not in GROUPS for code in CODES)


def test_every_leaf_class_has_a_one_line_docstring() -> None:
    leaves = {type(error_for_code(code, "m")) for code in CODES}
    assert len(leaves) == len(CODES)
    for leaf in leaves:
        doc = leaf.__dict__.get("__doc__") or ""
        assert doc.strip(), leaf.__name__
        assert len(doc.strip().splitlines()[0]) <= 100, leaf.__name__


def test_concurrent_update_says_why() -> None:
    locked = errors.ConcurrentUpdate("busy", reason="locked")
    assert locked.reason == "locked" and locked.details == {"reason": "locked"}
    assert errors.ConcurrentUpdate("moved").reason == "changed"
    assert errors.ConcurrentUpdate("x", details={"reason": "disk"}).reason == "disk"
    with pytest.raises(ValueError, match="unknown"):
        errors.ConcurrentUpdate("x", reason="sideways")  # type: ignore[arg-type]
