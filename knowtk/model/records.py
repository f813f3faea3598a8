"""One record file: frontmatter split, YAML load, and the per-file validity rules of STORE.md §1.

``load_frontmatter`` turns bytes into ``(frontmatter mapping, body, body_line)``
or a ``FileProblem``; ``build_record`` turns a mapping into a ``Record`` plus
the issues it carries. The two halves are separate so that the scan can cache
the (JSON-safe) mapping and rebuild records without parsing YAML again.
Rules that need the whole store (duplicates, dependencies, supersession
chains, safeguards) live in ``knowtk.snapshot``.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from typing import TYPE_CHECKING, Any, Protocol

from knowtk.model.datevalues import DateValue, parse_date_value
from knowtk.model.on_demand import on_demand
from knowtk.model.plainyaml import plain_yaml
from knowtk.model.profile import DERIVED_KEY, Source
from knowtk.model.shapes import field, shape

if TYPE_CHECKING:
    from types import ModuleType

__all__ = [
    "DATE_FIELDS",
    "ID_PATTERN",
    "Evidence",
    "FileProblem",
    "FrontmatterSource",
    "Issue",
    "Record",
    "body_of",
    "build_record",
    "load_frontmatter",
    "parse_yaml",
    "read_regular",
    "read_source",
]

ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
KINDS = ("page", "claim", "relationship")
STATUSES = ("active", "superseded", "withdrawn")
DATE_FIELDS = ("occurred_at", "recorded_at", "updated_at", "due_at")
ORIGINS = ("observed", "stated", "inferred", "imported")
_FENCE = re.compile(r"^---[ \t]*\r?$", re.M)
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_PYYAML: tuple[ModuleType, type, tuple[type[Exception], ...]] | None = None


def _pyyaml() -> tuple[ModuleType, type, tuple[type[Exception], ...]]:
    """PyYAML, the loader and the errors it raises on a bad text: imported at the first text outside the plain
    subset (``knowtk.model.plainyaml``: a process that reads only plain YAML never imports it)."""
    global _PYYAML
    if _PYYAML is None:
        import yaml

        class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
            """Safe loader that leaves dates as text, so each one is validated on its own."""

        _Loader.yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP_TAG]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }
        # an explicit !!timestamp stays text too: the date rules judge it, and a bad one costs only that date
        _Loader.add_constructor(_TIMESTAMP_TAG, lambda loader, node: loader.construct_scalar(node))
        # what PyYAML's constructors raise on a tagged value they cannot build (!!int x, !!bool maybe, !!int '-',
        # deep nesting): the file's fault, never a reason to fail the query
        errors = (yaml.YAMLError, ValueError, TypeError, AttributeError, LookupError, ArithmeticError, RecursionError)
        _PYYAML = (yaml, _Loader, errors)
    return _PYYAML


MAX_DEPTH = 64  # nesting of the frontmatter's mappings and lists
# values the frontmatter may hold once aliases are expanded: what its text could spell out without
# aliases, plus room; an alias bomb (a kilobyte that expands to billions) is refused within this
MIN_VALUES = 10_000
MAX_INT_BITS = 14_000  # about 4,200 decimal digits: below the limit of Python's int <-> str conversion
MAX_REVISION = 2**63 - 1  # SQLite's largest integer


@shape(frozen=True, slots=True)
class Issue:
    """A coverage issue: something in the store that a query could not take at face value."""

    path: str | None
    id: str | None
    code: str
    message: str

    def to_json(self) -> dict[str, str | None]:
        return {"path": self.path, "id": self.id, "code": self.code, "message": self.message}


@shape(frozen=True, slots=True)
class FileProblem:
    """The file cannot be a record at all (encoding or frontmatter)."""

    code: str
    message: str


@shape(frozen=True, slots=True)
class Evidence:
    path: str
    line_start: int | None
    line_end: int | None
    quote: str | None


class FrontmatterSource(Protocol):
    """Where a record whose frontmatter was let go (``Record.release_frontmatter``) reads it back."""

    def frontmatter_of(self, record: Record) -> dict[str, Any]: ...


@shape(slots=True)
class Record:
    id: str
    path: str  # relative to the store root, with "/"
    sha256: str
    kind: str
    type: str
    title: str | None
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    status: str  # as authored: active | superseded | withdrawn
    superseded_by: str | None
    revision: int
    summary: str | None
    dates: dict[str, DateValue]  # DATE_FIELDS present and valid (meetings: fields.occurred_at)
    expires_at: DateValue | None
    entities: tuple[str, ...]
    owner: str | None
    depends_on: tuple[str, ...]
    source: str | None
    source_event: bool
    from_id: str | None
    to_id: str | None
    relation: str | None
    origin: str | None
    author: str | None
    evidence: tuple[Evidence, ...]
    affected_paths: tuple[str, ...]
    category: str | None
    reasoning: Any
    alternatives: Any
    fields: dict[str, Any]
    # the frontmatter mapping, or where it is read back from once let go (the record's other fields hold
    # what queries read; the mapping itself is ~650 bytes a record, 650 MB at 1M records). Not compared:
    # the same sha256 is the same frontmatter.
    frontmatter_or_source: dict[str, Any] | FrontmatterSource = field(repr=False, compare=False)
    body_line: int  # one-based file line of the body's first line
    references: tuple[str, ...] = field(default=())  # every structured id this record needs

    @property
    def frontmatter(self) -> dict[str, Any]:
        """The frontmatter mapping as the file gives it (read back when it was let go)."""
        held = self.frontmatter_or_source
        return held if isinstance(held, dict) else held.frontmatter_of(self)

    def release_frontmatter(self, source: FrontmatterSource) -> None:
        """Let the frontmatter mapping go: ``source`` reads it back when asked. A record a profile read keeps
        it (its derivation, which ``profile`` and ``derived_lines`` read, travels in the mapping)."""
        held = self.frontmatter_or_source
        if isinstance(held, dict) and DERIVED_KEY not in held:
            self.frontmatter_or_source = source

    @property
    def scope_path(self) -> str:
        return self.path

    # what a profile derived (knowtk.model.profile) travels in the frontmatter mapping, under DERIVED_KEY
    @property
    def _derivation(self) -> dict[str, Any]:
        held = self.frontmatter_or_source
        if not isinstance(held, dict):  # let go: it had no derivation (release_frontmatter)
            return {}
        found = held.get(DERIVED_KEY)
        return found if isinstance(found, dict) else {}

    @property
    def derived(self) -> tuple[str, ...]:
        """The keys its profile derived (``fields.x`` for one under fields); () under knowtk's own format."""
        return tuple(self._derivation.get("keys", ()))

    @property
    def profile(self) -> str | None:
        """The profile that read the file; None under knowtk's own format."""
        return self._derivation.get("profile")

    @property
    def derived_lines(self) -> dict[str, int]:
        """Derived key -> the file line it was read from."""
        lines = self._derivation.get("lines")
        return {str(k): v for k, v in lines.items() if isinstance(v, int)} if isinstance(lines, dict) else {}

    @property
    def written(self) -> dict[str, Any]:
        """The frontmatter as the person wrote it (without what a profile derived)."""
        frontmatter = self.frontmatter
        if DERIVED_KEY not in frontmatter:
            return frontmatter
        written = self._derivation.get("frontmatter")
        return written if isinstance(written, dict) else {}


def _split(data: bytes) -> tuple[str, str, str, int] | FileProblem:
    """(frontmatter YAML, body, whole text, body_line) of a record file, or why it has none."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return FileProblem("not_utf8", f"not UTF-8 ({exc.reason} at byte {exc.start})")
    if text.startswith("\ufeff"):
        text = text[1:]
    first_end = text.find("\n")
    if first_end < 0 or text[:first_end].rstrip("\r \t") != "---":
        return FileProblem("frontmatter_missing", "no YAML frontmatter: the file must start with a '---' line")
    fence = _FENCE.search(text, first_end + 1)
    if fence is None:
        return FileProblem("frontmatter_unclosed", "the frontmatter has no closing '---' line")
    body_start = min(fence.end() + 1, len(text))
    body_line = text.count("\n", 0, fence.start()) + 2
    return text[first_end + 1 : fence.start()], text[body_start:], text, body_line


# open without waiting (a FIFO would block an ordinary open), without following a final symlink,
# and without making a terminal the controlling one; the flags a platform lacks are left out
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
_OPEN_FLAGS |= getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_READ_CHUNK = 1 << 20


def _open_for_reading(path: str) -> int:
    return os.open(path, _OPEN_FLAGS)


def read_regular(path: str, max_bytes: int) -> bytes | FileProblem | None:
    """The bytes of the regular file at ``path``, or why they cannot be read; None when it is gone.

    Only a regular file is read: a FIFO, socket or device is reported, never waited on, and a
    symlink is not followed. At most ``max_bytes`` are read, whatever ``stat`` said before.
    """
    try:
        fd = on_demand(_open_for_reading, path)  # (a file a view of the past writes when first read)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return FileProblem("symlink_skipped", "the file became a symlink, which is not followed")
        if exc.errno == errno.ENXIO:  # a socket
            return FileProblem("not_regular_file", "not a regular file (a socket); not opened")
        if exc.errno == errno.ENAMETOOLONG:
            return FileProblem("path_too_long", "the path is longer than the system allows; not read")
        return FileProblem("unreadable", f"cannot read the file ({exc.strerror})")
    except ValueError:  # a NUL in the path
        return FileProblem("unreadable", "the path holds a NUL character")
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return FileProblem("not_regular_file", f"not a regular file ({_kind_of(mode)}); not read")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(_READ_CHUNK, max_bytes + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        return FileProblem("file_too_large", f"over the {max_bytes:,}-byte limit for a record; read no further")
    except OSError as exc:
        return FileProblem("unreadable", f"cannot read the file ({exc.strerror})")
    finally:
        os.close(fd)


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def load_frontmatter(data: bytes) -> tuple[dict[str, Any], str, int] | FileProblem:
    """(frontmatter, body, body_line) of a record file, or why it is not one."""
    split = _split(data)
    if isinstance(split, FileProblem):
        return split
    yaml_text, body, _, body_line = split
    meta = parse_yaml(yaml_text)
    if isinstance(meta, FileProblem):
        return meta
    if not isinstance(meta, dict):
        return FileProblem("frontmatter_not_mapping", "the frontmatter must be a YAML mapping")
    return meta, body, body_line


def parse_yaml(text: str, *, what: str = "the frontmatter") -> Any:
    """YAML text as JSON-safe data (dates left as text), or a FileProblem saying why it cannot be."""
    data = plain_yaml(text)
    if data is None:  # outside the plain subset (or no mapping): PyYAML reads it
        yaml, loader, errors = _pyyaml()
        try:
            data = yaml.load(text, Loader=loader)
        except errors as exc:
            reason = _one_line(exc)
            if isinstance(exc, ValueError) and "integer string conversion" in reason:
                reason = "an integer has more than 4,300 digits, past what Python reads as a number"
            return FileProblem("frontmatter_invalid", f"{what} is not valid YAML: {reason}")
    try:
        return _JsonSafe(MIN_VALUES + len(text)).convert(data, 0)
    except _Refused as refused:
        return refused.problem


def body_of(data: bytes) -> str | None:
    """The body of a record file without parsing its YAML (the scan already did).

    A file without frontmatter is a record only under a profile (``read_source``): its body is all of it.
    """
    split = _split(data)
    if isinstance(split, FileProblem):
        return _whole_text(data) if split.code == "frontmatter_missing" else None
    return split[1]


def _whole_text(data: bytes) -> str:
    text = data.decode("utf-8")
    return text[1:] if text.startswith("\ufeff") else text


def read_source(path: str, data: bytes) -> Source | FileProblem:
    """The file as a profile reads it: a file without frontmatter is all body, from line 1."""
    split = _split(data)
    if isinstance(split, FileProblem):
        if split.code != "frontmatter_missing":
            return split
        return Source(path, None, _whole_text(data), 1)
    yaml_text, body, _, body_line = split
    meta = parse_yaml(yaml_text)
    if isinstance(meta, FileProblem):
        return meta
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return FileProblem("frontmatter_not_mapping", "the frontmatter must be a YAML mapping")
    return Source(path, meta, body, body_line, yaml_text)


def build_record(path: str, sha256: str, meta: dict[str, Any], body_line: int) -> tuple[Record | None, list[Issue]]:
    """The record a frontmatter mapping describes, with its issues; None when it cannot be one.

    A mapping a profile derived (``DERIVED_KEY``) also says which keys were derived, what the
    person wrote, and the issues the profile found (each with the line it names).
    """
    _share_strings(meta)
    derivation, derived_meta = meta.get(DERIVED_KEY), meta
    if derivation is not None:
        meta = {k: v for k, v in meta.items() if k != DERIVED_KEY}
    if isinstance(derivation, dict) and derivation.get("notRecord"):
        return None, []  # a name the profile does not read as a record (a template): no record, and no defect
    rid = _record_id(path, meta)
    if isinstance(rid, Issue):
        return None, [rid]
    read = _Fields(path, rid, meta)
    if isinstance(derivation, dict):
        read.issues += [Issue(path, rid, str(code), str(message)) for code, message in derivation.get("issues", ())]
    try:
        record = _record(read, sha256, body_line)
    except _NotARecord as refused:
        return None, [*read.issues, Issue(path, rid, refused.code, refused.message)]
    record.frontmatter_or_source = derived_meta  # (with DERIVED_KEY: Record.derived, Record.written read it)
    return record, read.issues


# string values that many records repeat (a kind, a tag, an author, a person's id): one object each
_SHARED_VALUES = ("kind", "type", "status", "origin", "author", "relation", "from", "to", "owner", "source", "category")
_SHARED_LISTS = ("tags", "entities", "depends_on")


def _share_strings(meta: dict[str, Any]) -> None:
    """Intern, in place, a frontmatter mapping's keys and the values records repeat.

    A mapping read back from the scan cache (JSON, one document per file) has its own copy of
    every key ("id", "kind", "title"...) and of every repeated value: at 100k records some
    100 MB that interning returns. The keys are replaced (same order) only while they are not
    interned yet, that is on a mapping nothing else holds: one that a record already shares
    keeps its table; a value is replaced by an equal string, which no reader can tell.
    """
    if not meta:
        return
    first = next(iter(meta))
    if isinstance(first, str) and sys.intern(first) is not first:
        _intern_keys(meta)
        fields = meta.get("fields")
        if isinstance(fields, dict) and fields:
            _intern_keys(fields)
    for name in _SHARED_VALUES:
        value = meta.get(name)
        if type(value) is str:
            meta[name] = sys.intern(value)
    for name in _SHARED_LISTS:
        items = meta.get(name)
        if type(items) is list:
            for i, item in enumerate(items):
                if type(item) is str:
                    items[i] = sys.intern(item)


def _intern_keys(mapping: dict[str, Any]) -> None:
    items = list(mapping.items())
    mapping.clear()
    mapping.update((sys.intern(k) if type(k) is str else k, v) for k, v in items)


# tuples of strings records repeat (their tags, the people they name, the references these make): one
# object per distinct tuple, as the strings in them are interned (some 7 MB at 100k records)
_TUPLES: dict[tuple[str, ...], tuple[str, ...]] = {}
_TUPLES_MAX = 1 << 16  # cleared when full: a cache, not a record


def _shared(items: tuple[str, ...]) -> tuple[str, ...]:
    """An equal tuple built before (a tuple is immutable: no reader can tell), or ``items`` from now on."""
    if len(items) > 4:  # (a long list is seldom repeated)
        return items
    found = _TUPLES.get(items)
    if found is None:
        if len(_TUPLES) >= _TUPLES_MAX:
            _TUPLES.clear()
        found = _TUPLES[items] = items
    return found


class _NotARecord(Exception):
    """A field the record cannot be without is missing or invalid: the file is no record."""

    def __init__(self, code: str, message: str) -> None:
        self.code, self.message = code, message


class _Fields:
    """Reads one frontmatter's optional fields; a field of the wrong shape is ignored, with an issue."""

    def __init__(self, path: str, rid: str, meta: dict[str, Any]) -> None:
        self.path, self.rid, self.meta = path, rid, meta
        self.issues: list[Issue] = []

    def issue(self, code: str, message: str) -> None:
        self.issues.append(Issue(self.path, self.rid, code, message))

    def text(self, name: str) -> str | None:
        value = self.meta.get(name)
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        self.issue("field_invalid", f"{name} must be a string; ignored")
        return None

    def strings(self, name: str) -> tuple[str, ...]:
        value = self.meta.get(name)
        if value is None:
            return ()
        if isinstance(value, str):
            return (value,)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return _shared(tuple(value))
        self.issue("field_invalid", f"{name} must be a string or a list of strings; ignored")
        return ()


def _record(read: _Fields, sha256: str, body_line: int) -> Record:
    """The record, its fields read in a fixed order (the order of its issues); raises _NotARecord."""
    meta = read.meta
    kind, status, revision, type_ = _essentials(meta)
    superseded_by = _superseded_by(read, status)
    fields = _fields(read)
    dates, expires_at = _dates(read, fields), _expires_at(read)
    from_id, to_id = _endpoints(read, kind)
    source_event, origin = _source_event(read), _origin(read)
    entities, depends_on = read.strings("entities"), read.strings("depends_on")
    owner, source = read.text("owner"), read.text("source")
    references = _shared(
        tuple(dict.fromkeys([*depends_on, *entities, *(x for x in (from_id, to_id, owner, source) if x)]))
    )
    return Record(
        id=read.rid,
        path=read.path,
        sha256=sha256,
        kind=kind,
        type=type_,
        title=read.text("title"),
        aliases=read.strings("aliases"),
        tags=read.strings("tags"),
        status=status,
        superseded_by=superseded_by,
        revision=revision,
        summary=read.text("summary"),
        dates=dates,
        expires_at=expires_at,
        entities=entities,
        owner=owner,
        depends_on=depends_on,
        source=source,
        source_event=source_event,
        from_id=from_id,
        to_id=to_id,
        relation=read.text("relation"),
        origin=origin,
        author=read.text("author"),
        evidence=_evidence(read.path, read.rid, meta.get("evidence"), read.issues),
        affected_paths=read.strings("affected_paths"),
        category=read.text("category"),
        reasoning=meta.get("reasoning"),
        alternatives=meta.get("alternatives"),
        fields=fields,
        frontmatter_or_source=meta,
        body_line=body_line,
        references=references,
    )


def _record_id(path: str, meta: dict[str, Any]) -> str | Issue:
    """The record's id, or the issue that makes the file no record."""
    raw_id = meta.get("id")
    if raw_id is None:
        return Issue(path, None, "id_missing", "no id in the frontmatter")
    if not isinstance(raw_id, str) or not ID_PATTERN.fullmatch(raw_id):
        shown = str(raw_id)
        hint = " (write it as a quoted string)" if not isinstance(raw_id, str) else ""
        return Issue(path, shown, "id_invalid", f"id {shown!r} does not match {ID_PATTERN.pattern}{hint}")
    return raw_id


def _essentials(meta: dict[str, Any]) -> tuple[str, str, int, str]:
    """(kind, status, revision, type): checked in this order, the first invalid one refuses the record."""
    kind = meta.get("kind")
    if kind not in KINDS:
        raise _NotARecord("kind_invalid", f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    status = meta.get("status", "active")
    if status not in STATUSES:
        raise _NotARecord("status_invalid", f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    revision = meta.get("revision", 1)
    if isinstance(revision, bool) or not isinstance(revision, int) or not 1 <= revision <= MAX_REVISION:
        raise _NotARecord("revision_invalid", f"revision must be an integer from 1 to {MAX_REVISION}, not {revision!r}")
    type_ = meta.get("type", kind)
    if not isinstance(type_, str) or not type_:
        raise _NotARecord("field_invalid", f"type must be a non-empty string, not {type_!r}")
    return kind, status, revision, type_


def _superseded_by(read: _Fields, status: str) -> str | None:
    superseded_by = read.text("superseded_by")
    if status == "superseded" and not superseded_by:
        read.issue("superseded_by_missing", "status is superseded but superseded_by names no record")
    return superseded_by


# the ``fields`` of every record without any: one object (80 bytes a record at 1M records). Nothing
# writes into a record's fields; an answer holds a copy (knowtk.results).
_NO_FIELDS: dict[str, Any] = {}


def _fields(read: _Fields) -> dict[str, Any]:
    """The free-form ``fields`` mapping ({} when absent or not a mapping)."""
    fields = read.meta.get("fields")
    if fields is not None and not isinstance(fields, dict):
        read.issue("field_invalid", "fields must be a mapping; ignored")
        fields = None
    return fields or _NO_FIELDS


def _dates(read: _Fields, fields: dict[str, Any]) -> dict[str, DateValue]:
    """The valid DATE_FIELDS (a meeting's occurred_at may sit in fields.occurred_at); bad ones dropped."""
    meta = read.meta
    dates: dict[str, DateValue] = {}
    for name in DATE_FIELDS:
        raw, where = meta.get(name), name
        if raw is None and name == "occurred_at" and fields.get("occurred_at") is not None:
            raw, where = fields["occurred_at"], "fields.occurred_at"
        if raw is None:
            continue
        value = parse_date_value(raw)
        if value is None:
            read.issues.append(_date_issue(read.path, read.rid, where, raw))
        else:
            dates[name] = value
    return dates


def _expires_at(read: _Fields) -> DateValue | None:
    raw = read.meta.get("expires_at")
    if raw is None:
        return None
    expires_at = parse_date_value(raw)
    if expires_at is None:
        read.issues.append(_date_issue(read.path, read.rid, "expires_at", raw))
    return expires_at


def _endpoints(read: _Fields, kind: str) -> tuple[str | None, str | None]:
    """(from, to); a relationship without both is no record."""
    from_id, to_id = read.text("from"), read.text("to")
    if kind == "relationship" and not (from_id and to_id):
        raise _NotARecord("endpoints_missing", "a relationship needs both from and to")
    return from_id, to_id


def _source_event(read: _Fields) -> bool:
    source_event = read.meta.get("source_event", False)
    if not isinstance(source_event, bool):
        read.issue("field_invalid", "source_event must be true or false; ignored")
        return False
    return source_event


def _origin(read: _Fields) -> str | None:
    origin = read.text("origin")
    if origin is not None and origin not in ORIGINS:
        read.issue("field_invalid", f"origin must be one of {', '.join(ORIGINS)}; ignored")
        return None
    return origin


def _evidence(path: str, rid: str, raw: Any, issues: list[Issue]) -> tuple[Evidence, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raw = [raw]
    out = []
    for item in raw:
        if isinstance(item, str):
            out.append(Evidence(item, None, None, None))
            continue
        lines = item.get("lines") if isinstance(item, dict) else None
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("path"), str)
            or (lines is not None and not _line_pair(lines))
            or (item.get("quote") is not None and not isinstance(item.get("quote"), str))
        ):
            issues.append(
                Issue(path, rid, "evidence_invalid", f"evidence locator {item!r} is not {{path, lines: [a, b], quote}}")
            )
            continue
        start, end = (lines[0], lines[-1]) if lines else (None, None)
        out.append(Evidence(item["path"], start, end, item.get("quote")))
    return tuple(out)


def _line_pair(lines: Any) -> bool:
    return (
        isinstance(lines, list)
        and 1 <= len(lines) <= 2
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in lines)
        and lines[0] <= lines[-1]
    )


def _date_issue(path: str, rid: str, name: str, raw: Any) -> Issue:
    return Issue(
        path,
        rid,
        "date_invalid",
        f"{name} {raw!r} is not a real YYYY-MM-DD or a timestamp with seconds and an explicit offset; dropped",
    )


class _Refused(Exception):
    def __init__(self, problem: FileProblem) -> None:
        self.problem = problem


class _JsonSafe:
    """Frontmatter as JSON-safe data (the scan cache stores it as JSON), within a budget of values.

    YAML aliases share one object however often they are used; expanding them here is where an
    alias bomb or a recursive alias (``fields: &a {self: *a}``) would run away, so the walk
    counts what it builds, bounds the nesting and refuses a value that contains itself.

    Keys are interned: the YAML loader makes a new "id", "kind", "title"... for every file,
    which for a store of 100k records is some 80 MB of copies of the same few words.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.open: set[int] = set()  # ids of the containers being converted (their ancestors)

    def convert(self, value: Any, depth: int) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise _Refused(FileProblem("frontmatter_too_large", "the frontmatter's aliases expand to too many values"))
        if value is None or isinstance(value, bool | float):
            return value
        if isinstance(value, str):
            if not value.isascii():
                _check_text(value)
            return value
        if isinstance(value, int):
            if value.bit_length() > MAX_INT_BITS:
                message = f"an integer of {value.bit_length():,} bits is past what a record may hold"
                raise _Refused(FileProblem("frontmatter_invalid", message))
            return value
        if not isinstance(value, dict | list | tuple | set | frozenset):
            return self.convert(str(value), depth)  # bytes (!!binary): their repr, as before
        if depth >= MAX_DEPTH:
            message = f"the frontmatter nests mappings and lists deeper than {MAX_DEPTH} levels"
            raise _Refused(FileProblem("frontmatter_too_large", message))
        if id(value) in self.open:
            raise _Refused(FileProblem("frontmatter_recursive", "a YAML alias refers to a value that contains it"))
        self.open.add(id(value))
        try:
            if isinstance(value, dict):
                return {sys.intern(self._key(k)): self.convert(v, depth + 1) for k, v in value.items()}
            items = [self.convert(v, depth + 1) for v in value]
            return sorted(items, key=str) if isinstance(value, set | frozenset) else items
        finally:
            self.open.discard(id(value))

    def _key(self, key: Any) -> str:
        text = self.convert(key, MAX_DEPTH - 1)  # keys are scalars to YAML's safe loader
        return text if isinstance(text, str) else str(text)


def _check_text(value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        message = f"the frontmatter holds a lone surrogate ({value[exc.start]!r}), which is not text"
        raise _Refused(FileProblem("frontmatter_invalid", message)) from None


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
