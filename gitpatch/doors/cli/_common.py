"""What every ``gitpatch`` command shares: the repository it runs in, output, colour, input.

The command modules (``_edit``, ``_review``, ``_admin``) take an ``Env`` through
``pass_env`` and write through it; errors are not handled here but in ``cli.GitpatchGroup``,
the one place that turns them into exit codes.
"""

from __future__ import annotations

import json
import os
import posixpath
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click
from pydantic import BaseModel

from gitpatch.errors import InvalidArguments

if TYPE_CHECKING:
    from gitpatch.porcelain.workspace import Workspace
    from gitpatch.workspace.config import Config
    from gitpatch.workspace.results import Mode

__all__ = ["Env", "pass_env", "read_input", "to_jsonable", "wants_color"]


def wants_color(json_output: bool, stream: Any = None) -> bool:
    """Colour only on a terminal, never with ``--json`` or ``NO_COLOR`` (any value)."""
    if json_output or "NO_COLOR" in os.environ:
        return False
    out = stream if stream is not None else sys.stdout
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


@dataclass
class Env:
    """The global options (``-C``, ``--json``) and what is derived from them."""

    directory: Path
    json: bool = False
    color: bool = False
    #: where relative paths start when ``directory`` is a git directory (``GIT_DIR``)
    here: Path | None = None
    _config: Config | None = field(default=None, repr=False)
    #: the Workspaces this command opened, whose set-aside saves it tells at the end
    _opened: list[Workspace] = field(default_factory=list, repr=False)

    # -- the repository ------------------------------------------------------------------------

    def workspace(self, mode: Mode | None = None, **kw: Any) -> Workspace:
        """Open the repository at ``-C`` (or the current directory) in ``mode`` (config default)."""
        from gitpatch.porcelain.opening import open_workspace

        ws = open_workspace(self.directory, mode, self.config(), **kw)
        self._opened.append(ws)
        return ws

    def set_aside(self) -> list[str]:
        """The lines telling of each person's save the command's Workspaces set aside (a
        land's, or its recovery of a killed one's), each once."""
        return [line for ws in self._opened for line in ws.plumbing.set_aside()]

    def root(self) -> Path | None:
        """The working tree's root, or None for a bare repository."""
        from gitpatch.porcelain.opening import working_root

        return working_root(self.directory)

    def config(self) -> Config:
        """The repository's ``.gitpatch.toml`` (defaults when absent)."""
        from gitpatch.workspace import config

        if self._config is None:
            self._config = config.load(self.root())
        return self._config

    def repo_path(self, path: str) -> str:
        """``path`` as given on the command line (relative to the current directory, like git)
        as a path relative to the repository root."""
        root = self.root()
        if root is None or os.path.isabs(path):
            return path
        here = (self.here or self.directory).resolve()
        try:
            prefix = here.relative_to(root.resolve()).as_posix()
        except ValueError:
            return path
        return path if prefix in ("", ".") else posixpath.normpath(f"{prefix}/{path}")

    # -- output --------------------------------------------------------------------------------

    def style(self, text: str, **styles: Any) -> str:
        """``text`` styled when colour is on, else unchanged."""
        return click.style(text, **styles) if self.color else text

    def echo(self, text: str = "", *, err: bool = False) -> None:
        """One line (or block) to stdout, or stderr with ``err``."""
        click.echo(text, err=err, color=self.color)

    def emit(self, data: Any, text: str) -> None:
        """``data`` as JSON with ``--json``, else ``text`` for people."""
        if self.json:
            self.echo(json.dumps(to_jsonable(data), indent=2, ensure_ascii=False))
        else:
            self.echo(text)

    def status(self, text: str) -> None:
        """A progress line on stderr, only when stderr is a terminal and not with ``--json``."""
        if not self.json and sys.stderr.isatty():
            click.echo(click.style(text, dim=True) if self.color else text, err=True)

    @contextmanager
    def progress(self, items: list[Any], label: str) -> Iterator[Iterator[Any]]:
        """Iterate ``items`` with a progress bar on a terminal (stderr), plainly otherwise."""
        if self.json or not sys.stderr.isatty() or len(items) < 2:
            yield iter(items)
            return
        with click.progressbar(items, label=label, file=sys.stderr) as bar:
            yield iter(bar)


def to_jsonable(data: Any) -> Any:
    """Pydantic models (also inside lists and dicts) as plain JSON values."""
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json")
    if isinstance(data, list):
        return [to_jsonable(item) for item in data]
    if isinstance(data, dict):
        return {k: to_jsonable(v) for k, v in data.items()}
    return data


pass_env = click.make_pass_decorator(Env)


def read_input(source: str | None, what: str) -> str:
    """The text of ``source``: a file name, ``-`` or None for stdin, ``@file`` for a file too."""
    name = source[1:] if source and source.startswith("@") else source
    if name in (None, "-"):
        stream: TextIO = sys.stdin
        if stream.isatty():
            raise InvalidArguments(
                f"no {what} given: pass a file or pipe it on stdin",
                hint=f"Example: git diff | gitpatch apply -   (or: gitpatch ... {what}.txt)",
            )
        return stream.read()
    try:
        return Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArguments(
            f"cannot read {what} from {name!r}: {exc}",
            hint="Pass an existing UTF-8 file, or - for stdin.",
            details={"file": name},
        ) from exc
