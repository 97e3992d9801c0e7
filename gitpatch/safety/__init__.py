"""What keeps a repository whole when a gitpatch process is killed or a disk refuses a write.

- ``crashpoints``: the crash tests' kill switch at each step boundary (inert in production);
- ``owners``: one owner record per operation, and proving an owner dead before taking over;
- ``recovery``: finishing or undoing what a killed process left, without a person;
- ``journal``: what an interrupted land was doing, so the next call finishes it;
- ``atomic``: the one atomic file write (temp file beside the target, fsync, rename);
- ``locks``: the land lock and git's ``index.lock``, taken the way git takes them;
- ``durability``: how durable git is asked to be (``core.fsync``);
- ``refusals``: a full, read-only or over-quota disk as ``filesystem_error``.

It moves no ref and writes no working-tree file of its own (``store`` and ``checkout`` do).
"""
