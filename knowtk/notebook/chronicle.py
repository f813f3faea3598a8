"""The chronicle picture: a calendar day/week view, one column per calendar day in ``tz``, time of day downwards.

Instants are points at their local time of day and date-only records bands in an "all day"
strip at the top of their authored day. The x axis is a date axis of local calendar days: the
column of day ``D`` spans ``[date2num(D), date2num(D + 1))`` with ``D`` the naive local date
(wall-clock, like the y axis), so ``num2date(x).date()`` is the local date; the locator and
formatter therefore work in UTC, not in ``tz``. A week fits a ~1000 px notebook column.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta, tzinfo

import matplotlib.dates as mdates
import pandas as pd
from matplotlib import colors as mcolors
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter

from knowtk.notebook.draw import (
    _CHAR_WIDTH_EM,
    _HATCH,
    _MARKER,
    _STYLES,
    COLUMN_INCHES,
    EMPTY_TIMELINE_TEXT,
    MIN_FONT,
    _axes_inches,
    _count,
    _darker,
    _dated_rows,
    _empty,
    _legend_below,
    _new_axes,
    _require,
    _Row,
    _set_title,
    _shorten,
    _style_legend_handles,
    _unlabelled_note,
    _with_alpha,
    _wrap_text,
    _zone,
    _zone_name,
)

__all__ = ["plot_chronicle"]


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
        ax, _ = _new_axes(ax, COLUMN_INCHES, 2.6)
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

    # past the label limit, the first max_labels rows in time are labelled and the title says how many are not
    with_label = {id(r) for r in sorted(rows, key=lambda r: (r.start, r.end, r.rid))[:max_labels]}

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

    width = min(max(2.2 + 1.9 * n_days, 6.5), COLUMN_INCHES)
    height = 8.0 + 0.25 * slots
    ax, created = _new_axes(ax, width, height)
    ax.xaxis_date(UTC)  # before drawing, so the axis keeps our locator and formatter
    # a new figure is laid out by constrained layout later: estimate the axes from its margins
    axes_w, axes_h = (width - 1.0, height - 1.5) if created else _axes_inches(ax)
    col_in = axes_w / n_days
    fontsize = MIN_FONT
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
    label_chars = max(int(col_in * 0.8 / char_in) - 1, 0)
    if label_chars < 6:  # days too narrow to name anything: no label rather than a column of "…"
        with_label = set()
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
            if id(row) in with_label and band_chars >= 3:
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
    line_h = fontsize * 1.2 / 72.0 * hours_per_in  # one text line, in hours
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
    if with_label:
        by_col: dict[int, list[int]] = defaultdict(list)
        for i, (row, col, _) in enumerate(instants):
            if id(row) in with_label:
                by_col[col].append(i)
        for col, members in by_col.items():
            members.sort(key=lambda j: (instants[j][2], x_of[j]))
            text_x = max(centre(col) - 0.3, max(x_of[j] for j in members) + 0.06)  # right of the column's points
            # labels wrap over two lines in a narrow column; each is stacked below the one before
            texts = []
            for j in members:
                local = instants[j][0].start.tz_convert(zone)
                texts.append(_wrap_text(f"{local:%H:%M} {instants[j][0].label}", label_chars, 2))
            half = [(t.count("\n") + 1) * line_h / 2.0 + 0.1 * line_h for t in texts]
            ys: list[float] = []
            for k, j in enumerate(members):
                ys.append(max(instants[j][2], ys[-1] + half[k - 1] + half[k]) if ys else instants[j][2])
            overflow = ys[-1] + half[-1] - 24.0 if ys else 0.0
            if overflow > 0:  # push the stack back up from the bottom edge
                ys = [y - overflow for y in ys]
                for k in range(len(ys) - 2, -1, -1):
                    ys[k] = min(ys[k], ys[k + 1] - half[k + 1] - half[k])
            for j, y, text in zip(members, ys, texts, strict=True):
                row, _, hours = instants[j]
                ax.annotate(
                    text,
                    xy=(x_of[j], hours),
                    xytext=(text_x, y),
                    textcoords="data",
                    ha="left",
                    va="center",
                    fontsize=fontsize,
                    clip_on=True,
                    gid="label",
                    linespacing=1.0,
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
    ax.tick_params(axis="x", length=0, labelsize=MIN_FONT)
    y_ticks: list[float] = [float(h) for h in range(0, 25, 3)]
    y_labels = [f"{h:02d}:00" for h in range(0, 25, 3)]
    if slots:
        y_ticks.insert(0, (strip_top - strip_gap / 2.0) / 2.0)
        y_labels.insert(0, "all day")
    ax.set_yticks(y_ticks, y_labels, fontsize=MIN_FONT)
    ax.set_yticks([float(h) for h in range(25)], minor=True)
    ax.grid(axis="y", which="major", color="#e6e6e6", zorder=0)
    ax.grid(axis="y", which="minor", color="#f4f4f4", zorder=0)
    ax.set_axisbelow(True)
    ax.set_ylabel(f"local time ({_zone_name(zone)})", fontsize=MIN_FONT, color="#555555")

    n_bands = sum(len(v) for v in per_day_bands.values())
    notes = [_zone_name(zone), f"{len(rows):,} record{'s' if len(rows) != 1 else ''}"]
    if n_bands:
        notes.append(f"{n_bands:,} all-day")
    if len(with_label) < len(rows):
        notes.append(_unlabelled_note(len(with_label), len(rows) - len(with_label)))
        if label_chars < 6:
            notes[-1] += " (days too narrow: zoom in)"
    if skipped:
        notes.append(f"{skipped} without start skipped")
    _set_title(ax, main_title, notes, axes_w + 1.0)
    _legend_below(ax, _style_legend_handles(instant_styles, bar_styles), 0.8)
    return ax
