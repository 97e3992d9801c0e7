from __future__ import annotations

from gitpatch.doors.cli import run

if __name__ == "__main__":
    run()
