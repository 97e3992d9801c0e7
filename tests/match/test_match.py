"""The matching cascade: every level, every ambiguity rule, every error, re-indentation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitpatch.core.text import Document, split_lines
from gitpatch.errors import InvalidPatch, MatchAmbiguous, MatchNotFound
from gitpatch.match import PROFILES, Level, Match, find_substring, reindent, seek
from gitpatch.match.indentation import indent_change, shift_lines

DOC = (
    "def alpha(values):",  # 1
    "    total = sum(values) + 1",  # 2
    "    return total",  # 3
    "",  # 4
    "def beta(values):",  # 5
    "    total = sum(values) + 1",  # 6
    "    return total",  # 7
    "",  # 8
    "class Reporter:",  # 9
    "    def report(self, records):",  # 10
    '        message = "it\'s done - all records were written"',  # 11
    "        if records and self.verbose:",  # 12
    "            print(message, len(records))",  # 13
    "",  # 14
    "        return message",  # 15
    "",  # 16
    "# end of module",  # 17
)


# (name, pattern, profile, level, start (0-based), end, indent, unit)
LEVELS: list[tuple[str, list[str], Any, Level, int, int, Any, Any]] = [
    ("exact", ["def alpha(values):"], "search_replace", Level.EXACT, 0, 1, None, None),
    (
        "trailing_whitespace",
        ["def beta(values):  ", "    total = sum(values) + 1\t"],
        "search_replace",
        Level.TRAILING_WHITESPACE,
        4,
        6,
        None,
        None,
    ),
    (
        "whitespace, uniform dedent recorded",
        ["def report(self, records):", '    message = "it\'s done - all records were written"'],
        "search_replace",
        Level.WHITESPACE,
        9,
        11,
        ("", "    "),
        None,
    ),
    (
        "whitespace, non-uniform indentation not recorded",
        ["def report(self, records):", 'message = "it\'s done - all records were written"'],
        "search_replace",
        Level.WHITESPACE,
        9,
        11,
        None,
        None,
    ),
    (
        "whitespace, tabs for spaces",
        ["\tdef report(self, records):", '\t\tmessage = "it\'s done - all records were written"'],
        "search_replace",
        Level.WHITESPACE,
        9,
        11,
        ("", ""),
        ("\t", "    "),
    ),
    (
        "punctuation",
        ["        message = \u201cit\u2019s done \u2013 all records were written\u201d"],
        "search_replace",
        Level.PUNCTUATION,
        10,
        11,
        None,
        None,
    ),
    (
        "punctuation, odd spaces and ellipsis",
        ["def\u00a0alpha(values):\u2002"],
        "search_replace",
        Level.PUNCTUATION,
        0,
        1,
        None,
        None,
    ),
    (
        "indentation (profile without whitespace)",
        ["  def report(self, records):", '      message = "it\'s done - all records were written"'],
        [Level.EXACT, Level.INDENTATION],
        Level.INDENTATION,
        9,
        11,
        ("", "  "),
        None,
    ),
    (
        "blank_lines, file has one more",
        ["            print(message, len(records))", "        return message"],
        "search_replace",
        Level.BLANK_LINES,
        12,
        15,
        None,
        None,
    ),
    (
        "blank_lines, pattern has one more",
        ["        if records and self.verbose:", "", "            print(message, len(records))"],
        "search_replace",
        Level.BLANK_LINES,
        11,
        13,
        None,
        None,
    ),
    (
        "fuzzy, one-character typo",
        [
            "    def report(self, records):",
            '        message = "it\'s done - all records were writen"',
            "        if records and self.verbose:",
            "            print(message, len(records))",
        ],
        "search_replace",
        Level.FUZZY,
        9,
        13,
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("pattern", "profile", "level", "start", "end", "indent", "unit"),
    [case[1:] for case in LEVELS],
    ids=[case[0] for case in LEVELS],
)
def test_each_level_finds_its_block(
    pattern: list[str],
    profile: Any,
    level: Level,
    start: int,
    end: int,
    indent: Any,
    unit: Any,
) -> None:
    found = seek(DOC, pattern, profile=profile)
    assert (found.level, found.start, found.end) == (level, start, end)
    assert (found.indent, found.unit) == (indent, unit)
    assert (found.score is not None) == (level is Level.FUZZY)


def test_levels_are_tried_in_cascade_order() -> None:
    assert [lv.value for lv in Level] == [
        "exact",
        "trailing_whitespace",
        "whitespace",
        "punctuation",
        "indentation",
        "blank_lines",
        "fuzzy",
    ]
    assert PROFILES["search_replace"] == tuple(Level)
    assert PROFILES["unified_diff"] == PROFILES["apply_patch"]
    assert PROFILES["patch_resource"] == (Level.EXACT,)
    assert Level.FUZZY not in PROFILES["apply_patch"]
    assert Level.BLANK_LINES not in PROFILES["apply_patch"]


@pytest.mark.parametrize(
    ("pattern", "profile", "expected"),
    [
        (["def beta(values):  "], "patch_resource", MatchNotFound),
        (["def beta(values):  "], "apply_patch", Level.TRAILING_WHITESPACE),
        (["            print(message, len(records))", "        return message"], "apply_patch",
         MatchNotFound),
        (LEVELS[-1][1], "apply_patch", MatchNotFound),
        (["def\u00a0alpha(values):"], "apply_patch", Level.PUNCTUATION),
    ],
)  # fmt: skip
def test_profiles_limit_the_levels(pattern: list[str], profile: str, expected: Any) -> None:
    if isinstance(expected, Level):
        assert seek(DOC, pattern, profile=profile).level is expected
    else:
        with pytest.raises(expected):
            seek(DOC, pattern, profile=profile)


TWICE = ["    total = sum(values) + 1", "    return total"]


# (name, kwargs, expected start 0-based or the error's candidate lines)
AMBIGUITY: list[tuple[str, dict[str, Any], int | list[int]]] = [
    ("no help", {}, [2, 6]),
    ("hint on the first", {"line_hint": 2}, 1),
    ("hint on the second", {"line_hint": 6}, 5),
    ("hint strictly nearer the second", {"line_hint": 5}, 5),
    ("hint equidistant", {"line_hint": 4}, [2, 6]),
    ("hint far past both", {"line_hint": 900}, 5),
    ("anchor above the second", {"anchor": "def beta"}, 5),
    ("anchor picks the first below it", {"anchor": "def alpha"}, 1),
    ("anchor as a whole line", {"anchor": "def beta(values):"}, 5),
    ("start skips the first", {"start": 2}, 5),
    ("anchor and hint together", {"anchor": "def", "line_hint": 7}, 5),
    ("anchor prefix of both defs", {"anchor": "def"}, [2, 6]),
]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [case[1:] for case in AMBIGUITY],
    ids=[case[0] for case in AMBIGUITY],
)
def test_ambiguity_rules(kwargs: dict[str, Any], expected: int | list[int]) -> None:
    if isinstance(expected, int):
        assert seek(DOC, TWICE, **kwargs).start == expected
        return
    with pytest.raises(MatchAmbiguous) as info:
        seek(DOC, TWICE, **kwargs)
    assert info.value.code == "match_ambiguous"
    assert info.value.details == {"candidates": expected, "level": "exact"}
    assert "lines 2, 6" in info.value.message and info.value.hint


def test_indentation_level_rejects_non_uniform_indentation() -> None:
    profile = [Level.EXACT, Level.INDENTATION]
    assert seek(DOC, ["    return total  ", "", "def beta(values):"], profile=profile).start == 2
    with pytest.raises(MatchNotFound):
        seek(DOC, ["        return total", "", "def beta(values):"], profile=profile)
    assert seek(DOC, ["        return total", "", "def beta(values):"]).level is Level.WHITESPACE


def test_several_at_one_level_never_fall_through() -> None:
    doc = ("x = 1 ", "y", "x = 1\t", "y", "    x = 1", "y")
    with pytest.raises(MatchAmbiguous) as info:
        seek(doc, ["x = 1", "y"])
    assert info.value.details["level"] == "trailing_whitespace"
    assert info.value.details["candidates"] == [1, 3]


def test_a_hint_never_forces_a_match() -> None:
    with pytest.raises(MatchNotFound):
        seek(DOC, ["    total = sum(values) + 2"], line_hint=2, profile="apply_patch")


def test_a_stale_hint_does_not_reject_a_unique_match() -> None:
    assert seek(DOC, ["class Reporter:"], line_hint=1).start == 8


def test_the_block_must_lie_below_the_anchor() -> None:
    with pytest.raises(MatchNotFound) as info:
        seek(DOC, ["def alpha(values):"], anchor="class Reporter", profile="apply_patch")
    assert "at or after line 10" in info.value.message


def test_a_whole_line_anchor_wins_over_prefixes() -> None:
    doc = ("def run():", "    x = 1", "def run_all():", "    x = 1", "def runner():", "    x = 1")
    assert seek(doc, ["    x = 1"], anchor="def run_all():").start == 3
    assert seek(doc, ["    x = 1"], anchor="def run():").start == 1
    with pytest.raises(MatchAmbiguous) as info:
        seek(doc, ["    x = 1"], anchor="def run")
    assert info.value.details["candidates"] == [2, 4, 6]


def test_an_anchor_that_is_not_in_the_file() -> None:
    with pytest.raises(MatchNotFound) as info:
        seek(DOC, TWICE, anchor="def gamma")
    assert info.value.details == {"anchor": "def gamma"}


@pytest.mark.parametrize(
    ("doc", "pattern", "expected"),
    [
        (("a", "b", "a", "b"), ["a", "b"], 2),
        (("a", "b", "a", "b", "", ""), ["a", "b"], 2),
        (("a", "b", "a", "b", "c"), ["a", "b"], None),
        (("a", "b"), ["a", "b"], 0),
    ],
)
def test_at_end(doc: tuple[str, ...], pattern: list[str], expected: int | None) -> None:
    if expected is None:
        with pytest.raises(MatchNotFound):
            seek(doc, pattern, at_end=True, profile="apply_patch")
    else:
        assert seek(doc, pattern, at_end=True).start == expected


@pytest.mark.parametrize(("start", "expected"), [(0, None), (1, 2), (2, 2), (3, None), (-5, None)])
def test_start(start: int, expected: int | None) -> None:
    doc = ("a", "b", "a", "b")
    if expected is not None:
        assert seek(doc, ["a", "b"], start=start).start == expected
    elif start == 3:
        with pytest.raises(MatchNotFound) as info:
            seek(doc, ["a", "b"], start=start)
        assert "at or after line 4" in info.value.message
    else:
        with pytest.raises(MatchAmbiguous):
            seek(doc, ["a", "b"], start=start)


@pytest.mark.parametrize(
    ("call", "error", "code"),
    [
        (lambda: seek(DOC, []), InvalidPatch, "invalid_patch"),
        (lambda: seek(DOC, ["x"], profile="nope"), InvalidPatch, "invalid_patch"),
        (lambda: seek(DOC, ["nowhere at all"]), MatchNotFound, "match_not_found"),
        (lambda: seek(DOC, TWICE), MatchAmbiguous, "match_ambiguous"),
        (lambda: seek((), ["x"]), MatchNotFound, "match_not_found"),
    ],
)
def test_error_codes(call: Any, error: type[Exception], code: str) -> None:
    with pytest.raises(error) as info:
        call()
    assert getattr(info.value, "code", None) == code


def test_find_substring_refuses_an_empty_needle_as_a_bug() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        find_substring("abc", "")


def test_not_found_shows_the_closest_region_with_line_numbers() -> None:
    pattern = ["def beta(values):", "    total = sum(values) + 2", "    return totals"]
    with pytest.raises(MatchNotFound) as info:
        seek(DOC, pattern, profile="apply_patch")
    err = info.value
    assert err.details["closest"]["start_line"] == 5
    assert err.details["closest"]["end_line"] == 7
    assert err.hint is not None
    assert "lines 5-7" in err.hint
    assert "-       |     total = sum(values) + 2" in err.hint
    assert "+     6 |     total = sum(values) + 1" in err.hint


def test_crlf_lines_match_lf_patterns() -> None:
    doc = Document.from_bytes(b"one\r\ntwo  \r\nthree\r\n")
    assert seek(doc.lines, split_lines("one\ntwo  \n")) == Match(0, 2, Level.EXACT)
    assert seek(doc.lines, ["two", "three"]).level is Level.TRAILING_WHITESPACE


def test_lists_and_tuples_give_the_same_answer() -> None:
    pattern = LEVELS[-1][1]
    assert seek(list(DOC), pattern) == seek(DOC, pattern)


FUZZY_BLOCK = [
    "    for record in records:",
    "        if record.status == 'failed':",
    "            errors.append(record.identifier)",
    "        else:",
    "            written += record.size_in_bytes",
]


def test_fuzzy_refuses_without_a_clear_margin() -> None:
    twin = [line.replace("record.size", "record.total_size") for line in FUZZY_BLOCK]
    doc = (*FUZZY_BLOCK, "", *twin)
    typo = [line.replace("size_in", "size_n") for line in FUZZY_BLOCK]
    typo[4] = "            written += record.sizein_bytes"
    with pytest.raises(MatchAmbiguous) as info:
        seek(doc, typo)
    assert info.value.details["level"] == "fuzzy"
    assert info.value.details["candidates"] == [1, 7]


def test_fuzzy_finds_a_typo_and_refuses_a_foreign_line() -> None:
    doc = ("import os", "", *FUZZY_BLOCK, "", "print(written)")
    typo = [*FUZZY_BLOCK]
    typo[2] = "            errors.apend(record.identifier)"
    found = seek(doc, typo)
    assert (found.start, found.end, found.level) == (2, 7, Level.FUZZY)
    assert found.score is not None and found.score >= 90
    foreign = [*FUZZY_BLOCK[:2], "            log.warning('skipping %s', record)", *FUZZY_BLOCK[2:]]
    with pytest.raises(MatchNotFound):
        seek(doc, foreign)


def test_short_blocks_are_never_matched_fuzzily() -> None:
    with pytest.raises(MatchNotFound):
        seek(("if x:", "    y = 1", "z = 2"), ["if x:", "    y = 2", "z = 2"])


@pytest.mark.parametrize(
    ("lines", "indent", "unit", "expected"),
    [
        (["a", "    b"], None, None, ["a", "    b"]),
        (["a", "    b", ""], ("", "    "), None, ["    a", "        b", ""]),
        (["    a", "        b", "  c"], ("    ", ""), None, ["a", "    b", "c"]),
        (["\ta", "\t\tb"], ("", ""), ("\t", "    "), ["    a", "        b"]),
        (["a", "    b"], ("", "\t"), ("    ", "\t"), ["\ta", "\t\tb"]),
    ],
)
def test_reindent(lines: list[str], indent: Any, unit: Any, expected: list[str]) -> None:
    assert reindent(lines, Match(0, 1, Level.WHITESPACE, indent=indent, unit=unit)) == expected
    if indent is not None:
        assert shift_lines(lines, indent, unit) == expected


@pytest.mark.parametrize(
    ("pattern", "block", "expected"),
    [
        (["a", "  b"], ["a", "  b"], (True, None, None)),
        (["a", "  b"], ["\ta", "\t  b"], (True, ("", "\t"), ("    ", "\t"))),
        (["a", "  b"], ["  a", "    b"], (True, ("", "  "), None)),
        (["    a", "", "      b"], ["a", "x", "  b"], (True, ("    ", ""), None)),
        (["a", "  b"], ["  a", "  b"], (False, None, None)),
        (["\ta", "\t\tb"], ["  a", "    b"], (True, ("", ""), ("\t", "  "))),
    ],
)
def test_indent_change(pattern: list[str], block: list[str], expected: Any) -> None:
    assert indent_change(pattern, block) == expected


@pytest.mark.parametrize(
    ("text", "needle", "expected"),
    [
        ("abc abc", "abc", [0, 4]),
        ("aaaaaaa", "aaa", [0, 3]),
        ("a\r\nb", "\nb", [2]),
        ("abc", "x", []),
    ],
)
def test_find_substring(text: str, needle: str, expected: list[int]) -> None:
    assert find_substring(text, needle) == expected


WORDS = st.sampled_from(["a = 1", "b = 2", "", "return a", "    if a:", "        b()"])


@settings(max_examples=80, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=30), st.data())
def test_exact_level_agrees_with_a_naive_search(lines: list[str], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(lines) - 1))
    size = data.draw(st.integers(1, len(lines) - start))
    block = lines[start : start + size]
    where = [i for i in range(len(lines) - size + 1) if lines[i : i + size] == block]
    try:
        found = seek(tuple(lines), block, profile="patch_resource")
    except MatchAmbiguous as exc:
        assert exc.details["candidates"] == [i + 1 for i in where]
    else:
        assert where == [found.start] and found.end == found.start + size


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.sampled_from(["x()", "if y:", "    z()", "w = [", "    1,", "]"]), min_size=2),
    st.sampled_from(["  ", "    ", "\t"]),
)
def test_a_uniformly_shifted_view_reindents_back(body: list[str], pad: str) -> None:
    doc = ("# head", *("    " + x for x in body), "# tail")
    view = ["# head", *(pad + x for x in body)]
    found = seek(doc, view[1:], start=1)
    if found.level is Level.EXACT:
        return
    assert found.indent is not None
    assert reindent(view[1:], found) == list(doc[found.start : found.end])


def test_anchor_lines_whole_line_first_then_prefix_from_start() -> None:
    from gitpatch.match import anchor_lines

    doc = ["class A:", "    def run(self):", "class AB:", "    def run(self):", "“quoted”"]
    assert anchor_lines(doc, "class A:") == [0]  # equal beats the prefix match on line 3
    assert anchor_lines(doc, "def run") == [1, 3]  # stripped prefix
    assert anchor_lines(doc, "def run", start=2) == [3]
    assert anchor_lines(doc, '"quoted"') == [4]  # typographic quotes compare as ASCII
    assert anchor_lines(doc, "missing") == []
    assert anchor_lines(doc, "   ") == []  # an empty anchor is not a prefix of every line
