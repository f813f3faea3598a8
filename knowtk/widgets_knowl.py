"""``KnowlWidget`` (kept for existing code): it lives in :mod:`knowtk.notebook.knowl`."""

from __future__ import annotations

from .notebook.knowl import PREVIEW, KnowlWidget

__all__ = ["PREVIEW", "KnowlWidget"]
