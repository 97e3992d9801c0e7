"""A deterministic corpus of realistic agent edits, built from the Python standard library.

Each case takes a block that is unique in a real file, makes an intended change to it, and then
damages the agent's VIEW of the old text the way models do. The expected outcome is computed here,
without gitpatch: the exact bytes of the file with the intended change, or ``None`` when the only
right answer is a refusal (the block is not unique, or the agent quotes a line the file lacks).

The agent writes its new text by editing its damaged view, as models do: lines it quotes
unchanged carry the damage into the new text, so a correct application keeps the file's own
version of them. The line it edits is left undamaged (so its right bytes are unambiguous), except
for re-indentation, which shifts every line and must be undone by ``reindent``. Expected bytes
for an edited line are the file's line with the same edit, in the file's indentation.

Kinds: ``exact``, ``trailing_spaces``, ``indent_shift`` (2, 4, 8 spaces or a tab added),
``dedent`` (to column 0), ``tabs`` (4 spaces to a tab), ``typographic`` (curly quotes, en/em
dashes, ellipsis), ``blank_dropped``, ``blank_added``, ``typo`` (one character in a block of at
least 5 lines and 120 characters), ``crlf`` and ``bom`` (the file's encoding differs from the
view), ``blank_gap`` (the view drops a blank line between two lines, and the new text adds a
comment there with a blank line on one side of it: that blank line is the file's, not a second
one) and ``indented_elision`` (the view replaces a run of unchanged lines inside the block by a
``...`` line indented like them, in the old and the new text) are recoverable; ``not_unique``
(the block occurs twice), ``twin_reindented`` (the file has the block at two indentations and
the view, re-indented, equals neither) and ``foreign_line`` (the view has a line the file
lacks) must be refused. Cases are plain data, so they run through the matcher directly or
through any edit format.
"""

from __future__ import annotations

import random
import re
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["KINDS", "RECOVERABLE", "REFUSALS", "Case", "generate", "make_case", "source_files"]

#: Damage kinds whose right outcome is the intended change.
RECOVERABLE = (
    "exact",
    "trailing_spaces",
    "indent_shift",
    "dedent",
    "tabs",
    "typographic",
    "blank_dropped",
    "blank_added",
    "typo",
    "crlf",
    "bom",
    "blank_gap",
    "indented_elision",
)
#: Damage kinds whose right outcome is a refusal.
REFUSALS = ("not_unique", "twin_reindented", "foreign_line")
KINDS = RECOVERABLE + REFUSALS

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Case:
    """One edit: the file's bytes, the agent's old and new text, and the right outcome.

    ``old`` and ``new`` are lines joined by ``\\n`` with no final newline. ``expected`` is the
    file's bytes after the intended change, or ``None`` when the edit must be refused. ``line`` is
    the 1-based first line of the intended block (0 for refusals).
    """

    kind: str
    name: str
    data: bytes
    old: str
    new: str
    expected: bytes | None
    line: int = 0


@lru_cache(maxsize=1)
def source_files() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(name, LF lines) of the standard library's top-level modules, sorted by name."""
    out = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "\r" in text or "\ufeff" in text or not 40 <= text.count("\n") <= 4000:
            continue
        out.append((path.name, tuple(text.split("\n"))))
    return tuple(out)


_PUNCT = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
)


def _key(line: str) -> str:
    return line.translate(_PUNCT).strip()


@lru_cache(maxsize=256)
def _keys(lines: tuple[str, ...], skip_blank: bool) -> tuple[str, ...]:
    return tuple(_key(x) for x in lines if x.strip() or not skip_blank)


def _count(lines: tuple[str, ...], block: list[str], skip_blank: bool) -> int:
    """Occurrences of ``block`` in ``lines`` under stripped comparison (optionally blank-blind)."""
    keys = _keys(lines, skip_blank)
    want = tuple(_key(x) for x in block if x.strip() or not skip_blank)
    n = len(want)
    return sum(
        1 for i in range(len(keys) - n + 1) if keys[i] == want[0] and keys[i : i + n] == want
    )


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _pick(
    rng: random.Random,
    lines: tuple[str, ...],
    sizes: tuple[int, int],
    accept: Callable[[list[str]], bool],
) -> tuple[int, int] | None:
    """``(start, end)`` of a block unique in the file (even blank-blind) that ``accept`` likes."""
    real = len(lines) - 1  # the split of a file ending in "\n" leaves a final ""
    for _ in range(60):
        k = rng.randint(*sizes)
        s = rng.randrange(0, max(1, real - k))
        block = list(lines[s : s + k])
        if len(block) < k or not block[0].strip() or not block[-1].strip():
            continue
        if sum(1 for x in block if x.strip()) < 2 or not accept(block):
            continue
        if _count(lines, block, False) == 1 and _count(lines, block, True) == 1:
            return s, s + k
    return None


@dataclass(frozen=True)
class _Change:
    """The intended edit: ``mode`` applied to line ``line`` of the block."""

    line: int
    mode: int
    number: int


def _plan(rng: random.Random, block: list[str], avoid: Callable[[int], bool]) -> _Change:
    """Choose the edit: a non-blank line (preferably one ``avoid`` does not reject) and a mode."""
    nonblank = [i for i, x in enumerate(block) if x.strip()]
    c = rng.choice([i for i in nonblank if not avoid(i)] or nonblank)
    mode = rng.randrange(4)
    if mode == 2 and not 0 < c < len(block) - 1:
        mode = 0  # a block keeps non-blank first and last lines
    return _Change(c, mode, rng.randrange(1000))


def _apply(lines: list[str], at: int, change: _Change) -> list[str]:
    """Make ``change`` to ``lines`` at index ``at`` (the block itself, or the agent's view)."""
    out = list(lines)
    line = lines[at]
    if change.mode == 0:
        out[at] = line + "  # edited"
    elif change.mode == 1:
        out.insert(at + 1, f"{_indent(line)}edited_{change.number} = {change.number % 7}")
    elif change.mode == 2:
        del out[at]
    else:
        out[at] = re.sub(r"[A-Za-z_]\w*", lambda m: m.group(0) + "_v2", line, count=1)
        if out[at] == line:
            out[at] = line + "  # edited"
    return out


def _min_indent(block: list[str]) -> str:
    return min((_indent(x) for x in block if x.strip()), key=len)


def _typographic(text: str) -> str:
    out = []
    quote = 0
    for ch in text:
        if ch in "'\"":
            quote += 1
            pair = "\u2018\u2019" if ch == "'" else "\u201c\u201d"
            out.append(pair[quote % 2 == 0])
        else:
            out.append(ch)
    return "".join(out).replace(" - ", " \u2013 ").replace("--", "\u2014").replace("...", "\u2026")


def _typo(rng: random.Random, line: str) -> str:
    ws = len(_indent(line))
    p = rng.randrange(ws, len(line) - 1)
    op = rng.randrange(3)
    if op == 0:
        got = line[:p] + ("x" if line[p] != "x" else "y") + line[p + 1 :]
    elif op == 1:
        got = line[:p] + line[p + 1 :]
    else:
        got = line[:p] + line[p + 1] + line[p] + line[p + 2 :]
    return got if got != line else line + "x"


def _has_quote(block: list[str]) -> bool:
    return any(c in "'\"" for x in block for c in x) or any(
        " - " in x or "--" in x or "..." in x for x in block
    )


def _interior_blank(block: list[str]) -> bool:
    return any(not x.strip() for x in block[1:-1])


_ACCEPT: dict[str, Callable[[list[str]], bool]] = {
    "dedent": lambda b: len(_min_indent(b)) > 0,
    "tabs": lambda b: any(_indent(x).startswith("    ") for x in b),
    "typographic": _has_quote,
    "blank_dropped": _interior_blank,
    "blank_added": lambda b: any(x.strip() and y.strip() for x, y in zip(b, b[1:], strict=False)),
    "typo": lambda b: sum(1 for x in b if x.strip()) >= 5 and sum(len(x.strip()) for x in b) >= 120,
}


def _tabify(line: str) -> str:
    ws = _indent(line)
    return ws.replace("    ", "\t") + line[len(ws) :]


_TRAILING = (" ", "  ", "\t", "    ")


def _shift(kind: str, rng: random.Random, block: list[str]) -> Callable[[str], str]:
    """The re-indentation an agent applies to every line it quotes or writes."""
    if kind == "indent_shift":
        pad = rng.choice(["    ", "  ", "\t", "        "])
        return lambda x: pad + x if x.strip() else x
    if kind == "dedent":
        m = len(_min_indent(block))
        return lambda x: x[min(m, len(_indent(x))) :]
    if kind == "tabs":
        return _tabify
    return lambda x: x


def _view(kind: str, rng: random.Random, block: list[str], keep: int) -> tuple[list[str], int]:
    """The agent's view of ``block``, and where block line ``keep`` (left undamaged) sits in it.

    Re-indentation hits every line; the other damage spares line ``keep``, the one the agent
    edits, so the right bytes for the edited line are unambiguous.
    """
    shift = _shift(kind, rng, block)
    view = [shift(x) for x in block]
    others = [i for i, x in enumerate(block) if x.strip() and i != keep]
    if kind == "trailing_spaces" and others:
        first = others.pop(0)
        for i in [first, *(i for i in others if rng.random() < 0.5)]:
            view[i] += rng.choice(_TRAILING)
    elif kind == "typographic":
        view = [x if i == keep else _typographic(x) for i, x in enumerate(view)]
    elif kind == "typo":
        i = rng.choice([i for i in others if len(block[i].strip()) >= 8] or others)
        view[i] = _typo(rng, view[i])
    elif kind == "blank_dropped":
        drop = rng.choice([i for i in range(1, len(block) - 1) if not block[i].strip()])
        return view[:drop] + view[drop + 1 :], keep - (drop < keep)
    elif kind == "blank_added":
        spots = [i for i in range(len(block) - 1) if block[i].strip() and block[i + 1].strip()]
        at = rng.choice(spots) + 1
        return [*view[:at], "", *view[at:]], keep + (at <= keep)
    return view, keep


def _encode(kind: str, text: str) -> bytes:
    if kind == "crlf":
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8")
    return BOM + data if kind == "bom" else data


def _typographic_elsewhere(block: list[str]) -> Callable[[int], bool]:
    """Reject an edited line when it is the only one typography would change."""
    changed = {i for i, x in enumerate(block) if _typographic(x) != x}
    return lambda i: not changed - {i}


def _recoverable(kind: str, rng: random.Random) -> Case | None:
    name, lines = rng.choice(source_files())
    sizes = (6, 14) if kind == "typo" else (3, 10)
    found = _pick(rng, lines, sizes, _ACCEPT.get(kind, lambda b: True))
    if found is None:
        return None
    s, e = found
    block = list(lines[s:e])
    avoid = _typographic_elsewhere(block) if kind == "typographic" else (lambda i: False)
    change = _plan(rng, block, avoid)
    view, at = _view(kind, rng, block, change.line)
    expected = "\n".join([*lines[:s], *_apply(block, change.line, change), *lines[e:]])
    return Case(
        kind=kind,
        name=f"{kind}:{name}:{s + 1}",
        data=_encode(kind, "\n".join(lines)),
        old="\n".join(view),
        new="\n".join(_apply(view, at, change)),
        expected=_encode(kind, expected),
        line=s + 1,
    )


def _twins(
    lines: tuple[str, ...], k: int, key: Callable[[str], str]
) -> dict[tuple[str, ...], list[tuple[str, ...]]]:
    """k-line blocks of substantial lines, grouped by ``key`` of their lines."""
    seen: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for i in range(len(lines) - k):
        block = lines[i : i + k]
        if all(x.strip() for x in block) and sum(len(x.strip()) for x in block) >= 20:
            seen.setdefault(tuple(map(key, block)), []).append(block)
    return seen


def _not_unique(rng: random.Random, reindented: bool) -> Case | None:
    """A block the file has twice (exactly, or at two indentations with a view matching neither)."""
    name, lines = rng.choice(source_files())
    seen = _twins(lines, rng.randint(2, 4), str.strip if reindented else str)
    if reindented:
        groups = sorted(blocks for blocks in seen.values() if len(set(blocks)) > 1)
    else:
        groups = sorted(blocks for blocks in seen.values() if len(blocks) > 1)
    if not groups:
        return None
    chosen = list(rng.choice(groups)[0])
    kind = "twin_reindented" if reindented else "not_unique"
    view = chosen
    if reindented:
        m = len(_min_indent(chosen))
        for pad in ("  ", "   ", "     "):
            view = [pad + x[m:] for x in chosen]
            if tuple(view) not in seen.get(tuple(map(str.strip, chosen)), []):
                break
    change = _plan(rng, view, lambda i: False)
    return Case(
        kind=kind,
        name=f"{kind}:{name}",
        data=_encode("", "\n".join(lines)),
        old="\n".join(view),
        new="\n".join(_apply(view, change.line, change)),
        expected=None,
    )


_NAMES = ("total", "buffer", "handler", "retries", "payload", "cursor", "offset", "registry")
_CALLS = ("compute", "fetch_all", "normalize", "resolve_path", "load_table", "merge_into")


def _foreign_line(rng: random.Random) -> Case | None:
    name, lines = rng.choice(source_files())
    found = _pick(rng, lines, (3, 10), lambda b: True)
    if found is None:
        return None
    s, e = found
    block = list(lines[s:e])
    present = set(_keys(lines, True))
    at = rng.randrange(len(block) + 1)
    ws = _indent(block[min(at, len(block) - 1)])
    while True:
        call = f"{rng.choice(_CALLS)}(self, {rng.randrange(9)})"
        fake = f"{rng.choice(_NAMES)}_{rng.randrange(100)} = {call}"
        if fake not in present:
            break
    old = [*block[:at], ws + fake, *block[at:]]
    change = _plan(rng, block, lambda i: False)
    return Case(
        kind="foreign_line",
        name=f"foreign_line:{name}:{s + 1}",
        data=_encode("", "\n".join(lines)),
        old="\n".join(old),
        new="\n".join(_apply(old, change.line + (at <= change.line), change)),
        expected=None,
    )


def _single_blank(block: list[str]) -> list[int]:
    """Interior blank lines of ``block`` with a non-blank line on each side."""
    return [
        i
        for i in range(1, len(block) - 1)
        if not block[i].strip() and block[i - 1].strip() and block[i + 1].strip()
    ]


def _blank_gap(rng: random.Random) -> Case | None:
    """The view drops a blank line; the new text adds a comment there, with a blank line on the
    side away from the line the comment belongs to (above or below)."""
    name, lines = rng.choice(source_files())
    found = _pick(rng, lines, (3, 10), lambda b: bool(_single_blank(b)))
    if found is None:
        return None
    s, e = found
    block = list(lines[s:e])
    d = rng.choice(_single_blank(block))
    view = block[:d] + block[d + 1 :]
    below = rng.random() < 0.5
    note = f"{_indent(block[d + 1] if below else block[d - 1])}# note {rng.randrange(1000)}"
    added = ["", note] if below else [note, ""]
    after = block[: d + 1] + [note] + block[d + 1 :] if below else block[:d] + [note] + block[d:]
    return Case(
        kind="blank_gap",
        name=f"blank_gap:{name}:{s + 1}",
        data=_encode("", "\n".join(lines)),
        old="\n".join(view),
        new="\n".join(view[:d] + added + view[d:]),
        expected=_encode("", "\n".join([*lines[:s], *after, *lines[e:]])),
        line=s + 1,
    )


def _elidable(block: list[str]) -> bool:
    return len(block) >= 5 and all(x.strip() != "..." for x in block)


def _indented_elision(rng: random.Random) -> Case | None:
    """The view replaces 1-4 unchanged lines inside the block by an indented ``...`` line (in the
    old and the new text alike); the agent edits a line outside them."""
    name, lines = rng.choice(source_files())
    found = _pick(rng, lines, (5, 12), _elidable)
    if found is None:
        return None
    s, e = found
    block = list(lines[s:e])
    a = rng.randrange(1, len(block) - 2)
    b = min(len(block) - 1, a + rng.randint(1, 4))
    if not any(x.strip() for x in block[a:b]):
        return None
    ws = _indent(block[a]) if block[a].strip() else _min_indent(block[a:b])
    if not ws:
        return None  # a column-0 '...' is the parser's plain elision, not this kind
    outside = [i for i in range(len(block)) if not a <= i < b]
    change = _plan(rng, [block[i] for i in outside], lambda i: False)
    c = outside[change.line]
    view = [*block[:a], ws + "...", *block[b:]]
    at = c if c < a else c - (b - a) + 1
    expected = "\n".join([*lines[:s], *_apply(block, c, change), *lines[e:]])
    return Case(
        kind="indented_elision",
        name=f"indented_elision:{name}:{s + 1}",
        data=_encode("", "\n".join(lines)),
        old="\n".join(view),
        new="\n".join(_apply(view, at, change)),
        expected=_encode("", expected),
        line=s + 1,
    )


_SPECIAL: dict[str, Callable[[random.Random], Case | None]] = {
    "not_unique": lambda rng: _not_unique(rng, False),
    "twin_reindented": lambda rng: _not_unique(rng, True),
    "foreign_line": _foreign_line,
    "blank_gap": _blank_gap,
    "indented_elision": _indented_elision,
}


def make_case(kind: str, rng: random.Random) -> Case:
    """One case of ``kind``, drawn with ``rng`` (retrying other files when one has no fit)."""
    for _ in range(50):
        special = _SPECIAL.get(kind)
        case = special(rng) if special is not None else _recoverable(kind, rng)
        if case is not None:
            return case
    raise RuntimeError(f"no {kind} case could be drawn")


def generate(per_kind: int, seed: int = 0, kinds: tuple[str, ...] = KINDS) -> list[Case]:
    """``per_kind`` cases of each kind; case i of a kind is the same whatever ``per_kind`` is."""
    return [
        make_case(kind, random.Random(f"{seed}/{kind}/{i}"))
        for kind in kinds
        for i in range(per_kind)
    ]
