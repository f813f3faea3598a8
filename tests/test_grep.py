"""knowledge_grep: tokens, modes, filters, pagination, snapshot, superseded wording."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

import knowtk
from tests.helpers import StoreBuilder


def ids(res) -> list[str]:
    hits = res["hits"] if isinstance(res, dict) else res.to_dict()["hits"]
    return [h["id"] for h in hits]


@pytest.fixture
def store(builder: StoreBuilder) -> knowtk.Store:
    builder.raw(
        "knowtk.yaml", "name: t\nontology:\n  meeting: {aliases: [call, standup]}\n  decision: {aliases: [adr]}\n"
    )
    builder.page(
        "m1",
        "Weekly standup",
        "We discussed the vector index and the budget.",
        type="meeting",
        tags=["search", "Ops"],
        occurred_at="2026-03-04",
        path="team/m1.md",
    )
    builder.page(
        "m2",
        "Design call",
        "Budget review for the café; naïve estimates.",
        type="call",
        tags=["ops"],
        occurred_at="2026-03-10T15:00:00+01:00",
        path="team/m2.md",
    )
    builder.page(
        "d1",
        "Use SQLite FTS5 for search",
        "FTS5 wins over a vector index. OR NOT AND title:body",
        kind="claim",
        type="decision",
        tags=["search"],
        occurred_at="2026-02-01T09:00:00Z",
        path="lab/d1.md",
    )
    builder.page(
        "d2",
        "Adopt ADR process",
        "Every decision gets an adr record.",
        kind="claim",
        type="adr",
        path="lab/decisions/d2.md",
    )
    builder.page("n1", "Budget notes", "budget budget budget, the quarterly budget", type="note", path="notes/n1.md")
    return builder.open()


def test_every_word_must_match_by_default(store) -> None:
    assert ids(store.grep("budget review")) == ["m2"]
    assert sorted(ids(store.grep("budget"))) == ["m1", "m2", "n1"]


def test_any_and_phrase_modes(store) -> None:
    assert sorted(ids(store.grep("budget vector", mode="any"))) == ["d1", "m1", "m2", "n1"]
    assert sorted(ids(store.grep("vector index", mode="phrase"))) == ["d1", "m1"]
    assert ids(store.grep("index vector", mode="phrase")) == []
    # adjacent within one field only: "search" ends the title, "fts5" starts the body
    assert ids(store.grep("search fts5", mode="phrase")) == []


def test_case_and_diacritics_are_folded_and_there_is_no_prefix_or_stemming(store) -> None:
    assert ids(store.grep("CAFE")) == ["m2"]
    assert ids(store.grep("naive")) == ["m2"]
    assert ids(store.grep("café NAÏVE")) == ["m2"]
    assert ids(store.grep("budg")) == []
    assert ids(store.grep("budgets")) == []
    assert ids(store.grep("budg*")) == []


def test_fts_syntax_is_plain_words(store) -> None:
    assert ids(store.grep("OR NOT")) == ["d1"]
    assert ids(store.grep("title:body")) == ["d1"]
    assert ids(store.grep('"fts5" AND')) == ["d1"]
    assert ids(store.grep("NEAR(budget vector)")) == []
    assert ids(store.grep("fts5 -vector")) == ["d1"]  # punctuation separates, "-" negates nothing


@pytest.mark.parametrize(
    ("query", "argument"),
    [("", "query"), ("...!?", "query"), ("word " * 65, "query"), ("x" * 501, "query")],
)
def test_query_limits(store, query, argument) -> None:
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.grep(query)
    assert err.value.argument == argument
    assert "allowed" in str(err.value)


def test_sixty_four_tokens_and_five_hundred_characters_are_accepted(store) -> None:
    assert store.grep(" ".join(["budget"] * 64), mode="any")["total"] == 3
    assert store.grep("budget" + " " * 494)["total"] == 3


def test_kind_and_type_with_ontology_expansion_both_ways(store) -> None:
    assert sorted(ids(store.grep("budget", kind="page"))) == ["m1", "m2", "n1"]
    assert ids(store.grep("index", kind="claim")) == ["d1"]
    assert sorted(ids(store.grep("budget", type="meeting"))) == ["m1", "m2"]
    assert sorted(ids(store.grep("budget", type="standup"))) == ["m1", "m2"]  # alias -> type and siblings
    assert ids(store.grep("decision", type="decision")) == ["d2"]
    assert ids(store.grep("budget", type="note")) == ["n1"]
    with pytest.raises(knowtk.InvalidArgument, match="kind"):
        store.grep("budget", kind="note")


def test_tags_are_exact_and_case_sensitive(store) -> None:
    assert ids(store.grep("budget", tag="Ops")) == ["m1"]
    assert ids(store.grep("budget", tag="ops")) == ["m2"]
    assert ids(store.grep("budget", tag="OPS")) == []
    assert ids(store.grep("index", tag=["search", "Ops"])) == ["m1"]


def test_date_filters_are_inclusive_and_date_only_values_cover_their_day(store) -> None:
    assert ids(store.grep("budget", since="2026-03-04", until="2026-03-04")) == ["m1"]
    # a timestamp inside the date-only record's day overlaps it
    assert ids(store.grep("budget", since="2026-03-04T23:59:59Z", until="2026-03-05T00:00:00Z")) == ["m1"]
    assert ids(store.grep("budget", since="2026-03-05T00:00:00Z", until="2026-03-09")) == []
    # 15:00+01:00 is 14:00Z: inclusive bounds on both sides
    assert ids(store.grep("budget", since="2026-03-10T14:00:00Z", until="2026-03-10T14:00:00Z")) == ["m2"]
    assert ids(store.grep("budget", since="2026-03-10T14:00:01Z")) == []
    assert sorted(ids(store.grep("budget", until="2026-03-10"))) == ["m1", "m2"]
    # records without the field never match a date filter; recorded_at never stands in
    assert ids(store.grep("budget", time_field="recorded_at", since="2000-01-01")) == []


@pytest.mark.parametrize("bad", ["2026-02-30", "2026-03-04T10:00", "2026-03-04T10:00:00", "yesterday", "20260304"])
def test_bad_bounds_are_refused(store, bad) -> None:
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.grep("budget", since=bad)
    assert err.value.argument == "since"
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.call("knowledge_grep", {"query": "budget", "until": bad})
    assert err.value.argument == "until"


def test_scope_limits_the_search_and_unknown_scopes_are_refused(store) -> None:
    assert ids(store.grep("index", scope="team")) == ["m1"]
    assert sorted(ids(store.grep("index", scope=["team", "lab"]))) == ["d1", "m1"]
    assert ids(store.grep("decision", scope="lab/decisions")) == ["d2"]
    assert ids(store.grep("index", scope="lab/decisions")) == []
    for bad in ("nowhere", "../team", "lab/../team"):
        with pytest.raises(knowtk.InvalidArgument) as err:
            store.grep("index", scope=bad)
        assert err.value.argument == "scope"


def test_pagination(builder: StoreBuilder) -> None:
    for i in range(57):
        builder.page(f"r{i:02d}", "Same title", "same body")
    store = builder.open()
    res = store.call("knowledge_grep", {"query": "same", "limit": 25})
    assert res["total"] == 57 and res["offset"] == 0 and res["nextOffset"] == 25 and len(res["hits"]) == 25
    seen = ids(res)
    while res["nextOffset"] is not None:
        res = store.call("knowledge_grep", {"query": "same", "limit": 25, "offset": res["nextOffset"]})
        seen += ids(res)
    assert seen == sorted(f"r{i:02d}" for i in range(57))  # equal scores: ties break by id
    assert store.grep("same")["total"] == 57 and len(store.grep("same")["hits"]) == 20
    for args in ({"limit": 0}, {"limit": 51}, {"offset": -1}, {"offset": 501}, {"limit": "5"}):
        with pytest.raises(knowtk.InvalidArgument) as err:
            store.call("knowledge_grep", {"query": "same", **args})
        assert err.value.argument == next(iter(args))


def test_next_offset_stops_at_the_offset_limit(builder: StoreBuilder) -> None:
    for i in range(520):
        builder.page(f"r{i:03d}", "Same")
    store = builder.open()
    assert store.grep("same", limit=10, offset=490)["nextOffset"] == 500
    last = store.grep("same", limit=10, offset=500).to_dict()
    assert last["nextOffset"] is None and last["total"] == 520 and ids(last)[0] == "r500"


def test_snapshot_is_stable_and_changes_with_any_edit_in_scope(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra", path="x/a.md")
    builder.page("old", "Older", status="superseded", superseded_by="a", path="x/old.md")
    builder.page("b", "Zebra", path="y/b.md")
    store = builder.open()
    first = store.grep("zebra")["snapshot"]
    scoped = store.grep("zebra", scope="x")["snapshot"]
    assert store.grep("zebra")["snapshot"] == first and scoped != first
    time.sleep(0.002)
    builder.page("b", "Zebra edited", path="y/b.md")
    assert store.grep("zebra")["snapshot"] != first
    assert store.grep("zebra", scope="x")["snapshot"] == scoped
    builder.page("old", "Older, edited", status="superseded", superseded_by="a", path="x/old.md")
    assert store.grep("zebra", scope="x")["snapshot"] != scoped


def test_scores_are_positive_and_title_outweighs_body(builder: StoreBuilder) -> None:
    builder.page("t", "Zebra", "nothing")
    builder.page("b", "Nothing", "zebra")
    builder.page("a", "Nothing", "other", aliases=["zebra"])
    builder.page("x", "Filler", "filler")
    res = builder.open().grep("zebra").to_dict()
    assert ids(res) == ["t", "a", "b"]
    assert all(h["score"] > 0 for h in res["hits"])
    assert [h["matches"] for h in res["hits"]] == [["title"], ["aliases"], ["body"]]


def test_call_and_methods_return_the_same_dict(store) -> None:
    via_call = store.call("knowledge_grep", {"query": "budget", "timeField": "occurred_at", "since": "2026-01-01"})
    via_method = store.grep("budget", time_field="occurred_at", since="2026-01-01").to_dict()
    for d in (via_call, via_method):
        d.pop("freshness")
    assert via_call == via_method
    with pytest.raises(knowtk.InvalidArgument) as err:
        store.call("knowledge_grep", {"query": "x", "time_field": "occurred_at"})
    assert err.value.argument == "time_field" and "timeField" in str(err.value)


# -- superseded wording -----------------------------------------------------------------------


@pytest.fixture
def chains(builder: StoreBuilder) -> knowtk.Store:
    b = builder
    b.page(
        "v1",
        "Retention ninety days",
        "Keep logs for ninety days.",
        kind="claim",
        type="decision",
        status="superseded",
        superseded_by="v2",
        path="dec/v1.md",
    )
    b.page(
        "v2",
        "Retention sixty days",
        "Keep logs for sixty days.",
        kind="claim",
        type="decision",
        revision=2,
        status="superseded",
        superseded_by="v3",
        path="dec/v2.md",
    )
    b.page(
        "v3",
        "Log retention policy",
        "Logs are kept for thirty days.",
        kind="claim",
        type="decision",
        revision=3,
        tags=["ops"],
        path="dec/v3.md",
    )
    b.page(
        "w1",
        "Ninety day archive",
        "Archive after ninety days.",
        kind="claim",
        status="superseded",
        superseded_by="w2",
        path="dec/w1.md",
    )
    b.page("w2", "Archive withdrawn", "withdrawn", kind="claim", status="withdrawn", path="dec/w2.md")
    b.page(
        "x1",
        "Ninety day backups",
        "Backups kept ninety days.",
        kind="claim",
        status="superseded",
        superseded_by="nowhere",
        path="dec/x1.md",
    )
    b.page(
        "direct",
        "Ninety days of retention",
        "Direct mention of ninety days retention.",
        kind="claim",
        path="dec/direct.md",
    )
    b.page(
        "y1",
        "Ninety retention draft",
        "ninety days retention draft",
        kind="claim",
        status="superseded",
        superseded_by="direct",
        path="dec/y1.md",
    )
    return b.open()


def test_old_wording_finds_the_current_record_after_direct_hits(chains) -> None:
    res = chains.call("knowledge_grep", {"query": "ninety days"})
    assert ids(res) == ["direct", "v3"]
    assert res["total"] == 2
    direct, replacement = res["hits"]
    assert direct["matches"] != ["superseded"] and direct["score"] > 0 and direct["via"] is None
    assert replacement["matches"] == ["superseded"]
    assert replacement["score"] is None
    assert replacement["snippet"]["matchLocated"] is False
    assert replacement["snippet"]["text"].startswith("Logs are kept for thirty days.")
    assert replacement["citation"]["id"] == "v3" and replacement["citation"]["path"] == "dec/v3.md"
    assert replacement["via"]["id"] == "v1" and replacement["via"]["revision"] == 1
    assert replacement["via"]["title"] == "Retention ninety days" and replacement["via"]["path"] == "dec/v1.md"
    assert len(replacement["via"]["sha256"]) == 64


def test_chains_to_withdrawn_missing_or_filtered_out_records_return_nothing(chains) -> None:
    assert ids(chains.grep("archive")) == []
    assert ids(chains.grep("backups")) == []
    # filters apply to the current record, not to the earlier one that matched
    assert ids(chains.grep("ninety", tag="ops")) == ["v3"]
    assert ids(chains.grep("ninety", type="decision")) == ["v3"]
    assert ids(chains.grep("sixty", type="note")) == []


def test_each_record_appears_once_and_replacements_rank_by_the_earlier_bm25(chains) -> None:
    # v1 and v2 both lead to v3; y1 leads to "direct", already a direct hit
    res = chains.grep("ninety sixty", mode="any").to_dict()
    assert ids(res) == ["direct", "v3"]
    # v1 (ninety) and v2 (sixty, revision 2) both reach v3: the better-ranked earlier record is kept
    assert res["hits"][1]["via"]["id"] == "v2"
    res = chains.grep("retention days", mode="any").to_dict()
    assert len(ids(res)) == len(set(ids(res)))
    assert next(h for h in res["hits"] if h["id"] == "v3")["via"] is None  # a direct match appears once
    res = chains.grep("sixty").to_dict()
    assert ids(res) == ["v3"] and res["hits"][0]["via"]["id"] == "v2"


def test_lifecycle_superseded_and_all_search_superseded_records_directly(chains) -> None:
    res = chains.grep("ninety", lifecycle="superseded").to_dict()
    assert sorted(ids(res)) == ["v1", "w1", "x1", "y1"]
    assert all(h["lifecycle"] == "superseded" and h["via"] is None and h["score"] > 0 for h in res["hits"])
    res = chains.grep("ninety", lifecycle="all").to_dict()
    assert sorted(ids(res)) == ["direct", "v1", "w1", "x1", "y1"]


def test_total_counts_direct_and_replacement_hits_across_pages(chains) -> None:
    first = chains.call("knowledge_grep", {"query": "ninety", "limit": 1})
    assert first["total"] == 2 and ids(first) == ["direct"] and first["nextOffset"] == 1
    second = chains.call("knowledge_grep", {"query": "ninety", "limit": 1, "offset": 1})
    assert ids(second) == ["v3"] and second["nextOffset"] is None and second["snapshot"] == first["snapshot"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_page_of_direct_hits_counts_the_replacements_as_the_ranked_path_does(
    builder: StoreBuilder, seed: int
) -> None:
    """A page that direct matches fill counts superseded wording's replacements without ranking them
    (``_replacements``): every total equals the one a page reaching past the direct matches gives (which
    ranks them), whatever the chains, filters and modes; and the page's hits are the whole answer's first."""
    rng = random.Random(seed)
    words = ["ninety", "days", "retention", "logs", "kept", "sixty", "backup", "audit"]
    for i in range(60):
        fields: dict[str, Any] = {"kind": rng.choice(["claim", "page"]), "tags": [rng.choice(["ops", "dev"])]}
        if i >= 10 and rng.random() < 0.5:  # superseded by an earlier record, or by one that does not exist
            fields.update(status="superseded", superseded_by=rng.choice([f"r{rng.randrange(i)}", "nowhere"]))
        body = " ".join(rng.choice(words) for _ in range(rng.randrange(3, 12)))
        builder.page(f"r{i}", " ".join(rng.sample(words, 2)), body, path=f"{rng.choice('ab')}/r{i}.md", **fields)
    store = builder.open()
    counted = 0
    for _ in range(60):
        query = " ".join(rng.sample(words, rng.choice([1, 2])))
        args = {"query": query, "mode": rng.choice(["all", "any", "phrase"])}
        if rng.random() < 0.4:
            args.update(rng.choice([{"kind": "claim"}, {"tag": "ops"}]))
        whole = store.call("knowledge_grep", {**args, "limit": 50})
        direct = sum(1 for h in whole["hits"] if h["via"] is None)
        for limit in {1, max(1, direct)}:
            page = store.call("knowledge_grep", {**args, "limit": limit})
            assert page["total"] == whole["total"], (args, limit)
            assert [h["id"] for h in page["hits"]] == [h["id"] for h in whole["hits"][:limit]], (args, limit)
            counted += limit <= direct and whole["total"] > direct
    assert counted  # some pages counted replacements they did not show
    store.close()
