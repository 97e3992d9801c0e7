"""Document: byte-exact round trips, endings, BOM, refusals."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitpatch.core.text import BOM, Document, split_lines
from gitpatch.errors import GitpatchError, NotATextResource, ResourceNotUtf8

_chunks = st.lists(
    st.one_of(
        st.text(
            alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"),
            max_size=12,
        ),
        st.sampled_from(["\n", "\r\n", "\r", "\n\n", "\r\n\r\n"]),
    ),
    max_size=30,
)
#: No per-example deadline (Hypothesis's default is 200 ms of wall time): on a loaded machine
#: a worker can wait its turn that long between two lines, and the claim here is about
#: results, not speed (the suite's other property tests say the same).
_settings = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(_chunks, st.booleans())
def test_unchanged_document_round_trips_byte_for_byte(chunks: list[str], bom: bool) -> None:
    data = (BOM if bom else b"") + "".join(chunks).encode("utf-8")
    doc = Document.from_bytes(data)
    assert doc.to_bytes() == data
    assert doc.bom is bom


@_settings
@given(_chunks)
def test_lines_never_hold_terminators(chunks: list[str]) -> None:
    doc = Document.from_text("".join(chunks))
    assert all("\n" not in line and "\r" not in line for line in doc.lines)
    assert all(e in ("\n", "\r\n", "\r") for e in doc.endings[:-1])


@pytest.mark.parametrize(
    ("data", "lines", "endings", "final"),
    [
        (b"", (), (), False),
        (b"a", ("a",), ("",), False),
        (b"a\n", ("a",), ("\n",), True),
        (b"a\r\nb", ("a", "b"), ("\r\n", ""), False),
        (b"a\rb\r", ("a", "b"), ("\r", "\r"), True),
        (b"\n", ("",), ("\n",), True),
        (b"a\r\n\nb\r\n", ("a", "", "b"), ("\r\n", "\n", "\r\n"), True),
    ],
)
def test_split(data: bytes, lines: tuple[str, ...], endings: tuple[str, ...], final: bool) -> None:
    doc = Document.from_bytes(data)
    assert doc.lines == lines
    assert doc.endings == endings
    assert doc.final_newline is final


def test_bom_is_kept_and_not_part_of_the_first_line() -> None:
    doc = Document.from_bytes(BOM + b"x = 1\n")
    assert doc.bom and doc.lines == ("x = 1",)
    assert doc.to_bytes().startswith(BOM)


def test_invalid_utf8_gives_the_byte_offset() -> None:
    with pytest.raises(ResourceNotUtf8) as err:
        Document.from_bytes(b"ok\n\xff\xfe tail")
    assert err.value.code == "resource_not_utf8"
    assert "offset 3" in err.value.message
    assert err.value.details["offset"] == 3


def test_nul_byte_means_binary() -> None:
    with pytest.raises(NotATextResource) as err:
        Document.from_bytes(b"PNG\x00\x01")
    assert err.value.code == "not_a_text_resource"


@pytest.mark.parametrize(
    ("data", "eol"),
    [(b"a\r\nb\r\nc\n", "\r\n"), (b"a\nb\r\n", "\n"), (b"x", "\n"), (b"a\rb\r", "\r")],
)
def test_dominant_ending(data: bytes, eol: str) -> None:
    assert Document.from_bytes(data).eol == eol


def test_inserted_lines_take_dominant_ending_untouched_keep_theirs() -> None:
    doc = Document.from_bytes(b"a\r\nb\r\nc\n")
    out = doc.splice(1, 2, ["B1", "B2"])
    assert out.to_bytes() == b"a\r\nB1\r\nB2\r\nc\n"


def test_splice_keeps_missing_final_newline() -> None:
    doc = Document.from_bytes(b"a\nb")
    assert doc.splice(1, 2, ["c"]).to_bytes() == b"a\nc"
    assert doc.splice(2, 2, ["c"]).to_bytes() == b"a\nb\nc"
    assert doc.splice(1, 2, []).to_bytes() == b"a"


def test_splice_keeps_final_newline() -> None:
    doc = Document.from_bytes(b"a\nb\n")
    assert doc.splice(2, 2, ["c"]).to_bytes() == b"a\nb\nc\n"
    assert doc.splice(0, 2, []).to_bytes() == b""


def test_split_lines_accepts_every_ending() -> None:
    assert split_lines("a\r\nb\rc\nd") == ["a", "b", "c", "d"]
    assert split_lines("a\n") == ["a"]


@pytest.mark.parametrize(
    ("data", "eol"),
    [(b"a\r\nb\rc\r\nd\r", "\r\n"), (b"a\rb\r\nc\n", "\n"), (b"", "\n"), (b"a\r\r\n", "\r\n")],
)
def test_dominant_ending_ties(data: bytes, eol: str) -> None:
    # \n wins any tie it is in; between \r\n and \r, \r\n wins.
    assert Document.from_bytes(data).eol == eol


def test_replace_lines_edits_several_ranges_in_one_pass() -> None:
    doc = Document.from_bytes(BOM + b"a\r\nb\r\nc\r\nd")
    out = doc.replace_lines([(0, 1, [("A", None)]), (2, 3, [("C1", None), ("C2", "\n")])])
    assert out.to_bytes() == BOM + b"A\r\nb\r\nC1\r\nC2\nd"
    # an insertion after a last line without a newline gives that line one, and keeps none
    assert doc.replace_lines([(4, 4, [("e", None)])]).to_bytes() == BOM + (b"a\r\nb\r\nc\r\nd\r\ne")
    assert doc.replace_lines([], final_newline=True).to_bytes() == BOM + b"a\r\nb\r\nc\r\nd\r\n"
    assert Document.from_text("x\n").replace_lines([], final_newline=False).text == "x"


@_settings
@given(_chunks, st.integers(0, 40), st.integers(0, 40), st.lists(st.text("xy", max_size=3)))
def test_splice_is_replace_lines_of_one_piece(
    chunks: list[str], a: int, b: int, new: list[str]
) -> None:
    doc = Document.from_text("".join(chunks))
    start, end = sorted((min(a, len(doc)), min(b, len(doc))))
    one = doc.splice(start, end, new)
    assert one == doc.replace_lines([(start, end, [(x, None) for x in new])])
    assert one.lines == doc.lines[:start] + tuple(new) + doc.lines[end:]
    if one.lines:  # the final-newline state is kept (an empty file gains lines with one)
        assert one.final_newline == (doc.final_newline or not doc.lines)


def test_text_and_encode_with_the_bom_and_refuse_what_utf8_cannot_hold() -> None:
    doc = Document.from_bytes(BOM + b"a\nb")
    assert doc.text == "a\nb" and doc.encode("z\n") == BOM + b"z\n"
    with pytest.raises(GitpatchError) as err:
        doc.encode("x\ud800", "f.txt")
    assert err.value.code == "invalid_patch" and err.value.message.startswith("f.txt: ")
    assert err.value.details == {"path": "f.txt", "offset": 1}
