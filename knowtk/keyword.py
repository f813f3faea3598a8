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
the index itself: per-term instance counts from an ``fts5vocab`` instance
table, row lengths from the FTS5 ``_docsize`` table, and row count, total
tokens and document frequencies taken over the filtered rows only. The tests
check both paths against ``bm25()`` on a table that really holds only the
filtered records.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .datevalues import format_utc
from .state import StateDB, now_utc

__all__ = ["WEIGHTS", "FtsProjection", "Match", "QueryTerms", "Source", "rank", "tokenize_query"]

TOKENIZER = "unicode61 remove_diacritics 2"
COLUMNS = ("title", "aliases", "body")
WEIGHTS = {"title": 8.0, "aliases": 6.0, "body": 1.0}
K1, B = 1.2, 0.75
FINGERPRINT = hashlib.sha256(f"fts5|{TOKENIZER}|{','.join(COLUMNS)}|weights-in-query|v1".encode()).hexdigest()[:16]
HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE = "\ue000", "\ue001"  # private-use characters mark matches in highlight()


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

    def reconcile(self, desired: Mapping[str, str], text_of: Callable[[str], tuple[str, str, str] | None]) -> int:
        """Make the projection hold exactly ``desired`` ({id: sha256}); returns the rows written."""
        self.ensure()
        stale = [rid for rid, sha in self.shas.items() if desired.get(rid) != sha]
        fresh = [rid for rid, sha in desired.items() if self.shas.get(rid) != sha]
        if not stale and not fresh:
            return 0
        conn = self.conn
        written = 0
        with self.state.transaction():
            for rid in stale:
                rowid = self.ids.pop(rid)
                del self.shas[rid], self.id_of[rowid]
                self.total_tokens -= self.tokens.pop(rowid)
                conn.execute(f"DELETE FROM {self.fts} WHERE rowid = ?", (rowid,))
                conn.execute(f"DELETE FROM {self.rows} WHERE rowid = ?", (rowid,))
            inserted: list[tuple[int, str]] = []
            for rid in fresh:
                text = text_of(rid)
                if text is None:  # the file changed again since the scan: the next query indexes it
                    continue
                cur = conn.execute(f"INSERT INTO {self.fts} ({', '.join(COLUMNS)}) VALUES (?, ?, ?)", text)
                rowid = int(cur.lastrowid or 0)
                inserted.append((rowid, rid))
            sizes = self._docsizes([rowid for rowid, _ in inserted])
            conn.executemany(
                f"INSERT INTO {self.rows} (rowid, id, sha256, tokens) VALUES (?, ?, ?, ?)",
                [(rowid, rid, desired[rid], sizes[rowid]) for rowid, rid in inserted],
            )
            for rowid, rid in inserted:
                self.ids[rid], self.shas[rid], self.id_of[rowid] = rowid, desired[rid], rid
                self.tokens[rowid] = sizes[rowid]
                self.total_tokens += sizes[rowid]
            written = len(stale) + len(inserted)
            self.indexed_at = format_utc(now_utc())
            conn.execute("UPDATE keyword_state_v1 SET indexed_at = ? WHERE projection = ?", (self.indexed_at, self.key))
        self._version = self.state.data_version()
        return written

    def _docsizes(self, rowids: list[int]) -> dict[int, int]:
        """Tokens per row as FTS5 counts them: the varints of its _docsize table, summed over columns."""
        out: dict[int, int] = {}
        for i in range(0, len(rowids), 500):
            chunk = rowids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for rowid, blob in self.conn.execute(f"SELECT id, sz FROM {self.fts}_docsize WHERE id IN ({marks})", chunk):
                out[rowid] = sum(_varints(blob))
        return out

    # -- reading ------------------------------------------------------------------------------
    def texts(self, rowids: Iterable[int]) -> dict[int, tuple[str, str, str]]:
        rowids = list(rowids)
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        sql = f"SELECT rowid, {', '.join(COLUMNS)} FROM {self.fts} WHERE rowid IN ({marks})"
        return {row[0]: (row[1], row[2], row[3]) for row in self.conn.execute(sql, rowids)}

    def highlights(self, terms: QueryTerms, rowids: Iterable[int]) -> dict[int, tuple[str, str, str]]:
        """Each column of these rows with every matched phrase instance wrapped in marker characters."""
        rowids = list(rowids)
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        cols = ", ".join(f"highlight({self.fts}, {i}, ?, ?)" for i in range(len(COLUMNS)))
        sql = f"SELECT rowid, {cols} FROM {self.fts} WHERE {self.fts} MATCH ? AND rowid IN ({marks})"
        params = [HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE] * len(COLUMNS) + [terms.expression, *rowids]
        return {row[0]: (row[1], row[2], row[3]) for row in self.conn.execute(sql, params)}

    def matching(self, terms: QueryTerms, rowids: Iterable[int]) -> set[int]:
        rowids = list(rowids)
        if not rowids:
            return set()
        marks = ",".join("?" * len(rowids))
        sql = f"SELECT rowid FROM {self.fts} WHERE {self.fts} MATCH ? AND rowid IN ({marks})"
        return {r for (r,) in self.conn.execute(sql, [terms.expression, *rowids])}

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
        freq: dict[int, float] = defaultdict(float)
        sql = f"SELECT doc, col, count(*) FROM temp.{self.vocab} WHERE term = ? GROUP BY doc, col"
        for doc, col, n in self.conn.execute(sql, (term,)):
            if allowed is None or doc in allowed:
                freq[doc] += WEIGHTS[col] * n
        return freq

    def phrase_frequencies(self, phrase: tuple[str, ...], allowed: set[int] | None) -> dict[int, float]:
        """rowid -> weighted count of the phrase's instances (tokens adjacent, in order, in one column)."""
        if len(phrase) == 1:
            return self.term_frequencies(phrase[0], allowed)
        positions: dict[str, dict[tuple[int, str], set[int]]] = {}
        for term in dict.fromkeys(phrase):
            found: dict[tuple[int, str], set[int]] = defaultdict(set)
            sql = f"SELECT doc, col, offset FROM temp.{self.vocab} WHERE term = ?"
            for doc, col, offset in self.conn.execute(sql, (term,)):
                if allowed is None or doc in allowed:
                    found[(doc, col)].add(offset)
            positions[term] = found
        freq: dict[int, float] = defaultdict(float)
        first = positions[phrase[0]]
        for key, starts in first.items():
            if not all(key in positions[t] for t in phrase[1:]):
                continue
            n = sum(1 for o in starts if all(o + k in positions[t][key] for k, t in enumerate(phrase) if k))
            if n:
                freq[key[0]] += WEIGHTS[key[1]] * n
        return freq


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
    if len(sources) == 1 and sources[0].allowed is None:
        proj = sources[0].projection
        matches = [Match(score, proj.id_of[rowid], rowid, proj) for score, rowid in proj.native_scores(terms)]
    else:
        matches = _filtered_bm25(sources, terms)
    matches.sort(key=lambda m: (-m.score, m.id))
    return matches


def _filtered_bm25(sources: list[Source], terms: QueryTerms) -> list[Match]:
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
    else:
        candidates = keys[0].intersection(*keys[1:]) if keys else set()
    out = []
    for key in candidates:
        i, rowid = key
        proj = sources[i].projection
        d = float(proj.tokens.get(rowid, 0))
        score = 0.0
        for p in range(len(phrases)):
            f = freqs[p].get(key, 0.0)
            score += idf[p] * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))
        out.append(Match(score, proj.id_of[rowid], rowid, proj))
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
