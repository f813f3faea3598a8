"""Arrays and sums over a keyword projection's rows for scoring: tokens by rowid, masks and sums of row sets.

Everything here is kept with the ``rows_version`` it is of; a set of rows (a filter's) is keyed by the set
object itself, which the caller keeps per snapshot (``knowtk.index.filtered``), so the next query with that
filter reuses what was made for it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, cast

from knowtk.index.among import Among, rows_among
from knowtk.index.fts_tables import FtsTables
from knowtk.index.row_changes import MEMO_ENTRIES
from knowtk.index.rowmap import Rowmaps
from knowtk.index.stored_rows import StoredRows

if TYPE_CHECKING:  # numpy is imported by the scoring that needs arrays, not with the projection (a CLI grep)
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["RowArrays"]


class RowArrays:
    """Tokens per row as an array, and what is derived from a set of rows (a mask, ``Among``, its tokens)."""

    def __init__(self, tables: FtsTables, stored_rows: StoredRows, tokens: Mapping[int, int], rowmaps: Rowmaps):
        self.tables, self.stored_rows, self.tokens, self.rowmaps = tables, stored_rows, tokens, rowmaps
        self.cache: dict[Hashable, Any] = {}  # "tokens" and (what, id(set)) -> (rows_version, [set,] value)

    def patch_tokens(self, deleted: list[int], inserted: range, sizes: Mapping[int, int]) -> None:
        """Patch the tokens array across a reconcile (the rows version is bumped already), when it was of the rows
        just before it."""
        rows_version = self.tables.rows_version
        cached = self.cache.get("tokens")
        if cached is not None and cached[0] == rows_version - 1:
            import numpy as np

            array = cached[1]
            top = max(inserted, default=0) + 1
            array = np.concatenate([array, np.full(top - len(array), -1.0)]) if top > len(array) else array.copy()
            array[np.array(deleted, dtype=np.int64)] = -1.0
            array[np.array(inserted, dtype=np.int64)] = [float(sizes[r]) for r in inserted]
            self.cache = {"tokens": (rows_version, array)}

    def token_array(self) -> NDArray[np.float64]:
        """Tokens per row indexed by rowid (-1 where no row), as floats: kept until the rows change. Made from the
        rowmap where the rows are not read whole (reading them whole cost a new process ~200 ms at 300k)."""
        cached = self.cache.get("tokens")
        rows_version = self.tables.rows_version
        if cached is None or cached[0] != rows_version:
            import numpy as np

            found = None if self.stored_rows.whole else self._token_array_by_rowmap()
            if found is not None:
                self.cache["tokens"] = (rows_version, found)
                return found
            tokens = self.tokens
            size = max(tokens, default=0) + 1
            sizes = np.full(size, -1.0)
            if tokens:
                sizes[np.fromiter(tokens.keys(), np.int64, len(tokens))] = np.fromiter(
                    tokens.values(), np.float64, len(tokens)
                )
            cached = self.cache["tokens"] = (rows_version, sizes)
        return cached[1]

    def _token_array_by_rowmap(self) -> NDArray[np.float64] | None:
        """``token_array`` from the rowmap: the build's rows, less those changed since, and the rows newer."""
        import numpy as np

        rowmap = self.rowmaps.any_rowmap()
        if rowmap is None:
            return None
        rowids = np.frombuffer(rowmap.rowids, dtype=np.int32).astype(np.int64)
        if rowids.max(initial=0) > rowmap.top:
            return None  # (a damaged rowmap: a rowid no build wrote)
        tokens = np.frombuffer(rowmap.tokens, dtype=np.int32).astype(np.float64)
        held = rowids > 0
        if rowmap.changed:
            held &= ~np.isin(rowids, np.fromiter(rowmap.changed, np.int64, len(rowmap.changed)))
        newer = list(rowmap.newer)
        self.stored_rows.prefetch(newer)
        top = max(int(rowids[held].max(initial=0)), max(newer, default=0))
        sizes = np.full(top + 1, -1.0)
        sizes[rowids[held]] = tokens[held]
        if newer:
            sizes[np.array(newer, dtype=np.int64)] = [float(self.tokens[rowid]) for rowid in newer]
        return sizes

    def allowed_mask(self, allowed: set[int]) -> NDArray[np.bool_]:
        """A boolean array over rowids: True for the allowed rows (kept while the same set object is asked)."""
        key = id(allowed)
        cached = self.cache.get(key)
        if cached is None or cached[1] is not allowed or cached[0] != self.tables.rows_version:
            import numpy as np

            mask = np.zeros(len(self.token_array()), dtype=bool)
            if allowed:
                mask[np.fromiter(allowed, np.int64, len(allowed))] = True
            if len(self.cache) > 2 * MEMO_ENTRIES:
                self.cache = {"tokens": self.cache["tokens"]}
            cached = self.cache[key] = (self.tables.rows_version, allowed, mask)
        return cached[2]

    def among(self, allowed: set[int]) -> Among:
        """``rows_among(allowed)``, kept while the same set object is asked: a filter's rows are kept per snapshot
        (``knowtk.index.filtered``), so the next query with that filter reuses their JSON array."""
        return self._per_set("among", allowed, rows_among)

    def tokens_in(self, allowed: set[int]) -> int:
        """Tokens in the allowed rows (-1 where no row is held, as ``allowed_tokens`` sums them), kept while the
        same set object is asked: summed in plain Python where the rows are read whole, else by SQLite over the
        rows' ranges (``among``; a new process's first filter need not read the rows table whole)."""
        tokens, stored_rows, rows_table = self.tokens, self.stored_rows, self.tables.rows

        def summed(rows: set[int]) -> int:
            if not stored_rows.whole and rows:
                among = self.among(rows)
                count, total = stored_rows.select_one(
                    f"SELECT count(*), total(tokens) FROM {rows_table} WHERE {among.clause}", *among.params
                )
                if count == len(rows):  # (else a row is missing: summed as the rows are held, -1 each)
                    return int(total)
            return sum(map(tokens.get, rows, itertools.repeat(-1)))

        return cast(int, self._per_set("tokens_in", allowed, summed))

    def know_tokens_in(self, allowed: set[int], total: int) -> None:
        """``tokens_in(allowed)`` is ``total`` (summed by the caller from the rowmap), kept as it keeps its own."""
        self._per_set("tokens_in", allowed, lambda rows: total)

    def _per_set(self, name: str, allowed: set[int], make: Callable[[set[int]], Any]) -> Any:
        """What ``make`` derives from a set of rows, kept for this very set object and the rows as they are."""
        key = (name, id(allowed))
        cached = self.cache.get(key)
        if cached is None or cached[1] is not allowed or cached[0] != self.tables.rows_version:
            if len(self.cache) > 2 * MEMO_ENTRIES:
                self.cache = {"tokens": self.cache["tokens"]} if "tokens" in self.cache else {}
            cached = self.cache[key] = (self.tables.rows_version, allowed, make(allowed))
        return cached[2]

    def allowed_tokens(self, allowed: set[int]) -> int:
        """Tokens in the allowed rows (the filtered corpus length)."""
        return int(self.token_array()[self.allowed_mask(allowed)].sum())
