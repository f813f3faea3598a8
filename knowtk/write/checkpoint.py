"""Git checkpoints: a mutation's files committed, and nothing else, through the ``git`` binary.

The commit is built in a temporary index (``GIT_INDEX_FILE``) from ``HEAD`` plus the exact bytes the
mutation wrote, so whatever the user has staged is never committed; ``HEAD`` moves by compare-and-swap
(``update-ref NEW OLD``), and the user's own index is updated for the committed paths only (so that
``git status`` does not show them as changed back). ``record_commits`` lists a file's commits for
``knowledge_history``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from knowtk.errors import InvalidArgument, StoreUnavailable


class GitFailed(Exception):
    """git could not be run or failed (``subprocess.SubprocessError`` raised inside a git call, re-raised)."""


def _run(*args: Any, **kwargs: Any) -> Any:
    """``subprocess.run``, imported on the first git call: opening a store and querying never pay for it."""
    import subprocess

    try:
        return subprocess.run(*args, **kwargs)
    except subprocess.SubprocessError as exc:  # a timeout, or check=True failing
        raise GitFailed(str(exc)) from exc


__all__ = ["Repo", "find_repo", "locate_store", "record_commits"]

_TIMEOUT = 60


class Repo:
    def __init__(self, git: str, top: str) -> None:
        self.git, self.top = git, top

    def run(self, *args: str, data: bytes | None = None, env: dict[str, str] | None = None) -> str:
        proc = _run(
            [self.git, "-C", self.top, *args],
            input=data,
            capture_output=True,
            timeout=_TIMEOUT,
            env={**os.environ, **(env or {})},
            check=False,
        )
        if proc.returncode != 0:
            message = proc.stderr.decode("utf-8", "replace").strip()
            raise StoreUnavailable(self.top, f"git {args[0]} failed: {message}")
        return proc.stdout.decode("utf-8", "replace").strip()

    def head(self) -> str | None:
        proc = _run(
            [self.git, "-C", self.top, "rev-parse", "--verify", "-q", "HEAD"],
            capture_output=True,
            timeout=_TIMEOUT,
            check=False,
        )
        return proc.stdout.decode().strip() or None

    def commit(self, files: dict[str, bytes | None], message: str) -> str:
        """Commit ``files`` (path relative to the work tree -> bytes, None: removed) on HEAD; the new commit."""
        head = self.head()
        with tempfile.TemporaryDirectory(prefix="knowtk-git-") as tmp:
            env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
            if head is not None:
                self.run("read-tree", head, env=env)
            entries = []
            for path, data in files.items():
                if data is None:
                    self.run("update-index", "--force-remove", "--", path, env=env)
                    continue
                blob = self.run("hash-object", "-w", "--stdin", data=data)
                entries.append(f"100644,{blob},{path}")
                self.run("update-index", "--add", "--cacheinfo", entries[-1], env=env)
            tree = self.run("write-tree", env=env)
            parents = ["-p", head] if head is not None else []
            commit = self.run("commit-tree", tree, *parents, "-m", message)
        self.run("update-ref", "-m", "knowtk checkpoint", "HEAD", commit, head or "")
        for entry in entries:  # the user's index: the committed paths only
            self.run("update-index", "--add", "--cacheinfo", entry)
        return commit


def find_repo(root: str, *, required: bool) -> Repo | None:
    """The Git work tree holding the store; None when there is none (InvalidArgument when ``required``)."""
    git = shutil.which("git")
    if git is None:
        if required:
            raise InvalidArgument("checkpoint", "needs the git command, which is not installed or not on PATH")
        return None
    proc = _run([git, "-C", root, "rev-parse", "--show-toplevel"], capture_output=True, timeout=_TIMEOUT, check=False)
    if proc.returncode != 0:
        if required:
            raise InvalidArgument("checkpoint", f"the store {root} is not inside a Git work tree")
        return None
    return Repo(git, proc.stdout.decode().strip())


def locate_store(root: str) -> tuple[Repo, str] | None:
    """The Git work tree holding the store and the store's folder in it ("": its root); None outside Git (or
    when the work tree Git names does not hold the folder, as a symlinked path may make it)."""
    repo = find_repo(root, required=False)
    if repo is None:
        return None
    rel = os.path.relpath(os.path.realpath(root), os.path.realpath(repo.top))
    if rel == ".." or rel.startswith("../"):
        return None
    return repo, "" if rel == "." else rel.replace(os.sep, "/")


def record_commits(repo: Repo, root: str, path: str) -> list[dict[str, Any]]:
    """The commits that touched one record file, newest first: {commit, author, at, message, source: "git"}."""
    rel = os.path.relpath(os.path.join(root, path), repo.top)
    out = repo.run("log", "--format=%H%x1f%an%x1f%aI%x1f%s%x1e", "--", rel)
    commits = []
    for item in out.split("\x1e"):
        parts = item.strip().split("\x1f")
        if len(parts) == 4:
            commits.append(
                {"source": "git", "commit": parts[0], "author": parts[1], "at": parts[2], "message": parts[3]}
            )
    return commits
