"""Keyword projections stored in SQLite FTS5: the tables, their in-memory mirror, and reading them back.

Two projections live in state.sqlite, each an FTS5 table (title, aliases,
body) beside a rows table (id, sha256, token count):

- ``keyword_fts_v1_root`` / ``keyword_rows_v1_root``: the searched records
  (available and active);
- ``keyword_history_fts_v1_root`` / ``keyword_history_rows_v1_root``: the
  available superseded records, which ``lifecycle: superseded``/``all``
  search directly and which the superseded-wording rule follows to their
  current replacement.

``reconcile`` brings a projection to a desired ``{id: sha256}`` set, touching
only the rows whose hash changed. A missing table or a changed fingerprint
(tokenizer, columns, format) drops and rebuilds the projection.

The FTS5 table keeps no copy of its own: it is an external-content table over a
view of ``<fts>_text`` (title, aliases, the body deflated with zlib, and its size
in bytes). FTS5 reads a row back through the view (``knowtk_inflate``, a function
every state connection has: ``knowtk.state``) for ``highlight()`` and to delete
the row's index entries; the view's rows are exactly what was indexed, so
highlights, snippets and deletions are those of a table holding the text. The
bodies were most of the state at 100k records (docs/performance.md, "The state on disk").

A projection also knows each row's weighted count of a phrase, read back from
SQLite's own ``bm25()`` of that phrase alone (``phrase_frequencies``): that is
why SQLite's BM25 parameters (``WEIGHTS``, ``K1``, ``B``) are stated here.
Ranking over filtered subsets is ``knowtk.index.bm25``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import sqlite3
import sys
import threading
from array import array
from collections.abc import (
    Callable,
    Collection,
    Hashable,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    ValuesView,
)
from contextlib import suppress
from itertools import compress
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar, cast

from knowtk.model.datevalues import format_utc
from knowtk.model.shapes import shape
from knowtk.scan.progress import progress
from knowtk.state import Contention, StateDB, deflate, inflate, inflate_opening, is_busy, now_utc

T = TypeVar("T")

if TYPE_CHECKING:  # numpy is imported by the scoring that needs arrays, not with the projection (a CLI grep)
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "COLUMNS",
    "HIGHLIGHT_CLOSE",
    "HIGHLIGHT_OPEN",
    "K1",
    "WEIGHTS",
    "Among",
    "B",
    "FtsProjection",
    "ProjectionChanged",
    "QueryTerms",
    "rows_among",
    "tokenize_query",
]

TOKENIZER = "unicode61 remove_diacritics 2"
COLUMNS = ("title", "aliases", "body")
# bm25()'s column weights, and the constants of its formula in fts5_aux.c (per-row counts are read back through them)
WEIGHTS = {"title": 8.0, "aliases": 6.0, "body": 1.0}
K1, B = 1.2, 0.75
# text-zlib: an external-content table over <fts>_text (a state of the earlier format is rebuilt)
FINGERPRINT = hashlib.sha256(
    f"fts5|{TOKENIZER}|{','.join(COLUMNS)}|weights-in-query|text-zlib|v2".encode()
).hexdigest()[:16]
HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE = "\ue000", "\ue001"  # private-use characters mark matches in highlight()
OPENING_CHARS = 4096  # what texts() keeps of a body over its limit: enough for an opening excerpt
MEMO_ENTRIES = 16  # derived sets kept per projection (each can hold a rowid per record)
# FTS5 keeps a write's new terms in memory up to this many bytes, then writes them out as a segment that
# later merges rewrite: 1 MiB by default, with which a first build of 100k records took 36-40 s against
# 31-32 s (bench/memory.py --groups cold, docs/performance.md). A transaction ends with every term written.
PENDING_TERMS_BYTES = 16 * 2**20
PHRASE_ENTRIES = 32  # phrases whose per-row counts are kept (16 bytes per row holding the phrase)
# ``matching`` asks for this many rows or more in one pass over the expression's rows: FTS5 seeks each rowid of
# ``rowid IN (...)`` in every phrase's rows, which for a common word cost more than the pass (issue 20)
SCAN_FROM_ROWS = 200
PATCH_SHARE = 0.1  # kept counts are patched across changes of up to this share of the rows, dropped beyond


@shape(frozen=True, slots=True)
class QueryTerms:
    """A query as FTS5 sees it: tokens from SQLite's own tokenizer, and the phrases bm25() iterates."""

    tokens: tuple[str, ...]
    mode: str  # all | any | phrase

    @property
    def phrases(self) -> tuple[tuple[str, ...], ...]:
        if self.mode == "phrase":
            return (self.tokens,)
        return tuple((t,) for t in dict.fromkeys(self.tokens))

    @property
    def expression(self) -> str:
        """The MATCH expression: every token quoted, so OR/NOT/columns/* are plain words."""
        if self.mode == "phrase":
            return _quoted(self.tokens)
        joiner = " OR " if self.mode == "any" else " AND "
        return joiner.join(f'"{p[0]}"' for p in self.phrases)


def tokenize_query(conn: sqlite3.Connection, text: str) -> list[str]:
    """Word tokens exactly as the FTS5 tokenizer makes them (case and diacritics folded)."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.knowtk_query USING fts5(q, tokenize='{TOKENIZER}')")
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.knowtk_query_terms USING fts5vocab(temp, knowtk_query, instance)"
    )
    conn.execute("DELETE FROM temp.knowtk_query")
    conn.execute("INSERT INTO temp.knowtk_query (rowid, q) VALUES (1, ?)", (text,))
    tokens = [t for (t,) in conn.execute("SELECT term FROM temp.knowtk_query_terms ORDER BY offset")]
    conn.execute("DELETE FROM temp.knowtk_query")
    return tokens


class FtsProjection:
    """One FTS5 table plus its rows table, mirrored in memory for fast reconcile and scoring."""

    def __init__(self, state: StateDB, family: str, suffix: str = "root") -> None:
        self.state = state
        self.key = f"{family}_{suffix}"
        self.fts = f"{family}_fts_v1_{suffix}"
        self.rows = f"{family}_rows_v1_{suffix}"
        self.vocab = f"{self.fts}_instance"
        self.text = f"{self.fts}_text"  # rowid, title, aliases, body (zlib), size (bytes of the body)
        self.view = f"{self.fts}_view"  # the text inflated: the FTS5 table's external content
        # the rows table, read by need (``_Rows``): a new process's first query reads the few rows it shows
        self._rows_read = _Rows(self)
        self.ids: Mapping[str, int] = _Column(self._rows_read, IDS, "id", "rowid")  # id -> rowid
        self.shas: Mapping[str, str] = _Column(self._rows_read, SHAS, "id", "sha256")  # id -> sha256 of the file
        self.id_of: Mapping[int, str] = _Column(self._rows_read, ID_OF, "rowid", "id")
        self.tokens: Mapping[int, int] = _Column(self._rows_read, TOKENS, "rowid", "tokens")  # all columns
        self.indexed_at: str | None = None
        # the key of the stored snapshot image whose records the rows are exactly (knowtk.snapshot.persist), or None
        self.image_mark: str | None = None
        self._version: int | None = None
        self._synced: Mapping[str, str] | None = None  # the desired map the rows were last brought to
        self._synced_version: int | None = None  # ... at this version of it (the engine patches it in place)
        self.mirror = 0  # bumped whenever the in-memory rows above change
        self._memo_key: tuple[int, int] | None = None
        self._memo: dict[Hashable, Any] = {}
        self._memo_before: tuple[tuple[int, int], dict[Hashable, Any]] | None = None  # the memo the last one replaced
        self.damaged = False  # set when a query found the tables inconsistent: rebuilt by the next ensure()
        self._rebuilt_out_of_step = False  # the last rebuild was for a score that disagreed with the rows
        self.rebuilds = 0  # rebuilds of a damaged projection (not counting the first creation)
        self.repairs: list[str] = []  # what was rebuilt and why (Store.check() reports them)
        self._arrays: dict[Hashable, Any] = {}  # numpy views of the mirror: tokens by rowid, allowed masks
        # phrase -> (rowids holding it, their weighted counts, the mirror they are of): patched to the rows
        # as they are at the phrase's next use, from the changes below (``_kept``)
        self._phrases: dict[tuple[str, ...], tuple[NDArray[np.int64], NDArray[np.float64], int]] = {}
        # the rows reconcile deleted and inserted, (mirror after, deleted rowids, inserted rowids), since mirror
        # _changes_from: a count kept at that mirror or later is brought up to date from them alone
        self._changes: list[tuple[int, tuple[int, ...], range]] = []  # (mirror, rowids deleted, rowids inserted)
        self._changes_from = 0
        self._asked: dict[tuple[str, ...], int] = {}  # phrase -> the mirror it was last ranked natively at
        self._middle: tuple[int, int] | None = None  # (mirror, the rowid ``native_top`` splits the table at)
        self._expected: tuple[str, int, Aside[list[int]]] | None = None  # ``matches_aside``: the last one
        self._sizes_key: tuple[int, int] | None = None  # (mirror, body_limit) of the two below
        self._sizes: dict[int, int] = {}  # rowid -> bytes of its body
        self._openings: dict[int, str] = {}  # rowid -> opening of a body over the limit
        # (mirror, stored ids' digest, the rowmap or None): ``rowmap``, read once a mirror
        self._rowmap: tuple[int, str, RowMap | None] | None = None
        # (mirror, the first rowid, the ids written from it in order, rowid -> tokens) when the last reconcile
        # wrote every row
        self._built: tuple[int, int, list[str], dict[int, int]] | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        return self.state.conn

    @property
    def total_tokens(self) -> int:
        """Tokens in every row (all columns): bm25()'s corpus length."""
        return self._rows_read.total_tokens()

    def check_current(self) -> None:
        """Refuse to read rows of another version than the mirror's (another process wrote since it was loaded,
        or it was forgotten): the query runs again (``ProjectionChanged``), on the projection loaded again."""
        if self._version is None or self.state.data_version() != self._version:
            self.invalidate()
            raise ProjectionChanged(f"{self.rows} changed since the query began")

    # -- lifecycle of the tables -------------------------------------------------------------
    def invalidate(self) -> None:
        """Forget the mirror (after a rollback or a failure): it is loaded again at the next use."""
        self._version = None
        self._synced = None

    def problems(self) -> list[str]:
        """What is wrong with the tables, by cheap checks (no FTS5 'integrity-check'): [] when they look whole."""
        conn, fts = self.conn, self.fts
        names = {
            n
            for (n,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE name = ? OR name LIKE ?", (self.rows, f"{fts}%")
            )
        }
        tables = (fts, self.rows, self.text, self.view, *(f"{fts}_{s}" for s in SHADOWS))
        missing = [t for t in tables if t not in names]
        if missing:
            return [f"missing tables: {', '.join(missing)}"]
        out = []
        if conn.execute(f"SELECT count(*) FROM {fts}_config WHERE k = 'version'").fetchone()[0] != 1:
            out.append(f"{fts}_config has no version")
        if conn.execute(f"SELECT count(*) FROM {fts}_data WHERE id IN (1, 10)").fetchone()[0] != 2:
            out.append(f"{fts}_data lacks its structure records")
        rows = conn.execute(f"SELECT count(*) FROM {self.rows}").fetchone()[0]
        n = conn.execute(f"SELECT count(*) FROM {fts}_docsize").fetchone()[0]
        if n != rows:
            out.append(f"{fts}_docsize holds {n} rows, {self.rows} {rows}")
        # the text table holds every body: counting it reads them all, its first and last rows do not
        # (min and max in one SELECT scan the table: each in its own subquery is one b-tree seek)
        rows_span = f"SELECT (SELECT min(rowid) FROM {self.rows}), (SELECT max(rowid) FROM {self.rows})"
        text_span = f"SELECT (SELECT min(rowid) FROM {self.text}), (SELECT max(rowid) FROM {self.text})"
        if conn.execute(text_span).fetchone() != conn.execute(rows_span).fetchone():
            out.append(f"{self.text} does not span the rows of {self.rows}")
        if rows and conn.execute(f"SELECT 1 FROM {fts}_idx LIMIT 1").fetchone() is None:
            out.append(f"{fts}_idx is empty while the projection holds {rows} rows")
        return out

    def verify(self, desired: Mapping[str, str]) -> list[str]:
        """``problems``, then FTS5's own integrity-check and the rows against ``desired`` and the mirror."""
        out = self.problems()
        if out:
            return out
        conn, fts = self.conn, self.fts
        try:
            with self.state.transaction():
                conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            out.append(f"FTS5 integrity-check of {fts}: {exc}")
        rows = dict(conn.execute(f"SELECT id, sha256 FROM {self.rows}"))
        if rows != dict(desired):
            differing = len(set(rows.items()) ^ set(desired.items()))
            out.append(f"{self.rows} differs from the Markdown at {differing} records")
        if rows != self.shas:
            out.append(f"the in-memory mirror of {self.rows} differs from the table")
        return out

    def rebuild(self) -> None:
        """Take the tables for damaged: the next use drops and builds them again."""
        self.damaged = True
        self.invalidate()

    def take_repairs(self) -> list[str]:
        """What was rebuilt and why since the last call (then forgotten)."""
        out, self.repairs = self.repairs, []
        return out

    def ensure(self) -> None:
        """Create or rebuild the tables when missing, damaged or of another fingerprint; load the mirror.

        Runs in the query's transaction (or a read transaction of its own), so the mirror is
        exactly the tables as this query reads them.
        """
        with self.state.reading():
            self._ensure()

    def _ensure(self) -> None:
        conn = self.conn
        version = self.state.data_version()
        if self._version is not None and version == self._version and not self.damaged:
            return
        if not self.state.table_exists("keyword_state_v1"):
            with self.state.transaction():
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS keyword_state_v1 "
                    "(projection TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, indexed_at TEXT)"
                )
        row = conn.execute("SELECT fingerprint, indexed_at FROM keyword_state_v1 WHERE projection = ?", (self.key,))
        state = row.fetchone()
        try:
            problems = self.problems() if not self.damaged else ["a query found it damaged"]
        except sqlite3.DatabaseError as exc:
            problems = [f"{type(exc).__name__}: {exc}"]
        if state is None or state[0] != FINGERPRINT or problems:
            if state is not None and state[0] == FINGERPRINT:
                self.repairs.append(f"{self.fts} rebuilt ({'; '.join(problems)})")
            with self.state.transaction():
                _drop_fts(conn, self.fts)
                conn.execute(f"DROP VIEW IF EXISTS {self.view}")
                conn.execute(f"DROP TABLE IF EXISTS {self.text}")
                conn.execute(f"DROP TABLE IF EXISTS {self.rows}")
                conn.execute(
                    f"CREATE TABLE {self.text} (rowid INTEGER PRIMARY KEY, title TEXT NOT NULL, "
                    "aliases TEXT NOT NULL, body BLOB NOT NULL, size INTEGER NOT NULL)"
                )
                conn.execute(
                    f"CREATE VIEW {self.view} (rid, {', '.join(COLUMNS)}) AS "
                    f"SELECT rowid, title, aliases, knowtk_inflate(body) FROM {self.text}"
                )
                conn.execute(
                    f"CREATE VIRTUAL TABLE {self.fts} USING fts5({', '.join(COLUMNS)}, "
                    f"content='{self.view}', content_rowid='rid', tokenize='{TOKENIZER}')"
                )
                _set_pending_bytes(conn, self.fts)
                conn.execute(
                    f"CREATE TABLE {self.rows} (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
                    "sha256 TEXT NOT NULL, tokens INTEGER NOT NULL)"
                )
                conn.execute(
                    "INSERT OR REPLACE INTO keyword_state_v1 (projection, fingerprint, indexed_at) VALUES (?, ?, NULL)",
                    (self.key, FINGERPRINT),
                )
                self._create_triggers()
                self._clear_marks()
            self.rebuilds += state is not None
            self.damaged = False
            state = (FINGERPRINT, None)
        if self._triggers_missing():  # a state written before them: its mark cannot be taken on trust
            with self.state.transaction():
                self._create_triggers()
                self._clear_marks()
        conn.execute(f"DROP TABLE IF EXISTS temp.{self.vocab}")  # it may point at a table dropped since
        conn.execute(f"CREATE VIRTUAL TABLE temp.{self.vocab} USING fts5vocab(main, {self.fts}, instance)")
        self.indexed_at = state[1]
        self.image_mark = self.state.meta(self._mark_key) or None
        # nothing of the rows is read here: bumping the mirror forgets what was read of them before
        self._version = version
        self._synced = None
        self.mirror += 1
        self._rows_read.current()
        self._changes, self._changes_from = [], self.mirror  # rows loaded afresh: no count kept before is patched

    def reconcile(
        self,
        desired: Mapping[str, str],
        text_of: Callable[[str], tuple[str, str, str] | None],
        *,
        version: int = 0,
        since: tuple[int, Iterable[str]] | None = None,
        mark: str | None = None,
        unsure: Collection[str] = (),
        order: Callable[[list[str]], list[str]] | None = None,
    ) -> int:
        """Make the projection hold exactly ``desired`` ({id: sha256}); returns the rows written.

        The engine hands over the same map object, patched in place, with a ``version`` bumped at
        every patch, so an unchanged store costs an identity check here. ``since`` is (an earlier
        version, the ids at which ``desired`` may differ from it): when the projection holds
        exactly that version, only those ids are compared. ``mark`` names the stored image the rows are
        then exactly (``image_mark``), but at the ids ``unsure`` where they may differ from it (see
        ``unsure_of``). ``order``: the ids to write in the order their rows are given rowids (a build's
        rows clustered the way filters select them: ``rows_among`` reads a filter's rows as a few ranges).
        """
        self.ensure()
        synced = desired is self._synced
        if synced and version == self._synced_version:
            return 0
        if since is not None and synced and since[0] == self._synced_version:
            shas = self.shas
            ids = since[1]
            stale = [rid for rid in ids if rid in shas and desired.get(rid) != shas[rid]]
            fresh = [rid for rid in ids if rid in desired and shas.get(rid) != desired[rid]]
        else:
            stale = [rid for rid, sha in self.shas.items() if desired.get(rid) != sha]
            fresh = [rid for rid, sha in desired.items() if self.shas.get(rid) != sha]
        if order is not None and fresh:
            fresh = order(fresh)
        if not stale and not fresh:
            self._synced, self._synced_version = desired, version
            if mark is not None and _marked(mark, unsure) != self.image_mark:  # the rows are that image's
                self._set_mark(mark, unsure)
            return 0
        conn = self.conn
        inserted: list[str] = []  # the ids inserted, the first at rowid ``first``, each next at the next rowid
        complete = True
        with self.state.transaction():
            if self.state.data_version() != self._version:  # another process wrote since the mirror was loaded
                raise ProjectionChanged(f"{self.rows} changed before it could be written")
            gone = [(self.ids[rid],) for rid in stale]  # (rowid,) deleted
            # FTS5 reads what it deletes from its content (the text table, through the view): text rows go after
            conn.executemany(f"DELETE FROM {self.fts} WHERE rowid = ?", gone)
            conn.executemany(f"DELETE FROM {self.text} WHERE rowid = ?", gone)
            conn.executemany(f"DELETE FROM {self.rows} WHERE rowid = ?", gone)
            # rowids are given rather than read back one by one, so that every row goes in one executemany
            first = (conn.execute(f"SELECT max(rowid) FROM {self.rows}").fetchone()[0] or 0) + 1
            emptied = first == 1 and conn.execute(f"SELECT 1 FROM {self.rows} LIMIT 1").fetchone() is None

            texts = _TextWriter(conn, self.text)

            def rows() -> Iterator[tuple[Any, ...]]:
                nonlocal complete
                for rid in progress(fresh, total=len(fresh), desc="knowtk: indexing"):
                    text = text_of(rid)
                    if text is None:  # the file changed again since the scan: the next query indexes it
                        complete = False
                        continue
                    rowid = first + len(inserted)
                    inserted.append(rid)
                    texts.add(rowid, text)
                    yield (rowid, *text)

            conn.executemany(f"INSERT INTO {self.fts} (rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?)", rows())
            texts.flush()
            sizes = self._docsizes(first)
            # (rows made as they are written, here and for the mirror below: a cold build's million rows are
            # not held as tuples beside its records)
            conn.executemany(
                f"INSERT INTO {self.rows} (rowid, id, sha256, tokens) VALUES (?, ?, ?, ?)",
                ((rowid, rid, desired[rid], sizes[rowid]) for rowid, rid in enumerate(inserted, first)),
            )
            self.indexed_at = format_utc(now_utc())
            conn.execute("UPDATE keyword_state_v1 SET indexed_at = ? WHERE projection = ?", (self.indexed_at, self.key))
            self.image_mark = _marked(mark, unsure) if complete and mark is not None else None
            self._write_mark(unsure)  # (after the rows: their triggers clear it)
        self.mirror += 1
        # every row written here (none kept): which id has which rowid is known without reading them (``rowmap``)
        self._built = (self.mirror, first, inserted, sizes) if complete and emptied else None
        new_rows = ((rowid, rid, desired[rid], sizes[rowid]) for rowid, rid in enumerate(inserted, first))
        self._rows_read.written(list(zip(stale, (rowid for (rowid,) in gone), strict=True)), new_rows)
        self._changed([rowid for (rowid,) in gone], range(first, first + len(inserted)), sizes)
        self._synced, self._synced_version = (desired, version) if complete else (None, None)
        return len(stale) + len(inserted)

    def _changed(self, deleted: list[int], inserted: range, sizes: Mapping[int, int]) -> None:
        """Log the rows a reconcile deleted and inserted (the mirror is bumped already), and patch the
        tokens array: kept counts are patched from the log at their next use, exactly (``_kept``)."""
        # the log starts at the oldest count or memo kept: earlier changes are in all of them already
        kept = [at for _, _, at in self._phrases.values() if at >= self._changes_from]
        if self._memo_key is not None and self._memo and self._memo_key[1] >= self._changes_from:
            kept.append(self._memo_key[1])
        oldest = min(kept, default=self.mirror - 1)
        self._changes = [c for c in self._changes if c[0] > oldest]
        self._changes_from = max(self._changes_from, oldest)
        self._changes.append((self.mirror, tuple(deleted), inserted))
        if sum(len(d) + len(i) for _, d, i in self._changes) > PATCH_SHARE * max(len(self.tokens), 1):
            self._changes, self._changes_from = [], self.mirror  # many rows changed: ranking afresh costs less
        cached = self._arrays.get("tokens")
        if cached is not None and cached[0] == self.mirror - 1:
            import numpy as np

            array = cached[1]
            top = max(inserted, default=0) + 1
            array = np.concatenate([array, np.full(top - len(array), -1.0)]) if top > len(array) else array.copy()
            array[np.array(deleted, dtype=np.int64)] = -1.0
            array[np.array(inserted, dtype=np.int64)] = [float(sizes[r]) for r in inserted]
            self._arrays = {"tokens": (self.mirror, array)}

    @property
    def _mark_key(self) -> str:
        return f"{self.key}:image"

    def _create_triggers(self) -> None:
        """Triggers on the rows table. Any change clears the image mark: a reconcile sets it again after its
        writes, while any other writer (an older knowtk, a hand edit) leaves it cleared, so a mark is proof that
        the rows are exactly that image's records and the engine trusts it without reading the rows. While a
        rowmap is kept, a rowid whose row may differ from it is logged (``rowmap``): every deleted or updated
        row's, and an inserted row's at or below the rowmap's top rowid (a reconcile's new rows lie above it)."""
        conn, key = self.conn, self.key
        conn.execute(ROWMAP_SCHEMA)
        conn.execute(ROWMAP_LOG_SCHEMA)
        kept = f"EXISTS (SELECT 1 FROM {ROWMAP_TABLE} WHERE projection = '{key}')"
        below = f"new.rowid <= (SELECT top FROM {ROWMAP_TABLE} WHERE projection = '{key}')"
        log = f"INSERT OR IGNORE INTO {ROWMAP_LOG} (projection, rowid) VALUES ('{key}', {{}});"
        logged = {
            "INSERT": (below, log.format("new.rowid")),
            "DELETE": (kept, log.format("old.rowid")),
            "UPDATE": (kept, log.format("old.rowid") + " " + log.format("new.rowid")),
        }
        for op in TRIGGER_OPS:
            conn.execute(
                f"CREATE TRIGGER IF NOT EXISTS {self.fts}_mark_{op.lower()} AFTER {op} ON {self.rows} "
                f"BEGIN DELETE FROM knowtk_meta WHERE key = '{self._mark_key}'; END"
            )
            when, then = logged[op]
            conn.execute(
                f"CREATE TRIGGER IF NOT EXISTS {self.fts}_rowmap_{op.lower()} AFTER {op} ON {self.rows} "
                f"WHEN {when} BEGIN {then} END"
            )

    def _triggers_missing(self) -> bool:
        sql = "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? AND name IN ({})"
        names = [f"{self.fts}_{kind}_{op.lower()}" for kind in ("mark", "rowmap") for op in TRIGGER_OPS]
        found = self.conn.execute(sql.format(",".join("?" * len(names))), (self.rows, *names)).fetchone()[0]
        return int(found) != len(names)

    def _clear_marks(self) -> None:
        """Forget the image mark and the rowmap (in the caller's transaction): the rows are not taken on trust."""
        self.state.set_meta(self._mark_key, "")
        self.conn.execute(f"DELETE FROM {ROWMAP_TABLE} WHERE projection = ?", (self.key,))
        self.conn.execute(f"DELETE FROM {ROWMAP_LOG} WHERE projection = ?", (self.key,))

    # -- the rowid at each stored position -----------------------------------------------------
    def rowmap(self, base: str, size: int) -> RowMap | None:
        """The rowid and tokens of the row of each stored id (0: none), by the stored position of the ids whose
        digest is ``base`` (knowtk.snapshot.facets ``Positions``), as a build wrote them, with what changed in
        the rows since (``RowMap.changed``, ``RowMap.newer``); None where none was written for those ids, or
        the rows changed too much since. The triggers log every change of the rows (``_create_triggers``), so
        the rowmap and its log are the rows as they are, whoever wrote them."""
        kept = self._rowmap
        if kept is None or kept[0] != self.mirror or kept[1] != base:
            kept = self._rowmap = (self.mirror, base, self._read_rowmap(base, size))
        return kept[2] if kept[2] is not None and len(kept[2].rowids) == size else None

    def _read_rowmap(self, base: str | None, size: int | None) -> RowMap | None:
        """The rowmap (of any stored ids where ``base`` is None: its rows alone are wanted), read in the query's
        transaction; None where there is none (a state without its tables: the rows are read instead)."""
        try:
            with self.state.reading():
                self.check_current()
                return self._rowmap_row(base, size)
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise
            return None

    def _rowmap_row(self, base: str | None, size: int | None) -> RowMap | None:
        conn, key = self.conn, self.key
        sql = f"SELECT base, top, rowids FROM {ROWMAP_TABLE} WHERE projection = ?"
        row = conn.execute(sql, (key,)).fetchone()
        if row is None or (base is not None and row[0] != base):
            return None
        if not isinstance(row[1], int) or not isinstance(row[2], bytes):
            return None
        size = size if size is not None else len(row[2]) // 8
        changed = frozenset(r for (r,) in conn.execute(f"SELECT rowid FROM {ROWMAP_LOG} WHERE projection = ?", (key,)))
        if len(changed) > ROWMAP_CHANGES_MAX or not all(isinstance(r, int) for r in changed):
            return None
        # (a damaged top, or rowids past it, would make rows that are not there: a rowid past every row's is
        # no build's, since a row deleted since is logged)
        highest = conn.execute(f"SELECT max(rowid) FROM {self.rows}").fetchone()[0] or 0
        if row[1] > max(highest, max(changed, default=0)):
            return None
        sql = f"SELECT rowid, id FROM {self.rows} WHERE rowid > ? OR rowid IN (SELECT value FROM json_each(?))"
        newer = dict(conn.execute(sql, (row[1], json.dumps(sorted(changed)))).fetchall())
        if len(newer) > ROWMAP_CHANGES_MAX:
            return None
        found = _unpacked_rowmap(row[2], size, changed, newer)
        if found is not None and max(found.rowids, default=0) > row[1]:
            return None
        if found is not None and changed:  # where the logged rowids were (one pass in C)
            where = list(compress(range(size), map(changed.__contains__, found.rowids)))
            found = found._replace(changed_at=where)
        return found

    def built_whole(self) -> bool:
        """Whether the last write of the rows wrote every one (and nothing moved the mirror on since)."""
        return self._built is not None and self._built[0] == self.mirror

    def write_rowmap(self, base: str, stored: Sequence[str]) -> bool:
        """Write the rowmap of the stored ids ``stored`` (digest ``base``) when the last reconcile wrote every row
        (which rowid each id got, and its tokens, are known without reading the rows); False when it cannot be."""
        built = self._built
        if built is None or built[0] != self.mirror:
            return False
        self._built = None  # (its ids and sizes are let go: written once)
        first, inserted, sizes = built[1:]
        rowid_of = dict(zip(inserted, itertools.count(first)))
        try:
            rowids = array(ROWMAP_TYPE, map(rowid_of.get, stored, itertools.repeat(0)))
            tokens = array(ROWMAP_TYPE, map(sizes.get, rowids, itertools.repeat(0)))
        except OverflowError:
            return False
        finally:
            del rowid_of, sizes
        if sys.byteorder != "little":
            rowids.byteswap()
            tokens.byteswap()
        try:
            with self.state.transaction():
                if self.state.data_version() != self._version:
                    return False  # another process wrote since: its rows may be others
                self.conn.execute(
                    f"INSERT OR REPLACE INTO {ROWMAP_TABLE} (projection, base, top, rowids) VALUES (?, ?, ?, ?)",
                    (self.key, base, first + len(inserted) - 1, rowids.tobytes() + tokens.tobytes()),
                )
                self.conn.execute(f"DELETE FROM {ROWMAP_LOG} WHERE projection = ?", (self.key,))
        except (sqlite3.Error, Contention):
            return False
        return True

    def know_tokens_in(self, allowed: set[int], total: int) -> None:
        """``tokens_in(allowed)`` is ``total`` (summed by the caller from the rowmap), kept as it keeps its own."""
        self._per_set("tokens_in", allowed, lambda rows: total)

    def trust(self, desired: Mapping[str, str], version: int) -> None:
        """Take ``desired`` as reconciled: the caller knows the rows are exactly it (the image mark)."""
        self._synced, self._synced_version = desired, version

    def rowids_of(self, ids: Collection[str]) -> dict[str, int]:
        """id -> rowid of those of ``ids`` the projection holds (``ids`` for many at once)."""
        return self._rows_read.rowids_of(ids)

    def prefetch(self, rowids: Collection[int]) -> None:
        """Read the ids and token counts of these rows at once (``id_of``, ``tokens`` then answer them)."""
        self._rows_read.prefetch(rowids)

    def synced_to(self, desired: Mapping[str, str]) -> bool:
        """Whether the rows were last brought to ``desired`` (at some version of it), and nothing wrote them since."""
        return self._synced is desired

    def retarget(self, before: Mapping[str, str], after: Mapping[str, str]) -> None:
        """``after`` holds what ``before`` did: synced to one, the rows are synced to the other."""
        if self._synced is before:
            self._synced = after

    def _set_mark(self, mark: str, unsure: Collection[str] = ()) -> None:
        """Record that the rows are exactly the records of stored image ``mark`` (they were just compared), but
        at the ids ``unsure``."""
        try:
            with self.state.transaction():
                if self.state.data_version() != self._version:
                    return  # another process wrote since the comparison: leave the mark to it
                self.image_mark = _marked(mark, unsure)
                self._write_mark(unsure)
        except (sqlite3.Error, Contention):
            self.image_mark = None
            return

    def _write_mark(self, unsure: Collection[str]) -> None:
        """Write ``image_mark`` (and the ids it is unsure at) in the caller's transaction."""
        self.state.set_meta(self._mark_key, self.image_mark or "")
        if self.image_mark is not None and "~" in self.image_mark:
            self.state.set_meta(self._unsure_key, json.dumps(sorted(unsure)))

    @property
    def _unsure_key(self) -> str:
        return f"{self.key}:image:unsure"

    def unsure_of(self, key: str) -> set[str] | None:
        """The ids at which the rows may differ from stored image ``key``'s records (empty: they are exactly
        its records), or None when the mark names another image or none.

        A process that took the rows as an image's and then changed some (its own edits) marks them
        ``key~count~digest`` and writes the ids it changed beside: the next process then compares those ids
        only, where any other mark would make it compare every row."""
        mark = self.image_mark
        if mark == key:
            return set()
        if mark is None or not mark.startswith(key + "~"):
            return None
        try:
            with self.state.reading():
                found = json.loads(self.state.meta(self._unsure_key) or "null")
        except (sqlite3.Error, ValueError):
            return None
        if not isinstance(found, list) or not all(isinstance(rid, str) for rid in found):
            return None
        return set(found) if _marked(key, found) == mark else None

    def memo(self, generation: int) -> dict[Hashable, Any]:
        """A cache for what queries derive from these rows and one snapshot (the rows a filter allows).

        Emptied when the rows or the snapshot change, and when it grows past MEMO_ENTRIES.
        """
        key = (generation, self.mirror)
        if self._memo_key != key or len(self._memo) >= MEMO_ENTRIES:
            if self._memo_key is not None and self._memo_key != key:
                self._memo_before = (self._memo_key, self._memo)
            self._memo_key, self._memo = key, {}
        return self._memo

    def carried(self, key: Hashable, generation: int | None) -> tuple[Any, set[int], set[int]] | None:
        """An entry of the memo of snapshot ``generation`` (the one before the current memo's), with the rows
        deleted and inserted since it was made: what a caller needs to patch it instead of deriving it again.

        None when there is no such entry or the rows since are unknown (loaded afresh, or many changed).
        """
        before = self._memo_before
        if generation is None or before is None or before[0][0] != generation or key not in before[1]:
            return None
        changes = self._changes_since(before[0][1])
        return None if changes is None else (before[1][key], *changes)

    def _changes_since(self, at: int) -> tuple[set[int], set[int]] | None:
        """(rowids deleted, rowids inserted and present now) since mirror ``at``; None when the log does not
        reach back to it. A row changed is deleted and inserted again (under a new rowid, or the same one)."""
        if at < self._changes_from:
            return None
        deleted: set[int] = set()
        inserted: set[int] = set()
        for mirror, gone, new in self._changes:
            if mirror > at:
                deleted.update(gone)
                inserted.difference_update(gone)
                inserted.update(new)
        return deleted, inserted

    def _docsizes(self, first: int) -> dict[int, int]:
        """Tokens per row from ``first`` on, as FTS5 counts them: the varints of its _docsize table, summed."""
        sql = f"SELECT id, sz FROM {self.fts}_docsize WHERE id >= ?"
        return {rowid: sum(_varints(blob)) for rowid, blob in self.conn.execute(sql, (first,))}

    # -- reading ------------------------------------------------------------------------------
    def texts(self, rowids: Iterable[int], *, body_limit: int | None = None) -> dict[int, tuple[str, str, str]]:
        """Title, aliases and body of these rows; a body over ``body_limit`` bytes is cut to its opening."""
        rowids = list(rowids)
        if not rowids:
            return {}
        large = self._large_bodies(rowids, body_limit)
        small = [r for r in rowids if r not in large]
        out = {}
        if small:
            marks = ",".join("?" * len(small))
            sql = f"SELECT rowid, title, aliases, body FROM {self.text} WHERE rowid IN ({marks})"
            out = {row[0]: (row[1], row[2], inflate(row[3])) for row in self.conn.execute(sql, small)}
        for rowid, (title, aliases) in self._heads(large).items():
            out[rowid] = (title, aliases, large[rowid])
        return out

    def highlights(
        self, terms: QueryTerms, rowids: Iterable[int], *, body_limit: int | None = None
    ) -> dict[int, tuple[str, str, str | None]]:
        """Each column of these rows with every matched phrase instance wrapped in marker characters.

        A body over ``body_limit`` bytes is not highlighted (None), nor even read: highlight()
        re-tokenizes a whole column and its cost grows with every instance (minutes for a 10 MB
        body). The title and aliases of such a row are highlighted in a scratch FTS5 table.
        """
        rowids = list(rowids)
        if not rowids:
            return {}
        large = self._large_bodies(rowids, body_limit)
        small = [r for r in rowids if r not in large]
        out: dict[int, tuple[str, str, str | None]] = {}
        if small:
            marks = ",".join("?" * len(small))
            cols = ", ".join(f"highlight({self.fts}, {i}, ?, ?)" for i in range(len(COLUMNS)))
            sql = f"SELECT rowid, {cols} FROM {self.fts} WHERE {self.fts} MATCH ? AND rowid IN ({marks})"
            params = [HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE] * len(COLUMNS) + [terms.expression, *small]
            out = {row[0]: (row[1], row[2], row[3]) for row in self.conn.execute(sql, params)}
        if large:
            heads = self._heads(large)
            conn = self.conn
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.knowtk_heads "
                f"USING fts5(title, aliases, tokenize='{TOKENIZER}')"
            )
            conn.execute("DELETE FROM temp.knowtk_heads")
            conn.executemany(
                "INSERT INTO temp.knowtk_heads (rowid, title, aliases) VALUES (?, ?, ?)",
                ((rowid, *head) for rowid, head in heads.items()),
            )
            any_phrase = " OR ".join(_quoted(p) for p in terms.phrases)
            sql = (
                "SELECT rowid, highlight(knowtk_heads, 0, ?, ?), highlight(knowtk_heads, 1, ?, ?) "
                "FROM temp.knowtk_heads WHERE knowtk_heads MATCH ?"
            )
            marked = {
                row[0]: (row[1], row[2])
                for row in conn.execute(sql, [HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE] * 2 + [any_phrase])
            }
            conn.execute("DELETE FROM temp.knowtk_heads")
            for rowid, head in heads.items():
                title, aliases = marked.get(rowid, head)
                out[rowid] = (title, aliases, None)
        return out

    def _large_bodies(self, rowids: list[int], body_limit: int | None) -> dict[int, str]:
        """The rows among ``rowids`` whose body is over ``body_limit`` bytes, each with its opening.

        Sizes and openings are remembered until the rows change, so that a large body is read
        once, not at every query that finds it.
        """
        if body_limit is None:
            return {}
        if self._sizes_key != (self.mirror, body_limit):
            self._sizes_key, self._sizes, self._openings = (self.mirror, body_limit), {}, {}
        unknown = [r for r in rowids if r not in self._sizes]
        for i in range(0, len(unknown), 500):
            chunk = unknown[i : i + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT rowid, size, CASE WHEN size > ? THEN body END FROM {self.text} WHERE rowid IN ({marks})"
            for rowid, size, body in self.conn.execute(sql, [body_limit, *chunk]):
                self._sizes[rowid] = size or 0
                if body is not None:  # only the opening is inflated
                    self._openings[rowid] = inflate_opening(body, OPENING_CHARS)
        return {r: self._openings[r] for r in rowids if self._sizes.get(r, 0) > body_limit}

    def _heads(self, rowids: Iterable[int]) -> dict[int, tuple[str, str]]:
        """Title and aliases of these rows, read without the body (the text table's first columns)."""
        rowids = list(rowids)
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        sql = f"SELECT rowid, title, aliases FROM {self.text} WHERE rowid IN ({marks})"
        return {row[0]: (row[1], row[2]) for row in self.conn.execute(sql, rowids)}

    def body_matches(self, terms: QueryTerms, rowids: Iterable[int]) -> set[int]:
        """The rows among ``rowids`` where some phrase of the query stands in the body (from the index alone)."""
        rowids = list(rowids)
        if not rowids:
            return set()
        phrases = " OR ".join(_quoted(p) for p in terms.phrases)
        marks = ",".join("?" * len(rowids))
        sql = f"SELECT rowid FROM {self.fts} WHERE {self.fts} MATCH ? AND rowid IN ({marks})"
        return {r for (r,) in self.conn.execute(sql, [f"body : ({phrases})", *rowids])}

    def matching(self, terms: QueryTerms, rowids: Iterable[int]) -> set[int]:
        """The rows among ``rowids`` that match.

        When every phrase's counts are kept, they hold every row that matches it: the answer is read from them
        (FTS5 would seek each of the rows in a common word's long doclist). From ``SCAN_FROM_ROWS`` rows on,
        one pass over the expression's rows looks each up among them (``matches_among``); fewer are sought
        one by one (``rowid IN (...)``, in chunks: SQLite bounds the number of parameters).
        """
        rowids = list(rowids)
        kept = [self._kept(phrase) for phrase in terms.phrases]
        if rowids and all(k is not None for k in kept):
            import numpy as np

            asked = np.fromiter(rowids, np.int64, len(rowids))
            held = [np.isin(asked, k[0]) for k in kept if k is not None]
            hit = np.logical_or.reduce(held) if terms.mode == "any" else np.logical_and.reduce(held)
            return set(asked[hit].tolist())
        return self._matching_read(terms, rowids)(self.conn)

    def matching_aside(self, terms: QueryTerms, rowids: Iterable[int]) -> Aside[set[int]]:
        """``matching``, read beside the query (``Aside``) where the phrases' counts do not answer it here."""
        rowids = list(rowids)
        if rowids and all(self.has_counts(phrase) for phrase in terms.phrases):
            found = self.matching(terms, rowids)
            return Aside(self, lambda conn: found, beside=False)
        return Aside(self, self._matching_read(terms, rowids))

    def _matching_read(self, terms: QueryTerms, rowids: list[int]) -> Callable[[sqlite3.Connection], set[int]]:
        """``matching`` from the index, on a connection: many rows in one pass, a few sought one by one."""
        if len(rowids) >= SCAN_FROM_ROWS:  # one pass over the expression's rows, each looked up among them
            among = rows_among(set(rowids))
            return lambda conn: self.matches_among(terms, among, conn=conn)

        def sought(conn: sqlite3.Connection) -> set[int]:
            out: set[int] = set()
            for i in range(0, len(rowids), 10_000):
                chunk = rowids[i : i + 10_000]
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT rowid FROM {self.fts} WHERE {self.fts} MATCH ? AND rowid IN ({marks})"
                out.update(r for (r,) in conn.execute(sql, [terms.expression, *chunk]))
            return out

        return sought

    # -- scoring ------------------------------------------------------------------------------
    def _scored_sql(self, tail: str = "") -> str:
        """``SELECT rowid, score`` (``bm25()`` with ``WEIGHTS``) of the rows matching ``?``, then ``tail``."""
        w = WEIGHTS
        return (
            f"SELECT rowid, bm25({self.fts}, {w['title']}, {w['aliases']}, {w['body']}) AS score "
            f"FROM {self.fts} WHERE {self.fts} MATCH ?{tail}"
        )

    def native_rows(self, terms: QueryTerms) -> list[tuple[int, float]]:
        """(rowid, bm25() as SQLite gives it, i.e. minus the score) of every match."""
        sql = self._scored_sql()
        return self.conn.execute(sql, (terms.expression,)).fetchall()

    def native_top(self, terms: QueryTerms, k: int) -> list[tuple[int, float]] | None:
        """``native_rows`` of the k best scores, every row tied with the k-th included: SQLite orders every
        match and hands over the first k + ``TIES_ROWS`` (a common word's 140k rows are not made into Python
        tuples); None when the k-th best score ties past them (every row is then needed to break the tie by id).

        A large table is ordered in two halves of its rowids at once, the lower one beside the query (``Aside``:
        on the other core; each half's scores are the whole table's, so the best of the two halves' best are the
        table's best)."""
        if k < 1:
            return None
        limit = k + TIES_ROWS
        sql = self._scored_sql(" AND rowid BETWEEN ? AND ? ORDER BY score LIMIT ?")
        expression, mid = terms.expression, self._middle_rowid()
        if mid is None:
            halves = [self.conn.execute(sql, (expression, 0, MAX_ROWID, limit)).fetchall()]
        else:

            def lower(conn: sqlite3.Connection) -> list[tuple[int, float]]:
                return conn.execute(sql, (expression, 0, mid, limit)).fetchall()

            aside = Aside(self, lower)
            upper: list[tuple[int, float]] = self.conn.execute(sql, (expression, mid + 1, MAX_ROWID, limit)).fetchall()
            halves = [aside.result(), upper]
        rows = sorted(itertools.chain.from_iterable(halves), key=lambda row: row[1])
        if len(rows) <= k:
            return rows
        kth = rows[k - 1][1]
        if any(len(half) == limit and half[-1][1] <= kth for half in halves):
            return None  # a half's rows past those handed over may tie with the k-th
        end = next((i for i in range(k, len(rows)) if rows[i][1] != kth), None)
        return rows if end is None else rows[:end]

    def _middle_rowid(self) -> int | None:
        """The rowid splitting the table in two halves for ``native_top`` (None: too small to be worth it)."""
        n = len(self.tokens)
        if n < SPLIT_FROM_ROWS:
            return None
        if self._middle is None or self._middle[0] != self.mirror:
            top = self.conn.execute(f"SELECT max(rowid) FROM {self.rows}").fetchone()[0] or 0
            self._middle = (self.mirror, top // 2)
        return self._middle[1]

    def top_among(
        self, terms: QueryTerms, among: Among, limit: int, *, conn: sqlite3.Connection | None = None
    ) -> list[tuple[int, float]]:
        """``native_rows`` of the rows among some (``rows_among``) that match, the ``limit`` best by ``bm25()``
        (over the whole table's statistics) first: SQLite scores every one and hands over those alone."""
        sql = self._scored_sql(f" AND {among.clause} ORDER BY score LIMIT ?")
        params = (terms.expression, *among.params, limit)
        return (conn or self.conn).execute(sql, params).fetchall()

    def counts_of(self, rows: list[tuple[int, float]], *, hits: int) -> dict[int, float]:
        """rowid -> weighted count of a phrase, solved from ``bm25()`` of that phrase alone for these rows
        (``hits``: the rows holding it in the whole table), as ``counts_among`` solves them."""
        out = self._plain_counts(rows, hits=hits)
        if out is None:
            raise self._out_of_step()
        return out

    def match_count(self, terms: QueryTerms, among: Among | None = None) -> int:
        """How many rows match (no score computed); ``among``: how many of some rows (``rows_among``)."""
        expected = self._expected
        if among is None and expected is not None and expected[:2] == (terms.expression, self.mirror):
            return len(expected[2].result())  # (every matching row, read beside: ``matches_aside``)
        return self._count(terms.expression, among)

    def matches_aside(self, terms: QueryTerms) -> Aside[list[int]]:
        """Every row the query's expression matches, read beside the query (``Aside``); this table's
        ``match_count`` of the expression is then its length, until the rows change."""
        expression = terms.expression
        aside = Aside(self, lambda conn: self.rowids_matching(expression, conn=conn))
        self._expected = (expression, self.mirror, aside)
        return aside

    def _count(self, expression: str, among: Among | None, *, conn: sqlite3.Connection | None = None) -> int:
        """How many rows (of the whole table, or among some) an expression matches; a few ranges of rows are
        counted one by one (``Among.runs``: no row outside them read)."""
        conn = conn or self.conn
        sql = f"SELECT count(*) FROM {self.fts} WHERE {self.fts} MATCH ?"
        if among is None:
            return int(conn.execute(sql, (expression,)).fetchone()[0])
        if among.runs is not None:
            found = sum(
                int(conn.execute(f"{sql} AND rowid BETWEEN ? AND ?", (expression, *run)).fetchone()[0])
                for run in among.runs
            )
            if among.extra:  # (within their own range: edited records' rows lie together, after the others)
                rest = f"{sql} AND {_EXTRA_CLAUSE.format(marks=','.join('?' * len(among.extra)))}"
                found += int(conn.execute(rest, (expression, *_extra_params(among.extra))).fetchone()[0])
            return found
        return int(conn.execute(f"{sql} AND {among.clause}", (expression, *among.params)).fetchone()[0])

    def native_arrays(self, terms: QueryTerms) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """``native_rows`` as arrays: (minus the score, rowid)."""
        return columns(self.native_rows(terms))

    def term_frequencies(self, term: str, allowed: set[int] | None) -> dict[int, float]:
        """rowid -> weighted count of the term's instances (title 8, aliases 6, body 1)."""
        return self.phrase_frequencies((term,), allowed)

    def phrase_frequencies(self, phrase: tuple[str, ...], allowed: set[int] | None) -> dict[int, float]:
        """rowid -> weighted count w of the phrase's instances (title 8, aliases 6, body 1), for the allowed rows.

        Read back from SQLite's own ``bm25()`` of the phrase alone over the whole table, which for
        a matching row is ``idf * w * (k1 + 1) / (w + K)`` with ``K = k1 * (1 - b + b * D / avgdl)``:
        w is an integer and the score strictly increases with it, so solving for w and rounding
        gives it exactly. Phrase matching stays SQLite's, and a common word costs one pass over
        the rows that hold it instead of reading each of its (perhaps a million) instances.
        """
        rowids, counts = self.phrase_arrays(phrase, allowed)
        return dict(zip(rowids.tolist(), counts.tolist(), strict=True))

    def phrase_arrays(
        self, phrase: tuple[str, ...], allowed: set[int] | None
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """``phrase_frequencies`` as (rowids, weighted counts) arrays, evaluated with numpy (same operations)."""
        rowids, counts = self._phrase_counts(phrase)
        if allowed is not None and len(rowids):
            keep = self.allowed_mask(allowed)[rowids]
            rowids, counts = rowids[keep], counts[keep]
        return rowids, counts

    def asked_before(self, phrase: tuple[str, ...]) -> bool:
        """Whether the phrase was asked before over the rows as they are; records that it is asked now.

        ``bm25`` keeps a common phrase's counts from its second query on: a process that asks once
        (a CLI call) does not pay for arrays it will never use again.
        """
        before = self.was_asked(phrase)
        if len(self._asked) >= 4 * PHRASE_ENTRIES:
            self._asked.clear()
        self._asked[phrase] = self.mirror
        return before

    def was_asked(self, phrase: tuple[str, ...]) -> bool:
        """``asked_before`` without recording the ask."""
        return self._asked.get(phrase) == self.mirror

    def has_counts(self, phrase: tuple[str, ...]) -> bool:
        """True when the phrase's per-row counts are kept for the rows as they are (patched to them if need be)."""
        return self._kept(phrase) is not None

    def _kept(self, phrase: tuple[str, ...]) -> tuple[NDArray[np.int64], NDArray[np.float64]] | None:
        """The phrase's kept counts, brought up to the rows as they are; None when not kept or not patchable.

        A count belongs to one row's text, so across a reconcile only the deleted rows drop out and the
        inserted ones (a changed record is deleted and inserted again) are counted, by ``bm25()`` of the
        phrase over just those rows. The corpus figures (rows, tokens) are the mirror's, as for any query.
        """
        entry = self._phrases.get(phrase)
        if entry is None:
            return None
        rowids, counts, at = entry
        if at == self.mirror:
            return rowids, counts
        changes = self._changes_since(at)
        patched = None if changes is None else self._patched(phrase, rowids, counts, *changes)
        if patched is None:
            del self._phrases[phrase]
            return None
        self._phrases[phrase] = (*patched, self.mirror)
        return patched

    def _patched(
        self,
        phrase: tuple[str, ...],
        rowids: NDArray[np.int64],
        counts: NDArray[np.float64],
        deleted: set[int],
        inserted: set[int],
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]] | None:
        """Kept counts made those of the rows as they are: ``deleted`` rows dropped, ``inserted`` ones counted."""
        import numpy as np

        if deleted and len(rowids):
            gone = np.fromiter(deleted, np.int64, len(deleted))
            if bool((rowids[1:] > rowids[:-1]).all()):  # in rowid order, as FTS5 gives them: found by bisection
                at = np.minimum(np.searchsorted(rowids, gone), len(rowids) - 1)
                at = at[rowids[at] == gone]
                rowids, counts = np.delete(rowids, at), np.delete(counts, at)
            else:
                keep = ~np.isin(rowids, gone)
                rowids, counts = rowids[keep], counts[keep]
        if not inserted:
            return rowids, counts
        # every row at or above the least inserted rowid is an inserted one (rowids are given from max + 1 on)
        sql = self._scored_sql(" AND rowid >= ?")
        found = self.conn.execute(sql, (_quoted(phrase), min(inserted))).fetchall()
        if not found:
            return rowids, counts
        scores, new_rowids = columns(found)
        if not inserted.issuperset(new_rowids.tolist()):
            return None  # the rows are not what the log says: rank afresh
        new_counts = self._counts(scores, new_rowids, hits=len(rowids) + len(new_rowids))
        if new_counts is None:
            return None
        # still in rowid order: a row kept since ``at`` has a lower rowid than any inserted after it
        return np.concatenate([rowids, new_rowids]), np.concatenate([counts, new_counts])

    def _phrase_counts(self, phrase: tuple[str, ...]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Every row holding the phrase and its weighted count, kept until the rows change (``mirror``).

        A count belongs to a row's text alone, so it stays exact for as long as the rows do; a common
        word asked again (another filter, another query that holds it) costs no pass over its rows.
        """
        kept = self._kept(phrase)
        if kept is not None:
            return kept
        sql = self._scored_sql()
        scores, rowids = columns(self.conn.execute(sql, (_quoted(phrase),)).fetchall())
        counts = self._counts(scores, rowids)
        if counts is None:
            raise self._out_of_step()
        self.keep_counts(phrase, rowids, counts)
        return rowids, counts

    def plain_counts(self, phrase: tuple[str, ...], limit: int) -> dict[int, float] | None:
        """rowid -> weighted count of the phrase, in plain Python, when fewer than ``limit`` rows hold it.

        None when its counts are kept already or ``limit`` rows or more hold it (those are then kept
        as arrays, as ``phrase_arrays`` would keep them). The same operations, in the same order, as
        ``_counts`` (Python floats are the doubles numpy computes elementwise).
        """
        if self.has_counts(phrase):
            return None
        sql = self._scored_sql()
        rows = self.conn.execute(sql, (_quoted(phrase),)).fetchall()
        if len(rows) >= limit:
            scores, rowids = columns(rows)
            counts = self._counts(scores, rowids)
            if counts is None:
                raise self._out_of_step()
            self.keep_counts(phrase, rowids, counts)
            return None
        out = self._plain_counts(rows)
        if out is None:
            raise self._out_of_step()
        return out

    def hit_count(self, phrase: tuple[str, ...], among: Among | None = None, *, whole: int | None = None) -> int:
        """How many rows hold the phrase: in the whole table (``among`` None, the n_hit of ``bm25()``'s IDF),
        or among some rows (``rows_among``), counted by SQLite without scoring them; ``whole``: how many hold
        it in the whole table, when known (then the rows holding it may be looked up here instead)."""
        expression = _quoted(phrase)
        if among is not None and among.looked_up_here(whole):
            return sum(map(cast(Collection[int], among.rows).__contains__, self.rowids_matching(expression)))
        return self._count(expression, among)

    def matches_among(
        self,
        terms: QueryTerms,
        among: Among,
        *,
        at_most: int | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> set[int]:
        """The rows among some (``rows_among``) that match the query's whole expression; ``at_most``: how many
        rows of the whole table it matches at most, when known (as ``hit_count``'s ``whole``)."""
        if among.looked_up_here(at_most):
            rows = cast(Collection[int], among.rows)
            return set(filter(rows.__contains__, self.rowids_matching(terms.expression, conn=conn)))
        conn = conn or self.conn
        sql = f"SELECT rowid FROM {self.fts} WHERE {self.fts} MATCH ? AND "
        if among.runs is not None:  # (each range read alone, as ``_count`` reads them)
            found = {
                r
                for run in among.runs
                for (r,) in conn.execute(sql + "rowid BETWEEN ? AND ?", (terms.expression, *run))
            }
            if among.extra:
                rest = sql + _EXTRA_CLAUSE.format(marks=",".join("?" * len(among.extra)))
                found.update(r for (r,) in conn.execute(rest, (terms.expression, *_extra_params(among.extra))))
            return found
        return {r for (r,) in conn.execute(sql + among.clause, (terms.expression, *among.params))}

    def counts_left(
        self, rows: list[tuple[int, float]], known: list[tuple[float, dict[int, float]]], idf: float
    ) -> dict[int, float] | None:
        """rowid -> weighted count of one phrase of a query, where the counts of the others are ``known``
        ([(IDF over the whole table, rowid -> count)]) and ``idf`` is its own, solved from ``bm25()`` of the
        whole query for these rows (``rows``): its score less the others' terms is this phrase's (to the
        rounding of a sum in another order, far below the 1e-3 a count must come within). None where a row
        does not solve to a whole count (then the phrase is counted as the others are)."""
        n_rows = len(self.tokens)
        if not n_rows or not self.total_tokens:
            return None
        avgdl = float(self.total_tokens) / float(n_rows)
        tokens, k1, b = self.tokens, K1, B
        out: dict[int, float] = {}
        for rowid, score in rows:
            size = tokens.get(rowid)
            if size is None:
                return None
            norm = k1 * (1 - b + b * float(size) / avgdl)
            others = 0.0
            for weight, per_row in known:
                f = per_row.get(rowid, 0.0)
                others += weight * ((f * (k1 + 1.0)) / (f + norm))
            s = (-score - others) / idf
            f = norm * s / (k1 + 1.0 - s)
            count = float(round(f))
            if count < 0 or abs(f - count) > 1e-3:
                return None
            if count:
                out[rowid] = count
        return out

    def rowids_matching(self, expression: str, *, conn: sqlite3.Connection | None = None) -> list[int]:
        """Every rowid an expression matches, read as one JSON array (a tuple a row cost twice as much)."""
        sql = f"SELECT json_group_array(rowid) FROM {self.fts} WHERE {self.fts} MATCH ?"
        found = json.loads((conn or self.conn).execute(sql, (expression,)).fetchone()[0])
        if not isinstance(found, list):
            raise sqlite3.DatabaseError(f"{self.fts}: json_group_array gave {type(found).__name__}")
        return found

    def counts_among(self, phrase: tuple[str, ...], among: Among, *, hits: int) -> dict[int, float]:
        """rowid -> weighted count of the phrase, for the rows among some (``rows_among``) that hold it.

        ``bm25()`` is computed only for the rows that pass the WHERE, and its value for a row is the one the
        whole table's query gives (FTS5 takes N, avgdl and the phrase's row count from the whole table), so
        the counts are solved as ``plain_counts`` solves them, with ``hits`` (``hit_count(phrase)``, the rows
        holding it in the whole table) as the IDF's n_hit.
        """
        return self.counts_of(self.scored_among(phrase, among, hits=hits), hits=hits)

    def scored_among(
        self, phrase: tuple[str, ...], among: Among, *, hits: int, conn: sqlite3.Connection | None = None
    ) -> list[tuple[int, float]]:
        """``bm25()`` of the phrase alone for the rows among some that hold it, which ``counts_among`` solves."""
        conn = conn or self.conn
        expression = _quoted(phrase)
        if among.looked_up_here(hits):  # SQLite scores only the rows holding it, found here (``Among``)
            rows_in = cast(Collection[int], among.rows)
            among = rows_among(list(filter(rows_in.__contains__, self.rowids_matching(expression, conn=conn))))
        sql = self._scored_sql(f" AND {among.clause}")
        rows: list[tuple[int, float]] = conn.execute(sql, (expression, *among.params)).fetchall()
        return rows

    def _plain_counts(self, rows: list[tuple[int, float]], *, hits: int | None = None) -> dict[int, float] | None:
        """rowid -> count solved from ``bm25()`` of one phrase; ``hits``: the rows holding it in the whole
        table when ``rows`` are only some of them (else all of them). None if out of step."""
        if not rows:
            return {}
        n_rows = len(self.tokens)
        if not n_rows or not self.total_tokens:
            return None
        avgdl = float(self.total_tokens) / float(n_rows)
        n_hit = len(rows) if hits is None else hits
        idf = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
        idf = idf if idf > 0.0 else 1e-6
        out: dict[int, float] = {}
        tokens, k1, b = self.tokens, K1, B  # locals: the same values, looked up faster
        for rowid, score in rows:
            size = tokens.get(rowid)
            if size is None:  # a row the mirror does not hold
                return None
            s = -score / idf
            f = k1 * (1 - b + b * float(size) / avgdl) * s / (k1 + 1.0 - s)
            count = float(round(f))
            if count < 1 or abs(f - count) > 1e-3:
                return None  # the table changed under the mirror (another process)
            out[rowid] = count
        return out

    def counts_from_scores(
        self, phrase: tuple[str, ...], scores: NDArray[np.float64], rowids: NDArray[np.int64]
    ) -> None:
        """Keep the phrase's counts read back from ``bm25()`` of the phrase alone (rows a query already fetched)."""
        counts = self._counts(scores, rowids)
        if counts is not None:  # rows out of step with the mirror are simply not kept
            self.keep_counts(phrase, rowids, counts)

    def keep_counts(self, phrase: tuple[str, ...], rowids: NDArray[np.int64], counts: NDArray[np.float64]) -> None:
        """Keep the phrase's counts of the rows as they are (``mirror``): patched across later changes (``_kept``)."""
        self._phrases.pop(phrase, None)
        if len(self._phrases) >= PHRASE_ENTRIES:
            del self._phrases[next(iter(self._phrases))]  # the oldest
        self._phrases[phrase] = (rowids, counts, self.mirror)

    def _counts(
        self, scores: NDArray[np.float64], rowids: NDArray[np.int64], *, hits: int | None = None
    ) -> NDArray[np.float64] | None:
        """Weighted counts solved from ``bm25()`` of one phrase; None if out of step.

        ``rowids`` are every row holding the phrase, or some of them when ``hits`` says how many hold it
        in the whole table (bm25()'s IDF counts them all).
        """
        if not len(rowids):
            return scores
        n_rows = len(self.tokens)
        if not n_rows or not self.total_tokens:
            return None
        avgdl = float(self.total_tokens) / float(n_rows)
        n_hit = len(rowids) if hits is None else hits
        idf = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
        idf = idf if idf > 0.0 else 1e-6
        sizes = self.token_array()
        if int(rowids.max()) >= len(sizes):
            return None
        d = sizes[rowids]
        if (d < 0).any():  # a row the mirror does not hold
            return None
        import numpy as np

        s = -scores / idf
        f = K1 * (1 - B + B * d / avgdl) * s / (K1 + 1.0 - s)
        counts = np.rint(f)
        if (counts < 1).any() or (np.abs(f - counts) > 1e-3).any():
            return None  # the table changed under the mirror (another process)
        return counts

    def token_array(self) -> NDArray[np.float64]:
        """Tokens per row indexed by rowid (-1 where no row), as floats: kept until the rows change. Made from the
        rowmap where the rows are not read whole (a new process's second ask of a common word: ~200 ms at 300k)."""
        cached = self._arrays.get("tokens")
        if cached is None or cached[0] != self.mirror:
            import numpy as np

            found = None if self._rows_read.whole else self._token_array_by_rowmap()
            if found is not None:
                self._arrays["tokens"] = (self.mirror, found)
                return found
            size = max(self.tokens, default=0) + 1
            sizes = np.full(size, -1.0)
            if self.tokens:
                sizes[np.fromiter(self.tokens.keys(), np.int64, len(self.tokens))] = np.fromiter(
                    self.tokens.values(), np.float64, len(self.tokens)
                )
            cached = self._arrays["tokens"] = (self.mirror, sizes)
        return cached[1]

    def _token_array_by_rowmap(self) -> NDArray[np.float64] | None:
        """``token_array`` from the rowmap: the build's rows, less those changed since, and the rows newer."""
        import numpy as np

        kept = self._rowmap
        rowmap = kept[2] if kept is not None and kept[0] == self.mirror else None
        if rowmap is None:
            rowmap = self._read_rowmap(None, None)
        if rowmap is None:
            return None
        rowids = np.frombuffer(rowmap.rowids, dtype=np.int32).astype(np.int64)
        tokens = np.frombuffer(rowmap.tokens, dtype=np.int32).astype(np.float64)
        held = rowids > 0
        if rowmap.changed:
            held &= ~np.isin(rowids, np.fromiter(rowmap.changed, np.int64, len(rowmap.changed)))
        newer = list(rowmap.newer)
        self.prefetch(newer)
        top = max(int(rowids[held].max(initial=0)), max(newer, default=0))
        sizes = np.full(top + 1, -1.0)
        sizes[rowids[held]] = tokens[held]
        if newer:
            sizes[np.array(newer, dtype=np.int64)] = [float(self.tokens[rowid]) for rowid in newer]
        return sizes

    def allowed_mask(self, allowed: set[int]) -> NDArray[np.bool_]:
        """A boolean array over rowids: True for the allowed rows (kept while the same set object is asked)."""
        key = id(allowed)
        cached = self._arrays.get(key)
        if cached is None or cached[1] is not allowed or cached[0] != self.mirror:
            import numpy as np

            mask = np.zeros(len(self.token_array()), dtype=bool)
            if allowed:
                mask[np.fromiter(allowed, np.int64, len(allowed))] = True
            if len(self._arrays) > 2 * MEMO_ENTRIES:
                self._arrays = {"tokens": self._arrays["tokens"]}
            cached = self._arrays[key] = (self.mirror, allowed, mask)
        return cached[2]

    def among(self, allowed: set[int]) -> Among:
        """``rows_among(allowed)``, kept while the same set object is asked: a filter's rows are kept per snapshot
        (``knowtk.query.grep``), so the next query with that filter reuses their JSON array."""
        return self._per_set("among", allowed, rows_among)

    def tokens_in(self, allowed: set[int]) -> int:
        """Tokens in the allowed rows (-1 where the mirror holds no row, as ``allowed_tokens`` sums them), kept
        while the same set object is asked: summed in plain Python where the rows are read whole, else by SQLite
        over the rows' ranges (``among``; a new process's first filter need not read the rows table whole)."""
        tokens, rows_read = self.tokens, self._rows_read

        def summed(rows: set[int]) -> int:
            if not rows_read.whole and rows:
                among = self.among(rows)
                count, total = rows_read.select_one(
                    f"SELECT count(*), total(tokens) FROM {self.rows} WHERE {among.clause}", *among.params
                )
                if count == len(rows):  # (else a row is missing: summed as the mirror has them, -1 each)
                    return int(total)
            return sum(map(tokens.get, rows, itertools.repeat(-1)))

        return cast(int, self._per_set("tokens_in", allowed, summed))

    def _per_set(self, name: str, allowed: set[int], make: Callable[[set[int]], Any]) -> Any:
        """What ``make`` derives from a set of rows, kept for this very set object and the rows as they are."""
        key = (name, id(allowed))
        cached = self._arrays.get(key)
        if cached is None or cached[1] is not allowed or cached[0] != self.mirror:
            if len(self._arrays) > 2 * MEMO_ENTRIES:
                self._arrays = {"tokens": self._arrays["tokens"]} if "tokens" in self._arrays else {}
            cached = self._arrays[key] = (self.mirror, allowed, make(allowed))
        return cached[2]

    def allowed_tokens(self, allowed: set[int]) -> int:
        """Tokens in the allowed rows (the filtered corpus length)."""
        return int(self.token_array()[self.allowed_mask(allowed)].sum())

    def _out_of_step(self) -> Exception:
        # the query reads one transaction, so the tables cannot have changed under the mirror:
        # they disagree with themselves (the rows table and the FTS5 index); rebuild, then run again,
        # once: a projection rebuilt for this reason that still disagrees is reported, not rebuilt forever
        self.invalidate()
        if self._rebuilt_out_of_step:
            self._rebuilt_out_of_step = False
            return sqlite3.DatabaseError(f"{self.fts} disagrees with {self.rows} even after a rebuild")
        self.damaged = self._rebuilt_out_of_step = True
        return ProjectionChanged(f"{self.fts} disagrees with {self.rows}; rebuilt and run again")


def _marked(mark: str, unsure: Collection[str]) -> str:
    """An image mark, with the digest of the ids the rows may differ from it at (``FtsProjection.unsure_of``)."""
    if not unsure:
        return mark
    digest = hashlib.sha256("\n".join(sorted(unsure)).encode()).hexdigest()[:20]
    return f"{mark}~{len(unsure)}~{digest}"


class ProjectionChanged(Contention):
    """A projection changed or proved inconsistent under a query: the query is run again (Engine.run)."""


IDS, SHAS, ID_OF, TOKENS = range(4)  # the four views of a rows table (``_Column``), by their place in ``_Rows.known``
TIES_ROWS = 256  # rows past the k-th that ``native_top`` fetches to see the k-th score's ties end
SPLIT_FROM_ROWS = 20_000  # rows from which ``native_top`` orders the table's two halves at once
MAX_ROWID = 2**63 - 1
LOAD_AFTER = 2000  # rows read one at a time (~6 us each at 100k) past which the whole table is read at once (~140 ms)
_ABSENT: Any = object()  # a key known to be in no row
_UNREAD: Any = object()


class _Rows:
    """What a projection has read of its rows table, by need: a row at a time, or the whole table.

    A new process's first query needs a few rows (the ids of the hits it shows), not the 100k its open
    used to load (~150 ms). What was read belongs to one ``mirror`` of the projection: a reload (another
    process wrote, a rollback) or a write of its own moves the mirror on and drops it, except a whole
    table, which a write of this projection patches (a long-lived process reads it once). A row is read
    in the query's transaction, after checking that no other process wrote since the projection was
    loaded (``FtsProjection.check_current``): never a row of another version than the ones read before.

    The file hashes are read whole apart from the other columns (``load_shas``): a filter and a phrase's
    counts need ids, rowids and token counts of every row, and the 64-character hashes made reading the
    table whole ~25% slower for them.
    """

    def __init__(self, proj: FtsProjection) -> None:
        self.proj = proj
        self.at = -1  # the mirror what follows belongs to
        self.whole = False  # every row's id, rowid and tokens are in ``known``
        self.shas_whole = False  # every row's sha256 is in ``known``
        self.known: tuple[dict[Any, Any], ...] = ({}, {}, {}, {})  # ids, shas, id_of, tokens (or _ABSENT)
        self.count: int | None = None
        self.total: int | None = None
        self.reads = 0
        self.columns: list[_Column] = []

    def current(self) -> tuple[dict[Any, Any], ...]:
        """``known`` for the projection's present mirror (emptied when it moved on)."""
        if self.at != self.proj.mirror:
            self.at, self.whole, self.shas_whole, self.known = self.proj.mirror, False, False, ({}, {}, {}, {})
            self.count = self.total = None
            self.reads = 0
            for column in self.columns:  # their lookups go through ``_Column.get`` again
                column.__dict__.pop("get", None)
        return self.known

    def read(self, slot: int, sql: str, key: Any) -> Any:
        """One row's value (``_ABSENT`` if none), read and kept; past LOAD_AFTER reads, the whole table."""
        self.reads += 1
        if self.reads > LOAD_AFTER:
            return self.load(slot)[slot].get(key, _ABSENT)
        rows = self._select(sql, key)
        value = rows[0][0] if rows else _ABSENT
        self.known[slot][key] = value
        return value

    def rowids_of(self, ids: Collection[str]) -> dict[str, int]:
        """id -> rowid of those of ``ids`` the table holds: from the whole table when read, else one query for
        them all (an index lookup each: a few thousand ids do not read a 300k-row table whole), kept."""
        known = self.current()[IDS]
        if not self.whole:
            unread = [rid for rid in ids if rid not in known]
            if unread:
                sql = f"SELECT id, rowid FROM {self.proj.rows} WHERE id IN (SELECT value FROM json_each(?))"
                found = dict(self._select(sql, json.dumps(unread)))
                for rid in unread:
                    known[rid] = found.get(rid, _ABSENT)
        return {rid: rowid for rid in ids if (rowid := known.get(rid, _ABSENT)) is not _ABSENT}

    def prefetch(self, rowids: Collection[int]) -> None:
        """The id and tokens of these rows, read in one statement where not read yet (the rows a page is scored
        from: one at a time, past ``LOAD_AFTER`` of them, would read the table whole)."""
        known = self.current()
        if self.whole:
            return
        id_of, tokens = known[ID_OF], known[TOKENS]
        unread = [rowid for rowid in rowids if rowid not in id_of or rowid not in tokens]
        if not unread:
            return
        sql = f"SELECT rowid, id, tokens FROM {self.proj.rows} WHERE rowid IN (SELECT value FROM json_each(?))"
        found = {rowid: (rid, size) for rowid, rid, size in self._select(sql, json.dumps(unread))}
        for rowid in unread:
            rid, size = found.get(rowid, (_ABSENT, _ABSENT))
            id_of[rowid], tokens[rowid] = rid, size
            if rid is not _ABSENT:
                known[IDS][rid] = rowid

    def is_whole(self, slot: int) -> bool:
        return self.shas_whole if slot == SHAS else self.whole

    def load(self, slot: int) -> tuple[dict[Any, Any], ...]:
        """``known`` with ``slot`` read whole."""
        return self.load_shas() if slot == SHAS else self.load_whole()

    def load_whole(self) -> tuple[dict[Any, Any], ...]:
        """``known`` with every row's id, rowid and tokens (the hashes read so far kept as they are)."""
        known = self.current()
        if self.whole:
            return known
        rowids, ids, tokens = self._columns()
        self.known = (
            dict(zip(ids, rowids, strict=True)),
            known[SHAS],
            dict(zip(rowids, ids, strict=True)),
            dict(zip(rowids, tokens, strict=True)),
        )
        self.whole, self.count = True, len(rowids)
        self._bind(IDS, ID_OF, TOKENS)
        return self.known

    def _columns(self) -> tuple[Sequence[Any], Sequence[Any], Sequence[Any]]:
        """Every row's rowid, id and tokens, aligned. Each column comes as one JSON array (the same scan, so the
        same order), parsed in C: a tuple per row cost about twice as much (a new process's first filter reads
        the table whole: 281k rows at 300k records). A value JSON cannot hold (a BLOB written into a damaged
        state) is read as before, row by row."""
        table = self.proj.rows
        try:
            arrays = self._select(
                f"SELECT json_group_array(rowid), json_group_array(id), json_group_array(tokens) FROM {table}"
            )[0]
        except sqlite3.OperationalError as exc:
            if is_busy(exc) or getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_INTERRUPT:
                raise  # (the row by row read would meet it too)
            rows = self._select(f"SELECT rowid, id, tokens FROM {table}")
            return tuple(zip(*rows, strict=True)) if rows else ((), (), ())  # type: ignore[return-value]
        rowids, ids, tokens = (json.loads(array) for array in arrays)
        return rowids, ids, tokens

    def load_shas(self) -> tuple[dict[Any, Any], ...]:
        """``known`` with every row's sha256."""
        known = self.current()
        if self.shas_whole:
            return known
        shas = dict(self._select(f"SELECT id, sha256 FROM {self.proj.rows}"))
        self.known = (known[IDS], shas, known[ID_OF], known[TOKENS])
        self.shas_whole = True
        self._bind(SHAS)
        return self.known

    def select_one(self, sql: str, *params: Any) -> Any:
        """The first row of ``sql``, read as ``_select`` reads."""
        return self._select(sql, *params)[0]

    def _select(self, sql: str, *params: Any) -> list[Any]:
        """The rows of ``sql``, read in the query's transaction from the tables the mirror was loaded from."""
        proj = self.proj
        with proj.state.reading():
            proj.check_current()
            return proj.conn.execute(sql, params).fetchall()

    def _bind(self, *slots: int) -> None:
        for column in self.columns:  # a lookup is then the dict's own (in C: a bulk caller maps over it)
            if column.slot in slots:
                column.__dict__["get"] = self.known[column.slot].get

    def length(self) -> int:
        self.current()
        if self.count is None:
            self.count = int(self._select(f"SELECT count(*) FROM {self.proj.rows}")[0][0])
        return self.count

    def total_tokens(self) -> int:
        """Tokens in every row: FTS5's own total (its averages record), read once per mirror.

        The record is current outside a write of the projection (FTS5 writes it when a write's savepoint or
        transaction ends); summing the rows table's column instead reads every row (~10 ms at 100k).
        """
        self.current()
        if self.total is None:
            if self.whole:
                self.total = sum(self.known[TOKENS].values())
            else:
                rows = self._select(f"SELECT block FROM {self.proj.fts}_data WHERE id = 1")
                self.total = sum(_varints(rows[0][0])[1:]) if rows else 0
        return self.total

    def written(self, deleted: list[tuple[str, int]], inserted: Iterable[tuple[int, str, str, int]]) -> None:
        """The projection wrote these rows (its mirror moved on): a whole table is patched, rows read one at
        a time are dropped (read again from the table as it is now). The hashes read so far are patched too
        when the rest is whole: a hash of a row the write left alone is still its row's."""
        if not self.whole or self.at != self.proj.mirror - 1:
            self.current()
            return
        ids, shas, id_of, tokens = self.known
        for rid, rowid in deleted:
            del ids[rid], id_of[rowid], tokens[rowid]
            shas.pop(rid, None)
        for rowid, rid, sha, size in inserted:
            ids[rid], shas[rid], id_of[rowid], tokens[rowid] = rowid, sha, rid, size
        self.at, self.count, self.total = self.proj.mirror, len(ids), None


class _Column(Mapping[Any, Any]):
    """One column of a projection's rows table by another (id -> rowid, rowid -> tokens, ...), read by need
    through ``_Rows``: a lookup reads one row, an iteration the whole table."""

    def __init__(self, rows: _Rows, slot: int, key: str, value: str) -> None:
        self._rows, self.slot = rows, slot
        self._sql = f"SELECT {value} FROM {rows.proj.rows} WHERE {key} = ?"
        rows.columns.append(self)

    def get(self, key: Any, default: Any = None) -> Any:
        rows = self._rows
        value = rows.current()[self.slot].get(key, _ABSENT if rows.is_whole(self.slot) else _UNREAD)
        if value is _UNREAD:
            value = rows.read(self.slot, self._sql, key)
        return default if value is _ABSENT else value

    def __getitem__(self, key: Any) -> Any:
        value = self.get(key, _ABSENT)
        if value is _ABSENT:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return self.get(key, _ABSENT) is not _ABSENT

    def __len__(self) -> int:
        return self._rows.length()

    def _whole(self) -> dict[Any, Any]:
        return self._rows.load(self.slot)[self.slot]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._whole())

    def keys(self) -> KeysView[Any]:
        return self._whole().keys()

    def items(self) -> ItemsView[Any, Any]:
        return self._whole().items()

    def values(self) -> ValuesView[Any]:
        return self._whole().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Column):
            other = other._whole()
        return self._whole() == other if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


class RowMap(NamedTuple):
    """By stored position (``FtsProjection.rowmap``): the rowid of each stored id's row as a build wrote them (0:
    none), and its tokens; ``changed``, the rowids whose row may differ since (deleted, written again), and
    ``newer``, the rows now at those rowids or past the build's (rowid -> id)."""

    rowids: array[int]
    tokens: array[int]
    changed: frozenset[int] = frozenset()
    newer: Mapping[int, str] = {}
    changed_at: Sequence[int] = ()  # the stored positions of the changed rowids


def _unpacked_rowmap(
    data: bytes, size: int, changed: frozenset[int] = frozenset(), newer: Mapping[int, str] | None = None
) -> RowMap | None:
    """A stored rowmap back: ``size`` rowids then their tokens (None: not that many of the stored width)."""
    rowids, tokens = array(ROWMAP_TYPE), array(ROWMAP_TYPE)
    if rowids.itemsize != 4 or len(data) != 8 * size:
        return None
    rowids.frombytes(data[: 4 * size])
    tokens.frombytes(data[4 * size :])
    if sys.byteorder != "little":
        rowids.byteswap()
        tokens.byteswap()
    return RowMap(rowids, tokens, changed, newer or {})


def _set_pending_bytes(conn: sqlite3.Connection, fts: str) -> None:
    """Set the table's ``hashsize`` (``PENDING_TERMS_BYTES``), kept in its _config table."""
    with suppress(sqlite3.OperationalError):  # an SQLite older than the option (3.40 has it): its default then
        conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('hashsize', ?)", (PENDING_TERMS_BYTES,))


SHADOWS = ("data", "idx", "docsize", "config")  # an external-content table has no _content
ROWMAP_TABLE = "keyword_rowmap_v1"  # per projection: the rowid at each stored position (``FtsProjection.rowmap``)
ROWMAP_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {ROWMAP_TABLE} "
    "(projection TEXT PRIMARY KEY, base TEXT NOT NULL, top INTEGER NOT NULL, rowids BLOB)"
)
ROWMAP_LOG = "keyword_rowmap_log_v1"  # per projection: the rowids whose row may differ from its rowmap
ROWMAP_LOG_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {ROWMAP_LOG} "
    "(projection TEXT NOT NULL, rowid INTEGER NOT NULL, PRIMARY KEY (projection, rowid)) WITHOUT ROWID"
)
ROWMAP_CHANGES_MAX = 5000  # rows changed since the rowmap past which a filter's rows are found by id (read whole)
ROWMAP_TYPE = "i"  # 4-byte rowids and tokens, little-endian (past 2**31, none is stored: the rows are read instead)
TRIGGER_OPS = ("INSERT", "DELETE", "UPDATE")  # of the rows table: each clears the mark, logs for the rowmap


class _TextWriter:
    """Rows of a projection's text table (the body deflated), written in batches beside the FTS5 insert.

    A full batch is deflated on a thread of its own while the next one is tokenized by FTS5 (zlib and
    SQLite both release the GIL), and inserted when the batch after it is full: a cold build's
    compression of every body runs beside the index build on a second core, not after it.
    """

    BATCH = 256

    def __init__(self, conn: sqlite3.Connection, table: str) -> None:
        self.conn, self.table = conn, table
        self.pending: list[tuple[int, str, str, str]] = []
        self.worker: threading.Thread | None = None
        self.done: list[tuple[int, str, str, bytes, int]] = []

    def add(self, rowid: int, text: tuple[str, str, str]) -> None:
        self.pending.append((rowid, *text))
        if len(self.pending) >= self.BATCH:
            self._insert_done()
            batch, self.pending = self.pending, []
            self.worker = threading.Thread(target=self._deflate, args=(batch,), daemon=True)
            self.worker.start()

    def _deflate(self, batch: list[tuple[int, str, str, str]]) -> None:
        self.done = _deflated(batch)

    def _insert_done(self) -> None:
        if self.worker is not None:
            self.worker.join()
            self.worker = None
            rows, self.done = self.done, []
            if len(rows) < self.BATCH:  # the thread failed (it raised, e.g. out of memory): inline, to fail here
                raise sqlite3.DatabaseError("the texts of a batch could not be deflated")
            self._insert(rows)

    def _insert(self, rows: list[tuple[int, str, str, bytes, int]]) -> None:
        sql = f"INSERT INTO {self.table} (rowid, title, aliases, body, size) VALUES (?, ?, ?, ?, ?)"
        self.conn.executemany(sql, rows)

    def flush(self) -> None:
        self._insert_done()
        if self.pending:
            self._insert(_deflated(self.pending))
            self.pending = []


def _deflated(batch: list[tuple[int, str, str, str]]) -> list[tuple[int, str, str, bytes, int]]:
    out = []
    for rowid, title, aliases, body in batch:
        data = body.encode("utf-8")
        out.append((rowid, title, aliases, deflate(data), len(data)))
    return out


def _drop_fts(conn: sqlite3.Connection, fts: str) -> None:
    """Drop an FTS5 table even when a shadow table is missing or damaged (then DROP TABLE itself fails)."""
    try:
        conn.execute(f"DROP TABLE IF EXISTS {fts}")
        return
    except sqlite3.DatabaseError:
        pass
    for shadow in (*SHADOWS, "content"):  # ordinary tables: dropping them frees their pages (an earlier format's too)
        conn.execute(f"DROP TABLE IF EXISTS {fts}_{shadow}")
    # the virtual table itself owns no pages: remove its schema row and make SQLite read the schema again
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    try:
        conn.execute("DELETE FROM sqlite_master WHERE type = 'table' AND name = ?", (fts,))
        conn.execute(f"PRAGMA schema_version = {version + 1}")
    finally:
        conn.execute("PRAGMA writable_schema = RESET")
        conn.execute("PRAGMA writable_schema = OFF")


class Aside(Generic[T]):
    """A read run beside the query, on the state's second connection in a thread of its own: SQLite works on
    the other core while this thread goes on (SQLite lets go of the interpreter while it steps).

    What it reads must be what the query reads: the query's own connection is in a transaction that wrote
    nothing (``StateDB.unwritten``), and the second connection's read transaction finds the FTS5 table's
    structure and averages records as the query's finds them (every write to the table rewrites both, its
    structure's cookie counting the writes). Else, or when the read fails, ``result`` runs ``read`` on the
    query's connection itself: the same answer, in turn.
    """

    def __init__(self, proj: FtsProjection, read: Callable[[sqlite3.Connection], T], *, beside: bool = True) -> None:
        self.proj, self.read = proj, read
        self._value: list[T] = []
        self._thread: threading.Thread | None = None
        if beside and ASIDE and proj.state.unwritten():
            self._marks = proj.conn.execute(self._marks_sql()).fetchall()
            self._thread = threading.Thread(target=self._run, name="knowtk-aside", daemon=True)
            self._thread.start()

    def _marks_sql(self) -> str:
        return f"SELECT id, block FROM {self.proj.fts}_data WHERE id IN (1, 10) ORDER BY id"

    def _run(self) -> None:
        state = self.proj.state
        with state.side_lock, suppress(Exception):  # (``result`` then reads it in turn, and raises what it raises)
            side = state.side_reader()
            side.execute("BEGIN")
            try:
                if side.execute(self._marks_sql()).fetchall() == self._marks:
                    self._value.append(self.read(side))
            finally:
                side.execute("ROLLBACK")

    def result(self) -> T:
        """What ``read`` gives over the query's state of the table (read here when it could not be read aside)."""
        if self._thread is not None:
            self._thread.join()
        return self._value[0] if self._value else self.read(self.proj.conn)


ASIDE = True  # (tests turn it off to compare)


class Among:
    """Some rows of a projection, as a query keeps to them (``hit_count``, ``matches_among``, ``counts_among``):
    a rowid range when they are every rowid of one (FTS5 then reads that stretch of a phrase's rows alone),
    else a JSON array SQLite reads with ``json_each`` (a query never writes a table for it, not even a TEMP one),
    within the range from their first rowid to their last (FTS5 reads that stretch alone: a folder's rows,
    indexed in order, lie close together). The unary + keeps FTS5 on one pass over the phrase's rows, each
    looked up in the array: without it, FTS5 would seek every listed rowid in the phrase's rows (11.5 s for
    14k rows and a word 90k rows hold).

    ``runs``: the ranges of rows that lie in a few (``rows_among``), each of which a count or a match without a
    score reads alone (FTS5 seeks to it: only the rows in them are read, none tested against the others), and
    ``extra`` the rows besides them, sought one by one.

    ``rows``: the rows of a JSON array themselves (None for a range), where a count or a match may look up
    the rows an expression matches instead (``looked_up_here``); the array's text is made when a statement
    first needs it (16 ms for a scope's 83k rows at 300k records, not needed where they are looked up here).
    """

    __slots__ = ("_params", "clause", "extra", "rows", "runs")

    def __init__(
        self,
        clause: str,
        params: tuple[int | str, ...] | None,
        rows: Collection[int] | None = None,
        runs: list[tuple[int, int]] | None = None,
        extra: tuple[int, ...] = (),
    ):
        self.clause, self._params, self.rows, self.runs, self.extra = clause, params, rows, runs, extra

    @property
    def params(self) -> tuple[int | str, ...]:
        if self._params is None:
            rows = cast(Collection[int], self.rows)
            self._params = (min(rows), max(rows), "[" + ",".join(map(str, rows)) + "]")
        return self._params

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Among) and (self.clause, self.params) == (other.clause, other.params)

    def __hash__(self) -> int:
        return hash((self.clause, self.params))

    def __repr__(self) -> str:
        return f"Among({self.clause!r}, {len(self.rows) if self.rows is not None else 'range'})"

    def looked_up_here(self, matching: int | None) -> bool:
        """Whether the rows an expression matches (at most ``matching`` of them, None: unknown) are better read
        as one JSON array and looked up in ``rows`` (~0.18 us a matching row at 300k records) than looked up by
        SQLite in its ``json_each`` of ``rows`` (~0.44 us a row of the array, which SQLite indexes again for
        every statement: 40 ms for a scope's 83k rows, where the word's 63k rows read here took 13 ms)."""
        return self.rows is not None and matching is not None and LOOKUP_RATIO * len(self.rows) > matching


LOOKUP_RATIO = 3  # (Among.looked_up_here: an array row costs SQLite ~3 times what a matching row read costs here)


def _quoted(phrase: tuple[str, ...]) -> str:
    """A phrase as an FTS5 string: its tokens quoted together (OR, NOT, columns and * are plain words)."""
    return '"' + " ".join(phrase) + '"'


def rows_among(rowids: Collection[int]) -> Among:
    """The rows as ``Among``: distinct rowids (a set), a range when they fill it, a few ranges and a few rows
    besides when they fill those (``_runs``: a filter's rows, clustered as ``reconcile`` writes them, and the
    rows of records edited since, written after the others), else an array."""
    if rowids:
        low, high = min(rowids), max(rowids)
        if high - low + 1 == len(rowids):
            return Among("rowid BETWEEN ? AND ?", (low, high))
        found = _runs(rowids)
        if found is not None:
            # FTS5 reads the stretch from the first to the last; SQLite tests each row against a few ranges
            # (~0.02 us a range, where an array of 82k rows cost ~25 ms to index for every statement)
            ranges, extra = found
            either = ["rowid BETWEEN ? AND ?"] * len(ranges) + (
                [f"+rowid IN ({','.join('?' * len(extra))})"] if extra else []
            )
            params = (low, high, *itertools.chain(*ranges), *extra)
            return Among(f"rowid BETWEEN ? AND ? AND ({' OR '.join(either)})", params, runs=ranges, extra=extra)
    rows = rowids if isinstance(rowids, (set, frozenset)) else set(rowids)  # (looked up: ``looked_up_here``)
    if not rows:
        return Among("+rowid IN (SELECT value FROM json_each(?))", ("[]",), rows)
    # within their range: FTS5 seeks to its start and stops at its end (a folder's rows lie close together)
    return Among("rowid BETWEEN ? AND ? AND +rowid IN (SELECT value FROM json_each(?))", None, rows)


_EXTRA_CLAUSE = "rowid BETWEEN ? AND ? AND +rowid IN ({marks})"  # an Among's extra rows alone (``_extra_params``)


def _extra_params(extra: tuple[int, ...]) -> tuple[int, ...]:
    return (extra[0], extra[-1], *extra)  # (in order: the first and the last bound their range)


RUNS_AT_MOST = 16  # (rows_among: past this many ranges, testing each row against all of them costs more)
LONG_RUN = 32  # rows from which a run of consecutive rowids is passed as a range, not row by row
EXTRA_AT_MOST = 256  # rows in shorter runs passed one by one, at most


def _runs(rowids: Collection[int]) -> tuple[list[tuple[int, int]], tuple[int, ...]] | None:
    """The distinct rowids as their runs of ``LONG_RUN`` consecutive values or more [(first, last)] and the
    rows of shorter runs, in order; None past ``RUNS_AT_MOST`` ranges or ``EXTRA_AT_MOST`` rows besides.

    Sorted, a stretch ``ordered[i..j]`` is one run exactly when ``ordered[j] - ordered[i] == j - i`` (distinct
    integers): stretches that are not are halved, so a few runs cost a few dozen steps after the sort."""
    ordered = sorted(rowids)
    ranges: list[tuple[int, int]] = []
    extra: list[int] = []
    run: tuple[int, int] | None = None  # the run being extended

    def close(first: int, last: int) -> bool:
        if last - first + 1 >= LONG_RUN:
            ranges.append((first, last))
        else:
            extra.extend(range(first, last + 1))
        return len(ranges) <= RUNS_AT_MOST and len(extra) <= EXTRA_AT_MOST

    todo = [(0, len(ordered) - 1)] if ordered else []
    while todo:  # (depth first, right half last in: runs come out in order)
        lo, hi = todo.pop()
        if ordered[hi] - ordered[lo] == hi - lo:
            if run is not None and run[1] == ordered[lo] - 1:
                run = (run[0], ordered[hi])
            else:
                if run is not None and not close(*run):
                    return None
                run = (ordered[lo], ordered[hi])
            continue
        mid = (lo + hi) // 2
        todo += [(mid + 1, hi), (lo, mid)]
    if run is not None and not close(*run):
        return None
    return ranges, tuple(extra)


def columns(rows: list[tuple[int, float]]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """(bm25 values, rowids) of ``SELECT rowid, bm25(...)`` rows (rowids are exact as doubles up to 2**53)."""
    import numpy as np

    flat = np.fromiter(itertools.chain.from_iterable(rows), np.float64, 2 * len(rows)).reshape(-1, 2)
    return flat[:, 1].copy(), flat[:, 0].astype(np.int64)


def _varints(blob: bytes) -> list[int]:
    """SQLite/FTS5 varints: 7 bits a byte, high bit = more, the 9th byte whole."""
    out, i, n = [], 0, len(blob)
    while i < n:
        value = 0
        for k in range(9):
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out
