"""The write tools' argument specs: ``knowledge_mutation`` and ``knowledge_history`` (docs/mutations.md).

They live apart from ``TOOLS``: they run outside a query's transaction (a mutation takes the store's
write lock and writes files), and the MCP server offers them only with ``--allow-writes``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from knowtk.engine.engine import Engine
from knowtk.errors import InvalidArgument
from knowtk.query.args import Param, boolean, bound, choice, integer, text, with_schema
from knowtk.write.history import history
from knowtk.write.mutation import mutate
from knowtk.write.plan import OPERATIONS

__all__ = ["HISTORY_PARAMS", "MUTATION_PARAMS", "WRITE_TOOLS", "WriteTool"]

_SHA = re.compile(r"[0-9a-f]{64}")


@functools.partial(with_schema, schema={"type": "string", "pattern": "^[0-9a-f]{64}$"})
def sha256(name: str, value: Any) -> str:
    if not isinstance(value, str) or not _SHA.fullmatch(value):
        raise InvalidArgument(name, "must be the 64 lowercase hex digits of a SHA-256", value=value)
    return value


@functools.partial(with_schema, schema={"type": "object"})
def fields(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and k for k in value):
        raise InvalidArgument(name, "must be a mapping of field names to values", value=value)
    return dict(value)


MUTATION_PARAMS = (
    Param("operation", choice(*OPERATIONS), required=True),
    Param("id", text(128), required=True),
    Param("expectedSha256", sha256),
    Param("record", fields),
    Param("by", text(128)),
    Param("reason", text(2000)),
    Param("path", text(1024)),
    Param("actor", text(200)),
    Param("restate", boolean, False),
    Param("checkpoint", boolean, False),
)

HISTORY_PARAMS = (
    Param("id", text(128)),
    Param("since", bound(upper=False)),
    Param("until", bound(upper=True)),
    Param("limit", integer(1, 1000), 20),
    Param("offset", integer(0), 0),
)


@dataclass(frozen=True)
class WriteTool:
    name: str
    params: tuple[Param, ...]
    run: Callable[[Engine, dict[str, Any]], dict[str, Any]]


WRITE_TOOLS: dict[str, WriteTool] = {
    t.name: t
    for t in (
        WriteTool("knowledge_mutation", MUTATION_PARAMS, mutate),
        WriteTool("knowledge_history", HISTORY_PARAMS, history),
    )
}
