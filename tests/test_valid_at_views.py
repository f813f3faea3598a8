"""Where people meet validAt: the widgets' "valid at" fields (through their synced values), the "in force"
frame and picture, and a timeline's spans of validity shaded by ``Result.plot``."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

import knowtk
from knowtk.errors import InvalidArgument
from knowtk.notebook import plot_in_force
from knowtk.notebook.chain_widget import ChainWidget
from knowtk.notebook.grep import GrepWidget
from knowtk.notebook.lookup import LookupWidget
from tests.helpers import StoreBuilder

pytestmark = pytest.mark.usefixtures("close_figures")


@pytest.fixture
def store(builder: StoreBuilder) -> knowtk.Store:
    common = {"kind": "claim", "type": "decision", "tags": ["retention"]}
    builder.page("d-1", "Keep logs thirty days", "Thirty days of logs.", occurred_at="2024-01-01",
                 status="superseded", superseded_by="d-2", **common)  # fmt: skip
    builder.page("d-2", "Keep logs sixty days", "Sixty days of logs.", occurred_at="2024-06-01",
                 status="superseded", superseded_by="d-3", **common)  # fmt: skip
    builder.page("d-3", "Keep logs ninety days", "Ninety days of logs.", occurred_at="2025-01-01", **common)
    builder.page("d-x", "Logs older decision without a date", "Logs.", **common)
    builder.page("n-1", "A note on logs", "Logs everywhere.", occurred_at="2024-02-01")
    return builder.open()


def test_the_grep_widget_searches_what_was_in_force(store: knowtk.Store) -> None:
    w = GrepWidget(store, "thirty")
    assert [h["id"] for h in w.result["hits"]] == ["d-3"]  # today: the wording leads to the current record
    w.valid_at.value = "2024-07-01"  # as the browser syncs it
    assert w.args()["valid_at"] == "2024-07-01" and w.result.args["valid_at"].text == "2024-07-01"
    assert [(h["id"], h["via"]["id"]) for h in w.result["hits"]] == [("d-2", "d-1")]
    assert w.result["unplaced"] == 0 and "left out" not in w.table.value
    w.query.value = "logs"
    assert w.result["unplaced"] == 1 and "1 without occurred_at or recorded_at left out" in w.table.value
    w.valid_at.value = "last summer"  # refused: shown, not raised, and the answer is gone
    assert w.result is None and (w.error or "").startswith("valid_at: 'last summer' is not a real date")
    w.valid_at.value = ""
    w.query.value = "thirty"
    assert [h["id"] for h in w.result["hits"]] == ["d-3"] and "unplaced" not in w.result.to_dict()


def test_the_lookup_widget_looks_up_what_was_in_force(store: knowtk.Store) -> None:
    w = LookupWidget(store, "d-2")
    assert w.status == "missing"  # superseded today
    w.valid_at.value = "2024-07-01"
    assert w.status == "found" and w.result["record"]["lifecycle"] == "active"
    w.valid_at.value = "2023-07-01"
    assert w.status == "missing" and w.known is None  # not yet: nothing of today's explanation
    w.valid_at.value = "2024-02-30"
    assert w.result is None and w.error is not None and "2024-02-30" in w.error


def test_the_chain_widget_names_what_was_in_force(store: knowtk.Store) -> None:
    w = ChainWidget(store, "d-1")
    assert w.in_force == [] and "in force at" not in w.table.value
    w.valid_at.value = "2024-07-01"
    assert w.in_force == ["d-2"] and "in force at 2024-07-01</b>: d-2" in w.table.value
    w.valid_at.value = "2025-03-01T10:00:00+01:00"
    assert w.in_force == ["d-3"]
    w.valid_at.value = "soon"
    assert w.in_force == [] and "REFUSED" in w.table.value


def test_the_in_force_frame(store: knowtk.Store) -> None:
    frame = store.in_force(type="decision", valid_at="2024-07-01")
    assert frame["id"].tolist() == ["d-1", "d-2", "d-3", "d-x"]  # by start; the unplaced last
    by_id = frame.set_index("id")
    assert by_id.loc["d-1", "end"] == pd.Timestamp("2024-06-01", tz="UTC")  # its replacement's start
    assert by_id.loc["d-1", "ended_by"] == "superseded" and by_id.loc["d-1", "superseded_by"] == "d-2"
    assert pd.isna(by_id.loc["d-3", "end"]) and pd.isna(by_id.loc["d-x", "start"])
    assert by_id["in_force"].tolist() == [False, True, False, False]
    assert by_id["lifecycle_then"].fillna("-").tolist() == ["superseded", "active", "-", "-"]
    assert by_id.loc["d-2", "lifecycle"] == "superseded"  # today's
    assert store.in_force(tag="retention")["id"].tolist() == frame["id"].tolist()
    assert store.in_force(type="decision")["in_force"].isna().all()  # no instant asked
    with pytest.raises(InvalidArgument) as err:
        store.in_force(valid_at="tomorrow")
    assert err.value.argument == "valid_at"


def test_the_in_force_picture_draws_spans_links_and_the_instant(store: knowtk.Store) -> None:
    ax = plot_in_force(store.in_force(type="decision", valid_at="2024-07-01"), valid_at="2024-07-01")
    gids = {p.get_gid() for p in ax.patches}
    assert {"span:d-1", "span:d-2", "span:d-3", "link:d-1->d-2", "link:d-2->d-3"} <= gids
    assert "span:d-x" not in gids and "1 without a start left out" in ax.get_title()
    assert "1 in force at 2024-07-01" in ax.get_title()
    assert any(line.get_gid() == "valid-at" for line in ax.lines)
    bold = {p.get_gid(): p.get_linewidth() for p in ax.patches if (p.get_gid() or "").startswith("span:")}
    assert bold["span:d-2"] > bold["span:d-1"] == bold["span:d-3"]
    # the same answer read from the spans when the frame was asked without an instant
    again = plot_in_force(store.in_force(type="decision"), valid_at="2024-07-01")
    assert "1 in force at 2024-07-01" in again.get_title()
    assert plot_in_force(store.in_force(type="nothing")).texts[0].get_text() == "no record placed in time"


def test_a_timeline_plot_shades_each_span_of_validity(store: knowtk.Store) -> None:
    result = store.timeline(kind="decision", valid_at="2025-02-01", eligibility="include_inactive")
    frame = result.to_frame()
    assert frame["valid_until"].tolist()[:2] == [pd.Timestamp("2024-06-01", tz="UTC"),
                                                 pd.Timestamp("2025-01-01", tz="UTC")]  # fmt: skip
    ax = result.plot(validity=True)
    shaded = sorted(p.get_gid() for p in ax.patches if (p.get_gid() or "").startswith("validity:"))
    assert shaded == ["validity:d-1", "validity:d-2", "validity:d-3"]
    with pytest.raises(InvalidArgument):
        store.timeline(kind="decision").plot(validity=True)  # no spans without validAt
