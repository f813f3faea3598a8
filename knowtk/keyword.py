"""Keyword projections (SQLite FTS5) and exact BM25 over any filtered subset of them.

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

Scoring is SQLite's own ``bm25()`` with weights title 8, aliases 6, body 1,
"as if the table held only the records that pass the filters". When nothing
is filtered out, that *is* ``bm25()`` on the table. Otherwise the same formula
(fts5_aux.c: k1 = 1.2, b = 0.75, IDF floored at 1e-6) is evaluated here from
the index itself: each row's weighted count of each phrase (read back from
``bm25()`` of that phrase alone, see ``phrase_frequencies``), row lengths from
the FTS5 ``_docsize`` table, and row count, total tokens and document
frequencies taken over the filtered rows only. The tests check both paths
against ``bm25()`` on a table that really holds only the filtered records.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import sqlite3
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .datevalues import format_utc
from .state import StateDB, now_utc

__all__ = ["WEIGHTS", "FtsProjection", "Match", "QueryTerms", "Source", "rank", "tokenize_query", "top_matches"]

TOKENIZER = "unicode61 remove_diacritics 2"
COLUMNS = ("title", "aliases", "body")
WEIGHTS = {"title": 8.0, "aliases": 6.0, "body": 1.0}
K1, B = 1.2, 0.75
FINGERPRINT = hashlib.sha256(f"fts5|{TOKENIZER}|{','.join(COLUMNS)}|weights-in-query|v1".encode()).hexdigest()[:16]
HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE = "\ue000", "\ue001"  # private-use characters mark matches in highlight()
OPENING_CHARS = 4096  # what texts() keeps of a body over its limit: enough for an opening excerpt
MEMO_ENTRIES = 16  # derived sets kept per projection (each can hold a rowid per record)


@dataclass(frozen=True, slots=True)
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
            return '"' + " ".join(self.tokens) + '"'
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
        self.ids: dict[str, int] = {}  # id -> rowid
        self.shas: dict[str, str] = {}  # id -> sha256 of the indexed file
        self.id_of: dict[int, str] = {}
        self.tokens: dict[int, int] = {}  # rowid -> tokens in the row (all columns)
        self.total_tokens = 0
        self.indexed_at: str | None = None
        self._version: int | None = None
        self._synced: Mapping[str, str] | None = None  # the desired map last reconciled in full
        self.mirror = 0  # bumped whenever the in-memory rows above change
        self._memo_key: tuple[int, int] | None = None
        self._memo: dict[Hashable, Any] = {}
        self._sizes_key: tuple[int, int] | None = None  # (mirror, body_limit) of the two below
        self._sizes: dict[int, int] = {}  # rowid -> bytes of its body
        self._openings: dict[int, str] = {}  # rowid -> opening of a body over the limit

    @property
    def conn(self) -> sqlite3.Connection:
        return self.state.conn

    # -- lifecycle of the tables -------------------------------------------------------------
    def ensure(self) -> None:
        """Create or rebuild the tables when missing or of another fingerprint; load the mirror."""
        conn = self.conn
        version = self.state.data_version()
        if self._version is not None and version == self._version and self.ids is not None:
            return
        conn.execute(
            "CREATE TABLE IF NOT EXISTS keyword_state_v1 ("
            "projection TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, indexed_at TEXT)"
        )
        row = conn.execute("SELECT fingerprint, indexed_at FROM keyword_state_v1 WHERE projection = ?", (self.key,))
        state = row.fetchone()
        intact = self.state.table_exists(self.fts) and self.state.table_exists(self.rows)
        if state is None or state[0] != FINGERPRINT or not intact:
            with self.state.transaction():
                conn.execute(f"DROP TABLE IF EXISTS {self.fts}")
                conn.execute(f"DROP TABLE IF EXISTS {self.rows}")
                conn.execute(
                    f"CREATE VIRTUAL TABLE {self.fts} USING fts5({', '.join(COLUMNS)}, tokenize='{TOKENIZER}')"
                )
                conn.execute(
                    f"CREATE TABLE {self.rows} (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
                    "sha256 TEXT NOT NULL, tokens INTEGER NOT NULL)"
                )
                conn.execute(
                    "INSERT OR REPLACE INTO keyword_state_v1 (projection, fingerprint, indexed_at) VALUES (?, ?, NULL)",
                    (self.key, FINGERPRINT),
                )
            state = (FINGERPRINT, None)
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{self.vocab} USING fts5vocab(main, {self.fts}, instance)"
        )
        self.indexed_at = state[1]
        self.ids, self.shas, self.id_of, self.tokens = {}, {}, {}, {}
        for rowid, rid, sha, tokens in conn.execute(f"SELECT rowid, id, sha256, tokens FROM {self.rows}"):
            self.ids[rid], self.shas[rid], self.id_of[rowid], self.tokens[rowid] = rowid, sha, rid, tokens
        self.total_tokens = sum(self.tokens.values())
        self._version = self.state.data_version()
        self._synced = None
        self.mirror += 1

    def reconcile(
        self,
        desired: Mapping[str, str],
        text_of: Callable[[str], tuple[str, str, str] | None],
        *,
        since: tuple[Mapping[str, str], Iterable[str]] | None = None,
    ) -> int:
        """Make the projection hold exactly ``desired`` ({id: sha256}); returns the rows written.

        The engine hands over the same map object for as long as its snapshot stands, so an
        unchanged store costs an identity check here. ``since`` is (an earlier map, the ids at
        which ``desired`` may differ from it): when the projection holds exactly that earlier
        map, only those ids are compared.
        """
        self.ensure()
        if desired is self._synced:
            return 0
        if since is not None and since[0] is self._synced:
            shas = self.shas
            ids = since[1]
            stale = [rid for rid in ids if rid in shas and desired.get(rid) != shas[rid]]
            fresh = [rid for rid in ids if rid in desired and shas.get(rid) != desired[rid]]
        else:
            stale = [rid for rid, sha in self.shas.items() if desired.get(rid) != sha]
            fresh = [rid for rid, sha in desired.items() if self.shas.get(rid) != sha]
        if not stale and not fresh:
            self._synced = desired
            return 0
        conn = self.conn
        inserted: list[tuple[int, str]] = []
        complete = True
        with self.state.transaction():
            gone = [(self.ids[rid],) for rid in stale]
            conn.executemany(f"DELETE FROM {self.fts} WHERE rowid = ?", gone)
            conn.executemany(f"DELETE FROM {self.rows} WHERE rowid = ?", gone)
            for rid in stale:
                rowid = self.ids.pop(rid)
                del self.shas[rid], self.id_of[rowid]
                self.total_tokens -= self.tokens.pop(rowid)
            # rowids are given rather than read back one by one, so that every row goes in one executemany
            first = (conn.execute(f"SELECT max(rowid) FROM {self.rows}").fetchone()[0] or 0) + 1

            def rows() -> Iterator[tuple[Any, ...]]:
                nonlocal complete
                for rid in fresh:
                    text = text_of(rid)
                    if text is None:  # the file changed again since the scan: the next query indexes it
                        complete = False
                        continue
                    rowid = first + len(inserted)
                    inserted.append((rowid, rid))
                    yield (rowid, *text)

            conn.executemany(f"INSERT INTO {self.fts} (rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?)", rows())
            sizes = self._docsizes(first)
            conn.executemany(
                f"INSERT INTO {self.rows} (rowid, id, sha256, tokens) VALUES (?, ?, ?, ?)",
                [(rowid, rid, desired[rid], sizes[rowid]) for rowid, rid in inserted],
            )
            for rowid, rid in inserted:
                self.ids[rid], self.shas[rid], self.id_of[rowid] = rowid, desired[rid], rid
                self.tokens[rowid] = sizes[rowid]
                self.total_tokens += sizes[rowid]
            self.indexed_at = format_utc(now_utc())
            conn.execute("UPDATE keyword_state_v1 SET indexed_at = ? WHERE projection = ?", (self.indexed_at, self.key))
        self._version = self.state.data_version()
        self.mirror += 1
        self._synced = desired if complete else None
        return len(stale) + len(inserted)

    def memo(self, generation: int) -> dict[Hashable, Any]:
        """A cache for what queries derive from these rows and one snapshot (the rows a filter allows).

        Emptied when the rows or the snapshot change, and when it grows past MEMO_ENTRIES.
        """
        key = (generation, self.mirror)
        if self._memo_key != key or len(self._memo) >= MEMO_ENTRIES:
            self._memo_key, self._memo = key, {}
        return self._memo

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
            sql = f"SELECT rowid, {', '.join(COLUMNS)} FROM {self.fts} WHERE rowid IN ({marks})"
            out = {row[0]: (row[1], row[2], row[3]) for row in self.conn.execute(sql, small)}
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
            any_phrase = " OR ".join('"' + " ".join(p) + '"' for p in terms.phrases)
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
            sql = (
                "SELECT id, length(CAST(c2 AS BLOB)), "
                f"CASE WHEN length(CAST(c2 AS BLOB)) > ? THEN substr(c2, 1, ?) END FROM {self.fts}_content "
                f"WHERE id IN ({marks})"
            )
            for rowid, size, opening in self.conn.execute(sql, [body_limit, OPENING_CHARS, *chunk]):
                self._sizes[rowid] = size or 0
                if opening is not None:
                    self._openings[rowid] = opening
        return {r: self._openings[r] for r in rowids if self._sizes.get(r, 0) > body_limit}

    def _heads(self, rowids: Iterable[int]) -> dict[int, tuple[str, str]]:
        """Title and aliases of these rows, read without the body (the content table's first columns)."""
        rowids = list(rowids)
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        sql = f"SELECT id, c0, c1 FROM {self.fts}_content WHERE id IN ({marks})"
        return {row[0]: (row[1], row[2]) for row in self.conn.execute(sql, rowids)}

    def body_matches(self, terms: QueryTerms, rowids: Iterable[int]) -> set[int]:
        """The rows among ``rowids`` where some phrase of the query stands in the body (from the index alone)."""
        rowids = list(rowids)
        if not rowids:
            return set()
        phrases = " OR ".join('"' + " ".join(p) + '"' for p in terms.phrases)
        marks = ",".join("?" * len(rowids))
        sql = f"SELECT rowid FROM {self.fts} WHERE {self.fts} MATCH ? AND rowid IN ({marks})"
        return {r for (r,) in self.conn.execute(sql, [f"body : ({phrases})", *rowids])}

    def matching(self, terms: QueryTerms, rowids: Iterable[int]) -> set[int]:
        """The rows among ``rowids`` that match (asked in chunks: SQLite bounds the number of parameters)."""
        rowids = list(rowids)
        out: set[int] = set()
        for i in range(0, len(rowids), 10_000):
            chunk = rowids[i : i + 10_000]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT rowid FROM {self.fts} WHERE {self.fts} MATCH ? AND rowid IN ({marks})"
            out.update(r for (r,) in self.conn.execute(sql, [terms.expression, *chunk]))
        return out

    # -- scoring ------------------------------------------------------------------------------
    def native_scores(self, terms: QueryTerms) -> list[tuple[float, int]]:
        """(score, rowid) of every match by SQLite's bm25(): the whole table is the corpus."""
        w = WEIGHTS
        sql = (
            f"SELECT rowid, bm25({self.fts}, {w['title']}, {w['aliases']}, {w['body']}) "
            f"FROM {self.fts} WHERE {self.fts} MATCH ?"
        )
        return [(-s, rowid) for rowid, s in self.conn.execute(sql, (terms.expression,))]

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
        w = WEIGHTS
        sql = (
            f"SELECT rowid, bm25({self.fts}, {w['title']}, {w['aliases']}, {w['body']}) "
            f"FROM {self.fts} WHERE {self.fts} MATCH ?"
        )
        rows = self.conn.execute(sql, ('"' + " ".join(phrase) + '"',)).fetchall()
        if not rows:
            return {}
        n_rows, tokens = len(self.tokens), self.tokens
        if not n_rows or not self.total_tokens:
            raise self._out_of_step()
        avgdl = float(self.total_tokens) / float(n_rows)
        idf = math.log((n_rows - len(rows) + 0.5) / (len(rows) + 0.5))
        idf = idf if idf > 0.0 else 1e-6
        freq: dict[int, float] = {}
        for rowid, score in rows:
            if allowed is not None and rowid not in allowed:
                continue
            d = tokens.get(rowid)
            s = -score / idf
            f = K1 * (1 - B + B * d / avgdl) * s / (K1 + 1.0 - s) if d is not None else 0.0
            count = round(f)
            if count < 1 or abs(f - count) > 1e-3:  # the table changed under the mirror (another process)
                raise self._out_of_step()
            freq[rowid] = float(count)
        return freq

    def _out_of_step(self) -> sqlite3.DatabaseError:
        self._version = None  # reload the mirror next time
        return sqlite3.DatabaseError("the keyword projection changed during the query; retry")


@dataclass(slots=True)
class Source:
    """One projection and the rows of it that pass the query's scope and filters (None: all of them)."""

    projection: FtsProjection
    allowed: set[int] | None


@dataclass(frozen=True, slots=True)
class Match:
    score: float
    id: str
    rowid: int
    source: FtsProjection


def rank(sources: list[Source], terms: QueryTerms) -> list[Match]:
    """Every match over the union of the sources, best first (score descending, then id)."""
    return top_matches(sources, terms, None)[1]


def top_matches(sources: list[Source], terms: QueryTerms, k: int | None) -> tuple[int, list[Match]]:
    """(how many rows match, the best k of them in rank order; all when k is None).

    A common word matches most of the store; a page needs only its first k, so the rest
    are counted but never ordered.
    """
    keyed = _scored(sources, terms)
    best = sorted(keyed) if k is None else heapq.nsmallest(k, keyed)
    return len(keyed), [Match(-negated, rid, rowid, sources[i].projection) for negated, rid, rowid, i in best]


# (-score, id, rowid, source index): sorts in rank order as plain tuples (ids are unique across sources)
Keyed = tuple[float, str, int, int]


def _scored(sources: list[Source], terms: QueryTerms) -> list[Keyed]:
    if len(sources) == 1 and sources[0].allowed is None:  # bm25() already scores over exactly this corpus
        proj = sources[0].projection
        id_of = proj.id_of
        return [(-score, id_of[rowid], rowid, 0) for score, rowid in proj.native_scores(terms)]
    return _filtered_bm25(sources, terms)


def _filtered_bm25(sources: list[Source], terms: QueryTerms) -> list[Keyed]:
    """bm25() as SQLite computes it, over a corpus made only of the allowed rows of the sources."""
    n_rows = 0
    n_tokens = 0
    for src in sources:
        proj = src.projection
        if src.allowed is None:
            n_rows += len(proj.tokens)
            n_tokens += proj.total_tokens
        else:
            n_rows += len(src.allowed)
            n_tokens += sum(proj.tokens.get(r, 0) for r in src.allowed)
    if n_rows == 0:
        return []
    avgdl = float(n_tokens) / float(n_rows)
    phrases = terms.phrases
    freqs: list[dict[tuple[int, int], float]] = []  # per phrase: (source index, rowid) -> weighted freq
    for phrase in phrases:
        merged: dict[tuple[int, int], float] = {}
        for i, src in enumerate(sources):
            for rowid, f in src.projection.phrase_frequencies(phrase, src.allowed).items():
                merged[(i, rowid)] = f
        freqs.append(merged)
    idf = []
    for merged in freqs:
        n_hit = len(merged)
        value = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
        idf.append(value if value > 0.0 else 1e-6)
    keys = [set(f) for f in freqs]
    if terms.mode == "any":
        candidates = set().union(*keys)
    elif keys:
        candidates = keys[0].intersection(*keys[1:])
    else:
        candidates = set()
    out: list[Keyed] = []
    for key in candidates:
        i, rowid = key
        proj = sources[i].projection
        d = float(proj.tokens.get(rowid, 0))
        score = 0.0
        for p in range(len(phrases)):
            f = freqs[p].get(key, 0.0)
            score += idf[p] * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))
        out.append((-score, proj.id_of[rowid], rowid, i))
    return out


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
