"""The look every notebook view shares: one style sheet whose colours are JupyterLab's theme variables.

Every colour is a ``--jp-*`` CSS variable (with a light fallback for pages that are not
JupyterLab: GitHub, nbviewer), so the light, dark and high-contrast themes all render text in
the theme's own foreground on the theme's own backgrounds. Meaning never rests on colour alone:
each status is written out (FOUND, AMBIGUOUS, MISSING, REFUSED, ...).
Text wraps between words: JupyterLab breaks an output's ``pre`` anywhere (``word-break: break-all``,
so ``decision`` could end a line as ``deci``); these views set ``word-break: normal`` and break a
token only when it alone is wider than its line (``overflow-wrap: anywhere``: a URL, a hash).
Table cells are left-aligned, whatever JupyterLab says: its output tables right-align every cell with a
selector of two classes, so the rule here names ``.knowtk`` twice to outweigh it. An id or a path sits in
a ``.nowrap`` span (``dec-2026-021`` never breaks at its hyphens); a number in a ``td.num``.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["STYLE", "banner", "escape", "wrap"]

_FG = "var(--jp-content-font-color1,#212121)"
_MUTED = "var(--jp-content-font-color2,#616161)"
_BG1 = "var(--jp-layout-color1,#fff)"
_BG2 = "var(--jp-layout-color2,#eee)"
_BG3 = "var(--jp-layout-color3,#bdbdbd)"
_LINE = "var(--jp-border-color2,#e0e0e0)"

STYLE = f"""<style>
.knowtk{{color:{_FG};font-size:var(--jp-content-font-size1,14px)}}
.knowtk table{{border-collapse:collapse;font-size:13px;margin:4px 0;color:{_FG};background:{_BG1}}}
.knowtk.knowtk th,.knowtk.knowtk td{{border-bottom:1px solid {_LINE};padding:3px 6px;text-align:left;vertical-align:top;
  color:{_FG}}}
.knowtk .nowrap{{white-space:nowrap}}
.knowtk td.num{{text-align:right;white-space:nowrap}}
.knowtk th{{background:{_BG2}}}
.knowtk mark{{background:var(--jp-search-selected-match-background-color,#ffe100);
  color:var(--jp-search-selected-match-color,#000);padding:0 1px}}
.knowtk tr.replacement td{{background:{_BG2}}}
.knowtk tr.selected td{{background:{_BG3}}}
.knowtk .muted{{color:{_MUTED};font-size:12px}}
.knowtk .via{{color:{_MUTED};font-size:12px;font-style:italic}}
.knowtk .box{{border-left:4px solid {_MUTED};padding:4px 8px;margin:4px 0;background:{_BG2};color:{_FG}}}
.knowtk .good{{border-left-color:var(--jp-success-color1,#4caf50)}}
.knowtk .warn{{border-left-color:var(--jp-warn-color1,#ff9800)}}
.knowtk .bad{{border-left-color:var(--jp-error-color1,#f44336)}}
.knowtk .issues{{max-height:16em;overflow:auto}}
.knowtk summary{{cursor:pointer}}
.knowtk pre{{white-space:pre-wrap;max-height:32em;overflow:auto;font-size:13px;
  background:{_BG2};color:{_FG};padding:6px}}
div.knowtk pre{{word-break:normal;overflow-wrap:anywhere}}
.knowtk .md{{word-break:normal;overflow-wrap:anywhere;white-space:normal;max-height:40em;overflow:auto;
  line-height:1.45}}
.knowtk .md h1,.knowtk .md h2,.knowtk .md h3,.knowtk .md h4,.knowtk .md h5,.knowtk .md h6{{margin:8px 0 4px 0;
  line-height:1.25}}
.knowtk .md h1{{font-size:1.25em}} .knowtk .md h2{{font-size:1.15em}} .knowtk .md h3{{font-size:1.05em}}
.knowtk .md h4,.knowtk .md h5,.knowtk .md h6{{font-size:1em}}
.knowtk .md p,.knowtk .md ul,.knowtk .md ol,.knowtk .md blockquote{{margin:4px 0}}
.knowtk .md blockquote{{border-left:3px solid {_LINE};padding-left:8px;color:{_MUTED}}}
.knowtk code{{background:{_BG2};color:{_FG}}}
.knowtk a{{color:var(--jp-content-link-color,#1976d2)}}
.knowtk dl{{margin:4px 0}} .knowtk dt{{font-weight:bold;margin-top:4px}} .knowtk dd{{margin-left:1.5em}}
.knowtk-rows{{border-top:1px solid {_LINE}}}
.knowtk-row{{border-bottom:1px solid {_LINE};align-items:center;min-height:30px;position:relative;cursor:pointer}}
.knowtk-row.knowtk-selected{{background:{_BG3};border-left:4px solid var(--jp-brand-color1,#2196f3)}}
.knowtk-row .knowtk-pick{{text-align:left;justify-content:flex-start;overflow:hidden;text-overflow:ellipsis;
  white-space:nowrap;background:transparent;color:{_FG};font-weight:bold;box-shadow:none}}
.knowtk-row .knowtk-pick:hover{{background:{_BG2}}}
.knowtk-row .knowtk-pick{{position:static !important}}
.knowtk-row .knowtk-pick::after{{content:"";position:absolute;inset:0;z-index:1}}
.knowtk-row .knowtk-meta{{overflow:hidden;white-space:nowrap;text-overflow:ellipsis;color:{_FG};font-size:12px}}
.knowtk-row .knowtk-meta .widget-html-content,.knowtk-row .knowtk-meta div{{overflow:hidden;white-space:nowrap;
  text-overflow:ellipsis;line-height:28px}}
.knowtk-inline{{border-left:4px solid var(--jp-brand-color1,#2196f3);padding-left:6px;margin:2px 0 6px 0}}
</style>"""


def wrap(body: str) -> str:
    """``body`` inside the styled ``knowtk`` container (each HTML output carries the style sheet)."""
    return f'<div class="knowtk">{STYLE}{body}</div>'


def escape(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def banner(tone: str, label: str, text: str = "") -> str:
    """A status box: ``tone`` is ``good``, ``warn`` or ``bad``; ``label`` the status in capitals; ``text`` HTML."""
    return f"<div class='box {tone}'><b>{escape(label)}</b> {text}</div>"
