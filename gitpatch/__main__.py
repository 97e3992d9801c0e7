"""``python -m gitpatch``: runs the command-line front end (``gitpatch.cli``)."""

from __future__ import annotations

import importlib
import sys


def main() -> int:
    """Run ``gitpatch.cli.main``; until that front end exists, say so and exit 2."""
    try:
        cli = importlib.import_module("gitpatch.cli")
    except ModuleNotFoundError as exc:
        if exc.name != "gitpatch.cli":
            raise
        print("gitpatch: the command-line front end is not installed yet", file=sys.stderr)
        print("try: python -m gitpatch.demo", file=sys.stderr)
        return 2
    result = cli.main()
    return int(result) if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
