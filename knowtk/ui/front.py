"""``Front``: a widget that also carries a static HTML copy of itself, for pages where widgets do not run."""

from __future__ import annotations

from typing import Any

import ipywidgets as W

__all__ = ["Front"]


class Front(W.VBox):
    """A VBox whose MIME bundle adds a static HTML rendering, for places where widgets do not run.

    A stored notebook opened before its kernel runs (GitHub, nbviewer, JupyterLab without a live
    kernel) shows that ``text/html`` copy of the widget's last state instead of ``VBox(...)``.
    """

    def html(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(super()._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = self.html()
        return bundle
