"""The timeline picture: dated records on a date axis, one horizontal lane per type, kind, lifecycle or entity.

Instants are points; date-only values are bars covering their UTC day ``[start, end)``, so a
date-only record is visibly an interval rather than a claimed instant. Every bar
:class:`~matplotlib.patches.Rectangle` has ``gid`` = the record id; scatter collections
``"instants:<style>"``; per-row labels ``"label"``.

Past ``max_labels`` rows the first ``max_labels`` (in date order) are labelled and the title says
how many are not (and how many labels were left out where a crowded lane had no room for them);
the date axis names the month and the year.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

import matplotlib.colors as mcolors
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from knowtk.errors import InvalidArgument
from knowtk.notebook.dated import NO_LANE, DatedRow, dated_num, dated_rows
from knowtk.notebook.draw import (
    CHAR_WIDTH_EM,
    COLUMN_INCHES,
    EMPTY_TIMELINE_TEXT,
    HATCH,
    LANES,
    MARKER,
    MIN_FONT,
    STYLES,
    axes_inches,
    count_argument,
    darker,
    date_axis,
    draw_empty,
    legend_below,
    new_axes,
    palette,
    require_columns,
    set_title,
    shorten,
    style_legend_handles,
    time_zone,
    unlabelled_note,
    with_alpha,
    zone_name,
)

__all__ = ["LANES", "plot_timeline"]


_FIXED_LANE_ORDER = {
    "kind": ("page", "claim", "relationship"),
    "lifecycle": ("active", "superseded", "expired"),
}
_LABEL_CHARS = 28  # what a label is given for the layout; it grows into free room on its track afterwards
_LABEL_MAX_CHARS = 90
_LANE_LABEL_CHARS = 26
_FONT = MIN_FONT
_CHAR_IN = CHAR_WIDTH_EM * _FONT / 72.0  # one average character, in inches
_LANE_GAP = 0.6  # between lanes, in tracks
_BAR_HEIGHT = 0.62
_SPAN_COLOR = "#f2c94c"  # a span of validity, behind the rows (plot_timeline(validity=True))


@dataclass
class _Item:
    """A row in one of its lanes (an entity lane repeats a row with several entities), and where it is drawn."""

    row: DatedRow
    lane: str
    track: int = 0
    y: float = 0.0

    @property
    def anchor(self) -> float:
        """Where its label starts: after a bar, at a point."""
        return self.row.x1 if self.row.bar else self.row.x0


@dataclass
class _Labels:
    """The label of each item that has one (``id(item)`` -> text), and the room it takes."""

    texts: dict[int, str]
    axes_w: float  # inches

    def inches(self, it: _Item) -> float:
        return min((len(self.texts[id(it)]) + 2) * _CHAR_IN, 0.45 * self.axes_w) if id(it) in self.texts else 0.0


@dataclass
class _Layout:
    """Lanes top to bottom, each of ``tracks`` rows of items; ``x_range`` days from ``x_lo`` hold items and labels."""

    names: list[str]
    items: list[_Item]
    labels: _Labels
    x_lo: float
    x_range: float
    n_labelled: int  # items given a label (before crowded lanes left some out)
    tracks: dict[str, int] = field(default_factory=dict)
    crowded: int = 0  # labels left out where a lane had no track left
    centers: dict[str, float] = field(default_factory=dict)
    bounds: list[float] = field(default_factory=list)  # the top of each lane
    y_bottom: float = 0.0


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


def _lane_counts(rows: list[DatedRow]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        for key in row.keys:
            counts[key] += 1
    return counts


def _fold_lanes(rows: list[DatedRow], max_lanes: int) -> int:
    """Past ``max_lanes``, the least populated lanes become one ``(other: N lanes)``; returns N (0: none folded)."""
    counts = _lane_counts(rows)
    if len(counts) <= max_lanes:
        return 0
    keep = max_lanes - 1
    kept = set(sorted(counts, key=lambda k: (-counts[k], k.casefold()))[:keep])
    folded = len(counts) - keep
    other = f"(other: {folded} lanes)"
    for row in rows:
        row.keys = list(dict.fromkeys(k if k in kept else other for k in row.keys))
    return folded


# -- layout ----------------------------------------------------------------------------------------


def _lay_out(rows: list[DatedRow], lanes: str, max_labels: int, axes_w: float) -> _Layout:
    """Items in lanes, the first ``max_labels`` in date order labelled, the date range wide enough for them."""
    names = _order_lanes(lanes, _lane_counts(rows))
    items = [_Item(row, key) for row in rows for key in row.keys]
    in_order = sorted(items, key=lambda it: (it.row.x0, it.row.x1, it.row.rid, it.lane))
    with_label = {id(it) for it in in_order[:max_labels]}
    labels = _Labels({id(it): shorten(it.row.label, _LABEL_CHARS) for it in items if id(it) in with_label}, axes_w)
    # the range R must hold every item and its label, whose width in days is (inches) * R / axes width
    x_lo = min(r.x0 for r in rows)
    x_range = max(max(r.x1 for r in rows) - x_lo, 1.0)
    for it in items:
        x_range = max(x_range, (it.anchor - x_lo) / (1.0 - labels.inches(it) / axes_w - 0.01))
    return _Layout(names, items, labels, x_lo, x_range * 1.01, len(with_label))


def _pack(layout: _Layout, max_tracks: int) -> None:
    """Each lane's items in tracks so that points, bars and labels do not collide; when a lane has no
    track left, an item is drawn without its label (a point over text, never text over text)."""
    days_per_in = layout.x_range * 1.03 / layout.labels.axes_w
    gap = 0.012 * layout.x_range
    by_lane: dict[str, list[_Item]] = defaultdict(list)
    for it in layout.items:
        by_lane[it.lane].append(it)
    for name in layout.names:
        ends: list[float] = []
        for it in sorted(by_lane[name], key=lambda i: (i.row.x0, i.row.x1, i.row.rid)):
            occupied = it.anchor + gap + layout.labels.inches(it) * days_per_in
            free = [t for t, e in enumerate(ends) if e <= it.row.x0]
            if free:
                track = free[0]
            elif len(ends) < max_tracks:
                track = len(ends)
                ends.append(0.0)
            else:
                track = min(range(len(ends)), key=lambda t: ends[t])
                if layout.labels.texts.pop(id(it), None) is not None:
                    layout.crowded += 1
                occupied = it.anchor + gap
            ends[track] = max(ends[track], occupied)
            it.track = track
        layout.tracks[name] = max(len(ends), 1)


def _widen_labels(layout: _Layout) -> None:
    """A label cut for the layout grows back into the free room on its track, up to the next item there or the
    axis end: a label is cut only where there is no room (never over another item or its label)."""
    days_per_in = layout.x_range * 1.03 / layout.labels.axes_w
    gap = 0.012 * layout.x_range
    end = layout.x_lo + layout.x_range
    tracks: dict[tuple[str, int], list[_Item]] = defaultdict(list)
    for it in layout.items:
        tracks[(it.lane, it.track)].append(it)
    texts = layout.labels.texts
    for on_track in tracks.values():
        on_track.sort(key=lambda i: (i.row.x0, i.anchor))
        for n, it in enumerate(on_track):
            if id(it) not in texts or len(it.row.label) <= len(texts[id(it)]):
                continue
            stop = min([i.row.x0 for i in on_track[n + 1 :] if i.row.x0 > it.anchor] + [end]) - gap
            room = int((stop - it.anchor) / days_per_in / _CHAR_IN) - 2
            if room > len(texts[id(it)]):
                texts[id(it)] = shorten(it.row.label, min(room, _LABEL_MAX_CHARS))


def _stack_lanes(layout: _Layout) -> None:
    """Lane 0 at the top, the tracks of each lane stacked inside it; each item's y."""
    base = 0.0
    for name in layout.names:
        n_tracks = layout.tracks[name]
        layout.centers[name] = base + (n_tracks - 1) / 2.0
        layout.bounds.append(base - _LANE_GAP / 2.0 - 0.5)
        base += n_tracks + _LANE_GAP
    layout.y_bottom = base - _LANE_GAP / 2.0 - 0.5
    lane_base = {name: layout.centers[name] - (layout.tracks[name] - 1) / 2.0 for name in layout.names}
    for it in layout.items:
        it.y = lane_base[it.lane] + it.track


# -- draw ------------------------------------------------------------------------------------------


def _draw_bars(ax: Axes, bars: list[_Item], style: str, colors: dict[str, Any]) -> None:
    alpha = 0.85 if style == "active" else 0.2
    container = ax.barh(
        [it.y for it in bars],
        [it.row.x1 - it.row.x0 for it in bars],
        left=[it.row.x0 for it in bars],
        height=_BAR_HEIGHT,
        color=[with_alpha(colors[it.lane], alpha) for it in bars],
        edgecolor=[darker(colors[it.lane]) for it in bars],
        linewidth=0.6 if style == "active" else 0.9,
        hatch=HATCH[style] or None,
        zorder=2,
    )
    for rect, it in zip(container.patches, bars, strict=True):
        rect.set_gid(it.row.rid)


def _draw_points(ax: Axes, points: list[_Item], style: str, colors: dict[str, Any], many: bool) -> None:
    face: Any = [colors[it.lane] for it in points] if style == "active" else "none"
    ax.scatter(
        [it.row.x0 for it in points],
        [it.y for it in points],
        s=14.0 if many else 36.0,
        marker=MARKER[style],
        facecolors=face,
        edgecolors=[darker(colors[it.lane], 0.8) for it in points],
        linewidths=0.5 if style == "active" else 1.3,
        alpha=0.75 if many else 1.0,
        zorder=3,
        gid=f"instants:{style}",
    )


def _draw_items(ax: Axes, layout: _Layout) -> tuple[set[str], set[str]]:
    """Bars and points in their lane's colour, one style after another; returns the styles drawn (instants, bars)."""
    colors = dict(zip(layout.names, palette(len(layout.names)), strict=True))
    bar_styles: set[str] = set()
    instant_styles: set[str] = set()
    many = len(layout.items) > 400
    for style in STYLES:
        bars = [it for it in layout.items if it.row.bar and it.row.style == style]
        if bars:
            bar_styles.add(style)
            _draw_bars(ax, bars, style, colors)
        points = [it for it in layout.items if not it.row.bar and it.row.style == style]
        if points:
            instant_styles.add(style)
            _draw_points(ax, points, style, colors, many)
    return instant_styles, bar_styles


def _shade_validity(ax: Axes, layout: _Layout, frame: pd.DataFrame) -> int:
    """Behind each row, its span of validity (``valid_from`` to ``valid_until``, or to the right edge): the
    columns of a timeline asked with ``validAt``. Returns how many were shaded."""
    if "valid_from" not in frame.columns or frame["valid_from"].isna().all():
        raise InvalidArgument("validity", "needs a timeline asked with validAt (its valid_from column)")
    spans = {
        str(rid): (start, end)
        for rid, start, end in zip(frame["id"], frame["valid_from"], frame["valid_until"], strict=True)
        if not pd.isna(start)
    }
    right = layout.x_lo + layout.x_range
    shaded = 0
    for it in layout.items:
        span = spans.get(it.row.rid)
        if span is None:
            continue
        x0 = dated_num(span[0])
        x1 = right if pd.isna(span[1]) else dated_num(span[1])
        ax.barh(it.y, max(x1 - x0, 0.0), left=x0, height=_BAR_HEIGHT * 1.5, color=_SPAN_COLOR, alpha=0.3,
                linewidth=0, zorder=1, gid=f"validity:{it.row.rid}")  # fmt: skip
        shaded += 1
    return shaded


# -- label -----------------------------------------------------------------------------------------


def _label_items(ax: Axes, layout: _Layout) -> None:
    texts = layout.labels.texts
    for it in (it for it in layout.items if id(it) in texts):
        ax.annotate(
            texts[id(it)],
            xy=(it.anchor, it.y),
            xytext=(4, 0),
            textcoords="offset points",
            ha="left",
            va="center",
            fontsize=_FONT,
            color="#222222" if it.row.style == "active" else "#777777",
            clip_on=True,
            gid="label",
        )


def _lane_axes(ax: Axes, layout: _Layout, zone: tzinfo) -> None:
    """Lanes on y, separated by thin lines; local dates on x."""
    for y in layout.bounds[1:]:
        ax.axhline(y, color="#dddddd", linewidth=0.8, zorder=0)
    ax.set_ylim(layout.y_bottom, layout.bounds[0])
    ax.set_yticks(
        [layout.centers[n] for n in layout.names],
        [shorten(n, _LANE_LABEL_CHARS) for n in layout.names],
        fontsize=MIN_FONT,
    )
    ax.tick_params(axis="y", length=0)
    ax.set_xlim(layout.x_lo - 0.02 * layout.x_range, layout.x_lo + layout.x_range)
    date_axis(ax, zone)
    ax.grid(axis="x", color="#eeeeee", zorder=0)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _notes(layout: _Layout, n_rows: int, zone: tzinfo, folded: int, skipped: int) -> list[str]:
    """The title's second line: counts, zone, and what was left unlabelled, folded or skipped."""
    unlabelled = len(layout.items) - layout.n_labelled
    notes = [f"{n_rows:,} record{'s' if n_rows != 1 else ''}", zone_name(zone)]
    if unlabelled:
        notes.append(unlabelled_note(layout.n_labelled, unlabelled))
    if layout.crowded:
        notes.append(f"{layout.crowded} more unlabelled where labels would overlap")
    if folded:
        notes.append(f"{folded} small lanes folded")
    if skipped:
        notes.append(f"{skipped} without start skipped")
    return notes


def plot_timeline(
    frame: pd.DataFrame,
    *,
    lanes: str = "type",
    tz: str | tzinfo = "UTC",
    ax: Axes | None = None,
    title: str | None = None,
    max_labels: int = 40,
    max_lanes: int = 40,
    validity: bool = False,
) -> Axes:
    """Draw dated records on a date axis, one horizontal lane per ``lanes`` value.

    ``lanes`` is one of :data:`LANES`; with ``"entity"`` a row appears in the lane of each of its
    entities and rows without entities in ``"(none)"``. Dates are displayed in ``tz`` (an IANA
    name); date-only rows are bars over their UTC day, instants are points. When more than
    ``max_lanes`` lanes exist the least populated are folded into one ``"(other: N lanes)"`` lane.
    Returns the Axes (a new figure whose height grows with the lanes when ``ax`` is None). ``validity``
    shades each row's span of validity behind it (a timeline asked with ``valid_at``: docs/time.md).
    """
    if not isinstance(lanes, str) or lanes not in LANES:
        raise InvalidArgument("lanes", f"unknown lane field {lanes!r}", allowed=LANES, value=lanes)
    zone = time_zone(tz)
    max_labels = count_argument("max_labels", max_labels)
    max_lanes = count_argument("max_lanes", max_lanes, minimum=1)
    require_columns(frame, "frame", ("id", "start", {"entity": "entities"}.get(lanes, lanes)))
    main_title = title if title is not None else f"Timeline by {lanes}"
    rows, skipped = dated_rows(frame, lanes)
    if not rows:
        ax, _ = new_axes(ax, COLUMN_INCHES, 2.6)
        return draw_empty(ax, EMPTY_TIMELINE_TEXT, main_title)

    folded = _fold_lanes(rows, max_lanes)
    # horizontal geometry (in days) is worked out before the figure exists, so that labels can be packed
    layout = _lay_out(rows, lanes, max_labels, axes_inches(ax)[0] if ax is not None else COLUMN_INCHES - 2.2)
    labelled = layout.n_labelled > 0
    _pack(layout, max_tracks=12 if labelled else 3)
    _widen_labels(layout)
    _stack_lanes(layout)
    units = layout.y_bottom - layout.bounds[0]
    ax, _ = new_axes(ax, COLUMN_INCHES, min(max(1.9 + units * (0.3 if labelled else 0.2), 3.0), 14.0))

    shaded = _shade_validity(ax, layout, frame) if validity else 0
    instant_styles, bar_styles = _draw_items(ax, layout)
    if labelled:
        _label_items(ax, layout)
    _lane_axes(ax, layout, zone)
    notes = _notes(layout, len(rows), zone, folded, skipped)
    set_title(ax, main_title, notes, axes_inches(ax)[0] + 1.5)
    handles = style_legend_handles(instant_styles, bar_styles)
    if shaded:
        handles.append(Patch(facecolor=with_alpha(mcolors.to_rgba(_SPAN_COLOR), 0.3), label="in force (its span)"))
    legend_below(ax, handles, 3.2)
    return ax
