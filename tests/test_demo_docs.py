"""The demo store still holds what README.md, docs/ and the notebooks show of it, asked through knowtk.

The demo's Markdown files are edited by hand; a hand edit that takes away an id, a title, a chain, a
dated record or a deliberate defect that a page or a notebook (``scripts/make_notebooks.py``) names
fails here, naming what the page relies on. ``test_demo_store.py`` checks the files themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import knowtk
from tests.helpers import copy_demo


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[knowtk.Store]:
    """A copy of the demo, opened once for the module: the docs' calls only read it."""
    with knowtk.open_store(copy_demo(tmp_path_factory.mktemp("documented") / "demo")) as opened:
        yield opened


def hit_ids(answer: Any) -> list[str]:
    return [h["id"] for h in answer["hits"]]


def test_the_readme_calls(store: knowtk.Store) -> None:
    assert "dec-2026-021" in hit_ids(store.grep("vector index"))
    assert store.grep("columnar storage", mode="any")["total"] > 0
    since = {"query": "vector index", "timeField": "occurred_at", "since": "2026-01-01"}
    assert "dec-2026-021" in hit_ids(store.call("knowledge_grep", since))
    assert store.records(kind="claim", tag="search")["total"] > 0
    assert store.timeline(entity="person-ada-okafor")["total"] > 0
    assert store.chronicle_day("2026-03-29", week=True, time_zone="Europe/Berlin")["total"] > 0
    assert store.knowl("vector index")["total"] > 0
    assert store.explain("dec-2025-012", query="vector index")["status"] == "excluded"


def test_the_record_the_docs_show_whole(store: knowtk.Store) -> None:
    """README, docs/agents.md's example hit and the quickstart notebook's record."""
    rec = store.record("dec-2026-021")["record"]
    assert rec["title"] == "Keep the vector index in SQLite next to FTS5"
    assert (rec["lifecycle"], rec["revision"], rec["supersedes"]) == ("active", 4, ["dec-2026-008"])
    assert rec["path"] == "decisions/dec-2026-021.md"
    assert rec["evidence"] and all(e["verified"] for e in rec["evidence"])
    hit = next(h for h in store.grep("vector index")["hits"] if h["id"] == "dec-2026-021")
    assert hit["matches"] == ["title", "aliases", "body"]


def test_the_lookups_the_notebook_shows(store: knowtk.Store) -> None:
    sam = store.lookup("Sam")
    assert sam["status"] == "ambiguous"
    assert [c["id"] for c in sam["candidates"]] == ["person-samantha-reyes", "person-samir-haddad"]
    found = {q: store.lookup(q) for q in ("dec-2026-021", "IVF index decision", "Sam Reyes", "dec-2025-012")}
    assert (found["dec-2026-021"]["status"], found["dec-2026-021"]["matchedBy"]) == ("found", "id")
    assert (found["IVF index decision"]["status"], found["IVF index decision"]["matchedBy"]) == ("found", "alias")
    assert [c["id"] for c in found["IVF index decision"]["candidates"]] == ["dec-2026-021"]
    assert found["Sam Reyes"]["status"] == "missing"
    assert found["dec-2025-012"]["status"] == "missing"  # superseded: the widget follows its chain


# (id, query) -> (status, rule): the explain cases of the quickstart and supersession notebooks
EXPLAINED = {
    ("dec-2026-021", "vector index"): ("hit", None),
    ("dec-2026-021", "columnar"): ("replacement", None),
    ("dec-2025-012", "columnar"): ("excluded", "lifecycle"),
    ("dec-2025-009", "GPU budget"): ("excluded", "chain_dead_end"),
    ("fnd-2026-006", "speaker"): ("excluded", "dependency_unavailable"),
    ("note-retention-policy-faq", "vector index"): ("not_matched", None),
    ("dec-2025-018", "archive"): ("excluded", "chain_dead_end"),
    ("lab-dec-005", "standup"): ("excluded", "chain_dead_end"),
}


@pytest.mark.parametrize(("rid", "query"), sorted(EXPLAINED))
def test_the_explain_cases_of_the_notebooks(store: knowtk.Store, rid: str, query: str) -> None:
    answer = store.explain(rid, query=query)
    assert (answer["status"], answer["rule"]) == EXPLAINED[rid, query]


def test_superseded_wording_finds_the_current_decision(store: knowtk.Store) -> None:
    """docs/notebooks.md: ``columnar`` -> dec-2026-021 via dec-2025-012."""
    hits = store.grep("columnar")["hits"]
    assert [(h["id"], (h["via"] or {}).get("id")) for h in hits] == [("dec-2026-021", "dec-2025-012")]


def test_the_chains_the_docs_name(store: knowtk.Store) -> None:
    chain = store.record("dec-2025-027")["record"]["chain"]
    assert (chain["steps"], chain["end"]) == (["dec-2026-008", "dec-2026-021"], "current")
    assert store.record("dec-2025-012")["record"]["supersededBy"] == "dec-2025-027"
    # the dead end that notebook 07 and docs/mutations.md fix: dec-2026-099 was never written
    dead = store.record("dec-2025-030")["record"]
    assert (dead["supersededBy"], dead["chain"]["end"]) == ("dec-2026-099", "missing")
    assert store.record("dec-2026-099")["status"] == "missing"
    withdrawn = store.record("dec-2026-015")  # ChainWidget's example, the gold set's must_not
    assert (withdrawn["status"], withdrawn["reason"]["code"]) == ("unavailable", "withdrawn")
    assert store.record("lab-dec-005")["record"]["supersededBy"] == "lab-dec-006"
    assert store.record("lab-dec-006")["record"]["supersededBy"] == "lab-dec-005"


def test_the_deliberate_defects_the_readme_lists(store: knowtk.Store) -> None:
    issues = {(i["code"], i.get("id")) for i in store.records(limit=1)["coverage"]["issues"]}
    assert issues == {
        ("date_invalid", "act-2026-04-15-search-sync"),
        ("date_invalid", "note-offsite-recap"),
        ("date_invalid", "note-sync-checklist"),
        ("date_invalid", "note-transcription-conventions"),
        ("dependency_missing", "act-2026-02-13-pipeline-sync"),
        ("dependency_missing", "rel-viktor-hale-advises-atlas-legacy"),
        ("frontmatter_not_mapping", None),
        ("frontmatter_unclosed", None),
        ("id_duplicate", "note-retention-draft"),
        ("id_invalid", "bad id with spaces"),
        ("supersession_cycle", "lab-dec-005"),
        ("supersession_cycle", "lab-dec-006"),
        ("supersession_target_missing", "dec-2025-030"),
    }
    reasons = {rid: [e["reason"] for e in store.record(rid)["record"]["evidence"]] for rid in EVIDENCE_DEFECTS}
    assert reasons == EVIDENCE_DEFECTS


EVIDENCE_DEFECTS = {
    "fnd-2026-007": ["quote_not_found"],
    "fnd-2026-008": ["outside_store"],
    "fnd-2026-011": ["file_missing"],
}


def test_the_dated_records_of_the_daylight_saving_weeks(store: knowtk.Store) -> None:
    """docs/dates.md: a day is the zone's day; a week row carries its local start and end."""
    in_berlin = [r["id"] for r in store.chronicle_day("2026-03-23", time_zone="Europe/Berlin")["rows"]]
    in_utc = [r["id"] for r in store.chronicle_day("2026-03-23", time_zone="UTC")["rows"]]
    assert "evt-2026-03-23-overnight-handover" in in_berlin and "evt-2026-03-23-overnight-handover" not in in_utc
    week = store.chronicle_day("2026-03-29", week=True, time_zone="Europe/Berlin")["rows"]
    local = {r["id"]: (r["localStart"], r["localEnd"]) for r in week}
    assert local["evt-2026-03-29-release-retro"] == ("2026-03-29T23:30:00+02:00", "2026-03-29T23:30:00+02:00")
    assert local["evt-2026-03-29-clock-change-check"] == ("2026-03-29", "2026-03-30")
    assert "evt-2026-03-29-night-recording" in local


def test_the_long_body_and_the_prototyping_notebook_records(store: knowtk.Store) -> None:
    assert hit_ids(store.grep("zebrafish")) == ["lab-log-2026-q1"]  # the >64 KiB body of the quickstart
    # notebook 04 edits these two notes and creates note-raw-data-handling, which the demo lacks
    assert store.record("note-retention-policy-faq")["record"]["path"] == "notes/retention-policy-faq.md"
    assert "note-retention-policy-faq" in hit_ids(store.grep("retention policy"))
    assert store.lookup("note-raw-data-handling")["status"] == "missing"
    assert (Path(store.root) / "notes" / "privacy-checklist.md").is_file()
    # the query lab's gold set grades these (docs/query-lab.md)
    assert store.lookup("note-search-stack-overview")["status"] == "found"
