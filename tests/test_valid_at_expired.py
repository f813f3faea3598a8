"""knowledge_grep at validAt finds the records in force then that have expired since (unavailable today), ranked
with the same BM25 as the others, from a keyword projection of their own (ExpiredKeyword, knowtk/engine/desired.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import knowtk
from tests.helpers import StoreBuilder, markdown_digest

AT = "2024-06-01"  # every record below but r-late is in force then (or superseded by then)
EXPIRED_ROWS = "keyword_expired_rows_v1_root"


def _rules(b: StoreBuilder, *, expires: bool) -> None:
    """Rules in force on AT; e-1 expired on 2024-12-31 (or never, without ``expires``), and what rests on it."""
    rule = {"kind": "claim", "type": "rule"}
    b.page("r-a", "Gpu budget rule", "The gpu budget is fixed for the year. Budget reviews are monthly.",
           path="rules/r-a.md", occurred_at="2024-01-01", **rule)  # fmt: skip
    b.page("r-b", "Travel rule", "The travel budget covers trains.", path="rules/r-b.md",
           occurred_at="2024-01-01", **rule)  # fmt: skip
    b.page("r-c", "Hiring rule", "Hiring needs two interviews.", path="rules/r-c.md", occurred_at="2024-01-01",
           **rule)  # fmt: skip
    b.page("r-late", "Later gpu rule", "A gpu budget rule from later.", path="rules/r-late.md",
           occurred_at="2025-01-01", **rule)  # fmt: skip
    b.page("e-1", "Gpu budget exception", "A temporary gpu budget exception for the lab: gpu gpu.",
           path="rules/e-1.md", occurred_at="2024-02-01",
           **({"expires_at": "2024-12-31"} if expires else {}), **rule)  # fmt: skip
    # superseded by e-1 before AT: its wording leads to e-1 then
    b.page("old", "Early quota", "The quota was eight cards.", path="rules/old.md", occurred_at="2023-01-01",
           status="superseded", superseded_by="e-1", **rule)  # fmt: skip
    # resting on e-1: unavailable today too when it expired, though it has no expires_at of its own
    b.page("dep", "Lab schedule", "The lab schedule follows the exception.", path="rules/dep.md",
           occurred_at="2024-03-01", depends_on=["e-1"], **rule)  # fmt: skip
    b.page("dep-old", "Lab roster", "The roster names the night shift.", path="rules/dep-old.md",
           occurred_at="2024-03-01", depends_on=["e-1"], status="superseded", superseded_by="r-new",
           **rule)  # fmt: skip
    b.page("r-new", "Lab rota", "The rota replaced it.", path="rules/r-new.md", occurred_at="2024-05-01",
           **rule)  # fmt: skip


def _pair(make_builder: Callable[[str], StoreBuilder]) -> tuple[knowtk.Store, knowtk.Store]:
    """The same records twice: e-1 expired since, and e-1 without expires_at (still in force today)."""
    stores = []
    for name, expires in (("expired", True), ("kept", False)):
        b = make_builder(name)
        _rules(b, expires=expires)
        stores.append(b.open())
    return stores[0], stores[1]


def _hits(store: knowtk.Store, query: str, **args: Any) -> list[tuple[str, float | None, str | None, str]]:
    res = store.call("knowledge_grep", {"query": query, **args})
    assert res["total"] == len(res["hits"]) or "limit" in args
    return [(h["id"], h["score"], h["via"] and h["via"]["id"], h["lifecycle"]) for h in res["hits"]]


def _tables(store: knowtk.Store) -> set[str]:
    return {n for (n,) in sqlite3.connect(store.state_path).execute("SELECT name FROM sqlite_master")}


def test_an_expired_record_scores_at_an_instant_as_if_it_had_never_expired(
    make_builder: Callable[[str], StoreBuilder],
) -> None:
    """At AT both stores hold the same records in force with the same texts, and BM25's statistics at an instant
    are those of the records in force then: every score is equal, not only e-1's. (Today they differ: e-1 is no
    part of the expired store's corpus.)"""
    expired, kept = _pair(make_builder)
    before = markdown_digest(expired.root)
    for query, args in (("gpu budget", {}), ("gpu budget", {"mode": "any"}), ("budget", {"lifecycle": "all"})):
        found = _hits(expired, query, validAt=AT, **args)
        assert "e-1" in [h[0] for h in found]
        assert found == _hits(kept, query, validAt=AT, **args)  # ids, order, the very same doubles
    at = _hits(expired, "gpu budget", validAt=AT)
    assert [h[0] for h in at] == ["e-1", "r-a"] and at[0][3] == "active"  # its lifecycle then
    # without validAt the expired record is no hit (it is unavailable today); in the other store it is
    assert sorted(h[0] for h in _hits(expired, "gpu budget")) == ["r-a", "r-late"]
    assert sorted(h[0] for h in _hits(kept, "gpu budget")) == ["e-1", "r-a", "r-late"]
    # after it expired: not in force, not a hit
    assert "e-1" not in [h[0] for h in _hits(expired, "gpu budget", validAt="2025-02-01")]
    assert markdown_digest(expired.root) == before


def test_superseded_wording_at_an_instant_leads_to_and_from_records_expired_since(
    make_builder: Callable[[str], StoreBuilder],
) -> None:
    expired, kept = _pair(make_builder)
    # old was superseded by e-1 before AT: its words lead to e-1, in force then
    assert _hits(expired, "quota cards", validAt=AT) == [("e-1", None, "old", "active")]
    assert _hits(expired, "quota cards", validAt=AT) == _hits(kept, "quota cards", validAt=AT)
    assert _hits(expired, "quota cards") == []  # today e-1 is unavailable: the wording leads nowhere
    # dep rests on e-1 (unavailable today, with it): in force then, found by its own words
    assert _hits(expired, "schedule", validAt=AT) == _hits(kept, "schedule", validAt=AT)
    assert [h[0] for h in _hits(expired, "schedule", validAt=AT)] == ["dep"] and _hits(expired, "schedule") == []
    # dep-old, superseded by then and resting on e-1: its words lead to r-new, and it is found as superseded then
    assert _hits(expired, "roster night", validAt=AT) == [("r-new", None, "dep-old", "active")]
    superseded = _hits(expired, "roster night", validAt=AT, lifecycle="superseded")
    assert [(h[0], h[3]) for h in superseded] == [("dep-old", "superseded")]
    assert superseded == _hits(kept, "roster night", validAt=AT, lifecycle="superseded")
    assert _hits(expired, "roster night") == []


def test_paging_and_total_count_records_expired_since(make_builder: Callable[[str], StoreBuilder]) -> None:
    expired, kept = _pair(make_builder)
    for store in (expired, kept):
        args = {"query": "budget lab", "mode": "any", "validAt": AT, "limit": 2}
        pages, offset, totals = [], 0, set()
        while offset is not None:
            page = store.call("knowledge_grep", {**args, "offset": offset})
            totals.add(page["total"])
            pages += [(h["id"], h["score"]) for h in page["hits"]]
            offset = page["nextOffset"]
        whole = store.call("knowledge_grep", {**args, "limit": 50})
        assert totals == {len(whole["hits"])} and pages == [(h["id"], h["score"]) for h in whole["hits"]]
        assert {"e-1", "dep"} <= {rid for rid, _ in pages}
    assert _hits(expired, "budget lab", mode="any", validAt=AT) == _hits(kept, "budget lab", mode="any", validAt=AT)
    # the filters judge it as any other record
    assert [h[0] for h in _hits(expired, "gpu", validAt=AT, scope="rules")] == ["e-1", "r-a"]
    assert _hits(expired, "gpu", validAt=AT, type="memo") == []
    assert [h[0] for h in _hits(expired, "gpu", validAt=AT, since="2024-01-15")] == ["e-1"]


def test_a_store_without_expired_records_pays_nothing(make_builder: Callable[[str], StoreBuilder]) -> None:
    expired, kept = _pair(make_builder)
    statements: list[str] = []
    kept.engine.state.conn.set_trace_callback(statements.append)
    res = kept.call("knowledge_grep", {"query": "gpu budget", "validAt": AT})
    assert res["unplaced"] == 0 and "unsearched" not in res  # nothing in force then is left unsearched
    assert EXPIRED_ROWS not in _tables(kept) and not [s for s in statements if "keyword_expired" in s]
    # a query without validAt never looks at the expired records, even where there are some
    statements.clear()
    expired.engine.state.conn.set_trace_callback(statements.append)
    assert sorted(h[0] for h in _hits(expired, "gpu budget")) == ["r-a", "r-late"]
    assert EXPIRED_ROWS not in _tables(expired) and not [s for s in statements if "keyword_expired" in s]
    expired.grep("gpu budget", valid_at=AT)  # the first search at an instant makes its tables
    assert EXPIRED_ROWS in _tables(expired)


def test_the_expired_projection_follows_the_files_persists_and_is_checked(builder: StoreBuilder) -> None:
    _rules(builder, expires=True)
    store = builder.open()
    first = _hits(store, "gpu budget", validAt=AT)
    rows = sqlite3.connect(store.state_path).execute(f"SELECT id FROM {EXPIRED_ROWS} ORDER BY id").fetchall()
    assert rows == [("dep",), ("dep-old",), ("e-1",)]
    assert store.check()["ok"] is True
    store.close()
    again = builder.open()  # a new process: the rows are read from state.sqlite, nothing written again
    assert _hits(again, "gpu budget", validAt=AT) == first
    assert again.engine.expired_keyword(again.engine.snapshot()) is not None
    # a damaged projection is found and rebuilt by check
    again.close()
    con = sqlite3.connect(builder.root / ".knowtk" / "state.sqlite")
    con.execute(f"DELETE FROM {EXPIRED_ROWS} WHERE id = 'e-1'")
    con.commit()
    con.close()
    checked = builder.open()
    report = checked.check()
    assert report["found"] and report["repaired"] and not report["unrepaired"]
    assert _hits(checked, "gpu budget", validAt=AT) == first
    # an edit moves a record in and out: e-1 no longer expiring is in the main projection, its rows gone from here
    builder.page("e-1", "Gpu budget exception", "A temporary gpu budget exception for the lab: gpu gpu.",
                 path="rules/e-1.md", occurred_at="2024-02-01", kind="claim", type="rule")  # fmt: skip
    assert _hits(checked, "gpu budget", validAt=AT) == first
    assert sorted(h[0] for h in _hits(checked, "gpu budget")) == ["e-1", "r-a", "r-late"]
    left = sqlite3.connect(checked.state_path).execute(f"SELECT count(*) FROM {EXPIRED_ROWS}").fetchone()
    assert left == (0,)  # nothing expired any more: no row kept
    builder.remove("rules/e-1.md")
    assert [h[0] for h in _hits(checked, "gpu budget", validAt=AT)] == ["r-a"]
