"""Matplotlib views over knowtk's date and supersession frames.

Three functions, each drawing on one :class:`~matplotlib.axes.Axes` and returning it:

``plot_timeline(frame, lanes=..., tz=...)``
    Dated records on a date axis, one horizontal lane per type, kind, lifecycle or entity.
    Instants are points; date-only values are bars covering their UTC day ``[start, end)``,
    so a date-only record is visibly an interval rather than a claimed instant.

``plot_chronicle(frame, tz=...)``
    A calendar day/week view: one column per calendar day in ``tz``, time of day (0-24 h,
    local) downwards, instants as points at their local time of day and date-only records
    as bands in an "all day" strip at the top of their authored day. The x axis is a date
    axis of local calendar days: the column of day ``D`` spans ``[date2num(D), date2num(D + 1))``
    with ``D`` the naive local date (wall-clock, like the y axis), so ``num2date(x).date()`` is
    the local date; the locator and formatter therefore work in UTC, not in ``tz``.

``plot_chains(edges)``
    Supersession chains as left-to-right rows of boxes, arrows earlier -> later, dead ends
    (withdrawn, missing, unavailable, cycle) first and marked in red.

Styling that carries meaning (tests rely on it, and so may readers):

* active rows are filled; ``superseded`` rows are hollow circles / faded bars hatched ``///``;
  ``expired`` rows are hollow diamonds / faded bars hatched ``xxx``. A legend names both.
* every bar or band :class:`~matplotlib.patches.Rectangle` has ``gid`` = the record id;
  scatter collections have ``gid`` = ``"instants:<style>"``; per-row labels have ``gid`` = ``"label"``.
* chain boxes have ``gid`` = ``"node:<chain>:<id>"``, arrows (one
  :class:`~matplotlib.patches.FancyArrowPatch` per edge) ``"edge:<chain>:<from>-><to>"``, end markers
  ``"end:<chain>"``.

Per-row labels are all-or-nothing: when a view has more rows than ``max_labels`` it labels none
(an arbitrary subset would make the unlabelled rows look untitled) and says so in the title.

Figures are created with :func:`matplotlib.pyplot.subplots` (so Jupyter shows them) only when
``ax`` is None; nothing calls ``plt.show()``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
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
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch, Rectangle
from matplotlib.ticker import FuncFormatter

from knowtk.chains import EDGE_COLUMNS
from knowtk.errors import InvalidArgument

__all__ = ["LANES", "plot_chains", "plot_chronicle", "plot_timeline"]

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
    """A one-row legend centred under the axes, ``pad_em`` legend-font sizes below it."""
    if handles:
        ax.legend(
            handles=handles,
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            borderaxespad=pad_em,
            ncol=len(handles),
            frameon=False,
            fontsize=8,
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
# timeline


@dataclass
class _Item:
    row: _Row
    lane: str
    track: int = 0
    y: float = 0.0


def _order_lanes(lanes: str, counts: dict[str, int]) -> list[str]:
    fixed = _FIXED_LANE_ORDER.get(lanes, ())
    rank = {name: i for i, name in enumerate(fixed)}

    def key(name: str) -> tuple[int, int, str]:
        if name == NO_LANE or name.startswith("(other"):
            return (2, 0, name)
        if name in rank:
            return (0, rank[name], name)
        return (1, 0, name.casefold())

    return sorted(counts, key=key)


def plot_timeline(
    frame: pd.DataFrame,
    *,
    lanes: str = "type",
    tz: str | tzinfo = "UTC",
    ax: Axes | None = None,
    title: str | None = None,
    max_labels: int = 40,
    max_lanes: int = 40,
) -> Axes:
    """Draw dated records on a date axis, one horizontal lane per ``lanes`` value.

    ``lanes`` is one of :data:`LANES`; with ``"entity"`` a row appears in the lane of each of its
    entities and rows without entities in ``"(none)"``. Dates are displayed in ``tz`` (an IANA
    name); date-only rows are bars over their UTC day, instants are points. When more than
    ``max_lanes`` lanes exist the least populated are folded into one ``"(other: N lanes)"`` lane.
    Returns the Axes (a new figure whose height grows with the lanes when ``ax`` is None).
    """
    if not isinstance(lanes, str) or lanes not in LANES:
        raise InvalidArgument("lanes", f"unknown lane field {lanes!r}", allowed=LANES, value=lanes)
    zone = _zone(tz)
    max_labels = _count("max_labels", max_labels)
    max_lanes = _count("max_lanes", max_lanes, minimum=1)
    lane_column = {"entity": "entities"}.get(lanes, lanes)
    _require(frame, "frame", ("id", "start", lane_column))
    main_title = title if title is not None else f"Timeline by {lanes}"

    rows, skipped = _dated_rows(frame, lanes)
    if not rows:
        ax, _ = _new_axes(ax, 11.0, 2.6)
        return _empty(ax, EMPTY_TIMELINE_TEXT, main_title)

    # lanes, folding the least populated ones beyond max_lanes
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        for key in row.keys:
            counts[key] += 1
    folded = 0
    if len(counts) > max_lanes:
        keep = max_lanes - 1
        by_size = sorted(counts, key=lambda k: (-counts[k], k.casefold()))
        kept = set(by_size[:keep])
        folded = len(counts) - keep
        other = f"(other: {folded} lanes)"
        for row in rows:
            row.keys = list(dict.fromkeys(k if k in kept else other for k in row.keys))
        counts = defaultdict(int)
        for row in rows:
            for key in row.keys:
                counts[key] += 1
    lane_names = _order_lanes(lanes, counts)
    items = [_Item(row, key) for row in rows for key in row.keys]
    labelled = len(items) <= max_labels

    # horizontal geometry (in days), worked out before the figure exists so labels can be packed:
    # the range R must hold every item and its label, whose width in days is (inches) * R / axes width.
    x_lo = min(r.x0 for r in rows)
    x_hi = max(r.x1 for r in rows)
    fontsize = 7.5
    char_in = _CHAR_WIDTH_EM * fontsize / 72.0
    axes_w = _axes_inches(ax)[0] if ax is not None else 11.0 - 2.4
    label_texts = {id(it): _shorten(it.row.label, _LABEL_CHARS) for it in items} if labelled else {}

    def label_in(it: _Item) -> float:
        return min((len(label_texts[id(it)]) + 2) * char_in, 0.45 * axes_w) if labelled else 0.0

    x_range = max(x_hi - x_lo, 1.0)
    for it in items:
        anchor = it.row.x1 if it.row.bar else it.row.x0
        x_range = max(x_range, (anchor - x_lo) / (1.0 - label_in(it) / axes_w - 0.01))
    x_range *= 1.01
    days_per_in = x_range * 1.03 / axes_w
    gap = 0.012 * x_range

    # pack each lane's items into tracks so that points, bars and labels do not collide
    max_tracks = 8 if labelled else 3
    tracks_in_lane: dict[str, int] = {}
    by_lane: dict[str, list[_Item]] = defaultdict(list)
    for it in items:
        by_lane[it.lane].append(it)
    for name in lane_names:
        ends: list[float] = []
        for it in sorted(by_lane[name], key=lambda i: (i.row.x0, i.row.x1, i.row.rid)):
            anchor = it.row.x1 if it.row.bar else it.row.x0
            occupied = anchor + gap
            occupied += label_in(it) * days_per_in
            free = [t for t, e in enumerate(ends) if e <= it.row.x0]
            if free:
                track = free[0]
            elif len(ends) < max_tracks:
                track = len(ends)
                ends.append(0.0)
            else:
                track = min(range(len(ends)), key=lambda t: ends[t])
            ends[track] = max(ends[track], occupied)
            it.track = track
        tracks_in_lane[name] = max(len(ends), 1)

    # vertical layout: lane 0 at the top, tracks stacked inside each lane
    lane_gap = 0.6
    centers: dict[str, float] = {}
    bounds: list[float] = []
    base = 0.0
    for name in lane_names:
        n_tracks = tracks_in_lane[name]
        centers[name] = base + (n_tracks - 1) / 2.0
        bounds.append(base - lane_gap / 2.0 - 0.5)
        base += n_tracks + lane_gap
    y_bottom = base - lane_gap / 2.0 - 0.5
    lane_base = {name: centers[name] - (tracks_in_lane[name] - 1) / 2.0 for name in lane_names}
    for it in items:
        it.y = lane_base[it.lane] + it.track

    units = y_bottom - bounds[0]
    unit_in = 0.3 if labelled else 0.2
    height = min(max(1.9 + units * unit_in, 3.0), 14.0)
    ax, _ = _new_axes(ax, 11.0, height)

    colors = dict(zip(lane_names, _palette(len(lane_names)), strict=True))
    bar_height = 0.62
    bar_styles: set[str] = set()
    instant_styles: set[str] = set()
    many = len(items) > 400
    for style in _STYLES:
        bars = [it for it in items if it.row.bar and it.row.style == style]
        if bars:
            bar_styles.add(style)
            alpha = 0.85 if style == "active" else 0.2
            container = ax.barh(
                [it.y for it in bars],
                [it.row.x1 - it.row.x0 for it in bars],
                left=[it.row.x0 for it in bars],
                height=bar_height,
                color=[_with_alpha(colors[it.lane], alpha) for it in bars],
                edgecolor=[_darker(colors[it.lane]) for it in bars],
                linewidth=0.6 if style == "active" else 0.9,
                hatch=_HATCH[style] or None,
                zorder=2,
            )
            for rect, it in zip(container.patches, bars, strict=True):
                rect.set_gid(it.row.rid)
        points = [it for it in items if not it.row.bar and it.row.style == style]
        if points:
            instant_styles.add(style)
            size = 14.0 if many else 36.0
            edge = [_darker(colors[it.lane], 0.8) for it in points]
            face: Any = [colors[it.lane] for it in points] if style == "active" else "none"
            ax.scatter(
                [it.row.x0 for it in points],
                [it.y for it in points],
                s=size,
                marker=_MARKER[style],
                facecolors=face,
                edgecolors=edge,
                linewidths=0.5 if style == "active" else 1.3,
                alpha=0.75 if many else 1.0,
                zorder=3,
                gid=f"instants:{style}",
            )

    if labelled:
        for it in items:
            anchor = it.row.x1 if it.row.bar else it.row.x0
            ax.annotate(
                label_texts[id(it)],
                xy=(anchor, it.y),
                xytext=(4, 0),
                textcoords="offset points",
                ha="left",
                va="center",
                fontsize=fontsize,
                color="#222222" if it.row.style == "active" else "#777777",
                clip_on=True,
                gid="label",
            )

    # axes: lanes on y, local dates on x
    for y in bounds[1:]:
        ax.axhline(y, color="#dddddd", linewidth=0.8, zorder=0)
    ax.set_ylim(y_bottom, bounds[0])
    lane_font = 9.0 if len(lane_names) <= 20 else 8.0
    ax.set_yticks(
        [centers[n] for n in lane_names], [_shorten(n, _LANE_LABEL_CHARS) for n in lane_names], fontsize=lane_font
    )
    ax.tick_params(axis="y", length=0)
    ax.set_xlim(x_lo - 0.02 * x_range, x_lo + x_range)
    locator = mdates.AutoDateLocator(tz=zone, minticks=3, maxticks=9)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=zone))
    ax.grid(axis="x", color="#eeeeee", zorder=0)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    notes = [f"{len(rows):,} record{'s' if len(rows) != 1 else ''}", _zone_name(zone)]
    if not labelled:
        notes.append(f"labels hidden above {max_labels:,}")
    if folded:
        notes.append(f"{folded} small lanes folded")
    if skipped:
        notes.append(f"{skipped} without start skipped")
    ax.set_title(f"{main_title} · " + ", ".join(notes), fontsize=11)
    # below the tick labels and ConciseDateFormatter's offset text
    _legend_below(ax, _style_legend_handles(instant_styles, bar_styles), 3.9)
    return ax


# ---------------------------------------------------------------------------
# chronicle


def _offset_text(delta: timedelta | None) -> str:
    if delta is None:
        return "?"
    minutes = int(delta.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    h, m = divmod(abs(minutes), 60)
    return f"{sign}{h}" if not m else f"{sign}{h}:{m:02d}"


def _day_offsets(day: date, zone: tzinfo) -> tuple[timedelta | None, timedelta | None]:
    start = datetime.combine(day, time(0), zone)
    end = datetime.combine(day + timedelta(days=1), time(0), zone)
    return start.utcoffset(), end.utcoffset()


class _DayColumnLocator(mdates.DateLocator):
    """Ticks at the centre of day columns: every ``stride``-th day counted from the column ``day0``,
    the stride chosen so that at most ``max_ticks`` fall in the view (it follows zooming).

    Chronicle x values are naive local calendar days (see the module docstring), so the ticks sit
    at UTC noon of those date numbers and only the ones inside the view are returned.
    """

    def __init__(self, day0: float, max_ticks: int = 14) -> None:
        super().__init__(tz=UTC)
        self.day0 = day0
        self.max_ticks = max_ticks

    def __call__(self) -> list[float]:
        if self.axis is None:
            return []
        vmin, vmax = self.axis.get_view_interval()
        return self.tick_values(vmin, vmax)

    def tick_values(self, vmin: float, vmax: float) -> list[float]:
        lo, hi = sorted((float(vmin), float(vmax)))
        stride = max(1, math.ceil(round(hi - lo, 6) / self.max_ticks))
        first = math.ceil((lo - self.day0 - 0.5) / stride - 1e-9)
        last = math.floor((hi - self.day0 - 0.5) / stride + 1e-9)
        return [self.day0 + 0.5 + k * stride for k in range(first, last + 1)]


def _day_of(x: float, first: date, day0: float) -> date:
    """The local calendar day whose chronicle column holds x."""
    return first + timedelta(days=math.floor(x - day0))


def plot_chronicle(
    frame: pd.DataFrame,
    *,
    tz: str | tzinfo = "UTC",
    ax: Axes | None = None,
    title: str | None = None,
    max_labels: int = 40,
) -> Axes:
    """Draw a calendar day/week view: one column per calendar day in ``tz``, time of day downwards.

    Instants sit at their local time of day (so 15:00+01:00 before a DST change and 15:00+02:00
    after it are both at 15:00); date-only rows are bands in an "all day" strip at the top of
    their authored day (at most 4 stacked, then "+N more"). Days whose UTC offset changes are
    marked in the tick label. Returns the Axes.
    """
    zone = _zone(tz)
    max_labels = _count("max_labels", max_labels)
    _require(frame, "frame", ("id", "start"))
    main_title = title if title is not None else "Chronicle"
    rows, skipped = _dated_rows(frame, None)
    if not rows:
        ax, _ = _new_axes(ax, 9.0, 2.6)
        return _empty(ax, EMPTY_TIMELINE_TEXT, f"{main_title} · {_zone_name(zone)}")

    # place every row on its calendar day
    placed: list[tuple[_Row, date, float]] = []
    for row in rows:
        if row.bar:
            placed.append((row, row.start.tz_convert("UTC").date(), -1.0))
        else:
            local = row.start.tz_convert(zone)
            hours = local.hour + local.minute / 60.0 + local.second / 3600.0
            placed.append((row, local.date(), hours))
    first = min(d for _, d, _ in placed)
    last = max(d for _, d, _ in placed)
    n_days = (last - first).days + 1
    # x is a date axis of local calendar days: column ``col`` spans [day0 + col, day0 + col + 1)
    day0 = float(mdates.date2num(datetime.combine(first, time(0))))

    def centre(col: int) -> float:
        return day0 + col + 0.5

    labelled = len(rows) <= max_labels

    per_day_bands: dict[int, list[_Row]] = defaultdict(list)
    instants: list[tuple[_Row, int, float]] = []
    for row, day, hours in placed:
        col = (day - first).days
        if row.bar:
            per_day_bands[col].append(row)
        else:
            instants.append((row, col, hours))
    slots = min(max((len(v) for v in per_day_bands.values()), default=0), 4)
    slot_h = 1.25
    strip_gap = 0.5
    strip_top = -(strip_gap + slots * slot_h) if slots else 0.0

    width = min(max(2.2 + 1.9 * n_days, 6.5), 18.0)
    height = 8.0 + 0.25 * slots
    ax, created = _new_axes(ax, width, height)
    ax.xaxis_date(UTC)  # before drawing, so the axis keeps our locator and formatter
    # a new figure is laid out by constrained layout later: estimate the axes from its margins
    axes_w, axes_h = (width - 1.0, height - 1.5) if created else _axes_inches(ax)
    col_in = axes_w / n_days
    fontsize = 7.0
    char_in = _CHAR_WIDTH_EM * fontsize / 72.0

    # background: weekends and day separators (only while days are wide enough to read), all-day strip
    if col_in >= 0.25:
        for col in range(n_days):
            if (first + timedelta(days=col)).weekday() >= 5:
                ax.axvspan(day0 + col, day0 + col + 1, color="#f3f3f3", zorder=0, linewidth=0)
        for col in range(n_days + 1):
            ax.axvline(day0 + col, color="#dddddd", linewidth=0.8, zorder=0.5)
    if slots:
        ax.axhspan(strip_top, -strip_gap / 2.0, color="#eef3fa", zorder=0.2, linewidth=0)
        ax.axhline(-strip_gap / 4.0, color="#999999", linewidth=0.8, zorder=0.6)

    palette = {
        "active": mcolors.to_rgba("#3f7fbf"),
        "superseded": mcolors.to_rgba("#8c8c8c"),
        "expired": mcolors.to_rgba("#b07a2a"),
    }
    bar_styles = {r.style for r in rows if r.bar}
    instant_styles = {r.style for r in rows if not r.bar}

    # all-day bands
    band_chars = max(int(col_in * 0.9 / char_in) - 1, 0)
    for col, band_rows in sorted(per_day_bands.items()):
        band_rows.sort(key=lambda r: (r.start, r.end, r.rid))
        wide = col_in >= 0.55  # room for a "+N more" note in the last slot
        shown = band_rows if len(band_rows) <= slots else band_rows[: slots - 1 if wide else slots]
        for slot, row in enumerate(shown):
            y = strip_top + slot * slot_h + 0.12
            color = palette[row.style]
            rect = Rectangle(
                (centre(col) - 0.47, y),
                0.94,
                slot_h - 0.24,
                facecolor=_with_alpha(color, 0.75 if row.style == "active" else 0.2),
                edgecolor=_darker(color),
                linewidth=0.6 if row.style == "active" else 0.9,
                hatch=_HATCH[row.style] or None,
                zorder=2,
                gid=row.rid,
            )
            ax.add_patch(rect)
            if labelled and band_chars >= 3:
                active = row.style == "active"
                band_text = ax.text(
                    centre(col) - 0.44,
                    y + (slot_h - 0.24) / 2.0,
                    _shorten(row.label, band_chars),
                    ha="left",
                    va="center",
                    fontsize=fontsize,
                    zorder=3,
                    gid="label",
                    color="white" if active else "#333333",
                    bbox=None
                    if active
                    else {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
                )
                band_text.set_clip_path(rect)
        if len(shown) < len(band_rows) and wide:
            y = strip_top + (slots - 1) * slot_h + slot_h / 2.0
            ax.text(
                centre(col),
                y,
                f"+{len(band_rows) - len(shown)} more",
                ha="center",
                va="center",
                fontsize=fontsize,
                color="#444444",
                zorder=3,
                gid="more",
            )

    # instants: points on the left of the day column, labels to their right
    y_lo = strip_top if slots else 0.0
    hours_per_in = (24.0 - y_lo + 0.3) / axes_h
    min_gap = fontsize * 1.35 / 72.0 * hours_per_in
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, (_, col, hours) in enumerate(instants):
        buckets[(col, int(hours * 2))].append(i)
    x_of: dict[int, float] = {}
    for members in buckets.values():
        step = min(0.1, 0.5 / len(members))
        for k, i in enumerate(sorted(members, key=lambda j: (instants[j][2], instants[j][0].rid))):
            x_of[i] = centre(instants[i][1]) - 0.38 + k * step
    for style in _STYLES:
        idx = [i for i, (r, _, _) in enumerate(instants) if r.style == style]
        if not idx:
            continue
        color = palette[style]
        ax.scatter(
            [x_of[i] for i in idx],
            [instants[i][2] for i in idx],
            s=30 if len(rows) <= 400 else 10,
            marker=_MARKER[style],
            facecolors=[color] * len(idx) if style == "active" else "none",
            edgecolors=[_darker(color)] * len(idx),
            linewidths=0.5 if style == "active" else 1.3,
            zorder=4,
            gid=f"instants:{style}",
        )
    if labelled:
        label_chars = max(int(col_in * 0.8 / char_in) - 1, 0)
        by_col: dict[int, list[int]] = defaultdict(list)
        for i, (_, col, _) in enumerate(instants):
            by_col[col].append(i)
        for col, members in by_col.items():
            members.sort(key=lambda j: (instants[j][2], x_of[j]))
            ys: list[float] = []
            for j in members:
                ys.append(max(instants[j][2], ys[-1] + min_gap) if ys else instants[j][2])
            overflow = ys[-1] - 23.8 if ys else 0.0
            if overflow > 0:  # push the stack back up from the bottom edge
                ys = [y - overflow for y in ys]
                for k in range(len(ys) - 2, -1, -1):
                    ys[k] = min(ys[k], ys[k + 1] - min_gap)
            for j, y in zip(members, ys, strict=True):
                row, _, hours = instants[j]
                local = row.start.tz_convert(zone)
                text = _shorten(f"{local:%H:%M} {row.label}", label_chars)
                ax.annotate(
                    text,
                    xy=(x_of[j], hours),
                    xytext=(centre(col) - 0.3, y),
                    textcoords="data",
                    ha="left",
                    va="center",
                    fontsize=fontsize,
                    clip_on=True,
                    gid="label",
                    color="#222222" if row.style == "active" else "#777777",
                    arrowprops={"arrowstyle": "-", "color": "#bbbbbb", "linewidth": 0.6, "shrinkA": 0, "shrinkB": 3}
                    if abs(y - hours) > 1e-9
                    else None,
                )

    # axes: days across, local time of day downwards
    ax.set_xlim(day0, day0 + n_days)
    ax.set_ylim(24.0, y_lo)

    def day_label(x: float, _pos: int | None = None) -> str:
        day = _day_of(x, first, day0)
        text = f"{day:%a}\n{day.day} {day:%b}"
        if day == first or (day.month == 1 and day.day == 1):
            text += f" {day.year}"
        before, after = _day_offsets(day, zone)
        if before != after:
            text += f"\nUTC{_offset_text(before)}→{_offset_text(after)}"
        return text

    ax.xaxis.set_major_locator(_DayColumnLocator(day0))
    ax.xaxis.set_major_formatter(FuncFormatter(day_label))
    ax.fmt_xdata = lambda x: f"{_day_of(x, first, day0):%a %d %b %Y}"
    ax.xaxis.tick_top()
    ax.tick_params(axis="x", length=0, labelsize=8)
    y_ticks: list[float] = [float(h) for h in range(0, 25, 3)]
    y_labels = [f"{h:02d}:00" for h in range(0, 25, 3)]
    if slots:
        y_ticks.insert(0, (strip_top - strip_gap / 2.0) / 2.0)
        y_labels.insert(0, "all day")
    ax.set_yticks(y_ticks, y_labels, fontsize=8)
    ax.set_yticks([float(h) for h in range(25)], minor=True)
    ax.grid(axis="y", which="major", color="#e6e6e6", zorder=0)
    ax.grid(axis="y", which="minor", color="#f4f4f4", zorder=0)
    ax.set_axisbelow(True)
    ax.set_ylabel(f"local time ({_zone_name(zone)})", fontsize=8.5, color="#555555")

    n_bands = sum(len(v) for v in per_day_bands.values())
    notes = [_zone_name(zone), f"{len(rows):,} record{'s' if len(rows) != 1 else ''}"]
    if n_bands:
        notes.append(f"{n_bands:,} all-day")
    if not labelled:
        notes.append(f"labels hidden above {max_labels:,}")
    if skipped:
        notes.append(f"{skipped} without start skipped")
    ax.set_title(f"{main_title} · " + ", ".join(notes), fontsize=11)
    _legend_below(ax, _style_legend_handles(instant_styles, bar_styles), 0.8)
    return ax


# ---------------------------------------------------------------------------
# supersession chains


@dataclass
class _Node:
    nid: str
    title: str | None = None
    revision: int | None = None
    lifecycle: str | None = None
    when: pd.Timestamp | None = None
    col: int = 0
    row: int = 0


@dataclass
class _Chain:
    number: Any
    nodes: dict[str, _Node] = field(default_factory=dict)
    edges: list[tuple[str, str, bool]] = field(default_factory=list)
    end: str = "current"
    back: set[int] = field(default_factory=set)
    rows: int = 1
    cols: int = 1


def _merge_node(nodes: dict[str, _Node], nid: str, title: Any, revision: Any, lifecycle: Any, when: Any) -> None:
    node = nodes.setdefault(nid, _Node(nid))
    if node.title is None:
        node.title = _text(title)
    if node.revision is None and not _missing(revision):
        try:
            node.revision = int(revision)
        except (TypeError, ValueError):
            node.revision = None
    if node.lifecycle is None:
        node.lifecycle = _text(lifecycle)
    if node.when is None and not _missing(when):
        try:
            node.when = pd.Timestamp(when)
        except (TypeError, ValueError):
            node.when = None


def _node_sort_key(node: _Node) -> tuple[int, float, str]:
    if node.when is None:
        return (1, 0.0, node.nid)
    stamp = node.when if node.when.tzinfo is not None else node.when.tz_localize("UTC")
    return (0, stamp.timestamp(), node.nid)


def _layout_chain(chain: _Chain) -> None:
    """Columns by longest forward path, rows so that merging branches stack below the main line."""
    succ: dict[str, list[int]] = defaultdict(list)
    indegree: dict[str, int] = defaultdict(int)
    for k, (a, b, _) in enumerate(chain.edges):
        succ[a].append(k)
        indegree[b] += 1
    order = sorted(chain.nodes.values(), key=_node_sort_key)
    roots = [n.nid for n in order if indegree[n.nid] == 0] + [n.nid for n in order if indegree[n.nid] > 0]
    state: dict[str, int] = {}  # 1 = on the DFS stack, 2 = done
    finished: list[str] = []
    for root in roots:
        if root in state:
            continue
        state[root] = 1
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            nid, pos = stack[-1]
            if pos < len(succ[nid]):
                stack[-1] = (nid, pos + 1)
                k = succ[nid][pos]
                target = chain.edges[k][1]
                if state.get(target) == 1:
                    chain.back.add(k)
                elif target not in state:
                    state[target] = 1
                    stack.append((target, 0))
            else:
                state[nid] = 2
                finished.append(nid)
                stack.pop()
    topo = finished[::-1]
    preds: dict[str, list[str]] = defaultdict(list)
    for k, (a, b, _) in enumerate(chain.edges):
        if k not in chain.back:
            preds[b].append(a)
    for nid in topo:
        chain.nodes[nid].col = max((chain.nodes[p].col + 1 for p in preds[nid]), default=0)
    # rows: walk back from the sinks; the first predecessor continues the row, others open new rows
    has_forward_out = {a for k, (a, _, _) in enumerate(chain.edges) if k not in chain.back}
    sinks = sorted((n for n in chain.nodes.values() if n.nid not in has_forward_out), key=_node_sort_key)
    assigned: set[str] = set()
    next_row = 0
    for sink in sinks:
        if sink.nid in assigned:
            continue
        sink.row = next_row
        next_row += 1
        assigned.add(sink.nid)
        todo = [sink.nid]
        while todo:
            nid = todo.pop()
            ps = sorted(
                {p for p in preds[nid] if p not in assigned},
                key=lambda p: (-chain.nodes[p].col, _node_sort_key(chain.nodes[p])),
            )
            for i, p in enumerate(ps):
                if i == 0:
                    chain.nodes[p].row = chain.nodes[nid].row
                else:
                    chain.nodes[p].row = next_row
                    next_row += 1
                assigned.add(p)
                todo.append(p)
    for node in chain.nodes.values():  # anything unreached (should not happen) gets its own row
        if node.nid not in assigned:
            node.row = next_row
            next_row += 1
    chain.rows = max(next_row, 1)
    chain.cols = max((n.col for n in chain.nodes.values()), default=0) + 1


def _build_chains(edges: pd.DataFrame) -> list[_Chain]:
    chains: dict[Any, _Chain] = {}

    def col(name: str) -> list[Any]:
        return edges[name].tolist() if name in edges.columns else [None] * len(edges)

    cols = {name: col(name) for name in EDGE_COLUMNS}
    for i in range(len(edges)):
        number = cols["chain"][i]
        chain = chains.setdefault(number, _Chain(number, end=""))
        a = _text(cols["from_id"][i]) or "?"
        b = _text(cols["to_id"][i]) or "?"
        _merge_node(
            chain.nodes,
            a,
            cols["from_title"][i],
            cols["from_revision"][i],
            cols["from_lifecycle"][i],
            cols["from_date"][i],
        )
        _merge_node(
            chain.nodes, b, cols["to_title"][i], cols["to_revision"][i], cols["to_lifecycle"][i], cols["to_date"][i]
        )
        cycle = cols["cycle"][i]
        chain.edges.append((a, b, bool(cycle) if not _missing(cycle) else False))
        if not chain.end:
            chain.end = _text(cols["chain_end"][i]) or ""
    for chain in chains.values():
        _layout_chain(chain)
        if not chain.end:  # derive it when the engine did not say
            if any(c for _, _, c in chain.edges) or chain.back:
                chain.end = "cycle"
            else:
                outs = {a for a, _, _ in chain.edges}
                sink = next((n for n in chain.nodes.values() if n.nid not in outs), None)
                life = sink.lifecycle if sink else None
                chain.end = "current" if life in (None, "active") else life or "missing"
    return sorted(chains.values(), key=lambda c: (_CHAIN_END_RANK.get(c.end, 4), _sortable(c.number)))


def _sortable(value: Any) -> tuple[int, float, str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not _missing(value):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def _node_lines(node: _Node, chars: int) -> tuple[str, str]:
    meta = []
    if node.revision is not None:
        meta.append(f"r{node.revision}")
    if node.when is not None:
        meta.append(f"{node.when:%Y-%m-%d}")
    life = node.lifecycle or "?"
    if life in ("missing", "unavailable", "withdrawn"):
        meta.append(life)
    second = " · ".join(meta) or life
    if node.title:
        second += "\n" + _shorten(node.title, chars)
    return _shorten(node.nid, chars), second


def plot_chains(
    edges: pd.DataFrame,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    max_chains: int = 60,
) -> Axes:
    """Draw supersession chains, one left-to-right row of boxes per chain, dead ends first.

    Boxes show id, revision, date and title, filled by lifecycle; arrows go earlier -> later
    (an edge closing a cycle curves back underneath in red). A chain ending in an active record
    has a green border on that record; any other end gets a red marker ("✕ withdrawn",
    "✕ missing", "✕ unavailable", "↻ cycle"). At most ``max_chains`` chains are drawn (dead
    ends first); the title says how many were left out. Returns the Axes.
    """
    max_chains = _count("max_chains", max_chains, minimum=1)
    _require(edges, "edges", ("chain", "from_id", "to_id"))
    main_title = title if title is not None else "Supersession chains"
    if len(edges) == 0:
        ax, _ = _new_axes(ax, 9.0, 2.6)
        return _empty(ax, EMPTY_CHAINS_TEXT, main_title)

    chains = _build_chains(edges)
    shown = chains[:max_chains]
    dx, box_w, box_h, row_h = 2.3, 1.75, 0.72, 1.0
    marker_w = 1.6
    cycle_pad = 0.45
    max_cols = max(c.cols for c in shown)
    chain_gap = 0.35
    total_h = sum(c.rows * row_h + (cycle_pad if c.back else 0.0) for c in shown) + chain_gap * (len(shown) - 1)
    if ax is None:
        width = min(max(1.6 + max_cols * dx + marker_w, 7.0), 20.0)
        height = min(max(1.5 + total_h * 0.8, 2.6), 22.0)
        ax, _ = _new_axes(ax, width, height)
    chars = 22

    y = 0.0
    ticks: list[float] = []
    tick_labels: list[str] = []
    tick_colors: list[str] = []
    lifecycles_seen: set[str] = set()
    for chain in shown:
        top = y
        positions: dict[str, tuple[float, float]] = {}
        outs = {a for k, (a, _, _) in enumerate(chain.edges) if k not in chain.back}
        dead = chain.end != "current"
        for node in chain.nodes.values():
            cx = node.col * dx
            cy = top - node.row * row_h
            positions[node.nid] = (cx, cy)
            life = node.lifecycle or "missing"
            lifecycles_seen.add(life)
            is_end = node.nid not in outs
            edge_color, lw, ls = _GREY, 0.9, "-"
            if life == "missing":
                ls = "--"
            if is_end and chain.end == "current" and life == "active":
                edge_color, lw = _GREEN, 2.6
            elif is_end and dead and chain.end != "cycle":
                edge_color, lw = _RED, 1.6
            box = FancyBboxPatch(
                (cx - box_w / 2, cy - box_h / 2),
                box_w,
                box_h,
                boxstyle="round,pad=0.02,rounding_size=0.08",
                facecolor=_NODE_FILL.get(life, "#ffffff"),
                edgecolor=edge_color,
                linewidth=lw,
                linestyle=ls,
                zorder=2,
                gid=f"node:{chain.number}:{node.nid}",
            )
            ax.add_patch(box)
            head, rest = _node_lines(node, chars)
            ax.text(
                cx,
                cy + box_h / 2 - 0.08,
                head,
                ha="center",
                va="top",
                fontsize=7.5,
                fontweight="bold",
                zorder=3,
                clip_on=True,
            )
            ax.text(
                cx,
                cy + box_h / 2 - 0.27,
                rest,
                ha="center",
                va="top",
                fontsize=6.8,
                color="#333333",
                zorder=3,
                linespacing=1.25,
                clip_on=True,
            )
        for k, (a, b, in_cycle) in enumerate(chain.edges):
            (ax_, ay), (bx, by) = positions[a], positions[b]
            color = _RED if in_cycle or k in chain.back else _GREY
            if k in chain.back:  # closes a cycle: curve back underneath the row
                start = (ax_ + (box_w / 4 if a == b else 0.0), ay - box_h / 2)
                end = (bx - (box_w / 4 if a == b else 0.0), by - box_h / 2)
                style = f"arc3,rad={-0.9 if a == b else -0.25}"
            else:  # same row: straight; a merging branch from a lower row: into the target's lower left
                start = (ax_ + box_w / 2, ay)
                end = (bx - box_w / 2, by if abs(ay - by) < 1e-9 else by - box_h / 4)
                style = "arc3,rad=0.0"
            ax.add_patch(
                FancyArrowPatch(
                    start,
                    end,
                    arrowstyle="-|>",
                    mutation_scale=11,
                    color=color,
                    linewidth=1.2,
                    connectionstyle=style,
                    shrinkA=1,
                    shrinkB=1,
                    zorder=1.5,
                    gid=f"edge:{chain.number}:{a}->{b}",
                )
            )
        if dead:
            last = max(chain.nodes.values(), key=lambda n: (n.col, -n.row))
            anchor = next((n for n in chain.nodes.values() if n.nid not in outs and n.row == 0), last)
            if chain.end == "cycle":
                anchor = max((n for n in chain.nodes.values() if n.row == 0), key=lambda n: n.col)
            mx, my = positions[anchor.nid]
            ax.text(
                mx + box_w / 2 + 0.15,
                my,
                _CHAIN_END_TEXT.get(chain.end, f"✕ {chain.end}"),
                ha="left",
                va="center",
                fontsize=9,
                fontweight="bold",
                color=_RED,
                zorder=3,
                gid=f"end:{chain.number}",
            )
        ticks.append(top)
        tick_labels.append(f"chain {chain.number}")
        tick_colors.append(_RED if dead else _GREEN)
        y = top - chain.rows * row_h - (cycle_pad if chain.back else 0.0) - chain_gap

    ax.set_xlim(-box_w / 2 - 0.15, (max_cols - 1) * dx + box_w / 2 + marker_w)
    ax.set_ylim(y + chain_gap + row_h - box_h / 2 - 0.1, box_h / 2 + 0.1)
    ax.set_yticks(ticks, tick_labels, fontsize=8.5)
    for label, color in zip(ax.get_yticklabels(), tick_colors, strict=True):
        label.set_color(color)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)

    n_dead = sum(1 for c in chains if c.end != "current")
    notes = [f"{len(chains)} chain{'s' if len(chains) != 1 else ''}", f"{n_dead} dead end{'s' if n_dead != 1 else ''}"]
    if len(shown) < len(chains):
        notes.append(f"showing {len(shown)} (dead ends first)")
    ax.set_title(f"{main_title} · " + ", ".join(notes), fontsize=11)
    order = ["active", "superseded", "withdrawn", "unavailable", "missing", "expired"]
    handles: list[Artist] = [
        Patch(
            facecolor=_NODE_FILL.get(life, "#ffffff"),
            edgecolor=_GREY,
            linestyle="--" if life == "missing" else "-",
            label=life,
        )
        for life in order + sorted(lifecycles_seen - set(order))
        if life in lifecycles_seen
    ]
    handles.append(Patch(facecolor="#ffffff", edgecolor=_GREEN, linewidth=2.2, label="current end"))
    if n_dead:
        handles.append(Patch(facecolor="#ffffff", edgecolor=_RED, linewidth=1.6, label="dead end"))
    _legend_below(ax, handles, 0.5)
    return ax
