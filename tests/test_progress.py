"""Progress bars: drawn for long work when someone watches, never otherwise, and never changing an answer."""

from __future__ import annotations

import threading

import pytest

from knowtk.scan import progress as progress_module
from knowtk.scan.progress import interactive, progress
from tests.helpers import StoreBuilder


def build(builder: StoreBuilder, n: int) -> None:
    for i in range(n):
        builder.page(f"r{i:02d}", f"Record {i}", "common words here", path=f"f{i % 3}/r{i:02d}.md")


def test_nothing_is_drawn_when_nobody_watches(
    builder: StoreBuilder, tmp_path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KNOWTK_PROGRESS", raising=False)
    monkeypatch.setattr(progress_module, "MIN_ITEMS", 1)
    assert not interactive()  # pytest captures stderr: not a terminal, no kernel
    items = [1, 2, 3]
    assert progress(items, total=3, desc="x") is items
    build(builder, 12)
    assert builder.open(state_dir=tmp_path / "state").grep("common").to_dict()["total"] == 12
    assert capsys.readouterr().err == ""


def test_a_cold_build_draws_reading_and_indexing(
    builder: StoreBuilder, tmp_path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KNOWTK_PROGRESS", "1")
    monkeypatch.setattr(progress_module, "MIN_ITEMS", 10)
    monkeypatch.setattr(progress_module, "DELAY_SECONDS", 0)
    build(builder, 12)
    store = builder.open(state_dir=tmp_path / "state")
    assert store.grep("common").to_dict()["total"] == 12
    err = capsys.readouterr().err
    assert "knowtk: reading" in err and "/12 " in err
    assert "knowtk: indexing" in err
    assert threading.active_count() == 1  # no tqdm monitor thread (it would change how the scan forks)
    builder.page("r00", "Record 0", "one change", path="f0/r00.md")
    assert store.grep("change").to_dict()["total"] == 1
    assert capsys.readouterr().err == ""  # one file: under MIN_ITEMS


def test_short_work_and_an_opt_out_draw_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KNOWTK_PROGRESS", "0")
    monkeypatch.setattr(progress_module, "MIN_ITEMS", 1)
    assert list(progress(range(5), total=5, desc="x")) == [0, 1, 2, 3, 4]
    monkeypatch.setenv("KNOWTK_PROGRESS", "1")
    monkeypatch.setattr(progress_module, "MIN_ITEMS", 100)
    assert list(progress(range(5), total=5, desc="x")) == [0, 1, 2, 3, 4]
    assert capsys.readouterr().err == ""
