"""The safeguards: every withdrawal and supersession ever seen, kept in state.sqlite and its journal.

A file cannot bring back what was withdrawn, nor restate an older revision of what was superseded:
``Safeguards`` remembers both, verifies its two copies against each other and repairs one from the other.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from knowtk.errors import SafeguardLoss, StateError
from knowtk.model.datevalues import format_utc
from knowtk.model.records import Issue, Record
from knowtk.state import JournalEntries, StateDB

__all__ = ["Safeguards"]


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

    def invalidate(self) -> None:
        """Forget what was loaded: the next ``refresh()`` reads the tables and the journal again and compares them.

        ``refresh()`` reloads only when the database's ``data_version`` or the journal's stat moved. A check
        must compare the two copies whatever those say, and a write that saw another process commit in the
        meantime cannot tell what that commit changed. The next load replaces what is known whole (it
        reports no id as changed).
        """
        self._version = None

    def raise_loss(self) -> None:
        if self.loss is not None:
            raise SafeguardLoss(self.state.path, f"safeguards lost: {self.loss}; {self.state.hint}")

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
        self.invalidate()
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
                self.invalidate()
        return reloaded

    def record(self, withdrawn: JournalEntries, guards: JournalEntries) -> None:
        """Record safeguards a mutation is about to make true (knowtk.write), before its files change.

        Journal first, then the tables, then memory, as ``observe`` does; the ids are re-applied by the next build.
        """
        self.refresh()
        with self.state.transaction() as conn:
            self.state.journal.append(withdrawn, guards)
            _write_rows(conn, withdrawn, guards)
            self._count()
        for rid, e in withdrawn.items():
            self.withdrawn.setdefault(rid, e[0])
        for rid, e in guards.items():
            known = self.superseded.get(rid)
            if known is None or e[0] > known[0]:
                self.superseded[rid] = (e[0], e[1])
        self._reloaded |= withdrawn.keys() | guards.keys()
        self.invalidate()

    def reapply(self, ids: Iterable[str]) -> None:
        """Have the next build apply the safeguards again to these records, as if another process had changed
        theirs (a snapshot image built under other safeguards, taken by a seeded state: ``Engine(seeded=True)``)."""
        self._reloaded |= set(ids)

    def entries(
        self, rid: str
    ) -> tuple[tuple[int, str | None, str, str] | None, tuple[int, str | None, str, str] | None]:
        """(the withdrawal, the supersession guard) the tables hold for ``rid``, each None when there is none."""
        conn = self.state.conn
        w = conn.execute("SELECT revision, path, seen_at FROM keyword_withdrawals_v1 WHERE id = ?", (rid,)).fetchone()
        g = conn.execute(
            "SELECT revision, superseded_by, path, seen_at FROM lifecycle_guards_v1 WHERE id = ?", (rid,)
        ).fetchone()
        return (None if w is None else (w[0], None, w[1], w[2])), (None if g is None else (g[0], g[1], g[2], g[3]))

    def lift(self, rid: str, what: tuple[str, ...], receipt: str, at: str) -> None:
        """Lift ``rid``'s withdrawal ("w") and/or supersession guard ("g"): only ``reinstate`` and the rollback of an
        unfinished mutation do, each journalled with its receipt. Journal first, then the tables."""
        self.refresh()
        with self.state.transaction() as conn:
            self.state.journal.append_lifts([(rid, kind, receipt, at) for kind in what])
            if "w" in what:
                conn.execute("DELETE FROM keyword_withdrawals_v1 WHERE id = ?", (rid,))
            if "g" in what:
                conn.execute("DELETE FROM lifecycle_guards_v1 WHERE id = ?", (rid,))
            self._count()
        if "w" in what:
            self.withdrawn.pop(rid, None)
        if "g" in what:
            self.superseded.pop(rid, None)
        self._reloaded.add(rid)
        self.invalidate()

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
