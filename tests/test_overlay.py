"""Overlaid: a map of one entry per record kept as the previous snapshot's under a build's changes."""

from __future__ import annotations

import random

import pytest

from knowtk.snapshot import image_parts, overlay
from knowtk.snapshot.overlay import Deferred, Lazy, Overlaid, changes_over


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


def _never() -> list[str]:
    raise AssertionError("a deferred map reads no old keys")


def test_a_probed_lazy_table_is_parsed_only_for_a_key_its_probe_cannot_tell() -> None:
    loads: list[int] = []

    def load() -> dict:
        loads.append(1)
        return {"p1": "r1", "p2": "r2", "odd": "r9"}

    def probe(key: str) -> object:
        return {"p1": "r1", "p2": "r2"}.get(key, overlay.UNKNOWN if key == "odd" else overlay.ABSENT)

    m: Overlaid[str] = Overlaid(None, base=overlay.Lazy(load, probe))
    m["p3"] = "r3"
    m.discard("p2")
    assert m.get("p1") == "r1" and "p2" not in m and "nowhere" not in m and m["p3"] == "r3"
    assert not loads and not m.loaded
    assert m["odd"] == "r9" and loads == [1] and m.loaded
    assert dict(m) == {"p1": "r1", "odd": "r9", "p3": "r3"} and loads == [1]


def test_a_deferred_map_keeps_every_generation_without_reading_its_table() -> None:
    """Ids taken back whole and added per key over a table not parsed: each finished map reads as its
    own generation (a later build changes none), and none parsed the table until one was read."""
    loads: list[int] = []

    def load() -> dict:
        loads.append(1)
        return {"a": ["1", "2"], "b": ["2"], "d": ["4"]}

    first = overlay.GroupedBuilder(overlay.Lazy(load))
    first.take_back("2", _never)  # record 2 changed: its old keys are not known, nor needed
    first.add("c", "2")
    first.add("a", "2")
    one = first.finish()
    second = overlay.GroupedBuilder(one)
    second.take_back("1", _never)
    second.take_back("2", _never)  # changed again: its additions of the first build go too
    second.add("a", "3")
    two = second.finish()
    assert isinstance(one, overlay.Deferred) and isinstance(two, overlay.Deferred) and not loads
    assert dict(one) == {"a": ["1", "2"], "d": ["4"], "c": ["2"]} and list(one) == ["a", "d", "c"]
    assert dict(two) == {"a": ["3"], "d": ["4"]} and "b" not in two and two.get("c") is None
    assert one["a"] == ["1", "2"] and "b" not in one and len(one) == 3 and loads == [1]
    third = overlay.GroupedBuilder(two)  # the table is parsed now: a plain layered map again
    assert not third._deferred
    third.discard("d", "4")
    assert dict(third.finish()) == {"a": ["3"]} and dict(two) == {"a": ["3"], "d": ["4"]}


@pytest.mark.parametrize("seed", range(20))
def test_a_deferred_map_s_patch_over_its_table_makes_what_flat_makes(seed: int) -> None:
    """A patch written over a stored key -> ids table it never read (ids dropped from every key, ids added per
    key: ``changes_over``) and applied to that table when it is parsed gives exactly ``Deferred.flat``, key
    order included."""
    rng = random.Random(seed)
    ids = [f"r{i}" for i in range(30)]
    table = {f"k{i}": sorted(rng.sample(ids, rng.randint(1, 4))) for i in range(15)}
    owner = type("Owner", (), {})()
    owner.names = table  # type: ignore[attr-defined]
    lazy: Lazy[list[str]] = Lazy(lambda: dict(table), None, (owner, "names"))
    void = set(rng.sample(ids, rng.randint(0, 6)))
    added: dict[str, list[str]] = {}
    for rid in rng.sample(sorted(void), rng.randint(0, len(void))):  # a changed record's new keys, old or new
        for key in rng.sample([*table, "new1", "new2"], rng.randint(1, 3)):
            added.setdefault(key, []).append(rid)
    deferred = Deferred(lazy, frozenset(void), {k: sorted(v) for k, v in added.items()})
    over = changes_over(deferred, owner, "names")
    assert over is not None and not lazy.loaded  # told without reading the table
    patched = {k: list(v) for k, v in table.items()}
    image_parts._void_and_add(patched, over.void, over.add)
    expected = deferred.flat()
    assert patched == expected and list(patched) == list(expected)
    assert changes_over(deferred, object(), "names") is None  # over another table: only a comparison tells
