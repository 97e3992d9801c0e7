"""A large file's new content as its old bytes with replaced spans (``core.spliced``)."""

from __future__ import annotations

import pytest

from gitpatch.core.spliced import Spliced, as_bytes

BASE = b"0123456789abcdef"


def test_it_stands_for_the_bytes_it_makes() -> None:
    spliced = Spliced(BASE, [(0, 2, b"XY"), (5, 5, b"++"), (10, 16, b"")])
    whole = b"XY234++56789"
    assert bytes(spliced) == as_bytes(spliced) == whole
    assert len(spliced) == len(whole)
    assert spliced == whole and whole == spliced and spliced == Spliced(whole, [])
    assert spliced != BASE and spliced != whole + b"!"
    assert b"".join(spliced.chunks()) == whole
    assert hash(spliced) == hash(whole)
    assert as_bytes(whole) is whole


def test_equal_to_its_base_only_when_the_spans_keep_their_bytes() -> None:
    assert Spliced(BASE, [(3, 5, b"34")]) == BASE
    assert Spliced(BASE, [(3, 5, b"xx")]) != BASE
    # spans that shift bytes around can still give the base back: compared in full
    shifted = Spliced(b"aab", [(0, 1, b""), (2, 2, b"a")])
    assert shifted == b"aab" and bytes(shifted) == b"aab"


@pytest.mark.parametrize("spans", [[(5, 3, b"")], [(0, 4, b""), (2, 6, b"")], [(10, 20, b"")]])
def test_spans_out_of_order_or_outside_the_base_are_refused(
    spans: list[tuple[int, int, bytes]],
) -> None:
    with pytest.raises(ValueError, match="span"):
        Spliced(BASE, spans)
