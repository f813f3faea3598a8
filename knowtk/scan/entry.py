"""One record file as the scan knows it: read, hashed and parsed (``load_file``), kept as a ``FileEntry``.

A changed file costs one read, one SHA-256 and one YAML parse; the frontmatter is parsed only
when the bytes differ from those the scan knows. ``load_file`` also runs in parse workers
(``knowtk.scan.pool``), so what it returns is plain, picklable data.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, NamedTuple

from knowtk.model.profile import DEFAULT_PROFILE, derive_meta
from knowtk.model.records import (
    FileProblem,
    FrontmatterSource,
    Issue,
    Record,
    build_record,
    load_frontmatter,
    read_regular,
    read_source,
)
from knowtk.model.shapes import shape
from knowtk.scan.changes import LISTED_PROBLEMS, Stat

__all__ = ["DEFAULT_MAX_FILE_BYTES", "FileEntry", "Loaded", "load_file"]

DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024


@shape(slots=True)
class FileEntry:
    """What the scan knows of one record file."""

    stat: Stat
    sha256: str | None = None
    meta: dict[str, Any] | None = None
    body_line: int = 0
    problem: FileProblem | None = None
    record: Record | None = None
    issues: tuple[Issue, ...] = ()  # (a tuple: most files have none, and () is one object, where [] was one each)
    # the frontmatter as scan_files_v1's row will hold it (JSON), while the mapping is let go and the row is
    # not written yet (``hold_as_text``)
    meta_text: str | None = None

    @property
    def filled(self) -> bool:
        """False for an entry loaded from scan_files_v1 without its frontmatter (a new process loads those
        only for the files a query needs): ``Scanner.entry`` fills it in."""
        return self.meta is not None or self.record is not None or self.problem is not None or self.sha256 is None

    def release(self, source: FrontmatterSource) -> None:
        """Let the frontmatter go once scan_files_v1 holds it: the record reads it back from ``source``."""
        self.meta_text = None
        self._let_go(source)

    def hold_as_text(self, source: FrontmatterSource) -> None:
        """Keep the frontmatter as its JSON text until its row is written (some 60% of the mapping's memory:
        a cold build reads a million before it writes them), the record reading it back from ``source``."""
        meta = self.meta
        if self._let_go(source):
            self.meta_text = json.dumps(meta, ensure_ascii=False)

    def _let_go(self, source: FrontmatterSource) -> bool:
        """Drop the mapping where the record let it go to ``source`` (a profile's record keeps it); True if so."""
        record = self.record
        if record is None or self.meta is None:
            return False
        record.release_frontmatter(source)
        if isinstance(record.frontmatter_or_source, dict):
            return False
        self.meta = None
        return True

    def meta_json(self) -> str | None:
        """The frontmatter as scan_files_v1 holds it (JSON), or None for a file that has none."""
        if self.meta_text is not None:
            return self.meta_text
        if self.meta is not None:
            return json.dumps(self.meta, ensure_ascii=False)
        return json.dumps(self.record.frontmatter, ensure_ascii=False) if self.record is not None else None

    def rebuild(self, path: str) -> None:
        if self.problem is not None or self.meta is None:
            problem = self.problem or FileProblem("unreadable", "the file could not be read")
            self.record, self.issues = None, (Issue(path, None, problem.code, problem.message),)
        else:
            record, issues = build_record(path, self.sha256 or "", self.meta, self.body_line)
            self.record, self.issues = record, tuple(issues)


class Loaded(NamedTuple):
    """What ``load_file`` found in one file."""

    entry: FileEntry
    body: str | None = None  # the body, when the frontmatter was parsed into a mapping
    parsed: bool = False  # the frontmatter was parsed (successfully or not)


def load_file(
    root: str, max_file_bytes: int, path: str, st: Stat, known_sha256: str | None, profile: str = DEFAULT_PROFILE
) -> Loaded | None:
    """Read one record file, or None if it vanished. Runs in pool workers too.

    The frontmatter is parsed only when the bytes differ from ``known_sha256``: the caller
    keeps the entry it has for a file whose content did not change. Under a ``profile`` other
    than knowtk's, the keys the file lacks are derived (``knowtk.model.profile``).
    """
    if st[0] < 0:  # the listing found it cannot be read as a record
        code, message = LISTED_PROBLEMS[-st[0]]
        return Loaded(FileEntry(st, None, None, 0, FileProblem(code, message)))
    if st[0] > max_file_bytes:
        message = f"{st[0]:,} bytes is over the {max_file_bytes:,}-byte limit for a record"
        return Loaded(FileEntry(st, None, None, 0, FileProblem("file_too_large", message)))
    data = read_regular(os.path.join(root, path), max_file_bytes)
    if data is None:
        return None
    if isinstance(data, FileProblem):
        return Loaded(FileEntry(st, None, None, 0, data))
    sha = hashlib.sha256(data).hexdigest()
    if sha == known_sha256:
        return Loaded(FileEntry(st, sha))
    if profile != DEFAULT_PROFILE:
        return _load_derived(profile, path, st, sha, data)
    loaded = load_frontmatter(data)
    if isinstance(loaded, FileProblem):
        return Loaded(FileEntry(st, sha, None, 0, loaded), None, True)
    meta, body, body_line = loaded
    return Loaded(FileEntry(st, sha, meta, body_line), body, True)


def _load_derived(profile: str, path: str, st: Stat, sha: str, data: bytes) -> Loaded:
    source = read_source(path, data)
    if isinstance(source, FileProblem):
        return Loaded(FileEntry(st, sha, None, 0, source), None, True)
    meta = derive_meta(profile, source)
    return Loaded(FileEntry(st, sha, meta, source.body_line), source.body, True)
