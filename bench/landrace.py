"""Auto-mode lands while a person uses git and an editor on the same checkout (issue 26).

Three kinds of real processes share one repository whose branch ``work`` is checked out:

- the agent (this process): ``lands`` auto-mode edits, each turning a line ``agent k`` of
  ``shared.txt`` into ``AGENT k`` (refusals such as ``concurrent_update`` are counted, not
  failures);
- the person's git (``person``): a loop of ``git commit -a``, ``git stash`` + ``git stash
  pop``, ``git checkout other`` + ``git checkout work``, ``git add -A && git commit`` and
  ``git add person.txt && git commit`` (no ``-a``), each after an edit of ``person.txt``;
  git's own refusals (another git process holds index.lock) are part of the loop;
- the person's editor (``editor``): appends a line ``editor j`` to ``shared.txt`` every 10-20
  ms, in place (``O_APPEND``), as a log or an editor's autosave does.

``check`` then states what must hold whatever the timing: no commit, stash or reflog entry
removes a line of ``shared.txt`` other than an ``agent k`` the agent replaced (no revert of the
agent's change recorded, no line of the editor's dropped), every line the editor wrote and
every change the agent was told landed is on disk and in the branch's history, no temp file of
gitpatch's is in any commit or left behind, and ``git fsck --strict`` is clean.

Run as a script for the figures of docs/benchmarks.md (``--lands 1000``); the slow tests in
``tests/realrepo/test_person_during_land.py`` run it smaller. ``--agent git`` is the yardstick:
the same edits landed by a second git user with git's own commands, checked the same way (for
the loops without the editor: it writes ``shared.txt`` back whole).
``--keep DIR`` keeps the repositories, and ``LANDRACE_TRACE=FILE`` logs every git command and
every land with its start and end (``time.monotonic_ns``), to trace a problem to its cause.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ENV = {
    "GIT_AUTHOR_NAME": "Person",
    "GIT_AUTHOR_EMAIL": "person@example.com",
    "GIT_COMMITTER_NAME": "Person",
    "GIT_COMMITTER_EMAIL": "person@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
GIT_LOOP = ("commit", "stash", "checkout", "add")
#: name, the person's git loop, whether the editor runs (the tests run all but the last two)
SCENARIOS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("commit -a", ("commit",), False),
    ("editor", (), True),
    ("editor + commit -a", ("commit",), True),
    ("add person.txt + commit (no -a)", ("staged",), False),
    ("commit -a / add -A + commit", ("commit", "add"), False),
    ("commit -a / stash / checkout / add -A", GIT_LOOP, False),
)
_AGENT = re.compile(r"agent \d+")
_LANDED = re.compile(r"AGENT \d+")
#: The person's plain ``git commit`` runs that lost their race for HEAD (one ``n`` a line).
#: Such a commit read the index before it locked it; when a land fell between the two, it
#: wrote that older index back (without the agent's change) before its compare-and-swap on
#: HEAD failed, and the person's next commit records the revert. git's own window, as with
#: a second git user: ``check`` counts what it explains apart (``Outcome.git_window``).
LOST_RACES = "lost-races.log"


def _env() -> dict[str, str]:
    return {**os.environ, **ENV}


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The real git in ``repo`` (with ``LANDRACE_TRACE`` set, logged there with its times)."""
    start = time.monotonic_ns()
    done = subprocess.run(
        ["git", *args], cwd=repo, env=_env(), capture_output=True, text=True, check=check
    )
    err = (done.stdout + done.stderr).strip().replace("\n", " | ")[:300]
    trace(f"{start} {time.monotonic_ns()} git {' '.join(args)} -> {done.returncode} {err}")
    return done


def trace(line: str) -> None:
    """Append ``line`` to the file ``LANDRACE_TRACE`` names, if it does (for tracing a revert
    to the commands around it: ``--keep`` and the trace name the same run)."""
    where = os.environ.get("LANDRACE_TRACE")
    if where:
        with open(where, "a") as fh:
            fh.write(f"{os.getpid()} {line}\n")


def make(folder: Path, lines: int) -> Path:
    """A repository on branch ``work`` (and ``other``) with ``lines`` agent lines."""
    repo = folder / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "work")
    body = "".join(f"agent {k}\n\n" for k in range(lines))
    (repo / "shared.txt").write_text(f"{body}end\n\n\n")
    (repo / "person.txt").write_text("person\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    git(repo, "branch", "other")
    return repo


# -- the person ---------------------------------------------------------------------------------


def person(repo: Path, stop: Path, kinds: tuple[str, ...]) -> None:
    """The person's git loop, until ``stop`` exists (run in a process of its own)."""
    n = 0
    while not stop.exists():
        kind = kinds[n % len(kinds)]
        n += 1
        with open(repo / "person.txt", "a") as fh:
            fh.write(f"person {n}\n")
        if kind == "commit":
            git(repo, "commit", "-qam", f"person {n}", check=False)
        elif kind == "stash":
            if git(repo, "stash", "push", "-q", check=False).returncode == 0:
                git(repo, "stash", "pop", "-q", check=False)
        elif kind == "checkout":
            git(repo, "checkout", "-q", "other", check=False)
            git(repo, "checkout", "-q", "work", check=False)
        elif kind == "staged":  # git commit reads HEAD, then the index, then locks it
            git(repo, "add", "person.txt", check=False)
            done = git(repo, "commit", "-qm", f"person staged {n}", check=False)
            if "but expected" in done.stderr:  # it lost its race for HEAD: see LOST_RACES
                with open(repo.parent / LOST_RACES, "a") as fh:
                    fh.write(f"{n}\n")
        else:
            git(repo, "add", "-A", check=False)
            git(repo, "commit", "-qm", f"person add {n}", check=False)
    for _ in range(50):  # back on the branch, as the person would end
        if git(repo, "checkout", "-q", "work", check=False).returncode == 0:
            break
        time.sleep(0.05)


def editor(repo: Path, stop: Path, log: Path) -> None:
    """Append ``editor j`` to ``shared.txt`` every 10-20 ms until ``stop`` exists; every
    line written is logged to ``log`` (outside the repository) once its write returned."""
    rng = random.Random(26)
    j = 0
    with open(log, "a") as written:
        while not stop.exists():
            j += 1
            fd = os.open(repo / "shared.txt", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, f"editor {j}\n".encode())
            finally:
                os.close(fd)
            written.write(f"{j}\n")
            written.flush()
            time.sleep(rng.uniform(0.010, 0.020))


# -- the agent ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What the agent was told, and what ``check`` found."""

    landed: list[int] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    #: What git's own window explains (``LOST_RACES``): a revert recorded by the person's
    #: first commit after one that lost its race for HEAD, and the landed changes it removed.
    git_window: list[str] = field(default_factory=list)
    editor_lines: int = 0
    person_commits: int = 0


def agent(repo: Path, lands: int, outcome: Outcome) -> None:
    """``lands`` auto-mode edits, one line each."""
    from gitpatch import Workspace
    from gitpatch.core.model import Proposal, Replace, UpdateFile
    from gitpatch.errors import GitpatchError

    ws = Workspace.open(repo, branch="work")
    start = time.perf_counter()
    for k in range(lands):
        change = UpdateFile("shared.txt", (Replace(f"agent {k}\n", f"AGENT {k}\n"),))
        began = time.monotonic_ns()
        try:
            ws.propose(Proposal((change,), "patch_resource", tool="race"))
        except GitpatchError as exc:
            reason = exc.details.get("reason", "")
            key = f"{exc.code}:{reason}" if reason else exc.code
            outcome.refused[key] = outcome.refused.get(key, 0) + 1
            trace(f"{began} {time.monotonic_ns()} land {k} refused {key}")
            if exc.code in ("internal_error", "repository_error"):
                outcome.problems.append(f"land {k}: {exc.code}: {exc}")
            continue
        except Exception as exc:  # a crash of the call is a problem, and the loop goes on
            outcome.problems.append(f"land {k} raised {type(exc).__name__}: {exc}")
            continue
        outcome.landed.append(k)
        trace(f"{began} {time.monotonic_ns()} land {k} landed")
    outcome.seconds = time.perf_counter() - start


def git_agent(repo: Path, lands: int, outcome: Outcome) -> None:
    """The yardstick (``--agent git``): the same edits landed by a second git user with git's
    own commands: the file replaced by rename, then ``git commit -- shared.txt`` (git's
    refusals while the person's git holds ``index.lock`` are retried, 100 times at most).
    What ``check`` finds then is what git's commands do to each other."""
    shared = repo / "shared.txt"
    start = time.perf_counter()
    for k in range(lands):
        why = ""
        for _attempt in range(100):
            try:
                text = shared.read_text()
            except FileNotFoundError:  # a checkout or a stash is rewriting it
                text = ""
            head = git(repo, "symbolic-ref", "-q", "HEAD", check=False).stdout.strip()
            if head != "refs/heads/work" or not text.endswith("end\n\n\n"):
                # a file git is rewriting in place reads short: never written back so
                why = "not on work" if head != "refs/heads/work" else "file being written"
                time.sleep(0.002)  # as gitpatch, which lands only on its branch
                continue
            if f"agent {k}\n" in text:  # not yet, or put back by a stash or a checkout
                tmp = repo / ".git" / "agent.tmp"
                tmp.write_text(text.replace(f"agent {k}\n", f"AGENT {k}\n", 1))
                os.replace(tmp, shared)
            done = git(repo, "commit", "-qm", f"agent {k}", "--", "shared.txt", check=False)
            if done.returncode == 0 or "nothing" in done.stdout + done.stderr:
                outcome.landed.append(k)
                break
            why = (done.stderr.strip().splitlines() or ["?"])[0][:60]
            time.sleep(0.002)
        else:
            key = f"gave up: {re.sub(r'/[^ ]*', '', why)}"
            outcome.refused[key] = outcome.refused.get(key, 0) + 1
    outcome.seconds = time.perf_counter() - start


def run(
    folder: Path, lands: int, kinds: tuple[str, ...], with_editor: bool, by_git: bool = False
) -> Outcome:
    """Agent, person and editor together on a new repository under ``folder``; checked.
    ``by_git``: the agent's lands are made with git's own commands (``git_agent``)."""
    repo = make(folder, lands)
    stop = folder / "stop"
    log = folder / "editor.log"
    log.touch()
    me = [sys.executable, "-m", "bench.landrace"]
    root = Path(__file__).resolve().parents[1]
    others = []
    if kinds:
        others.append(
            subprocess.Popen([*me, "person", str(repo), str(stop), ",".join(kinds)], cwd=root)
        )
    if with_editor:
        others.append(subprocess.Popen([*me, "editor", str(repo), str(stop), str(log)], cwd=root))
    outcome = Outcome()
    try:
        (git_agent if by_git else agent)(repo, lands, outcome)
    finally:
        stop.touch()
        for proc in others:
            proc.wait(timeout=120)
    check(repo, log, outcome)
    return outcome


# -- what must hold -----------------------------------------------------------------------------


def check(repo: Path, log: Path, outcome: Outcome) -> None:
    """Fill ``outcome.problems`` with every broken invariant (see the module docstring)."""
    problems = outcome.problems
    history = git(
        repo, "log", "--all", "--reflog", "-p", "--first-parent", "--format=commit %H %s", "--"
    ).stdout
    lost = _lost_races(repo.parent / LOST_RACES)
    made = sorted(int(n) for n in re.findall(r"^commit \w+ person staged (\d+)$", history, re.M))
    commit, explained, removed = "", False, set()
    for line in history.splitlines():
        if line.startswith("commit "):
            commit = line[7:19]
            explained = _after_a_lost_race(line, lost, made)
        elif line.startswith("-") and not line.startswith("---"):
            text = line[1:]
            if text and not _AGENT.fullmatch(text) and not text.startswith("person"):
                # an older index written back can only turn a landed line back into ``agent k``
                window = explained and _LANDED.fullmatch(text) is not None
                (outcome.git_window if window else problems).append(f"{commit} removes {text!r}")
                if window:
                    removed.add(text)
    names = git(repo, "log", "--all", "--reflog", "--name-only", "--format=").stdout
    problems += [f"committed temp file {n}" for n in names.splitlines() if "gitpatch-tmp" in n]
    left = git(repo, "status", "--porcelain", "--ignored", "--untracked-files=all").stdout
    problems += [f"left behind: {row}" for row in left.splitlines() if "gitpatch-tmp" in row]
    tip = git(repo, "show", "work:shared.txt").stdout
    disk = (repo / "shared.txt").read_text()
    for k in outcome.landed:
        if f"AGENT {k}\n" not in tip:
            missing = f"landed change {k} is not on the branch"
            (outcome.git_window if f"AGENT {k}" in removed else problems).append(missing)
        if f"AGENT {k}\n" not in disk:
            problems.append(f"landed change {k} is not on disk")
    wrote = [int(j) for j in log.read_text().split()]
    outcome.editor_lines = len(wrote)
    on_disk = set(disk.splitlines())
    problems += [f"editor line {j} lost" for j in wrote if f"editor {j}" not in on_disk]
    fsck = git(repo, "fsck", "--strict", "--no-progress", check=False)
    if fsck.returncode != 0 or fsck.stderr.strip():
        problems.append(f"git fsck --strict: {fsck.stderr.strip() or fsck.stdout.strip()}")
    outcome.person_commits = int(git(repo, "rev-list", "--count", "--all").stdout) - 1


def _lost_races(log: Path) -> list[int]:
    """The ``n`` of each person's commit that lost its race for HEAD, in order."""
    return sorted(int(n) for n in log.read_text().split()) if log.exists() else []


def _after_a_lost_race(line: str, lost: list[int], made: list[int]) -> bool:
    """Whether the commit of this ``git log`` line is the person's first plain commit
    (``made``: the ``n`` of each) after one that lost its race for HEAD: it committed the
    index that one wrote back."""
    found = re.fullmatch(r"commit \w+ person staged (\d+)", line)
    if found is None:
        return False
    n = int(found.group(1))
    before = [m for m in made if m < n]
    since = before[-1] if before else 0
    return any(since < m < n for m in lost)


def main() -> None:
    """``python -m bench.landrace`` (the full run) or a helper process of ``run``."""
    if len(sys.argv) > 1 and sys.argv[1] == "person":
        person(Path(sys.argv[2]), Path(sys.argv[3]), tuple(sys.argv[4].split(",")))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "editor":
        editor(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lands", type=int, default=1000)
    parser.add_argument("--only", type=int, help="run only this scenario (0-based)")
    parser.add_argument(
        "--agent",
        choices=("gitpatch", "git"),
        default="gitpatch",
        help="who lands the agent's edits: gitpatch, or git's own commands (the yardstick)",
    )
    parser.add_argument("--keep", type=Path, help="make the repositories here and keep them")
    args = parser.parse_args()
    for n, (name, kinds, with_editor) in enumerate(SCENARIOS):
        if args.only is not None and n != args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            where = args.keep / f"scenario{n}" if args.keep else Path(tmp)
            out = run(where, args.lands, kinds, with_editor, args.agent == "git")
        print(
            f"[{args.agent}] {name}: {args.lands} lands in {out.seconds:.1f} s, "
            f"{len(out.landed)} landed, "
            f"refused {out.refused or 0}, {out.person_commits} other commits, "
            f"{out.editor_lines} editor lines, problems: {len(out.problems)} "
            f"({sum(' removes ' in p for p in out.problems)} reverts recorded, "
            f"{sum('not on the branch' in p for p in out.problems)} landed changes not on "
            "the branch)"
            + (
                f"; git's own window (a plain commit that lost its race for HEAD wrote its "
                f"older index back): {len(out.git_window)}"
                if out.git_window
                else ""
            )
        )
        for problem in out.problems[:20]:
            print("  ", problem)
        for explained in out.git_window[:20]:
            print("   (git's window)", explained)


if __name__ == "__main__":
    main()
