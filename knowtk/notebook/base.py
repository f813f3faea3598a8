"""What every notebook widget shares: a static HTML copy in its MIME bundle, and small control helpers."""

from __future__ import annotations

from typing import Any

import ipywidgets as W

__all__ = ["Front", "joined", "listed", "text_control"]


def joined(value: str | list[str] | tuple[str, ...] | None) -> str:
    return ", ".join([value] if isinstance(value, str) else value or [])


def listed(text: str) -> list[str] | None:
    items = [t.strip() for t in text.split(",") if t.strip()]
    return items or None


def text_control(description: str, placeholder: str, value: str = "", width: str = "220px") -> W.Text:
    """A text box that reports its value on Enter or when it loses focus (not at every keystroke)."""
    return W.Text(
        value=value,
        description=description,
        placeholder=placeholder,
        continuous_update=False,
        layout=W.Layout(width=width),
    )


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
