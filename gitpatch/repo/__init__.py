"""What ``Workspace`` and ``review`` share; nothing here is public API.

- ``context``: ``Context``, the repository, working tree, mode and branches one call works on;
- ``sessions``: branch names gitpatch owns, protected branches, session branches;
- ``guards``: checks that refuse a proposal before anything is built (paths, versions);
- ``build``: a proposal's commit in the object store (recording local changes first);
- ``lookup``: finding and describing open and closed proposals (reads only);
- ``publisher``: the one way refs, notes and the disk move together (a ``Transition``);
- ``worktree`` and ``locks``: the crash-safe landing of a commit on disk, and its locks.

It does not parse formats or apply edits (``gitpatch.formats``, ``gitpatch.engine``) and holds
no pygit2 repository of its own except the working tree's index (``gitpatch.store`` does).
"""
