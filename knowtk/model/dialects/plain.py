"""The ``plain`` profile: any Markdown file is a page, its id from its path and its title from its text."""

from __future__ import annotations

from typing import Any

from knowtk.model.dialects.markdown import first_heading, reader_text, stem
from knowtk.model.profile import KINDS, Derivation, Source, path_id

__all__ = ["page", "plain"]


def page(src: Source, *, type_: str = "note", kind: str = "page") -> Derivation:
    """id from the path, the kind and type, the title from the first H1 as a reader sees it (links as their
    text, no emphasis or code marks) and its line, else the file name."""
    heading = first_heading(src.body, src.body_line)
    values: dict[str, Any] = {
        "id": path_id(src.path),
        "kind": kind,
        "type": type_,
        "title": (reader_text(heading[1]) or heading[1]) if heading else stem(src.path),
    }
    if src.meta and src.meta.get("kind") in KINDS:  # a knowtk record: its type defaults to its kind, as ever
        del values["type"]
    if src.meta and "status" in src.meta:  # another tool's status word (draft, done): active, the word kept in fields
        values["status"] = "active"
    return Derivation(values=values, lines={"title": heading[0]} if heading else {})


def plain(src: Source) -> Derivation:
    return page(src)
