"""Where a notebook's store is: the STORE variable, then the environment variable, then the checkout's demo."""

from __future__ import annotations

from pathlib import Path

import pytest

import knowtk
from knowtk.notebook.places import find_path, scratch_copy
from tests.helpers import DEMO, REPO, markdown_digest


def test_given_then_environment_then_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KNOWTK_STORE", raising=False)
    assert find_path(start=REPO / "notebooks") == DEMO.resolve()
    assert find_path(tmp_path, start=REPO) == tmp_path.resolve()
    monkeypatch.setenv("KNOWTK_STORE", str(tmp_path))
    assert find_path(start=REPO) == tmp_path.resolve()
    assert find_path(DEMO, start=REPO) == DEMO.resolve()  # the variable wins over the environment


def test_nothing_found_says_what_to_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KNOWTK_STORE", raising=False)
    with pytest.raises(knowtk.StoreUnavailable, match="KNOWTK_STORE"):
        find_path(start=tmp_path)
    assert find_path(start=tmp_path, required=False) is None
    with pytest.raises(knowtk.StoreUnavailable, match="does not exist"):
        find_path(tmp_path / "nope")
    monkeypatch.setenv("KNOWTK_PEPS", str(tmp_path / "nope"))
    assert find_path(env="KNOWTK_PEPS", default="shared/corpora/peps", start=tmp_path, required=False) is None


def test_a_scratch_copy_leaves_the_store_alone(tmp_path: Path) -> None:
    before = markdown_digest(DEMO)
    work = scratch_copy(DEMO)
    assert work != DEMO and markdown_digest(work) == before and not (work / ".knowtk").exists()
    with knowtk.open_store(work) as store:
        rec = store.record("dec-2026-021")["record"]
        store.withdraw("dec-2026-021", reason="test", expected_sha256=rec["sha256"])
    assert markdown_digest(DEMO) == before and markdown_digest(work) != before
