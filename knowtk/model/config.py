"""``knowtk.yaml``: the store's name, whether linked workspaces may read it, its type ontology, Git checkpoints."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from knowtk.model.records import FileProblem, parse_yaml, read_regular

__all__ = ["CONFIG_FILE", "StoreConfig", "load_config"]

CONFIG_FILE = "knowtk.yaml"
MAX_CONFIG_BYTES = 1024 * 1024


@dataclass(frozen=True)
class StoreConfig:
    name: str
    share: bool = False
    # every type or alias -> the whole group it belongs to (a filter expands both ways)
    type_groups: dict[str, frozenset[str]] = field(default_factory=dict)
    problem: str | None = None  # why the file was ignored, reported as a coverage issue
    checkpoint: str = "never"  # "always": every knowtk mutation is committed to Git (docs/mutations.md)

    def expand_type(self, value: str) -> frozenset[str]:
        return self.type_groups.get(value, frozenset((value,)))


def load_config(root: str) -> StoreConfig:
    """Read knowtk.yaml; a missing file means defaults, a broken one means defaults plus a problem."""
    default_name = os.path.basename(os.path.abspath(root))
    path = os.path.join(root, CONFIG_FILE)
    raw = read_regular(path, MAX_CONFIG_BYTES)  # a regular file, not a symlink, read within the limit
    if raw is None:
        return StoreConfig(name=default_name)
    try:
        if isinstance(raw, FileProblem):
            raise ValueError(raw.message)
        data = parse_yaml(raw.decode("utf-8"), what=CONFIG_FILE)
        if isinstance(data, FileProblem):
            raise ValueError(data.message)
    except ValueError as exc:  # UnicodeDecodeError too
        return StoreConfig(name=default_name, problem=f"{CONFIG_FILE} cannot be used: {exc}")
    if data is None:
        return StoreConfig(name=default_name)
    if not isinstance(data, dict):
        return StoreConfig(name=default_name, problem=f"{CONFIG_FILE} is not a mapping")
    problems = []
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        problems.append("name must be a non-empty string")
        name = default_name
    share = data.get("share", False)
    if not isinstance(share, bool):
        problems.append("share must be true or false")
        share = False
    checkpoint = data.get("checkpoint", "never")
    if checkpoint not in ("never", "always"):
        problems.append("checkpoint must be never or always")
        checkpoint = "never"
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
    return StoreConfig(
        name=name.strip(),
        share=share,
        type_groups=groups,
        checkpoint=checkpoint,
        problem="; ".join(problems) or None,
    )
