"""Overlaid: a map of one entry per record kept as the previous snapshot's under a build's changes."""

from __future__ import annotations

import pytest

from knowtk.snapshot import overlay
from knowtk.snapshot.overlay import Overlaid


class Owner:
    """A snapshot whose table is read on first use (as a stored one's is)."""

    def __init__(self, table: dict) -> None:
        self.table, self.reads = table, 0

    def __getattr__(self, name: str) -> dict:
        if name != "lifecycle":
            raise AttributeError(name)
        self.reads += 1
        self.__dict__["lifecycle"] = self.table
        return self.table


def test_reads_its_base_only_for_a_key_outside_the_top() -> None:
    owner = Owner({"a": "active", "b": "superseded", "c": "active"})
    m: Overlaid[str] = Overlaid.over(owner, "lifecycle")
    m["b"] = "active"
    m.discard("z")  # not in the base: stays absent, and the base is not read for it
    assert m["b"] == "active" and "z" not in m and m.get("z", "none") == "none"
    assert owner.reads == 0 and not m.loaded
    assert m["a"] == "active" and owner.reads == 1 and m.loaded


def test_the_same_items_in_the_order_of_a_dict_changed_in_place() -> None:
    base = {f"r{i}": "active" for i in range(10)}
    m: Overlaid[str] = Overlaid(None, base=base)
    expected = dict(base)
    for key, value in [("r3", "superseded"), ("r11", "active"), ("r5", None), ("r12", "withdrawn"), ("r0", None)]:
        if value is None:
            m.discard(key)
            expected.pop(key, None)
        else:
            m[key] = value
            expected[key] = value
    assert list(m) == list(expected) and list(m.items()) == list(expected.items())
    assert len(m) == len(expected) and m == expected and expected == m
    assert base == {f"r{i}": "active" for i in range(10)}  # the base never changes
    with pytest.raises(KeyError):
        m["r5"]


def test_the_next_build_copies_the_top_and_collapses_past_an_eighth(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overlay, "OVERLAID_MIN", 2)
    base = {f"r{i}": "active" for i in range(40)}
    first: Overlaid[str] = Overlaid(None, base=base)
    first["r1"] = "superseded"
    done = first.finish()
    assert done is first
    snapshot = Owner({})
    snapshot.lifecycle = done  # type: ignore[attr-defined]  # an earlier build's, set on the snapshot
    second: Overlaid[str] = Overlaid.over(snapshot, "lifecycle")
    assert second.top is not first.top and second.shares_base(first)
    for i in range(2, 7):
        second[f"r{i}"] = "withdrawn"
    assert done["r2"] == "active"  # the previous snapshot's map did not move
    merged = second.finish()
    assert type(merged) is dict and merged == {
        **base,
        "r1": "superseded",
        **{f"r{i}": "withdrawn" for i in range(2, 7)},
    }
