"""Record classes made without the dataclasses module: what a new process pays for its types.

``shape`` gives a class ``__init__``, ``__repr__`` and ``__eq__`` (and ``__hash__`` when frozen) from its
annotated fields, as ``dataclasses.dataclass`` does for the options knowtk's classes use: ``frozen``,
``slots``, defaults and ``field(default=..., default_factory=..., init=..., repr=..., compare=...)``. Its
methods are made by one ``exec`` per class; ``dataclasses`` imports ``inspect`` and makes each method
apart, which cost every new process ~25 ms for the 26 classes a ``knowtk grep`` defines.

A shaped class is not a dataclass (``dataclasses.fields`` and ``replace`` do not take it): ``replace``
here makes a copy with some fields changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["FrozenInstanceError", "asdict", "field", "fields", "replace", "shape"]

T = TypeVar("T")
_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """A field of a frozen shaped object was set or deleted."""


class _Field:
    __slots__ = ("compare", "default", "factory", "init", "name", "repr")

    def __init__(self, default: Any, factory: Any, init: bool, repr: bool, compare: bool) -> None:
        self.default, self.factory, self.init, self.repr, self.compare = default, factory, init, repr, compare
        self.name = ""


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | Any = _MISSING,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
) -> Any:
    """A field's options, as ``dataclasses.field`` takes them (those knowtk uses)."""
    return _Field(default, default_factory, init, repr, compare)


@overload
def shape(cls: type[T], /) -> type[T]: ...
@overload
def shape(*, frozen: bool = False, slots: bool = False) -> Callable[[type[T]], type[T]]: ...
@dataclass_transform(field_specifiers=(field,))
def shape(cls: type[T] | None = None, /, *, frozen: bool = False, slots: bool = False) -> Any:
    """Make ``cls`` a record class of its annotated fields (``@shape`` or ``@shape(frozen=True, slots=True)``)."""

    def wrap(cls: type[T]) -> type[T]:
        return _make(cls, frozen, slots)

    return wrap if cls is None else wrap(cls)


def replace(obj: T, **changes: Any) -> T:
    """A copy of shaped ``obj`` with ``changes`` (fields made by ``__init__`` only, as ``dataclasses.replace``)."""
    fields: tuple[_Field, ...] = type(obj).__shape_fields__  # type: ignore[attr-defined]
    args = {f.name: getattr(obj, f.name) for f in fields if f.init}
    return type(obj)(**{**args, **changes})


def fields(cls_or_obj: Any) -> tuple[Any, ...]:
    """The fields of a shaped class or object (each with ``name``), in order, as ``dataclasses.fields``."""
    cls: Any = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    found: tuple[_Field, ...] = cls.__shape_fields__
    return found


def asdict(obj: Any) -> Any:
    """A shaped object as a dict of its fields, nested shaped objects, lists, tuples and dicts copied through,
    as ``dataclasses.asdict``."""
    if hasattr(type(obj), "__shape_fields__"):
        return {f.name: asdict(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, list | tuple):
        return type(obj)(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((asdict(k), asdict(v)) for k, v in obj.items())
    return obj


def _fields_of(cls: type) -> list[_Field]:
    """The fields of ``cls``: its bases' first (a shaped base's), then its own annotations in order."""
    found: dict[str, _Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in base.__dict__.get("__shape_fields__", ()):
            found[f.name] = f
    # the class's own annotations, as written (strings: ``from __future__ import annotations``), not evaluated
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if isinstance(annotation, str) and annotation.startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, _Field) else _Field(value, _MISSING, True, True, True)
        f.name = name
        found[name] = f
    return list(found.values())


def _make(cls: type[T], frozen: bool, slots: bool) -> type[T]:
    fields = _fields_of(cls)
    env: dict[str, Any] = {"_MISSING": _MISSING, "FrozenInstanceError": FrozenInstanceError}
    source = _methods(cls, fields, frozen, env)
    namespace: dict[str, Any] = {}
    exec(source, env, namespace)  # (the source is made here from the class's own field names)
    if slots:
        body = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__")}
        for f in fields:
            body.pop(f.name, None)
        body["__slots__"] = tuple(f.name for f in fields if f.name not in _slots_of_bases(cls))
        cls = _slotted(cls, body, tuple(f.name for f in fields) if frozen else None)
    else:
        for f in fields:  # a default stays on the class (as dataclasses leaves it); a field() does not
            if isinstance(cls.__dict__.get(f.name), _Field):
                if f.default is _MISSING:
                    delattr(cls, f.name)
                else:
                    setattr(cls, f.name, f.default)
    own = cls.__dict__
    # a __hash__ the class wrote itself (not the None Python puts beside an __eq__ it wrote) is kept, as dataclasses do
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    for name, fn in namespace.items():
        if name not in own or (name == "__hash__" and not explicit_hash):  # a method the class wrote is kept
            fn.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, fn)
    if not frozen and not explicit_hash:
        cls.__hash__ = None  # type: ignore[assignment]  # (an eq class that can change is unhashable, as a dataclass)
    cls.__shape_fields__ = tuple(fields)  # type: ignore[attr-defined]
    setattr(cls, "__match_args__", tuple(f.name for f in fields if f.init))  # noqa: B010
    return cls


def _slotted(cls: Any, body: dict[str, Any], frozen_names: tuple[str, ...] | None) -> Any:
    """``cls`` made again with ``__slots__`` (its name kept); a frozen one pickles by its fields' values, set
    back past its ``__setattr__`` (as dataclasses do)."""
    qualname = cls.__qualname__
    cls = type(cls)(cls.__name__, cls.__bases__, body)
    cls.__qualname__ = qualname
    if frozen_names is not None:
        names = frozen_names

        def getstate(self: Any) -> list[Any]:
            return [getattr(self, n) for n in names]

        def setstate(self: Any, state: list[Any]) -> None:
            for n, v in zip(names, state, strict=True):
                object.__setattr__(self, n, v)

        cls.__getstate__, cls.__setstate__ = getstate, setstate
    return cls


def _slots_of_bases(cls: type) -> set[str]:
    out: set[str] = set()
    for base in cls.__mro__[1:]:
        out.update(base.__dict__.get("__slots__", ()))
    return out


def _methods(cls: type, fields: list[_Field], frozen: bool, env: dict[str, Any]) -> str:
    """The source of ``__init__``, ``__repr__``, ``__eq__`` (and ``__setattr__``, ``__delattr__``, ``__hash__``
    when frozen) for these fields."""
    params, body = [], []
    for f in fields:
        if f.init:
            if f.factory is not _MISSING:
                env[f"_factory_{f.name}"] = f.factory
                params.append(f"{f.name}=_MISSING")
                value = f"_factory_{f.name}() if {f.name} is _MISSING else {f.name}"
            elif f.default is not _MISSING:
                env[f"_default_{f.name}"] = f.default
                params.append(f"{f.name}=_default_{f.name}")
                value = f.name
            else:
                params.append(f.name)
                value = f.name
        elif f.factory is not _MISSING:
            env[f"_factory_{f.name}"] = f.factory
            value = f"_factory_{f.name}()"
        elif f.default is not _MISSING:
            env[f"_default_{f.name}"] = f.default
            value = f"_default_{f.name}"
        else:
            continue
        body.append(f"    _set(self, {f.name!r}, {value})" if frozen else f"    self.{f.name} = {value}")
    setter = "    _set = object.__setattr__\n" if frozen else ""
    lines = [f"def __init__(self, {', '.join(params)}):" if params else "def __init__(self):", setter.rstrip("\n")]
    lines = [line for line in lines if line] + (body or ["    pass"])
    shown = [f for f in fields if f.repr]
    parts = ", ".join(f"{f.name}={{self.{f.name}!r}}" for f in shown)
    lines += ["def __repr__(self):", f"    return f'{{self.__class__.__qualname__}}({parts})'"]
    compared = [f"self.{f.name}" for f in fields if f.compare]
    others = [f"other.{f.name}" for f in fields if f.compare]
    mine, theirs = (f"({', '.join(compared)},)", f"({', '.join(others)},)") if compared else ("()", "()")
    lines += [
        "def __eq__(self, other):",
        "    if other.__class__ is self.__class__:",
        f"        return {mine} == {theirs}",
        "    return NotImplemented",
    ]
    if frozen:
        lines += [
            "def __setattr__(self, name, value):",
            "    raise FrozenInstanceError(f'cannot assign to field {name!r}')",
            "def __delattr__(self, name):",
            "    raise FrozenInstanceError(f'cannot delete field {name!r}')",
            "def __hash__(self):",
            f"    return hash({mine})",
        ]
    return "\n".join(lines) + "\n"
