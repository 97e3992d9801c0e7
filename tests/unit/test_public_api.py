"""The package's public surface: __all__ is complete and importable, the demo runs."""

from __future__ import annotations

import subprocess
import sys

import gitpatch


def test_all_names_resolve() -> None:
    for name in gitpatch.__all__:
        assert hasattr(gitpatch, name), name


def test_public_names_are_exactly_these() -> None:
    # Adding or dropping a public name is an API change: do it here on purpose, not by accident.
    assert sorted(gitpatch.__all__) == [
        "Changeset",
        "EditResult",
        "FileResult",
        "GitpatchError",
        "LogEntry",
        "Proposal",
        "ProposalDetail",
        "ProposalInfo",
        "ProposalResult",
        "ReadResult",
        "Workspace",
        "__version__",
    ]


def test_workspace_and_error_are_exported() -> None:
    assert {"Workspace", "GitpatchError"} <= set(gitpatch.__all__)
    assert issubclass(gitpatch.GitpatchError, Exception)


def test_demo_places_refuses_and_lands() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gitpatch.demo"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "at level punctuation" in text
    assert "refused [match_ambiguous]" in text
    assert "refused [match_not_found]" in text
    assert "CHANGES.md now on disk: 'Summary now counts items.'" in text
    assert "status approved" in text
    assert "git fsck: clean" in text


def test_result_schemas_list_the_matching_levels() -> None:
    from gitpatch.match import Level

    schema = gitpatch.ProposalResult.model_json_schema()
    assert schema["$defs"]["Level"]["enum"] == [level.value for level in Level]
    edit = gitpatch.EditResult(path="a", index=0, start_line=1, end_line=1, level="fuzzy")
    assert edit.level is Level.FUZZY and edit.model_dump(mode="json")["level"] == "fuzzy"
