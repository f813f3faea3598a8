"""Known time: the store's folder as its files stood at an instant, read from Git's objects.

Two sources: the store's Git history (``GitPast``: HEAD's first-parent line) and what knowtk saw (``SeenPast``: the
observations ``knowtk.write.seen`` keeps in ``STATE/seen.git``, read the same way). ``in_force`` applies the rule
that merges them: the newer witness wins (the last observation at or before the instant, unless a commit was
committed after it and at or before the instant; before the first observation, Git alone).

``past_files(root, state_folder, instant)`` finds the commit (or observation) in force at ``instant`` and writes
the store's folder of that commit into a cache folder of knowtk's state (``STATE/past/TREE/NAME``, keyed by the
folder's tree: commits that left the store alike share it), from which a read-only store is opened. Git is read
through the ``git`` binary alone (``log``, ``rev-parse``, ``ls-tree``, ``cat-file --batch``): nothing is checked
out, and the work tree, the index and HEAD are never touched (``GIT_OPTIONAL_LOCKS=0`` keeps even the index's stat
refresh away).

A cache folder is written whole into a temporary folder and renamed into place, so a reader never sees half of
one; once in place its files are only read (the past store's index lives beside them, in ``.state``). Its state
is seeded from the present store's (``knowtk.write.past_seed``), so that the past engine reads and indexes only
the files that differ, and a file that the past kept last holds alike is a hard link to it.
``check_past`` compares the kept folders with their trees (``knowtk check``); ``commits_touching`` lists the
commits between two that changed each file (``knowledge_changes``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import IO, Any

from knowtk.engine.engine import Engine
from knowtk.errors import NoKnownPast, StoreUnavailable
from knowtk.model.config import CONFIG_FILE
from knowtk.model.datevalues import format_utc
from knowtk.model.shapes import shape
from knowtk.scan.changes import DEFAULT_MAX_FILES, SettledWalk
from knowtk.state import STATE_FILE
from knowtk.write.checkpoint import GitFailed, Repo, locate_store
from knowtk.write.past_absent import ABSENT_FILE, AbsentFiles, absent_files, list_absent, read_answer, write_new
from knowtk.write.past_seed import Known, hashed_by, seed_state
from knowtk.write.seen import SEEN_DIR, SEEN_REF, in_step, read_ref

__all__ = [
    "PAST_DIR",
    "Commit",
    "PastFiles",
    "SeenPast",
    "check_past",
    "commits_touching",
    "earliest_known",
    "in_force",
    "made_by",
    "open_past",
    "past_files",
]

PAST_DIR = "past"  # under the state folder: one folder per past tree of the store
STATE = ".state"  # the past store's own state.sqlite, inside it (its files: a folder named as the store's)
_ENV = {"GIT_OPTIONAL_LOCKS": "0"}
_BLOB_MODES = ("100644", "100755")  # regular files; links and submodules are no record


@shape(frozen=True)
class Commit:
    sha: str
    at: int  # committer date, seconds since the epoch

    @property
    def when(self) -> str:
        return format_utc(datetime.fromtimestamp(self.at, UTC))


@shape(frozen=True)
class PastFiles:
    """The store's files at ``instant``: ``folder`` holds them, ``state_dir`` the past store's state."""

    instant: datetime
    commit: Commit  # the commit in force, or the observation (a commit of the record of what knowtk saw)
    tree: str
    folder: str
    state_dir: str
    source: str = "git"  # "git": the store's Git history; "seen": what knowtk saw

    def known_at(self) -> dict[str, Any]:
        """What an answer at this instant stands on: ``{instant, source: "git", commit, committedAt}``, or
        ``{instant, source: "seen", observation, seenAt}`` (the observation and the instant it was first seen)."""
        instant, commit = format_utc(self.instant), self.commit
        if self.source == "seen":
            return {"instant": instant, "source": "seen", "observation": commit.sha, "seenAt": commit.when}
        return {"instant": instant, "source": "git", "commit": commit.sha, "committedAt": commit.when}

    @property
    def label(self) -> str:
        """``commit abc123def456`` or ``observation abc123def456``: what the view stands on, in words."""
        return f"{'observation' if self.source == 'seen' else 'commit'} {self.commit.sha[:12]}"


class GitPast:
    """The first-parent line of HEAD of the Git work tree holding the store, and the store's folder in it."""

    source = "git"

    def __init__(self, repo: Repo, prefix: str, env: dict[str, str] | None = None) -> None:
        self.repo, self.prefix = repo, prefix
        self.env = {**_ENV, **(env or {})}  # what every git command of it runs with

    @classmethod
    def of(cls, root: str) -> GitPast | None:
        located = locate_store(root)
        return None if located is None else cls(*located)

    def git(self, *args: str, data: bytes | None = None) -> str:
        try:
            return self.repo.run(*args, data=data, env=self.env)
        except GitFailed as exc:
            raise StoreUnavailable(self.repo.top, f"git {args[0]} failed: {exc}") from exc

    def line(self) -> list[Commit]:
        """HEAD's first-parent line, newest first (empty before the first commit)."""
        if self.repo.head() is None:
            return []
        out = self.git("log", "--first-parent", "--format=%H %ct", "HEAD")
        return [Commit(sha, int(at)) for sha, at in (row.split() for row in out.splitlines() if row.strip())]

    def tree(self, commit: str) -> str | None:
        """The tree of the store's folder in ``commit``; None when the folder was not there."""
        if not self.prefix:
            return self.git("rev-parse", "--verify", "-q", f"{commit}^{{tree}}") or None
        found = self.git("ls-tree", "-d", "-z", commit, "--", self.prefix).split("\0")[0].split()
        return found[2] if len(found) >= 3 and found[1] == "tree" else None

    def in_force(self, instant: datetime) -> tuple[Commit, str]:
        """The commit in force at ``instant`` and the store's tree in it; NoKnownPast before the store's first."""
        line = self.line()
        seconds = instant.timestamp()
        for commit in line:
            if commit.at <= seconds:
                tree = self.tree(commit.sha)
                if tree is not None:
                    return commit, tree
                break
        raise NoKnownPast(format_utc(instant), self.earliest(line))

    def earliest(self, line: list[Commit]) -> str | None:
        """The committer date of the oldest commit of the line that holds the store's folder."""
        args = ["log", "--first-parent", "--format=%H %ct", "HEAD"] + (["--", self.prefix] if self.prefix else [])
        rows = self.git(*args).splitlines() if line else []
        dated = [int(row.split()[1]) for row in rows if row.strip()]
        return None if not dated else format_utc(datetime.fromtimestamp(min(dated), UTC))

    def blobs(self, tree: str) -> Iterator[tuple[str, str]]:
        """(path inside the store's folder, blob) of every regular file of ``tree``."""
        out = self.git("ls-tree", "-r", "-z", "--full-tree", tree)
        for entry in out.split("\0"):
            head, _, path = entry.partition("\t")
            parts = head.split()
            if len(parts) == 3 and parts[0] in _BLOB_MODES and parts[1] == "blob" and _plain(path):
                yield path, parts[2]

    def contents(self, blobs: list[str]) -> dict[str, bytes]:
        """Each blob's bytes, by one ``git cat-file --batch`` (a blob Git lacks is left out)."""
        return dict(self.stream(blobs))

    def materialise(
        self,
        tree: str,
        dest: str,
        donor: tuple[str, dict[str, str]] | None = None,
        read: Known | None = None,
        seen: dict[str, str] | None = None,
    ) -> tuple[dict[str, tuple[int, str]], dict[str, tuple[str, int, int]]]:
        """Write the files of ``tree`` under ``dest``: (path -> (size, sha256) of each file written, path -> (blob,
        size, mtime_ns) of each left unwritten). A file that ``read`` (a scan cache's path -> (size, mtime_ns,
        sha256)) holds with the same bytes is left unwritten (``ABSENT_FILE``: written when first read): told by
        its blob where ``seen`` (path -> blob) holds the files ``read`` is of, else by its bytes' hash. A file
        that ``donor`` (another kept past folder and its path -> blob) holds at the same path with the same blob
        is a hard link to it instead (both are only read, and a link costs a fraction of a new file)."""
        entries = list(self.blobs(tree))
        for folder in sorted({os.path.dirname(path) for path, _ in entries} | {""}):  # each folder once
            os.makedirs(os.path.join(dest, *folder.split("/")), exist_ok=True)
        written, absent, read, seen = {}, {}, read or {}, seen or {}
        for path, blob in entries:  # (their bytes need not be read from Git: the blob is the one the cache read)
            cached = read.get(path) if seen.get(path) == blob else None
            if cached is not None:
                absent[path] = (blob, cached[0], cached[1])
        left = [(path, blob) for path, blob in entries if path not in absent]
        linked = _link_from(donor, left, dest) if donor is not None else set()
        wanted: dict[str, list[str]] = {}  # blob -> the paths that hold it
        for path, blob in left:
            if path not in linked:
                wanted.setdefault(blob, []).append(path)
        for blob, data in self.stream(sorted(wanted)):  # each file written as Git gives its bytes
            sha256 = hashlib.sha256(data).hexdigest()
            for path in wanted.pop(blob, ()):
                cached = read.get(path)
                if cached is not None and cached[0] == len(data) and cached[2] == sha256:
                    absent[path] = (blob, cached[0], cached[1])
                    continue
                write_new(_under(dest, path), data)
                written[path] = (len(data), sha256)
        if wanted:
            blob, paths = next(iter(wanted.items()))
            raise StoreUnavailable(self.repo.top, f"git has no object {blob} ({paths[0]}): the history is damaged")
        return written, absent

    def write_absent(self, dest: str, absent: dict[str, tuple[str, int, int]]) -> None:
        """Write the files ``materialise`` left unwritten (a past store that is built cold reads every one)."""
        paths_of: dict[str, list[str]] = {}
        for path, (blob, _, _) in absent.items():
            paths_of.setdefault(blob, []).append(path)
        for blob, data in self.stream(sorted(paths_of)):
            for path in paths_of.pop(blob, ()):
                write_new(_under(dest, path), data)

    def stream(self, blobs: list[str]) -> Iterator[tuple[str, bytes]]:
        """(blob, bytes) of each blob Git has, read from one ``git cat-file --batch`` as it answers."""
        if not blobs:
            return
        import subprocess  # imported when used: a query process never reads Git

        with tempfile.TemporaryFile() as asked:  # (a file, not a pipe: Git answers while it reads the questions)
            asked.write("".join(f"{b}\n" for b in blobs).encode())
            asked.seek(0)
            try:
                proc = subprocess.Popen(
                    [self.repo.git, "-C", self.repo.top, "cat-file", "--batch"],
                    stdin=asked,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env={**os.environ, **self.env},
                )
            except OSError as exc:
                raise StoreUnavailable(self.repo.top, f"git cat-file failed: {exc}") from exc
            assert proc.stdout is not None
            try:
                yield from _answers(proc.stdout)
            finally:
                proc.stdout.close()
                proc.kill()
                proc.wait()


def _under(folder: str, path: str) -> str:
    """``path`` (its parts joined by '/') inside ``folder``; joined once per file of a whole tree, so kept cheap."""
    return f"{folder}/{path}" if os.sep == "/" else os.path.join(folder, *path.split("/"))


def _link_from(donor: tuple[str, dict[str, str]], entries: list[tuple[str, str]], dest: str) -> set[str]:
    """The paths of ``entries`` made hard links to the donor folder's file holding the same blob at that path."""
    folder, blobs = donor
    linked = set()
    for path, blob in entries:
        if blobs.get(path) == blob:
            try:
                os.link(_under(folder, path), _under(dest, path), follow_symlinks=False)
            except OSError:  # gone meanwhile, too many links, a file system without them: written instead
                continue
            linked.add(path)
    return linked


def _restat(dest: str, written: dict[str, tuple[int, str]], known: Known) -> None:
    """Give each file written whose bytes ``known`` (a seeded scan cache) holds at its path the stat the cache holds:
    the past engine takes it as read. Any other file the cache knows gets a stat the cache does not hold (written in
    the clock tick of the present file's last change, it could have it)."""
    for path, (size, sha256) in written.items():
        cached = known.get(path)
        if cached is None or cached[0] != size:
            continue
        full = _under(dest, path)
        mtime_ns = cached[1]
        if cached[2] == sha256:
            os.utime(full, ns=(mtime_ns, mtime_ns))
        elif os.stat(full).st_mtime_ns == mtime_ns:
            os.utime(full, ns=(mtime_ns + 1, mtime_ns + 1))


class SeenPast(GitPast):
    """What knowtk saw (``knowtk.write.seen``): the observations on the seen ref of ``STATE/seen.git``, read as a
    first-parent line whose commits are the observations and whose tree is the store's folder."""

    source = "seen"

    @classmethod
    def at(cls, state_folder: str) -> SeenPast | None:
        """The record of what knowtk saw in this state folder; None when it holds no observation."""
        folder = os.path.join(state_folder, SEEN_DIR)
        if read_ref(folder) is None:
            return None
        git = shutil.which("git")
        return None if git is None else cls(Repo(git, folder), "", {"GIT_DIR": folder})

    def line(self) -> list[Commit]:
        """The observations, newest first; of several in a row that saw the same files, the first one only (a
        change another process had kept already)."""
        out = self.git("log", "--first-parent", "--format=%H %ct %T", SEEN_REF)
        rows = [row.split() for row in out.splitlines() if row.strip()]
        kept = [row for i, row in enumerate(rows) if i + 1 == len(rows) or rows[i + 1][2] != row[2]]
        return [Commit(sha, int(at)) for sha, at, _ in kept]

    def earliest(self, line: list[Commit]) -> str | None:
        return None if not line else line[-1].when


def _plain(path: str) -> bool:
    """A path that stays inside the folder it is written to (Git refuses others; a crafted tree might not)."""
    return bool(path) and not path.startswith("/") and all(part not in ("", ".", "..") for part in path.split("/"))


def _answers(out: IO[bytes]) -> Iterator[tuple[str, bytes]]:
    """``git cat-file --batch``'s answers as they come, but objects Git lacks; the answers end where Git stopped."""
    try:
        while (answer := read_answer(out)) is not None:
            if answer[1] is not None:
                yield answer[0], answer[1]
    except ValueError:  # Git stopped midway: no bytes of a blob but all of them
        return


def past_files(root: str, state_folder: str, instant: datetime) -> PastFiles:
    """The store's files at ``instant``, written into the cache once (NoKnownPast when no past reaches back to it)."""
    git, commit, tree = in_force(root, state_folder, instant)
    home = os.path.join(state_folder, PAST_DIR, tree)
    name = os.path.basename(os.path.abspath(root))  # the folder's name: a store's name unless knowtk.yaml gives one
    folder = os.path.join(home, name)
    if not os.path.isdir(folder):
        try:
            _keep(git, tree, home, name, os.path.join(state_folder, STATE_FILE))
        except OSError as exc:  # the state folder is full or read-only: the present store still answers
            raise StoreUnavailable(state_folder, f"the store's past files could not be kept: {exc}") from exc
    return PastFiles(instant, commit, tree, folder, os.path.join(home, STATE), git.source)


def sources(root: str, state_folder: str) -> list[GitPast]:
    """Where the store's past comes from: its Git history (when it lies in a Git work tree) and what knowtk saw."""
    found = [GitPast.of(root), SeenPast.at(state_folder)]
    return [source for source in found if source is not None]


def in_force(root: str, state_folder: str, instant: datetime) -> tuple[GitPast, Commit, str]:
    """The source, commit and store tree in force at ``instant``: the newer witness wins. The last observation at or
    before it, unless a commit of HEAD's first-parent line was committed after that observation and at or before
    ``instant``; before the first observation, Git alone. NoKnownPast (naming the earliest instant known) before
    both."""
    best: tuple[GitPast, Commit, str] | None = None
    earliest: list[str] = []
    for source in sources(root, state_folder):
        try:
            commit, tree = source.in_force(instant)
        except NoKnownPast as exc:
            earliest += [exc.earliest] if exc.earliest else []
            continue
        # (Git first, then what knowtk saw: an observation of the same second as a commit wins)
        if best is None or commit.at >= best[1].at:
            best = (source, commit, tree)
    if best is not None:
        return best
    if not earliest:
        why = "the store lies in no Git work tree and knowtk has not seen it yet: knowtk knows no past of it"
        raise NoKnownPast(format_utc(instant), None, why)
    raise NoKnownPast(format_utc(instant), min(earliest))


def _keep(git: GitPast, tree: str, home: str, name: str, seed: str | None = None) -> None:
    """Write ``tree``'s files into ``home/name``: into a temporary folder first, then renamed, so that the folder
    is whole or absent (another process may have put it there first). With ``seed`` (the present store's
    state.sqlite), the past store's state is seeded from it meanwhile, when it has none yet (``past_seed``), and
    put in place before the files: a reader that finds the folder finds the state that goes with its stats. The
    files the present store has read with the same bytes are not written but listed (``ABSENT_FILE``): the seeded
    state holds what they make, and a reader that needs their bytes writes them (``AbsentFiles``). The files
    another kept past folder holds alike are hard links to its (``_donor``)."""
    os.makedirs(home, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".writing-", dir=home)
    try:
        state, folder = os.path.join(home, STATE), os.path.abspath(os.path.join(home, name))
        dest = os.path.join(work, name)
        seed = seed if seed is not None and not os.path.exists(state) else None  # (a state there is used as is)
        read, token = hashed_by(seed) if seed is not None else (Known(), None)
        read.pop(CONFIG_FILE, None)  # (always written: read by whatever opens the past)
        # the files the present store read as what knowtk saw last holds them: their blob tells them alike, unread
        seen = _seen_blobs(os.path.dirname(seed), token) if seed is not None and read else {}
        with ThreadPoolExecutor(1) as pool:  # the copy of the state and the files' writing wait on the disk apart
            seeding = pool.submit(seed_state, seed, os.path.join(work, STATE), folder) if seed is not None else None
            written, absent = git.materialise(tree, dest, _donor(git, home, name), read, seen)
            known = seeding.result() if seeding is not None else Known()
        if known:
            _restat(dest, written, known)
            try:
                os.rename(os.path.join(work, STATE), state)
            except OSError:  # another process seeded it meanwhile: its stats are the present's too
                if not os.path.isdir(state):
                    raise
        if absent and known:
            list_absent(dest, absent)
        elif absent:  # no seed: the past store is built cold, and reads every file
            git.write_absent(dest, absent)
        try:
            os.rename(dest, folder)
        except OSError:
            if not os.path.isdir(folder):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _seen_blobs(state_folder: str, token: int | None) -> dict[str, str]:
    """Path -> blob of the files of the scan cache at change counter ``token``, from what knowtk saw last when it
    holds them (``knowtk.write.seen.in_step``); {} when it does not."""
    tip = in_step(os.path.join(state_folder, SEEN_DIR), token)
    source = SeenPast.at(state_folder) if tip is not None else None
    if tip is None or source is None:
        return {}
    try:
        return dict(source.blobs(tip))
    except StoreUnavailable:
        return {}


def _donor(git: GitPast, home: str, name: str) -> tuple[str, dict[str, str]] | None:
    """The past folder of the store kept last (its files are only read) and its path -> blob; None: none is."""
    kept = os.path.dirname(home)
    folders = [os.path.join(kept, tree, name) for tree in os.listdir(kept) if tree != os.path.basename(home)]
    for folder in sorted((f for f in folders if os.path.isdir(f)), key=_mtime, reverse=True)[:1]:
        try:
            return folder, dict(git.blobs(os.path.basename(os.path.dirname(folder))))
        except StoreUnavailable:  # a tree Git no longer has: nothing to link to
            return None
    return None


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def check_past(root: str, state_folder: str) -> tuple[list[str], list[str]]:
    """Compare every kept past folder with its tree in Git; remove those that differ (or whose tree Git no longer
    has): they are written again when asked. ``(found, repaired)``, as ``Store.check`` reports them."""
    kept = os.path.join(state_folder, PAST_DIR)
    homes = sorted(os.listdir(kept)) if os.path.isdir(kept) else []
    known = sources(root, state_folder) if homes else []
    found, repaired = [], []
    for tree in homes:
        home = os.path.join(kept, tree)
        wrong = _differs(known, tree, home)
        if wrong:
            found.append(f"past/{tree[:12]}: {wrong}")
            shutil.rmtree(home, ignore_errors=True)
            repaired.append(f"past/{tree[:12]}: removed, written again when asked")
    return found, repaired


def _differs(known: list[GitPast], tree: str, home: str) -> str | None:
    """Why the files kept in ``home`` are not ``tree``'s in Git or in what knowtk saw (None: they are)."""
    if not known:
        return "no Git history to check it against"
    want = None
    for source in known:
        try:
            want = dict(source.blobs(tree))
            break
        except StoreUnavailable:
            continue
    if want is None:
        return "its tree is not in Git"
    for name in (n for n in os.listdir(home) if not n.startswith(".")):
        try:
            have = {path: blob for path, (blob, _, _) in absent_files(os.path.join(home, name)).items()}
        except ValueError:
            return "its list of files not written yet is damaged"
        for dirpath, dirs, names in os.walk(os.path.join(home, name)):
            if dirpath == os.path.join(home, name):
                dirs[:] = [d for d in dirs if d != os.path.dirname(ABSENT_FILE)]
            for file in names:
                full = os.path.join(dirpath, file)
                with open(full, "rb") as f:
                    data = f.read()
                blob = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
                have[os.path.relpath(full, os.path.join(home, name)).replace(os.sep, "/")] = blob
        if have != want:
            changed = sorted(p for p in {*have, *want} if have.get(p) != want.get(p))
            return f"{len(changed)} file(s) differ from Git's, e.g. {changed[0]}"
    return None


def earliest_known(root: str, state_folder: str) -> str | None:
    """The earliest instant the store's past can be asked at (None: it has none)."""
    found = [when for source in sources(root, state_folder) if (when := source.earliest(source.line()))]
    return min(found) if found else None  # (all "YYYY-MM-DDTHH:MM:SSZ": ordered as text)


def open_past(present: Engine, files: PastFiles) -> Engine:
    """An engine on the past files, read as the present store reads its own (profile, limits). The files the folder
    lists but has not written are listed with the stat the past's scan cache holds, and written when first read."""
    try:
        absent = absent_files(files.folder)
    except ValueError as exc:
        why = f"the past's list of files not written yet is damaged ({exc}): `knowtk check` removes it"
        raise StoreUnavailable(files.folder, why) from exc
    writer = None
    if absent:
        source = _source_of(present.root, files)
        if source is None:  # (its files would be missing, never an answer without them)
            raise StoreUnavailable(files.folder, "the Git history the past's files come from cannot be read")
        writer = AbsentFiles.serving(source.repo.git, source.repo.top, source.env, files.folder, absent)
    max_files = getattr(present.scanner.source, "max_files", DEFAULT_MAX_FILES)
    listed = {path: (size, mtime_ns) for path, (_, size, mtime_ns) in absent.items()}
    try:
        return Engine(
            files.folder,
            state_dir=files.state_dir,
            # the past files never change: walked once, nothing to watch
            change_source=_PastWalk(files.folder, max_files=max_files, absent=listed, writer=writer),
            rebind_state=True,  # a cache of its files, wherever the state folder was moved
            seeded=True,  # its state may be a copy of the present's (past_seed): its own safeguards, not the present's
            profile=present.profile,
            max_files=max_files,
            max_file_bytes=present.scanner.max_file_bytes,
        )
    except BaseException:
        if writer is not None:
            writer.release()
        raise


class _PastWalk(SettledWalk):
    """The walk of a kept past folder, which stops writing its unwritten files on demand when its engine closes."""

    def __init__(
        self, root: str, *, max_files: int, absent: dict[str, tuple[int, int]] | None, writer: AbsentFiles | None
    ) -> None:
        super().__init__(root, max_files=max_files, absent=absent)
        self.writer = writer

    def close(self) -> None:
        if self.writer is not None:
            self.writer.release()


def _source_of(root: str, files: PastFiles) -> GitPast | None:
    """The source the past files came from (the state folder holds ``past/TREE/NAME``)."""
    state_folder = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(files.folder))))
    return next((s for s in sources(root, state_folder) if s.source == files.source), None)


def commits_touching(root: str, old: str, new: str) -> dict[str, list[dict[str, str]]]:
    """Path inside the store -> the first-parent commits after ``old`` up to ``new`` that changed it, oldest first
    (``{commit, at, message}``)."""
    git = GitPast.of(root)
    if git is None or old == new:
        return {}
    return _touching(git, f"{old}..{new}")


def made_by(
    root: str, state_folder: str, before: PastFiles, after: PastFiles | None
) -> dict[str, list[dict[str, str]]]:
    """Path inside the store -> what changed it between two sides (``after`` None: the files now), oldest first:
    the first-parent commits after the commit in force at ``before`` up to the one in force at ``after`` (``{commit,
    at, message}``), then the observations between the two in what knowtk saw (``{observation, at}``)."""
    touched: dict[str, list[dict[str, str]]] = {}
    for source in sources(root, state_folder):
        old, new = _ends(source, before), _ends(source, after) if after is not None else SEEN_REF
        if source.source == "git" and after is None:
            new = "HEAD"
        if new is None or old == new:
            continue
        found = _touching(source, f"{old}..{new}" if old is not None else new)
        for path, items in found.items():
            touched.setdefault(path, []).extend(items)
    return touched


def _ends(source: GitPast, side: PastFiles) -> str | None:
    """The commit of ``source`` in force at ``side`` (its own when it stands on that source). Before the first
    observation, that first one: it saw the files as they were, it changed none (after Git's past, the files it
    saw uncommitted are listed with no commit)."""
    if side.source == source.source:
        return side.commit.sha
    try:
        return source.in_force(side.instant)[0].sha
    except NoKnownPast:
        if source.source == "seen":
            line = source.line()
            return line[-1].sha if line else None
        return None


def _touching(source: GitPast, span: str) -> dict[str, list[dict[str, str]]]:
    limit = ["--", source.prefix] if source.prefix else []
    form = "--format=%x1e%H%x1f%cI%x1f%s"
    out = source.git(
        "-c", "core.quotepath=off", "log", "--first-parent", "--reverse", form, "--name-only", span, *limit
    )
    touched: dict[str, list[dict[str, str]]] = {}
    cut = len(source.prefix) + 1 if source.prefix else 0
    for item in out.split("\x1e"):
        head, _, names = item.partition("\n")
        parts = head.split("\x1f")
        if len(parts) != 3:
            continue
        if source.source == "seen":
            made = {"observation": parts[0], "at": format_utc(datetime.fromisoformat(parts[1]))}
        else:
            made = {"commit": parts[0], "at": parts[1], "message": parts[2]}
        for name in names.splitlines():
            if name.strip():
                touched.setdefault(name.strip()[cut:], []).append(made)
    return touched
