"""Shared fixtures; the builders they hand out live in tests/helpers.py, which tests import."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import StoreBuilder


@pytest.fixture
def builder(tmp_path: Path) -> StoreBuilder:
    return StoreBuilder(tmp_path / "store")


@pytest.fixture
def make_builder(tmp_path: Path) -> Callable[[str], StoreBuilder]:
    return lambda name: StoreBuilder(tmp_path / name)
