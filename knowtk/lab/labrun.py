"""``LabRun``: what :func:`knowtk.lab.run` returns, a scored run with its views as methods.

The data and its means are :class:`~knowtk.lab.scored.ScoredRun`'s; the views (frames, comparison,
plot) are the functions of :mod:`~knowtk.lab.frames`, :mod:`~knowtk.lab.comparison` and
:mod:`~knowtk.lab.plots`, which read a ``ScoredRun`` and so never import this module.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from knowtk.lab.comparison import compare
from knowtk.lab.frames import cases_frame, metrics_frame, misses_frame
from knowtk.lab.plots import plot_metrics
from knowtk.lab.scored import ScoredRun

__all__ = ["LabRun"]


class LabRun(ScoredRun):
    """Every case under every variant, scored: ``.cases`` (one dict per case and variant) and ``.meta``.

    ``to_dict()`` is JSON (what :func:`knowtk.lab.save_run` writes); ``metrics()``, ``to_frame()`` and
    ``misses()`` are its frames, ``compare()`` two of its variants side by side, ``plot()`` its metrics.
    """

    def metrics(self) -> pd.DataFrame:
        return metrics_frame(self)

    def to_frame(self) -> pd.DataFrame:
        return cases_frame(self)

    def misses(self) -> pd.DataFrame:
        return misses_frame(self)

    def compare(self, left: str | None = None, right: str | None = None) -> pd.DataFrame:
        return compare(self, left=left, right=right)

    def plot(self, **kwargs: Any) -> Any:
        return plot_metrics(self, **kwargs)
