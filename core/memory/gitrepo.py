"""The memory git repository, through dulwich: deterministic commits of whole files.

Layer: objects -> refs -> work tree. A commit is built at the object level
(blobs, one tree, a commit whose time is the event's time and whose author is
fixed), so rebuilding the repository from the log reproduces the same SHAs.
The work tree and the index are then updated to match, so the real ``git``
binary sees a clean checkout. ``core.fsync=objects,derived-metadata,reference`` (the
key current git reads; dulwich's object store is told directly), ``gc.auto=0``.
Errors from dulwich and the OS leave this module as :class:`GitError`.

The index doubles as the record of what memtray last wrote to the work tree:
:meth:`GitRepo.worktree_status` tells a work tree that a crash left one commit
behind (it still matches the index) from one edited by hand (it matches nothing
memtray wrote).

``crash_point`` (:mod:`memtray.core.base.faults`) is a test hook: with ``MEMTRAY_TEST_CRASH_AT=<name>`` in the
environment the process SIGKILLs itself at that named step, so crash tests can
stop a real process between two writes. Without the variable it does nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memtray.core.base.errors import EnvironmentProblem, MemtrayError
from memtray.core.base.faults import crash_point
from memtray.core.base.fsutil import DIR_MODE, atomic_write, ensure_dir
from memtray.core.base.worker import WriterThread

log = logging.getLogger(__name__)

BRANCH = b"refs/heads/main"
AUTHOR = b"memtray <memtray@localhost>"
FILES = ("MEMORY.md", "HISTORY.md")
_LOCKS = ("index.lock", "HEAD.lock", "config.lock", "packed-refs.lock", "shallow.lock")
#: what every memory repository is set to (existing ones are migrated at open). ``core.fsync``
#: is the key current git reads (``core.fsyncObjectFiles`` is deprecated).
_CONFIG = (
    ((b"core",), b"fsync", b"objects,derived-metadata,reference"),
    ((b"core",), b"fsyncMethod", b"fsync"),
    ((b"gc",), b"auto", b"0"),
    ((b"core",), b"autocrlf", b"false"),
)


def _describe(exc: BaseException) -> str:
    """A plain reason for an error from dulwich or the OS (never a traceback)."""
    from memtray.core.base.fsutil import describe_oserror

    if isinstance(exc, OSError):
        return describe_oserror(exc)
    name = type(exc).__name__
    if name == "FileLocked":
        return "a lock file is in the way (left by a process that was killed?)"
    return f"{name}: {exc}"


@contextlib.contextmanager
def translated(what: str) -> Iterator[None]:
    """Let MemtrayErrors through; turn anything dulwich or the OS raises into GitError."""
    try:
        yield
    except MemtrayError:
        raise
    except Exception as exc:
        raise GitError(f"{what}: {_describe(exc)}") from exc


def encode_text(name: str, text: str) -> bytes:
    """``text`` as the UTF-8 bytes of file ``name``; GitError if it cannot be (a lone
    surrogate in an event written before memtray refused them)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UnstorableText(f"{name} holds a lone surrogate (U+{ord(text[exc.start]):04X}) at character "
                             f"{exc.start:,}, which git cannot store") from None


class GitError(EnvironmentProblem):
    """The memory repository could not be read or written."""

    hint = "Run `memtray doctor`; the repository can be rebuilt from the event log."


class UnstorableText(GitError):
    """An event's text cannot become a file (it is not valid Unicode): the revision is
    quarantined (skipped by git, kept in the log) and ``memtray doctor`` reports it."""

    hint = "Run `memtray doctor`: it names the event; `memtray doctor --repair` writes a clean revision."


class BadRevision(MemtrayError):
    hint = "Use a commit sha or unique prefix, HEAD~N, or a consolidation id (see `memtray memory log`)."


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    parents: tuple[str, ...]
    time: datetime
    message: str
    trailers: dict[str, str]

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]


_TRAILER = re.compile(r"^([A-Z][A-Za-z-]+): (.*)$")


def parse_trailers(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    paragraphs = message.strip().split("\n\n")
    for line in paragraphs[-1].splitlines():
        m = _TRAILER.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


class GitRepo:
    def __init__(self, path: Path) -> None:
        self.path = Path(path).absolute()
        self._repo: Any = None  # dulwich.repo.Repo
        #: what checkout_files said about links it removed (MemoryService tells the user)
        self.removed_links: list[str] = []
        #: the one thread allowed to write (the App's worker); None: any (doctor, tools)
        self.writer: WriterThread | None = None

    def _check_writer(self, what: str) -> None:
        if self.writer is not None:
            self.writer.check(what)

    # --- lifecycle ------------------------------------------------------------------

    def exists(self) -> bool:
        return (self.path / ".git" / "HEAD").is_file()

    def open(self, *, create: bool = True) -> GitRepo:
        from dulwich.repo import Repo

        try:
            if not self.exists():
                if not create:
                    raise GitError(f"{self.path} is not a git repository")
                ensure_dir(self.path)
                repo = Repo.init(str(self.path))
                repo.refs.set_symbolic_ref(b"HEAD", BRANCH)  # type: ignore[arg-type]
                os.chmod(self.path / ".git", DIR_MODE)
            else:
                repo = Repo(str(self.path))
            cfg = repo.get_config()
            changed = False
            core = cfg[(b"core",)] if cfg.has_section((b"core",)) else None
            if core is not None and b"fsyncObjectFiles" in core:
                # deprecated since git 2.36 (plain `git log` warns about it); core.fsync replaces it
                del core[b"fsyncObjectFiles"]
                changed = True
            for section, key, value in _CONFIG:
                try:
                    current = cfg.get(section, key)
                except KeyError:
                    current = None
                if current != value:
                    cfg.set(section, key, value)
                    changed = True
            if changed:
                cfg.write_to_path()
                repo = Repo(str(self.path))
        except MemtrayError:
            raise
        except Exception as exc:
            raise GitError(f"cannot open the memory repository {self.path}: {_describe(exc)}") from exc
        # dulwich reads only the deprecated key: tell its object store directly to fsync
        # every object it writes (refs and the index are fsynced by dulwich anyway)
        repo.object_store.fsync_object_files = True
        self._repo = repo
        return self

    def clean_stale_locks(self) -> list[str]:
        """Remove git lock files left by a killed process (call only under the app lock).

        dulwich writes every file through ``<name>.lock`` (created exclusively, renamed
        into place): loose objects (``objects/95/de5c....lock``), refs, the index,
        HEAD, config. One left behind blocks every later write of that file, so all of
        them go, with half-written pack temporaries. Returns what was removed (relative
        to ``.git``).
        """
        git = self.path / ".git"
        found: list[Path] = [git / name for name in _LOCKS]
        for sub in ("objects", "refs"):
            top = git / sub
            if top.is_dir() and not top.is_symlink():
                for root, dirs, names in os.walk(top, followlinks=False):
                    if sub == "objects" and Path(root) == top:
                        dirs[:] = [d for d in dirs if len(d) == 2 or d == "pack"]
                    found += [Path(root) / n for n in names
                              if n.endswith(".lock") or (n.startswith("tmp_pack_") and sub == "objects")]
        removed = []
        for p in found:
            try:
                p.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise GitError(f"cannot remove the stale lock {p}: {exc.strerror or exc}") from exc
            removed.append(p.relative_to(git).as_posix())
        if removed:
            log.warning("removed stale git lock files: %s", ", ".join(sorted(set(removed))))
        return sorted(set(removed))

    @property
    def repo(self) -> Any:
        if self._repo is None:
            self.open()
        return self._repo

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()
            self._repo = None

    # --- reading --------------------------------------------------------------------

    def head(self) -> str | None:
        try:
            return self.repo.refs[BRANCH].decode()  # type: ignore[no-any-return]
        except KeyError:
            return None

    def ref(self, name: str) -> str | None:
        try:
            return self.repo.refs[name.encode()].decode()  # type: ignore[no-any-return]
        except KeyError:
            return None

    def branches(self) -> list[str]:
        return sorted(r.decode() for r in self.repo.refs if r.startswith(b"refs/heads/"))

    def info(self, sha: str) -> CommitInfo:
        try:
            c = self.repo[sha.encode()]
        except KeyError as exc:
            raise BadRevision(f"no revision {sha}") from exc
        msg = c.message.decode("utf-8", "replace")
        return CommitInfo(
            sha, tuple(p.decode() for p in c.parents),
            datetime.fromtimestamp(c.commit_time, UTC), msg, parse_trailers(msg),
        )

    def has_commit(self, sha: str) -> bool:
        try:
            return self.repo[sha.encode()].type_name == b"commit"  # type: ignore[no-any-return]
        except (KeyError, ValueError):
            return False

    def read(self, sha: str, name: str) -> str:
        """The text of ``name`` at commit ``sha`` ("" if the file is absent); ``name`` may be
        in a folder (``scopes/work.md``)."""
        blob_sha = self._blob_id(sha, name)
        if blob_sha is None:
            return ""
        return self.repo[blob_sha].data.decode("utf-8", "replace")  # type: ignore[no-any-return]

    def listdir(self, sha: str, folder: str) -> list[str]:
        """The names of the files in ``folder`` at commit ``sha`` (none: [])."""
        try:
            commit = self.repo[sha.encode()]
            _mode, tree_sha = self.repo[commit.tree][folder.encode()]
            tree = self.repo[tree_sha]
            return sorted(e.path.decode("utf-8", "replace") for e in tree.iteritems())
        except (KeyError, AttributeError):
            return []

    def read_memory(self, sha: str) -> str:
        """The whole memory of commit ``sha``: MEMORY.md and every scope's file, joined
        (core/memory/scopes.py), which is the text its ``memory.written`` carries."""
        from memtray.core.memory import scopes

        named = {n.removesuffix(".md"): self.read(sha, f"{scopes.FOLDER}/{n}")
                 for n in self.listdir(sha, scopes.FOLDER) if n.endswith(".md")}
        return scopes.from_files(self.read(sha, "MEMORY.md"), named)

    def walk(self, start: str | None = None) -> Iterator[CommitInfo]:
        """First-parent history from ``start`` (default HEAD), newest first."""
        sha = start or self.head()
        while sha:
            info = self.info(sha)
            yield info
            sha = info.parents[0] if info.parents else None

    # --- writing --------------------------------------------------------------------

    def commit(
        self,
        files: dict[str, str],
        message: str,
        when: datetime,
        *,
        branch: bytes = BRANCH,
        update_worktree: bool = True,
        parents: Sequence[str] | None = None,
    ) -> str:
        """One commit containing ``files`` (whole contents) on top of ``branch`` (or, with
        ``parents``, with those parents: a merge, or a commit of another device's line)."""
        self._check_writer("a memory commit")
        from dulwich.objects import Blob, Commit, Tree

        repo = self.repo
        try:
            parent = repo.refs[branch]
        except KeyError:
            parent = None
        try:
            tree = Tree()
            blobs: list[Any] = []
            folders: dict[str, Any] = {}
            for name in sorted(files):
                blob = Blob.from_string(encode_text(name, files[name]))
                blobs.append(blob)
                folder, _, base = name.rpartition("/")
                if folder:  # one level of folders: scopes/NAME.md
                    folders.setdefault(folder, Tree()).add(base.encode(), 0o100644, blob.id)
                else:
                    tree.add(name.encode(), 0o100644, blob.id)
            for folder, sub in sorted(folders.items()):
                blobs.append(sub)
                tree.add(folder.encode(), 0o040000, sub.id)
            commit = Commit()
            commit.tree = tree.id
            given: list[Any] = [p.encode() for p in parents] if parents is not None else []
            commit.parents = given if parents is not None else [parent] if parent else []
            commit.author = commit.committer = AUTHOR
            ts = int(when.timestamp())
            commit.author_time = commit.commit_time = ts
            commit.author_timezone = commit.commit_timezone = 0
            commit.encoding = b"UTF-8"
            commit.message = encode_text("the commit message", message.replace("\x00", ""))
            store = repo.object_store
            for obj in (*blobs, tree, commit):
                if obj.id not in store:
                    store.add_object(obj)
            if not repo.refs.set_if_equals(branch, parent, commit.id):
                raise GitError("the memory branch moved during a commit (another writer?)")
        except MemtrayError:
            raise
        except Exception as exc:  # OSError (a full disk), dulwich's FileLocked, ...
            raise GitError(f"cannot write the memory repository: {_describe(exc)}") from exc
        crash_point("git.ref-updated")
        if update_worktree and branch == BRANCH:
            self.checkout_files(files)
        return commit.id.decode()

    def set_ref(self, name: str, sha: str | None) -> None:
        self._check_writer("a memory ref update")
        ref = name.encode()
        with translated("cannot update a ref of the memory repository"):
            if sha is None:
                with contextlib.suppress(KeyError):
                    del self.repo.refs[ref]
            else:
                self.repo.refs[ref] = sha.encode()

    def checkout_files(self, files: dict[str, str]) -> None:
        """Write the work tree files and make the index match them."""
        self._check_writer("a memory checkout")
        with translated("cannot write the memory work tree"):
            self._checkout_files(files)

    def _checkout_files(self, files: dict[str, str]) -> None:
        from dulwich.index import index_entry_from_stat
        from dulwich.objects import Blob

        index = self.repo.open_index()
        changed = False
        for name, text in files.items():
            data = encode_text(name, text)
            blob_id = Blob.from_string(data).id
            if self._unchanged(index, name, blob_id):
                continue  # e.g. HISTORY.md when only MEMORY.md changed: spare two fsyncs
            if (self.path / name).is_symlink():
                # a link planted in the work tree: the file is memtray's to write, so the
                # link goes (what it points to is never read, written or removed)
                (self.path / name).unlink()
                said = f"removed a symbolic link planted at {self.path / name}; the file is written from the log"
                log.warning("%s", said)
                self.removed_links.append(said)
            if "/" in name:
                (self.path / name).parent.mkdir(mode=0o700, exist_ok=True)
            atomic_write(self.path / name, data)
            st = os.stat(self.path / name)
            index[name.encode()] = index_entry_from_stat(st, blob_id, 0o100644)
            changed = True
        if changed:
            index.write()

    def remove_files(self, names: Collection[str]) -> None:
        """Remove work tree files the branch no longer has (a scope left without facts)."""
        self._check_writer("a memory checkout")
        with translated("cannot write the memory work tree"):
            index = self.repo.open_index()
            for name in names:
                p = self.path / name
                if p.is_file() or p.is_symlink():
                    p.unlink()
                with contextlib.suppress(KeyError):
                    del index[name.encode()]
            index.write()

    def _unchanged(self, index: Any, name: str, blob_id: bytes) -> bool:
        """The work tree file already holds ``blob_id``, as memtray wrote it (same inode,
        size and mtime as its index entry, as git itself decides)."""
        try:
            entry = index[name.encode()]
            st = os.stat(self.path / name)
        except (KeyError, OSError):
            return False
        mtime = (st.st_mtime_ns // 1_000_000_000, st.st_mtime_ns % 1_000_000_000)
        return bool(entry.sha == blob_id and entry.size == st.st_size and entry.ino == st.st_ino
                    and entry.mtime == mtime and not os.path.islink(self.path / name))

    def worktree_status(self, name: str, head: str | None) -> str:
        """How the work tree file ``name`` relates to commit ``head``.

        ``clean``: same bytes as in ``head``. ``missing``: no such file.
        ``stale``: what memtray last checked out (the index entry) but not ``head``
        -- a crash came between moving the branch and writing the work tree.
        ``edited``: anything else, i.e. changed by someone other than memtray.
        """
        from dulwich.objects import Blob

        p = self.path / name
        if p.is_symlink():
            return "missing"
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            return "missing"
        except OSError as exc:
            raise GitError(f"cannot read {p}: {exc.strerror or exc}") from exc
        disk = Blob.from_string(data).id
        want = self._blob_id(head, name) if head else None
        if want is not None and disk == want:
            return "clean"
        if want is None and not data:
            return "clean"
        try:
            entry = self.repo.open_index()[name.encode()]
        except (KeyError, OSError):
            return "edited"
        except Exception:  # an unreadable index says nothing about who wrote the file
            return "edited"
        return "stale" if entry.sha == disk else "edited"

    def _blob_id(self, sha: str, name: str) -> bytes | None:
        try:
            commit = self.repo[sha.encode()]
            tree = self.repo[commit.tree]
            *folders, base = name.split("/")
            for folder in folders:
                _mode, sub = tree[folder.encode()]
                tree = self.repo[sub]
            _mode, blob_sha = tree[base.encode()]
        except (KeyError, AttributeError, TypeError):
            return None
        return blob_sha  # type: ignore[no-any-return]

    def worktree_text(self, name: str) -> str | None:
        p = self.path / name
        if p.is_symlink():
            return None
        try:
            return p.read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            return None

    def gc(self) -> None:
        """Pack loose objects (run at idle)."""
        self._check_writer("packing the memory repository")
        from dulwich import porcelain

        with translated("cannot pack the memory repository"):
            porcelain.gc(self.repo, auto=False, prune=False)
        self.close()  # re-open on next use so the new pack is seen


# --- a damaged repository -----------------------------------------------------------------


class RepoDamaged(GitError):
    """The repository cannot be read (an empty or corrupt object, a broken ref): start-up
    rebuilds it from the log. Write failures (a full disk, EIO, permissions) are plain
    GitError: the repository is fine and is never moved aside for them."""


def probe(repo: GitRepo) -> None:
    """Read what start-up relies on: the index, the branch, HEAD's commit and tree and the
    blobs of FILES.

    Raises RepoDamaged if any of it is unreadable, GitError for an OS error (not damage).
    """
    try:
        if (repo.path / ".git" / "index").exists():
            repo.repo.open_index()  # derived, but a bad header stops every checkout
        head = repo.head()
        if head is None:
            return
        commit = repo.repo[head.encode()]
        tree = repo.repo[commit.tree]
        for name in FILES:
            try:
                _mode, sha = tree[name.encode()]
            except KeyError:
                continue
            repo.repo[sha].as_raw_string()
    except OSError as exc:
        raise GitError(f"cannot read the memory repository {repo.path}: {exc.strerror or exc}") from exc
    except MemtrayError as exc:
        raise RepoDamaged(str(exc)) from exc
    except Exception as exc:  # dulwich: EmptyFileException, ObjectFormatException, ChecksumMismatch, zlib, a bad sha
        raise RepoDamaged(f"{type(exc).__name__}: {exc}") from exc


def aside_path(path: Path, kind: str, stamp: str) -> Path:
    """``memory.<kind>-STAMP`` beside ``path``, numbered if taken."""
    out = path.with_name(f"{path.name}.{kind}-{stamp}")
    n = 1
    while out.exists():
        n += 1
        out = path.with_name(f"{path.name}.{kind}-{stamp}-{n}")
    return out


def move_aside(path: Path, stamp: str, logged: Collection[str] = ()) -> tuple[Path, dict[str, bytes]]:
    """Rename a damaged repository (``memory/``) to ``memory.damaged-STAMP`` beside it.

    Returns where it went and its unrecorded hand edits (:func:`hand_edits`), so the
    rebuilt repository can record them. Call only under the app lock.
    """
    from memtray.core.base.fsutil import fsync_dir

    carried = hand_edits(path, logged)
    aside = aside_path(path, "damaged", stamp)
    os.rename(path, aside)
    fsync_dir(path.parent)
    return aside, carried


def bring_back(old: Path, path: Path, carried: dict[str, bytes]) -> list[str]:
    """Into a rebuilt work tree: the user's own files and folders from the damaged copy, then
    its hand edits (left as work-tree changes, which start-up records as a user edit).

    Links are not followed or copied. Returns what was left behind (links).
    """
    import shutil

    from memtray.core.memory import scopes

    left = []
    for entry in old.iterdir():
        if entry.name in (".git", *FILES):
            continue
        if entry.is_symlink():
            left.append(entry.name)
        elif entry.name == scopes.FOLDER and entry.is_dir():
            # the rebuild wrote the scope files again; what else the user keeps there comes back
            # (a scope file's hand edit is in ``carried``)
            (path / entry.name).mkdir(exist_ok=True)
            for sub in entry.iterdir():
                if sub.is_symlink():
                    left.append(f"{entry.name}/{sub.name}")
                elif scopes.is_file_name(sub.name) or (path / entry.name / sub.name).exists():
                    continue
                elif sub.is_dir():
                    shutil.copytree(sub, path / entry.name / sub.name, symlinks=True)
                elif sub.is_file():
                    shutil.copy2(sub, path / entry.name / sub.name)
        elif entry.is_dir():
            shutil.copytree(entry, path / entry.name, symlinks=True)
        elif entry.is_file():
            shutil.copy2(entry, path / entry.name)
    for name, data in carried.items():
        atomic_write(path / name, data)
    return left


def hand_edits(path: Path, logged: Collection[str] = ()) -> dict[str, bytes]:
    """Work-tree files of ``path`` that memtray did not write: unrecorded hand edits.

    The index says what memtray last wrote, as git itself decides. Where it cannot
    (missing, unreadable, no entry), a MEMORY.md (or a scope's file) whose text is none of
    the ``logged`` memories' is still a hand edit; a HISTORY.md then cannot be told from a stale one and
    stays only in the damaged copy.
    """
    from dulwich.objects import Blob

    try:
        from dulwich.index import Index

        index: Any = Index(str(path / ".git" / "index"))
    except Exception:
        index = None
    from memtray.core.memory import scopes

    out = {}
    folder = path / scopes.FOLDER
    in_scopes = sorted(f"{scopes.FOLDER}/{p.name}" for p in folder.iterdir() if scopes.is_file_name(p.name)) if (
        folder.is_dir() and not folder.is_symlink()) else []
    # each file's texts of the logged memories (a scope file holds its part of one)
    known: dict[str, set[str]] = {}
    for text in logged:
        for name, part in scopes.files(text).items():
            known.setdefault(name, set()).add(part)
    for name in (*FILES, *in_scopes):
        p = path / name
        if p.is_symlink() or not p.is_file():
            continue
        try:
            data = p.read_bytes()
        except OSError:
            continue
        written = None
        if index is not None:
            try:
                written = getattr(index[name.encode()], "sha", None)
            except Exception:
                written = None
        if written is not None:
            if Blob.from_string(data).id != written:
                out[name] = data
        elif name != "HISTORY.md" and logged and data.decode("utf-8", "replace") not in known.get(name, ()):
            out[name] = data
    return out
