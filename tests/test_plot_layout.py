"""Pictures whose size follows what they show: many short chains packed side by side, whole ids in chain boxes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest
from matplotlib.patches import FancyBboxPatch

from knowtk.notebook.chain_plot import plot_chains, wrap_id

pytestmark = pytest.mark.usefixtures("close_figures")


def _two_box_chains(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "chain": list(range(1, n + 1)),
            "from_id": [f"pep-{i:04d}" for i in range(n)],
            "to_id": [f"pep-{i + 1000:04d}" for i in range(n)],
            "from_title": ["An earlier proposal with a title"] * n,
            "to_title": ["The proposal that replaced it"] * n,
            "chain_end": ["current"] * n,
        }
    )


def test_many_two_box_chains_are_packed_side_by_side() -> None:
    ax = plot_chains(_two_box_chains(16))
    fig = ax.figure
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    assert len(boxes) == 32
    lefts = sorted({round(b.get_x(), 2) for b in boxes})
    assert len(lefts) >= 4  # two chains a line: four box columns
    one_per_line = plot_chains(_two_box_chains(3)).figure.get_figheight() - 2.0  # three chains, one a line
    assert fig.get_figheight() <= 2.0 + one_per_line / 3 * 16 / 2 + 0.5  # half the lines of one chain a line
    assert fig.get_figwidth() <= 9.5
    labels = sorted(t.get_text() for t in ax.texts if t.get_text().startswith("chain "))
    assert labels == sorted(f"chain {n}" for n in range(1, 17)) and not ax.get_yticklabels()
    # every box keeps legible text: the whole id, at 9 pt at least
    texts = [t for t in ax.texts if t.get_text().startswith("pep-")]
    assert {t.get_text() for t in texts} == {f"pep-{i:04d}" for i in range(16)} | {
        f"pep-{i:04d}" for i in range(1000, 1016)
    }
    assert min(t.get_fontsize() for t in ax.texts) >= 9


def test_a_few_chains_stay_one_a_line() -> None:
    ax = plot_chains(_two_box_chains(3))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["chain 1", "chain 2", "chain 3"]


def test_a_long_id_is_shown_whole_over_two_lines() -> None:
    assert wrap_id("docs:decisions:archive:0003", 20) == ["docs:decisions:", "archive:0003"]
    assert wrap_id("dec-2026-021", 20) == ["dec-2026-021"]
    edges = pd.DataFrame({"chain": [1], "from_id": ["docs:decisions:archive:0003"], "to_id": ["docs:decisions:0009"]})
    ax = plot_chains(edges)
    heads = [t.get_text() for t in ax.texts if t.get_text().startswith("docs:")]
    assert "docs:decisions:archive:0003" in [h.replace("\n", "") for h in heads]
    assert not any("…" in h for h in heads)


def test_a_timeline_label_is_whole_where_its_track_has_room() -> None:
    from knowtk.notebook.timeline import plot_timeline

    title = "Keep the vector index in SQLite next to FTS5, as decided at the March sync"  # 74 characters
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "title": [title, "Short"],
            "type": ["decision", "decision"],
            "start": pd.to_datetime(["2026-03-01T10:00:00Z", "2026-06-01T10:00:00Z"], utc=True),
            "date_only": [False, False],
        }
    )
    ax = plot_timeline(frame, lanes="type")
    labels = [t.get_text() for t in ax.texts if t.get_gid() == "label"]
    assert title in labels  # not cut at 28 characters: nothing else is on its track until June


def test_a_quiet_chronicle_week_is_not_a_tall_empty_grid() -> None:
    from knowtk.notebook.chronicle import plot_chronicle

    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "title": ["Budget call", "Release retro with the whole team"],
            "type": ["meeting", "meeting"],
            "start": pd.to_datetime(["2026-03-23T09:00:00Z", "2026-03-27T15:00:00Z"], utc=True),
            "date_only": [False, False],
        }
    )
    ax = plot_chronicle(frame)
    assert ax.figure.get_figheight() <= 5.5
    labels = [t.get_text() for t in ax.texts if "Release" in t.get_text()]
    assert labels and "…" not in labels[0]  # three lines of its day's column hold the whole title


def test_rank_change_labels_are_legible(close_figures: None) -> None:
    from knowtk.lab.plots import plot_rank_changes

    table = pd.DataFrame(
        {
            "case": [f"case-{i}" for i in range(8)],
            "change": ["worse"] * 4 + ["better"] * 4,
            "rank_left": [1, 1, 2, 2, 5, 5, 6, 6],
            "rank_right": [3, 3, 3, 3, 1, 1, 1, 1],
        }
    )
    ax = plot_rank_changes(table)
    names = [t for t in ax.texts if t.get_text().startswith("case-")]
    assert len(names) == 8 and min(t.get_fontsize() for t in names) >= 9
    # four labels stacked on one rank stay within that rank's height
    per_rank = ax.figure.get_figheight() / (ax.get_ylim()[0] - ax.get_ylim()[1])
    assert per_rank >= 4 * 11 / 72
