"""What the widgets show by default: coverage issues as one line that opens to the list, a hit's whole row a
click target, and a receipt's hashes short with the whole value on hover."""

from __future__ import annotations

import re

import knowtk
from knowtk.notebook import GrepWidget
from knowtk.notebook.panes import issues_html
from knowtk.ui.style import STYLE


def test_coverage_issues_are_one_line_that_opens_to_the_list(demo_store: knowtk.Store) -> None:
    coverage = demo_store.grep("search")["coverage"]
    shown = issues_html(coverage)
    summary = re.search(r"<summary>(.*?)</summary>", shown)
    assert summary is not None and f"{len(coverage['issues'])} issues" in summary.group(1)
    assert "<table" not in summary.group(1) and "<details" in shown and " open" not in shown.split("<summary>")[0]
    assert all(issue["path"] in shown for issue in coverage["issues"])  # every one listed, under the line
    w = GrepWidget(demo_store, "search")
    assert "<details" in w.issues.value


def test_a_click_anywhere_on_a_hit_row_opens_it(demo_store: knowtk.Store) -> None:
    """The row's button covers the whole row (id and summary included): the style sheet says so."""
    assert ".knowtk-row .knowtk-pick::after" in STYLE and "inset:0" in STYLE
    w = GrepWidget(demo_store, "vector index", read_only=True)
    third = w.rows.rows[2].key
    w.rows.buttons[third].click()  # what the overlay turns a click on the id or the summary into
    assert w.select.value == third and w.rows.selected == third
    assert w.rows.children[w.rows.children.index(w.rows.boxes[third]) + 1] is w.rows.detail
