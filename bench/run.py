"""Run every benchmark in bench/ and print its figures: `make bench`.

Each ``bench/bench_*.py`` script and ``bench/robustness`` is run in its own process, so one
benchmark's memory and caches do not colour the next one's numbers.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    """Run each benchmark in turn; return non-zero if any failed."""
    scripts = [["-m", f"bench.{p.stem}"] for p in sorted(HERE.glob("bench_*.py"))]
    if (HERE / "robustness" / "__main__.py").exists():
        scripts.append(["-m", "bench.robustness"])
    failed = 0
    for args in scripts:
        print(f"\n=== {' '.join(args[1:])} ===", flush=True)
        failed |= subprocess.run([sys.executable, *args], cwd=HERE.parent, check=False).returncode
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
