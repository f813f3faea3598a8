"""The steps of ``Engine.check``: state.sqlite, the safeguards, the scan cache and the keyword projections.

Each step compares one part with what it is derived from, rebuilds it when they disagree, and
writes what it found into a ``Findings``. The registered projections check themselves
(``knowtk.index.projection``); ``Engine.check`` runs the steps in order.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from knowtk.errors import StateError
from knowtk.index.fts import FtsProjection
from knowtk.index.projection import Findings
from knowtk.scan.cache import Scanner
from knowtk.snapshot.safeguards import Safeguards
from knowtk.state import StateDB

__all__ = [
    "check_file_hashes",
    "check_keyword",
    "check_safeguards",
    "check_scan_cache",
    "integrity_check",
    "recheck_integrity",
    "report",
]


def integrity_check(state: StateDB) -> list[str]:
    """What ``PRAGMA integrity_check`` says: ``["ok"]`` when the database is whole."""
    return [row[0] for row in state.conn.execute("PRAGMA integrity_check")]


def check_safeguards(guards: Safeguards, out: Findings) -> None:
    """The safeguards against their journal: restored where they disagree; a loss waits for a person."""
    before = len(guards.repairs)
    guards.invalidate()
    try:
        guards.refresh()
    except StateError as exc:
        out.found.append(str(exc))
        out.unrepaired.append(str(exc))
    out.rebuilt(guards.repairs[before:])
    del guards.repairs[:]


def check_file_hashes(root: str, scanner: Scanner, out: Findings) -> None:
    """The files' hashes as the scan keeps them (from scan_files_v1) against the files themselves."""
    stale = []
    for path, entry in scanner.files.items():
        if entry.sha256 is None:
            continue
        try:
            with open(os.path.join(root, path), "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            continue  # gone since the scan: the next scan sees it
        if digest != entry.sha256:
            stale.append(path)
    if stale:
        out.found.append(f"scan_files_v1 holds a wrong hash for {len(stale)} files")
        scanner.forget(stale)
        out.repaired.append(f"{len(stale)} files parsed again")


def check_scan_cache(state: StateDB, scanner: Scanner, out: Findings) -> None:
    """The scan cache table against the files as parsed (the scanner filled: every file read)."""
    if not state.table_exists("scan_files_v1"):
        out.found.append("scan_files_v1 is missing")
        scanner.save()  # creates it and writes every file
    cached = {
        path: (size, mtime, sha)
        for path, size, mtime, sha in state.conn.execute("SELECT path, size, mtime_ns, sha256 FROM scan_files_v1")
    }
    files = scanner.files
    wrong = {p for p, e in files.items() if cached.get(p) != (e.stat[0], e.stat[1], e.sha256)}
    wrong |= cached.keys() - files.keys()
    if wrong:
        out.found.append(f"scan_files_v1 disagrees with the files at {len(wrong)} paths")
        scanner.mark_unsaved(wrong)
        scanner.save()
        out.repaired.append(f"scan_files_v1 rewritten at {len(wrong)} paths")


def check_keyword(
    projections: Sequence[tuple[FtsProjection, Mapping[str, str]]],
    reindex: Callable[[], str | None],
    out: Findings,
) -> None:
    """Each keyword projection against the records it must hold: rebuilt when it disagrees.

    ``reindex`` reconciles the projections again (one taken for damaged is rebuilt from scratch)
    and gives the error that left them unavailable, if any.
    """
    for proj, desired in projections:
        problems = proj.verify(desired)
        if problems:
            out.found += problems
            proj.rebuild()
            error = reindex()
            out.repaired.append(f"{proj.fts} rebuilt")
            if error:
                out.unrepaired.append(f"{proj.fts} could not be rebuilt: {error}")
    for proj, _ in projections:  # what the rebuilds above, and queries before, found by themselves
        repairs = proj.take_repairs()
        out.found += [r for r in repairs if r not in out.found]
        out.repaired += [r for r in repairs if r not in out.repaired]


def recheck_integrity(state: StateDB, before: list[str], out: Findings) -> None:
    """After the repairs, what ``PRAGMA integrity_check`` still finds (when it found anything before)."""
    if before != ["ok"]:
        after = integrity_check(state)
        if after != ["ok"]:
            out.unrepaired += [f"integrity_check after repair: {line}" for line in after]


def report(state_path: str, earlier: list[str], integrity: list[str], out: Findings) -> dict[str, Any]:
    """``Store.check``'s answer (the keys its docstring lists)."""
    return {
        "earlier": earlier,
        "ok": not out.found,
        "state": state_path,
        "integrity": integrity,
        "found": out.found,
        "repaired": out.repaired,
        "unrepaired": out.unrepaired,
    }
