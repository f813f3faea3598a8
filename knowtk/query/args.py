"""Argument specs for the tools: names, defaults, and checks that say what is allowed.

A tool's arguments arrive camelCase through ``Store.call`` and snake_case
through the Python methods; both go through ``validate``, so both refuse the
same inputs with the same ``InvalidArgument`` (naming the argument and its
allowed values).

Every check carries a ``schema`` attribute: the JSON Schema fragment of the
values it accepts (``knowtk.query.schema`` turns a tool's params into its
``inputSchema``). The factories get it from ``_schema`` below, so the schema is
built from the same arguments (lengths, ranges, allowed values) as the check.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from knowtk.errors import InvalidArgument
from knowtk.model.datevalues import parse_bound, shown
from knowtk.model.shapes import shape

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

__all__ = [
    "BOUND_PATTERN",
    "FOLDERS",
    "MAX_PAGE_OFFSET",
    "Param",
    "boolean",
    "bound",
    "choice",
    "integer",
    "mapping",
    "plain_text",
    "sha256",
    "snake",
    "spelled_for",
    "strings",
    "text",
    "time_zone",
    "validate",
    "with_schema",
]

Check = Callable[[str, Any], Any]
Schema = dict[str, Any]
# a real date, or a timestamp with seconds and an explicit offset (datevalues checks the calendar too)
# scope: folder prefixes, checked against the snapshot's folders when the query runs
FOLDERS: Schema = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
BOUND_PATTERN = r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2}))?$"


def with_schema(check: Check, schema: Schema) -> Check:
    """``check``, carrying the JSON Schema fragment of the values it accepts."""
    setattr(check, "schema", schema)  # noqa: B010 - a function attribute mypy cannot see
    return check


def _schema(describe: Callable[..., Schema]) -> Callable[[Callable[..., Check]], Callable[..., Check]]:
    """Decorate a check factory: each check it makes carries ``describe(*same arguments)`` as its schema."""

    def wrap(factory: Callable[..., Check]) -> Callable[..., Check]:
        @functools.wraps(factory)
        def make(*args: Any, **kwargs: Any) -> Check:
            return with_schema(factory(*args, **kwargs), describe(*args, **kwargs))

        return make

    return wrap


def _string_items(allowed: tuple[str, ...] | None) -> Schema:
    item: Schema = {"type": "string", "minLength": 1}
    if allowed is not None:
        item["enum"] = list(allowed)
    return item


_ZONE_KEY = re.compile(r"(?=.{1,64}$)[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*", re.S)


#: The largest ``offset`` of the paged tools other than grep (whose contract bounds it to 500): far past any
#: store's rows, so a page past the end answers empty, and far inside SQLite's 64-bit integers.
MAX_PAGE_OFFSET = 1_000_000_000


def snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


@shape(frozen=True)
class Param:
    name: str  # as in the seeds (camelCase)
    check: Check
    default: Any = None
    required: bool = False
    doc: str = ""  # its description, for a tool that knowtk.query.schema.ARGUMENT_DOCS does not cover

    @property
    def py(self) -> str:
        return snake(self.name)


def validate(tool: str, params: tuple[Param, ...], args: Mapping[str, Any] | None, *, python: bool = False) -> dict:
    """Checked arguments keyed by their snake_case names, defaults filled in."""
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise InvalidArgument("args", f"{tool} takes a mapping of arguments, not {type(args).__name__}")
    by_name = {(p.py if python else p.name): p for p in params}
    unknown = [k for k in args if k not in by_name]
    if unknown:
        shown = unknown[0] if isinstance(unknown[0], str) and unknown[0] else repr(unknown[0])
        raise InvalidArgument(shown, f"{tool} has no such argument", allowed=sorted(by_name))
    for key, value in args.items():  # before any check runs: no argument of any tool holds non-text
        plain_text(key, value)
    out = {}
    for key, p in by_name.items():
        value = args.get(key)
        if value is None:
            if p.required:
                raise InvalidArgument(key, f"{tool} requires it")
            out[p.py] = p.default
        else:
            out[p.py] = p.check(key, value)
    return out


@contextlib.contextmanager
def spelled_for(params: tuple[Param, ...], *, python: bool) -> Iterator[None]:
    """Refusals raised while a tool runs (a check across arguments) name the argument as the caller spelled it:
    in snake_case for a Python call, as ``validate`` does; a field of a mapping keeps its path (``record.kind``)."""
    try:
        yield
    except InvalidArgument as exc:
        head, dot, rest = exc.argument.partition(".")
        spelled = {p.name: p.py for p in params}.get(head, head) if python else head
        if spelled == head:
            raise
        raise exc.renamed(spelled + dot + rest) from None


def plain_text(name: str, value: Any, *, _depth: int = 0) -> None:
    """Refuse a string (or one inside a list) that is not text: a lone surrogate, or a NUL, which no word holds.

    A lone surrogate cannot be encoded as UTF-8, so SQLite and the files could never hold it.
    """
    if isinstance(value, str):
        if "\0" in value:
            raise InvalidArgument(name, "holds a NUL character", allowed="text without NUL characters", value=value)
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidArgument(
                    name,
                    f"holds a lone surrogate ({value[exc.start]!r} at {exc.start})",
                    allowed="Unicode text (no unpaired surrogates)",
                    value=value,
                ) from None
    elif isinstance(value, list | tuple) and _depth < 2:
        for item in value:
            plain_text(name, item, _depth=_depth + 1)


@_schema(lambda max_len, *, min_len=1: {"type": "string", "minLength": min_len, "maxLength": max_len})
def text(max_len: int, *, min_len: int = 1) -> Check:
    def check(name: str, value: Any) -> str:
        if not isinstance(value, str):
            raise InvalidArgument(name, f"must be a string, not {type(value).__name__}", value=value)
        n = len(value.encode("utf-16-le")) // 2
        if n < min_len or n > max_len:
            raise InvalidArgument(name, f"has {n} characters", allowed=f"{min_len} to {max_len} characters")
        return value

    return check


@_schema(lambda *allowed: {"type": "string", "enum": list(allowed)})
def choice(*allowed: str) -> Check:
    def check(name: str, value: Any) -> str:
        if value not in allowed:
            raise InvalidArgument(name, f"{shown(value)} is not a known value", allowed=allowed, value=value)
        return str(value)

    return check


@_schema(lambda low, high: {"type": "integer", "minimum": low, "maximum": high})
def integer(low: int, high: int) -> Check:
    """An integer from ``low`` to ``high``: every integer argument has both bounds, so none reaches SQLite's
    64 bits, and the message can say what is allowed."""

    def check(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            message = f"must be an integer, not {shown(value)}"
            raise InvalidArgument(name, message, allowed=f"{low} to {high}", value=value)
        if value < low or value > high:
            size = value if abs(value) < 10**18 else f"an integer of {value.bit_length()} bits"  # str() may refuse it
            raise InvalidArgument(name, f"{size} is out of range", allowed=f"{low} to {high}", value=value)
        return value

    return check


@functools.partial(with_schema, schema={"type": "boolean"})
def boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(name, f"must be true or false, not {shown(value)}", allowed=(True, False), value=value)
    return value


@_schema(
    lambda *, allowed=None, max_items=64: {
        "anyOf": [
            _string_items(allowed),
            {"type": "array", "items": _string_items(allowed), "maxItems": max_items},
        ]
    }
)
def strings(*, allowed: tuple[str, ...] | None = None, max_items: int = 64) -> Check:
    """A string or a list of strings, returned as a tuple."""

    def check(name: str, value: Any) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not all(isinstance(v, str) and v for v in items):
            raise InvalidArgument(name, "must be a non-empty string or a list of them", value=value)
        if len(items) > max_items:
            raise InvalidArgument(name, f"has {len(items)} items", allowed=f"at most {max_items}")
        if allowed is not None:
            for v in items:
                if v not in allowed:
                    raise InvalidArgument(name, f"{shown(v)} is not a known value", allowed=allowed, value=value)
        return tuple(dict.fromkeys(items))

    return check


@_schema(lambda *, upper: {"type": "string", "pattern": BOUND_PATTERN})
def bound(*, upper: bool) -> Check:
    def check(name: str, value: Any) -> Any:
        return parse_bound(name, value, upper=upper)

    return check


@functools.partial(with_schema, schema={"type": "string", "minLength": 1, "examples": ["UTC", "Europe/Berlin"]})
def time_zone(name: str, value: Any) -> ZoneInfo:
    # an IANA key is a few path-like words; anything else (a folder like "Europe", a 300-character
    # name, "../x") never reaches the tz database's files
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones  # the dated tools' alone

    if isinstance(value, str) and _ZONE_KEY.fullmatch(value):
        try:
            return ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    examples = ("UTC", "Europe/Berlin", "America/New_York", f"… {len(available_timezones())} IANA names")
    raise InvalidArgument(name, f"{shown(value)} is not an IANA time zone", allowed=examples, value=value)


_SHA256 = re.compile(r"[0-9a-f]{64}")


@functools.partial(with_schema, schema={"type": "string", "pattern": "^[0-9a-f]{64}$"})
def sha256(name: str, value: Any) -> str:
    """A SHA-256 as 64 lowercase hex digits."""
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise InvalidArgument(name, "must be the 64 lowercase hex digits of a SHA-256", value=value)
    return value


@functools.partial(with_schema, schema={"type": "object"})
def mapping(name: str, value: Any) -> dict[str, Any]:
    """A mapping of field names to values (a record's fields)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and k for k in value):
        raise InvalidArgument(name, "must be a mapping of field names to values", value=value)
    return dict(value)
