"""Every subcommand of the command line and every tool is documented in README.md or docs/*.md."""

from __future__ import annotations

import re

import pytest

from knowtk.cli import COMMANDS, parser
from knowtk.query import TOOLS
from tests.helpers import REPO

DOCS = "\n".join(p.read_text(encoding="utf-8") for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])
OPTION = r"\s+--?[\w-]+(?:[ =][^\s-]\S*)?"  # `--store data/fixtures/demo`, `--json`: options before the subcommand


def subcommands() -> list[str]:
    parser()  # registers the plug-ins' subcommands too (eval, mcp)
    return sorted(COMMANDS)


def test_the_command_line_has_subcommands_from_every_source() -> None:
    assert {"grep", "chronicle day", "state rebind", "eval", "mcp"} <= set(subcommands())


@pytest.mark.parametrize("name", subcommands())
def test_every_subcommand_is_shown_in_use(name: str) -> None:
    words = r"\s+".join(re.escape(w) for w in name.split())
    assert re.search(rf"\bknowtk(?:{OPTION})*\s+{words}\b", DOCS), f"`knowtk {name}` appears in no doc"


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_tool_is_named(tool: str) -> None:
    assert re.search(rf"\b{re.escape(tool)}\b", DOCS), f"{tool} appears in no doc"
