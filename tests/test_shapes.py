"""``knowtk.model.shapes.shape`` makes what ``dataclasses.dataclass`` makes, for the options knowtk uses.

Each class below is made both ways from the same body; their objects must construct, compare, hash, print
and refuse changes alike (the dataclasses module is the reference, not imported by knowtk's grep path).
"""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any, ClassVar

import pytest

from knowtk.model import shapes


def _both(options: dict[str, Any], body: Callable_ish) -> tuple[type, type]:
    return dataclasses.dataclass(**options)(body()), shapes.shape(**options)(body())


Callable_ish = Any


def _plain() -> type:
    class Plain:
        """A doc."""

        a: int
        b: str = "x"
        c: tuple[str, ...] = ()
        kind: ClassVar[str] = "plain"

    return Plain


def _factories(field: Any) -> type:
    class WithFactories:
        a: int
        items: list[int] = field(default_factory=list)
        seen: dict[str, int] = field(default_factory=dict)
        hidden: int | None = field(default=None, init=False, repr=False)
        loose: int = field(default=3, compare=False)

    return WithFactories


OPTIONS = [{}, {"frozen": True}, {"slots": True}, {"frozen": True, "slots": True}]


@pytest.mark.parametrize("options", OPTIONS)
def test_a_shaped_class_behaves_as_the_dataclass(options: dict[str, Any]) -> None:
    ref, got = _both(options, _plain)
    for args, kwargs in [((1,), {}), ((1, "y"), {}), ((), {"a": 2, "c": ("p",)}), ((1, "x", ("q", "r")), {})]:
        r, g = ref(*args, **kwargs), got(*args, **kwargs)
        assert repr(r) == repr(g)
        assert (r.a, r.b, r.c) == (g.a, g.b, g.c)
        assert g == got(*args, **kwargs) and g != got(99) and g != r  # (another class: not equal, as dataclasses)
        assert (g.__eq__(object())) is NotImplemented
        if options.get("frozen"):
            assert hash(g) == hash(got(*args, **kwargs))
            for obj, error in ((r, dataclasses.FrozenInstanceError), (g, shapes.FrozenInstanceError)):
                with pytest.raises(error):
                    obj.a = 5
                with pytest.raises(AttributeError):
                    del obj.a
        else:
            with pytest.raises(TypeError):
                hash(g)
            with pytest.raises(TypeError):
                hash(r)
            g.a = 7
            assert g.a == 7
    assert hasattr(got(1), "__dict__") is hasattr(ref(1), "__dict__")  # slots or not
    assert got.kind == "plain" and got.__doc__ == "A doc." and got.__name__ == ref.__name__ == "Plain"
    assert got.__qualname__ == ref.__qualname__ and got.__module__ == ref.__module__
    assert got.__match_args__ == ref.__match_args__
    with pytest.raises(TypeError):
        got()  # a field without a default is required
    if not options.get("slots"):
        assert got.b == ref.b == "x"  # a default stays on the class


@pytest.mark.parametrize("options", OPTIONS)
def test_fields_with_options_behave_as_the_dataclass_s(options: dict[str, Any]) -> None:
    ref = dataclasses.dataclass(**options)(_factories(dataclasses.field))
    got = shapes.shape(**options)(_factories(shapes.field))
    r1, r2, g1, g2 = ref(1), ref(1), got(1), got(1)
    assert repr(r1) == repr(g1)
    assert g1.items == [] and g1.items is not g2.items and g1.seen == {} and g1.hidden is None
    assert (r1 == ref(1, loose=9)) is (g1 == got(1, loose=9)) is True  # a field left out of comparisons
    assert (g1 == got(2)) is False
    with pytest.raises(TypeError):
        got(1, hidden=3)  # init=False: not a parameter
    assert shapes.replace(g1, a=4) == got(4) and dataclasses.replace(r1, a=4) == ref(4)
    assert r2 == r1 and g2 == g1


def test_methods_the_class_writes_are_kept_and_objects_pickle() -> None:
    @shapes.shape(frozen=True, slots=True)
    class Own:
        a: int

        def __repr__(self) -> str:
            return "mine"

        def __hash__(self) -> int:
            return 7

    assert repr(Own(1)) == "mine" and hash(Own(1)) == 7 and Own(1) == Own(1)
    assert pickle.loads(pickle.dumps(_Pickled(1, "b"))) == _Pickled(1, "b")


@shapes.shape(frozen=True, slots=True)
class _Pickled:
    a: int
    b: str
