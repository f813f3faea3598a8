"""Words as the keyword index sees them, highlighted; citations as a person quotes them."""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

__all__ = ["citation_text", "fold", "highlight", "query_words"]

# a word as the FTS5 unicode61 tokenizer sees one: letters and digits (combining marks stay attached)
_WORD = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")


def fold(text: str) -> str:
    """Case- and diacritic-folded text: how the FTS5 tokenizer (``remove_diacritics 2``) compares words."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def query_words(query: str | None) -> frozenset[str]:
    """The folded words of a query (punctuation separates words, as in grep)."""
    return frozenset(_WORD.findall(fold(query or "")))


def highlight(text: str, query: str | Iterable[str] | None) -> str:
    """``text`` as escaped HTML with each word of ``query`` in ``<mark>`` (case and diacritics folded)."""
    words = query_words(query) if isinstance(query, str) or query is None else frozenset(fold(w) for w in query)
    out, last = [], 0
    for m in _WORD.finditer(text):
        if fold(m.group()) in words:
            out += [html.escape(text[last : m.start()]), "<mark>", html.escape(m.group()), "</mark>"]
            last = m.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def citation_text(citation: dict[str, Any] | None) -> str:
    """``id r2 · path L12–14 · sha256 1a2b3c4d5e6f`` — what to quote when citing a hit or record."""
    if not citation:
        return ""
    lines = ""
    if citation.get("lineStart") is not None:
        lines = f" L{citation['lineStart']}–{citation['lineEnd']}"
    sha = (citation.get("sha256") or "")[:12]
    return f"{citation['id']} r{citation['revision']} · {citation['path']}{lines} · sha256 {sha}"
