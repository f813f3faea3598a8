"""The runners of the tools that change the store or read its change log: ``knowledge_mutation`` and
``knowledge_history`` (declared in ``knowtk.query.tools``; docs/mutations.md).

They run outside a query's transaction: a mutation takes the store's write lock and writes files.
"""

from __future__ import annotations

from typing import Any

from knowtk.engine.engine import Engine
from knowtk.query.citations import EvidenceVerifier
from knowtk.write.history import history
from knowtk.write.mutation import mutate

__all__ = ["run_history", "run_mutation"]


def run_mutation(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    return mutate(engine, args)


def run_history(engine: Engine, args: dict[str, Any], verifier: EvidenceVerifier) -> dict[str, Any]:
    return history(engine, args)
