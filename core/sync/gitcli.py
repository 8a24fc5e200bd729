"""The door to the ``git`` command line: every git process sync runs goes through here.

Sync talks to remotes with the user's own ``git`` so that whatever git can reach
(a bare repository on a disk, ssh with the user's agent, https with the user's
credential helper) memtray can reach too, and no credential ever passes through
memtray. Every call has a timeout, never prompts on a terminal
(``GIT_TERMINAL_PROMPT=0``, ssh in batch mode) and turns every failure into a
:class:`SyncError` with git's own last words, never a traceback.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memtray.core.base.errors import EnvironmentProblem

#: seconds a local plumbing command may take; network commands get NETWORK_TIMEOUT
LOCAL_TIMEOUT = 60.0
NETWORK_TIMEOUT = 300.0


class SyncError(EnvironmentProblem):
    """A sync could not be done; nothing was changed on either side by the failing step."""


class NoGit(SyncError):
    """The ``git`` command is not installed."""


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/@\s:]+):([^/@\s]+)@")


def safe_url(url: str) -> str:
    """``url`` with any password in it hidden (for messages and logs)."""
    return _USERINFO.sub(r"\1\2:***@", url)


def has_password(url: str) -> bool:
    return _USERINFO.search(url) is not None


@dataclass(frozen=True)
class Result:
    code: int
    out: bytes
    err: str


def _env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "GIT_TERMINAL_PROMPT": "0",  # a missing credential fails instead of waiting for a tty
        "GCM_INTERACTIVE": "never",
        "LC_ALL": "C",  # git's messages are parsed in a few places
        "LANGUAGE": "C",
    })
    if "GIT_SSH_COMMAND" not in env and "GIT_SSH" not in env:
        env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    env.pop("GIT_INDEX_FILE", None)
    if extra:
        env.update(extra)
    return env


#: what git says when a write of its own fails for want of space (ENOSPC, EDQUOT)
_FULL = ("No space left on device", "Disk quota exceeded")
#: the hint for a full local disk (named as the rest of memtray names ENOSPC: the disk is full)
FULL_HINT = ("Free some space on this computer's disk (the data home's sync/ folder is on it), then sync "
             "again; nothing was changed on either side.")


def disk_full(err: str, *, remote: bool = False) -> bool:
    """Whether git's stderr says a write failed for want of space: on this computer (its own
    lines), or with ``remote`` on the remote's side (lines the remote's git sent)."""
    lines = [ln for ln in err.splitlines() if any(f in ln for f in _FULL)]
    if remote:
        return any(ln.startswith("remote:") or "unpack" in ln for ln in lines)
    return any(not ln.startswith("remote:") for ln in lines)


def last_words(err: str, limit: int = 3) -> str:
    """The lines of git's stderr worth showing (hints and progress left out)."""
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    # git's stock advice after any transport failure would push the real cause (ssh's
    # "Connection refused", "Permission denied (publickey)") out of the last lines
    keep = [ln for ln in lines if not ln.startswith(("hint:", "To ", "Everything up-to-date", "Please make sure you "
                                                     "have the correct access rights", "and the repository exists"))]
    return "; ".join(keep[-limit:]) or "git gave no reason"


class Git:
    """``git`` run against one repository directory (``--git-dir``), or none."""

    def __init__(self, git_dir: Path | None = None, *, binary: str | None = None) -> None:
        self.git_dir = git_dir
        found = binary or shutil.which("git")
        if found is None:
            raise NoGit("sync needs the git command, which is not installed",
                        hint="Install git (https://git-scm.com) and run memtray sync again.")
        self.binary = found

    def run(
        self,
        args: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float = LOCAL_TIMEOUT,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        what: str | None = None,
    ) -> Result:
        """Run ``git args``; a non-zero exit raises :class:`SyncError` unless ``check`` is off."""
        cmd = [self.binary]
        if self.git_dir is not None:
            cmd += ["--git-dir", str(self.git_dir)]
        cmd += ["-c", "core.askPass=", "-c", "credential.interactive=false", *args]
        doing = what or f"git {args[0]}"
        try:
            proc = subprocess.run(
                cmd, input=input, capture_output=True, timeout=timeout, env=_env(env),
                stdin=None if input is not None else subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise SyncError(f"{doing} took longer than {timeout:.0f} s and was stopped",
                            hint="Check the network and the remote, then sync again.") from None
        except OSError as exc:
            raise SyncError(f"could not run git ({exc.strerror or exc})") from None
        res = Result(proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))
        if check and res.code != 0:
            if disk_full(res.err):
                raise SyncError(f"{doing} failed: the disk is full ({last_words(res.err, 1)})", hint=FULL_HINT)
            raise SyncError(f"{doing} failed: {safe_url(last_words(res.err))}")
        return res

    def text(self, args: Sequence[str], **kw: object) -> str:
        return self.run(args, **kw).out.decode("utf-8", "replace").strip()  # type: ignore[arg-type]

    def rev(self, ref: str) -> str | None:
        """The commit ``ref`` names, or None if it does not exist."""
        res = self.run(["rev-parse", "--verify", "--quiet", ref + "^{commit}"], check=False)
        return res.out.decode().strip() or None if res.code == 0 else None

    def is_ancestor(self, older: str, newer: str) -> bool:
        if older == newer:
            return True
        res = self.run(["merge-base", "--is-ancestor", older, newer], check=False)
        return res.code == 0

    def ancestry(self, older: str, newer: str) -> bool | None:
        """Whether ``older`` is an ancestor of ``newer``; None if ``older`` is not here at all."""
        if older == newer:
            return True
        res = self.run(["merge-base", "--is-ancestor", older, newer], check=False)
        return True if res.code == 0 else False if res.code == 1 else None

    def refs(self, prefix: str) -> dict[str, str]:
        """Every ref under ``prefix`` and its commit, in one call."""
        out = self.text(["for-each-ref", "--format=%(refname) %(objectname)", prefix])
        return dict(line.split(" ", 1) for line in out.splitlines() if line)

    def has_object(self, sha: str) -> bool:
        return self.run(["cat-file", "-e", sha + "^{commit}"], check=False).code == 0

    def sizes(self, names: Sequence[str]) -> list[int | None]:
        """The sizes of ``names`` (``rev:path``), one ``cat-file --batch-check``; None if missing."""
        res = self.run(["cat-file", "--batch-check"], input=("\n".join(names) + "\n").encode())
        out: list[int | None] = []
        for line in res.out.decode("utf-8", "replace").splitlines()[: len(names)]:
            parts = line.split()
            out.append(int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else None)
        return out + [None] * (len(names) - len(out))

    def blobs(self, names: Sequence[str]) -> list[bytes | None]:
        """The contents of ``names`` (``rev:path``), one ``cat-file --batch`` for all; None if missing."""
        if not names:
            return []
        res = self.run(["cat-file", "--batch"], input=("\n".join(names) + "\n").encode())
        data, pos = res.out, 0
        out: list[bytes | None] = []
        for _ in names:
            nl = data.index(b"\n", pos)
            header = data[pos:nl].split()
            pos = nl + 1
            if len(header) < 3 or header[1] == b"missing":
                out.append(None)
                continue
            size = int(header[2])
            out.append(data[pos : pos + size])
            pos += size + 1
        return out

    def lines(self, name: str, most: int) -> Iterator[tuple[bytes, int]]:
        """The lines of the blob ``name`` (``rev:path``) without their newlines, one at a time,
        as (line, its length): a line longer than ``most`` bytes is never held whole, only its
        first ``most`` bytes come (with its real length), so a huge line costs no memory.
        :class:`SyncError` if the blob cannot be read."""
        cmd = [self.binary]
        if self.git_dir is not None:
            cmd += ["--git-dir", str(self.git_dir)]
        try:
            proc = subprocess.Popen([*cmd, "cat-file", "blob", name], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=_env(None))
        except OSError as exc:
            raise SyncError(f"could not run git ({exc.strerror or exc})") from None
        assert proc.stdout is not None and proc.stderr is not None
        try:
            while True:
                line = proc.stdout.readline(most + 1)
                if not line:
                    break
                if line.endswith(b"\n"):
                    yield line[:-1], len(line) - 1
                    continue
                size = len(line)
                while len(line) == most + 1 or (line and not line.endswith(b"\n")):
                    more = proc.stdout.readline(1 << 16)
                    if not more:
                        break
                    size += len(more)
                    if more.endswith(b"\n"):
                        size -= 1
                        break
                yield line[:most], size
        finally:
            proc.stdout.close()
            err = proc.stderr.read().decode("utf-8", "replace")
            proc.stderr.close()
            code = proc.wait(timeout=LOCAL_TIMEOUT)
        if code != 0:
            raise SyncError(f"could not read {name}: {last_words(err)}")
