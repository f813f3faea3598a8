"""The notebook front ends: pictures and widgets over the same ``Result`` objects as the Python API.

One module per picture and per widget family:

``timeline``, ``chronicle``, ``chain_plot``
    matplotlib pictures (``plot_timeline``, ``plot_chronicle``, ``plot_chains``), sized for a
    ~1000 px notebook column with no text under 9 pt; shared drawing helpers in ``draw``, the
    rows of a timeline or chronicle frame in ``dated``.
``plotters``
    the pictures as ``Result.plot`` for the timeline and chronicle tools (registered in
    ``knowtk.results.PLOTTERS`` when imported; ``Result.plot`` imports it by name).
``grep``, ``lookup``, ``knowl``, ``chain_widget``
    ipywidgets front ends (``GrepWidget``, ``LookupWidget``, ``KnowlWidget``, ``ChainWidget``) and
    the pure HTML views they show (``grep_table_html``, ``lookup_html``, ...).
``actions``
    ``RecordActions``: Edit fields, Supersede by…, Withdraw, Reinstate of one record, with a preview
    (a diff, nothing written) before the confirm and the receipt after; shown under a record selected in
    ``GrepWidget``, ``LookupWidget`` and ``ChainWidget``.
``panes``, ``text``, ``base``
    what the widgets share: record/why/coverage panes, highlighting and citations, the static-HTML
    fallback. The style sheet and the selectable rows, shared with the lab, are in ``knowtk.ui``.

Imports point one way: store → results → these. Nothing below ``knowtk.notebook`` imports it,
so ``import knowtk`` loads neither matplotlib nor ipywidgets. Names are resolved lazily here too.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_HOMES = {
    "ChainWidget": "chain_widget",
    "GrepWidget": "grep",
    "KnowlWidget": "knowl",
    "LANES": "draw",
    "LookupWidget": "lookup",
    "RecordActions": "actions",
    "diff_answers": "grep",
    "diff_frame": "grep",
    "plot_chains": "chain_plot",
    "plot_chronicle": "chronicle",
    "plot_history": "history_plot",
    "plot_timeline": "timeline",
    "readable_edges": "chain_widget",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
