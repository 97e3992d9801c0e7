"""What keeps a repository whole when a gitpatch process is killed or a disk refuses a write.

- ``owners``: one owner record per operation, and proving an owner dead before taking over;
  the land lock, and git's own lock files waited out;
- ``recovery``: finishing or undoing what a killed process left, without a person; the land's
  journal (what an interrupted land was doing, so the next call finishes it), and the crash
  tests' kill switch at each step boundary (``crashpoint``, inert in production);
- ``atomic``: the one atomic file write (temp file beside the target, fsync, rename);
- ``durability``: how durable git is asked to be (``core.fsync``);
- ``refusals``: a full, read-only or over-quota disk as ``filesystem_error``.

It moves no ref and writes no working-tree file of its own (``store`` and ``checkout`` do).
"""
