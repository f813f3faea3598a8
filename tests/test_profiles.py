"""Store profiles: Markdown written for other tools read as records, keys derived and shown as derived.

The ADR, vault and plain fixtures under data/fixtures/profiles/ were written for these tests (after reading
real adr-tools, MADR 2/3/4 and log4brains folders): they mix dialects, rename statuses, link with and
without the number, keep templates and indexes beside the records, and nest folders.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.errors import InvalidArgument
from knowtk.mcp.agent import compact
from knowtk.model.profile import path_id
from knowtk.notebook.panes import issues_html
from knowtk.query.wikilinks import resolve_wikilink
from tests.helpers import REPO, StoreBuilder, markdown_digest

PROFILES = REPO / "data" / "fixtures" / "profiles"


def fixture(tmp_path: Path, name: str) -> Path:
    """A copy of one fixture folder (its state is written beside the copy, never into the repository)."""
    root = tmp_path / name
    shutil.copytree(PROFILES / name, root)
    return root


def issues_of(store: knowtk.Store) -> list[dict[str, Any]]:
    return [i.to_json() for i in store.snapshot().issues]


def ids(result: knowtk.Result, key: str = "rows") -> list[str]:
    return [row["id"] for row in result.to_dict()[key]]


# -- the default is the contract, unchanged ----------------------------------------------------------


def test_default_profile_reads_no_plain_markdown(tmp_path: Path) -> None:
    root = fixture(tmp_path, "plain")
    store = knowtk.open_store(root)
    assert store.snapshot().records == {}
    assert {i["code"] for i in issues_of(store)} == {"frontmatter_missing", "id_missing"}
    assert store.engine.scanner.profiles.plain_contract


def test_unknown_profile_is_refused_naming_the_argument(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument) as refused:
        knowtk.open_store(tmp_path, profile="madr")
    assert refused.value.argument == "profile"
    assert "plain" in str(refused.value) and "adr" in str(refused.value)


# -- plain ---------------------------------------------------------------------------------------------


def test_plain_derives_id_title_kind_type_and_keeps_other_keys(tmp_path: Path) -> None:
    root = fixture(tmp_path, "plain")
    store = knowtk.open_store(root, profile="plain")
    records = store.snapshot().records
    assert sorted(records) == ["README", "guides:onboarding", "guides:search-design"]
    readme, guide, design = records["README"], records["guides:onboarding"], records["guides:search-design"]
    assert readme.title == "Team handbook" and readme.kind == "page" and readme.type == "note"  # the first H1
    assert guide.title == "Onboarding guide" and "title" not in guide.derived  # the frontmatter's title wins
    assert design.title == "search design"  # no heading: the file name
    assert guide.fields == {"owner_team": "platform", "status": "draft"}  # other keys (and a foreign status) kept
    assert guide.status == "active"
    assert set(readme.derived) == {"id", "kind", "type", "title"}
    assert all(not r.dates for r in records.values())  # never a date from the file system
    assert issues_of(store) == []


def test_plain_full_record_shows_derived_keys_and_the_written_frontmatter(tmp_path: Path) -> None:
    root = fixture(tmp_path, "plain")
    record = knowtk.open_store(root, profile="plain").record("guides:onboarding").to_dict()["record"]
    assert record["profile"] == "plain"
    assert set(record["derived"]) == {"id", "kind", "type", "status"}
    assert record["frontmatter"] == {"title": "Onboarding guide", "owner_team": "platform", "status": "draft"}


def test_a_key_written_validly_wins(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path)
    b.raw("notes/a.md", "---\nid: my-own\nkind: claim\ntags: [x]\n---\n# Heading\n")
    r = knowtk.open_store(tmp_path, profile="plain").snapshot().records["my-own"]
    assert (r.kind, r.type, r.title, r.tags) == ("claim", "claim", "Heading", ("x",))  # type: the kind, as ever
    assert set(r.derived) == {"title"}


def test_plain_id_collisions_are_reported_naming_both_files(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path)
    b.raw("a b.md", "one\n")
    b.raw("a-b.md", "two\n")
    b.raw("Café.md", "three\n")
    store = knowtk.open_store(tmp_path, profile="plain")
    assert "a-b" not in store.snapshot().records and "Cafe" in store.snapshot().records
    dups = [i for i in issues_of(store) if i["code"] == "id_duplicate"]
    assert sorted(i["path"] for i in dups) == ["a b.md", "a-b.md"]


def test_path_ids_stay_inside_the_grammar() -> None:
    assert path_id("docs/My note.md") == "docs:My-note"
    assert path_id("-odd/__x.md") == "odd:__x"
    long = path_id("a/" + "x" * 300 + ".md")
    assert len(long) <= 128 and long != path_id("a/" + "x" * 301 + ".md")


def test_plain_citations_count_lines_in_the_real_file(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path)
    b.raw("n.md", "# Title\n\nfirst para\n\nthe needle is here\n")
    b.raw("m.md", "---\nteam: x\n---\nintro\n\nsecond needle\n")
    store = knowtk.open_store(tmp_path, profile="plain")
    hits = {h["id"]: h for h in store.grep("needle").to_dict()["hits"]}
    assert (hits["n"]["citation"]["lineStart"], hits["n"]["citation"]["lineEnd"]) == (1, 5)  # the whole file
    assert (hits["m"]["citation"]["lineStart"], hits["m"]["citation"]["lineEnd"]) == (4, 6)  # after the frontmatter
    title = store.grep("Title").to_dict()["hits"][0]
    assert title["citation"]["lineStart"] == 1  # the H1 the title came from


# -- adr: adr-tools ------------------------------------------------------------------------------------


def test_adr_tools_folder(tmp_path: Path) -> None:
    root = fixture(tmp_path, "adr-tools")
    before = markdown_digest(root)
    store = knowtk.open_store(root, profile="adr")
    records = store.snapshot().records
    first = records["doc:adr:0001"]
    assert (first.title, first.type, first.kind) == ("Record architecture decisions", "decision", "claim")
    assert first.dates["occurred_at"].text == "2024-01-08"
    assert first.fields["adr_status"] == "accepted" and "adr/accepted" in first.tags
    assert records["doc:adr:0002"].status == "superseded"
    assert records["doc:adr:0002"].superseded_by == "doc:adr:0004"
    assert records["doc:adr:0006"].status == "active" and records["doc:adr:0006"].fields["adr_status"] == "rejected"
    assert records["doc:adr:0003"].fields["adr_amended_by"] == ["doc:adr:0005"]
    assert records["doc:adr:0004"].fields["adr_supersedes"] == ["doc:adr:0002"]
    assert "doc:adr:README" not in records  # the index beside the records is none, and no defect either
    # the replacement that resolves to no file, and the date that is no date: each names its line
    by_code = {i["code"]: i for i in issues_of(store) if i["path"].endswith("0007-ship-a-windows-installer.md")}
    assert "derived from line 7" in by_code["supersession_target_missing"]["message"]
    assert by_code["date_invalid"]["message"].startswith("line 3:")
    assert "occurred_at" not in records["doc:adr:0007"].dates
    store.grep("index")
    store.lookup("ADR-5")
    store.record("doc:adr:0002")
    store.timeline()
    assert markdown_digest(root) == before  # reading never writes a file


def test_superseded_wording_finds_the_current_decision(tmp_path: Path) -> None:
    store = knowtk.open_store(fixture(tmp_path, "adr-tools"), profile="adr")
    hit = store.grep("inverted index as flat JSON files").to_dict()["hits"][0]
    assert hit["id"] == "doc:adr:0004" and hit["via"]["id"] == "doc:adr:0002"


def test_lookup_by_adr_number(tmp_path: Path) -> None:
    store = knowtk.open_store(fixture(tmp_path, "adr-tools"), profile="adr")
    for query in ("ADR-5", "0005", "ADR-0005"):
        answer = store.lookup(query).to_dict()
        assert answer["status"] == "found" and answer["record"]["id"] == "doc:adr:0005", query


def test_status_tag_filters(tmp_path: Path) -> None:
    store = knowtk.open_store(fixture(tmp_path, "adr-tools"), profile="adr")
    assert ids(store.records(tag="adr/rejected")) == ["doc:adr:0006"]


# -- adr: MADR 2, 3 and 4, nested folders ----------------------------------------------------------------


def test_madr_folder_chains_across_folders(tmp_path: Path) -> None:
    root = fixture(tmp_path, "madr")
    before = markdown_digest(root)
    store = knowtk.open_store(root, profile="adr")
    snap = store.snapshot()
    records = snap.records
    assert records["docs:decisions:0001"].superseded_by == "docs:decisions:0004"  # MADR 2 link
    assert records["docs:decisions:0004"].superseded_by == "docs:decisions:0006"  # MADR 3 "superseded by ADR-0006"
    assert records["docs:decisions:0004"].fields["status"] == "superseded by ADR-0006"  # what was written, kept
    assert snap.chain_ends["docs:decisions:0001"].current == "docs:decisions:0006"
    archived = records["docs:decisions:archive:0003"]
    assert archived.superseded_by == "docs:decisions:0009"  # ../ from a nested folder
    partly = records["docs:decisions:archive:0005"]
    assert partly.status == "active" and partly.fields["adr_partly_superseded_by"] == ["docs:decisions:0007"]
    assert records["docs:decisions:0008"].fields["adr_status"] == "deprecated"
    assert records["docs:decisions:0008"].status == "active"
    assert records["docs:decisions:0002"].fields["decision-makers"] == ["Ines", "Tomas"]
    assert "docs:decisions:adr-template" not in records  # the template is no record
    assert "docs:decisions:index" not in records
    assert issues_of(store) == []
    hit = store.grep("Ansible playbooks").to_dict()["hits"][0]
    assert hit["id"] == "docs:decisions:0006" and hit["via"]["id"] == "docs:decisions:0001"
    assert markdown_digest(root) == before


def test_log4brains_folder(tmp_path: Path) -> None:
    store = knowtk.open_store(fixture(tmp_path, "log4brains"), profile="adr")
    records = store.snapshot().records
    old = records["docs:adr:20230214-store-uploads-on-local-disk"]
    assert old.superseded_by == "docs:adr:20230901-store-uploads-in-object-storage"
    assert old.dates["occurred_at"].text == "2023-02-14"
    assert "docs:adr:template" not in records and "docs:adr:index" not in records
    dated = records["docs:adr:20230320-keep-a-changelog"]  # a date, no status: a decision all the same
    assert dated.type == "decision" and dated.status == "active" and "adr_status" not in dated.fields
    assert issues_of(store) == []


def test_unresolved_replacement_is_an_issue_never_a_silent_active(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path)
    b.raw("adr/0001-a.md", "# 1. A\n\n## Status\n\nSuperseded by the new caching decision\n")
    b.raw("adr/0002-b.md", "---\nstatus: superseded\n---\n# B\n")
    store = knowtk.open_store(tmp_path, profile="adr")
    found = {i["id"]: i for i in issues_of(store) if i["code"] == "replacement_unresolved"}
    assert found["adr:0001"]["message"].startswith("line 5:")
    assert "adr:0002" in found
    assert store.snapshot().records["adr:0001"].status == "active"


# -- knowtk.yaml -----------------------------------------------------------------------------------------


def test_profiles_by_folder_in_knowtk_yaml(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path)
    b.raw("knowtk.yaml", "profile: plain\nprofiles: {docs/adr: adr}\n")
    b.raw("docs/adr/0001-use-x.md", "# 1. Use X\n\nDate: 2024-01-02\n\n## Status\n\nAccepted\n")
    b.raw("docs/guide.md", "# Guide\n")
    b.page("dec-1", "A knowtk record", path="records/dec-1.md")
    records = knowtk.open_store(tmp_path).snapshot().records
    assert records["docs:adr:0001"].type == "decision" and records["docs:adr:0001"].profile == "adr"
    assert records["docs:guide"].profile == "plain"
    assert records["dec-1"].derived == ()  # every key written: nothing derived


def test_a_bad_profile_in_knowtk_yaml_is_a_config_issue(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path)
    b.raw("knowtk.yaml", "profile: madr\n")
    store = knowtk.open_store(tmp_path)
    assert "profile must be one of" in next(i["message"] for i in issues_of(store) if i["code"] == "config_invalid")


def test_changing_the_profile_rereads_every_file_and_leaves_no_stale_hit(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path)
    b.raw("n.md", "# Note\n\nsome unusual wording\n")
    store = knowtk.open_store(tmp_path, profile="plain")
    assert ids(store.grep("unusual"), "hits") == ["n"]
    store.close()
    again = knowtk.open_store(tmp_path)  # the same state, the knowtk profile
    assert again.grep("unusual").to_dict()["hits"] == []
    b.raw("knowtk.yaml", "profile: plain\n")  # knowtk.yaml changes it while the store is open
    assert ids(again.grep("unusual"), "hits") == ["n"]


# -- obsidian --------------------------------------------------------------------------------------------


def test_obsidian_vault(tmp_path: Path) -> None:
    root = fixture(tmp_path, "vault")
    before = markdown_digest(root)
    store = knowtk.open_store(root, profile="obsidian")
    records = store.snapshot().records
    ranking = records["Projects:Search:Ranking"]
    assert ranking.title == "Ranking"  # the file name, not the H1
    assert ranking.aliases == ("BM25 notes", "Ranking plan")
    # not tags: code blocks, inline code, a URL's #section, %% comments %%, headings, #123
    assert ranking.tags == ("project/search", "ranking", "idea")
    assert records["Projects:Search:Tokenizer"].aliases == ("Word splitter",)  # the older `alias`
    assert records["Projects:Search:Tokenizer"].tags == ("project/search", "text")  # a "#a #b" string
    assert records["Archive:Tokenizer"].tags == ("archive", "kept-after-comment")  # a comment over lines
    assert store.lookup("BM25 notes").to_dict()["record"]["id"] == "Projects:Search:Ranking"
    assert sorted(ids(store.records(tag="project/search"))) == ["Projects:Search:Ranking", "Projects:Search:Tokenizer"]
    assert markdown_digest(root) == before


def test_obsidian_wikilinks_resolve_like_obsidian(tmp_path: Path) -> None:
    store = knowtk.open_store(fixture(tmp_path, "vault"), profile="obsidian")
    ranking = store.record("Projects:Search:Ranking").to_dict()["record"]
    assert [(x["target"], x["id"]) for x in ranking["links"]] == [
        ("Tokenizer", "Projects:Search:Tokenizer"),  # the one in the linking note's folder
        ("Daily/2024-03-01", "Daily:2024-03-01"),  # [[path|shown text]]
        ("Archive/old-chart", "Archive:old-chart"),  # an embed
    ]
    daily = store.record("Daily:2024-03-01").to_dict()["record"]
    assert [x["id"] for x in daily["links"]] == ["Projects:Search:Ranking", "Archive:Tokenizer"]  # the shortest path


def test_wikilink_ambiguity() -> None:
    assert resolve_wikilink("x", "c/n.md", ["a/x.md", "b/x.md"]) is None
    assert resolve_wikilink("X", "c/n.md", ["a/x.md", "bb/x.md"]) == "a/x.md"
    assert resolve_wikilink("nothing", "n.md", ["a/x.md"]) is None


# -- the command line ------------------------------------------------------------------------------------


def test_cli_profile_option(tmp_path: Path) -> None:
    root = fixture(tmp_path, "madr")
    run = [sys.executable, "-m", "knowtk", "--json", "--store", str(root), "--profile", "adr", "lookup", "ADR-6"]
    answer = json.loads(subprocess.run(run, capture_output=True, text=True, check=True, cwd=REPO).stdout)
    assert answer["record"]["id"] == "docs:decisions:0006"
    bad = subprocess.run([*run[:6], "nope", "lookup", "x"], capture_output=True, text=True, cwd=REPO)
    assert bad.returncode != 0 and "profile" in bad.stderr


# -- the newcomer's hint ---------------------------------------------------------------------------------


def test_newcomer_hint_on_every_surface(tmp_path: Path) -> None:
    root = fixture(tmp_path, "plain")
    answer = knowtk.open_store(root).grep("search").to_dict()
    hint = answer["coverage"]["hint"]
    assert hint.startswith("3 of 3 files have no knowtk frontmatter") and "--profile plain" in hint
    assert compact("knowledge_grep", answer)["coverage"]["hint"] == hint  # MCP's list answers
    assert "HINT" in issues_html(answer["coverage"]) and "--profile plain" in issues_html(answer["coverage"])
    cli = subprocess.run(
        [sys.executable, "-m", "knowtk", "--store", str(root), "grep", "search"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert f"hint: {hint}" in cli.stdout
    # under the profile it names, or with a knowtk.yaml, no hint (and never a silent switch)
    assert "hint" not in knowtk.open_store(root, profile="plain").grep("search").to_dict()["coverage"]
    (root / "knowtk.yaml").write_text("name: handbook\n")
    assert "hint" not in knowtk.open_store(root).grep("search").to_dict()["coverage"]


@pytest.mark.parametrize("name", ["adr-tools", "madr"])
def test_newcomer_hint_names_adr_for_an_adr_folder(tmp_path: Path, name: str) -> None:
    store = knowtk.open_store(fixture(tmp_path, name))  # (MADR 3/4 files have a frontmatter, but no id)
    assert store.snapshot().records == {}
    assert "--profile adr" in store.grep("index").to_dict()["coverage"]["hint"]


def test_a_knowtk_store_gets_no_hint(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path)
    b.page("a", "A")
    b.raw("loose.md", "no frontmatter\n")
    b.page("b", "B")
    assert "hint" not in knowtk.open_store(tmp_path).grep("A").to_dict()["coverage"]


@pytest.mark.parametrize(
    ("status_text", "status", "superseded_by", "word"),
    [
        ("* Status: Accepted - Superseded by [5](0005-e.md) 2025-08-10", "superseded", "d:0005", "superseded"),
        ("Status: Superseded by [ADR-2]", "superseded", "d:0002", "superseded"),
        ("**Status:** Superseded by 0002", "superseded", "d:0002", "superseded"),
        ("**Status**: Proposed", "active", None, "proposed"),
        ("- Status: deprecated", "active", None, "deprecated"),
        ("status: On hold (waiting for budget)", "active", None, "on-hold"),
        ("Status: Accepted, supersedes [ADR-2]", "active", None, "accepted"),
        ("## Status\n\nRejected", "active", None, "rejected"),
        ("## Status\n\nPartly superseded by [2](0002-b.md)", "active", None, "partly-superseded"),
    ],
)
def test_adr_status_phrases(
    tmp_path: Path, status_text: str, status: str, superseded_by: str | None, word: str
) -> None:
    b = StoreBuilder(tmp_path)
    b.raw("d/0002-b.md", "# 2. B\n\nStatus: accepted\n")
    b.raw("d/0005-e.md", "# 5. E\n\nStatus: accepted\n")
    b.raw("d/0009-x.md", f"# 9. X\n\n```\nStatus: not this one, in code\n```\n\n{status_text}\n")
    r = knowtk.open_store(tmp_path, profile="adr").snapshot().records["d:0009"]
    assert (r.status, r.superseded_by, r.fields["adr_status"]) == (status, superseded_by, word)
    assert f"adr/{word}" in r.tags


def test_mcp_server_reads_with_a_profile(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    root = fixture(tmp_path, "adr-tools")

    async def scenario(*profile: str) -> tuple[dict[str, Any], dict[str, Any]]:
        args = ["-m", "knowtk", "mcp", "--store", str(root), *profile]
        server = StdioServerParameters(command=sys.executable, args=args)
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            found = await session.call_tool("knowledge_lookup", {"query": "ADR-4"})
            hits = await session.call_tool("knowledge_grep", {"query": "index"})
            return dict(found.structured_content or {}), dict(hits.structured_content or {})

    found, hits = anyio.run(scenario, "--profile", "adr")
    assert found["status"] == "found" and found["record"]["id"] == "doc:adr:0004"
    assert "hint" not in hits["coverage"]
    found, hits = anyio.run(scenario)  # without the profile: nothing found, and the hint says why
    assert found["status"] == "missing" and "--profile adr" in hits["coverage"]["hint"]


def test_safeguards_and_evidence_work_on_a_profile_store(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path)
    b.raw("gone.md", "---\nstatus: withdrawn\n---\n# Gone\n\nretracted wording\n")
    b.raw("source.md", "# Source\n\nThe meeting agreed on FTS5.\n")
    b.raw("claim.md", "---\nevidence:\n  - {path: source.md, lines: [3, 3], quote: agreed on FTS5}\n---\n# Claim\n")
    store = knowtk.open_store(tmp_path, profile="plain")
    assert store.snapshot().lifecycle["gone"] == "withdrawn"
    b.raw("gone.md", "# Gone\n\nretracted wording\n")  # the status line removed: the safeguard keeps it withdrawn
    assert store.snapshot().lifecycle["gone"] == "withdrawn"
    assert store.grep("retracted").to_dict()["hits"] == []
    evidence = store.record("claim").to_dict()["record"]["evidence"]
    assert evidence[0]["verified"] is True
