"""What the parts of a keyword projection share: the tables' names and format, the query as FTS5 sees it, and
which version of the tables the in-memory parts hold (``FtsTables``).

The parts (``knowtk.index.stored_rows``, ``rowmap``, ``phrase_counts``, ...) each keep something read or derived
from the tables; they all belong to one ``rows_version`` and are read in the query's transaction after
``check_current``, so none of them mixes rows of two versions.
"""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING

from knowtk.model.shapes import shape
from knowtk.state import Contention, StateDB

if TYPE_CHECKING:  # numpy is imported by the scoring that needs arrays, not with the projection (a CLI grep)
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "COLUMNS",
    "FINGERPRINT",
    "HIGHLIGHT_CLOSE",
    "HIGHLIGHT_OPEN",
    "K1",
    "SHADOWS",
    "TOKENIZER",
    "WEIGHTS",
    "B",
    "FtsTables",
    "ProjectionChanged",
    "QueryTerms",
    "columns",
    "fts5_varints",
    "quoted_phrase",
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
SHADOWS = ("data", "idx", "docsize", "config")  # an external-content table has no _content


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
            return quoted_phrase(self.tokens)
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


def quoted_phrase(phrase: tuple[str, ...]) -> str:
    """A phrase as an FTS5 string: its tokens quoted together (OR, NOT, columns and * are plain words)."""
    return '"' + " ".join(phrase) + '"'


class ProjectionChanged(Contention):
    """A projection changed or proved inconsistent under a query: the query is run again (Engine.run)."""


class FtsTables:
    """One keyword projection's tables, and the version of them that what its parts keep in memory belongs to.

    ``loaded_at`` is the state's data version the parts were loaded at (None: forgotten, loaded again at the
    next use); ``rows_version`` is bumped whenever the in-memory rows change (a reload, a write of its own), and
    everything derived from the rows is kept with the ``rows_version`` it is of.
    """

    def __init__(self, state: StateDB, family: str, suffix: str = "root") -> None:
        self.state = state
        self.key = f"{family}_{suffix}"
        self.fts = f"{family}_fts_v1_{suffix}"
        self.rows = f"{family}_rows_v1_{suffix}"
        self.vocab = f"{self.fts}_instance"
        self.text = f"{self.fts}_text"  # rowid, title, aliases, body (zlib), size (bytes of the body)
        self.view = f"{self.fts}_view"  # the text inflated: the FTS5 table's external content
        self.loaded_at: int | None = None
        self.rows_version = 0
        self.synced: Mapping[str, str] | None = None  # the desired map the rows were last brought to
        self.synced_version: int | None = None  # ... at this version of it (the engine patches it in place)
        self.damaged = False  # set when a query found the tables inconsistent: rebuilt by the next ensure()
        self.rebuilt_for_disagreement = False  # the last rebuild was for a score that disagreed with the rows

    @property
    def conn(self) -> sqlite3.Connection:
        return self.state.conn

    def invalidate(self) -> None:
        """Forget what is loaded (after a rollback or a failure): it is loaded again at the next use."""
        self.loaded_at = None
        self.synced = None

    def check_current(self) -> None:
        """Refuse to read rows of another version than the loaded one (another process wrote since it was loaded,
        or it was forgotten): the query runs again (``ProjectionChanged``), on the projection loaded again."""
        if self.loaded_at is None or self.state.data_version() != self.loaded_at:
            self.invalidate()
            raise ProjectionChanged(f"{self.rows} changed since the query began")

    def disagreement(self) -> Exception:
        """What to raise when the FTS5 index disagrees with the rows table (a score no row count solves)."""
        # the query reads one transaction, so the tables cannot have changed under the loaded rows:
        # they disagree with themselves (the rows table and the FTS5 index); rebuild, then run again,
        # once: a projection rebuilt for this reason that still disagrees is reported, not rebuilt forever
        self.invalidate()
        if self.rebuilt_for_disagreement:
            self.rebuilt_for_disagreement = False
            return sqlite3.DatabaseError(f"{self.fts} disagrees with {self.rows} even after a rebuild")
        self.damaged = self.rebuilt_for_disagreement = True
        return ProjectionChanged(f"{self.fts} disagrees with {self.rows}; rebuilt and run again")

    def scored_sql(self, tail: str = "") -> str:
        """``SELECT rowid, score`` (``bm25()`` with ``WEIGHTS``) of the rows matching ``?``, then ``tail``."""
        w = WEIGHTS
        return (
            f"SELECT rowid, bm25({self.fts}, {w['title']}, {w['aliases']}, {w['body']}) AS score "
            f"FROM {self.fts} WHERE {self.fts} MATCH ?{tail}"
        )


def columns(rows: list[tuple[int, float]]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """(bm25 values, rowids) of ``SELECT rowid, bm25(...)`` rows (rowids are exact as doubles up to 2**53)."""
    import numpy as np

    flat = np.fromiter(itertools.chain.from_iterable(rows), np.float64, 2 * len(rows)).reshape(-1, 2)
    return flat[:, 1].copy(), flat[:, 0].astype(np.int64)


def fts5_varints(blob: bytes) -> list[int]:
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
