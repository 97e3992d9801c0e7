"""Values every stage shares: the Proposal IR, documents, paths and the one retry helper.

- ``model``: ``Proposal`` and its file operations and edits, ``Changeset`` (frozen dataclasses);
- ``text``: ``Document``, text that round-trips byte for byte (BOM, line endings, final newline);
- ``paths``: a caller's path made a safe repository path or a ``work://`` / ``memory://`` address;
- ``retry``: run an action again, after a jittered backoff, when it lost a race;
- ``budget``: the CPU and wall time a call may take, checked in the loops that can run long.

Nothing here touches git, the disk or a front end.
"""
