"""Markdown links, Obsidian ``[[wikilinks]]`` and heading anchors that lead nowhere.

Every Markdown file of the store is read once (the snapshot does not keep bodies); a file without ``](``,
``]:`` or ``[[`` in its bytes is not parsed further. A relative link is checked against the store's
files, then the disk (a link out of the store, to ``../src/app.py``, is checked too); a link with a scheme
(``https:``, ``mailto:``) or an absolute path is not. An anchor is checked against the headings of the
file it names, as GitHub makes their ids (and as Obsidian names them: the heading's text). Wikilinks are
checked only in files the ``obsidian`` profile reads, resolved as Obsidian resolves them
(``knowtk.query.wikilinks``). Code (fenced or inline) and comments (``<!-- -->``, ``%% %%``) are skipped.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property
from typing import Any
from urllib.parse import unquote

from knowtk.model.dialects.markdown import headings, prose_lines
from knowtk.model.profile import ProfileMap
from knowtk.model.records import read_regular
from knowtk.query.lint.link_cache import LinkCache
from knowtk.query.lint.rules import Finding
from knowtk.query.wikilinks import resolve_wikilink

__all__ = ["LinkChecker", "anchors_of", "extract_links", "slug"]

_MAX_BYTES = 16 * 1024 * 1024
_INLINE_CODE = re.compile(r"(`+).*?\1")
_COMMENTS = re.compile(r"<!--.*?-->|%%.*?%%", re.S)
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[\"'(][^)]*)?\s*\)")
_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
_DEFINITION_ANYWHERE = re.compile(r"^\s{0,3}\[[^\]]+\]:", re.M)
_WIKILINK = re.compile(r"!?\[\[([^\]|#^]*)(?:([#^])([^\]|]*))?(?:\|[^\]]*)?\]\]")
_NOT_PATH = re.compile(r"[\[\](){},=\"'\s]")  # a target holding these is code (`f(x)`), not a path
_LIST_ITEM = re.compile(r"^\s{0,3}(?:[*+-]|\d+[.)])\s")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"<[^>]+>")
_NOT_SLUG = re.compile(r"[^\w\- ]")
_FENCE = re.compile(r"^---[ \t]*\r?$", re.M)
_EXPLICIT = re.compile(r"\{#([\w.:-]+)\}|\b(?:id|name)=[\"']([^\"']+)[\"']")

Make = Callable[..., Finding]


def slug(text: str) -> str:
    """A heading's id as GitHub makes it: its shown text, lowercase, punctuation dropped, spaces as hyphens."""
    shown = _TAG.sub("", _LINK_TEXT.sub(r"\1", text)).strip().lower()
    return _NOT_SLUG.sub("", shown).replace(" ", "-")


def _body(text: str) -> tuple[str, int]:
    """(the text after the frontmatter, its first line's number), comments blanked with their lines kept."""
    body, first = text.removeprefix("\ufeff"), 1
    end = body.find("\n")
    if end >= 0 and body[:end].rstrip("\r \t") == "---":
        fence = _FENCE.search(body, end + 1)
        if fence is not None:
            first = body.count("\n", 0, fence.start()) + 2
            body = body[fence.end() + 1 :]
    return _COMMENTS.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), body), first


def anchors_of(text: str) -> set[str]:
    """Every anchor a file's headings (and explicit ids) answer to."""
    body, first = _body(text)
    found: set[str] = set()
    seen: dict[str, int] = defaultdict(int)
    for _, _, heading in headings(body, first):
        base = slug(heading)
        found.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
        found.add(" ".join(heading.lower().split()))  # Obsidian: [[note#Heading text]]
    for match in _EXPLICIT.finditer(body):
        found.add((match.group(1) or match.group(2)).lower())
    return found


def _outside_indented_code(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """The lines outside indented code blocks (4 spaces after a blank line, outside a list item)."""
    code = blank = True
    listed = False
    for number, line in lines:
        if not line.strip():
            blank = True
            continue
        indented = len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip()) >= 4
        code = indented and (blank or code) and not listed
        blank = False
        if code:
            continue
        if not indented:
            listed = _LIST_ITEM.match(line) is not None
        yield number, line


def extract_links(text: str, *, wiki: bool = True) -> list[list[Any]]:
    """The link candidates of a file's text, each ``["m", line, column, target]`` (a Markdown link or a reference
    definition) or ``["w", line, column, shown, note, sign, anchor]`` (a wikilink, when ``wiki``): what the cache
    keeps. A body without a link is not walked line by line."""
    body, first = _body(text)
    if _LINK.search(body) is None and _DEFINITION_ANYWHERE.search(body) is None and not (wiki and "[[" in body):
        return []
    found: list[list[Any]] = []
    for number, line in _outside_indented_code(prose_lines(body, first)):
        if "](" not in line and "]:" not in line and not (wiki and "[[" in line):
            continue
        line = _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        for match in _LINK.finditer(line):
            if match.start() and (line[match.start() - 1].isalnum() or line[match.start() - 1] == "_"):
                continue  # `list[T](x)`, `Node[int](0)`: code in prose, not a link
            found.append(["m", number, match.start() + 1, match.group(1)])
        definition = _DEFINITION.match(line)
        if definition is not None:
            found.append(["m", number, definition.start(1) + 1, definition.group(1)])
        for match in _WIKILINK.finditer(line) if wiki else ():
            sign, anchor = match.group(2) or "", (match.group(3) or "").strip()
            found.append(["w", number, match.start() + 1, match.group(0), match.group(1).strip(), sign, anchor])
    return found


class LinkChecker:
    """The link findings of a store: its files' links (from the cache, else read), resolved against its files.

    ``paths`` gives the map of every file of the store to its sha256 (the snapshot's), asked for only when a
    link is resolved or a file's links looked up (a stored snapshot parses it then); ``linked`` collects
    path -> links of each file ``findings`` found links in (what ``LastPass`` keeps).
    """

    def __init__(self, root: str, paths: Callable[[], Mapping[str, str]], profiles: ProfileMap, make: Make) -> None:
        self.root, self._paths, self.profiles, self.make = root, paths, profiles, make
        self.linked: dict[str, list[list[Any]]] = {}
        self._anchors: dict[str, set[str] | None] = {}
        self._by_name: dict[str, list[str]] | None = None

    @cached_property
    def paths(self) -> Mapping[str, str]:
        return self._paths()

    def findings(self, checked: Iterable[str], cache: LinkCache) -> Iterator[Finding]:
        """The findings of the files ``checked``, their links read from ``cache`` (content key -> links,
        ``LinkCache.key``), else from the file (and kept in ``cache``)."""
        for path in checked:
            links = self._links(path, cache)
            if links:
                self.linked[path] = links
                yield from self.resolved(path, links)

    def resolved(self, path: str, links: list[list[Any]]) -> Iterator[Finding]:
        """The findings of one file's links (``extract_links``), resolved against the store as it is now."""
        wiki = self.profiles.for_path(path) == "obsidian"
        for link in links:
            if link[0] == "m":
                yield from self._markdown(path, link[1], link[2], link[3])
            elif wiki:
                yield from self._wikilink(path, *link[1:])

    def _links(self, path: str, cache: LinkCache) -> list[list[Any]]:
        key = LinkCache.key(self.paths.get(path) or "")
        links = cache.links(key) if key else None
        if links is None:
            data = read_regular(os.path.join(self.root, path), _MAX_BYTES)
            if not isinstance(data, bytes):
                return []
            wiki = cache.wiki
            marked = b"](" in data or b"]:" in data or (wiki and b"[[" in data)
            links = extract_links(data.decode("utf-8", "replace"), wiki=wiki) if marked else []
            if key:
                cache[key] = links
        return links

    def _markdown(self, path: str, line: int, column: int, raw: str) -> Iterator[Finding]:
        raw = raw.strip("<>").strip()
        if not raw or raw.startswith("/") or _SCHEME.match(raw) or _NOT_PATH.search(raw):
            return
        target, _, anchor = raw.partition("#")
        target = unquote(target.split("?", 1)[0])
        if not target:  # "#heading": this file's own
            yield from self._anchor(path, path, unquote(anchor), line, column, raw)
            return
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if resolved not in self.paths and not os.path.exists(os.path.join(self.root, resolved)):
            message = f"the link to {raw!r} names {resolved!r}, which does not exist"
            yield self.make("broken-link", path, line, message, None, column)
        elif anchor and resolved.lower().endswith(".md"):
            yield from self._anchor(path, resolved, unquote(anchor), line, column, raw)

    def _wikilink(
        self, path: str, line: int, column: int, shown: str, target: str, sign: str, anchor: str
    ) -> Iterator[Finding]:
        extension = posixpath.splitext(target)[1].lower()
        if extension and extension != ".md" and re.fullmatch(r"\.[a-z0-9]{1,5}", extension):
            return  # an attachment (an image, a PDF), not a note
        if not target:
            if sign == "#" and anchor:
                yield from self._anchor(path, path, anchor, line, column, shown)
            return
        resolved = resolve_wikilink(target, path, self._candidates(target))
        if resolved is None:
            many = len(self._candidates(target)) > 1
            why = "more than one note has that name" if many else "no note has that name"
            yield self.make("broken-wikilink", path, line, f"{shown} resolves to no note: {why}", None, column)
        elif sign == "#" and anchor:
            yield from self._anchor(path, resolved, anchor, line, column, shown)

    def _candidates(self, target: str) -> list[str]:
        """The store's notes a wikilink may name: those whose file name is the link's last part."""
        if self._by_name is None:
            self._by_name = defaultdict(list)
            for p in self.paths:
                self._by_name[posixpath.basename(p).lower()].append(p)
        name = posixpath.basename(target.strip().strip("/")).lower()
        return self._by_name.get(name if name.endswith(".md") else name + ".md", [])

    def _anchor(self, path: str, target: str, anchor: str, line: int, column: int, shown: str) -> Iterator[Finding]:
        if not anchor:
            return
        anchors = self._target_anchors(target)
        if anchors is None or anchor.lower() in anchors or slug(anchor) in anchors:
            return
        where = "this file" if target == path else target
        message = f"the link {shown!r} names the heading #{anchor}, which {where} does not have"
        yield self.make("broken-anchor", path, line, message, None, column)

    def _target_anchors(self, target: str) -> set[str] | None:
        """The anchors of a file a link names, read once per run (only files that anchored links name)."""
        if target not in self._anchors:
            data = read_regular(os.path.join(self.root, target), _MAX_BYTES)
            self._anchors[target] = anchors_of(data.decode("utf-8", "replace")) if isinstance(data, bytes) else None
        return self._anchors[target]
