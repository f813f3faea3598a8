"""A record's body as a reader sees it: Markdown rendered to safe HTML, the query's words highlighted.

A body is untrusted text (anyone who can write a file in the store wrote it), so the renderer
(markdown-it-py, CommonMark with GFM tables and strikethrough) runs with raw HTML off: a
``<script>`` or ``<b>`` in the source comes out as the text it is. Links keep only the schemes
markdown-it allows (no ``javascript:``, ``vbscript:``, ``file:``), open in a new tab with
``rel="noopener noreferrer nofollow"``; images are not fetched (a remote image would tell its host
who read the record): they show as their alt text with the address on hover. The query's words are
marked in the text and code nodes only, never inside a tag or an attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from knowtk.notebook.text import highlight, query_words
from knowtk.ui.style import escape

__all__ = ["body_html"]

_LINK_REL = "noopener noreferrer nofollow"
_WRAP = "white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere"


def _words(env: dict[str, Any]) -> frozenset[str]:
    return env.get("words") or frozenset()


def _text(_self: Any, tokens: Sequence[Token], idx: int, _options: Any, env: dict[str, Any]) -> str:
    return highlight(tokens[idx].content, _words(env))


def _code_inline(_self: Any, tokens: Sequence[Token], idx: int, _options: Any, env: dict[str, Any]) -> str:
    return f"<code>{highlight(tokens[idx].content, _words(env))}</code>"


def _code_block(_self: Any, tokens: Sequence[Token], idx: int, _options: Any, env: dict[str, Any]) -> str:
    token = tokens[idx]
    language = token.info.strip().split(maxsplit=1)[0] if token.info.strip() else ""
    attrs = f" class='language-{escape(language)}'" if language else ""
    # the wrapping rule inline too: JupyterLab's output pre breaks anywhere, and a page that strips <style> keeps it
    return f"<pre style='{_WRAP}'><code{attrs}>{highlight(token.content, _words(env))}</code></pre>\n"


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    token = tokens[idx]
    token.attrSet("rel", _LINK_REL)
    token.attrSet("target", "_blank")
    return str(self.renderToken(tokens, idx, options, env))


def _image(_self: Any, tokens: Sequence[Token], idx: int, _options: Any, env: dict[str, Any]) -> str:
    token = tokens[idx]
    alt = "".join(child.content for child in token.children or [])
    source = token.attrGet("src") or ""
    return f"<span class='muted' title='{escape(source)}'>[image: {highlight(alt, _words(env))}]</span>"


def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    for name, rule in (
        ("text", _text),
        ("code_inline", _code_inline),
        ("code_block", _code_block),
        ("fence", _code_block),
        ("link_open", _link_open),
        ("image", _image),
    ):
        md.add_render_rule(name, rule)
    return md


_MARKDOWN = _renderer()


def body_html(body: str, query: str | None = None) -> str:
    """``body`` (Markdown) as safe HTML in a ``div.md``, each word of ``query`` in ``<mark>``."""
    return f"<div class='md'>{_MARKDOWN.render(body, {'words': query_words(query)})}</div>"
