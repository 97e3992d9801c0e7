from __future__ import annotations

from gitpatch.cli import run

run()
