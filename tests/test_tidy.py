"""Frames read well in a notebook: text left-aligned, ids on one line, floats rounded and hashes shortened on
the page only (the frame's values are unchanged), and a frame derived from one keeps the look."""

from __future__ import annotations

import re

import pandas as pd

import knowtk
from knowtk.tidy import TidyFrame, tidy_html


def test_a_result_frame_is_tidy_and_keeps_its_values(demo_store: knowtk.Store) -> None:
    frame = demo_store.grep("vector index").to_frame()
    assert isinstance(frame, TidyFrame) and isinstance(frame, pd.DataFrame)
    picked = frame[["id", "score", "sha256", "title"]]
    assert isinstance(picked, TidyFrame) and isinstance(frame.head(2), TidyFrame)
    page = picked._repr_html_()
    score, sha = frame["score"].iloc[0], frame["sha256"].iloc[0]
    assert score != round(score, 3)  # the frame keeps every digit
    assert f">{score:.3f}<" in page and f"{score:.6f}" not in page  # the page shows three
    assert f"<span title='{sha}'>{sha[:12]}…</span>" in page  # 12 digits shown, the whole hash on hover
    assert re.search(r"\.col0 \{\s*text-align: left;", page) and re.search(r"\.col0 \{\s*white-space: nowrap;", page)
    assert not re.search(r"\.col1 \{\s*text-align: left", page)  # the score stays right-aligned, as numbers are
    assert (
        "<b>" in demo_store.grep("vector index")._repr_html_()
        and "text-align: left" in demo_store.grep("vector index")._repr_html_()
    )


def test_text_is_escaped_missing_values_shown_and_long_frames_cut() -> None:
    frame = TidyFrame({"id": ["a<b>", None], "sha256_after": ["0" * 64, None], "x": [1.23456, None]})
    page = tidy_html(frame)
    assert "a&lt;b&gt;" in page and "<b>" not in page
    assert page.count("—") >= 3 and ">1.235<" in page
    long = TidyFrame({"id": [f"r{i}" for i in range(100)]})
    page = long._repr_html_()
    assert ">r59<" in page and ">r60<" not in page and "40 more rows (100 in all" in page
