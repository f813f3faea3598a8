"""The ``obsidian`` profile: a vault's notes, read as Obsidian reads them.

The title is the file name (Obsidian's rule); ``aliases`` (a list or one string) and the older ``alias``
are aliases; ``tags`` (or ``tag``) in the frontmatter, as a list or a string, with or without ``#``, and
inline ``#tags`` of the text (not in code, ``%% comments %%``, URLs or headings) are tags, stored without
the ``#``, nested ones (``project/search``) whole. ``[[wikilinks]]`` (with ``|shown text``, ``#heading``,
or as ``![[embeds]]``) are kept in ``fields.wikilinks``; a query resolves them to ids against the store
it sees (``knowtk.query.inventory``), the way Obsidian does: the shortest path that ends with the link.
"""

from __future__ import annotations

import re
from typing import Any

from knowtk.model.dialects.markdown import prose_lines, stem
from knowtk.model.dialects.plain import page
from knowtk.model.profile import Derivation, Source

__all__ = ["inline_tags", "obsidian", "wikilinks"]

_COMMENT = re.compile(r"%%.*?%%", re.S)
_INLINE_CODE = re.compile(r"(`+).*?\1")
_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|www\.)\S+|\]\([^)]*\)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")
_TAG = re.compile(r"(?:(?<=\s)|^)#([^\s#!\"$%&'()*+,.:;<=>?@\[\]^`{|}~\\]+)")
_WIKILINK = re.compile(r"!?\[\[([^\]|#^]*)(?:[#^][^\]|]*)?(?:\|[^\]]*)?\]\]")
_SPLIT = re.compile(r"[,\s]+")


def _blank_comments(body: str) -> str:
    """The body with %% comments %% blanked, its lines kept (a comment may span lines)."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), body)


def _clean_tag(raw: str) -> str | None:
    tag = raw.strip().lstrip("#").strip("/")
    return tag if tag and not tag.isdigit() else None


def inline_tags(body: str, body_line: int) -> list[str]:
    """The ``#tags`` written in the text, in order, without the ``#``."""
    found: list[str] = []
    for _, line in prose_lines(_blank_comments(body), body_line):
        if _HEADING.match(line):
            continue
        text = _URL.sub(" ", _INLINE_CODE.sub(" ", line))
        for match in _TAG.finditer(text):
            tag = _clean_tag(match.group(1))
            if tag and tag not in found:
                found.append(tag)
    return found


def wikilinks(body: str, body_line: int) -> list[str]:
    """The notes ``[[wikilinks]]`` and embeds name, in order (heading and shown text left out)."""
    found: list[str] = []
    for _, line in prose_lines(_blank_comments(body), body_line):
        for match in _WIKILINK.finditer(_INLINE_CODE.sub(" ", line)):
            target = match.group(1).strip()
            target = target[:-3] if target.lower().endswith(".md") else target
            if target and target not in found:
                found.append(target)
    return found


def _names(value: Any, *, split: bool) -> list[str]:
    """A frontmatter list or string of names: tags split on spaces and commas, an alias string on commas."""
    single = isinstance(value, str)
    items = [value] if single else value if isinstance(value, list) else []
    out: list[str] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int):
            continue
        text = str(item)
        parts = _SPLIT.split(text) if split else text.split(",") if single else [text]
        out += [p.strip() for p in parts if p.strip()]
    return out


def obsidian(src: Source) -> Derivation:
    meta = src.meta or {}
    out = page(src)
    out.values["title"] = stem(src.path)
    out.lines.pop("title", None)
    aliases = _names(meta.get("aliases"), split=False) + _names(meta.get("alias"), split=False)
    if aliases:
        out.own["aliases"] = list(dict.fromkeys(aliases))
    tags: list[str] = []
    for raw in _names(meta.get("tags"), split=True) + _names(meta.get("tag"), split=True):
        tag = _clean_tag(raw)
        if tag and tag not in tags:
            tags.append(tag)
    tags += [t for t in inline_tags(src.body, src.body_line) if t not in tags]
    if tags:
        out.own["tags"] = tags
    links = wikilinks(src.body, src.body_line)
    if links:
        out.fields["wikilinks"] = links
    return out
