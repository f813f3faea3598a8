"""The temporal projection: structured dates and explicit associations in state.sqlite, kept in step per query.

Three tables per scope (``root`` is the whole store), with a fingerprint row in ``temporal_state_v1``:

- ``temporal_records_v1_root``: one row per projected record: kind, type, the lifecycle and
  strict availability the snapshot gave it, its ``source`` and ``source_event``;
- ``temporal_dates_v1_root``: one row per valid structured date (``Record.dates``: field, value
  as authored, date-only flag, UTC interval ``[start_us, end_us)`` in microseconds), so that
  range filters and sorting run in SQLite;
- ``temporal_links_v1_root``: the explicit associations an entity filter may follow: ``entity``,
  ``owner``, ``from``/``to`` of relationships, and ``source``.

Only ``Record.dates`` is read, so dates written in prose create nothing and an absent or invalid
date stays absent (no other field stands in for it). Every record some eligibility can show is
projected: withdrawn records and records unavailable even with expired assertions allowed are
not. A record's signature is its file hash plus the lifecycle and strict availability stored
with it, so ``reconcile`` rewrites only the records whose file changed or whose lifecycle or
expiry changed; a missing table or another fingerprint rebuilds the projection.

Beside the signatures, the mirror can keep each record's rowid in the records table (``row_ids``), so that a
query can hand SQLite one flag per record, by rowid (``rows_version`` names each state of the map). It is read on
first use, dropped wherever the signatures are loaded again, and patched where they are. A record written again
keeps its rowid; a new one takes the next after the largest. A date's rowid is its record's shifted left by
``DATE_ROW_SHIFT``, plus the field's place in ``DATE_FIELDS`` (part of the fingerprint): a range of dates finds
each row's record flag without a join.
"""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from knowtk.index.projection import Findings, Host, Runner, kept, register
from knowtk.model.datevalues import format_utc
from knowtk.model.records import DATE_FIELDS, Record
from knowtk.snapshot.model import Snapshot
from knowtk.state import Contention, StateDB, now_utc

__all__ = ["DATE_ROW_SHIFT", "NAME", "STATE_TABLE", "TemporalProjection", "from_us", "links_of", "reconciled", "to_us"]

NAME = "temporal"  # the projection's key in Engine.extensions
STATE_TABLE = "temporal_state_v1"
_SCHEMA = (
    "CREATE TABLE {records} (id TEXT PRIMARY KEY, sig TEXT NOT NULL, kind TEXT NOT NULL, type TEXT NOT NULL, "
    "lifecycle TEXT NOT NULL, strict INTEGER NOT NULL, source TEXT, source_event INTEGER NOT NULL, "
    "dates INTEGER NOT NULL, links INTEGER NOT NULL)",
    "CREATE INDEX {records}_source ON {records} (source, source_event)",
    "CREATE TABLE {dates} (id TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL, date_only INTEGER NOT NULL, "
    "start_us INTEGER NOT NULL, end_us INTEGER NOT NULL, PRIMARY KEY (id, field))",
    "CREATE INDEX {dates}_range ON {dates} (field, start_us, end_us, id)",
    "CREATE TABLE {links} (id TEXT NOT NULL, role TEXT NOT NULL, target TEXT NOT NULL, PRIMARY KEY (id, role, target))",
    "CREATE INDEX {links}_target ON {links} (target, role)",
)
DATE_ROW_SHIFT = max(len(DATE_FIELDS) - 1, 1).bit_length()  # a date's rowid: its record's << this | its field's place
_DATE_SLOT = {name: place for place, name in enumerate(DATE_FIELDS)}
_ROWIDS = f"date rowid = record rowid << {DATE_ROW_SHIFT} | place in {','.join(DATE_FIELDS)}"
FINGERPRINT = hashlib.sha256("|".join((*_SCHEMA, "v1", _ROWIDS)).encode()).hexdigest()[:16]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_US = timedelta(microseconds=1)
_ROWS_VERSIONS = itertools.count(1)  # every state of every mirror's rowids has its own number


def to_us(instant: datetime) -> int:
    """A UTC instant as integer microseconds since the epoch (what the tables store and compare)."""
    return (instant - EPOCH) // ONE_US


def from_us(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


def links_of(r: Record) -> list[tuple[str, str]]:
    """(role, target) of every explicit association; endpoints only for relationships."""
    out = [("entity", e) for e in r.entities]
    if r.owner:
        out.append(("owner", r.owner))
    if r.kind == "relationship":
        out += [(role, x) for role, x in (("from", r.from_id), ("to", r.to_id)) if x]
    if r.source:
        out.append(("source", r.source))
    return list(dict.fromkeys(out))


class TemporalProjection:
    """The temporal tables of one scope, with an in-memory mirror of ``{id: signature}`` (and of ``{id: rowid}``)."""

    def __init__(self, state: StateDB, suffix: str = "root") -> None:
        self.state = state
        self.key = f"temporal_{suffix}"
        self.records = f"temporal_records_v1_{suffix}"
        self.dates = f"temporal_dates_v1_{suffix}"
        self.links = f"temporal_links_v1_{suffix}"
        self.sigs: dict[str, str] = {}
        self._rowids: dict[str, int] | None = None  # id -> the rowid of its row in the records table (row_ids)
        self.rows_version = next(_ROWS_VERSIONS)  # changes whenever ``row_ids`` may have
        self.indexed_at: str | None = None
        self.written: tuple[str, ...] = ()  # ids the last reconcile re-projected or removed
        self._version: int | None = None
        self._desired: tuple[int, dict[str, str]] | None = None
        self._synced: int | None = None  # the snapshot generation the mirror (and tables) were last made to hold
        self.repairs: list[str] = []  # what was rebuilt and why (Store.check() reports them)

    @property
    def tables(self) -> tuple[str, str, str]:
        return (self.records, self.dates, self.links)

    def invalidate(self) -> None:
        """Forget the mirror (after a rollback): loaded again at the next use."""
        self._version, self._synced = None, None
        self._forget_rows()

    def row_ids(self) -> dict[str, int]:
        """id -> the rowid of its row in the records table, as the tables are in this query's transaction.

        Ask it after ``reconcile`` (or ``ensure``) in the same transaction: read then on first use, it is kept
        while the signatures are, patched with them, and forgotten when they are loaded again (``rows_version``
        changes each time).
        """
        if self._rowids is None:
            self._rowids = dict(self.state.conn.execute(f"SELECT id, rowid FROM {self.records}"))
            self.rows_version = next(_ROWS_VERSIONS)
        return self._rowids

    def _forget_rows(self) -> None:
        self._rowids, self.rows_version = None, next(_ROWS_VERSIONS)

    def ensure(self) -> None:
        """Create or rebuild the tables when missing or of another fingerprint; reload the mirror if needed.

        Runs in the query's transaction (or a read transaction of its own): the mirror is the
        tables exactly as this query reads them.
        """
        with self.state.reading():
            self._ensure()

    def problems(self, snap: Snapshot | None = None) -> list[str]:
        """Consistency of the three tables with each other (and with ``snap`` when given): [] when whole."""
        conn, out = self.state.conn, []
        orphans = [
            f"{table} has rows of {n} records not in {self.records}"
            for table in (self.dates, self.links)
            for (n,) in conn.execute(
                f"SELECT count(DISTINCT id) FROM {table} WHERE id NOT IN (SELECT id FROM {self.records})"
            )
            if n
        ]
        out += orphans
        for table, column in ((self.dates, "dates"), (self.links, "links")):
            (held,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
            (said,) = conn.execute(f"SELECT coalesce(sum({column}), 0) FROM {self.records}").fetchone()
            if held != said:
                out.append(f"{table} holds {held} rows, {self.records} counts {said}")
        if snap is not None:
            (misplaced,) = conn.execute(
                f"SELECT count(*) FROM {self.dates} d JOIN {self.records} r ON r.id = d.id "
                f"WHERE d.rowid >> {DATE_ROW_SHIFT} != r.rowid"
            ).fetchone()
            if misplaced:
                out.append(f"{self.dates} has {misplaced} rows not numbered after their record's")
            desired = self.desired(snap)
            sigs = dict(conn.execute(f"SELECT id, sig FROM {self.records}"))
            if sigs != desired:
                out.append(f"{self.records} differs from the snapshot at {len(sigs.keys() ^ desired.keys())} records")
            want_dates = sum(len(snap.records[rid].dates) for rid in desired)
            want_links = sum(len(links_of(snap.records[rid])) for rid in desired)
            have_dates = conn.execute(f"SELECT count(*) FROM {self.dates}").fetchone()[0]
            have_links = conn.execute(f"SELECT count(*) FROM {self.links}").fetchone()[0]
            if have_dates != want_dates:
                out.append(f"{self.dates} holds {have_dates} dates, the snapshot {want_dates}")
            if have_links != want_links:
                out.append(f"{self.links} holds {have_links} associations, the snapshot {want_links}")
        return out

    def take_repairs(self) -> list[str]:
        """What was rebuilt and why since the last call (then forgotten)."""
        out, self.repairs = self.repairs, []
        return out

    def check(self, snap: Snapshot, run: Runner) -> Findings:
        """Bring the tables in step with ``snap``, then compare them with it; rebuilt if they still disagree."""
        out = Findings()
        run(lambda: self.reconcile(snap))
        out.rebuilt(self.take_repairs())
        problems = run(lambda: self.problems(snap))
        if problems:
            out.found += problems
            self.rebuild()
            run(lambda: self.reconcile(snap))
            out.repaired.append("temporal tables rebuilt")
        return out

    def rebuild(self) -> None:
        """Drop and create the tables (the next reconcile projects every record again)."""
        with self.state.reading(), self.state.transaction() as conn:
            conn.execute(f"DELETE FROM {STATE_TABLE} WHERE projection = ?", (self.key,))
        self._version, self._synced = None, None
        self._forget_rows()

    def _ensure(self) -> None:
        conn = self.state.conn
        names = (STATE_TABLE, *self.tables)
        marks = ",".join("?" * len(names))
        found = {n for (n,) in conn.execute(f"SELECT name FROM sqlite_master WHERE name IN ({marks})", names)}
        state = None
        if STATE_TABLE in found:
            row = conn.execute(f"SELECT fingerprint, indexed_at FROM {STATE_TABLE} WHERE projection = ?", (self.key,))
            state = row.fetchone()
        current = state is not None and state[0] == FINGERPRINT and len(found) == len(names)
        if current and self.state.data_version() == self._version:
            return
        if not current:
            with self.state.transaction():
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} "
                    "(projection TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, indexed_at TEXT)"
                )
                for table in self.tables:
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
                for statement in _SCHEMA:
                    conn.execute(statement.format(records=self.records, dates=self.dates, links=self.links))
                conn.execute(
                    f"INSERT OR REPLACE INTO {STATE_TABLE} (projection, fingerprint, indexed_at) VALUES (?, ?, NULL)",
                    (self.key, FINGERPRINT),
                )
            state = (FINGERPRINT, None)
        assert state is not None
        self.indexed_at = state[1]
        self.sigs = dict(conn.execute(f"SELECT id, sig FROM {self.records}"))
        self._forget_rows()
        self._version, self._synced = self.state.data_version(), None
        problems = self.problems()
        if problems:  # rows of records the records table lost: start again
            self.repairs.append(f"temporal tables rebuilt ({'; '.join(problems)})")
            self.rebuild()
            self._ensure()

    def desired(self, snap: Snapshot) -> dict[str, str]:
        """{id: signature} of every record this snapshot lets some eligibility show.

        Built without building a record (a stored snapshot knows each record's hash), and after an
        update of the snapshot it had, patched at the ids the update may have changed.
        """
        cached = self._desired
        if cached is not None and cached[0] == snap.generation:
            return cached[1]
        records, unavailable, hidden, lifecycle = (
            snap.records,
            snap.unavailable,
            snap.unavailable_inactive,
            snap.lifecycle,
        )
        ids: Iterable[str]
        if cached is not None and snap.changed_ids is not None and cached[0] == snap.previous_generation:
            out, ids = dict(cached[1]), snap.changed_ids
        else:
            out, ids = {}, records
        sha256_of = snap.sha256_lookup()
        for rid in ids:
            sha = sha256_of(rid)
            if sha is None or rid in hidden:
                out.pop(rid, None)
            else:
                out[rid] = f"{sha}:{lifecycle[rid]}:{int(rid not in unavailable)}"
        self._desired = (snap.generation, out)
        return out

    def reconcile(self, snap: Snapshot) -> int:
        """Make the tables hold exactly this snapshot's projection; returns how many records were rewritten.

        When the mirror had to be loaded (the tables changed outside this engine), the tables are
        checked once written (no orphan rows, as many dates and associations as their records
        say), and rebuilt if they are not whole. ``check`` compares them with the snapshot itself.
        """
        loaded = self._version is None or self._version != self.state.data_version()
        written = self._reconcile(snap)
        problems = self.problems() if loaded else []
        if problems:
            self.repairs.append(f"temporal tables rebuilt ({'; '.join(problems)})")
            self.rebuild()
            written = self._reconcile(snap)
        return written

    def _changes(self, snap: Snapshot, desired: dict[str, str]) -> tuple[list[str], list[str]]:
        """(stale, fresh): ids whose rows must go, ids whose rows must be written.

        Only the ids the snapshot changed since the one the mirror holds are compared, when it
        holds the previous one; every id otherwise.
        """
        if self._synced == snap.generation:
            return [], []
        sigs = self.sigs
        if self._synced is not None and snap.changed_ids is not None and self._synced == snap.previous_generation:
            changed = snap.changed_ids
            stale = [rid for rid in changed if rid in sigs and desired.get(rid) != sigs[rid]]
            fresh = [rid for rid in changed if rid in desired and sigs.get(rid) != desired[rid]]
            return stale, fresh
        stale = [rid for rid, sig in sigs.items() if desired.get(rid) != sig]
        fresh = [rid for rid, sig in desired.items() if sigs.get(rid) != sig]
        return stale, fresh

    def _reconcile(self, snap: Snapshot) -> int:
        self.ensure()
        desired = self.desired(snap)
        stale, fresh = self._changes(snap, desired)
        self.written = tuple(sorted({*stale, *fresh}))
        if not self.written:
            self._synced = snap.generation
            return 0
        records, dates, links = [], [], []
        for rid in fresh:
            r = snap.records[rid]
            life, strict = snap.lifecycle[rid], int(rid not in snap.unavailable)
            own = links_of(r)
            records.append(
                (rid, desired[rid], r.kind, r.type, life, strict, r.source, int(r.source_event), len(r.dates), len(own))
            )
            for name, v in r.dates.items():
                dates.append((rid, name, v.text, int(v.date_only), to_us(v.start), to_us(v.end)))
            links += [(rid, role, target) for role, target in own]
        rowids = self._rowids if self._rowids is not None else {}
        with self.state.transaction() as conn:
            if self.state.data_version() != self._version:  # another process wrote since the mirror was loaded
                raise Contention(f"{self.records} changed before it could be written")
            gone = [(rid,) for rid in {*stale, *fresh}]  # fresh too: no row of theirs may be left over
            for table in self.tables:
                conn.executemany(f"DELETE FROM {table} WHERE id = ?", gone)
            # a record written again keeps its row's number (where this mirror read them); a date is numbered after it
            number = dict(zip(fresh, _numbered(conn, self.records, [rowids.get(rid) for rid in fresh]), strict=True))
            conn.executemany(
                f"INSERT INTO {self.records} (rowid, {_COLUMNS}) VALUES ({_MARKS})",
                [(number[row[0]], *row) for row in records],
            )
            conn.executemany(
                f"INSERT INTO {self.dates} (rowid, {_DATE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [((number[row[0]] << DATE_ROW_SHIFT) | _DATE_SLOT[row[1]], *row) for row in dates],
            )
            conn.executemany(f"INSERT INTO {self.links} VALUES (?, ?, ?)", links)
            indexed_at = format_utc(now_utc())
            conn.execute(f"UPDATE {STATE_TABLE} SET indexed_at = ? WHERE projection = ?", (indexed_at, self.key))
        self.indexed_at = indexed_at
        for rid in stale:
            del self.sigs[rid]
            rowids.pop(rid, None)
        self.sigs.update((rid, desired[rid]) for rid in fresh)
        rowids.update(number)  # (a map not read yet stays unread)
        self.rows_version = next(_ROWS_VERSIONS)
        self._synced = snap.generation
        return len(self.written)


_COLUMNS = "id, sig, kind, type, lifecycle, strict, source, source_event, dates, links"
_MARKS = ", ".join("?" * (1 + len(_COLUMNS.split(","))))
_DATE_COLUMNS = "id, field, value, date_only, start_us, end_us"


def _numbered(conn: sqlite3.Connection, table: str, own: list[int | None]) -> list[int]:
    """A rowid for each row to write: its own where it has one, else the next after the largest of the table's and
    theirs (a row written again was deleted first: the table's largest may be below its own)."""
    (largest,) = conn.execute(f"SELECT coalesce(max(rowid), 0) FROM {table}").fetchone()
    fresh = itertools.count(max([largest, *(n for n in own if n is not None)]) + 1)
    return [next(fresh) if n is None else n for n in own]


def reconciled(engine: Host, snap: Snapshot) -> TemporalProjection:
    """This engine's temporal projection, brought in step with ``snap`` (kept in ``engine.extensions``)."""
    proj = kept(engine, NAME, TemporalProjection)
    proj.reconcile(snap)
    return proj


register(NAME, TemporalProjection)
