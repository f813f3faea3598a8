"""The command line: a subcommand per tool, options from the Param specs, --json anywhere, exit codes 0/2/1."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.cli import COMMANDS, main, parser
from knowtk.query import TOOLS
from tests.helpers import StoreBuilder


@pytest.fixture
def store(builder: StoreBuilder) -> Path:
    builder.raw("knowtk.yaml", "name: cli-store\nontology:\n  decision: {aliases: [adr]}\n")
    builder.page("person-ada", "Ada Okafor", "Ada leads search.", aliases=["Ada"], tags=["people"])
    builder.page(
        "dec-new",
        "Zebra crossing",
        "The zebra body.",
        kind="claim",
        type="decision",
        tags=["road"],
        entities=["person-ada"],
        occurred_at="2026-03-04",
        recorded_at="2026-03-05T09:12:00Z",
        path="decisions/dec-new.md",
    )
    builder.page(
        "dec-old",
        "Striped pedestrian stripes",
        "Earlier wording.",
        kind="claim",
        type="decision",
        status="superseded",
        superseded_by="dec-new",
        path="decisions/dec-old.md",
    )
    return builder.root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_every_tool_has_a_subcommand_with_every_argument() -> None:
    parser()  # fills each command's flags
    tools = {c.tool: c for c in COMMANDS.values() if c.tool}
    assert set(tools) == set(TOOLS)  # the write tools' commands are hand-made (create, update, ..., history)
    tools = {name: cmd for name, cmd in tools.items() if not TOOLS[name].writes}
    assert {"call", "mcp", "grep", "lookup", "records", "record", "timeline", "knowl"} <= set(COMMANDS)
    assert {"chronicle day", "chronicle since", "chronicle last-seen"} <= set(COMMANDS)
    for tool, cmd in tools.items():
        assert set(cmd.flags) == {p.name for p in TOOLS[tool].params}, cmd.name


def test_grep_table_json_both_positions_and_superseded_wording(store: Path, capsys) -> None:
    code, out, _ = run(capsys, "--store", str(store), "grep", "zebra")
    assert code == 0 and "1 hit(s)" in out and "dec-new  Zebra crossing" in out and "decisions/dec-new.md:" in out
    code, out, _ = run(capsys, "--store", str(store), "grep", "pedestrian", "stripes")  # words need no quotes
    # the current record's score column stays empty: "superseded" is said of the earlier record, on its own line
    assert code == 0 and "[  -  ] dec-new" in out and "matched via superseded dec-old" in out
    assert "[superseded]" not in out
    before = json.loads(run(capsys, "--json", "--store", str(store), "grep", "zebra", "--lifecycle", "all")[1])
    after = json.loads(run(capsys, "grep", "zebra", "--lifecycle", "all", "--json", "--store", str(store))[1])
    assert before["hits"] == after["hits"] and [h["id"] for h in before["hits"]] == ["dec-new"]
    assert before == {**after, "freshness": before["freshness"]}  # the contract's dict, as Store.call returns it
    tagged = json.loads(run(capsys, "--store", str(store), "grep", "zebra", "--tag", "road", "--tag", "x", "--json")[1])
    assert tagged["total"] == 0
    typed = json.loads(run(capsys, "--store", str(store), "--json", "grep", "zebra", "--type", "adr")[1])
    assert typed["total"] == 1


def test_lookup_records_record(store: Path, capsys) -> None:
    code, out, _ = run(capsys, "--store", str(store), "lookup", "ada")
    assert code == 0 and out.startswith("found by") and "person-ada" in out
    code, out, _ = run(capsys, "--store", str(store), "records", "--kind", "claim", "--scope", "decisions")
    assert code == 0 and "1 record(s)" in out and "dec-new" in out
    rows = json.loads(run(capsys, "--store", str(store), "records", "--lifecycle", "all", "--json")[1])["rows"]
    assert [r["id"] for r in rows] == ["dec-new", "dec-old", "person-ada"]
    code, out, _ = run(capsys, "--store", str(store), "record", "dec-new")
    assert code == 0 and "Zebra crossing" in out and "The zebra body." in out and "sha256" in out
    code, out, _ = run(capsys, "--store", str(store), "--json", "record", "nope")
    assert code == 1 and json.loads(out)["status"] == "missing"  # the answer is printed; the exit code says none


def test_dates_and_chronicle(store: Path, capsys) -> None:
    code, out, _ = run(capsys, "--store", str(store), "timeline", "--entity", "person-ada", "--order", "desc")
    assert code == 0 and "dec-new" in out and "2026-03-04" in out
    recorded = json.loads(
        run(
            capsys, "--store", str(store), "timeline", "--time-field", "recorded_at", "--since", "2026-03-05", "--json"
        )[1]
    )
    assert [r["id"] for r in recorded["rows"]] == ["dec-new"]
    code, out, _ = run(capsys, "--store", str(store), "chronicle", "day", "2026-03-04", "--time-zone", "Europe/Berlin")
    assert code == 0 and "dec-new" in out
    week = json.loads(run(capsys, "--store", str(store), "chronicle", "day", "2026-03-02", "--week", "--json")[1])
    assert [r["id"] for r in week["rows"]] == ["dec-new"]
    since = json.loads(run(capsys, "--json", "--store", str(store), "chronicle", "since", "2026-03-01")[1])
    assert [r["id"] for r in since["rows"]] == ["dec-new"]
    code, out, _ = run(capsys, "--store", str(store), "chronicle", "last-seen", "person-ada")
    assert code == 0 and "dec-new" in out
    none = json.loads(
        run(
            capsys,
            "--store",
            str(store),
            "chronicle",
            "last-seen",
            "person-ada",
            "--occurred-on-or-before",
            "2026-01-01",
            "--json",
        )[1]
    )
    assert none["rows"] == []


def test_knowl_and_call(store: Path, capsys) -> None:
    code, out, _ = run(capsys, "--store", str(store), "knowl", "zebra", "crossing")
    assert code == 0 and "dec-new" in out
    data = json.loads(run(capsys, "--store", str(store), "knowl", "zebra", "--category", "nothing", "--json")[1])
    assert data["categoryRetry"]["category"] == "nothing" and data["results"]
    whole = json.loads(run(capsys, "--store", str(store), "knowl", "--id", "dec-new", "--json")[1])
    assert whole["results"][0]["id"] == "dec-new"
    code, out, _ = run(capsys, "--store", str(store), "call", "knowledge_records", '{"limit": 1}')
    assert code == 0 and json.loads(out)["total"] == 2 and json.loads(out)["nextOffset"] == 1


def test_exit_codes_and_messages(store: Path, capsys, tmp_path: Path) -> None:
    s = str(store)
    code, _, err = run(capsys, "--store", s, "grep", "zebra", "--limit", "99")
    assert code == 2 and "--limit: 99 is out of range (allowed: 1 to 50)" in err
    code, _, err = run(capsys, "--store", s, "grep", "zebra", "--since", "2026-02-30")
    assert code == 2 and "--since" in err and "YYYY-MM-DD" in err
    code, _, err = run(capsys, "--store", s, "grep", "zebra", "--mode", "fuzzy")  # argparse: allowed values
    assert code == 2 and "--mode" in err and "'phrase'" in err
    code, _, err = run(capsys, "--store", s, "grep", "zebra", "--limit", "ten")
    assert code == 2 and "--limit" in err
    code, _, err = run(capsys, "--store", s, "grep", "zebra", "--scope", "no-such-folder")
    assert code == 2 and "--scope" in err and "decisions" in err
    code, _, err = run(capsys, "--store", s, "chronicle", "day", "2026-02-30")
    assert code == 2 and "date" in err
    code, _, err = run(capsys, "--store", s, "call", "knowledge_records", "{not json")
    assert code == 2 and "args" in err
    code, _, err = run(capsys, "--store", s, "knowl", "--link", "oops")
    assert code == 2 and "NAME=PATH" in err
    code, _, err = run(capsys, "--store", str(tmp_path / "missing"), "grep", "zebra")
    assert code == 1 and "does not exist" in err
    code, _, err = run(capsys, "--store", s, "knowl", "--id", "no-such-id")
    assert code == 1 and "no-such-id" in err
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"knowtk {knowtk.__version__}"
    assert run(capsys, "grep", "--help")[0] == 0
    assert run(capsys)[0] == 2  # no subcommand


def test_knowl_over_linked_stores(store: Path, tmp_path: Path, capsys) -> None:
    other = StoreBuilder(tmp_path / "other")
    other.raw("knowtk.yaml", "name: other\nshare: true\n")
    other.page("oth-1", "Zebra statistics", "zebra counts")
    args = ["--store", str(store), "knowl", "zebra", "--link", f"other={other.root}", "--scope", "workspace", "--json"]
    data = json.loads(run(capsys, *args)[1])
    assert set(data["results"]) == {"cli-store", "other"}


def test_the_command_line_starts_without_pandas_matplotlib_or_ipywidgets(store: Path) -> None:
    heavy = ("pandas", "matplotlib", "ipywidgets")
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "knowtk", "--store", str(store), "grep", "zebra"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "dec-new" in proc.stdout
    imported = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines() if "|" in line}
    assert "knowtk" in imported and not imported & set(heavy)
    probe = f"import sys, knowtk.cli, knowtk.mcp.server; print(sorted(m for m in sys.modules if m in {heavy!r}))"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120).stdout == "[]\n"


def test_plug_ins_are_imported_only_when_their_subcommand_or_the_list_is_asked_for(store: Path, capsys) -> None:
    probe = (
        "import sys, knowtk.cli; knowtk.cli.main(['--store', sys.argv[1], '--json', 'lookup', 'ada']); "
        "knowtk.cli.main(['--version']); print(sorted(m for m in sys.modules if m.startswith(('knowtk.lab', "
        "'knowtk.mcp'))))"
    )
    proc = subprocess.run([sys.executable, "-c", probe, str(store)], capture_output=True, text=True, timeout=120)
    assert proc.stdout.endswith(f"knowtk {knowtk.__version__}\n[]\n"), proc.stderr
    code, out, _ = run(capsys, "--help")
    assert code == 0 and {"eval", "mcp", "grep", "chronicle"} <= set(re.findall(r"^ {4}(\S+)", out, re.M))


def test_eval_runs_a_gold_set_with_json_in_either_position(store: Path, tmp_path: Path, capsys) -> None:
    gold = tmp_path / "gold.yaml"
    gold.write_text(
        "name: cli\nk: 3\ncases:\n"
        "  - {id: zebra, tool: knowledge_grep, args: {query: zebra}, expect: [dec-new]}\n"
        "  - {id: old-words, tool: knowledge_grep, args: {query: striped pedestrian}, expect: [dec-old]}\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "--store", str(store), "eval", str(gold))
    assert code == 0 and "gold set 'cli' (2 cases" in out
    assert "dec-old → dec-new" in out  # a superseded expectation counts through its replacement
    saved = tmp_path / "run.json"
    code, out, _ = run(capsys, "eval", str(gold), "--store", str(store), "--json", "--save", str(saved))
    data = json.loads(out)
    assert code == 0 and data["regression"] is None and saved.is_file()
    assert {c["case"] for c in data["run"]["cases"]} == {"zebra", "old-words"}
    # the baseline gate: the record that answered "zebra" loses the word, hit@1 drops, exit 1
    (store / "decisions" / "dec-new.md").write_text(
        "---\nid: dec-new\nkind: claim\ntype: decision\ntitle: Crossing\nentities: [person-ada]\n---\nbody\n",
        encoding="utf-8",
    )
    code, out, err = run(capsys, "--json", "--store", str(store), "eval", str(gold), "--baseline", str(saved))
    assert code == 1 and "dropped" in err and json.loads(out)["regression"]["ok"] is False
    code, _, err = run(capsys, "--store", str(store), "eval", str(tmp_path / "absent.yaml"))
    assert code == 2 and "absent.yaml" in err


def test_eval_parser_does_not_import_pandas() -> None:
    probe = "import sys, knowtk.cli; knowtk.cli.parser(); print('pandas' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.stdout == "False\n"


def test_check_and_accepting_a_safeguard_loss(builder: StoreBuilder, capsys) -> None:
    builder.page("a", "Zebra")
    builder.page("w", "Zebra w", status="withdrawn")
    root = str(builder.root)
    assert run(capsys, "--store", root, "grep", "zebra")[0] == 0
    code, out, _ = run(capsys, "--store", root, "check")
    assert code == 0 and "ok, nothing found" in out
    # an FTS5 shadow table emptied behind knowtk's back: check finds it, repairs it, and says so
    state = builder.root / ".knowtk" / "state.sqlite"
    con = sqlite3.connect(state)
    con.execute("DELETE FROM keyword_fts_v1_root_docsize")
    con.commit()
    con.close()
    code, out, _ = run(capsys, "check", "--store", root, "--json")
    report = json.loads(out)
    assert code == 0 and not report["ok"] and report["repaired"] and not report["unrepaired"]
    # the withdrawal is lost with its journal: every query is refused, naming the command that accepts the loss
    (builder.root / ".knowtk" / "safeguards.jsonl").unlink()
    con = sqlite3.connect(state)
    con.execute("DELETE FROM keyword_withdrawals_v1")
    con.commit()
    con.close()
    builder.page("w", "Zebra w")  # a stale copy that the lost withdrawal no longer overrules
    code, _, err = run(capsys, "--store", root, "grep", "zebra")
    assert code == 1 and "knowtk state accept-loss" in err
    code, out, _ = run(capsys, "--store", root, "check")
    assert code == 1 and "NOT repaired" in out
    code, out, _ = run(capsys, "--store", root, "--json", "state", "accept-loss")
    assert code == 0 and json.loads(out)["accepted"]
    code, out, _ = run(capsys, "--store", root, "--json", "grep", "zebra")
    assert code == 0 and sorted(h["id"] for h in json.loads(out)["hits"]) == ["a", "w"]


def test_state_rebind_after_the_store_moved(builder: StoreBuilder, tmp_path: Path, capsys) -> None:
    builder.page("a", "Zebra")
    state = str(tmp_path / "state")
    assert run(capsys, "--store", str(builder.root), "--state-dir", state, "grep", "zebra")[0] == 0
    moved = tmp_path / "moved"
    builder.root.rename(moved)
    code, _, err = run(capsys, "--store", str(moved), "--state-dir", state, "grep", "zebra")
    assert code == 1 and "knowtk state rebind" in err
    code, out, _ = run(capsys, "--store", str(moved), "--state-dir", state, "--json", "state", "rebind")
    assert code == 0 and json.loads(out)["store"] == str(moved)
    assert run(capsys, "--store", str(moved), "--state-dir", state, "grep", "zebra")[0] == 0


def _subparsers(p: Any) -> dict[str, Any]:
    """Every subcommand's parser by its full name ("chronicle day" for a group's)."""
    out: dict[str, Any] = {}
    for action in p._subparsers._group_actions:
        for name, sp in action.choices.items():
            inner = _subparsers(sp) if sp._subparsers is not None else {}
            out.update({f"{name} {k}": v for k, v in inner.items()} or {name: sp})
    return out


def _actions(p: Any) -> list[tuple[Any, ...]]:
    return [(a.dest, a.option_strings, a.nargs, a.default, a.choices, a.required, a.type) for a in p._actions]


def test_the_parser_of_one_subcommand_is_the_whole_parsers(capsys) -> None:
    """A command line builds its own subcommand's parser alone (so a command starts quickly): the same help,
    usage and defaults."""
    whole = _subparsers(parser())
    for name, sp in whole.items():
        alone = _subparsers(parser(command=name.split(" ")[0]))
        assert {n.split(" ")[0] for n in alone} == {name.split(" ")[0]}, name
        assert alone[name].format_help() == sp.format_help(), name
        assert _actions(alone[name]) == _actions(sp) and alone[name]._defaults == sp._defaults, name
    assert parser(command="no-such-command").format_help() == parser().format_help()
    for argv in (["--help"], ["--help", "grep"], ["--json", "-h", "grep"], ["--he", "records"]):
        assert run(capsys, *argv)[1] == run(capsys, "--help")[1], argv
    code, out, _ = run(capsys, "grep", "--help")
    assert code == 0 and out == whole["grep"].format_help()


def test_a_one_query_program_leaves_at_once_with_its_whole_answer_and_its_state_closed(
    builder: StoreBuilder, tmp_path: Path
) -> None:
    """``knowtk grep`` run as a program ends with ``os._exit`` (knowtk.serve.client.leave): its answer is
    printed whole, the exit code kept, the state closed as a normal exit closes it (no WAL left behind),
    and a reader that stops early (``| head``) costs no traceback."""
    for i in range(400):
        builder.page(f"r{i}", f"Zebra {i}", "zebra words " * 40)
    state = tmp_path / "state"
    cmd = [sys.executable, "-m", "knowtk", "--store", str(builder.root), "--state-dir", str(state)]
    whole = subprocess.run([*cmd, "--json", "grep", "zebra", "--limit", "50"], capture_output=True, timeout=120)
    assert whole.returncode == 0 and json.loads(whole.stdout)["total"] == 400  # (parses: every byte written)
    # no WAL left; seen.git: the record of what knowtk saw (its first observation kept before the answer)
    assert sorted(p.name for p in state.iterdir()) == ["safeguards.jsonl", "seen.git", "state.sqlite"]
    bad = subprocess.run([*cmd, "grep", "zebra", "--limit", "999"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "limit" in bad.stderr
    head = subprocess.run(f"{' '.join(cmd)} grep zebra --limit 50 | head -c 10", shell=True, capture_output=True)
    assert head.returncode == 0 and len(head.stdout) == 10 and b"Traceback" not in head.stderr
    in_python = subprocess.run(  # main(argv) called from Python returns (the caller goes on)
        [
            sys.executable,
            "-c",
            "import sys; from knowtk.serve.client import main; print('code', main(sys.argv[1:]))",
            *cmd[3:],
            "grep",
            "zebra",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert in_python.stdout.rstrip().endswith("code 0")
    kept = subprocess.run(  # nor keeps the stores it opened (a library caller's process would hold them open)
        [
            sys.executable,
            "-c",
            "import sys; from knowtk import cli; from knowtk.cli import registry; "
            "cli.main(sys.argv[1:]); cli.main(sys.argv[1:]); "
            "print('kept', registry.ONE_QUERY_STORES)",
            *cmd[3:],
            "grep",
            "zebra",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert kept.stdout.rstrip().endswith("kept None"), kept.stderr
