"""``knowtk.yaml``: the store's name, whether linked workspaces may read it, and its type ontology."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import yaml

__all__ = ["CONFIG_FILE", "StoreConfig", "load_config"]

CONFIG_FILE = "knowtk.yaml"


@dataclass(frozen=True)
class StoreConfig:
    name: str
    share: bool = False
    # every type or alias -> the whole group it belongs to (a filter expands both ways)
    type_groups: dict[str, frozenset[str]] = field(default_factory=dict)
    problem: str | None = None  # why the file was ignored, reported as a coverage issue

    def expand_type(self, value: str) -> frozenset[str]:
        return self.type_groups.get(value, frozenset((value,)))


def load_config(root: str) -> StoreConfig:
    """Read knowtk.yaml; a missing file means defaults, a broken one means defaults plus a problem."""
    default_name = os.path.basename(os.path.abspath(root))
    path = os.path.join(root, CONFIG_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        return StoreConfig(name=default_name)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return StoreConfig(name=default_name, problem=f"{CONFIG_FILE} cannot be read: {exc}")
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
        problem="; ".join(problems) or None,
    )
