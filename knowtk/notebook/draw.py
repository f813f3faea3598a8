"""Drawing helpers shared by the pictures: argument checks, colours, axes, legends, titles, text fitting.

Used by :mod:`.timeline`, :mod:`.chronicle` and :mod:`.chain_plot`; not part of the notebook's API.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib import colormaps
from matplotlib import colors as mcolors
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from knowtk.errors import InvalidArgument

__all__ = [
    "CHAR_WIDTH_EM",
    "COLUMN_INCHES",
    "EMPTY_TIMELINE_TEXT",
    "HATCH",
    "LANES",
    "MARKER",
    "MIN_FONT",
    "STYLES",
    "DateAxisFormatter",
    "axes_inches",
    "chars_for",
    "count_argument",
    "darker",
    "date_axis",
    "draw_empty",
    "is_missing",
    "legend_below",
    "new_axes",
    "palette",
    "require_columns",
    "set_title",
    "shorten",
    "style_legend_handles",
    "text_or_none",
    "time_zone",
    "unlabelled_note",
    "with_alpha",
    "wrap_text",
    "zone_name",
]

#: Allowed values of ``plot_timeline(lanes=...)``.
LANES: tuple[str, ...] = ("type", "kind", "lifecycle", "entity")

EMPTY_TIMELINE_TEXT = "no dated records"

STYLES = ("active", "superseded", "expired")
HATCH = {"active": "", "superseded": "///", "expired": "xxx"}
MARKER = {"active": "o", "superseded": "o", "expired": "D"}
CHAR_WIDTH_EM = 0.58  # average DejaVu Sans glyph width, in ems

#: Figures are sized for a ~1000 px notebook column: at most this many inches wide (at 100 dpi, the
#: inline backend's default, an image this wide is shown at its own size, not scaled down)...
COLUMN_INCHES = 9.5
#: ...and no text is smaller than this many points, so it reads as >= 9 pt on screen.
MIN_FONT = 9.0


# ---------------------------------------------------------------------------
# argument checks and small helpers


def time_zone(tz: Any) -> tzinfo:
    if isinstance(tz, tzinfo):
        return tz
    if not isinstance(tz, str) or not tz:
        raise InvalidArgument("tz", "expected an IANA time zone name such as 'Europe/Berlin'", value=tz)
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidArgument("tz", f"unknown IANA time zone {tz!r}", value=tz) from exc


def zone_name(zone: tzinfo) -> str:
    return str(getattr(zone, "key", None) or zone)


def count_argument(argument: str, value: Any, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgument(argument, f"expected an integer >= {minimum}", value=value)
    return value


def require_columns(frame: Any, argument: str, columns: Sequence[str]) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise InvalidArgument(argument, f"expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InvalidArgument(argument, "missing columns " + ", ".join(repr(c) for c in missing), allowed=list(columns))
    return frame


def is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (list, tuple, set, dict)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def text_or_none(value: Any) -> str | None:
    if is_missing(value):
        return None
    text = str(value).strip()
    return text or None


def shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if limit <= 1:
        return "…" if text else ""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def palette(n: int) -> list[tuple[float, float, float, float]]:
    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    size = 10 if n <= 10 else 20
    return [mcolors.to_rgba(cmap(i % size)) for i in range(n)]


def darker(color: tuple[float, float, float, float], factor: float = 0.7) -> tuple[float, float, float, float]:
    r, g, b, a = color
    return (r * factor, g * factor, b * factor, a)


def with_alpha(color: tuple[float, float, float, float], alpha: float) -> tuple[float, float, float, float]:
    return (color[0], color[1], color[2], alpha)


def new_axes(ax: Axes | None, width: float, height: float) -> tuple[Axes, bool]:
    if ax is not None:
        return ax, False
    _fig, new_ax = plt.subplots(figsize=(width, height), layout="constrained")
    return new_ax, True


def axes_inches(ax: Axes) -> tuple[float, float]:
    fig = ax.get_figure(root=True)
    if fig is None:
        return 8.0, 4.0
    pos = ax.get_position()
    fw, fh = fig.get_size_inches()
    return max(pos.width * fw, 1.0), max(pos.height * fh, 1.0)


def draw_empty(ax: Axes, text: str, title: str) -> Axes:
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=12, color="#777777", gid="empty")
    ax.set_title(title)
    return ax


def style_legend_handles(instant_styles: set[str], bar_styles: set[str]) -> list[Artist]:
    """Legend proxies for what was drawn: instants, day bars, and their inactive styles."""
    grey = mcolors.to_rgba("#666666")
    handles: list[Artist] = []
    if instant_styles:
        handles.append(Line2D([], [], ls="", marker="o", color=grey, label="instant"))
    if bar_styles:
        handles.append(Patch(facecolor=with_alpha(grey, 0.8), edgecolor=grey, label="date-only (UTC day)"))
    for style in ("superseded", "expired"):
        if style in instant_styles:
            handles.append(
                Line2D(
                    [],
                    [],
                    ls="",
                    marker=MARKER[style],
                    markerfacecolor="none",
                    markeredgecolor=grey,
                    markeredgewidth=1.4,
                    label=style,
                )
            )
        if style in bar_styles:
            handles.append(
                Patch(
                    facecolor=with_alpha(grey, 0.18),
                    edgecolor=grey,
                    hatch=HATCH[style],
                    label=f"{style} (day)" if style in instant_styles else style,
                )
            )
    return handles


def legend_below(ax: Axes, handles: list[Artist], pad_em: float) -> None:
    """A legend centred under the axes, ``pad_em`` legend-font sizes below it, in as few rows as the width allows."""
    if handles:
        fig = ax.get_figure(root=True)
        width_in = fig.get_figwidth() if fig is not None else COLUMN_INCHES
        longest = max(len(str(h.get_label())) for h in handles)
        per_entry = 0.55 + CHAR_WIDTH_EM * MIN_FONT / 72.0 * longest  # handle, gap and text
        ax.legend(
            handles=handles,
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            borderaxespad=pad_em,
            ncol=max(1, min(len(handles), int(width_in / per_entry))),
            frameon=False,
            fontsize=MIN_FONT,
        )


# ---------------------------------------------------------------------------
# text fitting and date axes


def wrap_text(text: str, width: int, lines: int = 2) -> str:
    """``text`` on at most ``lines`` lines of ``width`` characters, breaking at spaces; the rest elided (…)."""
    words = " ".join(text.split()).split(" ")
    out: list[str] = []
    current = ""
    for i, word in enumerate(words):
        candidate = f"{current} {word}".strip()
        if len(candidate) <= width or not current:
            current = candidate
            continue
        if len(out) == lines - 1:  # the last line allowed: the rest of the text, elided
            out.append(shorten(" ".join([current, *words[i:]]), width))
            return "\n".join(out)
        out.append(current)
        current = word
    out.append(current)
    return "\n".join(shorten(line, width) for line in out if line)


def chars_for(inches: float, fontsize: float) -> int:
    """How many average characters of ``fontsize`` fit in ``inches``."""
    return max(int(inches / (CHAR_WIDTH_EM * fontsize / 72.0)), 1)


def set_title(ax: Axes, main: str, notes: Sequence[str], width_in: float) -> None:
    """The title: what is drawn on one line, then the notes (counts, zone, what was left out) on one or two."""
    chars = chars_for(width_in, 11.0)
    ax.set_title(shorten(main, chars) + "\n" + wrap_text(" · ".join(notes), chars, 2), fontsize=11)


class DateAxisFormatter(mdates.ConciseDateFormatter):
    """Tick labels that name the day (when ticks are days apart), the month and the year.

    Every label names its month; the first label, and any label where the year changes,
    also names the year, so no axis leaves the reader to guess either (the plain
    ``ConciseDateFormatter`` puts the year in a corner offset, or only under January).
    """

    def __init__(self, locator: mdates.DateLocator, tz: tzinfo) -> None:
        super().__init__(locator, tz=tz, show_offset=False)
        self.zone = tz

    def format_ticks(self, values: Any) -> list[str]:
        stamps = [mdates.num2date(v, tz=self.zone) for v in values]
        if not stamps:
            return []
        step = (float(values[-1]) - float(values[0])) / max(len(values) - 1, 1)
        labels: list[str] = []
        previous: datetime | None = None
        for stamp in stamps:
            new_year = previous is None or stamp.year != previous.year
            new_day = previous is None or stamp.date() != previous.date()
            if step < 1.0:  # hours apart: the time, and the date where the day changes
                text = f"{stamp:%H:%M}" + (f"\n{stamp.day} {stamp:%b %Y}" if new_day else "")
            elif step < 28.0:  # days apart
                text = f"{stamp.day} {stamp:%b}" + (f"\n{stamp.year}" if new_year else "")
            else:  # months or years apart
                text = f"{stamp:%b}" + (f"\n{stamp.year}" if new_year else "")
            labels.append(text)
            previous = stamp
        return labels

    def __call__(self, x: float, pos: int | None = 0) -> str:
        stamp = mdates.num2date(x, tz=self.zone)
        return f"{stamp.day} {stamp:%b %Y}"


def date_axis(ax: Axes, zone: tzinfo) -> None:
    locator = mdates.AutoDateLocator(tz=zone, minticks=3, maxticks=8)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(DateAxisFormatter(locator, zone))
    ax.tick_params(axis="x", labelsize=MIN_FONT)


def unlabelled_note(labelled: int, unlabelled: int) -> str:
    """What the title says when not every row has a label: which ones do, and how many do not."""
    if not labelled:
        return f"no labels ({unlabelled:,} unlabelled)"
    return f"labels on the first {labelled:,} in time, {unlabelled:,} unlabelled"
