"""Small helpers every notebook widget's controls share: list fields as text, and a text box."""

from __future__ import annotations

import ipywidgets as W

__all__ = ["joined", "listed", "text_control"]


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
