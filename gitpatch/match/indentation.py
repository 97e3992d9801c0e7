"""Indentation differences between an agent's view of a block and the file's block.

Agents often re-indent what they quote: shifted by a level, dedented to column 0, or with tabs
where the file has spaces. ``indent_change`` finds the ONE uniform change that maps the pattern's
indentation onto the file's (a prefix swap, optionally after swapping indentation units), and
``shift_lines`` applies the same change to replacement lines so they land in the file's columns.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["indent_change", "shift_lines"]


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _convert_units(ws: str, src: str, dst: str) -> str:
    count = 0
    while ws.startswith(src, count * len(src)):
        count += 1
    return dst * count + ws[count * len(src) :]


def _prefix_change(pws: list[str], fws: list[str]) -> tuple[str, str] | None:
    """The one ``(P, F)`` with ``p == P + r`` and ``f == F + r`` for every pair, if any."""
    k = min(range(len(pws)), key=lambda i: len(pws[i]))
    p0, f0 = pws[k], fws[k]
    common = 0
    while common < min(len(p0), len(f0)) and p0[-1 - common] == f0[-1 - common]:
        common += 1
    big_p, big_f = p0[: len(p0) - common], f0[: len(f0) - common]
    for p, f in zip(pws, fws, strict=True):
        if not (p.startswith(big_p) and f.startswith(big_f)) or p[len(big_p) :] != f[len(big_f) :]:
            return None
    return big_p, big_f


def _unit_swaps(pws: list[str], fws: list[str]) -> list[tuple[str, str]]:
    p_chars, f_chars = set("".join(pws)), set("".join(fws))
    if p_chars <= {" "} and "\t" in f_chars:
        return [(" " * w, "\t") for w in (4, 8, 2)]
    if "\t" in p_chars and f_chars <= {" "}:
        return [("\t", " " * w) for w in (4, 8, 2)]
    return []


def indent_change(
    pattern: Sequence[str], block: Sequence[str]
) -> tuple[bool, tuple[str, str] | None, tuple[str, str] | None]:
    """Compare the indentation of aligned non-blank line pairs.

    Returns ``(uniform, indent, unit)``: ``uniform`` is False when no single indentation change
    maps the pattern onto the block; ``indent``/``unit`` describe the change (None when none).
    """
    pairs = [(p, f) for p, f in zip(pattern, block, strict=True) if p.strip() and f.strip()]
    pws = [_leading(p) for p, _ in pairs]
    fws = [_leading(f) for _, f in pairs]
    if pws == fws:
        return True, None, None
    # When one side indents with tabs and the other with spaces, a unit swap is the truthful
    # reading even if a bare prefix swap also fits (it would fit only a single-level block and
    # then mis-indent any deeper replacement line).
    best: tuple[tuple[str, str], tuple[str, str]] | None = None
    for unit in _unit_swaps(pws, fws):
        got = _prefix_change([_convert_units(w, *unit) for w in pws], fws)
        if got is not None and (best is None or len(got[0] + got[1]) < len("".join(best[0]))):
            best = (got, unit)
    if best is not None:
        return True, best[0], best[1]
    found = _prefix_change(pws, fws)
    if found is not None:
        return True, found, None
    return False, None, None


def shift_lines(
    lines: Sequence[str], indent: tuple[str, str], unit: tuple[str, str] | None = None
) -> list[str]:
    """Apply the change ``indent`` = ``(pattern_prefix, file_prefix)`` (after ``unit``) to lines."""
    big_p, big_f = indent
    out = []
    for line in lines:
        if not line.strip():
            out.append(line)
            continue
        ws = _leading(line)
        body = line[len(ws) :]
        if unit is not None:
            ws = _convert_units(ws, *unit)
        if ws.startswith(big_p):
            ws = big_f + ws[len(big_p) :]
        elif len(set(big_p + big_f + ws)) == 1:
            # A line dedented past the pattern's base: shift it by the same number of columns.
            ws = ws[:1] * max(0, len(ws) - len(big_p) + len(big_f))
        out.append(ws + body)
    return out
