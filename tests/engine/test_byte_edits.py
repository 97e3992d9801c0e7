"""Replacements on bytes give the text path's result, byte for byte, or step aside."""

from __future__ import annotations

import random

import pytest

from gitpatch.core.model import Edit, Replace, ReplaceLines
from gitpatch.core.text import Document
from gitpatch.engine.byte_edits import replace_on_bytes
from gitpatch.engine.text_edits import apply_text_edits
from gitpatch.errors import GitpatchError

WORDS = ["alpha", "beta", "é", "日本", "x", " ", "(", ")", "δ", "return", "🙂"]


def _text(rng: random.Random) -> str:
    lines = [
        "".join(rng.choice(WORDS) for _ in range(rng.randint(0, 5)))
        for _ in range(rng.randint(1, 30))
    ]
    return "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")


def _edit(rng: random.Random, text: str) -> Replace:
    start = rng.randrange(len(text))
    old = text[start : start + rng.randint(1, 12)]
    new = "".join(rng.choice(WORDS + ["\n"]) for _ in range(rng.randint(0, 4)))
    return Replace(old, new, replace_all=rng.random() < 0.3)


def _slow(data: bytes, edits: list[Edit]) -> tuple[bytes, list[object]] | str:
    try:
        content, reports = apply_text_edits("f.txt", Document.from_bytes(data), edits)
    except GitpatchError as exc:
        return exc.code
    return content, list(reports)


@pytest.mark.parametrize("seed", range(6))
def test_random_replacements_match_the_text_path(seed: int) -> None:
    rng = random.Random(seed)
    used = 0
    for _ in range(300):
        text = _text(rng)
        if not text.strip("\n"):
            continue
        data = text.encode()
        edits: list[Edit] = [_edit(rng, text) for _ in range(rng.randint(1, 3))]
        fast = replace_on_bytes("f.txt", data, edits)
        if fast is None:
            continue
        used += 1
        content, reports = fast
        assert _slow(data, edits) == (content, reports), (text, edits)
    assert used > 100  # the byte path is the common case, not a rarity


def test_a_large_file_edit_is_made_on_bytes() -> None:
    data = b"".join(b"line %d\n" % n for n in range(200_000))
    fast = replace_on_bytes("big.txt", data, [Replace("line 1000\n", "changed\n")])
    assert fast is not None
    content, reports = fast
    assert content == data.replace(b"line 1000\n", b"changed\n")
    assert (reports[0].start_line, reports[0].end_line) == (1001, 1001)


@pytest.mark.parametrize(
    ("data", "edits"),
    [
        (b"a\r\nb\r\n", [Replace("a", "A")]),  # CRLF file: line-ending rules
        (b"\xef\xbb\xbfa\nb\n", [Replace("a", "A")]),  # BOM
        (b"a\nb", [Replace("b", "B")]),  # reaches the end: final-newline rule
        (b"a\nb\n", [Replace("b\n", "B\n")]),
        (b"a\na\n", [Replace("a", "A")]),  # ambiguous: the text path reports it
        (b"a\nb\n", [Replace("zzz", "A")]),  # not found: the text path's hint
        (b"a\xff\nb\n", [Replace("a", "A")]),  # not UTF-8
        (b"a\x00\nb\n", [Replace("a", "A")]),  # binary
        (b"a\nb\n", [Replace("a", "A\r\n")]),  # CR in the edit
        (b"a\nb\n", [Replace("a", "\ud800")]),  # cannot be UTF-8
        (b"a\nb\n", [ReplaceLines(1, 1, "A\n")]),  # not a Replace
    ],
)
def test_anything_else_is_left_to_the_text_path(data: bytes, edits: list[Edit]) -> None:
    assert replace_on_bytes("f.txt", data, edits) is None


def test_the_engine_takes_the_byte_path_for_patch_resource(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gitpatch import engine
    from gitpatch.core.model import Proposal, UpdateFile

    def no_document(*_args: object, **_kw: object) -> Document:
        raise AssertionError("the line model was built")

    monkeypatch.setattr(engine.Document, "from_bytes", no_document)
    op = UpdateFile(path="f.txt", edits=(Replace("b\n", "B\n"),))
    proposal = Proposal(operations=(op,), format="patch_resource", tool="test")
    changeset = engine.apply(proposal, {"f.txt": b"a\nb\nc\n"})
    assert changeset.changes[0].content == b"a\nB\nc\n"


def test_a_large_file_s_new_content_shares_the_old_bytes() -> None:
    from gitpatch.core.spliced import LARGE, Spliced

    data = b"".join(b"line %d\n" % n for n in range(200_000))
    assert len(data) >= LARGE
    fast = replace_on_bytes("big.txt", data, [Replace("line 7\n", "seven\n", replace_all=True)])
    assert fast is not None and isinstance(fast[0], Spliced)
    assert fast[0].base is data  # the old file is not copied
    assert fast[0] == data.replace(b"line 7\n", b"seven\n")
    # several edits: the last one is spliced onto the result of the others
    two = replace_on_bytes(
        "big.txt", data, [Replace("line 1\n", "one\n"), Replace("line 2\n", "2\n")]
    )
    assert two is not None and isinstance(two[0], Spliced)
    assert two[0] == data.replace(b"line 1\n", b"one\n", 1).replace(b"line 2\n", b"2\n", 1)
    small = replace_on_bytes("f.txt", b"a\nb\nc\n", [Replace("b\n", "B\n")])
    assert small is not None and small[0] == b"a\nB\nc\n" and isinstance(small[0], bytes)


def test_a_large_file_edit_that_changes_nothing_is_refused() -> None:
    from gitpatch import engine
    from gitpatch.core.model import Proposal, UpdateFile

    data = b"".join(b"line %d\n" % n for n in range(200_000))
    op = UpdateFile(path="big.txt", edits=(Replace("line 5\n", "line 5\n"),))
    with pytest.raises(GitpatchError) as caught:
        engine.apply(Proposal(operations=(op,), format="patch_resource"), {"big.txt": data})
    assert caught.value.code == "no_change"
