"""Hostile record content: each bad file costs only itself (a coverage issue), never an exception or a hang."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from knowtk.errors import InvalidArgument
from knowtk.model.datevalues import LAST_INSTANT, parse_bound, parse_date_value
from knowtk.model.records import FileProblem, build_record, load_frontmatter
from tests.helpers import StoreBuilder

GOOD = "---\nid: good\nkind: page\ntitle: Good vector index\n---\nvector index body\n"


def frontmatter(extra: str) -> str:
    return f"---\nid: bad\nkind: page\ntitle: Bad vector index\n{extra}\n---\nvector index body\n"


def file_issues(builder: StoreBuilder, text: str, tool: str = "knowledge_grep") -> tuple[dict[str, Any], list[str]]:
    """Write GOOD and one hostile file, run a tool, return its answer and the hostile file's issue codes."""
    builder.raw("good.md", GOOD)
    builder.raw("bad.md", text)
    args = {"query": "vector index"} if tool in ("knowledge_grep", "knowl_query") else {}
    out = builder.open().call(tool, args)
    return out, [i["code"] for i in out["coverage"]["issues"] if i["path"] == "bad.md"]


def record_of(text: str) -> tuple[Any, list[str]]:
    loaded = load_frontmatter(text.encode())
    if isinstance(loaded, FileProblem):
        return None, [loaded.code]
    meta, _, body_line = loaded
    record, issues = build_record("bad.md", "0" * 64, meta, body_line)
    return record, [i.code for i in issues]


# -- dates at the edges of the calendar ---------------------------------------------------------


def test_last_date_is_valid_and_ends_at_the_last_instant() -> None:
    value = parse_date_value("9999-12-31")
    assert value is not None and value.date_only
    assert value.start == datetime(9999, 12, 31, tzinfo=UTC)
    assert value.end == LAST_INSTANT
    assert value.to_json()["end"] == "9999-12-31T23:59:59.999999Z"
    # every instant of that day overlaps it, its last microsecond included
    assert value.overlaps(LAST_INSTANT, None)
    assert value.overlaps(datetime(9999, 12, 31, 12, tzinfo=UTC), datetime(9999, 12, 31, 13, tzinfo=UTC))
    assert not value.overlaps(None, datetime(9999, 12, 30, 23, tzinfo=UTC))


def test_first_date_and_instants_inside_the_range_are_valid() -> None:
    first = parse_date_value("0001-01-01")
    assert first is not None and first.start == datetime(1, 1, 1, tzinfo=UTC)
    assert parse_date_value("0001-01-01T00:00:00-01:00") is not None
    assert parse_date_value("9999-12-31T23:59:59+01:00") is not None
    assert parse_date_value("9999-12-31T23:59:59Z") is not None


@pytest.mark.parametrize(
    "text", ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", "0000-01-01", "0001-01-01T00:59:59+01:00"]
)
def test_instants_outside_the_representable_years_are_invalid(text: str) -> None:
    assert parse_date_value(text) is None
    with pytest.raises(InvalidArgument, match="since"):
        parse_bound("since", text, upper=False)


def test_until_last_date_covers_the_whole_day() -> None:
    assert parse_bound("until", "9999-12-31", upper=True) == LAST_INSTANT
    assert parse_bound("since", "0001-01-01", upper=False) == datetime(1, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("field", ["occurred_at", "recorded_at", "updated_at", "due_at", "expires_at"])
@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("9999-12-31", True),
        ("0001-01-01", True),
        ("9999-12-31T23:59:59-01:00", False),
        ("0001-01-01T00:00:00+01:00", False),
    ],
)
def test_edge_dates_in_a_store(builder: StoreBuilder, field: str, value: str, valid: bool) -> None:
    out, codes = file_issues(builder, frontmatter(f"{field}: {value}"))
    assert codes == ([] if valid else ["date_invalid"])
    ids = sorted(h["id"] for h in out["hits"])
    # a far expiry keeps the record; an impossible one is dropped and costs only that date
    assert ids == (["bad", "good"] if field != "expires_at" or value != "0001-01-01" else ["good"])


def test_edge_dates_through_every_date_tool(builder: StoreBuilder) -> None:
    builder.page("late", "Late", occurred_at="9999-12-31", entities=["late"])
    builder.page("early", "Early", occurred_at="0001-01-01", entities=["late"])
    store = builder.open()
    timeline = store.call("knowledge_timeline", {"since": "0001-01-01", "until": "9999-12-31"})
    assert [r["id"] for r in timeline["rows"]] == ["early", "late"]
    assert timeline["rows"][1]["end"] == "9999-12-31T23:59:59.999999Z"
    assert timeline["rows"][1]["start"] == "9999-12-31T00:00:00Z"
    assert [r["id"] for r in store.call("knowledge_records", {"until": "9999-12-31"})["rows"]] == ["early", "late"]
    for zone in ("UTC", "America/New_York", "Pacific/Kiritimati"):
        day = store.call("knowledge_chronicle_day", {"date": "9999-12-31", "week": True, "timeZone": zone})
        assert [r["id"] for r in day["rows"]] == ["late"]
        assert day["rows"][0]["localEnd"] == "10000-01-01"
        first = store.call("knowledge_chronicle_day", {"date": "0001-01-01", "timeZone": zone})
        assert [r["id"] for r in first["rows"]] == ["early"]
    since = store.call("knowledge_chronicle_since", {"since": "9999-12-31"})
    assert [r["id"] for r in since["rows"]] == ["late"]
    last = store.call("knowledge_chronicle_last_seen", {"entity": "late", "occurredOnOrBefore": "9999-12-31"})
    assert [r["id"] for r in last["rows"]] == ["late", "early"]
    assert store.call("knowledge_grep", {"query": "late", "until": "9999-12-31"})["total"] == 1


# -- YAML ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ("summary: !!float abc", "frontmatter_invalid"),
        ("revision: !!int xyz", "frontmatter_invalid"),
        ("summary: !!binary 'abc'", "frontmatter_invalid"),
        ("summary: !!bool maybe", "frontmatter_invalid"),
        ("summary: !!int '-'", "frontmatter_invalid"),
        ("summary: !!python/object:os.system x", "frontmatter_invalid"),
        ("recorded_at: !!timestamp 2023-02-30", "date_invalid"),
        ("recorded_at: !!timestamp nonsense", "date_invalid"),
    ],
)
def test_yaml_tags_with_bad_values(builder: StoreBuilder, extra: str, code: str) -> None:
    out, codes = file_issues(builder, frontmatter(extra))
    assert codes == [code]
    assert "good" in [h["id"] for h in out["hits"]]


def test_a_tagged_timestamp_is_validated_as_text() -> None:
    record, codes = record_of(frontmatter("recorded_at: !!timestamp 2026-03-04T10:00:00Z"))
    assert codes == [] and record.dates["recorded_at"].text == "2026-03-04T10:00:00Z"


@pytest.mark.parametrize("extra", ["revision: " + "9" * 5000, "summary: " + "9" * 5000, "summary: 0x" + "f" * 4000])
def test_integers_past_the_digit_limit(builder: StoreBuilder, extra: str) -> None:
    _, codes = file_issues(builder, frontmatter(extra))
    assert codes == ["frontmatter_invalid"]


@pytest.mark.parametrize("revision", [2**63, 10**30])
def test_revision_too_large_for_sqlite(builder: StoreBuilder, revision: int) -> None:
    text = frontmatter(f"revision: {revision}\nstatus: superseded\nsuperseded_by: good")
    out, codes = file_issues(builder, text, "knowledge_records")
    assert codes == ["revision_invalid"]
    assert [r["id"] for r in out["rows"]] == ["good"]


def test_largest_sqlite_revision_is_valid() -> None:
    record, codes = record_of(frontmatter(f"revision: {2**63 - 1}"))
    assert codes == [] and record.revision == 2**63 - 1


@pytest.mark.parametrize(
    "extra",
    ["fields: &a {self: *a}", "fields: &a [x, *a]", "fields: &a {list: [1, {deeper: *a}]}"],
)
def test_recursive_alias(builder: StoreBuilder, extra: str) -> None:
    _, codes = file_issues(builder, frontmatter(extra))
    assert codes == ["frontmatter_recursive"]


def alias_bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"fields: {{bomb: *a{levels - 1}}}")
    return "\n".join(lines)


def test_alias_bomb_is_refused(builder: StoreBuilder) -> None:
    bomb = alias_bomb()
    assert len(bomb) < 1100  # a kilobyte that expands to 9**9 (387 million) strings
    record, codes = record_of(frontmatter(bomb))
    assert record is None and codes == ["frontmatter_too_large"]
    _, codes = file_issues(builder, frontmatter(bomb))
    assert codes == ["frontmatter_too_large"]


def test_shared_aliases_within_reason_are_kept() -> None:
    record, codes = record_of(frontmatter("tags: &t [a, b]\nfields: {again: *t, more: *t}"))
    assert codes == [] and record.tags == ("a", "b") and record.fields["more"] == ["a", "b"]


def test_deep_nesting_is_refused() -> None:
    _, codes = record_of(frontmatter("fields: {x: " + "[" * 100 + "]" * 100 + "}"))
    assert codes == ["frontmatter_too_large"]
    _, codes = record_of(frontmatter("fields: {x: " + "[" * 20 + "]" * 20 + "}"))
    assert codes == []


def test_escaped_lone_surrogate_is_not_text() -> None:
    _, codes = record_of(frontmatter('summary: "\\ud800"'))
    assert codes == ["frontmatter_invalid"]


def test_hostile_knowtk_yaml_is_a_config_issue(builder: StoreBuilder) -> None:
    builder.raw("good.md", GOOD)
    for text in (alias_bomb(), "name: !!int xyz", "ontology: &o {t: {aliases: *o}}", "name: " + "9" * 5000):
        builder.raw("knowtk.yaml", text)
        out = builder.open().call("knowledge_grep", {"query": "vector"})
        assert [i["code"] for i in out["coverage"]["issues"]] == ["config_invalid"], text[:40]
        assert [h["id"] for h in out["hits"]] == ["good"]
