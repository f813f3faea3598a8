"""Profiles on real folders: the files beside the records that are none (templates, indexes, READMEs), and
titles as a reader sees them (a Markdown link as its words, no emphasis or code marks)."""

from __future__ import annotations

import pytest

from knowtk.model.dialects.markdown import reader_text
from knowtk.model.profile import NOT_A_RECORD, ProfileMap
from tests.helpers import StoreBuilder, markdown_digest

ADR = "# {n}. {title}\n\nDate: 2024-01-{n:02d}\n\n## Status\n\n{status}\n\n## Context\n\nWords about {word}.\n"


def adr_folder(builder: StoreBuilder) -> None:
    builder.raw("docs/adr/0001-use-influxdb.md", ADR.format(n=1, title="Use InfluxDB", status="Accepted", word="a"))
    builder.raw(
        "docs/adr/0003-push-metrics.md",
        "# [Superseded by [ADR-0019](0019-push-metrics-via-thanos.md)] Push Metrics via InfluxDB\n\n"
        "## Status\n\nSuperseded by [ADR-0019](0019-push-metrics-via-thanos.md)\n",
    )
    builder.raw(
        "docs/adr/0019-push-metrics-via-thanos.md",
        ADR.format(n=19, title="Push metrics via **Thanos** and `remote_write`", status="Accepted", word="b"),
    )
    builder.raw("docs/adr/adr-template.md", "# {short title, representative of solved problem}\n\n## Status\n\n{x}\n")
    builder.raw("docs/adr/template.md", "# Title\n\nStatus: proposed\n")
    builder.raw("docs/adr/index.md", "# Decision log\n\n- [ADR-1](0001-use-influxdb.md)\n")
    builder.raw("docs/adr/README.md", "# Architecture decisions\n\nHow we write them.\n")
    builder.raw("docs/adr/guidelines.md", "# Guidelines\n\nHow to write one.\n")


def test_templates_indexes_and_readmes_are_no_records_and_no_defects(builder: StoreBuilder) -> None:
    adr_folder(builder)
    before = markdown_digest(builder.root)
    store = builder.open(profile="adr")
    snap = store.snapshot()
    assert sorted(snap.records) == [
        "docs:adr:0001",
        "docs:adr:0003",
        "docs:adr:0019",
        "docs:adr:guidelines",  # a page that is no ADR is still a page
    ]
    assert store.grep("representative")["total"] == 0  # the template's words are in no record
    assert snap.issues == []  # and it is no coverage issue: a template is not a defect
    told = store.explain("docs/adr/adr-template.md")
    assert told["status"] == "excluded" and told["rule"] == "not_a_record"
    assert "does not read a file of this name as a record (not_records" in told["message"]
    assert markdown_digest(builder.root) == before


def test_titles_are_the_text_a_reader_sees(builder: StoreBuilder) -> None:
    adr_folder(builder)
    records = builder.open(profile="adr").snapshot().records
    assert records["docs:adr:0003"].title == "[Superseded by ADR-0019] Push Metrics via InfluxDB"
    assert records["docs:adr:0003"].superseded_by == "docs:adr:0019"  # the link is still read for the chain
    assert records["docs:adr:0019"].title == "Push metrics via Thanos and remote_write"
    builder.raw("notes/plain.md", "# A *plain* note with [a link](https://example.org)\n\nBody.\n")
    plain = builder.open(profile="plain").snapshot().records
    assert plain["notes:plain"].title == "A plain note with a link"
    assert plain["docs:adr:README"].title == "Architecture decisions"  # plain reads every file: a README is a page


@pytest.mark.parametrize(
    ("written", "seen"),
    [
        ("[Superseded by [ADR-0019](0019-x.md)] Push", "[Superseded by ADR-0019] Push"),
        ("**Bold** and __strong__ and *em* and _em_", "Bold and strong and em and em"),
        ("Use `**kwargs` in `f()`", "Use **kwargs in f()"),
        ("snake_case_name and 2 * 3 * 4", "snake_case_name and 2 * 3 * 4"),
        ("An ![image](a.png) and a [reference][ref] and <https://x.org>", "An image and a reference and https://x.org"),
        (r"Cost \*not\* emphasis", "Cost *not* emphasis"),
        ("~~old~~ new", "old new"),
        ("[brackets] without a link", "[brackets] without a link"),
    ],
)
def test_reader_text(written: str, seen: str) -> None:
    assert reader_text(written) == seen


def test_knowtk_yaml_not_records_replaces_the_list(builder: StoreBuilder) -> None:
    adr_folder(builder)
    builder.raw("knowtk.yaml", "profile: adr\nnot_records: []\n")  # every file is read again
    store = builder.open()
    records = store.snapshot().records
    assert "docs:adr:adr-template" in records and "docs:adr:index" in records
    builder.raw("knowtk.yaml", "profile: adr\nnot_records: [guidelines.md, 'adr-*.md']\n")
    records = store.snapshot().records  # a changed knowtk.yaml is read by the next query
    assert "docs:adr:guidelines" not in records and "docs:adr:adr-template" not in records
    assert "docs:adr:index" in records and "docs:adr:0001" in records


def test_not_records_under_knowtks_own_format_after_adopting(builder: StoreBuilder) -> None:
    """An adopted folder keeps its template: knowtk.yaml names it, and the template is no defect."""
    builder.page("dec-1", "One", "Body.")
    builder.raw("adr-template.md", "# {title}\n")
    assert [i.code for i in builder.open().snapshot().issues] == ["frontmatter_missing"]
    builder.raw("knowtk.yaml", "not_records: [adr-template.md]\n")
    snap = builder.open().snapshot()
    assert snap.issues == [] and list(snap.records) == ["dec-1"]


def test_a_bad_not_records_is_a_config_issue(builder: StoreBuilder) -> None:
    adr_folder(builder)
    builder.raw("knowtk.yaml", "profile: adr\nnot_records: template.md\n")
    snap = builder.open().snapshot()
    assert [i.code for i in snap.issues] == ["config_invalid"]
    assert "not_records must be a list" in snap.issues[0].message
    assert "docs:adr:template" not in snap.records  # the profile's own list holds


def test_profile_map_for_path() -> None:
    adr = ProfileMap("adr")
    assert adr.for_path("docs/adr/ADR-Template.md") == NOT_A_RECORD  # the name's case does not matter
    assert adr.for_path("docs/adr/0001-x.md") == "adr"
    assert ProfileMap("plain").for_path("README.md") == "plain"  # plain has no list of its own
    assert ProfileMap().for_path("README.md") == "knowtk"
    assert ProfileMap("adr", not_records=()).for_path("index.md") == "adr"
    assert ProfileMap().key() == "knowtk"  # a knowtk-format store's key is unchanged
    assert ProfileMap("adr").key() != ProfileMap("adr", not_records=()).key()  # another list: files read again
