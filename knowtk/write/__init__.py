"""The write half: ``knowledge_mutation`` and ``knowledge_history`` (docs/mutations.md).

Between the engine and the query layer: a mutation reads the engine's snapshot, judges the change
with the snapshot's own rules, and writes files, safeguards and receipts; queries never import it
to write (the tools in ``knowtk.query.mutations`` call it). Modules: ``splice`` (frontmatter edits
that keep every other byte), ``files`` (safe paths, atomic compare-and-swap writes, the write lock),
``validate`` (the store after the change), ``plan`` (one planner per operation), ``journal``
(receipts, intents, file versions in state.sqlite), ``mutation`` (the steps, crash recovery),
``history`` (receipts, diff, the indexed mark), ``undo`` (a receipt's files put back, as a change of its own).
"""

__all__ = ["OPERATIONS"]

#: the operations of knowledge_mutation (its tool declares them as the allowed values of ``operation``)
OPERATIONS = ("create", "update", "supersede", "withdraw", "reinstate")
