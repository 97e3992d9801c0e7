"""The approval gate: agent commits reach a protected branch only with a person's approval.

A commit is an agent commit when its message carries a ``Gitpatch-Proposal:`` trailer; it is
approved when its note on ``refs/notes/gitpatch`` records an approval (``approved_by``).
Commits people make themselves carry no trailer and are never blocked, and neither are the
commits recording a person's uncommitted changes (``Gitpatch-Record``).

``check_update`` is the one rule. The Workspace applies it in code before any review step
moves a protected branch (libgit2 runs no hooks), and the git hooks in ``hooks/`` apply it
through ``run_hook`` for people and servers using plain git: ``reference-transaction``
(local, git >= 2.28), ``pre-push`` and ``pre-receive`` (a shared remote). This module
reads the repository and never writes to it, except ``approve_commits``, which records the
approval of commits an agent applied on an ordinary branch.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TextIO

import pygit2

from gitpatch.errors import ApprovalRequired, GitpatchError, InvalidArguments
from gitpatch.store import NOTES_REF, Store
from gitpatch.store.notes import decode, note_path
from gitpatch.workspace import config
from gitpatch.workspace.sessions import (
    DEFAULT_PROTECTED,
    SESSION_PREFIX,
    protected_branches,
    short,
)

__all__ = [
    "HOOKS",
    "ZERO",
    "Pending",
    "approve_commits",
    "check_update",
    "git_system_config",
    "hook_script",
    "pending",
    "run_hook",
]

#: The hooks gitpatch ships, by git hook name.
HOOKS = ("pre-receive", "reference-transaction", "pre-push")
#: How git names a missing side of a ref update (a creation or a deletion).
ZERO = "0" * 40


@dataclass(frozen=True)
class Pending:
    """An agent commit without approval: its id, proposal id and the branch it was made on."""

    commit: str
    proposal: str
    branch: str
    status: str


def _note(store: Store, notes_tip: pygit2.Oid | None, commit: pygit2.Oid) -> dict[str, object]:
    if notes_tip is None:
        return {}
    path, found = note_path(store, notes_tip, commit)
    data = store.read(notes_tip, path) if found else None
    return {} if data is None else decode(data)


def pending(
    store: Store,
    old: pygit2.Oid | None,
    new: pygit2.Oid,
    *,
    notes_tip: pygit2.Oid | None = None,
) -> list[Pending]:
    """Agent commits reachable from ``new`` but not from ``old`` that lack an approval.

    ``notes_tip`` is the notes commit to judge by (default: the current ``refs/notes/gitpatch``);
    a transaction that writes notes together with the branch passes its new notes commit.
    """
    tip = notes_tip if notes_tip is not None else store.ref_target(NOTES_REF)
    hide = old if old is not None and store.has_commit(old) else None
    out: list[Pending] = []
    for commit in store.walk(new, hide=hide):
        trailers = dict(commit.message_trailers)
        proposal = trailers.get("Gitpatch-Proposal")
        if not proposal:
            continue
        note = _note(store, tip, commit.id)
        if note.get("approved_by") or note.get("status") == "approved":
            continue
        status = str(note.get("status") or "no note")
        out.append(Pending(str(commit.id), proposal, str(note.get("branch") or ""), status))
    return out


def _how_to_approve(items: Sequence[Pending], ref: str, old: str | None, new: str) -> str:
    """The commands a person runs to approve what blocks the update."""
    sessions = sorted(
        {
            p.branch.removeprefix(SESSION_PREFIX)
            for p in items
            if p.branch.startswith(SESSION_PREFIX)
        }
    )
    single = [p for p in items if not p.branch.startswith(SESSION_PREFIX)]
    # A proposal (or one whose note this repository lacks) is approved by id; commits an
    # agent applied on an ordinary branch by range.
    by_id = sorted({p.proposal for p in single if p.status in ("proposed", "no note")})
    steps = [f"gitpatch approve {name}" for name in (*by_id, *sessions)]
    if any(p.status not in ("proposed", "no note") for p in single):
        since = f"{old[:12]}.." if old else ""
        steps.append(f"gitpatch approve --range {since}{new[:12]}")
    return (
        "Review them (gitpatch show ID), then approve with: "
        + "; ".join(steps)
        + f". Approval lands the change on {short(ref)} and records it on {NOTES_REF}"
        " (push that ref too when a remote enforces the gate)."
    )


def check_update(
    store: Store,
    ref: str,
    old: pygit2.Oid | None,
    new: pygit2.Oid | None,
    *,
    protected: frozenset[str] | None = None,
    notes_tip: pygit2.Oid | None = None,
) -> None:
    """Refuse moving protected branch ``ref`` from ``old`` to ``new`` onto unapproved agent
    commits (``ApprovalRequired``, naming the proposals and the commands that approve them).

    Other refs, deletions and ranges without agent commits pass. ``protected`` defaults to git
    config ``gitpatch.protected`` (main and master when unset).
    """
    guarded = protected if protected is not None else protected_branches(store)
    if ref not in guarded or new is None:
        return
    items = pending(store, old, new, notes_tip=notes_tip)
    if not items:
        return
    ids = ", ".join(sorted({p.proposal for p in items}))
    noun = "commit" if len(items) == 1 else "commits"
    raise ApprovalRequired(
        f"{short(ref)} is protected: {len(items)} agent {noun} without approval (proposals {ids})",
        hint=_how_to_approve(items, ref, str(old) if old else None, str(new)),
        details={"ref": ref, "proposals": sorted({p.proposal for p in items})},
    )


def approve_commits(store: Store, commits: Iterable[pygit2.Oid], by: str) -> list[str]:
    """Record ``by``'s approval on agent commits already applied on an ordinary branch.

    Only commits with a ``Gitpatch-Proposal`` trailer and no approval are stamped; returns
    their ids. Every note moves in one compare-and-swap of the notes ref.
    """
    from gitpatch.core.retry import lost_race, retry
    from gitpatch.errors import ConcurrentUpdate
    from gitpatch.store.notes import notes_update
    from gitpatch.workspace.results import now_iso

    who = by.strip() if isinstance(by, str) else ""
    if not who or "\n" in who:
        raise InvalidArguments(
            "approve needs the name of the person who decides",
            hint="Pass --by 'Name' (default: git config user.name).",
        )
    stamp = {"status": "approved", "approved_by": who, "approved_at": now_iso()}
    candidates = list(commits)

    def once() -> list[str]:
        tip = store.ref_target(NOTES_REF)
        todo = [c for c in candidates if _unapproved_agent_commit(store, tip, c)]
        if not todo:
            return []
        notes, _ = notes_update(store, {c: (lambda old: {**(old or {}), **stamp}) for c in todo})
        store.update_refs([notes], f"gitpatch: approve {len(todo)} applied commits")
        return [str(c) for c in todo]

    return retry(once, attempts=20, catch=ConcurrentUpdate, when=lost_race)


def _unapproved_agent_commit(store: Store, tip: pygit2.Oid | None, commit: pygit2.Oid) -> bool:
    if "Gitpatch-Proposal" not in store.info(commit).trailers:
        return False
    note = _note(store, tip, commit)
    return not (note.get("approved_by") or note.get("status") == "approved")


# -- the git hooks ------------------------------------------------------------------------------


_AFTER_FAST_FORWARD = (
    "A refused `git merge` may have updated your files already (git writes them before it "
    "moves the branch): `git reset --merge` puts them back."
)


def _oid(hexid: str) -> pygit2.Oid | None:
    return None if not hexid or set(hexid) == {"0"} else pygit2.Oid(hex=hexid)


def _updates(lines: Iterable[str], hook: str) -> list[tuple[str, str, str]]:
    """(old, new, ref) per stdin line, for the three hook layouts."""
    out: list[tuple[str, str, str]] = []
    for line in lines:
        parts = line.split()
        if hook == "pre-push" and len(parts) == 4:
            _local_ref, local, remote_ref, remote = parts
            out.append((remote, local, remote_ref))
        elif hook != "pre-push" and len(parts) == 3:
            out.append((parts[0], parts[1], parts[2]))
    return out


def _open_for_hook(path: str) -> Store:
    """The repository a hook runs in; objects still in quarantine (pre-receive) included."""
    store = Store.open(path)
    for var in ("GIT_QUARANTINE_PATH", "GIT_OBJECT_DIRECTORY"):
        where = os.environ.get(var)
        if where and os.path.isdir(where):
            store.add_object_directory(where)
    return store


def run_hook(hook: str, args: Sequence[str], stdin: TextIO, err: TextIO, repo: str = ".") -> int:
    """Run gitpatch's check as git hook ``hook``: 0 lets git go on, 1 refuses (message on
    ``err``). ``reference-transaction`` checks only in its ``prepared`` state."""
    if hook not in HOOKS:
        err.write(f"gitpatch: unknown hook {hook!r} (known: {', '.join(HOOKS)})\n")
        return 2
    if hook == "reference-transaction" and (not args or args[0] != "prepared"):
        return 0
    updates = _updates(stdin.read().splitlines(), hook)
    try:
        store = _open_for_hook(repo)
        if hook == "reference-transaction" and store.is_bare:
            # A server's pushes update refs one transaction each, notes apart from branches:
            # pre-receive, which sees the whole push, is the gate there.
            return 0
        notes_tip = store.ref_target(NOTES_REF)
        for _old, new, ref in updates:  # notes moving together with the branch count
            if ref == NOTES_REF and _oid(new) is not None:
                notes_tip = _oid(new)
        names = config.load(store.workdir).protected_for(store)
        guarded = protected_branches(store, names)
        for old, new, ref in updates:
            check_update(store, ref, _oid(old), _oid(new), protected=guarded, notes_tip=notes_tip)
    except GitpatchError as exc:
        err.write(f"gitpatch: {exc.code}: {exc.message}\n")
        if exc.hint:
            err.write(f"gitpatch: {exc.hint}\n")
        if hook == "reference-transaction":
            err.write(f"gitpatch: {_AFTER_FAST_FORWARD}\n")
        return 1
    except (pygit2.GitError, KeyError, ValueError) as exc:
        err.write(f"gitpatch: cannot check the update ({exc}); refusing it\n")
        return 1
    return 0


# -- hook scripts ---------------------------------------------------------------------------------

#: The line that marks a hook script as gitpatch's (``hooks install`` is idempotent by it).
MARKER = "# gitpatch-hook:"

_SCRIPT = """\
#!/bin/sh
{marker} approval gate. Agent commits (Gitpatch-Proposal trailer) reach a protected branch
# only with a person's approval note on refs/notes/gitpatch. Installed by `gitpatch hooks install`;
# a hook that was here before is kept as {name}.local and runs first.
# Every git command a person runs pays for this hook, so the shell passes what cannot need the
# gate (a deletion, an unprotected ref, a range with no Gitpatch-Proposal line), reading the
# protected list itself when it can be sure of it, and starts Python only for the rest.
python="${{GITPATCH_PYTHON:-{python}}}"
case $0 in */*) here=${{0%/*}} ;; *) here=. ;; esac
local_hook="$here/{name}.local"
[ -x "$local_hook" ] || local_hook=
{early}input=
while IFS= read -r line || [ -n "$line" ]; do
    input="$input$line
"
done
if [ -n "$local_hook" ]; then
    printf '%s' "$input" | "$local_hook" "$@" || exit $?
fi
{late}# A config file (or `git -c`) can name gitpatch.protected only by naming gitpatch, and can
# pull in another file only by an include: one doing neither leaves the list as it is.
quiet_file() {{
    [ -e "$1" ] || return 0
    [ -f "$1" ] && [ -r "$1" ] || return 1
    while IFS= read -r cline || [ -n "$cline" ]; do
        case $cline in
        *[Gg][Ii][Tt][Pp][Aa][Tt][Cc][Hh]* | *[Ii][Nn][Cc][Ll][Uu][Dd][Ee]*) return 1 ;;
        esac
    done <"$1"
}}
# Where the protected list comes from: "quiet" when no config git or the gate reads can
# change the defaults (the shell knows them: no process), "any" when git and the gate may
# read different config (the environment gives git config that libgit2 ignores: every agent
# range goes to Python), else "git": `git config` answers (an include, a linked worktree,
# worktree config, a file the shell cannot read, a file naming gitpatch).
config_source() {{
    source=any
    case ${{GIT_CONFIG_PARAMETERS-}} in
    *[Gg][Ii][Tt][Pp][Aa][Tt][Cc][Hh]* | *[Ii][Nn][Cc][Ll][Uu][Dd][Ee]*) return ;;
    esac
    [ -z "${{GIT_CONFIG_COUNT-}}${{GIT_CONFIG-}}${{GIT_CONFIG_GLOBAL-}}${{GIT_CONFIG_SYSTEM-}}" ] ||
        return
    for file in /etc/gitconfig {system}; do
        if ! quiet_file "$file"; then
            # git skips these under GIT_CONFIG_NOSYSTEM, the gate does not
            [ -n "${{GIT_CONFIG_NOSYSTEM-}}" ] || source=git
            return
        fi
    done
    source=git
    [ -z "${{GIT_COMMON_DIR-}}" ] && [ -n "${{HOME-}}" ] || return
    gitdir=${{GIT_DIR:-.git}}
    case $gitdir in /* | . | .git) ;; *) return ;; esac
    [ -d "$gitdir" ] && [ -f "$gitdir/config" ] || return
    [ ! -e "$gitdir/commondir" ] && [ ! -e "$gitdir/config.worktree" ] || return
    for file in "$gitdir/config" "$HOME/.gitconfig" "$HOME/.config/git/config" \\
        "${{XDG_CONFIG_HOME:-$HOME/.config}}/git/config"; do
        quiet_file "$file" || return
    done
    source=quiet
}}
source=
guarded=
protected() {{
    if [ -z "$guarded" ]; then
        names=
        [ "$source" != git ] || names=$(git config --get-all gitpatch.protected </dev/null)
        set -f
        saved_ifs=$IFS
        IFS=",$IFS"
        guarded=" "
        for name in $names; do
            case $name in refs/*) ;; *) name="refs/heads/$name" ;; esac
            guarded="$guarded$name "
        done
        IFS=$saved_ifs
        set +f
        if [ "$source" = any ]; then
            guarded=any
        elif [ "$guarded" = " " ]; then
            # .gitpatch.toml may name other branches: only Python reads it.
            guarded=" {defaults} "
            [ ! -f .gitpatch.toml ] || guarded=any
        fi
    fi
    case $guarded in any | *" $1 "*) return 0 ;; esac
    return 1
}}
agent_commit() {{
    not=
    case $1 in *[!0]*) not="^$1" ;; esac
    # A superset of the trailer: any line so starting. A failure (say, an old id this
    # repository lacks) leaves the decision to Python.
    found=$(git rev-list -n 1 --grep='^Gitpatch-Proposal[[:space:]]*:' "$2" $not \
        </dev/null 2>/dev/null) || return 0
    [ -n "$found" ]
}}
needed=
while read -r {fields}; do
    case $new in *[!0]*) ;; *) continue ;; esac
    case $ref in refs/*) ;; *) continue ;; esac
    [ -n "$source" ] || config_source
    # Cheaper test first: the list when the shell knows it (no process), else a range's few
    # commits before `git config`; a new ref's history may be all of it.
    case $source$old in
    git*[!0]*) agent_commit "$old" "$new" && protected "$ref" || continue ;;
    *) protected "$ref" && agent_commit "$old" "$new" || continue ;;
    esac
    needed=1
    break
done <<EOF
$input
EOF
[ -n "$needed" ] || exit 0
printf '%s' "$input" | "$python" -m {module} {name} "$@"
"""

#: How each hook's stdin lines read: the ref, its old value and its new one.
_FIELDS = {
    "pre-receive": "old new ref rest",
    "reference-transaction": "old new ref rest",
    "pre-push": "local_ref new ref old rest",
}


def hook_script(name: str, python: str = "python3", system_config: str | None = None) -> str:
    """The shell shim for git hook ``name``: it settles in the shell every update that cannot
    need the gate and runs ``python -m gitpatch.workspace.gate`` for the rest.

    ``system_config`` is the system config file of the git that installs it (the shim reads
    ``/etc/gitconfig`` too, libgit2's): the shell reads the protected list itself only when
    none of the files git or the gate would read can change it."""
    if name not in HOOKS:
        raise InvalidArguments(f"unknown hook {name!r}", hint=f"Use one of {', '.join(HOOKS)}.")
    # reference-transaction runs for every ref git moves, in three states: only "prepared" can
    # refuse, so the others exit before reading stdin unless a chained hook wants it.
    refs_only = name == "reference-transaction"
    return _SCRIPT.format(
        marker=MARKER,
        name=name,
        python=python,
        early='[ -n "$local_hook" ] || [ "$1" = prepared ] || exit 0\n' if refs_only else "",
        late='[ "$1" = prepared ] || exit 0\n' if refs_only else "",
        defaults=" ".join(f"refs/heads/{n}" for n in DEFAULT_PROTECTED),
        fields=_FIELDS[name],
        system=_shell_word(system_config) if system_config not in (None, "/etc/gitconfig") else "",
        module="gitpatch.workspace.gate",
    )


def git_system_config() -> str | None:
    """The system config file of the ``git`` on PATH (it names it to an editor), or None."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG")}
    env["GIT_EDITOR"] = "echo"
    try:
        done = subprocess.run(
            ["git", "config", "--system", "--edit"],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    path = done.stdout.strip()
    return path if done.returncode == 0 and path.startswith("/") and "\n" not in path else None


def _shell_word(text: str) -> str:
    """``text`` as one single-quoted shell word."""
    return "'" + text.replace("'", "'\\''") + "'"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m gitpatch.workspace.gate HOOK [ARGS]``: what the hook shims run."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stderr.write(f"usage: python -m gitpatch.workspace.gate {{{'|'.join(HOOKS)}}} [ARGS]\n")
        return 2
    return run_hook(args[0], args[1:], sys.stdin, sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
