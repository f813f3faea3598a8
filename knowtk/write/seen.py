"""What knowtk saw: every revision of the store's record files a scan observed, kept with the second it was first seen.

The record is a bare Git repository in the state folder (``STATE/seen.git``), written through the ``git`` binary
alone. One observation is one commit on ``refs/knowtk/seen`` (the repository's HEAD): its tree the store's record
files (``*.md``) and ``knowtk.yaml`` as the scan saw them, its committer date the second they were first seen, its
parent the observation before. A change is a commit of the changed paths only (``git fast-import``, one pack); the
first observation of a store (and one after the record was lost) is a whole tree. When the store lies in a Git work
tree, the store's repository is this one's alternate (``objects/info/alternates``): a file as HEAD has it is
referred to, not copied. Nothing is ever written into the store's own ``.git``.

``SeenKeeper`` is the engine's observer (``Engine.observer``): ``saw`` is called after every scan with the paths
whose content changed and starts the observation in a thread; ``settle`` waits for it before the call answers, so
an answer never rests on files no observation holds (the pack and the ref are fsynced: ``core.fsync=committed``).
A failure costs the record, never the answer: the paths are kept again at the next change, and ``check_seen``
(``knowtk check``) reports a damaged record, moves it aside and starts again from the files as they are.

The scan cache and the record are kept in step by a mark (``knowtk-scan``: the tip and the scan cache's change
counter it holds the files of): a new process whose scan cache is not the one the tip was taken with observes the
whole store again (a commit only where it differs), so a process killed between its scan and its observation loses
nothing the files still say.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from knowtk.engine.engine import Engine
from knowtk.model.config import CONFIG_FILE
from knowtk.model.records import read_regular
from knowtk.write.seen_feed import FEED_APART_FROM, quoted, whole_files, write_plan

if TYPE_CHECKING:
    from knowtk.write.checkpoint import Repo

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["SEEN_DIR", "SEEN_REF", "SeenKeeper", "check_seen", "in_step", "read_ref"]

SEEN_DIR = "seen.git"  # under the state folder
SEEN_REF = "refs/knowtk/seen"
SCAN_MARK = "knowtk-scan"  # in SEEN_DIR: "TIP TOKEN", the tip holds the scan cache's files at that change counter
LOCK_FILE = "knowtk.lock"  # in SEEN_DIR: one observation at a time, across processes
MAX_PROBLEMS = 20  # failures noted until the next check (the same one again is not noted twice in a row)
REPACK_AT = 48  # packs (one a change) past which the small ones are rolled together (git repack --geometric)
AUTHOR = b"knowtk <knowtk@localhost>"
# every object and the ref fsynced before fast-import exits; one pack a change, never loose objects (each one more
# file to fsync); level 1: a whole store's first observation costs its compression first
GIT_CONFIG = (
    "-c",
    "core.fsync=committed",
    "-c",
    "core.fsyncMethod=fsync",
    "-c",
    "fastimport.unpackLimit=0",
    "-c",
    "pack.compression=1",
    "-c",
    "gc.auto=0",
)
_READ_ONLY = {"GIT_OPTIONAL_LOCKS": "0", "GIT_LITERAL_PATHSPECS": "1"}  # the store's repository, only read


class SeenFailed(Exception):
    """An observation could not be kept (no git, a damaged record, a full disk): the message says why."""


class SeenKeeper:
    """Keeps what one engine's scans see (the engine's ``observer``); ``clock`` gives the instant of each."""

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.root = engine.root
        self.folder = os.path.join(os.path.dirname(engine.state_path), SEEN_DIR)
        self.clock = clock
        self.problems: list[str] = []  # what failed since the last check (Store.check reports them)
        self.kept = 0  # observations kept by this process
        self.last_error: str | None = None  # why the last observation failed (None: it was kept)
        self._looked = False  # the tip compared with the scan cache (once a process)
        self._whole = False  # the whole store is to be observed at the next scan
        self._failed = False  # the last observation failed: tried again at the next change, not at every query
        self._pending: set[str] = set()  # paths a failed observation held
        self._job: _Job | None = None

    def saw(self, touched: set[str], config_changed: bool) -> None:
        """A scan found ``touched`` changed (and knowtk.yaml, with ``config_changed``): keep them, in a thread."""
        self.settle()
        if not self._looked:
            self._looked = True
            self._whole = self._whole or not self._in_step()
        elif read_ref(self.folder) is None:  # the record was removed meanwhile: it starts again, whole
            self._whole = True
        if self._failed and not touched and not config_changed:
            return  # tried again at the next change, not at every query
        paths = set(touched) | self._pending
        if config_changed:
            paths.add(CONFIG_FILE)
        if not paths and not self._whole:
            return
        whole, self._whole, self._pending = self._whole, False, set()
        if whole:
            listed = sorted(self.engine.scanner.files)
            if os.path.isfile(os.path.join(self.root, CONFIG_FILE)):
                listed.append(CONFIG_FILE)
        else:
            listed = sorted(paths)
        token = self.engine.scanner.saved_token
        self._job = _Job(self, whole, listed, token, int(self.clock()))

    def settle(self) -> None:
        """Wait for the observation under way; a failure is noted and its paths kept again at the next change."""
        job = self._job
        if job is None:
            return
        job.thread.join()
        self._job, self.last_error = None, job.error
        if job.error is None:
            self.kept += 1
            self._failed = False
            return
        self._failed = True
        problem = f"{SEEN_DIR}: an observation could not be kept ({job.error})"
        if problem not in self.problems[-1:] and len(self.problems) < MAX_PROBLEMS:  # (each change tries again)
            self.problems.append(problem)
        if job.whole:
            self._whole = True
        else:
            self._pending |= set(job.paths)

    def observe_whole(self) -> str | None:
        """Observe the whole store now (``knowtk check``, after the record was lost); the error, if any."""
        self.settle()
        self._looked, self._whole, self._failed, self.last_error = True, True, False, None
        self.engine.snapshot()  # the scan calls saw(), which starts it; the call waits for it (settle)
        self.settle()
        return self.last_error

    def take_problems(self) -> list[str]:
        found, self.problems = self.problems, []
        return found

    def _in_step(self) -> bool:
        """The tip holds the files of the scan cache as this process loaded it (the mark says so)."""
        return in_step(self.folder, self.engine.scanner.loaded_token) is not None


class _Job:
    """One observation, kept in a thread while the call that saw it runs."""

    def __init__(self, keeper: SeenKeeper, whole: bool, paths: list[str], token: int | None, at: int) -> None:
        self.keeper, self.whole, self.paths, self.token, self.at = keeper, whole, paths, token, at
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, name="knowtk-seen", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            _observe(self.keeper, self)
        except Exception as exc:  # the record fails, never the query: the keeper notes it
            self.error = f"{type(exc).__name__}: {exc}" if not isinstance(exc, SeenFailed) else str(exc)


def _observe(keeper: SeenKeeper, job: _Job) -> None:
    import shutil  # imported when an observation is kept: a query that changed nothing never needs them
    import subprocess

    git = shutil.which("git")
    if git is None:
        raise SeenFailed("the git command is not installed or not on PATH")
    folder = keeper.folder
    made = not os.path.isfile(os.path.join(folder, "HEAD"))
    located = _store_repo(keeper.root) if made or job.whole else None
    if made:
        _create(folder, git)
    if made or job.whole:  # the store's repository as the alternate: named again at each whole observation
        _link_alternate(folder, _store_objects(located))
    with _locked(folder):
        tip = read_ref(folder)
        if tip is None and not job.whole:
            raise SeenFailed("the record holds no observation to add a change to: the whole store is kept next")
        committed = _committed(located) if job.whole else {}
        command = [git, "--git-dir", folder, *GIT_CONFIG, "fast-import", "--quiet", "--date-format=raw", "--depth=0"]
        if job.whole and len(job.paths) >= FEED_APART_FROM:
            error = _import_fed(keeper, job, tip, committed, command)
        else:
            error = _import(keeper, job, tip, committed, command)
        if error is not None or read_ref(folder) in (None, tip):
            raise SeenFailed(f"git fast-import failed: {error or 'the ref did not move'}")
        _write_mark(folder, read_ref(folder), job.token)
        if _pack_count(folder) > REPACK_AT:
            subprocess.run(
                [git, "--git-dir", folder, *GIT_CONFIG, "repack", "-d", "-l", "-q", "--geometric=2"],
                capture_output=True,
                timeout=600,
                check=False,
            )


def _import(
    keeper: SeenKeeper, job: _Job, tip: str | None, committed: dict[str, tuple[str, int]], command: list[str]
) -> str | None:
    """Run ``command`` (``git fast-import``) on the observation's input made here; its error, if it failed."""
    import subprocess

    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stderr is not None
    try:
        for chunk in _stream(keeper, job, tip, committed):
            proc.stdin.write(chunk)
        proc.stdin.close()
    except BrokenPipeError:
        pass  # git stopped reading: its message says why
    error = proc.stderr.read().decode("utf-8", "replace").strip()
    return None if proc.wait() == 0 else error or f"exit status {proc.returncode}"


def _import_fed(
    keeper: SeenKeeper, job: _Job, tip: str | None, committed: dict[str, tuple[str, int]], command: list[str]
) -> str | None:
    """Run ``command`` on the input ``knowtk.write.seen_feed`` makes in a process of its own from a plan (the files
    read there, not in a thread holding this process's interpreter lock); its error, if either failed."""
    import subprocess
    import sys
    import tempfile

    fd, plan = tempfile.mkstemp(prefix="plan-", dir=keeper.folder)
    os.close(fd)
    try:
        write_plan(plan, _head(job, tip), job.paths, committed)
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # (knowtk's parent)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)}
        feed = [sys.executable, "-m", "knowtk.write.seen_feed", plan, keeper.root]
        feed.append(str(keeper.engine.scanner.max_file_bytes))
        try:
            feeder = subprocess.Popen(feed, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        except OSError:  # no interpreter to start (an embedded one): the files are read here, as a change's are
            return _import(keeper, job, tip, committed, command)
        assert feeder.stdout is not None and feeder.stderr is not None
        try:
            proc = subprocess.Popen(command, stdin=feeder.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        finally:
            feeder.stdout.close()  # (fast-import holds it: the feeder sees a broken pipe if git stops)
        assert proc.stderr is not None
        error = proc.stderr.read().decode("utf-8", "replace").strip()
        fed = feeder.stderr.read().decode("utf-8", "replace").strip()
        if feeder.wait() != 0:
            proc.kill()
            proc.wait()
            return f"the files could not be read for it: {fed.splitlines()[-1] if fed else feeder.returncode}"
        return None if proc.wait() == 0 else error or f"exit status {proc.returncode}"
    finally:
        with contextlib.suppress(OSError):
            os.remove(plan)


def _head(job: _Job, tip: str | None) -> bytes:
    """The commit's head in ``git fast-import``'s input, up to its files."""
    message = f"knowtk saw {'the whole store' if job.whole else 'a change'}: {len(job.paths)} file(s)\n".encode()
    head = b"feature done\ncommit " + SEEN_REF.encode() + b"\n"
    head += b"committer %s %d +0000\ndata %d\n%s" % (AUTHOR, job.at, len(message), message)
    if tip is not None:
        head += b"from " + SEEN_REF.encode() + b"^0\n"
    return head + (b"deleteall\n" if job.whole else b"")


def _stream(keeper: SeenKeeper, job: _Job, tip: str | None, committed: dict[str, tuple[str, int]]) -> Iterator[bytes]:
    """``git fast-import``'s input: one commit, whole (``deleteall`` and every file) or of the changed paths."""
    yield _head(job, tip)
    max_bytes = keeper.engine.scanner.max_file_bytes
    if job.whole:
        yield from whole_files(keeper.root, job.paths, committed, max_bytes)
    else:
        for path in job.paths:
            name = quoted(path)
            data = read_regular(os.path.join(keeper.root, *path.split("/")), max_bytes)
            if isinstance(data, bytes):
                yield b"M 100644 inline %s\ndata %d\n" % (name, len(data))
                yield data
                yield b"\n"
            else:  # gone (or no longer a regular file): gone from the record too
                yield b"D %s\n" % name
    yield b"done\n"


def _store_repo(root: str) -> tuple[Repo, str] | None:
    """The Git work tree holding the store and the store's folder in it ("": its root); None outside Git."""
    from knowtk.write.checkpoint import locate_store  # imported when used: a query that changed nothing runs no git

    return locate_store(root)


def _committed(located: tuple[Repo, str] | None) -> dict[str, tuple[str, int]]:
    """Path inside the store -> (blob, size) of the files HEAD of the store's Git work tree has as they are now
    (``git diff HEAD`` names the others); empty outside Git or before the first commit."""
    if located is None:
        return {}
    repo, prefix = located
    try:
        listing = repo.run("ls-tree", "-r", "-z", "-l", f"HEAD:{prefix}", env=_READ_ONLY)
        changed = repo.run("diff", "HEAD", "--name-only", "-z", "--no-renames", "--", prefix or ".", env=_READ_ONLY)
    except Exception:  # no HEAD, or the folder is in no commit: nothing to refer to
        return {}
    cut = len(prefix) + 1 if prefix else 0
    differ = {name[cut:] for name in changed.split("\0") if name}
    found = {}
    for entry in listing.split("\0"):
        head, _, path = entry.partition("\t")
        parts = head.split()
        if len(parts) == 4 and parts[0] in ("100644", "100755") and parts[3].isdigit() and path not in differ:
            found[path] = (parts[2], int(parts[3]))
    return found


@contextmanager
def _locked(folder: str) -> Iterator[None]:
    """The record held for one observation, across threads and processes: ``flock`` on its lock file."""
    fd = os.open(os.path.join(folder, LOCK_FILE), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _create(folder: str, git: str) -> None:
    """A bare repository whose HEAD is the seen ref, made beside and renamed into place (whole or absent)."""
    import subprocess

    work = f"{folder}.new-{os.getpid()}-{threading.get_ident()}"
    subprocess.run([git, "init", "-q", "--bare", "--template=", work], capture_output=True, check=True, timeout=60)
    with open(os.path.join(work, "HEAD"), "w", encoding="ascii") as f:  # what `git symbolic-ref HEAD` writes
        f.write(f"ref: {SEEN_REF}\n")
    try:
        os.rename(work, folder)
    except OSError:  # another process made it first
        import shutil

        shutil.rmtree(work, ignore_errors=True)


def _link_alternate(folder: str, objects: str) -> None:
    """``objects/info/alternates`` names ``objects``, the store's repository's objects ("": none, outside Git)."""
    path = os.path.join(folder, "objects", "info", "alternates")
    try:
        with open(path, encoding="utf-8") as f:
            have = f.read().strip()
    except OSError:
        have = ""
    if have != objects:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(objects + "\n" if objects else "")
        os.replace(path + ".tmp", path)


def _store_objects(located: tuple[Repo, str] | None) -> str:
    """The objects folder of the Git repository holding the store ("" when there is none)."""
    if located is None:
        return ""
    repo = located[0]
    if os.path.isdir(os.path.join(repo.top, ".git", "objects")):  # the usual layout (a worktree's .git is a file)
        return os.path.join(repo.top, ".git", "objects")
    try:
        return repo.run("rev-parse", "--path-format=absolute", "--git-path", "objects", env=_READ_ONLY)
    except Exception:
        return ""


def read_ref(folder: str) -> str | None:
    """The tip of the seen ref (the loose ref, else packed-refs), without running git; None when there is none."""
    try:
        with open(os.path.join(folder, *SEEN_REF.split("/")), encoding="ascii") as f:
            value = f.read().strip()
        return value if len(value) == 40 else None
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(folder, "packed-refs"), encoding="ascii") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1] == SEEN_REF:
                    return parts[0]
    except (OSError, ValueError):
        pass
    return None


def in_step(folder: str, token: int | None) -> str | None:
    """The tip of the record in ``folder`` when it holds the files of the scan cache at change counter ``token``
    (the mark says so), else None."""
    tip = read_ref(folder)
    if tip is None or token is None:
        return None
    try:
        with open(os.path.join(folder, SCAN_MARK), encoding="ascii") as f:
            mark = f.read().split()
    except (OSError, ValueError):
        return None
    return tip if mark == [tip, str(token)] else None


def _write_mark(folder: str, tip: str | None, token: int | None) -> None:
    """The mark is a hint (a wrong one costs a whole observation, never a loss): written without an fsync."""
    path = os.path.join(folder, SCAN_MARK)
    with open(path + ".tmp", "w", encoding="ascii") as f:
        f.write(f"{tip} {token if token is not None else '-'}\n")
    os.replace(path + ".tmp", path)


def _pack_count(folder: str) -> int:
    try:
        return sum(1 for name in os.listdir(os.path.join(folder, "objects", "pack")) if name.endswith(".pack"))
    except OSError:
        return 0


def check_seen(keeper: SeenKeeper) -> dict[str, list[str]]:
    """``knowtk check`` of the record: ``{found, repaired, unrepaired}``. A record git cannot read whole (``fsck
    --connectivity-only``) is moved aside and started again from the files as they are; a missing one too."""
    keeper.settle()
    out: dict[str, list[str]] = {"found": keeper.take_problems(), "repaired": [], "unrepaired": []}
    folder = keeper.folder
    damage = _damage(folder) if read_ref(folder) is not None else "no observation is kept"
    if damage is None:
        if out["found"]:
            out["repaired"].append(
                f"{SEEN_DIR}: the record reads whole; the paths not kept are kept at their next change"
            )
        return out
    out["found"].append(f"{SEEN_DIR}: {damage}")
    if os.path.isdir(folder):
        aside = f"{folder}.damaged-{int(time.time())}"
        os.rename(folder, aside)
        out["unrepaired"].append(f"{SEEN_DIR}: the observations before now could not be read; moved aside to {aside}")
    error = keeper.observe_whole()
    if error is None:
        out["repaired"].append(f"{SEEN_DIR}: started again: the files as they are now kept as its first observation")
    else:
        out["unrepaired"].append(f"{SEEN_DIR}: could not be started again ({error})")
    return out


def _damage(folder: str) -> str | None:
    """Why git cannot read the record whole (None: it can)."""
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        return None
    proc = subprocess.run(
        [git, "--git-dir", folder, "fsck", "--connectivity-only", "--no-dangling", "--no-progress", SEEN_REF],
        capture_output=True,
        timeout=3600,
        check=False,
    )
    if proc.returncode == 0:
        return None
    lines = [line for line in proc.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return f"damaged: {lines[0] if lines else 'git fsck failed'}"
