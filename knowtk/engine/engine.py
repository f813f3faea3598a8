"""The engine: one store's scan, snapshot and projections, kept in step at every query.

``Engine.snapshot()`` scans (cheap when nothing changed) and rebuilds the
snapshot when a file changed, ``knowtk.yaml`` changed, or an expiry passed.
``Engine.keyword()`` additionally reconciles the keyword projections with
that snapshot, re-indexing only the records whose hash changed;
``Engine.expired_keyword()`` the projection of the records expired since,
which only a search at an instant asks for (``knowtk.engine.desired``). The other
projections (``knowtk.index.projection``'s registered kinds) live in
``Engine.extensions``. Query modules (``knowtk.query``) read an engine;
they never write Markdown.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, MutableMapping
from typing import Any, Protocol, TypeVar

from knowtk.engine import repair
from knowtk.engine.desired import ExpiredKeyword, PatchedMap, TrustedMap, clustered
from knowtk.engine.desired import derive as derive_desired
from knowtk.engine.transactions import run_all
from knowtk.errors import InvalidArgument, StoreUnavailable
from knowtk.index.filter_sums import facet_groups
from knowtk.index.fts import FtsProjection
from knowtk.index.projection import Findings, kept, registered
from knowtk.model.config import CONFIG_FILE, StoreConfig, load_config
from knowtk.model.profile import DEFAULT_PROFILE, ProfileMap, has_profile, profile_names
from knowtk.model.records import Record
from knowtk.model.shapes import shape
from knowtk.scan.cache import Scanner
from knowtk.scan.changes import DEFAULT_MAX_FILES, ChangeSource
from knowtk.scan.entry import DEFAULT_MAX_FILE_BYTES
from knowtk.scan.pool import collector_paused
from knowtk.scan.watch import choose_change_source, freshness_mode
from knowtk.snapshot.build import build_snapshot
from knowtk.snapshot.image_format import guards_key
from knowtk.snapshot.image_write import record_behind, stored_positions, write_image
from knowtk.snapshot.model import Snapshot
from knowtk.snapshot.safeguards import Safeguards
from knowtk.snapshot.stored import StoredRecords, StoredSnapshot, load_image
from knowtk.state import STATE_DIR, STATE_FILE, Contention, StateDB, accept_hint, is_busy, now_utc

__all__ = ["Engine", "KeywordIndex", "Observer"]

T = TypeVar("T")
_ordinals = itertools.count()  # a global order of engines: several are always locked in this order

# Bodies parsed by the scan are kept for indexing up to this many characters; the rest are
# read again when indexed. A first scan of 100k records would otherwise hold every body at once.
# (64 Mi would make a cold build's peak 52 MiB higher at 30k records, to spare re-reads that cost a file
# read and a hash each, small beside a body's parse and index.)
PENDING_BODY_CHARS = 16 * 2**20
# the ids a keyword rows' mark may name as differing from its image (FtsProjection.unsure_of); past them, no mark
UNSURE_IDS = 20_000

# files changed since the stored snapshot image past which it is written again (with at least this
# many, or a twentieth of the store): a new process applies fewer changes to it than a build costs
IMAGE_DRIFT_FILES = 1000
PROFILES_META = "profiles"  # knowtk_meta: the profiles the projections were built under (absent: knowtk)


class Observer(Protocol):
    """Told what each scan found changed (``saw``), and waited for before a call answers (``settle``): the keeper
    of what knowtk saw (``knowtk.write.seen``)."""

    def saw(self, touched: set[str], config_changed: bool) -> None: ...

    def settle(self) -> None: ...


@shape
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
        accept_safeguard_loss: bool = False,
        rebind_state: bool = False,
        profile: str | None = None,
        seeded: bool = False,
    ) -> None:
        if profile is not None and not has_profile(profile):
            raise InvalidArgument(
                "profile", f"no profile is named {profile!r}", allowed=list(profile_names()), value=profile
            )
        self.profile = profile  # the store-wide profile asked for; None: knowtk.yaml's (else knowtk)
        # the state was copied from another store's (a past view seeded from the present): its snapshot image may
        # have been built under other safeguards, and is taken all the same (``_own_safeguards``)
        self.seeded = seeded
        self.root = os.path.abspath(os.fspath(root))
        if not os.path.isdir(self.root):
            what = "does not exist" if not os.path.exists(self.root) else "is not a folder"
            raise StoreUnavailable(self.root, f"the store folder {what}")
        # one call at a time per engine (threads share the connection, the mirrors and the snapshot)
        self.lock = threading.RLock()
        self.ordinal = next(_ordinals)
        self.closed = False
        self.retries = 0  # calls run again because another process changed the state (observability)
        self._writes = 0  # state.writes when the running call began
        self._depth = 0  # nesting of run() in this thread (a tool calling another tool)
        self._pinned: Snapshot | None = None  # the snapshot of the running call
        # absolute: a relative state folder stays the same folder when the caller (a notebook) changes directory
        folder = os.path.abspath(state_dir) if state_dir is not None else os.path.join(self.root, STATE_DIR)
        default = folder == os.path.join(self.root, STATE_DIR)
        self.state = StateDB(
            os.path.join(folder, STATE_FILE),
            store="." if default else self.root,  # the usual .knowtk moves with its store
            hint=accept_hint(self.root, None if default else os.path.abspath(folder)),
            accept_loss=accept_safeguard_loss,
            rebind=rebind_state,
        )
        self.scanner = Scanner(
            self.root,
            self.state,
            source=choose_change_source(self.root, change_source, max_files=max_files),
            max_file_bytes=max_file_bytes,
            lock=self.lock,
        )
        try:
            self.safeguards = Safeguards(self.state, accept_loss=accept_safeguard_loss)
        except BaseException:
            self.state.close()
            raise
        if self.state.moved_aside:
            moved = f"state.sqlite could not be read and was moved to {self.state.moved_aside}"
            self.safeguards.repairs.insert(0, moved)
        self._config_stat: tuple[int, int] | None = None
        self.config: StoreConfig = load_config(self.root)
        self.scanner.profiles = self.profile_map()
        self._align_projections()
        self._snapshot: Snapshot | None = None
        self._image_tried = False  # the stored snapshot image is looked at once, by the first snapshot
        self._image_drift = 0  # files changed since the image was written or loaded
        self._image_key: str | None = None  # the stored image this process's snapshots were built on
        self._behind: set[str] = set()  # files whose content may differ from that image's (record_behind)
        self._adopted: Snapshot | None = None  # the image the first snapshot was loaded from, if behind the files
        self._generation = 0
        self._touched: set[str] = set()
        self._pending_bodies: dict[str, str] = {}
        self._keyword: KeywordIndex | None = None
        self._expired: ExpiredKeyword | None = None  # made by the first search at an instant (expired_keyword)
        self._keyword_desired: tuple[int, Mapping[str, str], Mapping[str, str]] | None = None
        self._desired_version = 0  # bumped at every change of the desired maps (they are patched in place)
        # (the version the desired maps were patched from, the ids that may differ): reconcile looks at those only
        self._keyword_base: tuple[int, frozenset[str]] | None = None
        # (the stored image the keyword rows were last exactly, the ids derived since): the rows are that image's
        # records but at those ids, which the rows' mark then says (FtsProjection.unsure_of); None: not known
        self._rows_base: tuple[str, set[str]] | None = None
        self._unsure: set[str] = set()  # ids the rows taken on trust may differ at: derived at the next patch
        # the registered projections' instances (knowtk.index.projection), by kind
        self.extensions: dict[str, Any] = {}
        # called with the snapshot after each successful keyword reconcile (the write layer marks receipts indexed)
        self.after_reconcile: list[Callable[[Snapshot], None]] = []
        self.observer: Observer | None = None  # told what each scan found changed (the store's keeper of it)

    @property
    def state_path(self) -> str:
        return self.state.path

    @property
    def freshness_mode(self) -> str:
        """How a query learns what changed: 'inotify' (the OS says), 'walk' (every file is stat'ed) or 'settled'
        (files written once, walked once: a past)."""
        return freshness_mode(self.scanner.source)

    def profile_map(self) -> ProfileMap:
        """Which profile reads which file: the one asked for (or knowtk.yaml's) and knowtk.yaml's folders."""
        return ProfileMap(self.profile or self.config.profile, self.config.profiles, self.config.not_records)

    def _align_projections(self) -> None:
        """Drop the projections when state.sqlite's were built under other profiles (the safeguards stay)."""
        key = self.scanner.profiles.key()
        if (self.state.meta(PROFILES_META) or DEFAULT_PROFILE) == key:
            return
        self.state.drop_projections()
        with self.state.transaction():
            self.state.set_meta(PROFILES_META, key)

    def _profiles_changed(self) -> None:
        """knowtk.yaml now reads the files with other profiles: every file is read again, every projection rebuilt."""
        self.scanner.reread_all(self.profile_map())
        self._align_projections()
        self._snapshot = self._adopted = self._keyword = self._image_key = self._expired = None
        self._keyword_desired = self._keyword_base = self._rows_base = None
        self._touched, self._pending_bodies, self.extensions, self._behind = set(), {}, {}, set()

    # -- the snapshot --------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """Scan and validate: the store as the current query sees it (within a call: its one snapshot)."""
        with self.lock:
            self.ensure_open()
            if self._pinned is not None:
                return self._pinned
            if not self._depth:  # outside a call (a direct use): one of its own, so that a retry is possible
                return self.run(lambda: _parsed(self.snapshot()))
            with collector_paused():
                return self._snapshot_now()

    # -- calls -------------------------------------------------------------------------------------
    def run(self, fn: Callable[[], T]) -> T:
        """Run one whole tool call: under this engine's lock, inside one transaction of state.sqlite."""
        return run_all([self], fn)

    @property
    def in_call(self) -> bool:
        """True inside a call of this thread (a tool calling another tool joins it)."""
        return self._depth > 0

    def begin_call(self, *, immediate: bool) -> None:
        """Enter a call (run_all): its snapshot taken and pinned, its transaction begun.

        The call counts as entered even when this fails: ``leave_call`` follows in every case.
        """
        self._depth += 1
        snap = self.snapshot()  # scans and records safeguards in their own transactions
        self.state.begin_query(immediate=immediate)
        self._pinned = snap
        self._writes = self.state.writes

    def end_call(self, *, commit: bool) -> None:
        """Commit or roll back the call's transaction; a rollback forgets the mirrors that saw its writes."""
        self._pinned = None
        try:
            self.state.end_query(commit=commit)
        finally:
            if not commit and self.state.writes != self._writes:  # the mirrors took in writes now undone
                self.invalidate()
        if commit and self._depth == 1:  # the outermost call: a large WAL left by its writes is cut back
            self.state.trim_wal()
        if self._depth == 1 and self.observer is not None:  # what the call saw is kept before it answers
            self.observer.settle()

    def leave_call(self) -> None:
        self._depth -= 1

    def invalidate(self) -> None:
        """Forget every in-memory mirror of state.sqlite (after a rollback): reloaded at the next use."""
        if self._keyword is not None:
            self._keyword.main.invalidate()
            self._keyword.history.invalidate()
        if self._expired is not None:
            self._expired.invalidate()
        for proj in self.extensions.values():
            proj.invalidate()

    def _snapshot_now(self) -> Snapshot:
        room = PENDING_BODY_CHARS - sum(map(len, self._pending_bodies.values()))
        touched, bodies = self.scanner.scan(keep_bodies=room)  # (stored records see it: StoredRecords.current)
        self._pending_bodies.update(bodies)
        self._touched |= touched  # kept until a snapshot has taken them in
        now = now_utc()
        config_changed = self._reload_config()
        seen = touched
        if config_changed and self.profile_map() != self.scanner.profiles:
            self._profiles_changed()
            touched, bodies = self.scanner.scan(keep_bodies=PENDING_BODY_CHARS)
            self._pending_bodies.update(bodies)
            self._touched |= touched
            seen = seen | touched
        if self.observer is not None:
            self.observer.saw(seen, config_changed)
        guards_changed = self.safeguards.refresh()  # raises while a safeguard loss is not accepted
        if self._snapshot is None and not self._image_tried:
            self._image_tried = True
            guards_changed = self._adopt_image() or guards_changed
        snap = self._snapshot
        expired = snap is not None and snap.valid_until is not None and now >= snap.valid_until
        if snap is None or self._touched or config_changed or expired or guards_changed:
            if snap is None:
                self.scanner.fill_all()  # a full build reads every record
            self._image_drift += len(self._touched)
            changed = set(self._touched)
            # a new image after a full build, when this process found the stored one behind the files (the
            # next process need not apply the same changes again), and when the files drifted far from it
            write = (
                snap is None
                or (snap is self._adopted and bool(self._touched))
                or self._image_drift >= max(IMAGE_DRIFT_FILES, self.scanner.file_count() // 20)
            )
            # the previous snapshot is the stored image (loaded, or the last one written): a patch of what changed
            base = snap if snap is not None and snap.image_key is not None else None
            snap = build_snapshot(
                self.scanner.parsed,
                self.config,
                self.safeguards,
                generation=self._generation + 1,
                now=now,
                previous=snap,
                touched=self._touched,
            )
            self._generation, self._snapshot, self._touched = snap.generation, snap, set()
            if write:
                snap.image_key = write_image(
                    self.state, snap, scanner=self.scanner, config=self.config, safeguards=self.safeguards, base=base
                )
                self._image_drift = 0
                self._image_key, self._behind = snap.image_key, set()
            elif changed:
                self._record_behind(changed)
        return snap

    def _record_behind(self, changed: set[str]) -> None:
        """Files changed and no image written (too few): the stored image learns which files it is behind on,
        so that the next new process takes it with those as its drift instead of comparing every file."""
        self._behind |= changed
        token = self.scanner.saved_token  # None: the cache is not exactly this process's files (not recorded)
        if self._image_key is not None and token is not None:
            record_behind(self.state, self._image_key, token, sorted(self._behind))

    def _adopt_image(self) -> bool:
        """Take the snapshot stored in state.sqlite as the previous one, with the files changed since as touched.
        Whether some of its records must have the safeguards applied again (a seeded state's image)."""
        image = load_image(
            self.state, self.scanner, config=self.config, generation=self._generation + 1, on_damage=self._image_damaged
        )
        if image is None:
            return False
        foreign = image.guards != guards_key(self.safeguards)
        if foreign and not self.seeded:
            return False
        scanner = self.scanner
        if image.scan_token is not None and image.scan_token == scanner.loaded_token:
            # the scan cache was the image's files when loaded, but those it is behind on: they and what the scan
            # changed since are the drift
            drift = self._touched | set(image.behind)
        else:  # compare the files with those the image was built from
            paths = image.snapshot.paths
            drift = {p for p, e in scanner.files.items() if e.sha256 is None or paths.get(p) != e.sha256}
            drift |= paths.keys() - scanner.files.keys()  # (what the scan touched is in these if it matters)
            token = scanner.saved_token
            if not drift and token is not None:  # the image is the scan cache as saved: the next process need not
                record_behind(self.state, image.key, token, [])  # compare (another writer moved the cache on)
        self._image_key, self._behind = image.key, set(drift)
        self._generation += 1
        if drift:
            self._adopted = image.snapshot
        image.snapshot.records.current = not drift
        self._snapshot, self._touched = image.snapshot, set(drift)
        return foreign and self._own_safeguards(image.snapshot, drift)

    def _own_safeguards(self, snap: Snapshot, drift: set[str]) -> bool:
        """A seeded state's image was built under another store's safeguards: this store's are those its own files
        establish. The records the image holds withdrawn or superseded, from files it holds as they are, are
        observed (the build observes those read again); those a safeguard overruled are applied again. Whether
        any was overruled."""
        records = snap.records
        path_of = getattr(records, "path_of", lambda rid: records[rid].path)  # (stored records: no record built)
        kept = []
        for rid, life in snap.lifecycle.items():
            path = path_of(rid) if life != "active" else None
            # the scanner's entry, not the stored record: building a few thousand of those builds every record
            entry = self.scanner.entry(path) if path is not None and path not in drift else None
            if entry is not None and entry.record is not None and entry.record.id == rid:
                kept.append(entry.record)
        self.safeguards.observe(kept, now_utc())
        overruled = set(snap.index.guard_issues) if snap.index is not None else set()
        self.safeguards.reapply(overruled)
        return bool(overruled)

    def _image_damaged(self) -> None:
        """A part of the stored image proved damaged: forget it; the query runs again on a full build."""
        self._snapshot = self._image_key = None
        self._touched, self._behind = set(), set()
        self._keyword_desired = self._keyword_base = self._rows_base = None
        self.safeguards.repairs.append("the stored snapshot image was damaged; the snapshot was built again")

    def _reload_config(self) -> bool:
        try:
            st = os.stat(os.path.join(self.root, CONFIG_FILE))
            stat: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            stat = None
        config_changed = getattr(self.scanner.source, "config_changed", None)  # an event proves a same-stat edit
        event = config_changed() if config_changed is not None else False  # taken now, or it waits for the next query
        if stat == self._config_stat and not event:
            return False
        first = self._config_stat is None and self._snapshot is None
        self._config_stat = stat
        before, self.config = self.config, load_config(self.root)
        return not first and self.config != before

    # -- keyword projections ----------------------------------------------------------------------
    def keyword(self, snap: Snapshot) -> KeywordIndex:
        """The keyword projections reconciled with this snapshot (only changed records re-indexed).

        A projection that fails with a database error is rebuilt from scratch once before the
        error is reported (a damaged FTS5 shadow table, a hand-edited rows table).
        """
        with self.lock:
            if not self._depth:  # outside a call (a direct use): one of its own
                return self.run(lambda: self.keyword(snap))
            index = self._keyword_now(snap)
            if index.error is not None:
                index.main.damaged = index.history.damaged = True
                index = self._keyword_now(snap)
            return index

    def _keyword_now(self, snap: Snapshot) -> KeywordIndex:
        index = self._keyword
        if index is None:
            index = self._keyword = KeywordIndex(
                FtsProjection(self.state, "keyword"), FtsProjection(self.state, "keyword_history"), -1
            )
        try:
            with collector_paused():
                if snap.image_key is not None:
                    self._trust_image(index, snap)
                adopted, cached = self._adopted, self._keyword_desired
                if (
                    adopted is not None and cached is None and snap.previous_generation == adopted.generation
                ):  # built on an image found behind the files: the image's rows, patched at the changed ids (and at
                    # those another process changed after taking the rows as that image's, which its mark names)
                    self._trust_image(index, adopted, unsure_ok=True)
                main_ids, history_ids = self._desired(snap)
                since, version = self._keyword_base, self._desired_version

                def text(rid: str) -> tuple[str, str, str] | None:
                    return self._text(snap.records[rid])

                mark, unsure = self._rows_mark(snap)
                order = clustered(snap)
                index.written = index.main.reconcile(
                    main_ids, text, version=version, since=since, mark=mark, unsure=unsure, order=order
                )
                index.written += index.history.reconcile(
                    history_ids, text, version=version, since=since, mark=mark, unsure=unsure, order=order
                )
                if mark is not None and not unsure and index.main.image_mark == mark == index.history.image_mark:
                    self._rows_base = (mark, set())  # the rows are exactly that image's records now
                    self._write_rowmaps(index, snap)
        except sqlite3.Error as exc:
            index.main.invalidate()  # reload the mirrors next time
            index.history.invalidate()
            if is_busy(exc):  # another process holds the state: run the call again, never report it
                raise Contention(str(exc)) from exc
            index.error = f"{type(exc).__name__}: {exc}"
            return index
        except BaseException:
            index.main.invalidate()
            index.history.invalidate()
            raise
        self._pending_bodies.clear()
        index.error = None
        index.generation = snap.generation
        for hook in self.after_reconcile:
            hook(snap)
        return index

    def expired_keyword(self, snap: Snapshot) -> FtsProjection | None:
        """The keyword projection of the records unavailable today only because an expiry passed, reconciled with
        this snapshot (``ExpiredKeyword``); None when there is none. Only a search at an instant asks.

        As with ``keyword``, a projection that fails with a database error is rebuilt from scratch once; a second
        failure raises ``sqlite3.Error``.
        """
        with self.lock:
            if not self._depth:  # outside a call (a direct use): one of its own
                return self.run(lambda: self.expired_keyword(snap))
            expired = self._expired
            if expired is None:
                expired = self._expired = ExpiredKeyword(self.state)

            try:
                return self._reconcile_expired(expired, snap)
            except sqlite3.Error:
                expired.projection.damaged = True  # rebuilt from scratch by the next try
            return self._reconcile_expired(expired, snap)

    def _reconcile_expired(self, expired: ExpiredKeyword, snap: Snapshot) -> FtsProjection | None:
        def text(rid: str) -> tuple[str, str, str] | None:
            return self._text(snap.records[rid])

        try:
            with collector_paused():
                return expired.reconciled(snap, text)
        except sqlite3.Error as exc:
            expired.invalidate()  # reload the mirrors next time
            if is_busy(exc):  # another process holds the state: run the call again, never report it
                raise Contention(str(exc)) from exc
            raise
        except BaseException:
            expired.invalidate()
            raise

    def _write_rowmaps(self, index: KeywordIndex, snap: Snapshot) -> None:
        """After a reconcile that wrote every row of a projection for the image just stored (a build): the rowid
        at each stored position, so that a new process's filters find their rows without reading the rows table
        (``FtsProjection.rowmap``). Written only while known for free; later writes of the rows are logged beside it."""
        built = [proj for proj in (index.main, index.history) if proj.built_whole()]
        if not built or snap.image_key is None:
            return
        found = stored_positions(self.state, snap)
        if found is not None:
            base, ids, facets_digest = found
            # the stored positions of each facet value, for the sums per value written beside the rowmap
            facets = None
            if facets_digest is not None:
                facets = (facets_digest, facet_groups(list(map(snap.facets().of, ids))))
            for proj in built:
                proj.write_rowmap(base, ids, facets)

    def _rows_mark(self, snap: Snapshot) -> tuple[str | None, Collection[str]]:
        """The mark the keyword rows get once synced to this snapshot: its image when it is one, else the image
        they were last exactly with the ids derived since (while they are few), else none."""
        if snap.image_key is not None:
            return snap.image_key, ()
        base = self._rows_base
        if base is not None and len(base[1]) <= UNSURE_IDS:
            return base[0], base[1]
        return None, ()

    def _trust_image(self, index: KeywordIndex, snap: Snapshot, *, unsure_ok: bool = False) -> None:
        """When the projections hold what this stored snapshot needs (their mark says so), take their
        rows as the desired maps instead of deriving those from every record. With ``unsure_ok``, rows
        marked with the ids they may differ at are taken too: the next patch derives those ids again."""
        cached = self._keyword_desired
        if cached is not None and cached[0] == snap.generation:
            return
        index.main.ensure()
        index.history.ensure()
        key = snap.image_key
        # the mark is proof enough: any write of the rows but a reconcile's clears it (FtsProjection._create_triggers)
        found = [proj.unsure_of(key) if key is not None else None for proj in (index.main, index.history)]
        if found[0] is not None and found[1] is not None and (unsure_ok or not (found[0] or found[1])):
            assert key is not None
            self._rows_base, self._unsure = (key, found[0] | found[1]), found[0] | found[1]
            derived: list[tuple[dict[str, str], dict[str, str]]] = []

            def derive() -> tuple[dict[str, str], dict[str, str]]:  # the maps as _desired makes them, once
                if not derived:
                    maps: tuple[dict[str, str], dict[str, str]] = ({}, {})
                    derive_desired(snap, snap.records, *maps)
                    derived.append(maps)
                return derived[0]

            main = TrustedMap(index.main, snap.image_key, lambda: derive()[0])
            history = TrustedMap(index.history, snap.image_key, lambda: derive()[1])
            self._desired_version += 1
            index.main.trust(main, self._desired_version)
            index.history.trust(history, self._desired_version)
            self._keyword_desired, self._keyword_base = (snap.generation, main, history), None

    def _desired(self, snap: Snapshot) -> tuple[Mapping[str, str], Mapping[str, str]]:
        """{id: sha256} each keyword projection must hold: available active records, available superseded ones."""
        cached = self._keyword_desired
        if cached is not None and cached[0] == snap.generation:
            return cached[1], cached[2]
        self._keyword_base = None
        main: MutableMapping[str, str]
        history: MutableMapping[str, str]
        if cached is not None and snap.changed_ids is not None and cached[0] == snap.previous_generation:
            # the previous maps patched in place, at the ids the snapshot says may have changed; a projection
            # that held the previous version compares those ids only (copying the maps cost ~5 ms at 300k)
            main, history = self._patchable(cached[1]), self._patchable(cached[2])
            ids: Iterable[str] = snap.changed_ids
            if self._unsure:  # rows taken on trust but at these ids: derived again, and compared
                ids, self._unsure = frozenset(snap.changed_ids | self._unsure), set()
            self._keyword_base = (self._desired_version, frozenset(ids))
            if self._rows_base is not None:
                self._rows_base[1].update(ids)
        else:
            main, history = {}, {}
            ids = snap.records
            self._rows_base, self._unsure = None, set()
        self._desired_version += 1
        derive_desired(snap, ids, main, history)
        self._keyword_desired = (snap.generation, main, history)
        return main, history

    def _patchable(self, desired: Mapping[str, str]) -> MutableMapping[str, str]:
        """A desired map to patch in place: a trusted one gets a ``PatchedMap`` over it (nothing of it read), and
        the projection synced to it is taken as synced to that map (the same rows)."""
        if not isinstance(desired, TrustedMap):
            assert isinstance(desired, MutableMapping)
            return desired
        out = PatchedMap(desired)
        if self._keyword is not None:
            for proj in (self._keyword.main, self._keyword.history):
                proj.retarget(desired, out)
        return out

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

    # -- check and repair ------------------------------------------------------------------------
    def check(self) -> dict[str, Any]:
        """Check state.sqlite and its projections against the Markdown; rebuild what is wrong.

        Returns ``{"ok", "state", "integrity", "found", "repaired", "unrepaired", "earlier"}``:
        ``ok`` is True when nothing was found wrong; ``integrity`` is what ``PRAGMA
        integrity_check`` said (``["ok"]`` when whole) before any repair; ``found`` lists every
        problem, ``repaired`` what was rebuilt or restored, ``unrepaired`` what needs a person
        (a safeguard loss to accept); ``earlier`` what queries repaired by themselves since
        the store was opened or last checked.
        """
        with self.lock:
            self.ensure_open()
            earlier = self._repairs_so_far()
            integrity = repair.integrity_check(self.state)
            out = Findings()
            if integrity != ["ok"]:
                out.found += [f"integrity_check: {line}" for line in integrity]
            repair.check_safeguards(self.safeguards, out)
            if not out.unrepaired:  # no query runs while safeguards are lost: the projections wait for the acceptance
                self._check_projections(out)
                repair.recheck_integrity(self.state, integrity, out)
            return repair.report(self.state_path, earlier, integrity, out)

    def _check_projections(self, out: Findings) -> None:
        """The scan cache, the keyword projections and every registered projection, against the files."""
        self.snapshot()
        repair.check_file_hashes(self.root, self.scanner, out)
        snap = self.snapshot()
        self.run(self.scanner.fill_all)  # in a call: a file changing meanwhile makes it run again
        repair.check_scan_cache(self.state, self.scanner, out)
        index = self.keyword(snap)
        desired = self._desired(snap)
        pairs = [(index.main, desired[0]), (index.history, desired[1])]
        repair.check_keyword(pairs, lambda: self._reindex(snap), out)
        self._check_expired(snap, out)
        # every kind registers itself when its module is imported: a process that ran no dated or knowl query
        # has not imported them (a new process's start stays short), and a check checks them all
        from knowtk.index import embeddings, temporal  # noqa: F401

        for name, factory in registered().items():
            out.add(kept(self, name, factory).check(snap, self.run))

    def _check_expired(self, snap: Snapshot, out: Findings) -> None:
        """The expired projection against the records it must hold, where it has tables (or a record to hold)."""
        expired = self._expired or ExpiredKeyword(self.state)
        if not expired.made() and not expired.desired(snap):
            return
        self._expired = expired

        def reindex() -> str | None:
            try:
                self.expired_keyword(snap)
            except sqlite3.Error as exc:
                return f"{type(exc).__name__}: {exc}"
            return None

        error = reindex()  # (its tables made, or brought to the snapshot, before they are verified)
        if error:
            out.found.append(f"{expired.projection.fts}: {error}")
            out.unrepaired.append(f"{expired.projection.fts} could not be rebuilt: {error}")
            return
        repair.check_keyword([(expired.projection, expired.desired(snap))], reindex, out)

    def _reindex(self, snap: Snapshot) -> str | None:
        """Reconcile the keyword projections from scratch (one was taken for damaged); the error, if any."""
        self._keyword_base = None
        return self.keyword(snap).error

    def _repairs_so_far(self) -> list[str]:
        out = list(self.safeguards.repairs)
        self.safeguards.repairs.clear()
        if self._keyword is not None:
            out += self._keyword.main.take_repairs()
            out += self._keyword.history.take_repairs()
        if self._expired is not None:
            out += self._expired.projection.take_repairs()
        for proj in self.extensions.values():
            out += proj.take_repairs()
        return out

    def ensure_open(self) -> None:
        """Refuse any use of a closed engine (its SQLite connection is gone) with a KnowtkError."""
        if self.closed:
            raise StoreUnavailable(self.root, "this store was closed; open it again with knowtk.open_store")

    def close(self) -> None:
        with self.lock:
            if self.observer is not None:
                self.observer.settle()
            self.closed = True
            close_source = getattr(self.scanner.source, "close", None)
            if close_source is not None:
                close_source()
            self.state.close()


def _parsed(snap: Snapshot) -> Snapshot:
    """``snap`` with every stored part it rests on parsed: a damaged one is found inside the call (and the call
    runs again on a full build), not later in the caller's hands."""
    base = getattr(snap.records, "base", None)  # a Layered overlay over the stored records, after edits
    stored = snap if isinstance(snap, StoredSnapshot) else base.snapshot if isinstance(base, StoredRecords) else None
    if isinstance(stored, StoredSnapshot):
        stored.parse_all()
    return snap
