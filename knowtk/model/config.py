"""``knowtk.yaml``: the store's name, whether linked workspaces may read it, its type ontology, its profiles (and
the file names they do not read as records) and Git checkpoints."""

from __future__ import annotations

import os
from typing import Any

from knowtk.model.profile import DEFAULT_PROFILE, has_profile, profile_names
from knowtk.model.records import FileProblem, parse_yaml, read_regular
from knowtk.model.shapes import field, shape

__all__ = ["CONFIG_FILE", "StoreConfig", "load_config"]

CONFIG_FILE = "knowtk.yaml"
MAX_CONFIG_BYTES = 1024 * 1024


@shape(frozen=True)
class StoreConfig:
    name: str
    share: bool = False
    # every type or alias -> the whole group it belongs to (a filter expands both ways)
    type_groups: dict[str, frozenset[str]] = field(default_factory=dict)
    problem: str | None = None  # why the file was ignored, reported as a coverage issue
    profile: str = DEFAULT_PROFILE  # how the store's files are read (knowtk.model.profile)
    profiles: tuple[tuple[str, str], ...] = ()  # (folder prefix, profile): how the files under it are read
    exists: bool = False  # the store has a knowtk.yaml (a newcomer's hint is given only without one)
    checkpoint: str = "never"  # "always": every knowtk mutation is committed to Git (docs/mutations.md)
    # file names (``*`` for any characters) a profile does not read as records; None: the profile's own list
    not_records: tuple[str, ...] | None = None

    def expand_type(self, value: str) -> frozenset[str]:
        return self.type_groups.get(value, frozenset((value,)))


def load_config(root: str) -> StoreConfig:
    """Read knowtk.yaml; a missing file means defaults, a broken one means defaults plus a problem."""
    default_name = os.path.basename(os.path.abspath(root))
    path = os.path.join(root, CONFIG_FILE)
    raw = read_regular(path, MAX_CONFIG_BYTES)  # a regular file, not a symlink, read within the limit
    if raw is None:
        return StoreConfig(name=default_name)
    data, error = _parsed(raw)
    if error is not None:
        return StoreConfig(name=default_name, problem=f"{CONFIG_FILE} cannot be used: {error}", exists=True)
    if data is None:
        return StoreConfig(name=default_name, exists=True)
    if not isinstance(data, dict):
        return StoreConfig(name=default_name, problem=f"{CONFIG_FILE} is not a mapping", exists=True)
    problems: list[str] = []
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        problems.append("name must be a non-empty string")
        name = default_name
    share = data.get("share", False)
    if not isinstance(share, bool):
        problems.append("share must be true or false")
        share = False
    profile, profiles = _profiles(data, problems)
    checkpoint = _checkpoint(data, problems)
    not_records = data.get("not_records")
    if not_records is not None and (
        not isinstance(not_records, list) or not all(isinstance(n, str) and n.strip() for n in not_records)
    ):
        problems.append("not_records must be a list of file names (* for any characters)")
        not_records = None
    return StoreConfig(
        name=name.strip(),
        share=share,
        type_groups=_ontology(data, problems),
        problem="; ".join(problems) or None,
        checkpoint=checkpoint,
        profile=profile,
        profiles=profiles,
        not_records=None if not_records is None else tuple(n.strip() for n in not_records),
        exists=True,
    )


# the last knowtk.yaml parsed, by its bytes: an engine reads the file at its open and again at its first
# snapshot (a same-stat edit in between is caught so); the same bytes are not parsed twice
# (a new process's start stays short)
_last: tuple[bytes, tuple[Any, str | None]] | None = None


def _parsed(raw: bytes | FileProblem) -> tuple[Any, str | None]:
    """(the YAML of knowtk.yaml, None), or (None, why it cannot be read)."""
    global _last
    last = _last
    if isinstance(raw, bytes) and last is not None and last[0] == raw:
        return last[1]  # the data is only read (below), never changed: sharing it is safe
    answer = _parse(raw)
    if isinstance(raw, bytes):
        _last = (raw, answer)
    return answer


def _parse(raw: bytes | FileProblem) -> tuple[Any, str | None]:
    try:
        if isinstance(raw, FileProblem):
            raise ValueError(raw.message)
        data = parse_yaml(raw.decode("utf-8"), what=CONFIG_FILE)
        if isinstance(data, FileProblem):
            raise ValueError(data.message)
    except ValueError as exc:  # UnicodeDecodeError too
        return None, str(exc)
    return data, None


def _ontology(data: dict[str, Any], problems: list[str]) -> dict[str, frozenset[str]]:
    groups: dict[str, frozenset[str]] = {}
    ontology = data.get("ontology") or {}
    if not isinstance(ontology, dict):
        problems.append("ontology must map types to {aliases: [...]}")
        ontology = {}
    for type_name, spec in ontology.items():
        aliases = (spec or {}).get("aliases", []) if isinstance(spec, dict) else None
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            problems.append(f"ontology.{type_name}.aliases must be a list of strings")
            continue
        group = frozenset([str(type_name), *aliases])
        for member in group:
            groups[member] = groups.get(member, frozenset()) | group
    return groups


def _profiles(data: dict[str, Any], problems: list[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``profile: NAME`` for the store and ``profiles: {folder: NAME}``; an unknown name is a problem."""
    if "profile" not in data and "profiles" not in data:
        return DEFAULT_PROFILE, ()  # the contract alone: no profile plug-in is loaded
    profile = data.get("profile", DEFAULT_PROFILE)
    if not isinstance(profile, str) or not has_profile(profile):
        problems.append(f"profile must be one of {', '.join(profile_names())}, not {profile!r}")
        profile = DEFAULT_PROFILE
    prefixes: list[tuple[str, str]] = []
    raw = data.get("profiles") or {}
    if not isinstance(raw, dict):
        problems.append("profiles must map folders to profile names")
        raw = {}
    for folder, name in raw.items():
        if not isinstance(name, str) or not has_profile(name):
            problems.append(f"profiles.{folder} must be one of {', '.join(profile_names())}, not {name!r}")
            continue
        prefixes.append((str(folder).strip("/"), name))
    return profile, tuple(sorted(prefixes))


def _checkpoint(data: dict[str, Any], problems: list[str]) -> str:
    """``checkpoint: always`` commits every knowtk mutation to Git (docs/mutations.md); default never."""
    checkpoint = data.get("checkpoint", "never")
    if checkpoint not in ("never", "always"):
        problems.append("checkpoint must be never or always")
        checkpoint = "never"
    return str(checkpoint)
