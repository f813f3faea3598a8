"""The engine: one store's scan, snapshot and projections, kept in step at every query.

``Engine.snapshot()`` scans (cheap when nothing changed) and rebuilds the
snapshot when a file changed, ``knowtk.yaml`` changed, or an expiry passed.
``Engine.keyword()`` additionally reconciles the keyword projections with
that snapshot, re-indexing only the records whose hash changed. Query
modules (``knowtk.query``) read an engine; they never write Markdown.
"""

from __future__ import annotations

import gc
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .config import CONFIG_FILE, StoreConfig, load_config
from .errors import StoreUnavailable
from .keyword import FtsProjection
from .records import Record
from .scan import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES, ChangeSource, Scanner
from .snapshot import Safeguards, Snapshot, build_snapshot
from .state import STATE_DIR, STATE_FILE, StateDB, now_utc
from .watch import choose_change_source, freshness_mode

__all__ = ["Engine", "KeywordIndex"]

# Bodies parsed by the scan are kept for indexing up to this many characters; the rest are
# read again when indexed. A first scan of 100k records would otherwise hold every body at once.
PENDING_BODY_CHARS = 64 * 2**20
# objects created while the collector was paused past which they are frozen (see _collector_paused)
FREEZE_AFTER_OBJECTS = 200_000


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while the store is (re)loaded.

    A first scan creates millions of small objects (records, their frontmatter, index rows),
    none of them in reference cycles; meanwhile the collector would walk the growing heap over
    and over, which took about half the time of loading the scan cache.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_count()[0] > FREEZE_AFTER_OBJECTS:
                # a large load: move what exists to the permanent generation, or the collector's next full
                # pass walks all of it once (~1 s at 100k records, in whichever query comes next).
                # Records and snapshots hold no cycles: refcounting still frees them when replaced.
                gc.freeze()
            gc.enable()


@dataclass
class KeywordIndex:
    """The reconciled keyword projections for one snapshot, or why they are unavailable."""

    main: FtsProjection
    history: FtsProjection
    generation: int
    error: str | None = None
    written: int = 0  # projection rows written by the last reconcile (only changed records)

    @property
    def indexed_at(self) -> str | None:
        stamps = [s for s in (self.main.indexed_at, self.history.indexed_at) if s]
        return max(stamps) if stamps else None


class Engine:
    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        state_dir: str | os.PathLike[str] | None = None,
        change_source: ChangeSource | type | None = None,
        max_files: int = DEFAULT_MAX_FILES,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        self.root = os.path.abspath(os.fspath(root))
        if not os.path.isdir(self.root):
            what = "does not exist" if not os.path.exists(self.root) else "is not a folder"
            raise StoreUnavailable(self.root, f"the store folder {what}")
        folder = os.fspath(state_dir) if state_dir is not None else os.path.join(self.root, STATE_DIR)
        self.state = StateDB(os.path.join(folder, STATE_FILE))
        self.scanner = Scanner(
            self.root,
            self.state,
            source=choose_change_source(self.root, change_source, max_files=max_files),
            max_file_bytes=max_file_bytes,
        )
        self.safeguards = Safeguards(self.state)
        self._config_stat: tuple[int, int] | None = None
        self.config: StoreConfig = load_config(self.root)
        self._snapshot: Snapshot | None = None
        self._generation = 0
        self._touched: set[str] = set()
        self._pending_bodies: dict[str, str] = {}
        self._keyword: KeywordIndex | None = None
        self._keyword_desired: tuple[int, dict[str, str], dict[str, str]] | None = None
        # the maps the desired ones were patched from, and the ids that may differ (lets reconcile look at those only)
        self._keyword_base: tuple[dict[str, str], dict[str, str], frozenset[str]] | None = None
        # per-engine state of other projections (temporal tables, embeddings), keyed by their module
        self.extensions: dict[str, Any] = {}

    @property
    def state_path(self) -> str:
        return self.state.path

    @property
    def freshness_mode(self) -> str:
        """How a query learns what changed: 'inotify' (the OS says) or 'walk' (every file is stat'ed)."""
        return freshness_mode(self.scanner.source)

    # -- the snapshot --------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """Scan and validate: the store as the current query sees it."""
        with _collector_paused():
            return self._snapshot_now()

    def _snapshot_now(self) -> Snapshot:
        room = PENDING_BODY_CHARS - sum(map(len, self._pending_bodies.values()))
        touched, bodies = self.scanner.scan(keep_bodies=room)
        self._pending_bodies.update(bodies)
        self._touched |= touched  # kept until a snapshot has taken them in
        now = now_utc()
        config_changed = self._reload_config()
        snap = self._snapshot
        expired = snap is not None and snap.valid_until is not None and now >= snap.valid_until
        if snap is None or self._touched or config_changed or expired:
            snap = build_snapshot(
                self.scanner.files,
                self.config,
                self.safeguards,
                generation=self._generation + 1,
                now=now,
                previous=snap,
                touched=self._touched,
            )
            self._generation, self._snapshot, self._touched = snap.generation, snap, set()
        return snap

    def _reload_config(self) -> bool:
        try:
            st = os.stat(os.path.join(self.root, CONFIG_FILE))
            stat: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            stat = None
        config_changed = getattr(self.scanner.source, "config_changed", None)  # an event proves a same-stat edit
        if stat == self._config_stat and not (config_changed is not None and config_changed()):
            return False
        first = self._config_stat is None and self._snapshot is None
        self._config_stat = stat
        self.config = load_config(self.root)
        return not first

    # -- keyword projections ----------------------------------------------------------------------
    def keyword(self, snap: Snapshot) -> KeywordIndex:
        """The keyword projections reconciled with this snapshot (only changed records re-indexed)."""
        index = self._keyword
        if index is None:
            index = self._keyword = KeywordIndex(
                FtsProjection(self.state, "keyword"), FtsProjection(self.state, "keyword_history"), -1
            )
        try:
            with _collector_paused():
                main_ids, history_ids = self._desired(snap)
                base = self._keyword_base
                since_main, since_history = ((base[0], base[2]), (base[1], base[2])) if base else (None, None)

                def text(rid: str) -> tuple[str, str, str] | None:
                    return self._text(snap.records[rid])

                index.written = index.main.reconcile(main_ids, text, since=since_main)
                index.written += index.history.reconcile(history_ids, text, since=since_history)
        except sqlite3.Error as exc:
            index.error = f"{type(exc).__name__}: {exc}"
            index.main._version = index.history._version = None  # reload the mirrors next time
            return index
        self._pending_bodies.clear()
        index.error = None
        index.generation = snap.generation
        return index

    def _desired(self, snap: Snapshot) -> tuple[dict[str, str], dict[str, str]]:
        """{id: sha256} each keyword projection must hold: available active records, available superseded ones."""
        cached = self._keyword_desired
        if cached is not None and cached[0] == snap.generation:
            return cached[1], cached[2]
        self._keyword_base = None
        if cached is not None and snap.changed_ids is not None and cached[0] == snap.previous_generation:
            # the previous maps, with only the ids the snapshot says may have changed looked at again
            main, history = dict(cached[1]), dict(cached[2])
            ids: Iterable[str] = snap.changed_ids
            for rid in ids:
                main.pop(rid, None)
                history.pop(rid, None)
            self._keyword_base = (cached[1], cached[2], snap.changed_ids)
        else:
            main, history = {}, {}
            ids = snap.records
        records, unavailable, lifecycle = snap.records, snap.unavailable, snap.lifecycle
        for rid in ids:
            r = records.get(rid)
            if r is None or rid in unavailable:
                continue
            life = lifecycle[rid]
            if life == "active":
                main[rid] = r.sha256
            elif life == "superseded":
                history[rid] = r.sha256
        self._keyword_desired = (snap.generation, main, history)
        return main, history

    def _text(self, r: Record) -> tuple[str, str, str] | None:
        body = self._pending_bodies.get(r.path)
        if body is None:
            body = self.scanner.read_body(r.path, r.sha256)
            if body is None:
                return None
        return (r.title or "", "\n".join(r.aliases), body)

    def body(self, r: Record) -> str | None:
        """The body of a record as of its snapshot hash (None if the file changed since)."""
        return self.scanner.read_body(r.path, r.sha256)

    def close(self) -> None:
        close_source = getattr(self.scanner.source, "close", None)
        if close_source is not None:
            close_source()
        self.state.close()
