"""Notebook widgets and their HTML views (kept for existing code and the README).

They live in :mod:`knowtk.notebook`, one module per widget family: :mod:`~knowtk.notebook.grep`
(``GrepWidget``), :mod:`~knowtk.notebook.lookup` (``LookupWidget``), :mod:`~knowtk.notebook.knowl`
(``KnowlWidget``) and :mod:`~knowtk.notebook.chain_widget` (``ChainWidget``). See ``docs/notebooks.md``.
"""

from __future__ import annotations

from .notebook.chain_widget import ALL_CHAINS, ChainWidget
from .notebook.grep import GrepWidget, diff_answers, diff_frame, diff_html, grep_table_html
from .notebook.knowl import KnowlWidget
from .notebook.lookup import LookupWidget, lookup_html
from .notebook.panes import explain_html, issues_html, record_html
from .notebook.text import citation_text, fold, highlight, query_words

__all__ = [
    "ALL_CHAINS",
    "ChainWidget",
    "GrepWidget",
    "KnowlWidget",
    "LookupWidget",
    "citation_text",
    "diff_answers",
    "diff_frame",
    "diff_html",
    "explain_html",
    "fold",
    "grep_table_html",
    "highlight",
    "issues_html",
    "lookup_html",
    "query_words",
    "record_html",
]
