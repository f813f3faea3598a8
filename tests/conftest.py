"""Shared fixtures; the builders they hand out live in tests/helpers.py, which tests import."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import knowtk
from tests.helpers import DEMO, StoreBuilder, copy_demo


@pytest.fixture
def builder(tmp_path: Path) -> StoreBuilder:
    return StoreBuilder(tmp_path / "store")


@pytest.fixture
def make_builder(tmp_path: Path) -> Callable[[str], StoreBuilder]:
    return lambda name: StoreBuilder(tmp_path / name)


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """A copy of the bundled demo store in tmp_path, for a test that writes to it or runs a process on it."""
    return copy_demo(tmp_path / "demo")


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[knowtk.Store]:
    """The bundled demo store, opened in place with its state in a temporary folder, shared by a module's tests."""
    with knowtk.open_store(DEMO, state_dir=tmp_path_factory.mktemp("state")) as store:
        yield store


@pytest.fixture
def close_figures() -> Iterator[None]:
    """Close every matplotlib figure a test left open (a module asks for it with ``pytest.mark.usefixtures``)."""
    yield
    import matplotlib.pyplot as plt  # matplotlib only for the modules that plot

    plt.close("all")
