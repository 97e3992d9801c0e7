"""``python -m gitpatch.gate``: the entry the hook shims installed before the layout move run.

Those shims start Python for every branch update; this module still applies the gate for them
(``gitpatch.doors.hooks``), so a repository whose hooks predate the move keeps working, and
says how to get the current shims, which settle most updates in the shell:
``gitpatch hooks install`` replaces gitpatch's own hooks in place.
"""

from __future__ import annotations

import sys

from gitpatch.doors.hooks import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.stderr.write(
        "gitpatch: these git hooks are out of date and slow every git command; "
        "`gitpatch hooks install` refreshes them\n"
    )
    raise SystemExit(main())
