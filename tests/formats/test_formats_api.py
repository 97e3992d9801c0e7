"""The formats package: its public names exist, and every public function says what it does."""

from __future__ import annotations

import inspect
from types import ModuleType

import pytest

from gitpatch import formats
from gitpatch.errors import GitpatchError
from gitpatch.formats import apply_patch, patch_resource, search_replace, unified_diff

MODULES = [apply_patch, patch_resource, search_replace, unified_diff]


def test_package_reexports_the_four_parsers_and_detect() -> None:
    parsers = {"apply_patch", "patch_resource", "search_replace", "unified_diff"}
    assert set(formats.__all__) == parsers | {"detect"}
    for name in parsers:
        assert isinstance(getattr(formats, name), ModuleType)
    assert callable(formats.detect)


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_all_names_exist_and_are_documented(module: ModuleType) -> None:
    assert "parse" in module.__all__
    assert module.__doc__
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), f"{module.__name__}.{name} has no docstring"


@pytest.mark.parametrize(
    ("module", "fmt", "call"),
    [
        (
            search_replace,
            "search_replace",
            lambda: search_replace.parse("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n", "f"),
        ),
        (
            apply_patch,
            "apply_patch",
            lambda: apply_patch.parse("*** Begin Patch\n*** Delete File: f\n*** End Patch\n"),
        ),
        (
            unified_diff,
            "unified_diff",
            lambda: unified_diff.parse("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"),
        ),
        (
            patch_resource,
            "patch_resource",
            lambda: patch_resource.parse("f", [{"after_line": 0, "new_string": "x"}]),
        ),
    ],
    ids=["search_replace", "apply_patch", "unified_diff", "patch_resource"],
)
def test_each_parser_tags_its_format(module: ModuleType, fmt: str, call: object) -> None:
    proposal = call()  # type: ignore[operator]
    assert proposal.format == fmt
    assert proposal.tool == "" and proposal.message == ""


@pytest.mark.parametrize(
    "call",
    [
        lambda t: search_replace.parse(t, "f"),
        search_replace.parse,
        apply_patch.parse,
        unified_diff.parse,
        lambda t: patch_resource.parse(t, [{"after_line": 0, "new_string": "x"}]),
    ],
    ids=[
        "search_replace",
        "search_replace multi",
        "apply_patch",
        "unified_diff",
        "patch_resource path",
    ],
)
def test_lone_surrogates_are_refused(call: object) -> None:
    """JSON may carry a lone surrogate; no file can hold it, so it is refused up front."""
    with pytest.raises(GitpatchError) as info:
        call("*** Begin Patch\n\ud800")  # type: ignore[operator]
    assert info.value.code == "invalid_arguments"
    assert "lone surrogate at character 16" in info.value.message
