"""The questions a front end may put to the review lifecycle directly, read-only.

A door (the review page, the CLI) holds a porcelain ``Workspace`` and passes its ``context``:
``is_open`` (what awaits a person), ``stats`` (a listed proposal's diff stats), ``outcome``
(what approving would do now), ``stamp`` (a digest that changes when the list could), ``head``
(a branch's tip and summary) and ``person`` (who is at this repository). Everything that
changes a proposal goes through the ``Workspace``.
"""

from __future__ import annotations

from gitpatch.review._lifecycle import head, is_open, outcome, person, stamp, stats

__all__ = ["head", "is_open", "outcome", "person", "stamp", "stats"]
