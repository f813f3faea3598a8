"""The snapshot's tables as Parquet files, for an analysis that outgrows one process (DuckDB, Spark).

``export_snapshot(snap, store_name, folder)`` writes four files into ``folder``:

- ``records.parquet``: one row per valid record (authored status and effective lifecycle,
  availability, the structured fields; lists stay lists);
- ``dates.parquet``: one row per record and date field (the value as authored, whether it is a
  date, and the UTC instants it spans);
- ``chains.parquet``: one row per superseded record: where its supersession chain leads, or why
  it leads nowhere, and the records on the way;
- ``coverage_issues.parquet``: one row per coverage issue.

Every row carries the store's name (``store``), so the tables of several stores can be stacked or
joined; each file's metadata holds the snapshot token and the instant the snapshot was judged at.
pyarrow is an optional dependency (``pip install knowtk[export]``), imported only here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowtk.errors import InvalidArgument, MissingDependency
from knowtk.model.datevalues import format_utc
from knowtk.snapshot.model import Snapshot

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["FORMATS", "TABLES", "export_snapshot"]

FORMATS = ("parquet",)
TABLES = ("records", "dates", "chains", "coverage_issues")


def _schemas(pa: Any) -> dict[str, pa.Schema]:
    text, when, strings = pa.string(), pa.timestamp("us", tz="UTC"), pa.list_(pa.string())
    return {
        "records": pa.schema(
            [
                ("store", text),
                ("id", text),
                ("path", text),
                ("sha256", text),
                ("kind", text),
                ("type", text),
                ("title", text),
                ("summary", text),
                ("status", text),
                ("lifecycle", text),
                ("available", pa.bool_()),
                ("unavailable_reason", text),
                ("superseded_by", text),
                ("revision", pa.int64()),
                ("aliases", strings),
                ("tags", strings),
                ("entities", strings),
                ("depends_on", strings),
                ("owner", text),
                ("author", text),
                ("origin", text),
                ("source", text),
                ("category", text),
                ("from_id", text),
                ("to_id", text),
                ("relation", text),
                ("expires_at", when),
            ]
        ),
        "dates": pa.schema(
            [
                ("store", text),
                ("id", text),
                ("field", text),
                ("value", text),
                ("date_only", pa.bool_()),
                ("start", when),
                ("end", when),
            ]
        ),
        "chains": pa.schema(
            [
                ("store", text),
                ("id", text),
                ("current", text),
                ("reason", text),
                ("via", strings),
                ("length", pa.int64()),
            ]
        ),
        "coverage_issues": pa.schema(
            [("store", text), ("path", text), ("id", text), ("code", text), ("message", text)]
        ),
    }


def _record_rows(snap: Snapshot, store: str) -> list[dict[str, Any]]:
    rows = []
    for rid in sorted(snap.records):
        r = snap.records[rid]
        why = snap.unavailable.get(rid)
        rows.append(
            {
                "store": store,
                "id": rid,
                "path": r.path,
                "sha256": r.sha256,
                "kind": r.kind,
                "type": r.type,
                "title": r.title,
                "summary": r.summary,
                "status": r.status,
                "lifecycle": snap.lifecycle.get(rid),
                "available": why is None,
                "unavailable_reason": None if why is None else why[0],
                "superseded_by": snap.superseded_by.get(rid),
                "revision": r.revision,
                "aliases": list(r.aliases),
                "tags": list(r.tags),
                "entities": list(r.entities),
                "depends_on": list(r.depends_on),
                "owner": r.owner,
                "author": r.author,
                "origin": r.origin,
                "source": r.source,
                "category": r.category,
                "from_id": r.from_id,
                "to_id": r.to_id,
                "relation": r.relation,
                "expires_at": None if r.expires_at is None else r.expires_at.start,
            }
        )
    return rows


def _date_rows(snap: Snapshot, store: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for rid in sorted(snap.records):
        for name, d in sorted(snap.records[rid].dates.items()):
            rows.append({"store": store, "id": rid, "field": name, "value": d.text, "date_only": d.date_only})
            rows[-1].update(start=d.start, end=d.end)
    return rows


def _tables(snap: Snapshot, store: str) -> dict[str, list[dict[str, Any]]]:
    chains: list[dict[str, Any]] = []
    for rid, end in sorted(snap.chain_ends.items()):
        chains.append({"store": store, "id": rid, "current": end.current, "reason": end.reason})
        chains[-1].update(via=list(end.via), length=len(end.via))
    issues = [{"store": store, **issue.to_json()} for issue in snap.issues]
    return {
        "records": _record_rows(snap, store),
        "dates": _date_rows(snap, store),
        "chains": chains,
        "coverage_issues": issues,
    }


def export_snapshot(snap: Snapshot, store: str, folder: str | os.PathLike[str], fmt: str) -> dict[str, Path]:
    """Write the snapshot's tables into folder (created if missing); table name -> file written."""
    if fmt not in FORMATS:
        raise InvalidArgument("format", f"{fmt!r} is not an export format", allowed=FORMATS, value=fmt)
    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise InvalidArgument("path", f"{target} exists and is not a folder", allowed="a folder, new or existing")
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingDependency("pyarrow", "export", str(exc)) from exc
    target.mkdir(parents=True, exist_ok=True)
    schemas = _schemas(pa)
    meta = {"knowtk.store": store, "knowtk.snapshot": snap.fingerprint(())}
    meta["knowtk.evaluated_at"] = format_utc(snap.evaluated_at)
    written = {}
    for name, rows in _tables(snap, store).items():
        schema = schemas[name].with_metadata(meta)
        table = pa.Table.from_pylist(rows, schema=schema)
        path = target / f"{name}.parquet"
        partial = target / f".{name}.parquet.partial"
        pq.write_table(table, partial)
        os.replace(partial, path)  # a reader never sees half a file
        written[name] = path
    return written
