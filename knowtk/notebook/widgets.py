"""The notebook's public names, for the plug-in manager: knowtk's default plug-in of the ``knowtk_widgets`` hook.

Each name maps to ``"module:attribute"``, imported when the name is first asked for
(``from knowtk.notebook import GrepWidget``), so importing ``knowtk.notebook`` loads no widget.
"""

from __future__ import annotations

__all__ = ["NAMES", "knowtk_widgets"]

NAMES = {
    "ChainWidget": "knowtk.notebook.chain_widget:ChainWidget",
    "GrepWidget": "knowtk.notebook.grep:GrepWidget",
    "KnowlWidget": "knowtk.notebook.knowl:KnowlWidget",
    "LANES": "knowtk.notebook.draw:LANES",
    "LookupWidget": "knowtk.notebook.lookup:LookupWidget",
    "RecordActions": "knowtk.notebook.actions:RecordActions",
    "find_path": "knowtk.notebook.places:find_path",
    "scratch_copy": "knowtk.notebook.places:scratch_copy",
    "diff_answers": "knowtk.notebook.grep:diff_answers",
    "diff_frame": "knowtk.notebook.grep:diff_frame",
    "plot_chains": "knowtk.notebook.chain_plot:plot_chains",
    "plot_chronicle": "knowtk.notebook.chronicle:plot_chronicle",
    "plot_history": "knowtk.notebook.history_plot:plot_history",
    "plot_lifecycle_over_time": "knowtk.notebook.lifecycle_plot:plot_lifecycle_over_time",
    "plot_in_force": "knowtk.notebook.in_force_plot:plot_in_force",
    "plot_timeline": "knowtk.notebook.timeline:plot_timeline",
    "readable_edges": "knowtk.notebook.chain_widget:readable_edges",
}


def knowtk_widgets() -> dict[str, str]:
    """The plug-in hook: name -> where it lives."""
    return dict(NAMES)
