"""Supersession chains as a DataFrame of edges: what the chains picture and ``ChainWidget`` draw.

A chain is one connected group of ``superseded_by`` links: earlier records on the
left, on the right the record they resolve to or the nothing they end in. The
edges come from the snapshot every query reads (lifecycle after the safeguards,
availability, ``chain_ends``), so a chain drawn here is the path grep's
superseded-wording rule follows, and a dead end here is one grep returns nothing
for. There is no second reading of the files.

The frame has exactly the columns :func:`knowtk.notebook.chain_plot.plot_chains` reads (:data:`EDGE_COLUMNS`):

``chain`` (Int64)
    chain number, stable for a snapshot: chains are numbered by their smallest id, and one
    record's chain keeps the number it has in the whole-store frame.
``from_id``, ``from_title``, ``from_revision``, ``from_lifecycle``, ``from_date``
    the earlier record: an effectively superseded record.
``to_id``, ``to_title``, ``to_revision``, ``to_lifecycle``, ``to_date``
    the record it names in ``superseded_by``.
``cycle`` (boolean)
    the edge lies on a supersession cycle.
``chain_end`` (string)
    how the chain ends: ``current`` (an active, available record), ``withdrawn``, ``missing``
    (no valid record has the id), ``unavailable`` (expired, or a dependency missing or
    unavailable), ``cycle``, or ``unset`` (a superseded record naming no successor). When
    records of one chain end differently (an unavailable record part-way), the dead end wins.

Node lifecycles are ``active``, ``superseded``, ``withdrawn``, ``expired``, ``unavailable``
(available records show their lifecycle; unavailable ones why not) or ``missing``. Node dates
are the record's ``occurred_at``, else ``recorded_at``, else ``updated_at`` (UTC start).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Protocol

import pandas as pd

from knowtk.errors import RecordNotFound
from knowtk.frames import Column, build_frame
from knowtk.model.records import Record
from knowtk.snapshot.model import Snapshot

__all__ = ["CHAIN_ENDS", "EDGE_COLUMNS", "SnapshotSource", "chain_edges", "chain_summary"]

#: How a chain ends, dead ends in the order they are reported when one chain has several.
CHAIN_ENDS: tuple[str, ...] = ("withdrawn", "missing", "unavailable", "cycle", "unset", "current")
_DATE_ORDER = ("occurred_at", "recorded_at", "updated_at")

STRING, INT, BOOL, TIME = "string", "Int64", "boolean", "datetime64[ns, UTC]"
_NODE = (("id", STRING), ("title", STRING), ("revision", INT), ("lifecycle", STRING), ("date", TIME))


def _col(name: str, dtype: str) -> Column:
    return (name, dtype, lambda row: row.get(name))


_COLUMNS: list[Column] = [
    _col("chain", INT),
    *(_col(f"from_{name}", dtype) for name, dtype in _NODE),
    *(_col(f"to_{name}", dtype) for name, dtype in _NODE),
    _col("cycle", BOOL),
    _col("chain_end", STRING),
]
#: The edges frame's columns, in order.
EDGE_COLUMNS: tuple[str, ...] = tuple(name for name, _, _ in _COLUMNS)


class SnapshotSource(Protocol):
    """Where the chains are read from: anything with a current snapshot (``knowtk.Store``)."""

    def snapshot(self) -> Snapshot: ...


def _snapshot(source: SnapshotSource | Snapshot) -> Snapshot:
    return source if isinstance(source, Snapshot) else source.snapshot()


def node_lifecycle(snap: Snapshot, rid: str) -> str:
    """What a chain node is: its lifecycle when available, else why it is not (or ``missing``)."""
    if rid not in snap.records:
        return "missing"
    life = snap.lifecycle[rid]
    if life == "withdrawn":
        return "withdrawn"
    if rid in snap.expired:
        return "expired"
    if rid in snap.unavailable:
        return "unavailable"
    return life


def _date(r: Record) -> str | None:
    for name in _DATE_ORDER:
        value = r.dates.get(name)
        if value is not None:
            return value.start.isoformat()
    return None


def _node(snap: Snapshot, rid: str, side: str) -> dict[str, Any]:
    r = snap.records.get(rid)
    return {
        f"{side}_id": rid,
        f"{side}_title": r.title if r else None,
        f"{side}_revision": r.revision if r else None,
        f"{side}_lifecycle": node_lifecycle(snap, rid),
        f"{side}_date": _date(r) if r else None,
    }


def _links(snap: Snapshot) -> dict[str, str]:
    """earlier id -> the id it is superseded by, for every effectively superseded record that names one."""
    return {rid: by for rid, by in snap.superseded_by.items() if by and snap.lifecycle.get(rid) == "superseded"}


def _components(links: dict[str, str]) -> list[set[str]]:
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links.items():
        parent[find(a)] = find(b)
    groups: dict[str, set[str]] = defaultdict(set)
    for x in list(parent):
        groups[find(x)].add(x)
    return sorted(groups.values(), key=min)


def _on_cycle(links: dict[str, str]) -> set[str]:
    found: set[str] = set()
    done: set[str] = set()
    for start in links:
        path: list[str] = []
        position: dict[str, int] = {}
        x: str | None = start
        while x is not None and x not in done and x not in position:
            position[x] = len(path)
            path.append(x)
            x = links.get(x)
        if x is not None and x in position:
            found.update(path[position[x] :])
        done.update(path)
    return found


def _steps_to_end(rid: str, links: dict[str, str]) -> int:
    seen, x, n = {rid}, links.get(rid), 0
    while x is not None and x not in seen:
        seen.add(x)
        x, n = links.get(x), n + 1
    return n


def _chain_end(snap: Snapshot, members: set[str]) -> str:
    reasons = {snap.chain_ends[rid].reason for rid in members if rid in snap.chain_ends}
    return next((end for end in CHAIN_ENDS if end in reasons), "current")


def chain_edges(source: SnapshotSource | Snapshot, id: str | None = None) -> pd.DataFrame:
    """One row per superseded -> superseded_by edge of the store, or of the chain ``id`` belongs to.

    ``id`` may be any record of the chain, earlier or current, or a missing target that an earlier
    record names. A record outside every chain gives an empty frame; an id the store does not know
    at all raises :class:`~knowtk.RecordNotFound`.
    """
    snap = _snapshot(source)
    links = _links(snap)
    chains = _components(links)
    if id is not None:
        numbered = [(n, c) for n, c in enumerate(chains, 1) if id in c]
        if not numbered and id not in snap.records:
            raise RecordNotFound(id, f"no record and no supersession chain has id {id!r}")
    else:
        numbered = list(enumerate(chains, 1))
    cycle = _on_cycle(links)
    rows = []
    for number, members in numbered:
        end = _chain_end(snap, members)
        earlier = sorted((a for a in members if a in links), key=lambda a: (-_steps_to_end(a, links), a))
        for a in earlier:
            b = links[a]
            rows.append(
                {
                    "chain": number,
                    **_node(snap, a, "from"),
                    **_node(snap, b, "to"),
                    "cycle": a in cycle,
                    "chain_end": end,
                }
            )
    return build_frame(rows, _COLUMNS)


def chain_summary(edges: pd.DataFrame) -> pd.DataFrame:
    """One row per chain of an edges frame, dead ends first: how it ends, at what, and the path to it.

    Columns: ``chain``, ``chain_end``, ``records`` (how many), ``last`` (the record the chain ends
    at; NA for a cycle), ``last_lifecycle``, ``path`` (``a → b → c`` from each first record; a
    cycle is written from its smallest id back to itself).
    """
    out = []
    for number, group in edges.groupby("chain", sort=True):
        links = dict(zip(group["from_id"], group["to_id"], strict=True))
        sinks = sorted(set(links.values()) - set(links))
        firsts = sorted(set(links) - set(links.values())) or [min(links)]
        out.append(
            {
                "chain": number,
                "chain_end": group["chain_end"].iloc[0],
                "records": len(set(links) | set(links.values())),
                "last": sinks[0] if sinks else None,
                "last_lifecycle": group.loc[group["to_id"] == sinks[0], "to_lifecycle"].iloc[0] if sinks else None,
                "path": "; ".join(_path(first, links) for first in firsts),
            }
        )
    columns = (("chain", INT), ("chain_end", STRING), ("records", INT), ("last", STRING))
    frame = build_frame(out, [_col(n, t) for n, t in (*columns, ("last_lifecycle", STRING), ("path", STRING))])
    rank = {end: i for i, end in enumerate(CHAIN_ENDS)}
    return frame.sort_values(
        ["chain_end", "chain"], key=lambda col: col.map(rank) if col.name == "chain_end" else col, kind="stable"
    ).reset_index(drop=True)


def _path(first: str, links: dict[str, str]) -> str:
    steps, seen = [first], {first}
    while steps[-1] in links:
        nxt = links[steps[-1]]
        steps.append(nxt)
        if nxt in seen:
            break
        seen.add(nxt)
    return " → ".join(steps)
