"""The store as one query sees it: the rules of STORE.md §1 that need every record at once.

``build_snapshot`` takes the scanner's per-file records and decides, for the
whole store: duplicated IDs, lifecycle after the safeguards, expiry,
availability (withdrawn, expired, missing or unavailable dependencies, passed
along to everything that depends on them), supersession chains (to an active
record, or to nothing and why), the name index for exact lookup, and the
coverage issues. A snapshot is immutable; a query reads one.

A new snapshot is built from the previous one and the files that changed since,
so one edited file costs work in proportion to what it touches (its id, the
records that name it, the store's few expiring, unavailable and superseded
records), plus a few dictionary copies, not a pass over every record.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from knowtk.errors import InvalidArgument, StateError
from knowtk.model.config import StoreConfig
from knowtk.model.datevalues import DateValue, format_utc
from knowtk.model.records import Issue, Record
from knowtk.scan import FileEntry
from knowtk.state import JournalEntries, StateDB

__all__ = ["Former", "Grouped", "Layered", "Safeguards", "Snapshot", "build_snapshot", "in_scope", "normalize_name"]

# reasons a record is unavailable, most fundamental first
WITHDRAWN, EXPIRED = "withdrawn", "expired"
DEPENDENCY_MISSING, DEPENDENCY_UNAVAILABLE = "dependency_missing", "dependency_unavailable"


def normalize_name(text: str) -> str:
    """Lookup normalisation: NFKC, lowercase, trimmed, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def is_expired(expires_at: DateValue | None, now: datetime) -> bool:
    """An assertion is no longer in force after expires_at (a date: after that whole UTC day)."""
    if expires_at is None:
        return False
    return now >= expires_at.end if expires_at.date_only else now > expires_at.start


class Safeguards:
    """Withdrawal and supersession sightings: kept in state.sqlite and its journal, never rebuilt from Markdown.

    The journal (``safeguards.jsonl``, see ``knowtk.state.SafeguardJournal``) is written before the
    database commits, so it always holds at least what the tables hold. Whenever the database
    changed (``data_version``) or the journal did, both are read again and compared: entries
    only the journal holds are restored into the tables (a dropped or emptied table, a truncated
    or deleted state.sqlite), entries only the tables hold are appended to the journal (a lost
    journal). What neither can give back (a damaged journal, a journal of another state, rows
    lost while the journal was lost too) is a *loss*: every query raises ``StateError`` naming
    it until ``accept_loss()`` is called.
    """

    def __init__(self, state: StateDB, *, accept_loss: bool = False) -> None:
        self.state = state
        self.withdrawn: dict[str, int] = {}
        self.superseded: dict[str, tuple[int, str | None]] = {}
        self.loss: str | None = None
        self.repairs: list[str] = []  # what loading restored, for Store.check() and the logs
        self._reloaded: set[str] = set()
        self._version: int | None = None
        self._journal_stat: tuple[int, int, int] | None = None
        self._load()
        if self.loss is not None and accept_loss:
            self.accept_loss()

    # -- loading and verifying -------------------------------------------------------------------
    def _journal_now(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.state.journal.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def refresh(self) -> bool:
        """Load again when another process (or a hand) changed the tables or the journal.

        Returns whether some record's safeguard changed (the snapshot must be rebuilt);
        raises ``StateError`` while a loss is not accepted.
        """
        if self.state.data_version() != self._version or self._journal_now() != self._journal_stat:
            self._load()
        self.raise_loss()
        return bool(self._reloaded)

    def raise_loss(self) -> None:
        if self.loss is not None:
            raise StateError(self.state.path, f"safeguards lost: {self.loss}; {self.state.hint}")

    def _read_tables(self) -> tuple[JournalEntries, JournalEntries, list[str]]:
        conn, missing = self.state.conn, []
        w: JournalEntries = {}
        g: JournalEntries = {}
        try:
            for rid, rev, path, seen in conn.execute("SELECT id, revision, path, seen_at FROM keyword_withdrawals_v1"):
                w[rid] = (rev, None, path, seen)
        except sqlite3.OperationalError:
            missing.append("keyword_withdrawals_v1")
        try:
            rows = conn.execute("SELECT id, revision, superseded_by, path, seen_at FROM lifecycle_guards_v1")
            for rid, rev, by, path, seen in rows:
                g[rid] = (rev, by, path, seen)
        except sqlite3.OperationalError:
            missing.append("lifecycle_guards_v1")
        return w, g, missing

    def _load(self) -> None:
        state, journal = self.state, self.state.journal
        with state.reading():
            version = state.data_version()
            w, g, missing = self._read_tables()
            expected = int(state.meta("safeguards") or 0)
        self._journal_stat = self._journal_now()
        journal.read()
        plan = self._compare(w, g, missing, expected)
        if plan is not None:
            with state.transaction():  # the write lock: read again, then repair what still needs it
                version = state.data_version()
                w, g, missing = self._read_tables()
                expected = int(state.meta("safeguards") or 0)
                journal.read()
                plan = self._compare(w, g, missing, expected)
                if plan is not None:
                    self._repair(*plan)
                    w, g, _ = self._read_tables()
            self._journal_stat = self._journal_now()
        if self.loss is not None:  # what is known still binds: the tables and every readable journal line
            w = {**journal.withdrawn, **w}
            g = {
                **journal.guards,
                **{k: v for k, v in g.items() if k not in journal.guards or v[0] >= journal.guards[k][0]},
            }
        withdrawn = {rid: e[0] for rid, e in w.items()}
        superseded = {rid: (e[0], e[1]) for rid, e in g.items()}
        if self._version is not None:
            self._reloaded |= _differing(self.withdrawn, withdrawn) | _differing(self.superseded, superseded)
        self.withdrawn, self.superseded, self._version = withdrawn, superseded, version

    def _compare(
        self, w: JournalEntries, g: JournalEntries, missing: list[str], expected: int
    ) -> tuple[JournalEntries, JournalEntries, JournalEntries, JournalEntries, list[str]] | None:
        """What a repair must do: (restore to tables w, g; append to journal w, g; notes), or None.

        Sets ``self.loss`` when something is lost that neither copy can give back.
        """
        state, journal = self.state, self.state.journal
        self.loss = None
        notes: list[str] = [f"the table {t} was missing and is recreated" for t in missing]
        if journal.header is None and not journal.problem:  # no journal
            if len(w) + len(g) < expected:
                self.loss = (
                    f"state.sqlite holds {len(w)} withdrawals and {len(g)} supersession guards where {expected} "
                    f"safeguards were recorded, and the journal {journal.path} that would restore them is missing"
                )
                return None
            if w or g or not state.created:
                notes.append(f"the journal {journal.path} was missing and is written again from state.sqlite")
            return ({}, {}, w, g, notes or ["journal started"])
        if journal.problem:
            self.loss = f"the safeguard journal cannot be read: {journal.problem}"
            return None
        header = journal.header or {}
        rebound = bool(header.get("store") and state.store and header["store"] != state.store)
        if rebound and state.rebind:
            notes.append(f"the journal is rebound from the store {header['store']!r} to {state.store!r}")
        elif rebound:
            raise StateError(
                journal.path,
                f"this safeguard journal belongs to the store {header['store']!r}, not {state.store!r}; "
                "give each store its own state_dir",
            )
        if header.get("store_id") != state.store_id:
            if not state.created:
                self.loss = (
                    f"the safeguard journal {journal.path} belongs to another state "
                    f"(store_id {header.get('store_id')!r}, state.sqlite has {state.store_id!r})"
                )
                return None
            notes.append("state.sqlite was new, truncated or deleted: its identity is taken from the journal")
        restore_w = {rid: e for rid, e in journal.withdrawn.items() if rid not in w}
        restore_g = {rid: e for rid, e in journal.guards.items() if rid not in g or g[rid][0] < e[0]}
        append_w = {rid: e for rid, e in w.items() if rid not in journal.withdrawn}
        append_g = {rid: e for rid, e in g.items() if rid not in journal.guards or journal.guards[rid][0] < e[0]}
        if restore_w or restore_g:
            notes.append(
                f"restored {len(restore_w)} withdrawals and {len(restore_g)} supersession guards "
                "from the journal into state.sqlite"
            )
        if append_w or append_g:
            notes.append(f"appended {len(append_w) + len(append_g)} safeguards the journal lacked")
        total = len(w.keys() | journal.withdrawn.keys()) + len(g.keys() | journal.guards.keys())
        if total < expected:
            self.loss = (
                f"{expected} safeguards were recorded, but state.sqlite and the journal {journal.path} "
                f"together hold only {total}"
            )
            return None
        if not notes and expected == total and header.get("store_id") == state.store_id:
            return None
        return (restore_w, restore_g, append_w, append_g, notes)

    def _repair(
        self,
        restore_w: JournalEntries,
        restore_g: JournalEntries,
        append_w: JournalEntries,
        append_g: JournalEntries,
        notes: list[str],
    ) -> None:
        state, journal = self.state, self.state.journal
        conn = state.conn
        for statement in _SAFEGUARD_SCHEMA:
            conn.execute(statement)
        header = journal.header
        if header is None:  # no journal: write it whole from the tables
            journal.rewrite({"store_id": state.store_id, "store": state.store}, append_w, append_g)
        elif header.get("store") != state.store:  # rebound: the header names the new store
            w = {**journal.withdrawn, **append_w}
            g = {**journal.guards, **append_g}
            journal.rewrite({"store_id": header.get("store_id"), "store": state.store}, w, g)
            header = {"store_id": header.get("store_id")}
        else:
            if header.get("store_id") != state.store_id:
                state.store_id = str(header.get("store_id"))
                state.set_meta("store_id", state.store_id)
            journal.append(append_w, append_g)
        _write_rows(conn, restore_w, restore_g)
        self._count()
        self.repairs.extend(n for n in notes if n != "journal started")

    def _count(self) -> None:
        conn = self.state.conn
        n = conn.execute(
            "SELECT (SELECT count(*) FROM keyword_withdrawals_v1) + (SELECT count(*) FROM lifecycle_guards_v1)"
        ).fetchone()[0]
        self.state.set_meta("safeguards", str(n))

    def accept_loss(self) -> dict[str, Any]:
        """Accept what is lost: the journal is written anew from what is known; queries run again."""
        state, journal = self.state, self.state.journal
        lost = self.loss
        with state.transaction() as conn:
            for statement in _SAFEGUARD_SCHEMA:
                conn.execute(statement)
            w, g, _ = self._read_tables()
            journal.read()
            same_state = journal.header is None or journal.header.get("store_id") == state.store_id
            if same_state:  # keep every readable line of our own journal
                extra_w = {rid: e for rid, e in journal.withdrawn.items() if rid not in w}
                extra_g = {rid: e for rid, e in journal.guards.items() if rid not in g or g[rid][0] < e[0]}
                _write_rows(conn, extra_w, extra_g)
                w, g, _ = self._read_tables()
            journal.rewrite({"store_id": state.store_id, "store": state.store}, w, g)
            self._count()
        self.loss = None
        self._version = None
        self._load()
        return {"accepted": lost, "withdrawals": len(self.withdrawn), "guards": len(self.superseded)}

    # -- recording ---------------------------------------------------------------------------------
    def observe(self, records: Iterable[Record], now: datetime) -> set[str]:
        """Remember every withdrawal and every supersession (at its highest revision) seen in the files.

        Written to the journal, then to state.sqlite, before memory: a write that fails fails the
        query (``StateError``) and leaves nothing remembered that is not on disk.
        Returns the ids whose safeguards another process changed since they were last loaded:
        a snapshot built from the previous one must apply them again to records it did not touch.
        """
        self.refresh()
        reloaded, self._reloaded = self._reloaded, set()
        seen = format_utc(now)
        withdrawals: JournalEntries = {}
        guards: JournalEntries = {}
        for r in records:
            if r.status == "withdrawn" and r.id not in self.withdrawn and r.id not in withdrawals:
                withdrawals[r.id] = (r.revision, None, r.path, seen)
            elif r.status == "superseded":
                known = guards.get(r.id) or self.superseded.get(r.id)
                if known is None or r.revision > known[0]:
                    guards[r.id] = (r.revision, r.superseded_by, r.path, seen)
        if withdrawals or guards:
            try:
                with self.state.transaction() as conn:
                    version = self.state.data_version()
                    self.state.journal.append(withdrawals, guards)  # first: the journal holds at least the tables
                    _write_rows(conn, withdrawals, guards)
                    self._count()
            except (sqlite3.Error, OSError) as exc:
                self._reloaded |= reloaded
                raise StateError(
                    self.state.path,
                    f"could not record {len(withdrawals) + len(guards)} safeguards ({exc}); "
                    "the query is refused so that none is lost",
                ) from exc
            except BaseException:
                self._reloaded |= reloaded
                raise
            for rid, e in withdrawals.items():
                self.withdrawn[rid] = e[0]
            for rid, e in guards.items():
                self.superseded[rid] = (e[0], e[1])
            if version != self._version:  # another process wrote too: read everything again next time
                self._version = None
        return reloaded

    def apply(self, r: Record) -> tuple[str, str | None, Issue | None]:
        """(effective lifecycle, effective superseded_by, the issue when a stale file was overruled)."""
        if r.id in self.withdrawn and r.status != "withdrawn":
            return (
                "withdrawn",
                None,
                Issue(
                    r.path,
                    r.id,
                    "stale_withdrawn",
                    f"{r.id} was withdrawn before; this file (status {r.status}) cannot bring it back",
                ),
            )
        guard = self.superseded.get(r.id)
        if r.status == "active" and guard is not None and r.revision <= guard[0]:
            return (
                "superseded",
                guard[1],
                Issue(
                    r.path,
                    r.id,
                    "stale_revision",
                    f"{r.id} was superseded at revision {guard[0]}; this file presents revision "
                    f"{r.revision} as active, so it stays superseded (raise the revision to restate it)",
                ),
            )
        return r.status, r.superseded_by, None


_SAFEGUARD_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS keyword_withdrawals_v1 ("
    "id TEXT PRIMARY KEY, revision INTEGER NOT NULL, path TEXT NOT NULL, seen_at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS lifecycle_guards_v1 (id TEXT PRIMARY KEY, revision INTEGER NOT NULL, "
    "superseded_by TEXT, path TEXT NOT NULL, seen_at TEXT NOT NULL)",
)


def _write_rows(conn: sqlite3.Connection, withdrawn: JournalEntries, guards: JournalEntries) -> None:
    """Insert safeguards; a guard never goes back to a lower revision (another process may have seen a higher one)."""
    conn.executemany(
        "INSERT OR IGNORE INTO keyword_withdrawals_v1 (id, revision, path, seen_at) VALUES (?, ?, ?, ?)",
        [(rid, rev, path, seen) for rid, (rev, _, path, seen) in withdrawn.items()],
    )
    conn.executemany(
        "INSERT INTO lifecycle_guards_v1 (id, revision, superseded_by, path, seen_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, superseded_by = excluded.superseded_by, "
        "path = excluded.path, seen_at = excluded.seen_at WHERE excluded.revision > lifecycle_guards_v1.revision",
        [(rid, rev, by, path, seen) for rid, (rev, by, path, seen) in guards.items()],
    )


def _differing(a: Mapping[str, object], b: Mapping[str, object]) -> set[str]:
    return {key for key in a.keys() | b.keys() if a.get(key) != b.get(key)}


@dataclass(frozen=True, slots=True)
class ChainEnd:
    current: str | None  # the active record the chain reaches, or None
    reason: str  # "current", or why it ends in nothing: missing | withdrawn | unavailable | cycle | unset
    via: tuple[str, ...] = ()  # the records after the start, in order


@dataclass
class _Index:
    """What the next build needs to update a snapshot rather than redo it; part of no answer.

    The grouped maps hold sorted lists, so that everything derived from them comes out in
    the same order however the snapshot was reached (one full build or many updates).
    """

    id_at: dict[str, str]  # path -> the id its frontmatter claims (files with a valid id)
    claims: Mapping[str, list[str]]  # id -> the paths claiming it
    referrers: Mapping[str, list[str]]  # id -> the records whose references name it
    base: dict[str, tuple[str, str | None]]  # records unavailable on their own: withdrawn, or a dependency missing
    expiring: dict[str, DateValue]  # records with an expires_at
    superseded: set[str]  # records whose effective lifecycle is superseded
    folders: dict[str, tuple[int, int]]  # folder ("" = the store) -> (files under it, sum of their digests)
    file_issues: dict[str, tuple[Issue, ...]]  # a file's own issues
    dup_issues: dict[str, tuple[Issue, ...]]  # id -> one issue per file of a duplicated id
    guard_issues: dict[str, Issue]  # id -> the safeguard that overruled its file
    dep_issues: dict[str, tuple[Issue, ...]]  # id -> its missing dependencies


@dataclass
class Snapshot:
    generation: int
    scanned_at: datetime
    evaluated_at: datetime  # the instant expiry was judged at
    config: StoreConfig
    records: dict[str, Record]  # valid records with a unique id
    lifecycle: dict[str, str]  # effective lifecycle after the safeguards
    superseded_by: dict[str, str | None]
    supersedes: dict[str, list[str]]  # id -> the ids whose superseded_by is this one
    unavailable: dict[str, tuple[str, str | None]]  # id -> (reason, detail); expired counts
    unavailable_inactive: dict[str, tuple[str, str | None]]  # the same with expired assertions allowed
    expired: set[str]
    chain_ends: dict[str, ChainEnd]  # for every effectively superseded record
    names: Mapping[str, list[str]]  # normalised title or alias -> ids
    issues: list[Issue]
    excluded: dict[str, str]  # path -> reason code, for files that are not records
    paths: dict[str, str]  # path -> sha256 of every scanned file
    valid_until: datetime | None  # the next expiry: the snapshot must be re-evaluated then
    # ids whose record, lifecycle, expiry or availability may differ from generation `previous_generation`
    # (None: this is a full build); lets projections update only those
    changed_ids: frozenset[str] | None = None
    previous_generation: int | None = None
    _index: _Index | None = field(default=None, repr=False)
    image_key: str | None = None  # the snapshot image in state.sqlite this one is (knowtk.snapshot.persist), if any
    _fingerprints: dict[tuple[str, ...], str] = field(default_factory=dict, repr=False)

    def available(self, rid: str, *, include_inactive: bool = False) -> bool:
        table = self.unavailable_inactive if include_inactive else self.unavailable
        return rid in self.records and rid not in table

    def fingerprint(self, scope: tuple[str, ...]) -> str:
        """The ``snapshot`` string: changes with any edit to a file in scope (superseded records too).

        Every file adds a digest of (path, sha256) to the sums of its folders, kept up to date
        file by file, so this costs a few additions rather than a pass over the store.
        """
        cached = self._fingerprints.get(scope)
        if cached is None:
            assert self._index is not None
            roots = [f for f in scope if not any(f.startswith(g + "/") for g in scope)] if scope else [""]
            count = total = 0
            for folder in roots:
                n, s = self._index.folders.get(folder, (0, 0))
                count, total = count + n, total + s
            h = hashlib.sha256(f"{count}:{total % _DIGEST_MOD:032x}\n".encode())
            h.update(",".join(sorted(self.expired)).encode())
            cached = self._fingerprints[scope] = h.hexdigest()[:20]
        return cached

    @cached_property
    def folders(self) -> set[str]:
        assert self._index is not None
        return {folder for folder in self._index.folders if folder}

    def normalize_scope(self, scope: object) -> tuple[str, ...]:
        """A query's scope as sorted folder prefixes; () is the whole store."""
        if scope is None or scope == "" or scope == []:
            return ()
        items = [scope] if isinstance(scope, str) else scope
        if not isinstance(items, list | tuple) or not all(isinstance(s, str) for s in items):
            raise InvalidArgument("scope", "must be a folder path or a list of them", value=scope)
        out = set()
        for item in items:
            folder = item.strip().strip("/")
            if not folder or folder == ".":
                return ()
            if any(part in ("", ".", "..") for part in folder.split("/")):
                raise InvalidArgument("scope", f"{item!r} is not a folder path inside the store", value=scope)
            if folder not in self.folders:
                top = sorted(f for f in self.folders if "/" not in f)
                raise InvalidArgument("scope", f"no folder {folder!r} holds records in this store", allowed=top)
            out.add(folder)
        return tuple(sorted(out))

    def scope_issues(self, scope: tuple[str, ...]) -> list[Issue]:
        return [i for i in self.issues if i.path is None or in_scope(i.path, scope)]

    def lookup_names(self, text: str) -> list[str]:
        found: list[str] = self.names.get(normalize_name(text), [])
        return found


def in_scope(path: str, scope: tuple[str, ...]) -> bool:
    if not scope:
        return True
    return any(path.startswith(prefix + "/") for prefix in scope)


_DIGEST_MOD = 1 << 128


def _digest(path: str, sha256: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{path}\0{sha256}".encode()).digest()[:16], "big")


@dataclass(frozen=True, slots=True)
class Former:
    """What a build needs of a record whose file has changed since a stored snapshot was written
    (its content is gone): the names and references to take back."""

    id: str
    name_keys: frozenset[str]
    references: tuple[str, ...]


def _name_keys(r: Record | Former) -> set[str]:
    if isinstance(r, Former):
        return set(r.name_keys)
    return {key for key in (normalize_name(t) for t in (r.title, *r.aliases) if t) if key}


class Layered(Mapping[str, Record]):
    """The records of a snapshot built on a stored one: this build's changes over the stored records.

    Copying the stored mapping into a dict would load and validate every record; a build
    changes few of them. ``base`` is the stored records (``knowtk.snapshot.persist.StoredRecords``),
    ``top`` what changed since (set or replaced), ``gone`` the base ids removed since.
    """

    __slots__ = ("base", "gone", "top")

    def __init__(self, base: Any, top: dict[str, Record] | None = None, gone: set[str] | None = None) -> None:
        self.base, self.top, self.gone = base, top or {}, gone or set()

    def __getitem__(self, rid: str) -> Record:
        found = self.top.get(rid)
        if found is not None:
            return found
        if rid in self.gone:
            raise KeyError(rid)
        record: Record = self.base[rid]
        return record

    def __contains__(self, rid: object) -> bool:
        return rid in self.top or (rid not in self.gone and rid in self.base)

    def __iter__(self) -> Any:
        top, gone = self.top, self.gone
        yield from (rid for rid in self.base if rid not in gone and rid not in top)
        yield from top

    def __len__(self) -> int:
        return len(self.base) - len(self.gone) + sum(1 for rid in self.top if rid not in self.base)

    def values(self) -> Any:
        self.base.load_all(skip=self.top.keys() | self.gone)
        return super().values()

    def items(self) -> Any:
        self.base.load_all(skip=self.top.keys() | self.gone)
        return super().items()

    def __setitem__(self, rid: str, record: Record) -> None:
        self.top[rid] = record
        if rid in self.base:
            self.gone.discard(rid)

    def __delitem__(self, rid: str) -> None:
        if rid not in self:
            raise KeyError(rid)
        self.top.pop(rid, None)
        if rid in self.base:
            self.gone.add(rid)

    def overlay(self) -> Layered:
        """A copy for the next build (the base is shared: it never changes)."""
        return Layered(self.base, dict(self.top), set(self.gone))

    def previous(self, rid: str) -> Record | Former | None:
        """The record as the snapshot had it, or what a build needs of it when its file has changed since."""
        if rid in self.top:
            return self.top[rid]
        if rid in self.gone:
            return None
        found: Record | Former | None = self.base.previous(rid)
        return found

    def sha256_of(self, rid: str) -> str | None:
        if rid in self.top:
            return self.top[rid].sha256
        if rid in self.gone:
            return None
        found: str | None = self.base.sha256_of(rid)
        return found


class Grouped(Mapping[str, list[str]]):
    """key -> sorted list of ids: a shared map (never changed) under the keys changed since (None: removed).

    A build copies only the keys it changes, not the whole map (copying 100k lists, and the
    collector walking the copy afterwards, cost about 10 ms per build at 100k records).
    """

    __slots__ = ("base", "top")

    def __init__(self, base: Mapping[str, list[str]], top: dict[str, list[str] | None]) -> None:
        self.base, self.top = base, top

    def __getitem__(self, key: str) -> list[str]:
        top = self.top
        if key in top:
            found = top[key]
            if found is None:
                raise KeyError(key)
            return found
        return self.base[key]

    def get(self, key: str, default: Any = None) -> Any:
        top = self.top
        if key in top:
            found = top[key]
            return default if found is None else found
        return self.base.get(key, default)

    def __contains__(self, key: object) -> bool:
        top = self.top
        if key in top:
            return top[key] is not None
        return key in self.base

    def __iter__(self) -> Iterator[str]:
        top, base = self.top, self.base
        for key in base:
            if key not in top or top[key] is not None:
                yield key
        for key, found in top.items():
            if found is not None and key not in base:
                yield key

    def __len__(self) -> int:
        count, base = len(self.base), self.base
        for key, found in self.top.items():
            if found is None and key in base:
                count -= 1
            elif found is not None and key not in base:
                count += 1
        return count


class _Grouped(Grouped):
    """Builds the next key -> sorted list map from the previous one; a list is copied before its first change."""

    __slots__ = ("_own",)

    def __init__(self, source: Mapping[str, list[str]]) -> None:
        if isinstance(source, Grouped):
            super().__init__(source.base, dict(source.top))
        else:
            super().__init__(source, {})
        self._own: set[str] = set()  # keys whose list is this build's copy (appended to, sorted by finish())

    def _mine(self, key: str) -> list[str]:
        if key not in self._own:
            self.top[key] = list(self.get(key, ()))
            self._own.add(key)
        mine = self.top[key]
        assert mine is not None
        return mine

    def add(self, key: str, value: str) -> None:
        self._mine(key).append(value)  # a value is never added twice: callers remove before they add again

    def discard(self, key: str, value: str) -> None:
        if self.get(key) is not None:
            items = self._mine(key)
            if value in items:
                items.remove(value)

    def finish(self) -> Mapping[str, list[str]]:
        top, base = self.top, self.base
        for key in self._own:
            items = top[key]
            if items:
                items.sort()
            elif key in base:
                top[key] = None
            else:
                del top[key]
        self._own = set()
        if len(top) * 8 > len(base):  # too many changes to keep apart: one map again
            merged = dict(base)
            for key, found in top.items():
                if found is None:
                    merged.pop(key, None)
                else:
                    merged[key] = found
            self.base, self.top = merged, {}
            return merged
        self.top = dict(top)  # the finished map keeps its own: later changes of this build do not reach it
        return Grouped(base, top)


def build_snapshot(
    files: Mapping[str, FileEntry],
    config: StoreConfig,
    safeguards: Safeguards,
    *,
    generation: int,
    now: datetime,
    previous: Snapshot | None = None,
    touched: Iterable[str] | None = None,
) -> Snapshot:
    """The store as ``files`` hold it now.

    With the previous snapshot and the paths ``touched`` since (changed or removed), only what
    those files can affect is recomputed: their records, the ids they claim or claimed, the
    records that depend on those ids, and the few store-wide sets that stay small (expiring,
    unavailable, superseded). Without them everything is built from scratch, by the same code
    with every file touched, so the two ways cannot drift apart.
    """
    if previous is None or previous._index is None or touched is None:
        previous, touched = None, list(files)
    return _Build(previous, files, safeguards, now).run(touched, config, generation)


class _Build:
    """One update of the previous snapshot's tables, on copies: a snapshot never changes once built."""

    def __init__(
        self, prev: Snapshot | None, files: Mapping[str, FileEntry], safeguards: Safeguards, now: datetime
    ) -> None:
        ix = prev._index if prev is not None else None
        self.prev, self.files, self.safeguards, self.now = prev, files, safeguards, now
        self.records: Any = {}  # a dict, or Layered when the previous snapshot was loaded from state.sqlite
        if prev is not None:
            self.records = dict(prev.records) if isinstance(prev.records, dict) else prev.records.overlay()
        self.lifecycle: dict[str, str] = dict(prev.lifecycle) if prev else {}
        self.superseded_by: dict[str, str | None] = dict(prev.superseded_by) if prev else {}
        self.names = _Grouped(prev.names if prev else {})
        self.paths: dict[str, str] = dict(prev.paths) if prev else {}
        self.excluded: dict[str, str] = dict(prev.excluded) if prev else {}
        self.ix = _Index(
            id_at=dict(ix.id_at) if ix else {},
            claims={},  # _Grouped below
            referrers={},
            base=dict(ix.base) if ix else {},
            expiring=dict(ix.expiring) if ix else {},
            superseded=set(ix.superseded) if ix else set(),
            folders=dict(ix.folders) if ix else {},
            file_issues=dict(ix.file_issues) if ix else {},
            dup_issues=dict(ix.dup_issues) if ix else {},
            guard_issues=dict(ix.guard_issues) if ix else {},
            dep_issues=dict(ix.dep_issues) if ix else {},
        )
        self.claims = _Grouped(ix.claims if ix else {})
        self.referrers = _Grouped(ix.referrers if ix else {})

    def run(self, touched: Iterable[str], config: StoreConfig, generation: int) -> Snapshot:
        ids = self._files(touched)
        before, membership = self._identity(ids)
        self._records(before)
        self._dependencies(before, membership)
        return self._derive(before, config, generation)

    def _files(self, touched: Iterable[str]) -> set[str]:
        """Per touched path: its hash, its own issues, the id it claims. Returns the ids claimed before or now."""
        ix, files, paths, excluded = self.ix, self.files, self.paths, self.excluded
        ids: set[str] = set()
        sums: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))  # folder of a file -> change to its sums
        id_at = ix.id_at
        # a key is replaced in place, not removed and added again: a dict with removed keys in it is
        # copied key by key (4 ms per 100k) instead of as one block (1 ms), and the next build copies it
        for path in touched:
            folder = path.rpartition("/")[0]
            entry = files.get(path)
            old_id = id_at.get(path)
            if old_id is not None:
                ids.add(old_id)
                self.claims.discard(old_id, path)
                if entry is None or entry.record is None:
                    del id_at[path]
            old_sha = paths.get(path)
            if old_sha is not None:
                n, total = sums[folder]
                sums[folder] = (n - 1, total - _digest(path, old_sha))
            ix.file_issues.pop(path, None)
            excluded.pop(path, None)
            if entry is None:  # removed
                if old_sha is not None:
                    del paths[path]
                continue
            paths[path] = entry.sha256 or ""
            n, total = sums[folder]
            sums[folder] = (n + 1, total + _digest(path, paths[path]))
            if entry.issues:
                ix.file_issues[path] = tuple(entry.issues)
            if entry.record is None:
                excluded[path] = entry.issues[-1].code if entry.issues else "invalid"  # the refusal comes last
            else:
                rid = id_at[path] = entry.record.id
                self.claims.add(rid, path)
                ids.add(rid)
        ix.claims = self.claims.finish()
        # the per-folder sums behind fingerprint(): each folder and those above it
        folders = ix.folders
        for folder, (dn, dtotal) in sums.items():
            parts = folder.split("/") if folder else []
            for above in ["", *("/".join(parts[: i + 1]) for i in range(len(parts)))]:
                n, total = folders.get(above, (0, 0))
                if n + dn:
                    folders[above] = (n + dn, (total + dtotal) % _DIGEST_MOD)
                else:
                    del folders[above]
        return ids

    def _identity(self, ids: set[str]) -> tuple[dict[str, Record | Former | None], set[str]]:
        """An id claimed by one file is a record; by several, none of them is.

        Returns the records that changed (id -> the record before, or None) and the ids that
        became or stopped being a record or a duplicate (their dependents must be re-checked).
        """
        ix, files, records, excluded = self.ix, self.files, self.records, self.excluded
        before: dict[str, Record | Former | None] = {}
        membership: set[str] = set()
        for rid in sorted(ids):
            claimants = self.claims.get(rid, [])
            was_dup = rid in ix.dup_issues
            if len(claimants) > 1:
                others = ", ".join(claimants)
                message = f"id {rid!r} is used by {len(claimants)} files: {others}"
                ix.dup_issues[rid] = tuple(Issue(p, rid, "id_duplicate", message) for p in claimants)
                for p in claimants:
                    excluded[p] = "id_duplicate"
            else:
                ix.dup_issues.pop(rid, None)
                for p in claimants:
                    excluded.pop(p, None)
            old = records.get(rid) if isinstance(records, dict) else records.previous(rid)
            new = files[claimants[0]].record if len(claimants) == 1 else None
            if new is not old:
                before[rid] = old
                if new is None:
                    del records[rid]
                else:
                    records[rid] = new
            if (old is None) != (new is None) or was_dup != (len(claimants) > 1):
                membership.add(rid)
        return before, membership

    def _records(self, before: dict[str, Record | Former | None]) -> None:
        """Lifecycle after the safeguards, names, references and expiry of the records that changed."""
        ix, records, names, referrers = self.ix, self.records, self.names, self.referrers
        reloaded = self.safeguards.observe([records[rid] for rid in before if rid in records], self.now)
        for rid in reloaded:  # the same record, under safeguards another process changed
            if rid in records and rid not in before:
                before[rid] = records[rid]
        for rid, old in before.items():
            if old is not None:
                for key in _name_keys(old):
                    names.discard(key, rid)
                for ref in old.references:
                    referrers.discard(ref, rid)
            r = records.get(rid)
            if r is None:
                self.lifecycle.pop(rid, None)
                self.superseded_by.pop(rid, None)
                ix.guard_issues.pop(rid, None)
                ix.expiring.pop(rid, None)
                ix.superseded.discard(rid)
                continue
            life, by, issue = self.safeguards.apply(r)
            self.lifecycle[rid], self.superseded_by[rid] = life, by
            if issue:
                ix.guard_issues[rid] = issue
            else:
                ix.guard_issues.pop(rid, None)
            if life == "superseded":
                ix.superseded.add(rid)
            else:
                ix.superseded.discard(rid)
            if r.expires_at is not None:
                ix.expiring[rid] = r.expires_at
            else:
                ix.expiring.pop(rid, None)
            for key in _name_keys(r):
                names.add(key, rid)
            for ref in r.references:
                referrers.add(ref, rid)

    def _dependencies(self, before: dict[str, Record | Former | None], membership: set[str]) -> None:
        """Withdrawn, or a dependency missing: for the changed records and those that name a changed id."""
        ix, records = self.ix, self.records
        recheck = {rid for rid in before if rid in records}
        for rid in membership:
            recheck.update(self.referrers.get(rid, ()))
        for rid in before:
            if rid not in records:
                ix.base.pop(rid, None)
                ix.dep_issues.pop(rid, None)
        for rid in recheck:
            r = records[rid]
            entry: tuple[str, str | None] | None = (WITHDRAWN, None) if self.lifecycle[rid] == "withdrawn" else None
            problems = []
            for ref in r.references:
                if ref in records or (entry is not None and entry[0] == DEPENDENCY_MISSING):
                    continue
                why = "is used by several files" if ref in ix.dup_issues else "is not a valid record in the store"
                entry = entry or (DEPENDENCY_MISSING, ref)
                problems.append(Issue(r.path, rid, DEPENDENCY_MISSING, f"{rid} needs {ref!r}, which {why}"))
            if entry is None:
                ix.base.pop(rid, None)
            else:
                ix.base[rid] = entry
            if problems:
                ix.dep_issues[rid] = tuple(problems)
            else:
                ix.dep_issues.pop(rid, None)

    def _derive(self, before: dict[str, Record | Former | None], config: StoreConfig, generation: int) -> Snapshot:
        """What follows from the small sets (expiring, unavailable, superseded), recomputed whole."""
        ix, records, lifecycle, superseded_by, now = self.ix, self.records, self.lifecycle, self.superseded_by, self.now
        ix.referrers = self.referrers.finish()
        expired = {rid for rid, when in ix.expiring.items() if is_expired(when, now)}
        unavailable_inactive = _propagate(ix.base, ix.referrers)
        if expired:
            strict = dict(ix.base)
            for rid in sorted(expired):
                strict.setdefault(rid, (EXPIRED, None))
            unavailable = _propagate(strict, ix.referrers)
        else:
            unavailable = unavailable_inactive

        supersedes: dict[str, list[str]] = defaultdict(list)
        for rid in sorted(ix.superseded):
            by = superseded_by[rid]
            if by:
                supersedes[by].append(rid)
        chain_issues: list[Issue] = []
        kept: dict[str, ChainEnd] = {}
        prev = self.prev
        if prev is not None:
            # a chain is followed again only where something it read changed: a record on it (or its start)
            # changed, or became or stopped being unavailable; the others, and their issues, are kept
            dirty = before.keys() | (prev.unavailable.keys() ^ unavailable.keys())
            superseded = ix.superseded
            kept = {
                rid: end
                for rid, end in prev.chain_ends.items()
                if rid in superseded and rid not in dirty and dirty.isdisjoint(end.via)
            }
            chain_issues = [i for i in prev.issues if i.code in _CHAIN_CODES and i.id in kept]
        starts = sorted(ix.superseded - kept.keys()) if kept else sorted(ix.superseded)
        chain_ends = _chains(starts, records, lifecycle, superseded_by, unavailable, chain_issues, valid=kept)

        issues = []
        if config.problem:
            issues.append(Issue("knowtk.yaml", None, "config_invalid", config.problem + "; defaults used"))
        for group in (ix.file_issues, ix.dup_issues, ix.dep_issues):
            for found in group.values():
                issues.extend(found)
        issues.extend(ix.guard_issues.values())
        issues.extend(chain_issues)
        issues.sort(key=lambda i: i.path or "")  # stable: a file's issues keep their order

        upcoming = [
            (when.end if when.date_only else when.start) for rid, when in ix.expiring.items() if rid not in expired
        ]
        changed_ids = None
        prev = self.prev
        if prev is not None:
            changed_ids = frozenset(
                before.keys()
                | (prev.unavailable.keys() ^ unavailable.keys())
                | (prev.unavailable_inactive.keys() ^ unavailable_inactive.keys())
                | (prev.expired ^ expired)
            )
        return Snapshot(
            generation=generation,
            scanned_at=now,
            evaluated_at=now,
            config=config,
            records=records,
            lifecycle=lifecycle,
            superseded_by=superseded_by,
            supersedes=dict(supersedes),
            unavailable=unavailable,
            unavailable_inactive=unavailable_inactive,
            expired=expired,
            chain_ends=chain_ends,
            names=self.names.finish(),
            issues=issues,
            excluded=self.excluded,
            paths=self.paths,
            valid_until=min(upcoming) if upcoming else None,
            changed_ids=changed_ids,
            previous_generation=prev.generation if prev is not None else None,
            _index=ix,
        )


def _propagate(
    base: dict[str, tuple[str, str | None]], dependents: Mapping[str, list[str]]
) -> dict[str, tuple[str, str | None]]:
    """Everything that (transitively) depends on an unavailable record is unavailable too.

    Visited in id order, so that the dependency a record is reported under does not depend
    on how the snapshot was reached.
    """
    out = dict(base)
    stack = sorted(base, reverse=True)
    while stack:
        rid = stack.pop()
        for dependent in reversed(dependents.get(rid, ())):
            if dependent not in out:
                out[dependent] = (DEPENDENCY_UNAVAILABLE, rid)
                stack.append(dependent)
    return out


_CHAIN_CODES = frozenset({"supersession_cycle", "supersession_target_missing"})  # the issues _chains reports


def _chains(
    starts: Iterable[str],
    records: Mapping[str, Record],
    lifecycle: Mapping[str, str],
    superseded_by: Mapping[str, str | None],
    unavailable: Mapping[str, tuple[str, str | None]],
    issues: list[Issue],
    *,
    valid: Mapping[str, ChainEnd] | None = None,
) -> dict[str, ChainEnd]:
    """Follow superseded_by from every superseded record (``starts``) to an active one, or to nothing.

    ``valid`` are chain ends still valid (nothing on their chain changed): taken as they are.
    """
    ends: dict[str, ChainEnd] = dict(valid) if valid else {}
    for start in starts:
        if start in ends:
            continue
        path, position = [start], {start: 0}
        while True:  # ends with `tail`: how the chain goes on after path[-1]
            last = path[-1]
            nxt = superseded_by.get(last)
            if not nxt:
                tail = ChainEnd(None, "unset")
            elif nxt in position:  # a cycle: every record on it, and before it, resolves to nothing
                cycle = path[position[nxt] :]
                text = " -> ".join([*cycle, cycle[0]])
                for rid in cycle:
                    issues.append(
                        Issue(
                            records[rid].path,
                            rid,
                            "supersession_cycle",
                            f"supersession cycle {text} resolves to nothing",
                        )
                    )
                tail = ChainEnd(None, "cycle", (nxt,))
            elif nxt not in records:
                issues.append(
                    Issue(
                        records[last].path,
                        last,
                        "supersession_target_missing",
                        f"{last} is superseded by {nxt!r}, which is not a valid record in the store",
                    )
                )
                tail = ChainEnd(None, "missing", (nxt,))
            elif nxt in unavailable:
                tail = ChainEnd(None, "withdrawn" if lifecycle[nxt] == "withdrawn" else "unavailable", (nxt,))
            elif lifecycle[nxt] == "active":
                tail = ChainEnd(nxt, "current", (nxt,))
            elif nxt in ends:
                known = ends[nxt]
                tail = ChainEnd(known.current, known.reason, (nxt, *known.via))
            else:
                position[nxt] = len(path)
                path.append(nxt)
                continue
            break
        steps = tail.via
        for rid in reversed(path):
            ends[rid] = ChainEnd(tail.current, tail.reason, steps)
            steps = (rid, *steps)
    return ends
