"""Shared builders for the tests: small stores written into tmp_path, record by record (fixtures: conftest.py)."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import knowtk
import knowtk.scan.entry
from knowtk.model.records import build_record
from knowtk.query import TOOLS

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "data" / "fixtures" / "demo"


def record_text(meta: dict[str, Any] | str, body: str = "") -> str:
    """A record file: a mapping is dumped as YAML (dates quoted by the dumper), a string is used as is."""
    fm = meta if isinstance(meta, str) else yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    return f"---\n{fm.rstrip()}\n---\n{body}"


class StoreBuilder:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def write(self, path: str, meta: dict[str, Any] | str, body: str = "") -> Path:
        full = self.root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(record_text(meta, body), encoding="utf-8")
        return full

    def raw(self, path: str, data: bytes | str) -> Path:
        full = self.root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode("utf-8")
        full.write_bytes(data)
        return full

    def page(self, rid: str, title: str, body: str = "", *, path: str | None = None, **meta: Any) -> Path:
        fields = {"id": rid, "kind": meta.pop("kind", "page"), "title": title, **meta}
        return self.write(path or f"{rid}.md", fields, body)

    def remove(self, path: str) -> None:
        (self.root / path).unlink()

    def open(self, **kwargs: Any) -> knowtk.Store:
        return knowtk.open_store(self.root, **kwargs)


def copy_demo(out: Path) -> Path:
    """A copy of the bundled demo store at ``out``, without any knowtk state a run in place left in it."""
    shutil.copytree(DEMO, out, ignore=shutil.ignore_patterns(".knowtk"))
    return out


def commit_all(root: Path, date: str = "2026-01-01T00:00:00Z") -> Path:
    """``root`` made a Git repository with one commit of everything in it, dated ``date``: a store with a past
    (``Store.at``, ``knowledge_changes``)."""
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    who = ["-c", "user.name=knowtk tests", "-c", "user.email=tests@example.org"]
    subprocess.run(["git", "-C", str(root), *who, "commit", "-qm", "a past", "--no-verify"], check=True, env=env)
    return root


def records_built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the records built from now on in this process (a stored snapshot builds them through
    ``knowtk.scan.entry.build_record``), in order, one entry a build."""
    built: list[str] = []

    def counted(path: str, *rest: Any) -> Any:
        built.append(path)
        return build_record(path, *rest)

    monkeypatch.setattr(knowtk.scan.entry, "build_record", counted)
    return built


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def markdown_digest(root: Path) -> dict[str, str]:
    """sha256 of every Markdown file under root (to prove queries never write one)."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name.endswith(".md"):
                p = Path(dirpath) / name
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def codes(result: dict[str, Any]) -> list[str]:
    return sorted(i["code"] for i in result["coverage"]["issues"])


def required_in_ci(reason: str | None) -> None:
    """Skip a test whose tool is missing here, but fail it under CI=true, where .ci/run installs every tool."""
    import pytest  # tests only: the helpers also serve scripts that need no pytest

    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run this test: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


# a valid call of each read tool on the demo store, as each tool declares it (the MCP clients' tests call each one)
VALID_CALLS: dict[str, dict[str, Any]] = {name: tool.example for name, tool in TOOLS.reads().items()}


def listening(path: str) -> bool:
    """Whether a ``knowtk serve`` server listens on the unix socket ``path`` (a stale socket refuses)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(path)  # the server's loop takes it as a dropped request
        except OSError:
            return False
    return True


INSPECTOR_BIN = Path(os.environ.get("KNOWTK_INSPECTOR_BIN") or REPO / ".ci" / "inspector" / "node_modules" / ".bin")


def inspector_bin() -> Path:
    """The MCP Inspector's ``node_modules/.bin`` (.ci/install-inspector); the test skips without it (fails in CI)."""
    missing = [name for name in ("node", "mcp-inspector") if not (INSPECTOR_BIN / name).exists()]
    required_in_ci(f"{', '.join(missing)} missing in {INSPECTOR_BIN}: run .ci/install-inspector" if missing else None)
    return INSPECTOR_BIN
