"""Parser speed: medians per format, `python -m bench.bench_parsers`.

Each input is made from real text (Python standard library sources): a one-edit call, the
common case, and a large call (200 hunks over a 10,000-line file, or a whole-file Add of 10,000
lines), so parsing cost can be compared with matching and committing.
Target: a one-edit call parses in well under 1 ms; a 200-hunk patch in under 20 ms.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

from bench._common import median_ms
from bench.bench_match import corpus_lines
from gitpatch.formats import apply_patch, patch_resource, search_replace, unified_diff


def changed(lines: list[str], every: int) -> list[str]:
    """A copy of ``lines`` with one line changed every ``every`` lines."""
    return [f"{s}  # edited" if i % every == every // 2 else s for i, s in enumerate(lines)]


def inputs() -> dict[str, tuple[Callable[[str], object], str]]:
    """Named (parser, input) pairs."""
    base = corpus_lines(10_000)
    new = changed(base, 50)
    diff = "\n".join(difflib.unified_diff(base, new, "a/f.py", "b/f.py", lineterm="")) + "\n"
    one = (
        "\n".join(
            difflib.unified_diff(base, changed(base, 10_000), "a/f.py", "b/f.py", lineterm="")
        )
        + "\n"
    )
    body = [line for line in diff.splitlines()[2:]]
    patch = (
        "*** Begin Patch\n*** Update File: f.py\n"
        + "\n".join("@@" if line.startswith("@@") else line for line in body)
        + "\n*** End Patch\n"
    )
    add = "*** Begin Patch\n*** Add File: big.py\n" + "\n".join("+" + s for s in base)
    add += "\n*** End Patch\n"
    each = [
        f"<<<<<<< SEARCH\n{base[i]}\n{base[i + 1]}\n=======\n{new[i]}\n{new[i + 1]}\n"
        ">>>>>>> REPLACE\n"
        for i in range(25, 10_000, 50)
    ]
    blocks, one_block = "\n".join(each), each[0]
    edit_list = [
        {"old_string": base[i] or "\n", "new_string": new[i]} for i in range(25, 10_000, 50)
    ]
    return {
        "unified_diff, 1 hunk": (unified_diff.parse, one),
        "unified_diff, 200 hunks": (unified_diff.parse, diff),
        "apply_patch, 200 hunks": (apply_patch.parse, patch),
        "apply_patch, Add of 10,000 lines": (apply_patch.parse, add),
        "search_replace, 1 block": (lambda t: search_replace.parse(t, "f.py"), one_block),
        "search_replace, 200 blocks": (lambda t: search_replace.parse(t, "f.py"), blocks),
        "patch_resource, 1 edit": (lambda _: patch_resource.parse("f.py", edit_list[:1]), ""),
        "patch_resource, 200 edits": (lambda _: patch_resource.parse("f.py", edit_list), ""),
    }


def main() -> None:
    """Print one median per input."""
    print(f"{'input':<36} {'median ms':>10}")
    for name, (parse, text) in inputs().items():
        runs = 200 if len(text) < 20_000 else 30
        print(f"{name:<36} {median_ms(lambda p=parse, t=text: p(t), runs):>10.3f}")


if __name__ == "__main__":
    main()
