"""knowledge_lint's rules: each one found where the store has its problem (with the file and line) and not
where it does not, in a knowtk store, an ADR folder (adr-tools and MADR) and an Obsidian vault; lint
never writes a Markdown file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowtk.query.lint.rules import RULES
from tests.helpers import StoreBuilder, markdown_digest


def lint(b: StoreBuilder, **args: Any) -> dict[str, Any]:
    with b.open() as store:
        return store.call("knowledge_lint", args)


def found(answer: dict[str, Any], rule: str) -> list[tuple[str, int | None]]:
    """(path, line) of every finding of ``rule``."""
    return [(f["path"], f["line"]) for f in answer["findings"] if f["rule"] == rule]


def rec(rid: str, **meta: Any) -> dict[str, Any]:
    return {"id": rid, "kind": meta.pop("kind", "claim"), "title": rid.upper(), **meta}


# -- a knowtk store ---------------------------------------------------------------------------------------


def test_a_supersession_naming_no_record(builder: StoreBuilder) -> None:
    builder.write("a.md", rec("a", status="superseded", superseded_by="ghost"))
    builder.write("b.md", rec("b", status="superseded", superseded_by="c"))
    builder.write("c.md", rec("c"))
    assert found(lint(builder), "missing-supersession-target") == [("a.md", 6)]


def test_a_dependency_source_or_endpoint_naming_no_record(builder: StoreBuilder) -> None:
    builder.write("a.md", rec("a", depends_on=["b", "ghost"]))
    builder.write("b.md", rec("b", source="a"))
    builder.write("r.md", {"id": "r", "kind": "relationship", "from": "a", "to": "nowhere", "relation": "x"})
    answer = lint(builder)
    assert found(answer, "missing-reference") == [("a.md", 7), ("r.md", 5)]  # the list item, the `to:` line


def test_a_supersession_cycle(builder: StoreBuilder) -> None:
    builder.write("a.md", rec("a", status="superseded", superseded_by="b"))
    builder.write("b.md", rec("b", status="superseded", superseded_by="a"))
    builder.write("c.md", rec("c", status="superseded", superseded_by="d"))
    builder.write("d.md", rec("d"))
    assert found(lint(builder), "supersession-cycle") == [("a.md", 6), ("b.md", 6)]


def test_a_chain_that_ends_withdrawn(builder: StoreBuilder) -> None:
    builder.write("a.md", rec("a", status="superseded", superseded_by="b"))
    builder.write("b.md", rec("b", status="superseded", superseded_by="c"))
    builder.write("c.md", rec("c", status="withdrawn"))
    builder.write("d.md", rec("d", status="superseded", superseded_by="e"))
    builder.write("e.md", rec("e"))
    assert found(lint(builder), "chain-ends-withdrawn") == [("b.md", 6)]  # where the chain steps onto it


def test_a_dependency_on_a_withdrawn_record(builder: StoreBuilder) -> None:
    builder.write("a.md", rec("a", depends_on=["w"]))
    builder.write("b.md", rec("b", depends_on=["a"]))  # unavailable through a, which is reported
    builder.write("w.md", rec("w", status="withdrawn"))
    assert found(lint(builder), "depends-on-withdrawn") == [("a.md", 6)]  # the list item


def test_status_superseded_without_a_replacement(builder: StoreBuilder) -> None:
    builder.write("a.md", rec("a", status="superseded"))
    builder.write("b.md", rec("b", status="superseded", superseded_by="c"))
    builder.write("c.md", rec("c"))
    assert found(lint(builder), "superseded-without-replacement") == [("a.md", 5)]


def test_a_knowtk_record_presented_active_after_it_was_superseded(builder: StoreBuilder) -> None:
    builder.write("a.md", rec("a", status="superseded", superseded_by="b"))
    builder.write("b.md", rec("b"))
    assert found(lint(builder), "stale-status") == []
    builder.write("a.md", rec("a", status="active"))  # the same revision: knowtk keeps it superseded
    assert found(lint(builder), "stale-status") == [("a.md", 5)]


def test_two_files_with_one_id(builder: StoreBuilder) -> None:
    builder.write("x/a.md", rec("a"))
    builder.write("y/a.md", rec("a"))
    builder.write("b.md", rec("b"))
    assert found(lint(builder), "duplicate-id") == [("x/a.md", 2), ("y/a.md", 2)]


def test_an_invalid_date_with_its_line(builder: StoreBuilder) -> None:
    builder.write("a.md", "id: a\nkind: claim\ntitle: A\noccurred_at: 2026-02-30\n")
    builder.write("b.md", "id: b\nkind: claim\ntitle: B\noccurred_at: 2026-02-28\n")
    answer = lint(builder)
    assert found(answer, "invalid-date") == [("a.md", 5)]
    assert "2026-02-30" in answer["findings"][0]["message"]


def test_invalid_frontmatter_with_its_line(builder: StoreBuilder) -> None:
    builder.raw("open.md", "---\nid: open\nkind: page\n\nno closing fence\n")
    builder.raw("yaml.md", "---\nid: y\nkind: page\ntitle: [unclosed\n---\n")
    builder.write("kind.md", "id: k\nkind: pamphlet\n")
    builder.write("fine.md", rec("fine"))
    answer = lint(builder)
    assert found(answer, "invalid-frontmatter") == [("kind.md", 3), ("open.md", 1), ("yaml.md", 5)]


def test_an_unreadable_file_and_a_bad_knowtk_yaml(builder: StoreBuilder) -> None:
    builder.raw("latin.md", b"---\nid: l\nkind: page\ntitle: caf\xe9\n---\n")
    builder.raw("knowtk.yaml", "profile: nosuch\n")
    builder.write("fine.md", rec("fine"))
    answer = lint(builder)
    assert found(answer, "unreadable-file") == [("latin.md", None)]
    assert found(answer, "invalid-config") == [("knowtk.yaml", None)]


def test_markdown_links_and_anchors(builder: StoreBuilder) -> None:
    body = (
        "# A\n\n## Why it holds\n\n"
        "See [b](b.md), [b's why](b.md#the-reason), [the image](img/plot.png) and [here](#why-it-holds).\n"
        "Broken: [gone](gone.md), [bad anchor](b.md#nope), [own](#nowhere).\n"
        "Not checked: [web](https://example.org/x.md), [mail](mailto:x@y.z), `[code](nope.md)`.\n\n"
        "```\n[fenced](nope.md)\n```\n\n    [indented](nope.md)\n\nGeneric code: `x`, list[T](y) and f[0](1).\n"
        "<!-- [commented](nope.md) -->\n[ref]: ../outside-missing.md\n"
    )
    builder.write("a.md", rec("a"), body)
    builder.write("b.md", rec("b"), "# B\n\n## The reason\n")
    builder.raw("img/plot.png", b"\x89PNG")
    answer = lint(builder)
    assert found(answer, "broken-link") == [("a.md", 11), ("a.md", 22)]
    assert found(answer, "broken-anchor") == [("a.md", 11), ("a.md", 11)]
    columns = [f["column"] for f in answer["findings"] if f["rule"] == "broken-link"]
    assert columns == [9, 8]


def test_a_clean_store_has_no_finding(builder: StoreBuilder) -> None:
    builder.write("a.md", rec("a", status="superseded", superseded_by="b", occurred_at="2026-01-01"), "[b](b.md)")
    builder.write("b.md", rec("b", depends_on=["c"], occurred_at="2026-02-01"), "# B\n")
    builder.write("c.md", rec("c"))
    answer = lint(builder)
    assert answer["findings"] == [] and answer["errors"] == answer["warnings"] == 0
    assert answer["checked"] == 3


def test_lint_never_writes_a_markdown_file(builder: StoreBuilder) -> None:
    builder.write("a.md", rec("a", status="superseded", superseded_by="ghost"), "[x](gone.md)")
    builder.raw("b.md", "---\nid: b\n")
    before = markdown_digest(builder.root)
    assert lint(builder)["errors"] == 3
    assert markdown_digest(builder.root) == before


def test_every_rule_is_documented_with_an_example() -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "lint.md").read_text(encoding="utf-8")
    for rule in RULES.values():
        assert rule.severity in ("error", "warning") and rule.summary and rule.doc and rule.example
        assert f"`{rule.id}`" in docs, rule.id


# -- an ADR folder (adr-tools and MADR, read with the adr profile) ------------------------------------------


def adr(b: StoreBuilder, name: str, title: str, status: str, *, date: str = "2024-01-10", body: str = "") -> None:
    text = f"# {title}\n\nDate: {date}\n\n## Status\n\n{status}\n\n## Context\n\nWhy.\n\n## Decision\n\nWhat.\n{body}"
    b.raw(f"docs/adr/{name}", text)


@pytest.fixture
def folder(builder: StoreBuilder) -> StoreBuilder:
    builder.raw("knowtk.yaml", "profile: adr\n")
    return builder


def test_adr_superseded_by_an_adr_that_does_not_exist(folder: StoreBuilder) -> None:
    adr(folder, "0001-a.md", "1. A", "Superseded by [9. Nine](0009-nine.md)")
    adr(folder, "0002-b.md", "2. B", "Superseded by [3. C](0003-c.md)")
    adr(folder, "0003-c.md", "3. C", "Accepted\n\nSupersedes [2. B](0002-b.md)", date="2024-02-01")
    answer = lint(folder)
    assert found(answer, "missing-supersession-target") == [("docs/adr/0001-a.md", 7)]
    assert found(answer, "broken-link") == []  # the same problem: reported once


def test_adr_one_way_supersession_both_ways(folder: StoreBuilder) -> None:
    adr(folder, "0001-a.md", "1. A", "Deprecated")  # 3 supersedes it: it does not say so
    adr(folder, "0002-b.md", "2. B", "Superseded by [4. D](0004-d.md)")  # 4 does not say it supersedes 2
    adr(folder, "0003-c.md", "3. C", "Accepted\n\nSupersedes [1. A](0001-a.md)", date="2024-02-01")
    adr(folder, "0004-d.md", "4. D", "Accepted", date="2024-02-01")
    adr(folder, "0005-e.md", "5. E", "Superseded by [6. F](0006-f.md)")  # both sides written: fine
    adr(folder, "0006-f.md", "6. F", "Accepted\n\nSupersedes [5. E](0005-e.md)", date="2024-02-01")
    answer = lint(folder)
    assert found(answer, "one-way-supersession") == [("docs/adr/0001-a.md", 7), ("docs/adr/0004-d.md", 7)]


def test_adr_only_the_old_side_in_a_folder_that_never_writes_supersedes(folder: StoreBuilder) -> None:
    adr(folder, "0001-a.md", "1. A", "Superseded by ADR-0002")
    adr(folder, "0002-b.md", "2. B", "Accepted", date="2024-02-01")
    assert lint(folder)["findings"] == []


def test_adr_accepted_though_another_supersedes_it(folder: StoreBuilder) -> None:
    adr(folder, "0001-a.md", "1. A", "Accepted")
    adr(folder, "0002-b.md", "2. B", "Accepted\n\nSupersedes [1. A](0001-a.md)", date="2024-02-01")
    adr(folder, "0003-c.md", "3. C", "Accepted")
    answer = lint(folder)
    assert found(answer, "stale-status") == [("docs/adr/0001-a.md", 7)]
    assert found(answer, "one-way-supersession") == []


def test_adr_superseded_naming_no_replacement(folder: StoreBuilder) -> None:
    adr(folder, "0001-a.md", "1. A", "Superseded")
    adr(folder, "0002-b.md", "2. B", "Rejected")
    assert found(lint(folder), "superseded-without-replacement") == [("docs/adr/0001-a.md", 7)]


def test_adr_replacement_dated_before_what_it_replaces(folder: StoreBuilder) -> None:
    adr(folder, "0001-a.md", "1. A", "Superseded by [2. B](0002-b.md)", date="2024-05-01")
    adr(folder, "0002-b.md", "2. B", "Accepted\n\nSupersedes [1. A](0001-a.md)", date="2023-01-01")
    adr(folder, "0003-c.md", "3. C", "Superseded by [4. D](0004-d.md)", date="2024-05-01")
    adr(folder, "0004-d.md", "4. D", "Accepted\n\nSupersedes [3. C](0003-c.md)", date="2024-05-01")
    assert found(lint(folder), "replacement-predates") == [("docs/adr/0002-b.md", 3)]


def test_two_adrs_with_one_number(folder: StoreBuilder) -> None:
    adr(folder, "0007-use-iso-dates.md", "7. Use ISO dates", "Accepted")
    adr(folder, "0007-invoke-config.md", "7. Invoke config", "Accepted")
    adr(folder, "0008-other.md", "8. Other", "Accepted")
    answer = lint(folder)
    assert found(answer, "duplicate-adr-number") == [
        ("docs/adr/0007-invoke-config.md", 1),
        ("docs/adr/0007-use-iso-dates.md", 1),
    ]
    assert "ADR number 7" in answer["findings"][0]["message"] and found(answer, "duplicate-id") == []


def test_a_file_that_looks_like_an_adr_but_is_not_read_as_one(folder: StoreBuilder) -> None:
    adr(folder, "0001-a.md", "1. A", "Accepted")
    folder.raw("docs/adr/use-kafka.md", "# Use Kafka\n\n## Context\n\nx\n\n## Decision\n\ny\n")  # no number
    folder.raw("docs/adr/0002-untitled.md", "Date: 2024-01-01\n\n## Status\n\nAccepted\n\n## Decision\n\nz\n")
    folder.raw("docs/adr/README.md", "# Decisions\n\n## Context\n\n## Decision\n\nHow we write them.\n")
    folder.raw("docs/adr/template.md", "# NUMBER. TITLE\n\n## Status\n\n## Context\n\n## Decision\n")
    assert found(lint(folder), "unread-adr") == [("docs/adr/0002-untitled.md", 1), ("docs/adr/use-kafka.md", 1)]


def test_adr_links_anchors_and_dates(folder: StoreBuilder) -> None:
    body = "\nSee [2](0002-b.md#decision), [2](0002-b.md#outcome) and [old](0009-old.md).\n"
    adr(folder, "0001-a.md", "1. A", "Accepted", body=body)
    adr(folder, "0002-b.md", "2. B", "Accepted", date="21/02/2017")
    answer = lint(folder)
    assert found(answer, "broken-anchor") == [("docs/adr/0001-a.md", 17)]
    assert found(answer, "broken-link") == [("docs/adr/0001-a.md", 17)]
    assert found(answer, "invalid-date") == [("docs/adr/0002-b.md", 3)]


def test_madr_frontmatter_superseded_by_a_missing_adr(folder: StoreBuilder) -> None:
    folder.raw("docs/decisions/0001-a.md", "---\nstatus: superseded by ADR-0009\ndate: 2024-01-01\n---\n# Use A\n")
    folder.raw("docs/decisions/0002-b.md", "---\nstatus: superseded by ADR-0003\ndate: 2024-01-01\n---\n# Use B\n")
    folder.raw("docs/decisions/0003-c.md", "---\nstatus: accepted\ndate: 2024-02-01\n---\n# Use C\n")
    answer = lint(folder)
    assert found(answer, "missing-supersession-target") == [("docs/decisions/0001-a.md", 2)]
    assert len(answer["findings"]) == 1


# -- an Obsidian vault ---------------------------------------------------------------------------------------


@pytest.fixture
def vault(builder: StoreBuilder) -> StoreBuilder:
    builder.raw("knowtk.yaml", "profile: obsidian\n")
    return builder


def test_obsidian_unresolved_and_ambiguous_wikilinks(vault: StoreBuilder) -> None:
    vault.raw(
        "Home.md", "# Home\n\n[[Project X]] [[Gone note]] [[Notes]] ![[diagram.png]]\n`[[in code]]` %% [[c]] %%\n"
    )
    vault.raw("projects/Project X.md", "# Project X\n\n[[Home|back home]] [[projects/Project X#Plan]]\n\n## Plan\n")
    vault.raw("a/Notes.md", "x")
    vault.raw("b/Notes.md", "y")
    answer = lint(vault)
    assert found(answer, "broken-wikilink") == [("Home.md", 3), ("Home.md", 3)]
    messages = sorted(f["message"] for f in answer["findings"] if f["rule"] == "broken-wikilink")
    assert "no note has that name" in messages[0] and "more than one note" in messages[1]


def test_obsidian_heading_links(vault: StoreBuilder) -> None:
    vault.raw("A.md", "[[B#Open questions]] [[B#Closed]] [[#Here]] [[#Elsewhere]]\n\n## Here\n")
    vault.raw("B.md", "## Open questions\n")
    assert found(lint(vault), "broken-anchor") == [("A.md", 1), ("A.md", 1)]
    assert found(lint(vault), "broken-wikilink") == []


def test_wikilinks_are_not_checked_outside_a_vault(builder: StoreBuilder) -> None:
    builder.write("a.md", rec("a"), "[[not a vault link]]\n")
    assert lint(builder)["findings"] == []


def test_the_link_cache_follows_every_change(builder: StoreBuilder) -> None:
    builder.write("a.md", rec("a"), "[b](b.md) [c](c.md)\n")
    builder.write("b.md", rec("b"), "no links\n")
    assert found(lint(builder), "broken-link") == [("a.md", 6)]
    cache = builder.root / ".knowtk" / "lint-links-v1.json"
    kept = json.loads(cache.read_text())
    assert kept["wiki"] is False and sorted(len(v) for v in kept["files"].values()) == [0, 2]
    builder.write("c.md", rec("c"))  # the target appears: the cached links are resolved again
    assert found(lint(builder), "broken-link") == []
    builder.write("b.md", rec("b"), "[gone](gone.md)\n")  # a changed file is read again
    assert found(lint(builder), "broken-link") == [("b.md", 6)]
    assert len(json.loads(cache.read_text())["files"]) == 3  # b's old content is dropped
    cache.write_text('{"wiki": false, "files": [')  # damaged: rebuilt
    assert found(lint(builder), "broken-link") == [("b.md", 6)]
    assert len(json.loads(cache.read_text())["files"]) == 3
