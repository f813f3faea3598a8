"""An example knowtk plug-in: the tool ``example_titles`` and the profile ``headline``.

Installed, it is found through the entry point ``knowtk.plugins`` (pyproject.toml): knowtk then offers the
tool from ``Store.call``, ``store.titles(...)``, the command line (``knowtk titles``), MCP and ``to_frame()``,
and opens a folder with ``profile="headline"``.
"""

from __future__ import annotations

from typing import Any

from knowtk.frames import INT, STRING, key
from knowtk.model.profile import Derivation, Source, path_id
from knowtk.query import Tool
from knowtk.query.args import Param, integer, text


def titles(engine: Any, args: dict[str, Any], verifier: Any) -> dict[str, Any]:
    """The records whose title holds ``word`` (case ignored), by id."""
    snap = engine.snapshot()
    word = args["word"].casefold()
    found = sorted(rid for rid, r in snap.records.items() if r.title and word in r.title.casefold())
    rows = [{"id": rid, "title": snap.records[rid].title, "length": len(snap.records[rid].title)} for rid in found]
    return {"rows": rows[: args["limit"]], "total": len(rows)}


TOOL = Tool(
    "example_titles",
    (
        Param("word", text(100), required=True, doc="A word the title holds (case ignored)."),
        Param("limit", integer(1, 100), 10, doc="Rows at most."),
    ),
    titles,
    summary="records whose title holds a word",
    columns=(("id", STRING, key("id")), ("title", STRING, key("title")), ("length", INT, key("length"))),
    command="titles",
    positional=("word",),
    table=lambda answer: "\n".join(f"{row['id']}: {row['title']}" for row in answer["rows"]),
    example={"word": "vector"},
)


def headline(src: Source) -> Derivation:
    """Any Markdown file is a page titled by its first line."""
    first = next((line.strip("# ").strip() for line in src.body.splitlines() if line.strip()), path_id(src.path))
    return Derivation(values={"id": path_id(src.path), "kind": "page", "type": "note", "title": first})


def knowtk_tools() -> list[Tool]:
    return [TOOL]


def knowtk_profiles() -> dict[str, Any]:
    return {"headline": headline}
