"""Gold sets: the YAML and CSV formats, and a clear GoldSetError (file, line, case, field) for every malformed case."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowtk import InvalidArgument, KnowtkError
from knowtk.lab import GoldSetError, load_gold, parse_gold
from tests.helpers import REPO

GOLD = REPO / "data" / "fixtures" / "gold"


def refused(text: str, fmt: str = "yaml") -> GoldSetError:
    with pytest.raises(GoldSetError) as info:
        parse_gold(text, format=fmt, path="g." + fmt)
    return info.value


def test_the_demo_gold_set_loads_in_both_formats_with_the_same_cases() -> None:
    yaml_set, csv_set = load_gold(GOLD / "demo.yaml"), load_gold(GOLD / "demo.csv")
    assert yaml_set.name == csv_set.name == "demo" and yaml_set.k == 5
    assert len(yaml_set) == len(csv_set) >= 15
    assert {c.tool for c in yaml_set} == {"knowledge_grep", "knowledge_lookup", "knowl_query"}
    for a, b in zip(yaml_set, csv_set, strict=True):
        assert (a.id, a.tool, dict(a.args), dict(a.expect), a.must_not, a.status, a.k) == (
            b.id,
            b.tool,
            dict(b.args),
            dict(b.expect),
            b.must_not,
            b.status,
            b.k,
        )
    assert [v.name for v in yaml_set.all_variants()] == ["default", "any-words", "top3", "keyword-only", "reworded"]
    assert yaml_set["vector-index-decision"].expect == {"dec-2026-021": 3, "note-search-stack-overview": 1}
    assert yaml_set["keyword-search-engine"].line is not None


def test_a_case_takes_the_variants_arguments_where_its_tool_has_them() -> None:
    gold = load_gold(GOLD / "demo.yaml")
    grep, knowl = gold["accented-spellings"], gold["knowl-rebuild-index"]
    assert grep.args_for(gold.variant("any-words")) == {"query": "accented spellings", "mode": "any"}
    assert knowl.args_for(gold.variant("any-words")) == dict(knowl.args)  # knowl_query has no mode
    assert grep.args_for(gold.variant("reworded"))["query"] == "cafe does not find café"
    assert gold.variant("default").args == {}
    with pytest.raises(InvalidArgument, match="no variant 'nope'"):
        gold.variant("nope")


def test_graded_and_plain_expectations_and_dates_stay_text() -> None:
    gold = parse_gold(
        """
name: t
k: 3
cases:
  - {id: one, tool: knowledge_grep, args: {query: x}, expect: a}
  - {id: two, tool: knowledge_grep, args: {query: x, timeField: occurred_at, since: 2026-01-01}, expect: {a: 2, b: 1}}
  - {id: three, tool: knowledge_lookup, args: {query: x}, status: missing, k: 1}
"""
    )
    assert gold["one"].expect == {"a": 1} and gold["one"].k == 3
    assert gold["two"].args["since"] == "2026-01-01" and gold["two"].expect == {"a": 2, "b": 1}
    assert gold["three"].status == "missing" and gold["three"].k == 1 and not gold["three"].expect
    assert gold.sha256 is not None and len(gold.sha256) == 64


def test_errors_carry_file_line_case_and_field() -> None:
    exc = refused(
        "name: t\ncases:\n  - id: one\n    tool: knowledge_grep\n    args: {query: x, limit: 99}\n    expect: a\n"
    )
    assert isinstance(exc, KnowtkError) and isinstance(exc, ValueError)
    assert (exc.path, exc.line, exc.case, exc.field) == ("g.yaml", 5, "one", "args.limit")
    assert "g.yaml:5" in str(exc) and "limit" in str(exc) and "1 to 50" in str(exc)


def test_an_unknown_tool_is_refused_with_the_allowed_ones() -> None:
    exc = refused("name: t\ncases:\n  - id: one\n    tool: knowledge_grepp\n    args: {query: x}\n    expect: a\n")
    assert exc.field == "tool" and exc.line == 4
    assert "knowledge_grep, knowl_query, knowledge_lookup" in str(exc)


def test_an_unknown_argument_is_refused_naming_the_arguments_the_tool_has() -> None:
    exc = refused(
        "name: t\ncases:\n  - id: one\n    tool: knowledge_grep\n    args: {query: x, mdoe: any}\n    expect: a\n"
    )
    assert exc.field == "args.mdoe" and "no such argument" in str(exc) and "'mode'" in str(exc)
    exc = refused("name: t\ncases:\n  - {id: one, tool: knowledge_grep, args: {query: x, time_field: x}, expect: a}\n")
    assert "time_field" in str(exc) and "timeField" in str(exc)  # the contract's camelCase names


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("{id: one, tool: knowledge_grep, args: {query: x}}", "expects nothing"),
        ("{id: one, tool: knowledge_grep, args: {query: x}, expect: {a: 0}}", "grade of a"),
        ("{id: one, tool: knowledge_grep, args: {query: x}, expect: 'bad id'}", "is not a record id"),
        ("{id: one, tool: knowledge_grep, args: {query: x}, expect: [a, a]}", "listed twice"),
        ("{id: one, tool: knowledge_grep, args: {query: x}, expect: a, must_not: a}", "both expected and must_not"),
        ("{id: one, tool: knowledge_grep, args: {query: x}, expect: a, status: found}", "only knowledge_lookup"),
        ("{id: one, tool: knowledge_lookup, args: {query: x}, status: lost}", "not a lookup status"),
        ("{id: one, tool: knowledge_grep, args: {query: x, offset: 5}, expect: a}", "offset is not allowed"),
        ("{id: one, tool: knowl_query, args: {id: a}, expect: a}", "ranks nothing"),
        ("{id: one, tool: knowl_query, args: {tags: [x]}, expect: a}", "needs a query"),
        ("{id: one, tool: knowledge_grep, args: {}, expect: a}", "requires it"),
        ("{id: one, tool: knowledge_grep, args: {query: x}, expect: a, k: 0}", "from 1 to 50"),
        ("{id: one, tool: knowledge_grep, args: {query: x}, expect: a, colour: red}", "unknown key 'colour'"),
        ("{tool: knowledge_grep, args: {query: x}, expect: a}", "needs an 'id'"),
        ("{id: one, tool: knowledge_grep, args: {query: x}, expect: a, variants: {fast: {}}}", "does not declare"),
        ("[1, 2]", "must be a mapping"),
    ],
)
def test_malformed_cases_are_refused(case: str, message: str) -> None:
    exc = refused(f"name: t\ncases:\n  - {case}\n")
    assert message in str(exc)
    assert exc.line == 3  # the case's line, or a line within it


def test_whole_file_errors() -> None:
    assert refused("name: t\ncases: [\n").line is not None  # YAML syntax: the parser's line
    assert "non-empty 'cases'" in str(refused("name: t\ncases: []\n"))
    assert "unknown key 'case'" in str(refused("name: t\ncase: []\n"))
    exc = refused(
        "name: t\ncases:\n  - {id: a, tool: knowledge_grep, args: {query: x}, expect: a}\n"
        "  - {id: a, tool: knowledge_grep, args: {query: y}, expect: a}\n"
    )
    assert exc.line == 4 and "used twice" in str(exc)


def test_variants_are_checked_against_every_case() -> None:
    head = "name: t\nvariants:\n  {spec}\ncases:\n  - {{id: a, tool: knowledge_grep, args: {{query: x}}, expect: a}}\n"
    assert "no case's tool takes" in str(refused(head.format(spec="v: {args: {status: all}}")))
    assert "under variant 'v'" in str(refused(head.format(spec="v: {args: {mode: some}}")))
    assert "offset is not allowed" in str(refused(head.format(spec="v: {args: {offset: 3}}")))
    assert "true or false" in str(refused(head.format(spec="v: {semantic: maybe}")))
    assert "short word" in str(refused(head.format(spec="'a b': {}")))


def test_csv_cells_rows_and_errors(tmp_path: Path) -> None:
    text = (
        "id,tool,query,expect,must_not,status,k,limit,mode\n"
        "one,knowledge_grep,zebra,a=3; b,c,,2,5,any\n"
        ",,,,,,,,\n"
        "# a comment row,,,,,,,,\n"
        "two,knowledge_lookup,Zebra,a,,found,,,\n"
    )
    path = tmp_path / "g.csv"
    path.write_text(text, encoding="utf-8")
    gold = load_gold(path)
    assert gold.name == "g" and [c.id for c in gold] == ["one", "two"]
    one = gold["one"]
    assert one.args == {"query": "zebra", "limit": 5, "mode": "any"}  # limit read as a number
    assert one.expect == {"a": 3, "b": 1} and one.must_not == ("c",) and one.k == 2
    assert gold["two"].line == 5
    exc = refused("id,tool,query,expect,args\none,knowledge_grep,x,a,{oops\n", "csv")
    assert (exc.line, exc.case, exc.field) == (2, "one", "args")
    exc = refused("id,tool,query,expect,limit\none,knowledge_grep,x,a,many\n", "csv")
    assert exc.field == "args.limit" and "integer" in str(exc)
    assert "no 'tool' column" in str(refused("id,query,expect\none,x,a\n", "csv"))
    assert "grade 'x'" in str(refused("id,tool,query,expect\none,knowledge_grep,q,a=x\n", "csv"))


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(GoldSetError, match="cannot read"):
        load_gold(tmp_path / "absent.yaml")
    (tmp_path / "g.txt").write_text("name: t", encoding="utf-8")
    with pytest.raises(GoldSetError, match=r"\.yaml, \.yml or \.csv"):
        load_gold(tmp_path / "g.txt")
    (tmp_path / "b.yaml").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(GoldSetError, match="UTF-8"):
        load_gold(tmp_path / "b.yaml")
    (tmp_path / "huge.yaml").write_bytes(b"#" * (8 * 1024 * 1024 + 1))
    with pytest.raises(GoldSetError, match="at most"):
        load_gold(tmp_path / "huge.yaml")
    with pytest.raises(InvalidArgument, match="format"):
        parse_gold("x", format="json")
