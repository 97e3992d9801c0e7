"""The person's checkout: the working tree and the index, written as git itself would.

- ``worktree``: ``WorkingTree``, the only code that writes the working tree (crash-safe land);
- ``files``: one working-tree file written by temp file, fsync and rename;
- ``index``: the index during a land, its ``index.lock`` held and its entries brought up to
  date; ``indexfile``: git's index file patched in place (else git or libgit2 writes it), and
  its skip-worktree entries (sparse checkouts);
- ``filters``: git's conversions (eol, clean/smudge);
- ``gitbin``: running the ``git`` binary for what only git does exactly;
- ``preflight``: the state of a checkout a landing must respect, checked before any ref moves;
- ``roots``: paths reaching the working tree through a symbolic link to its root.

It builds no commit and moves no branch (``store`` and ``workspace`` do).
"""
