"""Drawing helpers shared by the pictures: argument checks, dated rows, colours, date axes, text fitting.

Private to :mod:`knowtk.notebook`; the pictures are :mod:`.timeline`, :mod:`.chronicle` and :mod:`.chain_plot`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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

# the pictures also import this module's underscored helpers: they are private to knowtk.notebook
__all__ = [
    "COLUMN_INCHES",
    "EMPTY_CHAINS_TEXT",
    "EMPTY_TIMELINE_TEXT",
    "LANES",
    "MIN_FONT",
    "NO_LANE",
    "DateAxisFormatter",
]

#: Allowed values of ``plot_timeline(lanes=...)``.
LANES: tuple[str, ...] = ("type", "kind", "lifecycle", "entity")

NO_LANE = "(none)"
EMPTY_TIMELINE_TEXT = "no dated records"
EMPTY_CHAINS_TEXT = "no supersession chains"

_STYLES = ("active", "superseded", "expired")
_HATCH = {"active": "", "superseded": "///", "expired": "xxx"}
_MARKER = {"active": "o", "superseded": "o", "expired": "D"}
_FIXED_LANE_ORDER = {
    "kind": ("page", "claim", "relationship"),
    "lifecycle": ("active", "superseded", "expired"),
}
_LABEL_CHARS = 28
_LANE_LABEL_CHARS = 26
_CHAR_WIDTH_EM = 0.58  # average DejaVu Sans glyph width, in ems

#: Figures are sized for a ~1000 px notebook column: at most this many inches wide (at 100 dpi, the
#: inline backend's default, an image this wide is shown at its own size, not scaled down)...
COLUMN_INCHES = 9.5
#: ...and no text is smaller than this many points, so it reads as >= 9 pt on screen.
MIN_FONT = 9.0

# chains
_CHAIN_END_RANK = {"withdrawn": 0, "missing": 1, "unavailable": 2, "cycle": 3, "current": 9}
_CHAIN_END_TEXT = {
    "withdrawn": "✕ withdrawn",
    "missing": "✕ missing",
    "unavailable": "✕ unavailable",
    "cycle": "↻ cycle",
}
_NODE_FILL = {
    "active": "#d5efcf",
    "superseded": "#e4e4e4",
    "withdrawn": "#f5cfcf",
    "missing": "#ffffff",
    "unavailable": "#fbe0c3",
    "expired": "#f3ecc8",
}
_GREEN = "#23923a"
_RED = "#c0392b"
_GREY = "#555555"


# ---------------------------------------------------------------------------
# argument checks and small helpers


def _zone(tz: Any) -> tzinfo:
    if isinstance(tz, tzinfo):
        return tz
    if not isinstance(tz, str) or not tz:
        raise InvalidArgument("tz", "expected an IANA time zone name such as 'Europe/Berlin'", value=tz)
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidArgument("tz", f"unknown IANA time zone {tz!r}", value=tz) from exc


def _zone_name(zone: tzinfo) -> str:
    return str(getattr(zone, "key", None) or zone)


def _count(argument: str, value: Any, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgument(argument, f"expected an integer >= {minimum}", value=value)
    return value


def _require(frame: Any, argument: str, columns: Sequence[str]) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise InvalidArgument(argument, f"expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InvalidArgument(argument, "missing columns " + ", ".join(repr(c) for c in missing), allowed=list(columns))
    return frame


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (list, tuple, set, dict)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _text(value: Any) -> str | None:
    if _missing(value):
        return None
    text = str(value).strip()
    return text or None


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if limit <= 1:
        return "…" if text else ""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _style(lifecycle: Any) -> str:
    value = _text(lifecycle)
    return value if value in ("superseded", "expired") else "active"


def _utc(values: pd.Series) -> pd.Series:
    if len(values) == 0:
        return pd.Series([], dtype="datetime64[ns, UTC]", index=values.index)
    return pd.to_datetime(values, utc=True, errors="coerce", format="ISO8601")


def _datenums(values: pd.Series) -> list[float]:
    """UTC timestamps -> matplotlib date numbers (days); NaT -> nan."""
    naive = values.dt.tz_convert("UTC").dt.tz_localize(None)
    return [float(x) for x in mdates.date2num(naive.to_numpy())]


def _palette(n: int) -> list[tuple[float, float, float, float]]:
    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    size = 10 if n <= 10 else 20
    return [mcolors.to_rgba(cmap(i % size)) for i in range(n)]


def _darker(color: tuple[float, float, float, float], factor: float = 0.7) -> tuple[float, float, float, float]:
    r, g, b, a = color
    return (r * factor, g * factor, b * factor, a)


def _with_alpha(color: tuple[float, float, float, float], alpha: float) -> tuple[float, float, float, float]:
    return (color[0], color[1], color[2], alpha)


def _new_axes(ax: Axes | None, width: float, height: float) -> tuple[Axes, bool]:
    if ax is not None:
        return ax, False
    _fig, new_ax = plt.subplots(figsize=(width, height), layout="constrained")
    return new_ax, True


def _axes_inches(ax: Axes) -> tuple[float, float]:
    fig = ax.get_figure(root=True)
    if fig is None:
        return 8.0, 4.0
    pos = ax.get_position()
    fw, fh = fig.get_size_inches()
    return max(pos.width * fw, 1.0), max(pos.height * fh, 1.0)


def _empty(ax: Axes, text: str, title: str) -> Axes:
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=12, color="#777777", gid="empty")
    ax.set_title(title)
    return ax


def _style_legend_handles(instant_styles: set[str], bar_styles: set[str]) -> list[Artist]:
    """Legend proxies for what was drawn: instants, day bars, and their inactive styles."""
    grey = mcolors.to_rgba("#666666")
    handles: list[Artist] = []
    if instant_styles:
        handles.append(Line2D([], [], ls="", marker="o", color=grey, label="instant"))
    if bar_styles:
        handles.append(Patch(facecolor=_with_alpha(grey, 0.8), edgecolor=grey, label="date-only (UTC day)"))
    for style in ("superseded", "expired"):
        if style in instant_styles:
            handles.append(
                Line2D(
                    [],
                    [],
                    ls="",
                    marker=_MARKER[style],
                    markerfacecolor="none",
                    markeredgecolor=grey,
                    markeredgewidth=1.4,
                    label=style,
                )
            )
        if style in bar_styles:
            handles.append(
                Patch(
                    facecolor=_with_alpha(grey, 0.18),
                    edgecolor=grey,
                    hatch=_HATCH[style],
                    label=f"{style} (day)" if style in instant_styles else style,
                )
            )
    return handles


def _legend_below(ax: Axes, handles: list[Artist], pad_em: float) -> None:
    """A legend centred under the axes, ``pad_em`` legend-font sizes below it, in as few rows as the width allows."""
    if handles:
        fig = ax.get_figure(root=True)
        width_in = fig.get_figwidth() if fig is not None else COLUMN_INCHES
        longest = max(len(str(h.get_label())) for h in handles)
        per_entry = 0.55 + _CHAR_WIDTH_EM * MIN_FONT / 72.0 * longest  # handle, gap and text
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
# dated rows


@dataclass
class _Row:
    rid: str
    label: str
    style: str
    start: pd.Timestamp
    end: pd.Timestamp
    x0: float
    x1: float
    bar: bool
    keys: list[str] = field(default_factory=list)


def _lane_keys(value: Any, lanes: str) -> list[str]:
    if lanes == "entity":
        if _missing(value):
            return [NO_LANE]
        if isinstance(value, str):
            items = [value]
        else:
            try:
                items = list(value)
            except TypeError:
                items = [value]
        keys = [k for k in dict.fromkeys(_text(v) for v in items) if k]
        return keys or [NO_LANE]
    return [_text(value) or NO_LANE]


def _dated_rows(frame: pd.DataFrame, lanes: str | None) -> tuple[list[_Row], int]:
    """Normalise a timeline/chronicle frame; returns (rows, rows skipped for want of a start)."""
    n = len(frame)
    start = _utc(frame["start"]).reset_index(drop=True)
    end = _utc(frame["end"]).reset_index(drop=True) if "end" in frame.columns else start.copy()
    end = end.where(end.notna() & (end >= start), start)
    if "date_only" in frame.columns:
        flags = [bool(v) if not _missing(v) else None for v in frame["date_only"].tolist()]
    else:
        flags = [None] * n
    one_day = pd.Timedelta(days=1)
    bar = []
    for i, flag in enumerate(flags):
        is_bar = flag if flag is not None else bool(end.iloc[i] > start.iloc[i])
        if is_bar and not end.iloc[i] > start.iloc[i] and not pd.isna(start.iloc[i]):
            end.iloc[i] = start.iloc[i] + one_day
        bar.append(is_bar)
    x0 = _datenums(start) if n else []
    x1 = _datenums(end) if n else []
    ids = [(_text(v) or "?") for v in frame["id"].tolist()]
    titles = frame["title"].tolist() if "title" in frame.columns else [None] * n
    lifecycles = frame["lifecycle"].tolist() if "lifecycle" in frame.columns else [None] * n
    column = {"entity": "entities"}.get(lanes or "", lanes)
    lane_values = frame[column].tolist() if column else [None] * n
    rows: list[_Row] = []
    skipped = 0
    for i in range(n):
        if pd.isna(start.iloc[i]):
            skipped += 1
            continue
        rows.append(
            _Row(
                rid=ids[i],
                label=_text(titles[i]) or ids[i],
                style=_style(lifecycles[i]),
                start=start.iloc[i],
                end=end.iloc[i],
                x0=x0[i],
                x1=x1[i],
                bar=bar[i],
                keys=_lane_keys(lane_values[i], lanes) if lanes else [],
            )
        )
    return rows, skipped


# ---------------------------------------------------------------------------
# text fitting and date axes


def _wrap_text(text: str, width: int, lines: int = 2) -> str:
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
            out.append(_shorten(" ".join([current, *words[i:]]), width))
            return "\n".join(out)
        out.append(current)
        current = word
    out.append(current)
    return "\n".join(_shorten(line, width) for line in out if line)


def _chars_for(inches: float, fontsize: float) -> int:
    """How many average characters of ``fontsize`` fit in ``inches``."""
    return max(int(inches / (_CHAR_WIDTH_EM * fontsize / 72.0)), 1)


def _set_title(ax: Axes, main: str, notes: Sequence[str], width_in: float) -> None:
    """The title: what is drawn on one line, then the notes (counts, zone, what was left out) on one or two."""
    chars = _chars_for(width_in, 11.0)
    ax.set_title(_shorten(main, chars) + "\n" + _wrap_text(" · ".join(notes), chars, 2), fontsize=11)


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


def _date_axis(ax: Axes, zone: tzinfo) -> None:
    locator = mdates.AutoDateLocator(tz=zone, minticks=3, maxticks=8)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(DateAxisFormatter(locator, zone))
    ax.tick_params(axis="x", labelsize=MIN_FONT)


def _unlabelled_note(labelled: int, unlabelled: int) -> str:
    """What the title says when not every row has a label: which ones do, and how many do not."""
    if not labelled:
        return f"no labels ({unlabelled:,} unlabelled)"
    return f"labels on the first {labelled:,} in time, {unlabelled:,} unlabelled"
