"""Answers that explain themselves: grep's ``why``, lookup's ``suggestions``, a withdrawn record's file, in Python,
on the command line and over MCP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from knowtk.cli import main
from knowtk.query import TOOLS
from knowtk.query.why import FLOORED_SCORE
from tests.helpers import StoreBuilder, markdown_digest, sha256_hex


@pytest.fixture
def store(builder: StoreBuilder) -> StoreBuilder:
    builder.page("dec-new", "Zebra crossing", "The zebra body.", kind="claim", type="decision", tags=["road"])
    builder.page(
        "dec-old",
        "Striped pedestrian stripes",
        "Earlier wording about the okapi.",
        kind="claim",
        type="decision",
        status="superseded",
        superseded_by="dec-new",
    )
    builder.page(  # superseded by nothing that exists: its chain is a dead end
        "dec-lost",
        "Giraffe budget",
        "The giraffe budget was raised.",
        kind="claim",
        type="decision",
        status="superseded",
        superseded_by="dec-missing",
    )
    builder.page("person-guido", "Guido van Rossum", "Writes Python.", aliases=["BDFL"], path="people/guido.md")
    builder.page("note-a", "Alpha", "Plain words.", path="notes/a.md")
    builder.page("note-b", "Beta", "Other words.", path="notes/b.md")
    return builder


def test_a_hit_answer_has_no_why(store: StoreBuilder) -> None:
    answer = store.open().call("knowledge_grep", {"query": "zebra"})
    assert answer["total"] == 1 and "why" not in answer


def test_no_record_holds_the_word(store: StoreBuilder) -> None:
    answer = store.open().call("knowledge_grep", {"query": "walrus"})
    assert answer["total"] == 0 and answer["why"].startswith("no searchable record holds walrus")


def test_some_words_but_not_all(store: StoreBuilder) -> None:
    answer = store.open().call("knowledge_grep", {"query": "zebra walrus"})
    assert answer["why"] == "no record holds every word of zebra, walrus (mode all); 1 hold some of them: try mode any"
    assert store.open().call("knowledge_grep", {"query": "zebra walrus", "mode": "any"})["total"] == 1


def test_some_words_are_counted_in_every_lifecycle_and_the_scope_alone(store: StoreBuilder) -> None:
    """The records holding some of the words are counted (not ranked) over active and superseded records alike,
    and only inside the scope: as many as a search for any of them over every lifecycle returns."""
    store.page("plain-out", "Plain", "Plain words outside.", path="elsewhere/plain.md")
    s = store.open()
    for args, some in [
        ({"query": "zebra okapi walrus"}, 2),  # dec-new (active) and dec-old (superseded)
        ({"query": "plain other walrus", "scope": "notes"}, 2),  # note-a and note-b; plain-out lies outside
        ({"query": "plain other walrus"}, 3),
    ]:
        answer = s.call("knowledge_grep", args)
        assert answer["total"] == 0
        assert f"; {some} hold some of them: try mode any" in answer["why"], args
        assert s.call("knowledge_grep", {**args, "mode": "any", "lifecycle": "all"})["total"] == some


def test_a_dead_end_chain_is_named_with_what_returns_it(store: StoreBuilder) -> None:
    s = store.open()
    answer = s.call("knowledge_grep", {"query": "giraffe"})
    assert answer["total"] == 0
    assert "1 superseded, with a chain that ends in nothing (dec-lost): lifecycle all returns them" in answer["why"]
    # what it says is so: explain agrees, and lifecycle all returns the record
    assert s.explain("dec-lost", query="giraffe")["rule"] == "chain_dead_end"
    assert [h["id"] for h in s.call("knowledge_grep", {"query": "giraffe", "lifecycle": "all"})["hits"]] == ["dec-lost"]


def test_filters_scope_and_lifecycle_are_named(store: StoreBuilder) -> None:
    s = store.open()
    tagged = s.call("knowledge_grep", {"query": "zebra", "tag": "sky"})["why"]
    assert "1 left out by the tag filter (dec-new): loosen or drop the tag filter" in tagged
    scoped = s.call("knowledge_grep", {"query": "zebra", "scope": "people"})["why"]
    assert scoped.startswith("no searchable record in people holds zebra")  # what lies outside is not looked at
    superseded = s.call("knowledge_grep", {"query": "zebra", "lifecycle": "superseded"})["why"]
    assert "1 left out by the lifecycle asked (dec-new): lifecycle all returns them" in superseded


def test_a_replacement_whose_current_record_fails_the_filter_is_counted_by_that_filter(store: StoreBuilder) -> None:
    """okapi is in dec-old alone; its current record dec-new lacks the tag: the tag filter is what left it out."""
    why = store.open().call("knowledge_grep", {"query": "okapi", "tag": "sky"})["why"]
    assert "1 left out by the tag filter (dec-old)" in why


def test_records_outside_the_scope_change_no_answer_of_it(store: StoreBuilder) -> None:
    s = store.open()
    before = s.call("knowledge_grep", {"query": "walrus", "scope": "notes"})
    store.page("walrus", "Walrus", "A walrus.", path="elsewhere/walrus.md")
    after = s.call("knowledge_grep", {"query": "walrus", "scope": "notes"})
    assert after["why"] == before["why"] and after["snapshot"] == before["snapshot"]
    assert "1 record(s) hold" not in after["why"]


def test_scores_near_zero_say_the_idf_floor(builder: StoreBuilder) -> None:
    """A word in most files of a small folder read as plain Markdown scores ~0 (BM25's IDF floor)."""
    for i in range(3):
        builder.raw(f"n{i}.md", f"# Note {i}\n\nsupersession is discussed here, note {i}.\n")
    builder.raw("other.md", "# Other\n\nnothing to see\n")
    answer = builder.open(profile="plain").call("knowledge_grep", {"query": "supersession"})
    assert answer["total"] == 3 and max(h["score"] for h in answer["hits"]) < FLOORED_SCORE
    assert answer["why"].startswith("every score is near 0: each word is in half or more of the records searched")
    rare = builder.open(profile="plain").call("knowledge_grep", {"query": "nothing"})
    assert rare["total"] == 1 and "why" not in rare  # a rare word ranks: nothing to explain


def test_why_in_the_results_summary(store: StoreBuilder) -> None:
    s = store.open()
    assert repr(s.grep("giraffe")).endswith("lifecycle all returns them>")
    assert "\nwhy:" not in repr(s.grep("zebra"))
    assert s.lookup("guido").summary().endswith("\nnot a match, but close: person-guido")


def test_why_on_the_command_line_and_over_mcp(store: StoreBuilder, capsys: pytest.CaptureFixture[str]) -> None:
    before = markdown_digest(store.root)
    assert main(["--store", str(store.root), "grep", "giraffe"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("why: 1 record(s) hold the words but are left out")
    compact = TOOLS["knowledge_grep"].compact
    assert compact is not None
    answer = store.open().call("knowledge_grep", {"query": "giraffe"})
    assert compact(answer)["why"] == answer["why"]
    assert "why" not in compact(store.open().call("knowledge_grep", {"query": "zebra"}))
    assert markdown_digest(store.root) == before  # explaining reads, never writes


# -- lookup: suggestions beside a missing answer --------------------------------------------------------


def _lookup(builder: StoreBuilder, query: str, **args: Any) -> dict[str, Any]:
    return builder.open().call("knowledge_lookup", {"query": query, **args})


def test_suggestions_never_change_the_status(store: StoreBuilder) -> None:
    answer = _lookup(store, "guido")
    assert answer["status"] == "missing" and answer["record"] is None and answer["candidates"] == []
    assert [(s["id"], s["why"]) for s in answer["suggestions"]] == [("person-guido", "words")]
    assert _lookup(store, "Guido van Rossum")["suggestions"] == []  # found: nothing is looked for


def test_suggestions_for_an_id_in_another_case_or_spelling(store: StoreBuilder) -> None:
    for query in ("DEC-NEW", "dec new", "dec_new"):
        answer = _lookup(store, query)
        assert answer["status"] == "missing", query
        assert [(s["id"], s["why"]) for s in answer["suggestions"]][:1] == [("dec-new", "id_form")], query


def test_suggestions_for_a_slip_of_the_keys(store: StoreBuilder) -> None:
    answer = _lookup(store, "Guido van Rosum")
    assert answer["status"] == "missing"
    assert [(s["id"], s["why"]) for s in answer["suggestions"]] == [("person-guido", "typo")]
    assert answer["suggestions"][0]["message"] == "a title or alias reads 'guido van rossum', 1 letter(s) away"
    assert _lookup(store, "Zebra crosisng")["suggestions"][0]["id"] == "dec-new"  # two letters swapped: one
    assert _lookup(store, "Xebra crossing")["suggestions"] == []  # the first letter is not looked for


def test_suggestions_for_a_record_the_lifecycle_leaves_out(store: StoreBuilder) -> None:
    answer = _lookup(store, "Striped pedestrian stripes")
    assert answer["status"] == "missing"
    assert answer["suggestions"][0]["id"] == "dec-old" and answer["suggestions"][0]["why"] == "lifecycle"
    assert _lookup(store, "Striped pedestrian stripes", lifecycle="all")["status"] == "found"


def test_an_adr_number_written_with_a_space(builder: StoreBuilder) -> None:
    builder.raw("docs/adr/0006-use-sqlite.md", "# 6. Use SQLite\n\nStatus: Accepted\n")
    builder.raw("docs/adr/0007-use-fts5.md", "# 7. Use FTS5\n\nStatus: Accepted\n")
    store = builder.open(profile="adr")
    answer = store.call("knowledge_lookup", {"query": "ADR 6"})
    assert answer["status"] == "missing"  # never fuzzy: the exact alias is ADR-6
    assert answer["suggestions"][0] == {
        "id": "docs:adr:0006",
        "title": "Use SQLite",
        "why": "name_form",
        "message": "a title or alias reads 'adr-6'",
    }
    assert store.call("knowledge_lookup", {"query": "ADR-6"})["record"]["id"] == "docs:adr:0006"


def test_lookup_suggestions_on_the_command_line(store: StoreBuilder, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", str(store.root), "lookup", "guido"]) == 1  # missing: the answer printed, exit 1
    out = capsys.readouterr().out
    assert out.startswith("missing\nnot a match, but close") and "person-guido  Guido van Rossum" in out
    compact = TOOLS["knowledge_lookup"].compact
    assert compact is not None
    assert compact(_lookup(store, "guido"))["suggestions"] == [
        {"id": "person-guido", "title": "Guido van Rossum", "why": "words"}
    ]


# -- one record: a withdrawn one readable, a missing id a refusal with a hint -----------------------------


def test_a_withdrawn_record_shows_its_status_and_sha256(builder: StoreBuilder, capsys) -> None:
    path = builder.page("dec-gone", "Gone", "Secret body.", status="withdrawn")
    builder.page("dec-here", "Here", "Body.")
    answer = builder.open().call("knowledge_record", {"id": "dec-gone"})
    assert answer["status"] == "unavailable" and answer["record"] is None
    sha = sha256_hex(path.read_bytes())
    assert answer["file"] == {"path": "dec-gone.md", "revision": 1, "status": "withdrawn", "sha256": sha}
    assert main(["--store", str(builder.root), "record", "dec-gone"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "unavailable: withdrawn",
        "  dec-gone.md: status withdrawn, revision 1",
        f"  sha256 {sha}",
    ]
    assert "Secret body" not in out and "{" not in out  # no content, no raw dict


def test_a_missing_id_exits_1_with_a_hint(builder: StoreBuilder, capsys) -> None:
    builder.page("dec-2026-021", "Keep the index", "Body.")
    assert main(["--store", str(builder.root), "record", "dec-2026-21"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("missing: no record has this id")
    assert "did you mean dec-2026-021  Keep the index  (the id is 'dec-2026-021', 1 letter(s) away)" in out
    assert "knowtk grep" in out and "knowtk lookup" in out
    assert main(["--store", str(builder.root), "record", "dec-2026-022"]) == 1  # another number: no slip
    assert "did you mean" not in capsys.readouterr().out
    assert main(["--store", str(builder.root), "record", "DEC-2026-021"]) == 1
    assert "did you mean dec-2026-021  Keep the index" in capsys.readouterr().out
    assert main(["--store", str(builder.root), "--json", "record", "nope"]) == 1
    assert json.loads(capsys.readouterr().out)["suggestions"] == []


def test_the_record_tool_declares_unavailable() -> None:
    output = TOOLS["knowledge_record"].output
    assert output is not None and "unavailable" in output["properties"]["status"]["enum"]
