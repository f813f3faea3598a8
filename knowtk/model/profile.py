"""Store profiles: how the record keys a file lacks are derived from the way another tool writes Markdown.

Profiles come from plug-ins (the ``knowtk_profiles`` hook of ``knowtk.plugins``: knowtk's own are in
``knowtk.model.dialects``) or from ``register``; the core never names one but ``knowtk``, the exact
contract, which derives nothing. ``ProfileMap`` says which
profile reads which path (a store-wide name and per-folder prefixes). ``derive_meta`` merges what a
profile derived into the file's frontmatter under one rule: a key that the file writes
with a value valid in knowtk's format wins, unless the profile reads that key in its own tool's form.
What was derived travels with the mapping under ``DERIVED_KEY`` (it is cached as JSON with it).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from knowtk import plugins
from knowtk.model.shapes import field, shape

__all__ = [
    "DEFAULT_NOT_RECORDS",
    "DEFAULT_PROFILE",
    "DERIVED_KEY",
    "KINDS",
    "KNOWTK_KEYS",
    "NOT_A_RECORD",
    "RECORD_KEYS",
    "Derivation",
    "Profile",
    "ProfileMap",
    "Source",
    "derive_meta",
    "has_profile",
    "not_record_pattern",
    "path_id",
    "profile_names",
    "register",
]

DEFAULT_PROFILE = "knowtk"
NOT_A_RECORD = "@not-a-record"  # ProfileMap.for_path's answer for a file no profile reads as a record
# the file names that are not records beside the records a profile reads (knowtk.yaml's ``not_records`` replaces
# them): a template, an index, a README in an ADR folder
DEFAULT_NOT_RECORDS: dict[str, tuple[str, ...]] = {"adr": ("*template*.md", "index.md", "readme.md")}
DERIVED_KEY = "@derived"  # in a derived mapping: {"profile", "keys", "frontmatter", "issues"}
# The frontmatter keys of a record (STORE.md section 1), in the order a record file writes them: the one
# list of them (the demo store and the tests write and check frontmatter in this order).
RECORD_KEYS = (
    "id",
    "kind",
    "type",
    "title",
    "aliases",
    "tags",
    "status",
    "superseded_by",
    "revision",
    "summary",
    "occurred_at",
    "recorded_at",
    "updated_at",
    "due_at",
    "expires_at",
    "entities",
    "owner",
    "depends_on",
    "source",
    "source_event",
    "from",
    "to",
    "relation",
    "origin",
    "author",
    "evidence",
    "affected_paths",
    "category",
    "reasoning",
    "alternatives",
    "fields",
)
KNOWTK_KEYS = frozenset(RECORD_KEYS)  # knowtk's own keys: a profile keeps another tool's under fields
KINDS = ("page", "claim", "relationship")
_STATUSES = ("active", "superseded", "withdrawn")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


@shape(frozen=True, slots=True)
class Source:
    """One file as a profile reads it: its path, its frontmatter (None when it has none) and its body."""

    path: str
    meta: dict[str, Any] | None
    body: str
    body_line: int  # the file line of the body's first line
    head: str = ""  # the frontmatter's YAML text (its first line is the file's line 2)

    def key_line(self, key: str) -> int | None:
        """The file line where the frontmatter writes a top-level ``key``, or None."""
        for offset, line in enumerate(self.head.split("\n")):
            if line.startswith(key) and line[len(key) :].lstrip(" \t").startswith(":"):
                return 2 + offset
        return None


@shape(slots=True)
class Derivation:
    """What a profile derived from one file.

    ``values`` fill keys the file lacks (or writes invalidly); ``own`` are keys the profile reads in its
    tool's form and so replace what is written (Obsidian's ``tags: "#a #b"``); ``fields`` go under
    ``fields``; ``issues`` are (code, message) pairs reported as coverage issues.
    """

    values: dict[str, Any] = field(default_factory=dict)
    own: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    issues: list[tuple[str, str]] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # derived key -> the file line it was read from


Profile = Callable[[Source], Derivation]
_registered: dict[str, Profile] = {}  # register(): a profile added by code
_plugged: dict[bool, dict[str, Profile]] = {}  # outside -> the plug-ins' profiles (knowtk.plugins), read once


def _plugin_profiles(*, outside: bool) -> dict[str, Profile]:
    """The profiles of the plug-ins (knowtk's own dialects; with ``outside``, the installed ones too).

    A store read by the contract alone never asks: its processes import no dialect (start-up cost). Read
    once: every file a profile reads asks again, without the lock."""
    cached = _plugged.get(outside)
    if cached is not None:
        return cached
    with plugins.LOCK:
        if outside not in _plugged:
            found: dict[str, Profile] = {}
            for _, made in plugins.hook_results("knowtk_profiles", outside=outside):
                for name, profile in dict(made).items():
                    found.setdefault(name, profile)
            _plugged[outside] = found
        return _plugged[outside]


def _profile(name: str) -> Profile | None:
    found = _registered.get(name) or _plugin_profiles(outside=False).get(name)
    return found or _plugin_profiles(outside=True).get(name)


def register(name: str, profile: Profile) -> None:
    """Make a profile available by name (``open_store(profile=...)``, ``--profile``, knowtk.yaml).

    A package's profiles are better added as a plug-in (the ``knowtk_profiles`` hook, docs/extending.md)."""
    _registered[name] = profile


def has_profile(name: str) -> bool:
    """Whether a store may be read with the profile ``name`` (the installed plug-ins read only for a name
    knowtk's own profiles do not have)."""
    return name == DEFAULT_PROFILE or _profile(name) is not None


def profile_names() -> tuple[str, ...]:
    """Every profile a store may be read with: ``knowtk`` first, then the others by name."""
    return (DEFAULT_PROFILE, *sorted({*_registered, *_plugin_profiles(outside=True)}))


def not_record_pattern(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """File-name patterns (``*`` for any characters, case ignored) as one expression; None for none."""
    if not patterns:
        return None
    return re.compile("|".join(".*".join(map(re.escape, p.lower().split("*"))) for p in patterns))


@shape(frozen=True)
class ProfileMap:
    """Which profile reads which file: ``default`` for the store, ``prefixes`` (folder, name) for folders, and
    ``not_records``: the file names no profile reads as a record (None: each profile's ``DEFAULT_NOT_RECORDS``)."""

    default: str = DEFAULT_PROFILE
    prefixes: tuple[tuple[str, str], ...] = ()
    not_records: tuple[str, ...] | None = None

    @property
    def plain_contract(self) -> bool:
        """True when every file is read by the knowtk contract alone (nothing is ever derived)."""
        return self.default == DEFAULT_PROFILE and all(name == DEFAULT_PROFILE for _, name in self.prefixes)

    def key(self) -> str:
        parts = [self.default, *(f"{p}={n}" for p, n in self.prefixes)]
        if not self.plain_contract or self.not_records is not None:  # which files are no records changes what
            # the files make
            given = self.not_records
            parts.append("not_records=" + ("default-1" if given is None else ",".join(given)))
        return "|".join(parts)

    def skipped(self, profile: str) -> tuple[str, ...]:
        """The file-name patterns ``profile`` does not read as records: knowtk.yaml's ``not_records``, else the
        profile's own (``DEFAULT_NOT_RECORDS``; knowtk's format has none: its files say what they are)."""
        return DEFAULT_NOT_RECORDS.get(profile, ()) if self.not_records is None else self.not_records

    def for_path(self, path: str) -> str:
        """The profile of one file: the longest folder prefix that holds it, else the store's; ``NOT_A_RECORD``
        when that profile does not read a file of this name as a record (a template beside the ADRs)."""
        best, name = -1, self.default
        for prefix, profile in self.prefixes:
            if (path.startswith(prefix + "/") or not prefix) and len(prefix) > best:
                best, name = len(prefix), profile
        skipped = not_record_pattern(self.skipped(name))
        if skipped is not None and skipped.fullmatch(path.rpartition("/")[2].lower()):
            return NOT_A_RECORD
        return name


def derive_meta(name: str, src: Source) -> dict[str, Any]:
    """The frontmatter as the profile ``name`` reads the file: written keys, derived ones, ``DERIVED_KEY``.

    ``NOT_A_RECORD``: a mapping that says the file is no record (``DERIVED_KEY``'s ``notRecord``)."""
    if name == NOT_A_RECORD:
        return {DERIVED_KEY: {"profile": name, "notRecord": True, "keys": [], "frontmatter": src.meta or {}}}
    profile = _profile(name)  # in a parse worker too: a new process has read no plug-in yet
    if profile is None:
        raise KeyError(name)
    derivation = profile(src)
    meta = src.meta
    merged = dict(meta or {})
    derived: list[str] = []
    written: dict[str, Any] = {}
    for key, value in derivation.values.items():
        if key in merged and _valid(key, merged[key]):
            continue
        if key in merged:
            written[key] = merged[key]
        merged[key] = value
        derived.append(key)
    for key, value in derivation.own.items():  # (what was written stays in Record.written, not in fields)
        if merged.get(key) != value:
            derived.append(key)
        merged[key] = value
    fields = dict(merged["fields"]) if isinstance(merged.get("fields"), dict) else {}
    for key, value in (meta or {}).items():  # other tools' keys are kept under fields
        if key not in KNOWTK_KEYS and key not in fields:
            fields[key] = value
    for key, value in written.items():
        fields.setdefault(key, value)
    for key, value in derivation.fields.items():
        if key not in fields:
            fields[key] = value
            derived.append(f"fields.{key}")
    if fields and (merged.get("fields") is None or isinstance(merged.get("fields"), dict)):
        merged["fields"] = fields  # (a written ``fields`` that is no mapping stays, and is reported as such)
    merged[DERIVED_KEY] = {
        "profile": name,
        "keys": derived,
        "frontmatter": meta or {},  # what the person wrote, shown as the record's frontmatter
        "issues": [list(issue) for issue in derivation.issues],
        "lines": {k: v for k, v in derivation.lines.items() if k in derived},
    }
    return merged


def _valid(key: str, value: Any) -> bool:
    """Does the file write ``key`` with a value knowtk's format takes as it is?"""
    if key == "id":
        return isinstance(value, str) and _ID.fullmatch(value) is not None
    if key == "kind":
        return value in KINDS
    if key == "status":
        return value in _STATUSES
    if key in ("type", "title", "superseded_by"):
        return isinstance(value, str) and bool(value.strip())
    if key in ("aliases", "tags"):
        return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    return value is not None


_SEGMENT_JUNK = re.compile(r"[^A-Za-z0-9._-]+")


def path_id(path: str) -> str:
    """A record id from a store path: stable, inside the id grammar (``docs/My note.md`` -> ``docs:My-note``).

    Folders are joined by ``:``; letters are folded to ASCII where they have a plain form and any other
    run of characters becomes ``-``. Two paths may give one id (``a b.md``, ``a-b.md``): the store then
    reports both files as duplicates, as for any two files with one id.
    """
    stem = path[:-3] if path.lower().endswith(".md") else path
    parts = []
    for segment in stem.split("/"):
        folded = unicodedata.normalize("NFKD", segment).encode("ascii", "ignore").decode("ascii")
        clean = _SEGMENT_JUNK.sub("-", folded).strip("-.") or "x"
        parts.append(clean)
    rid = ":".join(parts)
    if not rid[0].isalnum():
        rid = "n" + rid
    if len(rid) > 128:
        rid = rid[:111] + "-" + hashlib.sha256(path.encode()).hexdigest()[:16]
    return rid
