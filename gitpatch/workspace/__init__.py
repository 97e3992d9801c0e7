"""The write path: one proposal's checks, commit, attempt loop and publication.

- ``context``: what one call works on; ``sessions``: branches gitpatch owns, protected branches;
- ``guards``, ``versions``, ``build``: the checks, versions and commit of one proposal;
- ``propose``: the one attempt loop (build on the head, rebuild after a lost race) that
  ``Workspace.propose`` and the scratch families share, and the one dry run (``preview``);
- ``stack``: where a review-mode session's next proposal is built (its open stack's top);
- ``publisher``: the one way refs, notes and the disk move together;
- ``carry``: an agent change carried onto a person's uncommitted work;
- ``results``: the pydantic models handed back; ``config``: ``.gitpatch.toml`` and the one
  resolver of protected branches; ``gate``: the approval rule the git hooks apply too.

The porcelain ``Workspace`` is ``gitpatch.porcelain``; the proposal lifecycle (approve, reject,
feedback, session worktrees) is ``gitpatch.review``, above this package.
"""
