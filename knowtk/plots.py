"""Matplotlib views over knowtk's date and supersession frames (kept for existing code).

The pictures live in :mod:`knowtk.notebook`, one module each: :mod:`knowtk.notebook.timeline`
(``plot_timeline``), :mod:`knowtk.notebook.chronicle` (``plot_chronicle``) and
:mod:`knowtk.notebook.chain_plot` (``plot_chains``). See ``docs/notebooks.md``.
"""

from __future__ import annotations

from .notebook._draw import LANES
from .notebook.chain_plot import plot_chains
from .notebook.chronicle import plot_chronicle
from .notebook.timeline import plot_timeline

__all__ = ["LANES", "plot_chains", "plot_chronicle", "plot_timeline"]
