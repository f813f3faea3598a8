"""The write subcommands (create, update, supersede, withdraw, reinstate, history, diff), the splice on many
frontmatter layouts, and `knowtk state accept-loss` accepting only the loss it names."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

import knowtk
import knowtk.state
from knowtk.cli import main
from knowtk.write.splice import REMOVE, splice
from tests.helpers import StoreBuilder, sha256_hex


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_supersede_withdraw_reinstate_and_history_on_the_command_line(builder: StoreBuilder, capsys) -> None:
    builder.write("decisions/old.md", {"id": "old", "kind": "claim", "title": "Old"}, "Old\n")
    builder.write("decisions/new.md", {"id": "new", "kind": "claim", "title": "New"}, "New\n")
    root = str(builder.root)
    old = sha256_hex((builder.root / "decisions/old.md").read_bytes())
    code, out, err = run(capsys, "--store", root, "supersede", "old", "--by", "new", "--expect", "0" * 64)
    assert code == 1 and "changed since it was read" in err and old in err
    code, out, _ = run(capsys, "--store", root, "--json", "supersede", "old", "--by", "new", "--expect", old)
    assert code == 0
    receipt = json.loads(out)["receipt"]
    assert receipt["operation"] == "supersede" and receipt["records"][0]["id"] == "old"
    code, _, err = run(capsys, "--store", root, "withdraw", "new", "--expect", "xyz", "--reason", "r")
    assert code == 2 and err.startswith("knowtk: --expect:")
    new = sha256_hex((builder.root / "decisions/new.md").read_bytes())
    code, out, _ = run(capsys, "--store", root, "withdraw", "new", "--expect", new, "--reason", "duplicate")
    assert code == 0 and "receipt rcpt-" in out and "reason: duplicate" in out
    after = sha256_hex((builder.root / "decisions/new.md").read_bytes())
    code, out, _ = run(capsys, "--store", root, "reinstate", "new", "--expect", after, "--reason", "mistake")
    assert code == 0
    code, out, _ = run(capsys, "--store", root, "history")
    assert code == 0 and out.splitlines()[0].startswith("3 receipt(s)")
    assert [line.split()[1] for line in out.splitlines()[1:] if line.startswith("  20")] == [
        "reinstate",
        "withdraw",
        "supersede",
    ]
    code, out, _ = run(capsys, "--store", root, "--json", "history", "new", "--limit", "1")
    assert json.loads(out)["nextOffset"] == 1
    code, out, _ = run(capsys, "--store", root, "diff", "new")
    added = [line for line in out.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert code == 0 and added == []  # withdraw then reinstate: the status line the withdrawal added is gone again


def test_create_and_update_with_set_unset_and_a_body_file(builder: StoreBuilder, tmp_path: Path, capsys) -> None:
    builder.page("person-ada", "Ada", path="people/person-ada.md")
    root = str(builder.root)
    code, _out, err = run(
        capsys, "--store", root, "create", "dec-1", "--set", "kind=claim", "--set", "type=decision",
        "--set", "tags=[a, b]", "--set", "owner=person-ada",
    )  # fmt: skip
    assert code == 0, err
    path = builder.root / "decisions/dec-1.md"
    assert path.read_text() == "---\nid: dec-1\nkind: claim\ntype: decision\ntags: [a, b]\nowner: person-ada\n---\n"
    body = tmp_path / "body.md"
    body.write_text("# Dec 1\n")
    code, _out, err = run(
        capsys, "--store", root, "update", "dec-1", "--expect", sha256_hex(path.read_bytes()), "--unset", "owner",
        "--body-file", str(body), "--restate",
    )  # fmt: skip
    assert code == 0, err
    assert path.read_text() == "---\nid: dec-1\nkind: claim\ntype: decision\ntags: [a, b]\nrevision: 2\n---\n# Dec 1\n"
    code, _, err = run(
        capsys, "--store", root, "update", "dec-1", "--expect", sha256_hex(path.read_bytes()), "--set", "due_at=soon"
    )
    assert code == 2 and "record.due_at" in err
    code, _, err = run(capsys, "--store", root, "create", "dec-1", "--set", "kind=claim")
    assert code == 1 and "already exists" in err


LAYOUTS = [
    "id: a\nkind: page\ntitle: T\nsummary: S\n",
    "id: a\r\nkind: page\r\nsummary:   spaced   \r\ntags:\r\n  - x\r\n  - y\r\n",
    "# leading comment\nid: 'a'\nkind: \"page\"\nsummary: S # trailing\n\nfields: {b: 1,  a: [ 1, 2 ]}\n",
    "id: a\nkind: page\nsummary: >\n  folded\n  text\nreasoning: |\n  kept\n    indented\n\ntail: 1\n",
    "id: a\nkind: page\ndup: 1\nsummary: S\ndup: 2\nlist:\n- a\n-   b\n",
    "id: a\nkind: page\nsummary: S\nnested:\n  deep:\n    - {x: 1}\n    - y\n# closing comment\n",
    'id: a\nkind: page\nsummary: S\nwin: "quoted: value"\nempty:\nnull_key: ~\n',
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("key", "value"), [("summary", "New"), ("summary", REMOVE), ("added", ["p", "q"])])
def test_the_splice_changes_only_the_edited_key(layout: str, key: str, value: object) -> None:
    data = f"---\n{layout}---\nBody  \r\n\nend".encode()
    if "\r\n" in layout:
        data = data.replace(b"---\n", b"---\r\n")
    after = splice(data, {key: value})
    kept = [line for line in data.splitlines(True) if key != "summary" or not line.startswith(b"summary")]
    if key == "summary" and b"folded" in data:
        kept = [line for line in kept if line not in (b"  folded\n", b"  text\n")]
    new_lines = after.splitlines(True)
    assert [line for line in new_lines if line in kept] == kept  # every other line, in order, byte for byte
    extra = [line for line in new_lines if line not in kept]
    eol = "\r\n" if "\r\n" in layout else "\n"
    if value is REMOVE:
        assert extra == [] or key != "summary"
    elif key == "summary":
        assert extra == [f"summary: New{eol}".encode()]
    else:
        assert extra == [f"added: [p, q]{eol}".encode()]
    assert after.endswith(b"---" + eol.encode() + b"Body  \r\n\nend")


def test_accept_loss_accepts_only_a_loss(builder: StoreBuilder, capsys, monkeypatch) -> None:
    builder.page("p-1", "One")
    knowtk.open_store(builder.root).close()
    state = builder.root / ".knowtk" / "state.sqlite"
    monkeypatch.setattr(knowtk.state, "BUSY_TIMEOUT_MS", 300)
    holder = sqlite3.connect(state, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the state: busy, not lost

    def release() -> None:
        time.sleep(0.45)
        holder.execute("ROLLBACK")

    t = threading.Thread(target=release)
    t.start()
    code, out, err = run(capsys, "--store", str(builder.root), "state", "accept-loss")
    t.join()
    holder.close()
    assert code == 1 and "write lock too long" in err and out == ""  # reported as what it is, never accepted as a loss
    assert (builder.root / ".knowtk" / "safeguards.jsonl").exists()
    assert not list((builder.root / ".knowtk").glob("state.sqlite.damaged-*"))
