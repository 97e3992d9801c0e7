"""A deterministic corpus of realistic agent edits, built from the Python standard library.

Each case takes a block that is unique in a real file, makes an intended change to it, and then
damages the agent's VIEW of the old text the way models do. The expected outcome is computed here,
without gitpatch: the exact bytes of the file with the intended change, or ``None`` when the only
right answer is a refusal (the block is not unique, or the agent quotes a line the file lacks).

Damage applies to the old text only, except re-indentation, which the agent applies to both old
and new text (it writes the replacement in the frame it sees; ``reindent`` must undo that).
Cases are plain data so they can be run through the matcher directly or through any edit format.
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
)
#: Damage kinds whose right outcome is a refusal.
REFUSALS = ("not_unique", "foreign_line")
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


def _change(rng: random.Random, block: list[str]) -> list[str]:
    """The intended edit of a block: change, insert or delete one line."""
    nonblank = [i for i, x in enumerate(block) if x.strip()]
    c = rng.choice(nonblank)
    ws = _indent(block[c])
    mode = rng.randrange(4)
    new = list(block)
    if mode == 0:
        new[c] = block[c] + "  # edited"
    elif mode == 1:
        new.insert(c + 1, f"{ws}edited_{rng.randrange(1000)} = {rng.randrange(1000)}")
    elif mode == 2 and 0 < c < len(block) - 1:
        # Interior lines only: a block must keep non-blank first and last lines.
        del new[c]
    else:
        new[c] = re.sub(r"[A-Za-z_]\w*", lambda m: m.group(0) + "_v2", block[c], count=1)
        if new[c] == block[c]:
            new[c] = block[c] + "  # edited"
    return new


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


def _typo(rng: random.Random, block: list[str]) -> list[str]:
    cands = [i for i, x in enumerate(block) if len(x.strip()) >= 8]
    i = rng.choice(cands)
    line = block[i]
    ws = len(_indent(line))
    p = rng.randrange(ws, len(line) - 1)
    op = rng.randrange(3)
    if op == 0:
        line = line[:p] + ("x" if line[p] != "x" else "y") + line[p + 1 :]
    elif op == 1:
        line = line[:p] + line[p + 1 :]
    else:
        line = line[:p] + line[p + 1] + line[p] + line[p + 2 :]
    out = list(block)
    out[i] = line if line != block[i] else block[i] + "x"
    return out


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


def _damage(
    kind: str, rng: random.Random, block: list[str], new: list[str]
) -> tuple[list[str], ...]:
    """The agent's (old, new) view of the block and of its replacement."""
    if kind == "trailing_spaces":
        pads = [" ", "  ", "\t", "    "]
        first = next(i for i, x in enumerate(block) if x.strip())
        old = [
            x + rng.choice(pads) if x.strip() and (i == first or rng.random() < 0.5) else x
            for i, x in enumerate(block)
        ]
        return old, new
    if kind == "indent_shift":
        pad = rng.choice(["    ", "  ", "\t", "        "])
        return [pad + x if x.strip() else x for x in block], [
            pad + x if x.strip() else x for x in new
        ]
    if kind == "dedent":
        m = len(_min_indent(block))
        return [x[m:] for x in block], [x[min(m, len(_indent(x))) :] for x in new]
    if kind == "tabs":
        return [_tabify(x) for x in block], [_tabify(x) for x in new]
    if kind == "typographic":
        return [_typographic(x) for x in block], new
    if kind == "blank_dropped":
        blanks = [i for i in range(1, len(block) - 1) if not block[i].strip()]
        drop = rng.choice(blanks)
        return block[:drop] + block[drop + 1 :], new
    if kind == "blank_added":
        spots = [i for i in range(len(block) - 1) if block[i].strip() and block[i + 1].strip()]
        at = rng.choice(spots) + 1
        return [*block[:at], "", *block[at:]], new
    if kind == "typo":
        return _typo(rng, block), new
    return block, new


def _encode(kind: str, text: str) -> bytes:
    if kind == "crlf":
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8")
    return BOM + data if kind == "bom" else data


def _recoverable(kind: str, rng: random.Random) -> Case | None:
    name, lines = rng.choice(source_files())
    sizes = (6, 14) if kind == "typo" else (3, 10)
    found = _pick(rng, lines, sizes, _ACCEPT.get(kind, lambda b: True))
    if found is None:
        return None
    s, e = found
    block = list(lines[s:e])
    new = _change(rng, block)
    old, new_view = _damage(kind, rng, block, new)
    expected = "\n".join([*lines[:s], *new, *lines[e:]])
    return Case(
        kind=kind,
        name=f"{kind}:{name}:{s + 1}",
        data=_encode(kind, "\n".join(lines)),
        old="\n".join(old),
        new="\n".join(new_view),
        expected=_encode(kind, expected),
        line=s + 1,
    )


def _not_unique(rng: random.Random) -> Case | None:
    name, lines = rng.choice(source_files())
    k = rng.randint(2, 4)
    seen: dict[tuple[str, ...], int] = {}
    for i in range(len(lines) - k):
        block = lines[i : i + k]
        if all(x.strip() for x in block) and sum(len(x.strip()) for x in block) >= 20:
            seen[block] = seen.get(block, 0) + 1
    dups = sorted(b for b, n in seen.items() if n > 1)
    if not dups:
        return None
    chosen = list(rng.choice(dups))
    return Case(
        kind="not_unique",
        name=f"not_unique:{name}",
        data=_encode("", "\n".join(lines)),
        old="\n".join(chosen),
        new="\n".join(_change(rng, chosen)),
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
    return Case(
        kind="foreign_line",
        name=f"foreign_line:{name}:{s + 1}",
        data=_encode("", "\n".join(lines)),
        old="\n".join(old),
        new="\n".join(_change(rng, block)),
        expected=None,
    )


def make_case(kind: str, rng: random.Random) -> Case:
    """One case of ``kind``, drawn with ``rng`` (retrying other files when one has no fit)."""
    for _ in range(50):
        if kind == "not_unique":
            case = _not_unique(rng)
        elif kind == "foreign_line":
            case = _foreign_line(rng)
        else:
            case = _recoverable(kind, rng)
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
