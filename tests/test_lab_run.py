"""Running gold sets: scoring through the real tools, superseded expectations, why-not reasons, unknown ids,
variants side by side, and term ablation."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import knowtk
from knowtk import InvalidArgument
from knowtk.index.semantic import ENV_VAR, load_embedder
from knowtk.lab import Variant, ablate, compare, load_gold, parse_gold, run
from knowtk.lab.comparison import CHANGES
from tests.helpers import DEMO, REPO, StoreBuilder


@pytest.fixture
def store(builder: StoreBuilder) -> Iterator[knowtk.Store]:
    builder.page("a", "Zebra crossing", "A zebra crossing near the road.", tags=["road"])
    builder.page("b", "Zebra", "Facts about the zebra.", tags=["animals"])
    builder.page("old", "Quagga", "The quagga was a zebra.", status="superseded", superseded_by="new")
    builder.page("new", "Extinct equids", "Animals that are gone.", aliases=["Equid list"])
    builder.page("gone", "Giraffe budget", "giraffe money", status="superseded", superseded_by="nowhere")
    builder.page("w", "Withdrawn zebra", "zebra", status="withdrawn")
    with builder.open() as s:
        yield s


def gold(cases: str, head: str = "") -> knowtk.lab.GoldSet:
    return parse_gold(f"name: t\nk: 3\n{head}cases:\n{cases}")


def test_a_case_is_scored_from_the_tools_answer(store: knowtk.Store) -> None:
    result = run(gold("  - {id: z, tool: knowledge_grep, args: {query: zebra}, expect: {a: 2, b: 1}}\n"), store)
    (case,) = result.cases
    answer = store.call("knowledge_grep", {"query": "zebra"})
    assert [h["id"] for h in case["hits"]] == [h["id"] for h in answer["hits"]]
    assert case["total"] == answer["total"] and case["status"] == "ok"
    ranks = {e["id"]: e["rank"] for e in case["expected"]}
    assert ranks == {rid: [h["id"] for h in answer["hits"]].index(rid) + 1 for rid in ("a", "b")}
    assert case["metrics"]["recall@k"] == 1.0
    assert result.summary()["default"]["scored"] == 1
    assert result.meta["store"]["snapshot"] == answer["snapshot"]
    assert result.meta["knowtkVersion"] == knowtk.__version__


def test_a_superseded_expectation_counts_through_its_current_replacement(store: knowtk.Store) -> None:
    cases = (
        "  - {id: active, tool: knowledge_grep, args: {query: quagga}, expect: old}\n"
        "  - {id: all, tool: knowledge_grep, args: {query: quagga, lifecycle: all}, expect: old}\n"
        "  - {id: knowl, tool: knowl_query, args: {query: equids}, expect: old}\n"
        "  - {id: lookup, tool: knowledge_lookup, args: {query: Equid list}, status: found, expect: old}\n"
    )
    result = run(gold(cases), store)
    active = result.case("active")
    (e,) = active["expected"]
    assert (e["counted"], e["replaced"], e["rank"]) == ("new", True, 1)
    assert e["chain"] == {"end": "current", "current": "new", "steps": ["new"]}
    assert active["hits"][0]["via"] == "old" and active["metrics"]["hit@1"] == 1.0
    # a search of every lifecycle can return the earlier record itself: it is counted as written
    (e,) = result.case("all")["expected"]
    assert (e["counted"], e["replaced"], e["rank"]) == ("old", False, 1)
    assert result.case("knowl")["expected"][0]["counted"] == "new"
    assert result.case("lookup")["metrics"]["status_ok"] == 1.0 and result.case("lookup")["passed"]
    frame = result.to_frame()
    assert frame.set_index("case").loc["active", "replaced"] == "old → new"  # the table says so
    assert pd.isna(frame.set_index("case").loc["all", "replaced"])


def test_each_miss_says_why(store: knowtk.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "0")
    knowl = [i["id"] for i in store.knowl("zebra", limit=50)["results"]]
    second = knowl[1]
    cases = (
        "  - {id: words, tool: knowledge_grep, args: {query: zebra road}, expect: b}\n"
        "  - {id: tag, tool: knowledge_grep, args: {query: zebra, tag: road}, expect: b}\n"
        "  - {id: dead, tool: knowledge_grep, args: {query: giraffe}, expect: gone}\n"
        "  - {id: withdrawn, tool: knowledge_grep, args: {query: zebra}, expect: w}\n"
        "  - {id: below, tool: knowledge_grep, args: {query: zebra}, expect: old, k: 1}\n"
        "  - {id: beyond, tool: knowledge_grep, args: {query: zebra, limit: 1}, expect: old, k: 3}\n"
        "  - {id: lookup, tool: knowledge_lookup, args: {query: Zebra crossing}, expect: b}\n"
        "  - {id: lookup-withdrawn, tool: knowledge_lookup, args: {query: Withdrawn zebra}, expect: w}\n"
        f"  - {{id: knowl, tool: knowl_query, args: {{query: zebra, limit: 1}}, expect: {second}, k: 1}}\n"
        "  - {id: knowl-unmatched, tool: knowl_query, args: {query: giraffe}, expect: a}\n"
    )
    result = run(gold(cases), store, variants=[Variant("bm25", semantic=False)])
    why = {c["case"]: c["expected"][0]["why"] for c in result.cases}
    assert (why["words"]["kind"], why["words"]["reason"]) == ("not_matched", "not matched (lacks road)")
    assert why["words"]["explain"]["status"] == "not_matched"
    assert (why["tag"]["kind"], why["tag"]["filter"], why["tag"]["reason"]) == (
        "filtered",
        "tag",
        "filtered out by tag",
    )
    assert (why["dead"]["kind"], why["dead"]["rule"]) == ("excluded", "chain_dead_end")
    assert why["withdrawn"]["reason"] == "excluded by withdrawn"
    zebra = [h["id"] for h in store.grep("zebra")["hits"]]
    assert why["below"]["kind"] == "ranked_below_k" and why["below"]["rank"] == zebra.index("new") + 1 > 1
    assert why["beyond"]["reason"] == f"ranked {zebra.index('new') + 1} (beyond the limit 1)"
    assert why["lookup"]["kind"] == "name_mismatch" and "'Zebra'" in why["lookup"]["message"]
    assert why["lookup-withdrawn"]["rule"] == "withdrawn"
    assert why["knowl"]["kind"] == "ranked_below_k" and why["knowl"]["rank"] == 2
    assert why["knowl"]["reason"] == "ranked 2 (beyond the limit 1)"
    assert why["knowl-unmatched"]["kind"] == "not_matched"
    misses = result.misses()
    assert len(misses) == len(cases.splitlines()) and set(misses["kind"]) >= {"not_matched", "filtered", "excluded"}
    assert all(not c["passed"] for c in result.cases)


def test_must_not_and_an_answer_that_passes(store: knowtk.Store) -> None:
    cases = (
        "  - {id: dirty, tool: knowledge_grep, args: {query: zebra}, expect: a, must_not: b}\n"
        "  - {id: clean, tool: knowledge_grep, args: {query: zebra crossing}, expect: a, must_not: [b, w]}\n"
    )
    result = run(gold(cases), store)
    dirty, clean = result.case("dirty"), result.case("clean")
    assert dirty["metrics"]["clean"] == 0.0 and dirty["mustNot"][0]["rank"] is not None and not dirty["passed"]
    assert clean["metrics"]["clean"] == 1.0 and clean["passed"]
    assert result.summary()["default"]["clean"] == 0.5
    assert list(result.to_frame().set_index("case").loc["dirty", "must_not_found"]) == ["b"]


def test_an_expected_id_not_in_the_store_is_reported_not_scored(store: knowtk.Store) -> None:
    cases = (
        "  - {id: typo, tool: knowledge_grep, args: {query: zebra}, expect: [a, zebar]}\n"
        "  - {id: banned-typo, tool: knowledge_grep, args: {query: zebra}, expect: a, must_not: ghost}\n"
        "  - {id: fine, tool: knowledge_grep, args: {query: zebra}, expect: a}\n"
    )
    result = run(gold(cases), store)
    assert [(p["case"], p["status"]) for p in result.problems] == [
        ("typo", "unknown_ids"),
        ("banned-typo", "unknown_ids"),
    ]
    assert "zebar" in result.problems[0]["message"] and result.case("typo")["unknownIds"] == ["zebar"]
    assert result.case("typo")["metrics"]["hit@1"] is None  # not a miss: not scored at all
    summary = result.summary()["default"]
    assert (summary["scored"], summary["unscored"], summary["hit@k"]) == (1, 2, 1.0)


def test_an_invalid_file_is_known_and_explained(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra", "zebra")
    builder.write("bad.md", "id: bad\nkind: relationship\ntitle: Zebra link", "zebra")  # no endpoints
    with builder.open() as s:
        result = run(gold("  - {id: c, tool: knowledge_grep, args: {query: zebra}, expect: bad}\n"), s)
    case = result.case("c")
    assert case["status"] == "ok" and case["expected"][0]["why"]["kind"] == "excluded"


def test_variants_run_side_by_side_and_the_changed_cases_come_first(store: knowtk.Store) -> None:
    cases = (
        "  - {id: same, tool: knowledge_grep, args: {query: crossing}, expect: a}\n"
        "  - {id: better, tool: knowledge_grep, args: {query: zebra equids}, expect: new}\n"
        "  - {id: worded, tool: knowledge_grep, args: {query: giraffe}, expect: a, variants: {wide: {query: road}}}\n"
    )
    head = "variants:\n  wide: {args: {mode: any}, note: any word}\n"
    result = run(gold(cases, head), store)
    assert result.variant_names == ["default", "wide"]
    assert result.case("worded", "wide")["query"] == "road" and result.case("worded")["query"] == "giraffe"
    table = compare(result)
    assert table.attrs == {"left": "default", "right": "wide"}
    assert list(table["case"]) == ["better", "worded", "same"]  # changed first, bigger nDCG change first
    rows = table.set_index("case")
    assert rows.loc["better", "change"] == "better" and rows.loc["better", "ndcg@k_delta"] == 1.0
    assert rows.loc["same", "change"] == "same" and not rows.loc["same", "changed"]
    assert (rows.loc["worded", "query_left"], rows.loc["worded", "query_right"]) == ("giraffe", "road")
    assert list(table["change"]) == sorted(table["change"], key=CHANGES.index)
    metrics = result.metrics().set_index("variant")
    assert metrics.loc["wide", "note"] == "any word" and metrics.loc["wide", "hit@k"] > metrics.loc["default", "hit@k"]
    assert result.compare("wide", "default").set_index("case").loc["better", "change"] == "worse"


def test_two_runs_compare_before_and_after_an_edit(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra crossing", "zebra")
    builder.page("b", "Zebra", "zebra zebra")
    g = gold("  - {id: z, tool: knowledge_grep, args: {query: zebra}, expect: a}\n")
    with builder.open() as s:
        before = run(g, s)
        builder.page("a", "Zebra crossing", "zebra", aliases=["Zebra"])
        after = run(g, s)
    assert before.meta["store"]["snapshot"] != after.meta["store"]["snapshot"]
    row = compare(before, after).iloc[0]
    assert row["rank_left"] == 2 and row["rank_right"] == 1 and row["change"] == "better"


def test_variants_given_in_python_are_checked(store: knowtk.Store) -> None:
    g = gold("  - {id: z, tool: knowledge_grep, args: {query: zebra}, expect: a}\n")
    with pytest.raises(InvalidArgument, match="under variant 'bad'"):
        run(g, store, variants=[Variant("bad", {"mode": "some"})])
    with pytest.raises(InvalidArgument, match="named twice"):
        run(g, store, variants=["default", "default"])
    with pytest.raises(InvalidArgument, match="no variant"):
        run(g, store, variants=["nope"])
    with pytest.raises(InvalidArgument, match="GoldSet"):
        run("gold.yaml", store)  # type: ignore[arg-type]


def test_semantic_search_can_be_turned_off_per_variant(store: knowtk.Store) -> None:
    g = gold("  - {id: k, tool: knowl_query, args: {query: zebra}, expect: a}\n")
    before = os.environ.get(ENV_VAR)
    result = run(g, store, variants=[Variant("off", semantic=False)])
    assert result.case("k", "off")["method"] == "bm25"
    assert os.environ.get(ENV_VAR) == before  # restored
    if load_embedder() is None:
        with pytest.raises(InvalidArgument, match="no embedding model"):
            run(g, store, variants=[Variant("on", semantic=True)])
    else:
        assert run(g, store, variants=[Variant("on", semantic=True)]).case("k", "on")["method"] == "bm25+cosine"


def test_a_workspace_runs_knowl_cases_across_stores(make_builder) -> None:
    here, there = make_builder("here"), make_builder("there")
    here.page("a", "Zebra crossing", "zebra")
    there.raw("knowtk.yaml", "name: there\nshare: true\n")
    there.page("t", "Zebra herd", "zebra zebra zebra")
    g = gold("  - {id: k, tool: knowl_query, args: {query: zebra, scope: workspace}, expect: [a, t]}\n")
    with here.open() as a, there.open() as b:
        ws = knowtk.Workspace(a, linked={"there": b})
        result = run(g, ws, variants=[Variant("bm25", semantic=False)])
    case = result.case("k", "bm25")
    assert {h["id"] for h in case["hits"]} == {"a", "t"} and case["metrics"]["recall@k"] == 1.0
    assert {h["store"] for h in case["hits"]} == {"here", "there"}
    assert result.meta["store"]["linked"][0]["name"] == "there"


def test_ablation_shows_which_words_help_and_which_hurt(store: knowtk.Store) -> None:
    frame = ablate(store, "zebra crossing", expect=["a"], add=["facts", "road"], k=1)
    assert list(frame["change"]) == ["full", "drop", "drop", "add", "add"]
    rows = frame.set_index(["change", "word"], drop=False)
    assert frame.iloc[0]["ndcg@k"] == 1.0 and pd.isna(frame.iloc[0]["word"])
    dropped = rows.loc[("drop", "crossing")]
    assert dropped["query"] == "zebra"
    # without "crossing", "Zebra" (the shorter title) outranks "Zebra crossing": the word helps
    assert store.grep("zebra")["hits"][0]["id"] == "b"
    assert dropped["verdict"] == "helps" and dropped["effect"] == 1.0 and dropped["ranks"] == {"a": 2}
    assert rows.loc[("add", "facts")]["verdict"] == "hurts"  # all words: nothing holds all three
    assert rows.loc[("add", "facts")]["total"] == 0
    assert rows.loc[("add", "road")]["verdict"] == "neutral"
    assert frame.attrs == {"metric": "ndcg@k", "k": 1, "tool": "knowledge_grep"}
    assert rows.loc[("drop", "zebra")]["ranks"] == {"a": 1}


def test_ablation_of_a_gold_case_and_its_refusals(store: knowtk.Store) -> None:
    g = gold(
        "  - {id: z, tool: knowl_query, args: {query: zebra crossing road}, expect: a}\n"
        "  - {id: l, tool: knowledge_lookup, args: {query: Zebra}, status: found}\n"
    )
    frame = ablate(store, g["z"])
    assert list(frame["word"].dropna()) == ["zebra", "crossing", "road"]
    with pytest.raises(InvalidArgument, match="lookup is exact"):
        ablate(store, g["l"])
    with pytest.raises(InvalidArgument, match="expect"):
        ablate(store, "zebra")
    with pytest.raises(InvalidArgument, match="metric"):
        ablate(store, "zebra", expect=["a"], metric="precision")
    with pytest.raises(InvalidArgument, match="limit"):
        ablate(store, "zebra", expect=["a"], args={"limit": 0})
    single = ablate(store, "zebra", expect=["a"])
    assert list(single["change"]) == ["full"]  # one word: nothing to drop


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> knowtk.lab.LabRun:
    with knowtk.open_store(DEMO, state_dir=tmp_path_factory.mktemp("state")) as s:
        return run(
            load_gold(REPO / "data" / "fixtures" / "gold" / "demo.yaml"),
            s,
            variants=["default", "any-words", "keyword-only"],
        )


def test_the_demo_gold_set_runs_as_its_comments_say(demo_run: knowtk.lab.LabRun) -> None:
    assert not demo_run.problems
    default = {c["case"]: c for c in demo_run.cases if c["variant"] == "default"}
    replaced = {e["id"]: e["counted"] for c in default.values() for e in c["expected"] if e["replaced"]}
    assert replaced == {
        "dec-2025-027": "dec-2026-021",
        "dec-2025-012": "dec-2026-021",
        "lab-dec-002": "lab-dec-009",
        "note-meeting-notes-whiteboard": "dec-2025-033",
    }
    assert (
        default["gpu-budget"]["expected"][0]["why"]["rule"] == "chain_dead_end" and not default["gpu-budget"]["passed"]
    )
    assert default["raw-recordings-retention"]["metrics"]["clean"] == 1.0
    assert default["lookup-sam"]["lookupStatus"] == "ambiguous" and default["lookup-missing-owner"]["passed"]
    assert default["vector-index-decision"]["expected"][0]["rank"] == 2  # a relationship ranks first
    calibration = default["eye-tracker-calibration"]["expected"][1]
    assert calibration["why"]["reason"] == "not matched (lacks eye)"
    assert demo_run.case("eye-tracker-calibration", "any-words")["passed"]  # any word finds the note
    assert all(c["method"] == "bm25" for c in demo_run.cases if c["variant"] == "keyword-only" and c["method"])


def test_frames_keep_their_columns_when_empty(demo_run: knowtk.lab.LabRun, tmp_path: Path) -> None:
    from knowtk.lab.frames import cases_frame, hits_frame, misses_frame

    full, empty = cases_frame(demo_run), cases_frame(demo_run, variant="nope")
    assert list(full.columns) == list(empty.columns) and dict(full.dtypes) == dict(empty.dtypes)
    assert len(full) == len(demo_run.cases)
    assert list(misses_frame(demo_run).columns)[:4] == ["case", "variant", "query", "expected_id"]
    hits = hits_frame(demo_run.case("hnsw-superseded"))
    assert hits.iloc[0]["expected"] == "dec-2025-027" and hits.iloc[0]["id"] == "dec-2026-021"
    assert hits.iloc[0]["via"] == "dec-2025-027"
