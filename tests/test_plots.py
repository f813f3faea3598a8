"""knowtk.plots: assertions on the drawn artists (no image snapshots)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import random
from datetime import date, datetime
from zoneinfo import ZoneInfo

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import matplotlib.units as munits
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.colors import to_hex
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from knowtk.errors import InvalidArgument
from knowtk.notebook.chain_plot import plot_chains
from knowtk.notebook.chronicle import plot_chronicle
from knowtk.notebook.draw import LANES
from knowtk.notebook.timeline import plot_timeline

pytestmark = pytest.mark.usefixtures("close_figures")

BERLIN = "Europe/Berlin"
TIMELINE_COLUMNS = [
    "id",
    "kind",
    "type",
    "title",
    "summary",
    "lifecycle",
    "path",
    "time_field",
    "value",
    "date_only",
    "start",
    "end",
    "entities",
]
EDGE_COLUMNS = [
    "chain",
    "from_id",
    "from_title",
    "from_revision",
    "from_lifecycle",
    "from_date",
    "to_id",
    "to_title",
    "to_revision",
    "to_lifecycle",
    "to_date",
    "cycle",
    "chain_end",
]


# ---------------------------------------------------------------------------
# frames built by hand, in the query engine's shape


def _row(
    rid: str,
    value: str,
    *,
    kind: str = "claim",
    type: str = "decision",
    title: str | None = None,
    lifecycle: str = "active",
    entities: tuple[str, ...] = (),
    field: str = "occurred_at",
) -> dict:
    date_only = len(value) == 10
    start = pd.Timestamp(value + ("T00:00:00Z" if date_only else "")).tz_convert("UTC")
    return {
        "id": rid,
        "kind": kind,
        "type": type,
        "title": title,
        "summary": None,
        "lifecycle": lifecycle,
        "path": f"notes/{rid}.md",
        "time_field": field,
        "value": value,
        "date_only": date_only,
        "start": start,
        "end": start + pd.Timedelta(days=1) if date_only else start,
        "entities": list(entities),
    }


def _frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=TIMELINE_COLUMNS)
    df["start"] = pd.to_datetime(df["start"], utc=True)
    df["end"] = pd.to_datetime(df["end"], utc=True)
    df["date_only"] = df["date_only"].astype(bool)
    return df


def week_frame() -> pd.DataFrame:
    """Ten rows in the Berlin week 2026-03-23..29, which crosses the switch to CEST (29 Mar, 01:00Z)."""
    return _frame(
        [
            _row(
                "mtg-0323",
                "2026-03-23T09:30:00+01:00",
                kind="page",
                type="meeting",
                title="Monday standup",
                entities=("person-ada", "proj-search"),
            ),
            _row("dec-014", "2026-03-24", title="Use SQLite FTS5 for keyword search", entities=("proj-search",)),
            _row(
                "dec-009",
                "2026-03-24T11:00:00+01:00",
                title="Use Whoosh for search",
                lifecycle="superseded",
                entities=("proj-search",),
            ),
            _row(
                "evt-0325",
                "2026-03-25T14:00:00+01:00",
                kind="page",
                type="event",
                title="Design review",
                entities=("person-bob",),
            ),
            _row(
                "mtg-0326",
                "2026-03-26T15:00:00+01:00",
                kind="page",
                type="meeting",
                title="Planning (CET)",
                entities=("person-ada",),
            ),
            _row(
                "rel-leads",
                "2026-03-26T15:15:00+01:00",
                kind="relationship",
                type="leads",
                title="Ada leads search",
                entities=("person-ada", "proj-search"),
            ),
            _row("clm-budget", "2026-03-27", title="Budget approved for Q2", lifecycle="expired"),
            _row(
                "due-0327",
                "2026-03-27",
                type="task",
                title="Ship the index rebuild",
                field="due_at",
                entities=("proj-search",),
            ),
            _row(
                "mtg-0329",
                "2026-03-29T15:00:00+02:00",
                kind="page",
                type="meeting",
                title="Sunday sync (CEST)",
                entities=("person-bob",),
            ),
            _row("evt-0329", "2026-03-29T22:45:00+02:00", kind="page", type="event", title="Deploy window"),
        ]
    )


DATE_ONLY_IDS = {"dec-014", "clm-budget", "due-0327"}
TYPES = ["decision", "event", "leads", "meeting", "task"]


def big_frame(n: int = 2000, seed: int = 20260323) -> pd.DataFrame:
    rnd = random.Random(seed)
    types = ["meeting", "decision", "event", "task", "note", "incident", "risk"]
    entities = [f"person-{c}" for c in "abcdef"] + ["proj-search", "proj-ingest"]
    base = pd.Timestamp("2025-06-01T00:00:00Z")
    rows = []
    for i in range(n):
        t = base + pd.Timedelta(minutes=rnd.randrange(0, 300 * 24 * 60))
        value = t.strftime("%Y-%m-%d") if rnd.random() < 0.3 else t.tz_convert(BERLIN).isoformat()
        rows.append(
            _row(
                f"rec-{i:04d}",
                value,
                kind=rnd.choice(["page", "claim", "relationship"]),
                type=rnd.choice(types),
                title=f"Generated record {i} with a fairly long title",
                entities=tuple(rnd.sample(entities, 2)),
                lifecycle=rnd.choices(["active", "superseded", "expired"], [8, 1, 1])[0],
            )
        )
    return _frame(rows)


def edges_frame() -> pd.DataFrame:
    def d(text: str | None) -> pd.Timestamp:
        return pd.Timestamp(text, tz="UTC") if text else pd.NaT

    data = [
        (
            1,
            "dec-001",
            "Use Whoosh",
            1,
            "superseded",
            d("2026-01-10"),
            "dec-014",
            "Use FTS5",
            2,
            "superseded",
            d("2026-02-01"),
            False,
            "current",
        ),
        (
            1,
            "dec-014",
            "Use FTS5",
            2,
            "superseded",
            d("2026-02-01"),
            "dec-031",
            "Use FTS5 + trigram",
            3,
            "active",
            d("2026-03-04"),
            False,
            "current",
        ),
        (
            2,
            "pol-7",
            "Retention 30d",
            1,
            "superseded",
            d("2025-11-02"),
            "pol-9",
            "Retention 90d",
            1,
            "withdrawn",
            d("2025-12-01"),
            False,
            "withdrawn",
        ),
        (
            3,
            "clm-a",
            "Budget 10k",
            1,
            "superseded",
            d("2026-02-11"),
            "clm-b",
            None,
            None,
            "missing",
            None,
            False,
            "missing",
        ),
        (
            4,
            "adr-x",
            "Redis cache",
            1,
            "superseded",
            d("2026-01-01"),
            "adr-y",
            "Memory cache",
            1,
            "superseded",
            d("2026-01-05"),
            True,
            "cycle",
        ),
        (
            4,
            "adr-y",
            "Memory cache",
            1,
            "superseded",
            d("2026-01-05"),
            "adr-x",
            "Redis cache",
            1,
            "superseded",
            d("2026-01-01"),
            True,
            "cycle",
        ),
        (
            5,
            "m-1",
            "Draft A",
            1,
            "superseded",
            d("2026-03-01"),
            "m-3",
            "Merged",
            1,
            "active",
            d("2026-03-09"),
            False,
            "current",
        ),
        (
            5,
            "m-2",
            "Draft B",
            1,
            "superseded",
            d("2026-03-02"),
            "m-3",
            "Merged",
            1,
            "active",
            d("2026-03-09"),
            False,
            "current",
        ),
    ]
    df = pd.DataFrame(data, columns=EDGE_COLUMNS)
    for c in ("from_revision", "to_revision"):
        df[c] = df[c].astype("Int64")
    for c in ("from_date", "to_date"):
        df[c] = pd.to_datetime(df[c], utc=True)
    return df


# ---------------------------------------------------------------------------
# artist helpers


def scatters(ax: Axes) -> list[PathCollection]:
    return [c for c in ax.collections if str(c.get_gid() or "").startswith("instants:")]


def point_count(ax: Axes) -> int:
    return sum(len(c.get_offsets()) for c in scatters(ax))


def bars(ax: Axes) -> list[Rectangle]:
    return [p for p in ax.patches if isinstance(p, Rectangle) and p.get_gid()]


def labels(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.texts if t.get_gid() == "label"]


def ytick_texts(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


def lane_of(ax: Axes, y: float) -> str:
    ticks = list(ax.get_yticks())
    nearest = min(range(len(ticks)), key=lambda i: abs(ticks[i] - y))
    return ytick_texts(ax)[nearest]


def num(value: str) -> float:
    return float(mdates.date2num(pd.Timestamp(value).tz_convert("UTC").to_pydatetime()))


# ---------------------------------------------------------------------------
# timeline


def test_timeline_draws_instants_as_points_and_date_only_rows_as_bars() -> None:
    frame = week_frame()
    ax = plot_timeline(frame, tz=BERLIN)
    assert isinstance(ax, Axes)
    assert point_count(ax) == (~frame["date_only"]).sum() == 7
    assert {b.get_gid() for b in bars(ax)} == DATE_ONLY_IDS
    xs = sorted(float(x) for c in scatters(ax) for x, _ in c.get_offsets())
    assert xs == pytest.approx(sorted(num(v) for v in frame.loc[~frame["date_only"], "value"]))


def test_date_only_bar_spans_exactly_one_utc_day() -> None:
    ax = plot_timeline(week_frame(), tz=BERLIN)
    by_id = {b.get_gid(): b for b in bars(ax)}
    for rid, day in (("dec-014", "2026-03-24"), ("clm-budget", "2026-03-27"), ("due-0327", "2026-03-27")):
        bar = by_id[rid]
        assert bar.get_x() == pytest.approx(num(day + "T00:00:00Z"), abs=1e-9)
        assert bar.get_width() == pytest.approx(1.0, abs=1e-9)


def test_lane_tick_labels_follow_lanes_argument() -> None:
    frame = week_frame()
    assert ytick_texts(plot_timeline(frame)) == TYPES
    assert ytick_texts(plot_timeline(frame, lanes="kind")) == ["page", "claim", "relationship"]
    assert ytick_texts(plot_timeline(frame, lanes="lifecycle")) == ["active", "superseded", "expired"]


def test_entity_lanes_repeat_rows_and_collect_rows_without_entities() -> None:
    frame = week_frame()
    ax = plot_timeline(frame, lanes="entity")
    assert ytick_texts(ax) == ["person-ada", "person-bob", "proj-search", "(none)"]
    drawn = point_count(ax) + len(bars(ax))
    assert drawn == sum(max(len(e), 1) for e in frame["entities"]) == 12
    # the 2026-03-27 date-only rows: due-0327 is in proj-search, clm-budget (no entities) in (none)
    by_id = {b.get_gid(): b for b in bars(ax)}
    assert lane_of(ax, by_id["due-0327"].get_y() + by_id["due-0327"].get_height() / 2) == "proj-search"
    assert lane_of(ax, by_id["clm-budget"].get_y() + by_id["clm-budget"].get_height() / 2) == "(none)"
    # entities given as None (not an empty list) also land in (none)
    frame.at[0, "entities"] = None
    none_ax = plot_timeline(frame, lanes="entity")
    assert point_count(none_ax) + len(bars(none_ax)) == 11  # mtg-0323 now once, in (none)
    # mtg-0323 (person-ada + proj-search) is drawn once in each of those lanes
    x = num("2026-03-23T09:30:00+01:00")
    lanes = sorted(lane_of(ax, float(y)) for c in scatters(ax) for px, y in c.get_offsets() if abs(px - x) < 1e-9)
    assert lanes == ["person-ada", "proj-search"]


def test_superseded_and_expired_rows_are_styled_apart() -> None:
    ax = plot_timeline(week_frame(), tz=BERLIN)
    by_gid = {c.get_gid(): c for c in scatters(ax)}
    assert set(by_gid) == {"instants:active", "instants:superseded"}
    assert len(by_gid["instants:superseded"].get_offsets()) == 1
    assert all(fc[3] == 0 for fc in by_gid["instants:superseded"].get_facecolor())  # hollow
    assert all(fc[3] > 0.5 for fc in by_gid["instants:active"].get_facecolor())  # filled
    by_id = {b.get_gid(): b for b in bars(ax)}
    expired, active = by_id["clm-budget"], by_id["due-0327"]
    assert expired.get_hatch() and not active.get_hatch()
    assert expired.get_facecolor()[3] < 0.5 < active.get_facecolor()[3]
    legend = ax.get_legend()
    assert legend is not None
    assert {"superseded", "expired"} <= {t.get_text() for t in legend.get_texts()}


@pytest.mark.parametrize("max_labels", [0, 3, 9, 10, 40])
def test_label_count_is_capped(max_labels: int) -> None:
    ax = plot_timeline(week_frame(), max_labels=max_labels)
    drawn = labels(ax)
    assert len(drawn) <= max_labels

    def whole_or_cut(label: str, title: str) -> bool:
        return label == title or (label.endswith("…") and title.startswith(label[:-1].rstrip()))

    if max_labels >= 10:
        assert len(drawn) == 10
        assert "Monday standup" in drawn
        assert "Use SQLite FTS5 for keyword search" in drawn  # whole: there is room on its track
    else:
        assert f"{10 - max_labels} unlabelled" in ax.get_title()
        earliest = list(week_frame().sort_values("start")["title"])[:max_labels]  # the first max_labels in time
        assert len(drawn) == len(earliest)
        assert all(any(whole_or_cut(label, title) for title in earliest) for label in drawn)


def test_two_thousand_rows_label_the_first_forty_and_keep_lanes_readable() -> None:
    frame = big_frame()
    ax = plot_timeline(frame)
    assert len(labels(ax)) == 40 and "labels on the first 40 in time, 1,960 unlabelled" in ax.get_title()
    assert "2,000 records" in ax.get_title()
    assert point_count(ax) + len(bars(ax)) == 2000
    assert ytick_texts(ax) == sorted(frame["type"].unique())
    assert all(t.get_fontsize() >= 9 for t in ax.get_yticklabels())
    assert ax.figure.get_figheight() <= 14


def test_past_the_label_limit_the_first_rows_are_labelled_and_the_rest_counted() -> None:
    # the PEPs' 2025 timeline: 43 rows, over the default limit of 40
    days = [f"2025-{1 + i // 4:02d}-{1 + 2 * (i % 4):02d}" for i in range(43)]
    rows = [_row(f"pep-{800 + i}", day, title=f"PEP {800 + i}") for i, day in enumerate(days)]
    ax = plot_timeline(_frame(rows))
    assert sorted(labels(ax)) == sorted(f"PEP {800 + i}" for i in range(40))
    title = ax.get_title()
    assert "43 records" in title and "3 unlabelled" in title and title.count("\n") == 1  # two lines


def test_a_crowded_lane_leaves_labels_out_rather_than_overlap_them() -> None:
    rows = [
        _row(f"r{i}", f"2026-03-{1 + i // 6:02d}T{8 + i % 6:02d}:00:00Z", title=f"A long title number {i}")
        for i in range(60)
    ]
    ax = plot_timeline(_frame(rows), max_labels=60)
    ax.figure.canvas.draw()
    drawn = [t for t in ax.texts if t.get_gid() == "label"]
    boxes = [t.get_window_extent() for t in drawn]
    overlapping = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :] if a.overlaps(b)]
    assert not overlapping
    crowded = 60 - len(drawn)
    assert crowded > 0 and f"{crowded} more unlabelled where labels would overlap" in ax.get_title()
    assert point_count(ax) == 60  # every record is still drawn


def _all_texts(ax: Axes) -> list:
    ax.figure.canvas.draw()
    found = [t for t in ax.figure.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))]
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def _shown_width_px(ax: Axes) -> float:
    import io

    buffer = io.BytesIO()
    ax.figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")  # as the inline backend shows it
    return int.from_bytes(buffer.getvalue()[16:20], "big")


@pytest.mark.parametrize("picture", ["timeline", "chronicle", "chains", "long chain"])
def test_figures_fit_a_notebook_column_with_text_of_at_least_nine_points(picture: str) -> None:
    if picture == "timeline":
        ax = plot_timeline(week_frame(), tz=BERLIN)
    elif picture == "chronicle":
        ax = plot_chronicle(week_frame(), tz=BERLIN)  # a whole week
    elif picture == "chains":
        ax = plot_chains(edges_frame())
    else:
        ids = [f"dec-{i:03d}" for i in range(9)]
        ax = plot_chains(
            pd.DataFrame({"chain": [1] * 8, "from_id": ids[:-1], "to_id": ids[1:], "chain_end": ["current"] * 8})
        )
    assert _shown_width_px(ax) <= 1000  # shown at its own size in a ~1000 px column, not scaled down
    sizes = {t.get_text(): t.get_fontsize() for t in _all_texts(ax)}
    assert sizes and min(sizes.values()) >= 9, {k: v for k, v in sizes.items() if v < 9}
    plt.close(ax.figure)


def test_every_date_axis_names_the_month_and_the_year() -> None:
    def ticks(rows: list[dict]) -> list[str]:
        ax = plot_timeline(_frame(rows))
        ax.figure.canvas.draw()
        return [t.get_text() for t in ax.get_xticklabels() if t.get_text()]

    # March 2026: weekly ticks must name March, not read "08 15 22 Apr 08 15"
    march = ticks([_row(f"m{d}", f"2026-03-{d:02d}T10:00:00Z") for d in (2, 9, 16, 23, 30)] + [_row("a", "2026-04-15")])
    assert "Mar" in march[0] and "2026" in march[0] and any("Apr" in t for t in march)
    assert all(any(m in t for m in ("Mar", "Apr")) for t in march)  # every tick names its month
    # a person's timeline across a new year: "Nov 2026 Mar" never showed 2025
    person = ticks([_row("p1", "2025-11-03"), _row("p2", "2026-01-20T09:00:00Z"), _row("p3", "2026-03-10")])
    joined = " ".join(person)
    assert "2025" in person[0] and "2026" in joined and "Nov" in joined
    years = [t for t in person if "\n" in t]
    assert [t.split("\n")[1] for t in years] == ["2025", "2026"]  # the year where it starts and where it changes


def test_figure_height_grows_with_lane_count_within_bounds() -> None:
    def frame_with(n_types: int) -> pd.DataFrame:
        return _frame(
            [_row(f"r{i}", f"2026-03-{1 + i % 28:02d}T10:00:00Z", type=f"type-{i:03d}") for i in range(n_types)]
        )

    heights = [plot_timeline(frame_with(n), max_labels=0).figure.get_figheight() for n in (1, 2, 8, 20, 80)]
    assert heights == sorted(heights)
    assert heights[0] < heights[2] < heights[3]
    assert heights[0] >= 2.5 and heights[-1] <= 14
    ax = plot_timeline(frame_with(80), max_labels=0)  # more lanes than max_lanes: the rest are folded
    ticks = ytick_texts(ax)
    assert len(ticks) == 40 and ticks[-1] == "(other: 41 lanes)"
    assert point_count(ax) == 80


def test_dates_are_displayed_in_the_requested_zone() -> None:
    frame = _frame([_row("a", "2026-03-26T20:30:00Z"), _row("b", "2026-03-27T01:30:00Z")])
    for tz in ("UTC", BERLIN):
        ax = plot_timeline(frame, tz=tz)
        ax.figure.canvas.draw()
        texts = [label.get_text() for label in ax.get_xticklabels()]
        locals_ = [mdates.num2date(tick).astimezone(ZoneInfo(tz)) for tick in ax.get_xticks()]
        assert len(texts) >= 4
        for local, text in zip(locals_, texts, strict=True):
            assert text.split("\n")[0] == f"{local:%H:%M}"  # the zone's wall-clock time
        # the date (day, month, year) where the axis starts and where the local day changes
        dated = [(local, text) for local, text in zip(locals_, texts, strict=True) if "\n" in text]
        assert dated[0] == (locals_[0], texts[0])
        assert [text.split("\n")[1] for _, text in dated] == [f"{lo.day} {lo:%b %Y}" for lo, _ in dated]
        assert sum(1 for lo in locals_ if not lo.hour) == 1  # ticks sit on the zone's hours: its midnight is one
        midnight = next(text for lo, text in zip(locals_, texts, strict=True) if not lo.hour)
        assert "\n27 Mar 2026" in midnight


def test_empty_frames_say_so() -> None:
    empty = week_frame().iloc[0:0]
    for ax in (plot_timeline(empty), plot_chronicle(empty, tz=BERLIN)):
        assert "no dated records" in [t.get_text() for t in ax.texts]
        assert not ax.collections and not ax.patches


def test_invalid_arguments_raise_invalid_argument() -> None:
    with pytest.raises(InvalidArgument) as info:
        plot_timeline(week_frame(), lanes="colour")
    assert info.value.argument == "lanes"
    assert tuple(info.value.allowed) == LANES == ("type", "kind", "lifecycle", "entity")
    assert "lanes" in str(info.value) and "'entity'" in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(InvalidArgument) as info:
        plot_timeline(week_frame(), tz="Mars/Olympus")
    assert info.value.argument == "tz"
    with pytest.raises(InvalidArgument) as info:
        plot_timeline(week_frame(), max_labels=-1)
    assert info.value.argument == "max_labels"
    with pytest.raises(InvalidArgument) as info:
        plot_timeline(week_frame().drop(columns=["type"]))
    assert info.value.argument == "frame"


def test_draws_on_a_given_axes_without_a_new_figure() -> None:
    _fig, (left, right) = plt.subplots(1, 2)
    before = plt.get_fignums()
    assert plot_timeline(week_frame(), ax=left) is left
    assert plot_chronicle(week_frame(), ax=right) is right
    assert plt.get_fignums() == before
    assert point_count(left) == 7 and point_count(right) == 7


# ---------------------------------------------------------------------------
# chronicle


def _chronicle_points(ax: Axes) -> list[tuple[float, float]]:
    return sorted((float(x), float(y)) for c in scatters(ax) for x, y in c.get_offsets())


def day_num(iso: str) -> float:
    """matplotlib date number of a calendar day (naive midnight): where its chronicle column starts."""
    return float(mdates.date2num(datetime.fromisoformat(iso)))


def column_day(x: float) -> date:
    """The calendar day of the chronicle column holding x."""
    return mdates.num2date(x).date()


def test_chronicle_puts_15h_local_on_both_sides_of_dst_at_the_same_height() -> None:
    frame = week_frame()
    ax = plot_chronicle(frame, tz=BERLIN)
    points = _chronicle_points(ax)
    assert len(points) == 7
    at_15 = sorted(column_day(x) for x, y in points if y == pytest.approx(15.0))
    assert at_15 == [date(2026, 3, 26), date(2026, 3, 29)]  # Thu 26 (CET, 14:00Z) and Sun 29 (CEST, 13:00Z)
    # the same frame in UTC puts them an hour apart: the test above is about local time
    utc = [(column_day(x), y) for x, y in _chronicle_points(plot_chronicle(frame, tz="UTC"))]
    assert (date(2026, 3, 26), pytest.approx(14.0)) in utc and (date(2026, 3, 29), pytest.approx(13.0)) in utc
    assert not any(y == pytest.approx(15.0) for _, y in utc)


def test_chronicle_columns_are_local_calendar_days_with_weekday_labels() -> None:
    ax = plot_chronicle(week_frame(), tz=BERLIN)
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert [t.split("\n")[0] for t in ticks] == ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    assert ticks[0].split("\n")[1] == "23 Mar 2026" and ticks[6].split("\n")[1] == "29 Mar"
    assert [("UTC+1→+2" in t) for t in ticks] == [False] * 6 + [True]
    assert ax.get_xlim() == pytest.approx((day_num("2026-03-23"), day_num("2026-03-30")))
    # one tick per column, at its centre, naming the column's day
    for tick, text in zip(ax.get_xticks(), ticks, strict=True):
        assert tick - day_num(column_day(tick).isoformat()) == pytest.approx(0.5)
        assert text.split("\n")[1].startswith(f"{column_day(tick).day} Mar")
    # an instant late on Sunday evening UTC falls on Monday in Tokyo
    late = _frame([_row("late", "2026-03-29T20:00:00Z")])
    tokyo = plot_chronicle(late, tz="Asia/Tokyo")
    assert tokyo.get_xticklabels()[0].get_text().startswith("Mon\n30 Mar")
    ((x, y),) = _chronicle_points(tokyo)
    assert column_day(x) == date(2026, 3, 30) and y == pytest.approx(5.0)


def test_chronicle_x_axis_is_a_date_axis_of_local_days() -> None:
    frame = week_frame()
    for tz in (BERLIN, "America/Los_Angeles", "Pacific/Auckland"):
        ax = plot_chronicle(frame, tz=tz)
        assert isinstance(ax.xaxis.get_major_locator(), mdates.DateLocator)
        assert ax.xaxis.get_converter() is munits.registry.get_converter(datetime(2026, 1, 1))
        # every point lies in the column of its event's local calendar day
        starts = {r.id: r.start for r in frame.itertuples() if not r.date_only}
        by_local_day = sorted(t.tz_convert(tz).date() for t in starts.values())
        assert sorted(column_day(x) for x, _ in _chronicle_points(ax)) == by_local_day
    # the Sunday 15:00 CEST sync lies within Sunday 29 March's column
    ax = plot_chronicle(frame, tz=BERLIN)
    sunday = [x for x, y in _chronicle_points(ax) if y == pytest.approx(15.0) and x > day_num("2026-03-28")]
    assert len(sunday) == 1 and day_num("2026-03-29") <= sunday[0] < day_num("2026-03-30")
    assert mdates.num2date(sunday[0]).date() == date(2026, 3, 29)
    assert ax.format_xdata(sunday[0]) == "Sun 29 Mar 2026"
    # zooming a long chronicle re-ticks the days in view, still at column centres
    big = plot_chronicle(big_frame(), tz=BERLIN)
    big.set_xlim(day_num("2025-09-01"), day_num("2025-09-04"))
    texts = [t.get_text().split("\n")[1] for t in big.get_xticklabels()]
    assert texts == ["1 Sep", "2 Sep", "3 Sep"]
    assert list(big.get_xticks()) == pytest.approx([day_num(f"2025-09-0{d}") + 0.5 for d in (1, 2, 3)])


def test_chronicle_date_only_rows_are_full_day_bands_in_the_all_day_strip() -> None:
    ax = plot_chronicle(week_frame(), tz=BERLIN)
    bands = {b.get_gid(): b for b in bars(ax)}
    assert set(bands) == DATE_ONLY_IDS
    for rid, day in (("dec-014", "2026-03-24"), ("clm-budget", "2026-03-27"), ("due-0327", "2026-03-27")):
        band = bands[rid]
        first_hour = min(y for _, y in _chronicle_points(ax))
        assert band.get_y() + band.get_height() < int(first_hour)  # above the first hour drawn: the all-day strip
        assert band.get_width() >= 0.9
        assert day_num(day) <= band.get_x() < band.get_x() + band.get_width() <= day_num(day) + 1
        assert band.get_x() + band.get_width() / 2 == pytest.approx(day_num(day) + 0.5)
    assert bands["clm-budget"].get_hatch() and not bands["due-0327"].get_hatch()
    assert bands["clm-budget"].get_y() != bands["due-0327"].get_y()  # stacked, not overlapping
    assert "all day" in ytick_texts(ax)


def _hour_limits(ax: Axes) -> tuple[float, float]:
    """The first and the last hour the chronicle draws (its y axis grows downwards, the all-day strip above)."""
    bottom, top = ax.get_ylim()
    assert bottom > top  # inverted: time of day downwards
    hours = ax.yaxis.get_minor_locator().tick_values(top, bottom)  # a thin line at every hour drawn
    assert list(hours) == list(range(int(min(hours)), int(bottom) + 1))
    return float(min(hours)), bottom


def test_chronicle_hours_follow_the_items_padded_to_whole_hours() -> None:
    week = plot_chronicle(week_frame(), tz=BERLIN)
    points = _chronicle_points(week)
    first, last = _hour_limits(week)
    assert first == int(min(y for _, y in points)) and last == int(max(y for _, y in points)) + 1
    assert last - first < 24  # not the whole day
    assert all(first <= y <= last for _, y in points)  # every item within the hours drawn
    bottom, top = week.get_ylim()
    for label in week.texts:  # every label too (annotations are texts of the axes)
        assert top <= label.get_position()[1] <= bottom
    # a single item: the minimum span around it, labels every hour, legible
    one = plot_chronicle(_frame([_row("one", "2026-03-24T10:20:00+01:00", title="Alone")]), tz=BERLIN)
    ((_, y),) = _chronicle_points(one)
    first, last = _hour_limits(one)
    assert last - first == 6 and first <= y <= last and first < y - 1 and y + 1 < last
    assert [t.get_text() for t in one.get_yticklabels()] == [f"{h:02d}:00" for h in range(int(first), int(last) + 1)]
    assert all(t.get_fontsize() >= 8 for t in one.get_yticklabels())
    # near midnight the span stays inside the day
    late = plot_chronicle(_frame([_row("late", "2026-03-24T23:40:00+01:00", title="Late")]), tz=BERLIN)
    assert _hour_limits(late) == (18.0, 24.0)
    early = plot_chronicle(_frame([_row("early", "2026-03-24T00:10:00+01:00", title="Early")]), tz=BERLIN)
    assert _hour_limits(early) == (0.0, 6.0)


def test_chronicle_folds_a_long_empty_stretch_between_busy_hours() -> None:
    """A week whose items sit after midnight and late in the evening: the night's hours between are drawn short
    and named, the busy hours at full height, every item at its own time of day."""
    frame = _frame(
        [
            _row("early", "2026-03-23T00:15:00+01:00", title="Overnight"),
            _row("night", "2026-03-25T01:30:00+01:00", title="Night session"),
            _row("late", "2026-03-27T23:00:00+01:00", title="Budget call"),
        ]
    )
    ax = plot_chronicle(frame, tz=BERLIN)
    bottom, top = ax.get_ylim()
    assert (bottom, top) == (24.0, 0.0)  # the items span the whole day
    assert sorted(y for _, y in _chronicle_points(ax)) == pytest.approx([0.25, 1.5, 23.0])
    (note,) = [t for t in ax.texts if t.get_gid() == "fold"]
    assert note.get_text() == "04:00–21:00: nothing (folded)"

    def drawn(y: float) -> float:  # display pixels from the top of the axes
        return float(ax.transData.transform((0.0, y))[1])

    hour = abs(drawn(1.0) - drawn(2.0))
    assert abs(drawn(4.0) - drawn(21.0)) < hour  # seventeen empty hours drawn shorter than one busy hour
    assert abs(drawn(22.0) - drawn(23.0)) == pytest.approx(hour)  # busy hours at one scale
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert "04:00" in ticks and "21:00" in ticks and not any(f"{h:02d}:00" in ticks for h in range(5, 21))
    # items close together are never folded apart
    assert [t for t in plot_chronicle(week_frame(), tz=BERLIN).texts if t.get_gid() == "fold"] == []


def test_chronicle_styles_and_labels() -> None:
    ax = plot_chronicle(week_frame(), tz=BERLIN)
    by_gid = {c.get_gid(): c for c in scatters(ax)}
    assert all(fc[3] == 0 for fc in by_gid["instants:superseded"].get_facecolor())
    drawn = [" ".join(t.split()) for t in labels(ax)]  # a label wraps over two lines in a narrow column
    assert len(drawn) == 10
    assert any(t.startswith("15:00 Sunday sync") for t in drawn)
    assert any(t.startswith("15:00 Planning") for t in drawn)
    assert all(t.count("\n") <= 2 for t in labels(ax))  # at most three lines in its day's column
    nine = plot_chronicle(week_frame(), tz=BERLIN, max_labels=9)
    assert len(labels(nine)) == 9 and "1 unlabelled" in nine.get_title()
    assert not any("Sunday sync" in t for t in labels(nine))  # the last in time goes unlabelled
    big = plot_chronicle(big_frame(), tz=BERLIN)
    assert labels(big) == [] and "2,000 records" in big.get_title()  # 300 days: too narrow to name anything
    assert "no labels (2,000 unlabelled)" in big.get_title()
    assert len(big.get_xticklabels()) <= 14


# ---------------------------------------------------------------------------
# chains


def _node_boxes(ax: Axes) -> dict[str, FancyBboxPatch]:
    return {str(p.get_gid()): p for p in ax.patches if isinstance(p, FancyBboxPatch)}


def test_chains_draw_one_arrow_per_edge_left_to_right() -> None:
    edges = edges_frame()
    ax = plot_chains(edges)
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert len(arrows) == len(edges)
    assert sorted(str(a.get_gid()) for a in arrows) == sorted(
        f"edge:{c}:{a}->{b}" for c, a, b in edges[["chain", "from_id", "to_id"]].itertuples(index=False)
    )
    boxes = _node_boxes(ax)
    assert len(boxes) == 12  # 3 + 2 + 2 + 2 + 3 nodes
    for c, a, b, cycle in edges[["chain", "from_id", "to_id", "cycle"]].itertuples(index=False):
        if not cycle or (a, b) == ("adr-x", "adr-y"):
            assert boxes[f"node:{c}:{a}"].get_x() < boxes[f"node:{c}:{b}"].get_x()


def test_chains_sort_and_mark_dead_ends() -> None:
    ax = plot_chains(edges_frame())
    assert ytick_texts(ax) == ["chain 2", "chain 3", "chain 4", "chain 1", "chain 5"]
    markers = {str(t.get_gid()): t.get_text() for t in ax.texts if str(t.get_gid()).startswith("end:")}
    assert markers == {"end:2": "✕ withdrawn", "end:3": "✕ missing", "end:4": "↻ cycle"}
    boxes = _node_boxes(ax)
    green = {gid for gid, box in boxes.items() if to_hex(box.get_edgecolor()) == "#23923a"}
    assert green == {"node:1:dec-031", "node:5:m-3"}
    red = {gid for gid, box in boxes.items() if to_hex(box.get_edgecolor()) == "#c0392b"}
    assert red == {"node:2:pol-9", "node:3:clm-b"}
    assert "3 dead ends" in ax.get_title()
    # node boxes say what they are
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "r3 · 2026-03-04" in texts and "missing" in texts


def test_chain_titles_wrap_over_two_lines_and_short_chains_stay_narrow() -> None:
    long_title = "Move the vector index into the same SQLite file as the keyword index"
    edges = pd.DataFrame(
        {"chain": [1], "from_id": ["dec-1"], "to_id": ["dec-2"], "from_title": [long_title], "to_title": ["Short"]}
    )
    ax = plot_chains(edges)
    node_text = next(t.get_text() for t in ax.texts if "Move the" in t.get_text())
    title_lines = node_text.split("\n")[1:]  # after the revision · date line
    assert len(title_lines) == 2 and len(" ".join(title_lines)) > 30  # not cut at ~20 characters
    assert " ".join(title_lines).replace("…", "") in long_title
    assert ax.figure.get_figwidth() <= 6.5  # two boxes: a narrow figure, not stretched to the column
    wide = plot_chains(pd.DataFrame({"chain": [1] * 5, "from_id": list("abcde"), "to_id": list("bcdef")}))
    assert ax.figure.get_figwidth() < wide.figure.get_figwidth() <= 9.5


def test_chains_without_chain_end_derive_it_and_empty_edges_say_so() -> None:
    edges = edges_frame().drop(columns=["chain_end"])
    ax = plot_chains(edges)
    assert ytick_texts(ax)[-2:] == ["chain 1", "chain 5"]
    empty = plot_chains(edges_frame().iloc[0:0])
    assert "no supersession chains" in [t.get_text() for t in empty.texts]
    assert not empty.patches
    with pytest.raises(InvalidArgument) as info:
        plot_chains(edges_frame().drop(columns=["to_id"]))
    assert info.value.argument == "edges"


def test_instant_helper_matches_date2num() -> None:
    # guards the helper the other tests compare against
    assert num("2026-03-26T15:00:00+01:00") == pytest.approx(
        float(mdates.date2num(datetime(2026, 3, 26, 14, 0, tzinfo=ZoneInfo("UTC"))))
    )
