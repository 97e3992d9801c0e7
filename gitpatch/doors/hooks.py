"""The git hooks' door: what the hook shims in ``hooks/`` run, and the shims themselves.

``run_hook`` applies the approval rule (``gitpatch.workspace.gate.check_update``) to the ref
updates git hands a hook on stdin: ``reference-transaction`` (local, git >= 2.28), ``pre-push``
and ``pre-receive`` (a shared remote). ``hook_script`` writes the shell shims that settle most
updates without starting Python; ``python -m gitpatch.doors.hooks HOOK`` is what they start
for the rest. This module reads the repository and never writes to it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TextIO

import pygit2

from gitpatch.errors import GitpatchError, InvalidArguments
from gitpatch.store import NOTES_REF, Store, git_errors
from gitpatch.workspace import config
from gitpatch.workspace.gate import check_update
from gitpatch.workspace.sessions import DEFAULT_PROTECTED, protected_branches

__all__ = ["HOOKS", "MARKER", "git_system_config", "hook_script", "main", "run_hook"]

#: The hooks gitpatch ships, by git hook name.
HOOKS = ("pre-receive", "reference-transaction", "pre-push")

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
        # libgit2's errors (a damaged ref, an unreadable object) as the store translates them
        with git_errors("check the update"):
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
                check_update(
                    store, ref, _oid(old), _oid(new), protected=guarded, notes_tip=notes_tip
                )
    except GitpatchError as exc:
        err.write(f"gitpatch: {exc.code}: {exc.message}\n")
        if exc.hint:
            err.write(f"gitpatch: {exc.hint}\n")
        if hook == "reference-transaction":
            err.write(f"gitpatch: {_AFTER_FAST_FORWARD}\n")
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
    need the gate and runs ``python -m gitpatch.doors.hooks`` for the rest.

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
        module="gitpatch.doors.hooks",
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
    """``python -m gitpatch.doors.hooks HOOK [ARGS]``: what the hook shims run."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stderr.write(f"usage: python -m gitpatch.doors.hooks {{{'|'.join(HOOKS)}}} [ARGS]\n")
        return 2
    return run_hook(args[0], args[1:], sys.stdin, sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
