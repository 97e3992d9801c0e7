"""The person's checkout: the working tree and the index, written as git itself would.

- ``worktree``: ``WorkingTree``, the only code that writes the working tree (crash-safe land);
- ``files``: one working-tree file written by temp file, fsync and rename;
- ``indexfile`` and ``indexsync``: a land's index entries, patched in git's index file in place
  or written by git (split and sparse indexes) or libgit2;
- ``sparse``: skip-worktree entries; ``filters``: git's conversions (eol, clean/smudge);
- ``gitbin``: running the ``git`` binary for what only git does exactly;
- ``preflight``: the state of a checkout a landing must respect, checked before any ref moves;
- ``roots``: paths reaching the working tree through a symbolic link to its root.

It builds no commit and moves no branch (``store`` and ``workspace`` do).
"""
