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
