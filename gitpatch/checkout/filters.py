"""git's content conversions for one working tree: what ``git add`` stores, what checkout writes.

With ``core.autocrlf``, a ``text``/``eol``/``crlf`` attribute, ``ident``,
``working-tree-encoding`` or a ``filter=`` driver, the bytes on disk are not the blob's bytes.
For those paths (``converts``) gitpatch lets the ``git`` binary convert, so the result is
exactly git's, external clean/smudge drivers included (libgit2 runs none of those):

- ``clean(path, data)``: the blob ``git add`` would store for ``data`` at ``path``
  (``git hash-object -w --stdin --path``);
- ``disk_blob(path)``: the blob id the file on disk would get (``git hash-object``);
- ``smudge(path, blob)``: the bytes checkout would write (``git cat-file --filters``).

``git hash-object --path`` misses one rule of ``git add``: under an *automatic* end-of-line
conversion (``text=auto``, or ``core.autocrlf`` with no ``text``/``eol`` attribute) a file
whose index blob already holds CRLF is stored as it is (convert.c, "has CRLF in index"), so
``git status`` calls such a file clean. ``keeps_crlf`` applies that rule, from git's own
attribute and index answers; the file then needs no conversion at all (with another
conversion on the same path, a filter driver, ``ident`` or ``working-tree-encoding``, it is
refused: gitpatch could not reproduce git's combination exactly).

A change that edits a ``.gitattributes`` file converts the files it writes under the NEW
attributes, as a fresh checkout of its commit would (``under``): git runs in a scratch working
tree holding only the commit's attribute files, so it reads those instead of the ones on disk.

Paths without any of those settings never start a process: the cost stays on the repositories
that use conversions. Most repositories have no attribute file at all, and libgit2's first
attribute question loads the whole index (0.4 s at 100,000 files, the first call's cost): when
no file git or libgit2 reads attributes from exists for a path (``.gitattributes`` on disk in
its folders or named in the index, ``info/attributes``, ``core.attributesFile`` or the global
``$XDG_CONFIG_HOME/git/attributes``, the system ``gitattributes``), its attributes are known
empty without asking (``_attributes_absent``); otherwise libgit2 answers as before. A
conversion git refuses (a ``required`` filter that fails, ``core.safecrlf``) is
``filter_failed``, and nothing is written.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pygit2
from pygit2.enums import ConfigLevel

from gitpatch.checkout import gitbin
from gitpatch.core.text import is_utf8_text
from gitpatch.errors import FilterFailed, GitpatchError, NotATextResource
from gitpatch.safety import owners
from gitpatch.store import Store, git_errors

__all__ = ["ATTRIBUTES", "ATTRIBUTES_FILE", "Filters", "attribute_files", "changes_attributes"]

#: Attributes under which the disk bytes may differ from the blob's.
ATTRIBUTES = ("filter", "text", "eol", "crlf", "ident", "working-tree-encoding")


class Filters:
    """The conversions of one working tree (``store``'s repository must have one); every
    read of the repository goes through the store."""

    def __init__(self, store: Store, attributes_root: str | None = None) -> None:
        self._store = store
        self._gitdir = str(store.git_dir)
        self._root = attributes_root or str(store.workdir)
        # a scratch tree holding other attribute files (``under``): git decides every path
        self._scratch = attributes_root is not None
        self._config = store.config_handle()
        self._known: dict[str, tuple[tuple[object, ...], bool]] = {}
        self._keeps: dict[str, tuple[tuple[object, ...], bool]] = {}
        self._common = str(owners.common_dir(str(store.git_dir)))
        self._elsewhere: tuple[tuple[object, ...], bool | pygit2.Oid] | None = None

    @contextlib.contextmanager
    def under(self, attributes: Mapping[str, bytes]) -> Iterator[Filters]:
        """These conversions as the attribute files ``attributes`` (path of each
        ``.gitattributes`` -> content, empty for one that goes) would make them: for the
        blobs and checkout bytes of a change that edits them (``clean``, ``to_blob``,
        ``checkout_bytes``; never ``disk_blob``, the disk is not there)."""
        scratch = tempfile.mkdtemp(prefix="attributes-", dir=self._gitdir)
        try:
            for path, data in attributes.items():
                target = Path(scratch, *path.split("/"))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            yield Filters(self._store, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def converts(self, path: str) -> bool:
        """True when git may convert between the blob and the file at ``path``.

        Remembered until one of the files its answer comes from changes (the repository's
        attribute files on the way to ``path``, ``info/attributes``, the index, the config).
        """
        if self._scratch:
            return True
        stamp = self._stamp(path)
        known = self._known.get(path)
        if known is not None and known[0] == stamp:
            return known[1]
        answer = self._converts(path)
        self._known[path] = (stamp, answer)
        return answer

    def _stamp(self, path: str) -> tuple[object, ...]:
        parts = path.split("/")[:-1]
        sources = [os.path.join(self._gitdir, "info", "attributes")]
        sources += [os.path.join(self._common, "info", "attributes")]
        sources += [os.path.join(self._gitdir, "index"), os.path.join(self._gitdir, "config")]
        sources += _outside_files(self._attributes_file())
        sources += [
            os.path.join(self._root, *parts[:depth], ".gitattributes")
            for depth in range(len(parts) + 1)
        ]
        return tuple(_stat(source) for source in sources)

    def _converts(self, path: str) -> bool:
        config = self._config
        try:
            with git_errors("read core.autocrlf"):
                autocrlf = str(config["core.autocrlf"]).lower() if "core.autocrlf" in config else ""
        except GitpatchError:
            autocrlf = ""
        if autocrlf in ("true", "input", "1", "yes", "on"):
            return True
        if self._attributes_absent(path):
            return False
        try:
            with git_errors(f"read the attributes of {path}"):
                return any(
                    self._store.attribute(path, name) not in (None, False) for name in ATTRIBUTES
                )
        except GitpatchError:
            return True  # attributes libgit2 cannot read (a split index): git itself decides

    def to_blob(self, path: str, data: bytes) -> bytes:
        """``data`` (as on disk at ``path``) as the blob ``git add`` would store."""
        if not self.converts(path) or self.keeps_crlf(path):
            return data
        return self.clean(path, data)

    def hash_file(self, path: str, full: Path) -> str:
        """The blob id (hex) ``git add`` would give the file ``full`` at ``path``."""
        if not self.converts(path) or self.keeps_crlf(path):
            return str(pygit2.hashfile(str(full)))
        return self.disk_blob(path)

    def keeps_crlf(self, path: str) -> bool:
        """True when ``git add`` stores ``path`` without conversion because its end-of-line
        conversion is automatic and its index blob already has CRLF (module doc).

        Remembered like ``converts`` (the index is one of the files its answer comes from)."""
        stamp = self._stamp(path)
        known = self._keeps.get(path)
        if known is None or known[0] != stamp:
            known = self._keeps[path] = (stamp, self._keeps_crlf(path))
        return known[1]

    def _keeps_crlf(self, path: str) -> bool:
        attrs = self._attributes(path)
        if not _automatic_eol(attrs, self._autocrlf()) or not self._crlf_in_index(path):
            return False
        extra = [a for a in ("filter", "ident", "working-tree-encoding") if attrs.get(a)]
        if extra:
            raise FilterFailed(
                f"{path} keeps the CRLF its index blob has (automatic end-of-line conversion) "
                f"and also has {', '.join(extra)}: gitpatch cannot reproduce that combination "
                "of git's conversions exactly",
                hint="Commit the file with LF line endings (`git add --renormalize`), or set "
                "`text` or `-text` for it in .gitattributes. Nothing was changed.",
                details={"path": path, "attributes": extra},
            )
        return True

    def encoding(self, path: str) -> str | None:
        """The ``working-tree-encoding`` of ``path`` (the disk's encoding), None without one."""
        if not self._scratch and self._attributes_absent(path):
            return None
        try:
            with git_errors(f"read the attributes of {path}"):
                value = self._store.attribute(path, "working-tree-encoding")
        except GitpatchError:
            return None
        return value if isinstance(value, str) and value else None

    def refuse_encoded(self, path: str, data: bytes) -> None:
        """``not_a_text_resource`` naming the attribute when ``path`` has a
        ``working-tree-encoding`` and its checked-out ``data`` is not UTF-8 text: gitpatch
        edits files as checked out, and those bytes are in another encoding."""
        encoding = self.encoding(path)
        if encoding is None or is_utf8_text(data):
            return
        raise NotATextResource(
            f"{path} is checked out as {encoding} (working-tree-encoding={encoding}); "
            "gitpatch edits UTF-8 text files as they are on disk, so it does not edit this one",
            hint="Replace the file whole, or drop the working-tree-encoding attribute and "
            "store it as UTF-8. Nothing was changed.",
            details={"path": path, "encoding": encoding, "attribute": "working-tree-encoding"},
        )

    def _attributes_absent(self, path: str) -> bool:
        """True when no file git or libgit2 reads attributes of ``path`` from exists, so it
        has none (module doc); False when one may (libgit2 is asked then)."""
        parts = path.split("/")[:-1]
        folders = ["/".join(parts[:depth]) for depth in range(len(parts) + 1)]
        for folder in folders:
            if os.path.lexists(os.path.join(self._root, folder, ATTRIBUTES_FILE)):
                return False
        view = self._elsewhere_view()
        if not isinstance(view, pygit2.Oid):
            return view
        try:  # the index holds exactly this tree: look the path's folders up in it
            with git_errors("look for attribute files in the index's tree"):
                return not any(
                    self._store.entry(view, f"{folder}/{ATTRIBUTES_FILE}".lstrip("/"))
                    for folder in folders
                )
        except GitpatchError:
            return False

    def _elsewhere_view(self) -> bool | pygit2.Oid:
        """No attribute file outside the working tree's folders, and what the index says
        (``_index_view``); remembered until one of those files, the index or the config
        changes. False when one may exist."""
        named = self._attributes_file()
        index = os.path.join(self._gitdir, "index")
        outside = [
            os.path.join(self._gitdir, "info", "attributes"),
            os.path.join(self._common, "info", "attributes"),
            *_outside_files(named),
        ]
        stamp = tuple(_stat(f) for f in [index, os.path.join(self._gitdir, "config"), *outside])
        if self._elsewhere is not None and self._elsewhere[0] == stamp:
            return self._elsewhere[1]
        view = False if any(os.path.lexists(f) for f in outside) else self._index_view()
        self._elsewhere = (stamp, view)
        return view

    def _index_view(self) -> bool | pygit2.Oid:
        """What the index says of ``.gitattributes`` files (git reads one from the index when
        the disk has none): True when it surely names none, the tree it holds exactly (its
        cache tree's root, read from the index's tail: the path's folders are then looked up
        there, at no cost), or False when it may name one.

        Without a valid cache tree the whole index is searched (2 ms at 100,000 entries),
        which only index versions 2 and 3 allow (they spell every path whole); a sparse
        checkout (its sparse index hides a folder's files behind one entry) may, and a
        split index has its shared part searched too."""
        if self._config_true("core.sparseCheckout") or self._config_true("index.sparse"):
            return False
        index = os.path.join(self._gitdir, "index")
        shared: list[str] = []
        with contextlib.suppress(OSError):
            shared = [n for n in os.listdir(self._gitdir) if n.startswith("sharedindex.")]
        try:
            with open(index, "rb") as fh:
                head = fh.read(12)
                size = os.fstat(fh.fileno()).st_size
                fh.seek(max(12, size - _TAIL_BYTES))
                tail = fh.read()
        except FileNotFoundError:
            return not shared
        except OSError:
            return False
        if head[:4] != b"DIRC":
            return False
        tree = None if shared else _cached_tree(tail, int.from_bytes(head[8:12], "big"))
        if tree is not None:
            return tree
        return not any(_may_name(os.path.join(self._gitdir, n)) for n in ["index", *shared])

    def _attributes_file(self) -> str | None:
        """``core.attributesFile`` (``~`` expanded), None when unset."""
        try:
            with git_errors("read core.attributesFile"):
                if "core.attributesFile" not in self._config:
                    return None
                return os.path.expanduser(str(self._config["core.attributesFile"]))
        except GitpatchError:
            return ""  # unreadable: no shortcut (an empty name exists nowhere, see below)

    def _config_true(self, key: str) -> bool:
        try:
            with git_errors(f"read {key}"):
                return key in self._config and bool(self._config.get_bool(key))
        except (GitpatchError, ValueError):
            return True

    def _autocrlf(self) -> str:
        with_value = "core.autocrlf" in self._config
        return str(self._config["core.autocrlf"]).lower() if with_value else ""

    def _attributes(self, path: str) -> dict[str, str]:
        """git's own answer (``git check-attr``): attribute -> ``set``, ``unset``, a value."""
        out = self._git(path, ["check-attr", "-z", "text", "eol", "crlf", *_EXTRA, "--", path])
        fields = out.decode("utf-8", "surrogateescape").split("\0")
        found = dict(zip(fields[1::3], fields[2::3], strict=False))
        return {k: v for k, v in found.items() if v != "unspecified"}

    def _crlf_in_index(self, path: str) -> bool:
        """The stage-0 index blob of ``path`` has CRLF and is text, as convert.c counts."""
        out = self._git(path, ["--literal-pathspecs", "ls-files", "-s", "-z", "--", path])
        row = out.decode("utf-8", "surrogateescape").split("\0")[0]
        meta = row.split("\t", 1)[0].split()
        if len(meta) != 3 or meta[2] != "0" or meta[0] == "160000":
            return False
        return _text_with_crlf(self._store.blob_data(pygit2.Oid(hex=meta[1]), path))

    def checkout_bytes(self, path: str, blob: pygit2.Oid) -> bytes:
        """What ``git checkout`` writes at ``path`` for ``blob``."""
        if self.converts(path):
            if not self._store.has_blob(blob):  # git would fetch it from a promisor remote
                self._store.refuse_missing(blob, path)
            return self.smudge(path, blob)
        return self._store.blob_data(blob, path)

    def clean(self, path: str, data: bytes) -> bytes:
        """The bytes ``git add`` stores for ``data`` at ``path`` (the blob is written too)."""
        out = self._git(path, ["hash-object", "-w", "--stdin", f"--path={path}"], data)
        oid = pygit2.Oid(hex=out.decode("ascii").strip())
        return self._store.blob_data(oid)

    def disk_blob(self, path: str) -> str:
        """The blob id ``git add`` would give the file at ``path`` (nothing is written)."""
        out = self._git(path, ["hash-object", "--", path])
        return out.decode("ascii").strip()

    def smudge(self, path: str, blob: pygit2.Oid) -> bytes:
        """The bytes ``git checkout`` writes at ``path`` for ``blob``."""
        return self._git(path, ["cat-file", "--filters", f"--path={path}", str(blob)])

    def _git(self, path: str, args: list[str], stdin: bytes = b"") -> bytes:
        try:
            return gitbin.run(self._gitdir, self._root, args, stdin)
        except gitbin.GitFailed as exc:
            raise FilterFailed(
                f"git could not convert {path} as its attributes ask ({exc.stderr})",
                hint="Check the path's filter driver and line-ending settings "
                "(`git check-attr -a -- <path>`); gitpatch converts exactly as git does or "
                "changes nothing.",
                details={"path": path},
            ) from exc


_EXTRA = ("filter", "ident", "working-tree-encoding")
ATTRIBUTES_FILE = ".gitattributes"


def changes_attributes(paths: Iterator[str] | list[str] | tuple[str, ...]) -> bool:
    """True when one of ``paths`` is a ``.gitattributes`` file."""
    return any(p.rsplit("/", 1)[-1] == ATTRIBUTES_FILE for p in paths)


def _automatic_eol(attrs: dict[str, str], autocrlf: str) -> bool:
    """git's CRLF_AUTO family: ``text=auto``, or ``core.autocrlf`` true/input with neither
    ``text``, ``eol`` nor the old ``crlf`` attribute saying otherwise."""
    if "text" in attrs:
        return attrs["text"] == "auto"
    if "eol" in attrs or "crlf" in attrs:
        return False
    return autocrlf in ("true", "input", "1", "yes", "on")


def _text_with_crlf(data: bytes) -> bool:
    """convert.c's stats: some CRLF, and text (no NUL, no lone CR, few non-printables; LF and
    CR counted apart, a final DOS end-of-file byte forgiven)."""
    if b"\r\n" not in data or b"\0" in data or data.count(b"\r") != data.count(b"\r\n"):
        return False
    nonprintable = len(data.translate(None, _PRINTABLE))
    if data.endswith(b"\x1a"):
        nonprintable -= 1
    printable = len(data) - nonprintable - data.count(b"\n") - data.count(b"\r")
    return (printable >> 7) >= nonprintable


#: Bytes convert.c counts as printable (deleted to count the others); LF and CR go apart.
_PRINTABLE = bytes([8, 9, 10, 12, 13, 27, *range(32, 127), *range(128, 256)])


#: How much of the index's end holds its extensions, where the cache tree is looked for.
_TAIL_BYTES = 1 << 20
#: The cache tree extension's root entry: signature, size, empty path, entry and subtree counts.
_TREE_ROOT = re.compile(rb"TREE(.{4})\x00(-?[0-9]+) ([0-9]+)\n", re.DOTALL)


def _cached_tree(tail: bytes, entries: int) -> pygit2.Oid | None:
    """The tree the index holds exactly, from the root of its cache tree extension found in
    ``tail`` (the index's end) when it is valid and covers all ``entries``; else None."""
    at = len(tail)
    for _ in range(8):  # the last "TREE" is the extension's, unless a later one spells it
        at = tail.rfind(b"TREE", 0, at)
        if at < 0:
            return None
        found = _TREE_ROOT.match(tail, at)
        if found is None or int(found[2]) != entries:
            continue
        if at + 8 + int.from_bytes(found[1], "big") > len(tail) - 20:
            continue
        raw = tail[found.end() : found.end() + 20]
        with contextlib.suppress(ValueError, TypeError):
            return pygit2.Oid(raw=raw)
    return None


def _may_name(index: str) -> bool:
    """True unless the index file ``index`` (version 2 or 3) surely names no attribute file."""
    try:
        with open(index, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    version = int.from_bytes(data[4:8], "big") if len(data) >= 12 else 0
    if data[:4] != b"DIRC" or version not in (2, 3):
        return True
    return b".gitattributes\0" in data


def _outside_files(named: str | None) -> list[str]:
    """The attribute files outside the repository that git or libgit2 read: the system one
    (``/etc/gitattributes``, and libgit2's system folder), and ``core.attributesFile``
    (``named``), else the global ``$XDG_CONFIG_HOME/git/attributes`` (``~/.config/git/...``
    without it, and libgit2's own XDG folder). What cannot be known (an unreadable setting,
    ``named`` empty) is the root folder ``/``, which always exists: no shortcut then."""
    files = ["/etc/gitattributes", *_search(ConfigLevel.SYSTEM, "gitattributes")]
    if named is not None:
        return [*files, named or os.sep]
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return [*files, os.path.join(xdg, "git", "attributes"), *_search(ConfigLevel.XDG, "attributes")]


def _search(level: ConfigLevel, name: str) -> list[str]:
    """File ``name`` in each of libgit2's folders for config ``level`` (read from the
    environment when libgit2 started)."""
    try:
        with git_errors("read libgit2's search path"):
            found = pygit2.settings.search_path[level]
    except (GitpatchError, KeyError, ValueError):
        return [os.sep]  # unknown: no shortcut
    return [os.path.join(d, name) for d in str(found or "").split(os.pathsep) if d]


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def attribute_files(tree: pygit2.Tree | None, prefix: str = "") -> dict[str, bytes]:
    """Every ``.gitattributes`` file of ``tree`` (path -> content)."""
    out: dict[str, bytes] = {}
    for item in tree or ():
        path = f"{prefix}{item.name}"
        if item.type == pygit2.enums.ObjectType.TREE:
            out.update(attribute_files(item.peel(pygit2.Tree), f"{path}/"))
        elif item.name == ATTRIBUTES_FILE and item.type == pygit2.enums.ObjectType.BLOB:
            out[path] = bytes(item.peel(pygit2.Blob).data)
    return out
