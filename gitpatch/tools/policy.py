"""Who may do what to which path: tool permissions, approval, plan mode. Pure: no I/O.

A tool resolves every path it will touch, then asks its policy about each (operation, path)
before it parses edits or reads a file. The answer is a ``Decision``: ``allow``, ``deny`` or
``ask`` (a person must approve the change before it is applied). ``check`` turns a decision into
the spec's texts, raised as ``PermissionDenied`` / ``ApprovalRequired``.

Rules are globs matched against the path exactly as the tool's texts show it
(``/workspace/private.txt`` on a mounted filesystem, ``notes.txt`` on a plain storage):

- ``*`` matches within one path component, ``?`` one character, ``[abc]`` a class;
- ``**`` matches any number of components (``**/*.lock``, ``/workspace/secrets/**``);
- a pattern without ``/`` matches the last component wherever it is (``*.lock``), as
  ``.gitignore`` does.

Plan mode limits targets, whatever the rules say: ``standalone`` and ``sticky`` allow only the
session's own ``work://SESSION/...`` addresses (for every source and destination), ``directive``
allows no change at all. This module does not read config files; ``rules_from_config`` takes
the values a caller read (the Workspace's git config, see the README).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, Protocol

from gitpatch.core.paths import Address
from gitpatch.errors import ApprovalRequired, InvalidArguments, PermissionDenied, PlanModeDenied

__all__ = [
    "PLAN_MODES",
    "CombinedPolicy",
    "Decision",
    "PlanMode",
    "RulePolicy",
    "SideEffectApprovalToolPermissionPolicy",
    "ToolOperation",
    "ToolPermissionPolicy",
    "check",
    "check_plan_mode",
    "glob_matches",
    "rules_from_config",
    "workspace_tool_policy",
]


class ToolOperation(enum.Enum):
    """What a tool is about to do to one path."""

    READ_FILE = "read_file"
    MODIFY_FILE = "modify_file"
    CREATE_FILE = "create_file"
    DELETE_FILE = "delete_file"
    MOVE_FILE = "move_file"


Verdict = Literal["allow", "deny", "ask"]

#: How plan mode limits the targets of changes.
PlanMode = Literal["none", "standalone", "sticky", "directive"]
PLAN_MODES: tuple[str, ...] = ("none", "standalone", "sticky", "directive")


@dataclasses.dataclass(frozen=True)
class Decision:
    """A policy's answer for one (operation, path); ``rule`` names the glob that decided."""

    verdict: Verdict
    rule: str | None = None


class ToolPermissionPolicy(Protocol):
    """Anything with ``decide(tool, operation, path) -> Decision`` can guard a tool."""

    def decide(self, tool: str, operation: ToolOperation, path: str) -> Decision:
        """The verdict for ``tool`` doing ``operation`` on ``path`` (as the texts show it)."""
        ...


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.S)


def glob_matches(pattern: str, path: str) -> bool:
    """True when ``path`` matches the glob ``pattern`` (see the module docstring)."""
    if "/" not in pattern:
        return _glob_regex(pattern).fullmatch(path.rsplit("/", 1)[-1]) is not None
    if not pattern.startswith("/") and path.startswith("/") and not pattern.startswith("**"):
        pattern = "**/" + pattern
    return _glob_regex(pattern).fullmatch(path) is not None


def _first(patterns: Sequence[str], path: str) -> str | None:
    return next((p for p in patterns if glob_matches(p, path)), None)


@dataclasses.dataclass(frozen=True)
class RulePolicy:
    """Allow / deny / ask globs plus an optional approval gate for every side effect.

    Order: a ``deny`` match denies; then an ``ask`` match asks; then, when ``allow`` is given,
    a path matching none of its globs is denied; then side effects ask when
    ``require_approval_for_side_effects`` is set. Reads are only subject to ``deny``/``allow``.
    """

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    require_approval_for_side_effects: bool = False

    def decide(self, tool: str, operation: ToolOperation, path: str) -> Decision:
        """See the class docstring."""
        rule = _first(self.deny, path)
        if rule is not None:
            return Decision("deny", rule)
        side_effect = operation is not ToolOperation.READ_FILE
        rule = _first(self.ask, path)
        if rule is not None and side_effect:
            return Decision("ask", rule)
        if self.allow is not None and _first(self.allow, path) is None:
            return Decision("deny", None)
        if side_effect and self.require_approval_for_side_effects:
            return Decision("ask", None)
        return Decision("allow", None)


class SideEffectApprovalToolPermissionPolicy:
    """Every change (modify, create, delete, move) needs a person's approval; reads do not."""

    def decide(self, tool: str, operation: ToolOperation, path: str) -> Decision:
        """``ask`` for side effects, ``allow`` for reads."""
        return Decision("allow" if operation is ToolOperation.READ_FILE else "ask")


def _globs(value: Iterable[str] | str | None, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else tuple(value)
    for item in items:
        if not isinstance(item, str) or not item:
            raise InvalidArguments(
                f"{name} must be a list of non-empty glob strings, got {item!r}",
                hint=f"Pass {name}=['**/*.lock', '/workspace/private.txt'] or similar.",
            )
    return items


def workspace_tool_policy(
    require_approval_for_side_effects: bool = False,
    allow: Iterable[str] | None = None,
    deny: Iterable[str] = (),
    ask: Iterable[str] = (),
) -> RulePolicy:
    """A ``RulePolicy`` from globs (``allow=None`` allows whatever ``deny`` does not)."""
    return RulePolicy(
        allow=None if allow is None else _globs(allow, "allow"),
        deny=_globs(deny, "deny"),
        ask=_globs(ask, "ask"),
        require_approval_for_side_effects=bool(require_approval_for_side_effects),
    )


def rules_from_config(values: Mapping[str, Sequence[str]]) -> RulePolicy | None:
    """A policy from config values (``allow``, ``deny``, ``ask``: lists of globs;
    ``requireApproval``: ``["true"]``), or None when no key is set."""
    if not any(values.get(k) for k in ("allow", "deny", "ask", "requireApproval")):
        return None
    flag = [v.strip().lower() for v in values.get("requireApproval", ())]
    return workspace_tool_policy(
        require_approval_for_side_effects=bool(flag) and flag[-1] in ("true", "yes", "on", "1"),
        allow=list(values["allow"]) if values.get("allow") else None,
        deny=values.get("deny", ()),
        ask=values.get("ask", ()),
    )


@dataclasses.dataclass(frozen=True)
class CombinedPolicy:
    """Several policies at once: the strictest verdict wins (deny, then ask, then allow)."""

    policies: tuple[ToolPermissionPolicy, ...]

    def decide(self, tool: str, operation: ToolOperation, path: str) -> Decision:
        """The strictest of the policies' decisions."""
        found = [p.decide(tool, operation, path) for p in self.policies]
        for verdict in ("deny", "ask"):
            hit = next((d for d in found if d.verdict == verdict), None)
            if hit is not None:
                return hit
        return Decision("allow")


def check(
    policy: ToolPermissionPolicy | None, tool: str, operation: ToolOperation, path: str
) -> bool:
    """Raise ``PermissionDenied`` for a denied operation; True when it needs approval."""
    if policy is None:
        return False
    decision = policy.decide(tool, operation, path)
    if decision.verdict == "deny":
        why = f" (rule {decision.rule!r})" if decision.rule else " (not in the allowed paths)"
        raise PermissionDenied(
            f"permission denied: {tool} is not allowed for `{path}`",
            hint=f"The application's policy forbids this{why}; do not retry it. Ask the user, "
            "or work on another path.",
            details={"path": path, "operation": operation.value, "rule": decision.rule},
        )
    return decision.verdict == "ask"


def approval_required(tool: str, path: str) -> ApprovalRequired:
    """The spec's approval text for ``tool`` on ``path``."""
    return ApprovalRequired(
        f"approval required: {tool} requires application approval for `{path}` before execution",
        hint="A person must approve this change; do not retry it as is.",
        details={"path": path},
    )


def check_plan_mode(
    plan_mode: str, session: str | None, tool: str, target: Address | None, shown: str
) -> None:
    """Refuse a change plan mode does not allow; ``target`` is None for an ordinary path."""
    if plan_mode not in PLAN_MODES:
        raise InvalidArguments(
            f"unknown plan_mode {plan_mode!r}",
            hint="Use plan_mode='none', 'standalone', 'sticky' or 'directive'.",
        )
    if plan_mode == "none":
        return
    if plan_mode == "directive":
        raise PlanModeDenied(
            f"plan mode: {tool} is not allowed in directive planning (`{shown}`)",
            hint="Directive planning permits no patches: describe the change in your plan "
            "instead of making it.",
            details={"path": shown, "plan_mode": plan_mode},
        )
    own = target is not None and target.family == "work" and session is not None
    if own and target is not None and target.root == session:
        return
    if target is None:
        why = "an ordinary path"
    elif target.family != "work":
        why = "a memory:// address"
    elif session is None:
        why = "a work:// address, and this tool has no session"
    else:
        why = f"another session's work:// address (this session is {session!r})"
    mine = f"work://{session}/..." if session else "work://SESSION/..."
    raise PlanModeDenied(
        f"plan mode: {tool} may only change this session's {mine} files; `{shown}` is {why}",
        hint=f"In {plan_mode} plan mode write drafts under {mine}; other files change only "
        "after the plan is accepted.",
        details={"path": shown, "plan_mode": plan_mode},
    )
