"""The embedding cache of ``knowl_query``: one vector per record, kept in state.sqlite.

``knowl_embeddings_v1`` is a projection, like the keyword tables: rows keyed by
``(model, id)``, each holding the sha256 of the file its vector was computed
from and the vector as little-endian float32 (``knowtk.index.semantic.pack``).
``EmbeddingCache.reconcile`` brings one model's rows to a desired
``{id: sha256}`` set: it embeds only the records that are new or whose hash
changed, drops the rows of records that left, and drops every other model's
rows (a cache serves the one model in use). A missing table is recreated and a
row of the wrong size is re-embedded, so deleting the table costs one
re-embedding, never a record.

The model name is the embedder's (it includes the package version) plus
``TEXT_RECIPE``, so a new model or a new way of building the text invalidates
the cache by itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING

from knowtk.index.projection import Findings, Runner, register
from knowtk.index.semantic import Embedder, pack
from knowtk.snapshot.model import Snapshot
from knowtk.state import Contention, StateDB

if TYPE_CHECKING:  # numpy is imported when vectors are read or made, not with knowtk
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["NAME", "TABLE", "TEXT_RECIPE", "EmbeddingCache", "embedding_text"]

NAME = "knowl_embeddings"  # the cache's key in Engine.extensions
TABLE = "knowl_embeddings_v1"
TEXT_RECIPE = "title-aliases-plainbody-v1"
_BATCH = 256  # texts per embed() call: bounds the memory of a first full embedding
_MARKUP = re.compile(r"[#*_`>|~]+|\]\([^)]*\)|[\[\]]")


def embedding_text(title: str, aliases: str, body: str) -> str:
    """What a record's vector is computed from: title, aliases and body, without Markdown markup.

    Markup characters and link targets are tokens too, and would pull every record towards
    every other one (docs/semantic-notes.md).
    """
    return "\n".join(part for part in (title, aliases, _MARKUP.sub(" ", body)) if part)


class EmbeddingCache:
    """The vectors of one store's records, mirrored in memory and persisted in ``knowl_embeddings_v1``."""

    def __init__(self, state: StateDB) -> None:
        self.state = state
        self.model: str | None = None
        self._rows: dict[str, tuple[str, NDArray[np.float32]]] = {}  # id -> (sha256, vector)
        self._version: int | None = None
        self.embedded = 0  # records embedded by the last reconcile
        self._synced: Hashable | None = None  # the key of the desired set the rows last matched
        # every vector stacked in one matrix (the rows' arrays are views of it), with each row's id
        # (None: a record that left) and the rank of that id in sorted order; None: stacked at the next use
        self._matrix: tuple[NDArray[np.float32], list[str | None], NDArray[np.int64]] | None = None
        self._row_of: dict[str, int] = {}

    def invalidate(self) -> None:
        """Forget the mirror (after a rollback): loaded again at the next use."""
        self._version = None
        self._synced = None

    def take_repairs(self) -> list[str]:
        """Nothing: a query re-embeds a missing or broken vector without calling it a repair."""
        return []

    def check(self, snap: Snapshot, run: Runner) -> Findings:
        """Drop the broken vectors (of no float32 size): the next knowl_query embeds those records again."""
        out = Findings()
        if not self.state.table_exists(TABLE):
            return out
        broken = f"FROM {TABLE} WHERE length(vector) = 0 OR length(vector) % 4 != 0"
        bad = self.state.conn.execute(f"SELECT count(*) {broken}").fetchone()[0]
        if bad:
            out.found.append(f"{TABLE} holds {bad} broken vectors")
            with self.state.transaction() as conn:
                conn.execute(f"DELETE {broken}")
            self.invalidate()
            out.repaired.append(f"{bad} broken vectors dropped (re-embedded by the next knowl_query)")
        return out

    def _load(self, model: str, dim: int) -> None:
        import numpy as np

        conn = self.state.conn
        if not self.state.table_exists(TABLE):
            with self.state.transaction():
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {TABLE} (model TEXT NOT NULL, id TEXT NOT NULL, "
                    "sha256 TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, id))"
                )
        self._rows = {}
        for rid, sha, blob in conn.execute(f"SELECT id, sha256, vector FROM {TABLE} WHERE model = ?", (model,)):
            if len(blob) == 4 * dim:  # another size is a broken row: re-embedded below
                self._rows[rid] = (sha, np.frombuffer(blob, dtype="<f4").astype(np.float32))
        self.model = model
        self._version = self.state.data_version()
        self._synced, self._matrix, self._row_of = None, None, {}

    def reconcile(
        self,
        embedder: Embedder,
        desired: Mapping[str, str],
        texts: Callable[[list[str]], Mapping[str, str]],
    ) -> dict[str, NDArray[np.float32]]:
        """The vector of every desired record (``{id: sha256}``), embedding only the new and changed ones.

        ``texts(ids)`` gives the text of those ids (see ``embedding_text``); an id it leaves out is
        skipped this time (its file changed again since the scan) and has no vector.
        """
        self._sync(embedder, lambda: desired, texts, None)
        return {rid: self._rows[rid][1] for rid in desired if rid in self._rows}

    def similarities(
        self,
        embedder: Embedder,
        desired: Callable[[], Mapping[str, str]],
        texts: Callable[[list[str]], Mapping[str, str]],
        vector: NDArray[np.float32],
        *,
        key: Hashable | None = None,
    ) -> tuple[NDArray[np.float32], list[str | None], NDArray[np.int64], dict[str, int]]:
        """The cosine of every kept vector with ``vector`` (both L2-normalised), after ``reconcile``.

        ``desired`` gives the ``{id: sha256}`` set (called only when it must be compared). Returns
        (cosines by row, the id of each row or None for a row no longer desired, each row's id rank
        in sorted order, id -> row). ``key`` names the desired set (it changes whenever the
        set does): while it and the table stay the same, the set is not compared again, and the
        stacked vectors are kept, so a warm query costs one matrix-vector product.
        """
        self._sync(embedder, desired, texts, key)
        matrix, ids, ranks = self._stacked(len(vector))
        return matrix @ vector, ids, ranks, self._row_of

    def _stacked(self, dim: int) -> tuple[NDArray[np.float32], list[str | None], NDArray[np.int64]]:
        import numpy as np

        if self._matrix is None:
            ids: list[str | None] = list(self._rows)
            matrix = np.empty((len(ids), dim), dtype=np.float32)
            for i, rid in enumerate(ids):
                assert rid is not None
                sha, vec = self._rows[rid]
                matrix[i] = vec
                self._rows[rid] = (sha, matrix[i])  # a view: the vectors are held once
            order = sorted(range(len(ids)), key=lambda i: ids[i] or "")
            ranks = np.empty(len(ids), dtype=np.int64)
            ranks[order] = np.arange(len(ids), dtype=np.int64)
            self._matrix = (matrix, ids, ranks)
            self._row_of = {rid: i for i, rid in enumerate(ids) if rid is not None}
        return self._matrix

    def _sync(
        self,
        embedder: Embedder,
        wanted: Callable[[], Mapping[str, str]],
        texts: Callable[[list[str]], Mapping[str, str]],
        key: Hashable | None,
    ) -> None:
        model = f"{embedder.name}#{TEXT_RECIPE}"
        with self.state.reading():
            if model != self.model or self._version != self.state.data_version():
                self._load(model, embedder.dim)
        if key is not None and key == self._synced:
            return
        desired = wanted()
        stale = [rid for rid, (sha, _) in self._rows.items() if desired.get(rid) != sha]
        fresh = [rid for rid, sha in desired.items() if rid not in self._rows or self._rows[rid][0] != sha]
        import numpy as np

        computed: list[tuple[str, str, NDArray[np.float32]]] = []
        for start in range(0, len(fresh), _BATCH):
            found = texts(fresh[start : start + _BATCH])
            ids = [rid for rid in fresh[start : start + _BATCH] if rid in found]
            vectors = embedder.embed([found[rid] for rid in ids]) if ids else []
            computed.extend(
                (rid, desired[rid], np.asarray(v, dtype=np.float32)) for rid, v in zip(ids, vectors, strict=True)
            )
        self.embedded = len(computed)
        if stale or computed or self._has_other_models(model):
            with self.state.transaction() as conn:
                if self.state.data_version() != self._version:
                    raise Contention(f"{TABLE} changed before it could be written")
                conn.execute(f"DELETE FROM {TABLE} WHERE model != ?", (model,))
                conn.executemany(f"DELETE FROM {TABLE} WHERE model = ? AND id = ?", [(model, r) for r in stale])
                conn.executemany(
                    f"INSERT OR REPLACE INTO {TABLE} (model, id, sha256, vector) VALUES (?, ?, ?, ?)",
                    [(model, rid, sha, pack(vec.tolist())) for rid, sha, vec in computed],
                )
            self._patch(stale, computed)
        self._synced = key if len(computed) == len(fresh) else None  # an id skipped is tried again next time

    def _patch(self, stale: list[str], computed: list[tuple[str, str, NDArray[np.float32]]]) -> None:
        """Apply a reconcile to the rows and the stacked matrix (rewritten in place while no id is new)."""
        redone = {rid for rid, _, _ in computed}
        for rid in stale:
            del self._rows[rid]
            if rid in redone:
                continue  # its row is overwritten below
            row = self._row_of.pop(rid, None)
            if row is not None and self._matrix is not None:
                self._matrix[1][row] = None
        for rid, sha, vec in computed:
            row = self._row_of.get(rid)
            if row is not None and self._matrix is not None:
                self._matrix[0][row] = vec
                self._matrix[1][row] = rid
                self._rows[rid] = (sha, self._matrix[0][row])
            else:
                self._rows[rid] = (sha, vec)
                self._matrix = None

    def _has_other_models(self, model: str) -> bool:
        row = self.state.conn.execute(f"SELECT 1 FROM {TABLE} WHERE model != ? LIMIT 1", (model,)).fetchone()
        return row is not None


register(NAME, EmbeddingCache)
