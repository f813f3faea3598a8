"""knowtk.query.chains (supersession chains as edges and a picture) and knowtk.query.explain (why is it (not) here?)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from pathlib import Path

import pandas as pd
import pytest
from matplotlib.patches import FancyArrowPatch

import knowtk
from knowtk.notebook.chain_plot import plot_chains
from knowtk.query.chains import EDGE_COLUMNS, chain_edges, chain_summary
from knowtk.query.explain import STATUSES, explain
from tests.helpers import StoreBuilder

pytestmark = pytest.mark.usefixtures("close_figures")

NUMBERED_CHAIN = ["dec-2025-012", "dec-2025-027", "dec-2026-008", "dec-2026-021"]


def chain_of(edges: pd.DataFrame, rid: str) -> pd.DataFrame:
    number = edges.loc[(edges["from_id"] == rid) | (edges["to_id"] == rid), "chain"].iloc[0]
    return edges[edges["chain"] == number]


# ---------------------------------------------------------------------------
# chains


def test_edges_follow_the_plots_column_spec_with_stable_dtypes(demo_store: knowtk.Store) -> None:
    edges = chain_edges(demo_store)
    assert tuple(edges.columns) == EDGE_COLUMNS
    assert list(EDGE_COLUMNS) == [
        "chain", "from_id", "from_title", "from_revision", "from_lifecycle", "from_date",
        "to_id", "to_title", "to_revision", "to_lifecycle", "to_date", "cycle", "chain_end",
    ]  # fmt: skip
    dtypes = {c: str(t) for c, t in edges.dtypes.items()}
    assert dtypes["chain"] == dtypes["from_revision"] == "Int64"
    assert dtypes["from_date"] == dtypes["to_date"] == "datetime64[ns, UTC]"
    assert dtypes["cycle"] == "boolean" and dtypes["chain_end"] == "string"
    empty = chain_edges(demo_store, "dec-2026-003").iloc[0:0]
    assert {c: str(t) for c, t in empty.dtypes.items()} == dtypes


def test_demo_chains_end_where_the_snapshot_says(demo_store: knowtk.Store) -> None:
    edges = chain_edges(demo_store)
    assert len(edges) == 13 and edges["chain"].nunique() == 7
    ends = {rid: chain_of(edges, rid)["chain_end"].iloc[0] for rid in ("dec-2026-021", "dec-2026-015", "dec-2026-099")}
    assert ends == {"dec-2026-021": "current", "dec-2026-015": "withdrawn", "dec-2026-099": "missing"}
    assert set(chain_of(edges, "lab-dec-005")["chain_end"]) == {"cycle"}
    assert edges.loc[edges["cycle"], "from_id"].tolist() == ["lab-dec-005", "lab-dec-006"]
    numbered = chain_of(edges, "dec-2026-021")
    assert numbered["from_id"].tolist() == NUMBERED_CHAIN[:-1]  # earliest first
    assert numbered["to_id"].tolist() == NUMBERED_CHAIN[1:]
    assert numbered["from_revision"].tolist() == [1, 2, 3] and numbered["to_revision"].tolist() == [2, 3, 4]
    assert numbered["to_lifecycle"].tolist() == ["superseded", "superseded", "active"]
    assert numbered["from_date"].iloc[0] == pd.Timestamp("2025-10-08", tz="UTC")  # occurred_at
    missing = edges[edges["to_id"] == "dec-2026-099"].iloc[0]
    assert missing["to_lifecycle"] == "missing"
    assert pd.isna(missing["to_title"]) and pd.isna(missing["to_revision"]) and pd.isna(missing["to_date"])
    withdrawn = edges[edges["to_id"] == "dec-2026-015"].iloc[0]
    assert withdrawn["to_lifecycle"] == "withdrawn" and withdrawn["to_title"].startswith("Delete raw recordings")


@pytest.mark.parametrize("rid", [*NUMBERED_CHAIN])
def test_one_records_chain_is_the_whole_chain_both_ways(demo_store: knowtk.Store, rid: str) -> None:
    whole = chain_edges(demo_store)
    one = chain_edges(demo_store, rid)
    expected = chain_of(whole, "dec-2026-021").reset_index(drop=True)
    pd.testing.assert_frame_equal(one.reset_index(drop=True), expected)  # same rows, same chain number


def test_chain_of_a_missing_target_a_loner_and_an_unknown_id(demo_store: knowtk.Store) -> None:
    assert chain_edges(demo_store, "dec-2026-099")["from_id"].tolist() == ["dec-2025-009", "dec-2025-030"]
    assert chain_edges(demo_store, "person-ada-okafor").empty  # a record outside every chain
    with pytest.raises(knowtk.RecordNotFound) as info:
        chain_edges(demo_store, "no-such-record")
    assert info.value.id == "no-such-record"
    assert chain_edges(demo_store.snapshot()).equals(chain_edges(demo_store))  # a Snapshot works as well as a Store


def test_merges_unavailable_steps_expiry_and_unset_successors(builder: StoreBuilder) -> None:
    builder.page("old-a", "Old A", status="superseded", superseded_by="new", occurred_at="2026-01-01")
    builder.page("old-b", "Old B", status="superseded", superseded_by="new")
    builder.page("new", "New", recorded_at="2026-02-03T10:00:00Z")
    builder.page("x1", "X1", status="superseded", superseded_by="x2")
    builder.page("x2", "X2", status="superseded", superseded_by="x3", depends_on=["ghost"])
    builder.page("x3", "X3")
    builder.page("e1", "E1", status="superseded", superseded_by="e2")
    builder.page("e2", "E2", expires_at="2020-01-01")
    builder.page("u1", "U1", status="superseded")  # names no successor: no edge to draw
    edges = chain_edges(builder.open())
    merged = chain_of(edges, "new")
    assert sorted(merged["from_id"]) == ["old-a", "old-b"] and set(merged["chain_end"]) == {"current"}
    assert merged["to_date"].iloc[0] == pd.Timestamp("2026-02-03T10:00:00Z")  # recorded_at when no occurred_at
    x = chain_of(edges, "x1")
    assert x.set_index("to_id")["to_lifecycle"].to_dict() == {"x2": "unavailable", "x3": "active"}
    assert set(x["chain_end"]) == {"unavailable"}  # x1 resolves to nothing, so the chain is a dead end
    e = chain_of(edges, "e1")
    assert e["to_lifecycle"].tolist() == ["expired"] and e["chain_end"].tolist() == ["unavailable"]
    assert "u1" not in set(edges["from_id"]) | set(edges["to_id"])
    summary = chain_summary(edges)
    assert summary["chain_end"].tolist() == ["unavailable", "unavailable", "current"]
    assert summary.set_index("last").loc["new", "path"] == "old-a → new; old-b → new"


def test_summary_puts_dead_ends_first_and_writes_the_path(demo_store: knowtk.Store) -> None:
    summary = chain_summary(chain_edges(demo_store))
    assert summary["chain_end"].tolist()[:3] == ["withdrawn", "missing", "cycle"]
    assert set(summary["chain_end"].tolist()[3:]) == {"current"}
    by_end = summary.set_index("chain_end")
    assert by_end.loc["missing", "path"] == "dec-2025-009 → dec-2025-030 → dec-2026-099"
    assert by_end.loc["cycle", "path"] == "lab-dec-005 → lab-dec-006 → lab-dec-005"
    assert pd.isna(by_end.loc["cycle", "last"])
    current = summary[summary["last"] == "dec-2026-021"].iloc[0]
    assert current["records"] == 4 and current["last_lifecycle"] == "active"


def test_plot_chains_draws_the_edges_it_reads(demo_store: knowtk.Store) -> None:
    edges = chain_edges(demo_store)
    ax = plot_chains(chain_edges(demo_store))
    arrows = sorted(str(p.get_gid()) for p in ax.patches if isinstance(p, FancyArrowPatch))
    assert arrows == sorted(f"edge:{c}:{a}->{b}" for c, a, b in edges[["chain", "from_id", "to_id"]].itertuples(False))
    markers = sorted(t.get_text() for t in ax.texts if str(t.get_gid()).startswith("end:"))
    assert markers == ["↻ cycle", "✕ missing", "✕ withdrawn"]
    one = plot_chains(chain_edges(demo_store, "dec-2026-021"), title="Supersession chain of dec-2026-021")
    assert one.get_title().startswith("Supersession chain of dec-2026-021")
    assert sum(isinstance(p, FancyArrowPatch) for p in one.patches) == 3


# ---------------------------------------------------------------------------
# explain: what grep returned


def test_a_hit_is_described_by_the_grep_hit_itself(demo_store: knowtk.Store) -> None:
    ex = demo_store.explain("dec-2026-021", query="vector index")
    frame = demo_store.grep("vector index").to_frame()
    assert ex["status"] == "hit" and ex["rule"] is None and ex["reasons"] == []
    assert ex["rank"] == frame.loc[frame["id"] == "dec-2026-021", "rank"].iloc[0] == 2
    assert ex["total"] == 5 and ex["offset"] == 0
    hit = demo_store.grep("vector index")["hits"][1]
    assert ex["hit"]["citation"] == hit["citation"] and ex["score"] == hit["score"]
    assert ex["matches"] == ["title", "aliases", "body"]
    assert "rank 2 of 5" in ex["message"]
    assert set(ex) == {
        "id", "path", "query", "args", "status", "rank", "total", "offset", "score", "matches", "via", "hit",
        "rule", "detail", "reasons", "chain", "message",
    }  # fmt: skip


def test_every_hit_of_a_page_explains_as_its_own_rank(demo_store: knowtk.Store) -> None:
    for query, args in (("search", {"limit": 7}), ("transcript search", {}), ("decision", {"type": "decision"})):
        page = demo_store.grep(query, **args, offset=0)
        for i, hit in enumerate(page["hits"]):
            ex = demo_store.explain(hit["id"], query=query, **args)
            assert ex["status"] == ("replacement" if hit["via"] else "hit"), (query, hit["id"])
            assert ex["rank"] == i + 1 and ex["hit"]["sha256"] == hit["sha256"]


def test_replacement_names_the_earlier_record_it_was_reached_through(demo_store: knowtk.Store) -> None:
    ex = demo_store.explain("dec-2026-021", query="columnar")
    assert ex["status"] == "replacement" and ex["score"] is None and ex["matches"] == ["superseded"]
    assert ex["via"]["id"] == "dec-2025-012" and ex["via"] == demo_store.grep("columnar")["hits"][0]["via"]
    assert demo_store.explain("dec-2026-003", query="elasticsearch")["via"]["id"] == "dec-2025-015"


def test_superseded_record_in_an_active_search_points_at_its_current_record(demo_store: knowtk.Store) -> None:
    ex = demo_store.explain("dec-2025-012", query="columnar")
    assert ex["status"] == "excluded" and ex["rule"] == "lifecycle" and ex["rank"] is None
    assert ex["detail"]["current"] == "dec-2026-021" and ex["detail"]["matched"] is True
    assert ex["detail"]["currentRank"] == 1 and ex["detail"]["currentVia"] == "dec-2025-012"
    assert ex["chain"] == {"end": "current", "current": "dec-2026-021", "steps": NUMBERED_CHAIN[1:]}
    between = demo_store.explain("dec-2025-027", query="columnar")
    assert between["detail"]["matched"] is False and between["detail"]["currentVia"] == "dec-2025-012"
    # in a superseded search the same record is a direct hit
    assert demo_store.explain("dec-2025-012", query="columnar", lifecycle="superseded")["status"] == "hit"
    assert demo_store.explain("dec-2026-021", query="vector", lifecycle="superseded")["rule"] == "lifecycle"


@pytest.mark.parametrize(
    ("rid", "query", "end", "last"),
    [
        ("dec-2025-009", "GPU budget", "missing", "dec-2026-099"),
        ("dec-2025-018", "archive", "withdrawn", "dec-2026-015"),
        ("lab-dec-005", "standup", "cycle", "lab-dec-005"),
    ],
)
def test_chain_dead_ends(demo_store: knowtk.Store, rid: str, query: str, end: str, last: str) -> None:
    ex = demo_store.explain(rid, query=query)
    assert ex["status"] == "excluded" and ex["rule"] == "chain_dead_end"
    assert ex["detail"]["end"] == end and ex["detail"]["last"] == last
    assert ex["chain"]["current"] is None and f"({end})" in ex["message"]


# ---------------------------------------------------------------------------
# explain: the rules that keep a record out


def test_unavailable_records_say_why(demo_store: knowtk.Store) -> None:
    withdrawn = demo_store.explain("dec-2026-015", query="recordings")
    assert (withdrawn["rule"], withdrawn["detail"]) == ("withdrawn", {"safeguard": False})
    expired = demo_store.explain("fnd-2024-009", query="anything")
    assert expired["rule"] == "expired" and expired["detail"]["expiresAt"]["value"] == "2025-01-31"
    missing = demo_store.explain("act-2026-02-13-pipeline-sync", query="pipeline")
    assert missing["rule"] == "dependency_missing" and missing["detail"] == {"dependency": "person-quentin-marsh"}
    chained = demo_store.explain("fnd-2026-006", query="speaker")
    assert chained["rule"] == "dependency_unavailable" and chained["detail"]["dependency"] == "fnd-2026-004"
    assert chained["detail"]["cause"][-1] == {"id": "fnd-2026-004", "reason": "withdrawn", "detail": None}


def test_files_that_are_not_records(demo_store: knowtk.Store) -> None:
    broken = demo_store.explain("notes/broken-frontmatter.md", query="anything")
    assert broken["rule"] == "not_a_record" and broken["detail"]["code"] == "frontmatter_unclosed"
    assert broken["path"] == "notes/broken-frontmatter.md"
    invalid = demo_store.explain("bad id with spaces")
    assert invalid["rule"] == "invalid" and invalid["detail"]["code"] == "id_invalid"
    assert invalid["path"] == "notes/bad-id.md"
    dup = demo_store.explain("note-retention-draft")
    assert dup["rule"] == "id_duplicate"
    assert dup["detail"]["paths"] == ["notes/archive/retention-draft.md", "notes/retention-draft.md"]
    with pytest.raises(knowtk.RecordNotFound, match="dec-2025-030 names it"):
        demo_store.explain("dec-2026-099")
    with pytest.raises(knowtk.RecordNotFound):
        demo_store.explain("nothing-here", query="x")


def test_a_late_refusal_is_reported_not_the_files_first_issue(builder: StoreBuilder) -> None:
    # Snapshot.excluded keeps a file's first issue (here the dropped date), not the reason it was refused
    builder.write("r.md", "id: rel-1\nkind: relationship\ntitle: Broken\noccurred_at: 2026-02-30", "body")
    ex = builder.open().explain("rel-1")
    assert ex["rule"] == "invalid" and ex["detail"]["code"] == "endpoints_missing"


def test_scope_and_each_failing_filter_are_listed(demo_store: knowtk.Store) -> None:
    ex = demo_store.explain("dec-2026-021", query="vector index", scope="meetings", kind="page", tag=["search", "zzz"])
    assert [r["rule"] for r in ex["reasons"]] == ["scope", "filter", "filter"]
    assert ex["rule"] == "scope" and ex["detail"] == {"path": "decisions/dec-2026-021.md", "scope": ["meetings"]}
    kind, tag = (r["detail"] for r in ex["reasons"][1:])
    assert (kind["filter"], kind["wanted"]) == ("kind", ["page"])
    assert (tag["filter"], tag["missing"]) == ("tag", ["zzz"])
    typed = demo_store.explain("dec-2026-021", query="vector index", type="meeting")
    assert typed["detail"]["wanted"] == ["call", "meeting", "standup"]  # the ontology's aliases, expanded
    dated = demo_store.explain("dec-2026-021", query="vector", since="2027-01-01")
    assert dated["detail"] == {"filter": "time", "record": "dec-2026-021", "field": "occurred_at",
                               "since": "2027-01-01", "until": None}  # fmt: skip
    assert "2026-04-15" in dated["message"]
    # a replacement's filters apply to its current record
    replaced = demo_store.explain("dec-2025-012", query="columnar", type="meeting")
    assert [r["rule"] for r in replaced["reasons"]] == ["lifecycle", "filter"]
    assert replaced["reasons"][1]["detail"]["record"] == "dec-2026-021"
    assert replaced["detail"]["currentRank"] is None


def test_not_matched_says_which_words_are_absent(demo_store: knowtk.Store) -> None:
    ex = demo_store.explain("dec-2026-021", query="zebra vector giraffe")
    assert ex["status"] == "not_matched" and ex["rule"] is None
    assert ex["reasons"][0]["detail"] == {
        "mode": "all",
        "words": ["zebra", "vector", "giraffe"],
        "present": ["vector"],
        "absent": ["zebra", "giraffe"],
    }
    phrase = demo_store.explain("dec-2026-021", query="index vector", mode="phrase")
    assert phrase["status"] == "not_matched" and "adjacent" in phrase["message"]
    assert demo_store.explain("dec-2026-021", query="vector index", mode="phrase")["status"] == "hit"


def test_without_a_query_only_eligibility_is_judged(demo_store: knowtk.Store) -> None:
    assert demo_store.explain("dec-2026-021")["status"] == "eligible"
    assert demo_store.explain("dec-2026-021", type="meeting")["rule"] == "filter"
    assert demo_store.explain("dec-2025-012")["rule"] == "lifecycle"
    assert set(STATUSES) == {"hit", "replacement", "not_matched", "excluded", "eligible"}


def test_arguments_are_checked_as_grep_checks_them(demo_store: knowtk.Store) -> None:
    with pytest.raises(knowtk.InvalidArgument) as info:
        demo_store.explain("dec-2026-021", query="vector", mode="fuzzy")
    assert info.value.argument == "mode"
    with pytest.raises(knowtk.InvalidArgument):
        demo_store.explain("dec-2026-021", query="vector", since="2026-02-30")
    with pytest.raises(TypeError, match="offset"):
        explain(demo_store, "dec-2026-021", query="vector", offset=20)


def test_beyond_the_paging_window(tmp_path: Path) -> None:
    builder = StoreBuilder(tmp_path / "big")
    for i in range(600):  # score falls with the body's length: rank i + 1 for record z{i:03d}
        builder.page(f"z{i:03d}", f"Note {i}", "zebra " + "filler " * i)
    store = builder.open()
    ranks = store.grep("zebra", limit=50, offset=500).to_frame()
    assert ranks["id"].tolist()[:2] == ["z500", "z501"]
    late = store.explain("z530", query="zebra")  # limit 20: pages end at offset 500, rank 520
    assert late["status"] == "excluded" and late["rule"] == "window" and late["rank"] == 531
    assert late["detail"] == {"rank": 531, "maxOffset": 500, "limit": 20, "lastRank": 520}
    reachable = store.explain("z530", query="zebra", limit=50)  # offset 500 + 50 reaches it
    assert reachable["status"] == "hit" and reachable["offset"] == 500 and reachable["rank"] == 531
    assert store.explain("z519", query="zebra")["status"] == "hit"  # rank 520: the last one reachable
    assert store.explain("z520", query="zebra")["rule"] == "window"
