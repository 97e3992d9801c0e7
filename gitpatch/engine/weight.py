"""How heavy applying patch_resource edits to a file is, told cheaply before it is applied.

A server that runs many callers' calls in one process wants the heavy ones elsewhere (a
worker process: ``gitpatch.core.budget``'s ``offload``), since their C steps (``bytes.count``
and ``bytes.join`` over a large file, building its lines, fuzzy matching a miss over every
line) hold the interpreter for tens of milliseconds at a time where no checkpoint can let
another call in. Sending the work away costs a few milliseconds (the file's bytes there and
the result back), so light edits, nearly all of them, stay where they are.

``heavy_files(proposal, snapshot)`` decides from sizes and a few C scans (at most
``SCAN_LIMIT`` bytes, a millisecond or two): the file's bytes, the edits' count and kind,
how often a ``replace_all``'s text occurs, and whether an ``old_string`` is missing (a miss
is matched fuzzily against every line). The estimate is in seconds of this machine's engine
(``_COST``), measured on the cases of ``bench/bench_service.py``; it only decides where the
work runs, never what comes of it: the result is the same either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gitpatch.core.model import Edit, Proposal, Replace, UpdateFile

__all__ = ["HEAVY_SECONDS", "SCAN_LIMIT", "heavy_files"]

#: Work estimated above this runs elsewhere (when the call has somewhere to send it).
HEAVY_SECONDS = 0.02
#: The estimate scans at most this many bytes of the file; more edits than that allows on
#: a file this large are heavy without looking further.
SCAN_LIMIT = 4 << 20

#: Seconds per unit, measured here: building a file's lines (per byte), finding an
#: ``old_string`` (per byte scanned), a ``replace_all`` match (each), fuzzy matching a miss
#: (per line of the file times line of the old text), any other edit.
_COST = {"text": 20e-9, "scan": 0.5e-9, "match": 3e-6, "fuzzy": 0.25e-6, "edit": 1e-6}


def heavy_files(proposal: Proposal, snapshot: Mapping[str, bytes]) -> dict[str, bytes] | None:
    """The files applying ``proposal`` needs (path: bytes), when it is heavy work that can run
    elsewhere: one patch_resource update of one existing file. None: light, or not of that
    kind (it runs where it is)."""
    ops = proposal.operations
    if proposal.format != "patch_resource" or len(ops) != 1:
        return None
    op = ops[0]
    if not isinstance(op, UpdateFile) or op.move_to is not None or not op.edits:
        return None
    data = snapshot.get(op.path)
    if data is None or not _heavy(data, op.edits):
        return None
    return {op.path: data}


def _heavy(data: bytes, edits: Sequence[Edit]) -> bool:
    size = len(data)
    text = size * _COST["text"]  # the text path's lines (Replace edits alone skip them)
    replaces = [e for e in edits if isinstance(e, Replace)]
    seconds = len(edits) * _COST["edit"] + (0.0 if len(replaces) == len(edits) else text)
    if seconds > HEAVY_SECONDS or len(replaces) * size > SCAN_LIMIT:
        return True
    lines = data.count(b"\n") + 1
    for edit in replaces:
        old = edit.old.encode("utf-8", "replace")
        seconds += size * _COST["scan"]
        found = data.count(old) if edit.replace_all else int(old in data)
        if found:
            seconds += found * _COST["match"]
        else:  # matched fuzzily against every line (or made by an earlier edit: rare)
            seconds += text + lines * (old.count(b"\n") + 1) * _COST["fuzzy"]
            text = 0.0
        if seconds > HEAVY_SECONDS:
            return True
    return False
