"""The chronicle picture: a calendar day/week view, one column per calendar day in ``tz``, time of day downwards.

Instants are points at their local time of day and date-only records bands in an "all day"
strip at the top of their authored day. The hour axis spans the whole hours that hold the
instants (six at least), and a long empty stretch between two busy ones (a night between an
evening and a morning) is folded: drawn short and named, through a piecewise-linear y scale, so
the data stay in hours. The x axis is a date axis of local calendar days: the column of day
``D`` spans ``[date2num(D), date2num(D + 1))`` with ``D`` the naive local date (wall-clock, like
the y axis), so ``num2date(x).date()`` is the local date; the locator and formatter therefore
work in UTC, not in ``tz``. A week fits a ~1000 px notebook column.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib import colors as mcolors
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter

from knowtk.notebook.dated import DatedRow, dated_rows
from knowtk.notebook.draw import (
    CHAR_WIDTH_EM,
    COLUMN_INCHES,
    EMPTY_TIMELINE_TEXT,
    HATCH,
    MARKER,
    MIN_FONT,
    STYLES,
    axes_inches,
    count_argument,
    darker,
    draw_empty,
    legend_below,
    new_axes,
    require_columns,
    set_title,
    shorten,
    style_legend_handles,
    time_zone,
    unlabelled_note,
    with_alpha,
    wrap_text,
    zone_name,
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


_SLOT_H = 1.25  # one all-day band, in hours of the y axis
_STRIP_GAP = 0.5  # between the all-day strip and 00:00
_MAX_SLOTS = 4  # all-day bands stacked in one day before "+N more"
_MIN_HOURS = 6  # the shortest hour span drawn: one item still has room for its label around it
_NO_INSTANTS = (8, 8 + _MIN_HOURS)  # the hours under an all-day strip when nothing has a time of day
_FOLD_MARGIN = 2  # hours kept drawn on each side of an item's hour: room for its label
_MIN_FOLD = 4  # an empty stretch of at least these many hours is folded
_FOLD_H = 0.8  # how tall a folded stretch is drawn, in hours of the axis
_FONT = MIN_FONT
_CHAR_IN = CHAR_WIDTH_EM * _FONT / 72.0  # one average character, in inches
_PALETTE = {
    "active": mcolors.to_rgba("#3f7fbf"),
    "superseded": mcolors.to_rgba("#8c8c8c"),
    "expired": mcolors.to_rgba("#b07a2a"),
}
_LABEL_BOX = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}

Instant = tuple[DatedRow, int, float]  # (row, day column, local hours)


def _in_time_order(row: DatedRow) -> tuple[pd.Timestamp, pd.Timestamp, str]:
    return (row.start, row.end, row.rid)


@dataclass
class _Calendar:
    """Where everything goes: a column per local day from ``first``, hours downwards, all-day bands on top."""

    first: date
    n_days: int
    day0: float  # the date number where the first column starts
    bands: dict[int, list[DatedRow]]  # column -> its date-only rows
    instants: list[Instant]
    with_label: set[int]  # id() of the rows that get a label
    slots: int  # rows of the all-day strip
    hour_lo: int  # the first hour drawn (whole hours that hold the instants, _MIN_HOURS at least)
    hour_hi: int  # the hour the axis ends at
    # sizes that depend on the axes, set by fit()
    col_in: float = 0.0
    band_chars: int = 0
    label_chars: int = 0
    line_h: float = 0.0  # one text line, in hours
    folds: tuple[tuple[int, int], ...] = ()  # empty stretches of hours drawn short (between two busy stretches)

    @property
    def drawn_hours(self) -> float:
        """The hours the axis shows, folded stretches counted at their drawn height."""
        return self.hour_hi - self.hour_lo - sum(b - a - _FOLD_H for a, b in self.folds)

    @property
    def strip_top(self) -> float:
        return self.hour_lo - (_STRIP_GAP + self.slots * _SLOT_H) if self.slots else float(self.hour_lo)

    @property
    def y_lo(self) -> float:
        return self.strip_top if self.slots else float(self.hour_lo)

    @property
    def width(self) -> float:
        return min(max(2.2 + 1.9 * self.n_days, 6.5), COLUMN_INCHES)

    @property
    def height(self) -> float:
        """Tall enough for the busiest day's labels (three lines each), never a tall empty grid."""
        per_day: dict[int, int] = defaultdict(int)
        for _, col, _ in self.instants:
            per_day[col] += 1
        busiest = max(per_day.values(), default=0)
        return min(8.0, max(5.0, 3.0 + 0.7 * busiest)) + 0.25 * self.slots

    def centre(self, col: int) -> float:
        return self.day0 + col + 0.5

    def fit(self, axes_w: float, axes_h: float) -> None:
        """Text widths for the axes' size; in days too narrow to name anything, no label rather than "…"."""
        self.col_in = axes_w / self.n_days
        self.band_chars = max(int(self.col_in * 0.9 / _CHAR_IN) - 1, 0)
        self.label_chars = max(int(self.col_in * 0.8 / _CHAR_IN) - 1, 0)
        if self.label_chars < 6:
            self.with_label = set()
        hours_per_in = (self.drawn_hours + self.hour_lo - self.y_lo + 0.3) / axes_h
        self.line_h = _FONT * 1.2 / 72.0 * hours_per_in


def hour_span(hours: list[float]) -> tuple[int, int]:
    """The whole hours that hold ``hours`` (each within 0–24), widened evenly to ``_MIN_HOURS`` inside the day."""
    if not hours:
        return _NO_INSTANTS
    lo, hi = int(min(hours)), min(int(max(hours)) + 1, 24)
    if hi - lo < _MIN_HOURS:
        lo = max(0, lo - (_MIN_HOURS - (hi - lo)) // 2)
        hi = min(24, lo + _MIN_HOURS)
        lo = hi - _MIN_HOURS
    return lo, hi


def empty_stretches(hours: list[float], span: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """The stretches of ``span`` at least ``_MIN_FOLD`` hours long that hold no item nor the room of its label
    (``_FOLD_MARGIN`` hours on each side of its hour): a night between an evening and a morning."""
    lo, hi = span
    busy = sorted((max(lo, int(h) - _FOLD_MARGIN), min(hi, int(h) + 1 + _FOLD_MARGIN)) for h in hours)
    stretches, reach = [], lo
    for start, end in busy:
        if start - reach >= _MIN_FOLD:
            stretches.append((reach, start))
        reach = max(reach, end)
    return tuple(stretches)


def _fold(ax: Axes, folds: tuple[tuple[int, int], ...]) -> None:
    """Draw each folded stretch ``_FOLD_H`` tall: a piecewise-linear y scale, so data stay in hours."""
    if not folds:
        return
    data, drawn, saved = [-1000.0], [-1000.0], 0.0
    for a, b in folds:
        data += [float(a), float(b)]
        drawn += [a - saved, a - saved + _FOLD_H]
        saved += b - a - _FOLD_H
    data.append(1000.0)
    drawn.append(1000.0 - saved)
    ax.set_yscale("function", functions=(lambda y: np.interp(y, data, drawn), lambda y: np.interp(y, drawn, data)))


def _lay_out(rows: list[DatedRow], zone: tzinfo, max_labels: int) -> _Calendar:
    """Each row on its calendar day: date-only rows in their authored (UTC) day, instants at local time."""
    placed: list[tuple[DatedRow, date, float]] = []
    for row in rows:
        if row.bar:
            placed.append((row, row.start.tz_convert("UTC").date(), -1.0))
        else:
            local = row.start.tz_convert(zone)
            placed.append((row, local.date(), local.hour + local.minute / 60.0 + local.second / 3600.0))
    first = min(d for _, d, _ in placed)
    last = max(d for _, d, _ in placed)
    bands: dict[int, list[DatedRow]] = defaultdict(list)
    instants: list[Instant] = []
    for row, day, hours in placed:
        col = (day - first).days
        if row.bar:
            bands[col].append(row)
        else:
            instants.append((row, col, hours))
    # past the label limit, the first max_labels rows in time are labelled and the title says how many are not
    with_label = {id(r) for r in sorted(rows, key=_in_time_order)[:max_labels]}
    hour_lo, hour_hi = hour_span([hours for _, _, hours in instants])
    return _Calendar(
        first=first,
        n_days=(last - first).days + 1,
        day0=float(mdates.date2num(datetime.combine(first, time(0)))),
        bands=bands,
        instants=instants,
        with_label=with_label,
        slots=min(max((len(v) for v in bands.values()), default=0), _MAX_SLOTS),
        hour_lo=hour_lo,
        hour_hi=hour_hi,
        folds=empty_stretches([hours for _, _, hours in instants], (hour_lo, hour_hi)),
    )


# -- draw ------------------------------------------------------------------------------------------


def _draw_days(ax: Axes, cal: _Calendar) -> None:
    """Weekends and day separators (only while days are wide enough to read), and the all-day strip."""
    if cal.col_in >= 0.25:
        for col in range(cal.n_days):
            if (cal.first + timedelta(days=col)).weekday() >= 5:
                ax.axvspan(cal.day0 + col, cal.day0 + col + 1, color="#f3f3f3", zorder=0, linewidth=0)
        for col in range(cal.n_days + 1):
            ax.axvline(cal.day0 + col, color="#dddddd", linewidth=0.8, zorder=0.5)
    if cal.slots:
        ax.axhspan(cal.strip_top, cal.hour_lo - _STRIP_GAP / 2.0, color="#eef3fa", zorder=0.2, linewidth=0)
        ax.axhline(cal.hour_lo - _STRIP_GAP / 4.0, color="#999999", linewidth=0.8, zorder=0.6)
    for a, b in cal.folds:  # said in words: the hours between are not drawn to scale
        ax.axhspan(a, b, facecolor="#f7f7f7", edgecolor="#cccccc", hatch="//", linewidth=0, zorder=0.7)
        ax.text(
            cal.day0 + cal.n_days / 2.0,
            (a + b) / 2.0,
            f"{a:02d}:00–{b:02d}:00: nothing (folded)",
            ha="center",
            va="center",
            fontsize=_FONT,
            color="#555555",
            zorder=3,
            gid="fold",
            bbox=_LABEL_BOX,
        )


def _draw_bands(ax: Axes, cal: _Calendar) -> None:
    """Each day's date-only rows as bands in the all-day strip, at most ``slots``, then "+N more"."""
    for col, band_rows in sorted(cal.bands.items()):
        band_rows.sort(key=_in_time_order)
        wide = cal.col_in >= 0.55  # room for a "+N more" note in the last slot
        shown = band_rows if len(band_rows) <= cal.slots else band_rows[: cal.slots - 1 if wide else cal.slots]
        for slot, row in enumerate(shown):
            _draw_band(ax, cal, col, cal.strip_top + slot * _SLOT_H + 0.12, row)
        if len(shown) < len(band_rows) and wide:
            ax.text(
                cal.centre(col),
                cal.strip_top + (cal.slots - 1) * _SLOT_H + _SLOT_H / 2.0,
                f"+{len(band_rows) - len(shown)} more",
                ha="center",
                va="center",
                fontsize=_FONT,
                color="#444444",
                zorder=3,
                gid="more",
            )


def _draw_band(ax: Axes, cal: _Calendar, col: int, y: float, row: DatedRow) -> None:
    color = _PALETTE[row.style]
    active = row.style == "active"
    rect = Rectangle(
        (cal.centre(col) - 0.47, y),
        0.94,
        _SLOT_H - 0.24,
        facecolor=with_alpha(color, 0.75 if active else 0.2),
        edgecolor=darker(color),
        linewidth=0.6 if active else 0.9,
        hatch=HATCH[row.style] or None,
        zorder=2,
        gid=row.rid,
    )
    ax.add_patch(rect)
    if id(row) not in cal.with_label or cal.band_chars < 3:
        return
    text = ax.text(
        cal.centre(col) - 0.44,
        y + (_SLOT_H - 0.24) / 2.0,
        shorten(row.label, cal.band_chars),
        ha="left",
        va="center",
        fontsize=_FONT,
        zorder=3,
        gid="label",
        color="white" if active else "#333333",
        bbox=None
        if active
        else {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
    )
    text.set_clip_path(rect)


def _instant_xs(cal: _Calendar) -> dict[int, float]:
    """Each instant's x: on the left of its day column, those in one half hour side by side."""
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, (_, col, hours) in enumerate(cal.instants):
        buckets[(col, int(hours * 2))].append(i)
    x_of: dict[int, float] = {}
    for members in buckets.values():
        step = min(0.1, 0.5 / len(members))
        for k, i in enumerate(sorted(members, key=lambda j: (cal.instants[j][2], cal.instants[j][0].rid))):
            x_of[i] = cal.centre(cal.instants[i][1]) - 0.38 + k * step
    return x_of


def _draw_instants(ax: Axes, cal: _Calendar, x_of: dict[int, float], many: bool) -> None:
    for style in STYLES:
        idx = [i for i, (r, _, _) in enumerate(cal.instants) if r.style == style]
        if not idx:
            continue
        color = _PALETTE[style]
        ax.scatter(
            [x_of[i] for i in idx],
            [cal.instants[i][2] for i in idx],
            s=10 if many else 30,
            marker=MARKER[style],
            facecolors=[color] * len(idx) if style == "active" else "none",
            edgecolors=[darker(color)] * len(idx),
            linewidths=0.5 if style == "active" else 1.3,
            zorder=4,
            gid=f"instants:{style}",
        )


# -- label -----------------------------------------------------------------------------------------


_LABEL_LINES = 3  # an instant's label: its time and title over up to three lines of its day's column


def _stack(wanted: list[float], half: list[float], span: tuple[int, int]) -> list[float]:
    """Label centres as near their points as can be: each below the one before, within the hours drawn (pushed
    back up from the last)."""
    top, bottom = span
    ys: list[float] = []
    for k, y in enumerate(wanted):
        ys.append(max(y, ys[-1] + half[k - 1] + half[k]) if ys else max(y, top + half[k]))  # never above the first
    overflow = ys[-1] + half[-1] - bottom if ys else 0.0
    if overflow > 0:
        ys = [y - overflow for y in ys]
        for k in range(len(ys) - 2, -1, -1):
            ys[k] = min(ys[k], ys[k + 1] - half[k + 1] - half[k])
    return ys


def _label_instants(ax: Axes, cal: _Calendar, x_of: dict[int, float], zone: tzinfo) -> None:
    """Labels to the right of each column's points, wrapped over two lines and stacked without overlap."""
    by_col: dict[int, list[int]] = defaultdict(list)
    for i, (row, col, _) in enumerate(cal.instants):
        if id(row) in cal.with_label:
            by_col[col].append(i)
    for col, members in by_col.items():
        members.sort(key=lambda j: (cal.instants[j][2], x_of[j]))
        text_x = max(cal.centre(col) - 0.3, max(x_of[j] for j in members) + 0.06)  # right of the column's points
        texts = []
        for j in members:
            local = cal.instants[j][0].start.tz_convert(zone)
            texts.append(wrap_text(f"{local:%H:%M} {cal.instants[j][0].label}", cal.label_chars, _LABEL_LINES))
        half = [(t.count("\n") + 1) * cal.line_h / 2.0 + 0.1 * cal.line_h for t in texts]
        ys = _stack([cal.instants[j][2] for j in members], half, (cal.hour_lo, cal.hour_hi))
        for j, y, text in zip(members, ys, texts, strict=True):
            _annotate(ax, cal.instants[j], (x_of[j], text_x, y), text)


def _annotate(ax: Axes, instant: Instant, where: tuple[float, float, float], text: str) -> None:
    """One label at (text_x, y), joined to its point at (x, hours) by a thin line when it had to move."""
    row, _, hours = instant
    x, text_x, y = where
    ax.annotate(
        text,
        xy=(x, hours),
        xytext=(text_x, y),
        textcoords="data",
        ha="left",
        va="center",
        fontsize=_FONT,
        clip_on=True,
        gid="label",
        linespacing=1.0,
        color="#222222" if row.style == "active" else "#777777",
        arrowprops={"arrowstyle": "-", "color": "#bbbbbb", "linewidth": 0.6, "shrinkA": 0, "shrinkB": 3}
        if abs(y - hours) > 1e-9
        else None,
    )


def _day_axis(ax: Axes, cal: _Calendar, zone: tzinfo) -> None:
    """Days across the top, each named by weekday and date, and by its UTC offsets where they change."""

    def day_label(x: float, _pos: int | None = None) -> str:
        day = _day_of(x, cal.first, cal.day0)
        text = f"{day:%a}\n{day.day} {day:%b}"
        if day == cal.first or (day.month == 1 and day.day == 1):
            text += f" {day.year}"
        before, after = _day_offsets(day, zone)
        if before != after:
            text += f"\nUTC{_offset_text(before)}→{_offset_text(after)}"
        return text

    ax.xaxis.set_major_locator(_DayColumnLocator(cal.day0))
    ax.xaxis.set_major_formatter(FuncFormatter(day_label))
    ax.fmt_xdata = lambda x: f"{_day_of(x, cal.first, cal.day0):%a %d %b %Y}"
    ax.xaxis.tick_top()
    ax.tick_params(axis="x", length=0, labelsize=MIN_FONT)


def _hour_axis(ax: Axes, cal: _Calendar, zone: tzinfo) -> None:
    """Local time of day downwards over the hours drawn, every hour named in a short span (up to every three in
    a long one), and "all day" beside the strip."""
    step = 1 if cal.drawn_hours <= 8 else 2 if cal.drawn_hours <= 16 else 3

    def shown(h: int) -> bool:  # not inside a folded stretch, where the hours are drawn on top of each other
        return not any(a < h < b for a, b in cal.folds)

    named = [h for h in range(cal.hour_lo, cal.hour_hi + 1, step) if shown(h)]  # from the first hour drawn
    y_ticks: list[float] = [float(h) for h in named]
    y_labels = [f"{h:02d}:00" for h in named]
    if cal.slots:
        y_ticks.insert(0, (cal.strip_top + cal.hour_lo - _STRIP_GAP / 2.0) / 2.0)
        y_labels.insert(0, "all day")
    ax.set_yticks(y_ticks, y_labels, fontsize=MIN_FONT)
    ax.set_yticks([float(h) for h in range(cal.hour_lo, cal.hour_hi + 1) if shown(h)], minor=True)
    ax.grid(axis="y", which="major", color="#e6e6e6", zorder=0)
    ax.grid(axis="y", which="minor", color="#f4f4f4", zorder=0)
    ax.set_axisbelow(True)
    ax.set_ylabel(f"local time ({zone_name(zone)})", fontsize=MIN_FONT, color="#555555")


def _notes(cal: _Calendar, n_rows: int, skipped: int, zone: tzinfo) -> list[str]:
    """The title's second line: zone, counts, and what was left unlabelled or skipped."""
    n_bands = sum(len(v) for v in cal.bands.values())
    notes = [zone_name(zone), f"{n_rows:,} record{'s' if n_rows != 1 else ''}"]
    if n_bands:
        notes.append(f"{n_bands:,} all-day")
    if len(cal.with_label) < n_rows:
        notes.append(unlabelled_note(len(cal.with_label), n_rows - len(cal.with_label)))
        if cal.label_chars < 6:
            notes[-1] += " (days too narrow: zoom in)"
    if skipped:
        notes.append(f"{skipped} without start skipped")
    return notes


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
    after it are both at 15:00); the hour axis spans the whole hours that hold them (six at least,
    08:00–14:00 when none has a time of day), not an empty 24-hour grid; date-only rows are bands
    in an "all day" strip at the top of their authored day (at most 4 stacked, then "+N more").
    Days whose UTC offset changes are marked in the tick label. Returns the Axes.
    """
    zone = time_zone(tz)
    max_labels = count_argument("max_labels", max_labels)
    require_columns(frame, "frame", ("id", "start"))
    main_title = title if title is not None else "Chronicle"
    rows, skipped = dated_rows(frame, None)
    if not rows:
        ax, _ = new_axes(ax, COLUMN_INCHES, 2.6)
        return draw_empty(ax, EMPTY_TIMELINE_TEXT, f"{main_title} · {zone_name(zone)}")

    cal = _lay_out(rows, zone, max_labels)
    ax, created = new_axes(ax, cal.width, cal.height)
    ax.xaxis_date(UTC)  # before drawing, so the axis keeps our locator and formatter
    _fold(ax, cal.folds)
    # a new figure is laid out by constrained layout later: estimate the axes from its margins
    axes_w, axes_h = (cal.width - 1.0, cal.height - 1.5) if created else axes_inches(ax)
    cal.fit(axes_w, axes_h)

    _draw_days(ax, cal)
    _draw_bands(ax, cal)
    x_of = _instant_xs(cal)
    _draw_instants(ax, cal, x_of, many=len(rows) > 400)
    if cal.with_label:
        _label_instants(ax, cal, x_of, zone)

    ax.set_xlim(cal.day0, cal.day0 + cal.n_days)
    ax.set_ylim(float(cal.hour_hi), cal.y_lo)
    _day_axis(ax, cal, zone)
    _hour_axis(ax, cal, zone)
    set_title(ax, main_title, _notes(cal, len(rows), skipped, zone), axes_w + 1.0)
    bar_styles = {r.style for r in rows if r.bar}
    instant_styles = {r.style for r in rows if not r.bar}
    legend_below(ax, style_legend_handles(instant_styles, bar_styles), 0.8)
    return ax
