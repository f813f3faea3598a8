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
``places``
    where a notebook's store is (``find_path``: its ``STORE`` variable, ``$KNOWTK_STORE``, or the checkout's
    demo store) and ``scratch_copy`` for a notebook that changes files.
``panes``, ``text``, ``base``
    what the widgets share: record/why/coverage panes, highlighting and citations, the static-HTML
    fallback. The style sheet and the selectable rows, shared with the lab, are in ``knowtk.ui``.

Imports point one way: store → results → these. Nothing below ``knowtk.notebook`` imports it,
so ``import knowtk`` loads neither matplotlib nor ipywidgets. Names are resolved lazily here too, through
the plug-in manager's ``knowtk_widgets`` hook (``widgets`` is knowtk's own), so a plug-in's widget is
``from knowtk.notebook import ItsWidget`` like the built-in ones.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from knowtk import plugins
from knowtk.notebook.widgets import NAMES

#: the names this package offers: knowtk's own (``knowtk.notebook.widgets``), then the plug-ins' widgets
__all__ = sorted(NAMES)


def _resolve(found: Any) -> Any:
    if isinstance(found, str):  # "module:attribute", imported when first asked for
        module, _, attribute = found.partition(":")
        return getattr(import_module(module), attribute)
    return found


def __getattr__(name: str) -> Any:
    for outside in (False, True):  # the installed plug-ins are read only for a name knowtk has not
        for _, offered in plugins.hook_results("knowtk_widgets", outside=outside):
            if name in offered:
                return _resolve(offered[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
