"""The text of a keyword projection's rows read back: title, aliases and body, and their highlighted matches.

Bodies are stored deflated (``knowtk.index.fts_storage``); a body over a limit is read as its opening alone,
and is not highlighted (highlight() re-tokenizes a whole column), so a huge file costs no more than its start.
"""

from __future__ import annotations

from collections.abc import Iterable

from knowtk.index.fts_tables import (
    COLUMNS,
    HIGHLIGHT_CLOSE,
    HIGHLIGHT_OPEN,
    TOKENIZER,
    FtsTables,
    QueryTerms,
    quoted_phrase,
)
from knowtk.state import inflate, inflate_opening

__all__ = ["OPENING_CHARS", "RowTexts"]

OPENING_CHARS = 4096  # what texts() keeps of a body over its limit: enough for an opening excerpt


class RowTexts:
    """Reads the rows' texts, remembering which bodies are large (and their openings) until the rows change."""

    def __init__(self, tables: FtsTables) -> None:
        self.tables = tables
        self.sizes_key: tuple[int, int] | None = None  # (rows_version, body_limit) of the two below
        self.sizes: dict[int, int] = {}  # rowid -> bytes of its body
        self.openings: dict[int, str] = {}  # rowid -> opening of a body over the limit

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
            sql = f"SELECT rowid, title, aliases, body FROM {self.tables.text} WHERE rowid IN ({marks})"
            out = {row[0]: (row[1], row[2], inflate(row[3])) for row in self.tables.conn.execute(sql, small)}
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
            cols = ", ".join(f"highlight({self.tables.fts}, {i}, ?, ?)" for i in range(len(COLUMNS)))
            sql = f"SELECT rowid, {cols} FROM {self.tables.fts} WHERE {self.tables.fts} MATCH ? AND rowid IN ({marks})"
            params = [HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE] * len(COLUMNS) + [terms.expression, *small]
            out = {row[0]: (row[1], row[2], row[3]) for row in self.tables.conn.execute(sql, params)}
        if large:
            heads = self._heads(large)
            conn = self.tables.conn
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.knowtk_heads "
                f"USING fts5(title, aliases, tokenize='{TOKENIZER}')"
            )
            conn.execute("DELETE FROM temp.knowtk_heads")
            conn.executemany(
                "INSERT INTO temp.knowtk_heads (rowid, title, aliases) VALUES (?, ?, ?)",
                ((rowid, *head) for rowid, head in heads.items()),
            )
            any_phrase = " OR ".join(quoted_phrase(p) for p in terms.phrases)
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
        if self.sizes_key != (self.tables.rows_version, body_limit):
            self.sizes_key, self.sizes, self.openings = (self.tables.rows_version, body_limit), {}, {}
        unknown = [r for r in rowids if r not in self.sizes]
        for i in range(0, len(unknown), 500):
            chunk = unknown[i : i + 500]
            marks = ",".join("?" * len(chunk))
            sql = (
                f"SELECT rowid, size, CASE WHEN size > ? THEN body END FROM {self.tables.text} WHERE rowid IN ({marks})"
            )
            for rowid, size, body in self.tables.conn.execute(sql, [body_limit, *chunk]):
                self.sizes[rowid] = size or 0
                if body is not None:  # only the opening is inflated
                    self.openings[rowid] = inflate_opening(body, OPENING_CHARS)
        return {r: self.openings[r] for r in rowids if self.sizes.get(r, 0) > body_limit}

    def _heads(self, rowids: Iterable[int]) -> dict[int, tuple[str, str]]:
        """Title and aliases of these rows, read without the body (the text table's first columns)."""
        rowids = list(rowids)
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        sql = f"SELECT rowid, title, aliases FROM {self.tables.text} WHERE rowid IN ({marks})"
        return {row[0]: (row[1], row[2]) for row in self.tables.conn.execute(sql, rowids)}
