"""The expired keyword projection: the records unavailable today only because an expiry passed.

The main and history projections hold the available records (``knowtk.engine.desired``). A record whose
``expires_at`` has passed, or that rests on one that has, is unavailable today yet was in force before: a search
at an earlier instant (``validAt``, ``knowtk.query.grep_valid``) must find it, ranked with the same BM25 as the
others. It gets a third projection of the same kind (``keyword_expired``), with the same tables and scoring, so
that a ranking at an instant takes its rows as one more source beside main and history and the BM25 statistics
are those of every record in force then, wherever it is kept.

Unlike main and history it is brought up to date only when a search at an instant asks for it, never by a
query without ``validAt`` (whose path stays as it was), and its tables are made only once a record expired: a
store without one has no such tables and its searches at an instant look at nothing more. Real stores hold
few expired records, so its desired map is derived whole from the snapshot's few unavailable records at each
new snapshot, and compared whole with the rows.
"""

from __future__ import annotations

from collections.abc import Callable

from knowtk.index.fts import FtsProjection
from knowtk.snapshot.model import Snapshot
from knowtk.state import StateDB

__all__ = ["EXPIRED_FAMILY", "ExpiredKeyword", "expired_since"]

EXPIRED_FAMILY = "keyword_expired"  # its tables: keyword_expired_fts_v1_root, keyword_expired_rows_v1_root, ...
_EVER_IN_FORCE = ("active", "superseded")  # today's lifecycles of a record that may have been in force


def expired_since(snap: Snapshot) -> dict[str, str]:
    """{id: sha256} of the records unavailable today only because an expiry passed (their own or a dependency's)
    and not withdrawn: those a record may have been in force before that neither main nor history holds."""
    if not snap.expired:  # nothing expired: nothing is unavailable because of it (no pass at all)
        return {}
    inactive, lifecycle = snap.unavailable_inactive, snap.lifecycle
    sha256_of = snap.sha256_lookup()
    out = {}
    for rid in snap.unavailable:
        if rid not in inactive and lifecycle.get(rid) in _EVER_IN_FORCE:
            sha = sha256_of(rid)
            if sha is not None:
                out[rid] = sha
    return out


class ExpiredKeyword:
    """The expired projection of one engine: its desired map for the last snapshot asked, and its tables."""

    def __init__(self, state: StateDB) -> None:
        self.state = state
        self.projection = FtsProjection(state, EXPIRED_FAMILY)
        self._desired: tuple[int, int, dict[str, str]] | None = None  # (generation, id(snapshot), the map)
        self._version = 0  # bumped at every new map: reconcile's identity check (``FtsProjection.reconcile``)
        self._exists: bool | None = None  # whether its tables exist (None: not looked at by this process)

    def desired(self, snap: Snapshot) -> dict[str, str]:
        """The records it must hold at ``snap`` (one map per snapshot: reconciling it again costs nothing)."""
        kept = self._desired
        if kept is not None and kept[0] == snap.generation and kept[1] == id(snap):
            return kept[2]
        found = expired_since(snap)
        self._version += 1
        self._desired = (snap.generation, id(snap), found)
        return found

    def made(self) -> bool:
        """Whether its tables exist (looked up once; then known, since only ``reconciled`` makes them). For
        ``Store.check``: a search looks at nothing while no record is expired."""
        if self._exists is None:
            self._exists = self.state.table_exists(self.projection.rows)
        return self._exists

    def reconciled(self, snap: Snapshot, text_of: Callable[[str], tuple[str, str, str] | None]) -> FtsProjection | None:
        """The projection brought to ``snap``; None while no record of it is expired (nothing to search).

        Its tables are made by the first expired record. While none is, nothing is looked at, not even whether
        the tables exist: a process that used them empties them when its last expired record goes, and rows
        left by another process are never read (compared whole with the records at the next expired record,
        or emptied by ``Store.check``).
        """
        desired = self.desired(snap)
        if not desired and not self._exists:
            return None
        self.projection.reconcile(desired, text_of, version=self._version)
        self._exists = True
        return self.projection if desired else None

    def invalidate(self) -> None:
        """Forget what is held in memory (after a rollback): the tables too may be gone."""
        self.projection.invalidate()
        self._exists = None
