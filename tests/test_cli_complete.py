"""The command line's own help on the way: did-you-mean, the subcommand's usage, export, coverage in one line,
timeline --type, a page the response budget cut, knowl's count and uncalibrated scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowtk.cli import main
from knowtk.cli.registry import close_words
from knowtk.query.views import footer
from tests.helpers import StoreBuilder, markdown_digest


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def store(builder: StoreBuilder) -> Path:
    for i in range(3):
        builder.page(
            f"dec-{i}",
            f"Decision {i}",
            "A decision body. " * 10,
            kind="claim",
            type="decision",
            occurred_at=f"2026-03-0{i + 1}",
        )
    builder.page("evt-1", "An event", "Body.", kind="claim", type="event", occurred_at="2026-03-05")
    builder.raw("notes/broken.md", "---\nid: [unclosed\n")
    return builder.root


def test_a_mistyped_command_is_answered_with_the_closest(capsys, store: Path) -> None:
    code, _, err = run(capsys, "--store", str(store), "grpe", "zebra")
    assert code == 2 and "invalid choice: 'grpe'" in err and err.rstrip().endswith("did you mean 'grep'?")
    code, _, err = run(capsys, "--store", str(store), "chronicle", "dya", "2026-03-01")
    assert code == 2 and "did you mean 'day'?" in err and err.startswith("usage: knowtk chronicle")
    code, _, err = run(capsys, "--store", str(store), "zzzzzz")
    assert code == 2 and "did you mean" not in err  # nothing close: no guess


def test_close_words() -> None:
    assert close_words("grpe", ["grep", "records", "record"]) == ["grep"]
    assert close_words("recrod", ["grep", "records", "record"]) == ["record"]
    assert close_words("look", ["lookup", "knowl"]) == ["lookup"]  # a beginning
    assert close_words("xyz", ["grep", "lookup"]) == []


def test_unrecognized_arguments_print_the_subcommands_usage(capsys, store: Path) -> None:
    code, out, err = run(capsys, "--store", str(store), "grep", "zebra", "--bogus")
    assert code == 2 and out == ""
    assert err.startswith("usage: knowtk grep") and "knowtk grep: error: unrecognized arguments: --bogus" in err
    code, _, err = run(capsys, "--store", str(store), "chronicle", "since", "2026-03-01", "--nope")
    assert code == 2 and err.startswith("usage: knowtk chronicle since")


def test_coverage_is_one_line_and_the_coverage_command_lists_it(capsys, store: Path) -> None:
    code, out, _ = run(capsys, "--store", str(store), "grep", "decision")
    lines = [line for line in out.splitlines() if "coverage" in line]
    assert code == 0 and lines == [
        "coverage incomplete: 1 file issue(s) left out or read in part; list them: knowtk coverage"
    ]
    code, out, _ = run(capsys, "--store", str(store), "coverage")
    assert code == 0 and out.splitlines()[0].startswith("1 coverage issue(s)")
    assert "notes/broken.md: frontmatter_" in out
    code, out, _ = run(capsys, "--store", str(store), "coverage", "--scope", "notes", "--json")
    assert json.loads(out)["complete"] is False
    assert footer({"coverage": {"complete": False, "issueCount": 40, "issues": []}}) == [
        "coverage incomplete: 40 file issue(s) left out or read in part; list them: knowtk coverage"
    ]


def test_export_writes_the_tables(capsys, store: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    before = markdown_digest(store)
    code, out, _ = run(capsys, "--store", str(store), "export", str(tmp_path / "out"))
    assert code == 0 and {line.split(":")[0] for line in out.splitlines()} == {
        "records",
        "dates",
        "chains",
        "coverage_issues",
    }
    assert (tmp_path / "out" / "records.parquet").is_file()
    code, _, err = run(capsys, "--store", str(store), "export", str(tmp_path / "x"), "--format", "csv")
    assert code == 2 and "--format" in err and "parquet" in err
    assert markdown_digest(store) == before


def test_timeline_type_is_kind(capsys, store: Path) -> None:
    typed = json.loads(run(capsys, "--store", str(store), "timeline", "--type", "event", "--json")[1])
    kinded = json.loads(run(capsys, "--store", str(store), "timeline", "--kind", "event", "--json")[1])
    assert [r["id"] for r in typed["rows"]] == ["evt-1"] == [r["id"] for r in kinded["rows"]]
    typed_grep = json.loads(run(capsys, "--store", str(store), "grep", "decision", "--type", "decision", "--json")[1])
    assert typed_grep["total"] == 3  # grep's --type is its own argument (the ontology type), untouched


def test_a_page_the_budget_cut_says_so(builder: StoreBuilder, capsys) -> None:
    for i in range(40):  # long titles: 40 rows outgrow the timeline's 24 KiB page
        builder.page(f"evt-{i:02d}", "Long title " * 60, "Body.", kind="claim", type="event", occurred_at="2026-01-02")
    code, out, _ = run(capsys, "--store", str(builder.root), "timeline", "--limit", "40")
    data = json.loads(run(capsys, "--store", str(builder.root), "timeline", "--limit", "40", "--json")[1])
    shown, after = len(data["rows"]), data["nextOffset"]
    assert 0 < shown < 40 and after == shown
    note = f"note: {shown} of the 40 rows asked fit the page's 24 KiB response budget; the rest follow with --offset"
    assert code == 0 and out.rstrip().endswith(f"{note} {after}")
    assert "note:" not in run(capsys, "--store", str(builder.root), "timeline", "--limit", "3")[1]  # not cut


def test_knowl_says_how_many_it_shows_and_why(capsys, store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWTK_SEMANTIC", "0")
    code, out, _ = run(capsys, "--store", str(store), "knowl", "decision")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "3 item(s) match; showing 3"
    assert lines[1].startswith("scores: uncalibrated (") and lines[1].endswith("with no measure of strength")
    assert "uncalibrated" not in "\n".join(lines[2:])  # said once, not on every row
    assert [line.split("]")[0].strip() for line in lines if line.startswith("  [")] == ["[#1", "[#2", "[#3"]
    out = run(capsys, "--store", str(store), "knowl", "decision", "--limit", "1")[1]
    assert out.splitlines()[0] == "3 item(s) match; showing 1 (the best-ranked: --limit N shows more)"
